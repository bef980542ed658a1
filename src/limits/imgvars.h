/* SPDX-License-Identifier: Apache-2.0
 *
 * Module image variables: the names of the module-scope device variables (.global and .const
 * state space, e.g. __device__ and __constant__ arrays) an image defines, so that whoever
 * enforces a VRAM limit (tf-worker, the soft limiter) can ask the driver for their sizes
 * (cuModuleGetGlobal) and charge them when the module loads: the driver allocates them then.
 *
 * Images understood: PTX text (what nvcc -ptx emits; declarations at brace depth 0, .extern
 * ones skipped since they define no storage) and ELF cubins (STT_OBJECT symbols of the
 * .nv.global* and .nv.constant* sections the driver backs with device memory, except the
 * per-launch kernel parameter banks .nv.constant0.*). Any other bytes are scanned as PTX text
 * (the uncompressed PTX inside a fatbin container is found that way; compressed entries are
 * not): the caller then charges what it finds, never crashes. Pure, bounds-checked (the image is
 * outside input), thread-safe.
 */
#ifndef TF_LIMITS_IMGVARS_H
#define TF_LIMITS_IMGVARS_H

#include <stddef.h>
#include <stdint.h>

#define TF_IMGVARS_NAME_MAX 256 /* longer names are skipped */

/* Calls FN(ARG, NAME) for each variable of IMG[0..LEN) (LEN bytes; a NUL inside PTX text ends
 * it). FN returns 0 to go on, anything else to stop: that value is returned. Returns 0 when
 * every name was delivered. At most 4096 names are delivered. */
int tf_imgvars_each(const void *img, size_t len, int (*fn)(void *arg, const char *name), void *arg);

/* The sum of SIZE(ARG, NAME) over the variables of IMG (negative sizes, e.g. a name the driver
 * does not know, count as 0): what loading the image allocated for its variables. */
int64_t tf_imgvars_bytes(const void *img, size_t len, int64_t (*size)(void *arg, const char *name),
                         void *arg);

#endif
