/* SPDX-License-Identifier: Apache-2.0
 *
 * The CUDA runtime's private driver interface: the "export tables" that cuGetExportTable
 * hands out by UUID (tables of function pointers the runtime calls besides the public driver
 * API). Implemented once, over the public driver entry points (cuModuleLoadData,
 * cuDevicePrimaryCtxRetain, cuCtxGetCurrent, cuDeviceGetAttribute, ...), so that any library
 * that provides those -- the simulated libcuda.so.1, the remote client -- serves the runtime by
 * linking this one. The tables, their UUIDs and what each entry does are described in
 * docs/internals/exptab.md.
 *
 * The host library must bind the public names it calls to its own definitions
 * (-Wl,-Bsymbolic-functions), as the real driver's internal calls are not interposable: an
 * LD_PRELOAD interposer sees only what the application and the runtime call.
 *
 * Thread-safety: all functions are thread-safe.
 */
#ifndef TF_EXPTAB_EXPTAB_H
#define TF_EXPTAB_EXPTAB_H

#include <cuda.h>

/* cuGetExportTable: *TABLE gets the table with UUID ID (owned by this layer, valid for the
 * process's lifetime). CUDA_ERROR_INVALID_VALUE for NULL arguments, CUDA_ERROR_NOT_FOUND for a
 * UUID this driver does not provide (logged once per UUID: at info, at debug for the probes
 * the runtime makes of every driver). */
CUresult tf_exptab_get(const void **table, const CUuuid *id);

/* The driver calls this when context CTX goes away (cuCtxDestroy, the last release or a reset
 * of a primary context) while CTX is still usable, before its resources are freed and without
 * holding driver locks: the runtime's context-local storage destructors run for CTX's entries
 * (the runtime frees its per-context state there), then the entries are forgotten. */
void tf_exptab_ctx_gone(CUcontext ctx);

#endif
