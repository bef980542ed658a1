/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to libtf_limiter.so: everything generated from hooks.def. Exported prototypes of
 * the hooks (so the compiler checks each hooks.def signature against cuda.h and
 * sim/nvml_abi.h), the table of real functions, and the names/addresses used to answer
 * dlsym and cuGetProcAddress with our hooks instead of the real functions.
 */
#ifndef TF_LIMITER_HOOKS_H
#define TF_LIMITER_HOOKS_H

#include <cuda.h>
#undef cuGetProcAddress   /* we export both ABI versions under their own names */
#undef cuGraphInstantiate /* the CUDA 11 ABI of that name, not cuGraphInstantiateWithFlags */

#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include "sim/nvml_abi.h"

#include <stddef.h>

#define TF_EXPORT __attribute__((visibility("default")))

/* Prototypes of the exported hooks. */
#define CU(name, ret, params) TF_EXPORT ret CUDAAPI name params;
#define CUR(name, ret, params)
#define NV(name, ret, params) TF_EXPORT ret name params;
#define NVR(name, ret, params)
#include "limiter/hooks.def"
#undef CU
#undef CUR
#undef NV
#undef NVR

/* The real functions, resolved from the real libraries (NULL: the library lacks it). */
struct tf__real {
#define CU(name, ret, params) ret(CUDAAPI *name) params;
#define CUR(name, ret, params) ret(CUDAAPI *name) params;
#define NV(name, ret, params) ret(*name) params;
#define NVR(name, ret, params) ret(*name) params;
#include "limiter/hooks.def"
#undef CU
#undef CUR
#undef NV
#undef NVR
};

/* One entry per symbol of hooks.def. */
struct tf__sym {
    const char *name;
    size_t real_off; /* offsetof(struct tf__real, name) */
    void *hook;      /* our function, NULL for CUR/NVR */
    int nvml;        /* 1: lives in libnvidia-ml, 0: libcuda */
};

extern const struct tf__sym tf__syms[];
extern const size_t tf__nsyms;

#endif
