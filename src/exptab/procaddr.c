/* SPDX-License-Identifier: Apache-2.0
 *
 * cuGetProcAddress over a generated table (procaddr.h).
 */
#include "exptab/procaddr.h"

#include "common/log.h"

#include <stdatomic.h>
#include <string.h>

int tf_procaddr_unsupported(const char *lib, const char *name, int version, int *logged)
{
    if (!__atomic_exchange_n(logged, 1, __ATOMIC_RELAXED))
        tf_log(TF_LOG_WARN, "cuda",
               "%s (ABI of CUDA %d) is not implemented by %s: CUDA_ERROR_NOT_SUPPORTED", name,
               version, lib);
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult tf_procaddr_lookup(const struct tf_proc *procs, const char *lib, const char *symbol,
                            void **pfn, int cudaVersion, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    if (!symbol || !pfn ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))) {
        if (pfn)
            *pfn = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pfn = NULL;
    const struct tf_proc *best = NULL, *best_pt = NULL;
    int named = 0;
    for (const struct tf_proc *p = procs; p->name; p++) {
        if (strcmp(p->name, symbol) != 0)
            continue;
        named = 1;
        if (p->version > cudaVersion)
            continue;
        if (p->per_thread) {
            if (!best_pt || p->version > best_pt->version)
                best_pt = p;
        } else if (!best || p->version > best->version) {
            best = p;
        }
    }
    if (named && !best) {
        st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    } else if (best) {
        const struct tf_proc *pick = best;
        if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best_pt &&
            best_pt->version >= best->version)
            pick = best_pt;
        *pfn = pick->fn;
        st = CU_GET_PROC_ADDRESS_SUCCESS;
        rc = CUDA_SUCCESS;
        if (tf_log_enabled(TF_LOG_TRACE))
            tf_log(TF_LOG_TRACE, lib, "cuGetProcAddress: %s (CUDA %d, flags %llu): %s", symbol,
                   cudaVersion, (unsigned long long)flags,
                   pick->implemented ? "implemented" : "not implemented (stub)");
    }
    if (status)
        *status = st;
    if (rc != CUDA_SUCCESS && tf_log_enabled(TF_LOG_DEBUG))
        tf_log(TF_LOG_DEBUG, lib, "cuGetProcAddress: %s (CUDA %d, flags %llu): %s", symbol,
               cudaVersion, (unsigned long long)flags,
               st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "version not sufficient"
                                                                : "not found");
    return rc;
}
