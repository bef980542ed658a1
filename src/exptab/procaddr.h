/* SPDX-License-Identifier: Apache-2.0
 *
 * cuGetProcAddress (v1 and v2) over a procs.def table (proctab.h), shared by every library
 * that acts as libcuda.so.1. Resolution as the real driver does it: among the base name's
 * versions introduced at or before cudaVersion take the newest; with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptds/_ptsz variant of that version is used
 * when there is one. A name the table has only in newer versions answers CUDA_ERROR_NOT_FOUND
 * with CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, a name it does not have at all
 * CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; an unimplemented version
 * resolves to its stub (CUDA_ERROR_NOT_SUPPORTED when called, logged once).
 *
 * Thread-safe (the table is constant).
 */
#ifndef TF_EXPTAB_PROCADDR_H
#define TF_EXPTAB_PROCADDR_H

#include "exptab/proctab.h"

#include <cuda.h>

/* PROCS ends with an entry whose name is NULL; LIB names the library in trace/debug lines. */
CUresult tf_procaddr_lookup(const struct tf_proc *procs, const char *lib, const char *symbol,
                            void **pfn, int cudaVersion, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status);

#endif
