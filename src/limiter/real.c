/* SPDX-License-Identifier: Apache-2.0
 *
 * Symbol lookups that must land on the limiter: the symbol table generated from hooks.def,
 * the real libc dlsym (found with dlvsym, since we export dlsym ourselves), our dlsym
 * (hooked names looked up in the real libcuda / libnvidia-ml come back as our hooks, so
 * runtimes that dlopen the driver are limited too; RTLD_NEXT keeps its meaning for the
 * caller), and cuGetProcAddress v1/v2 (CUDA 12+ runtimes resolve every driver entry point
 * through it).
 */
#include "limiter/limiter.h"

#include <dlfcn.h>
#include <stdatomic.h>

/* dlsym is called by sanitizer runtimes while they initialise (ASan resolves its
 * interceptors with dlsym(RTLD_NEXT, ...) before its shadow memory exists), so everything on
 * that path is built without instrumentation and uses no intercepted libc functions. */
#define TF_EARLY __attribute__((no_sanitize("address", "undefined")))

TF_EARLY static int eq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

TF_EARLY static int prefix(const char *s, const char *p)
{
    while (*p && *s == *p) {
        s++;
        p++;
    }
    return *p == 0;
}

/* --- the table ------------------------------------------------------------------------- */

/* The table names deprecated entry points too (cuLaunch, cuLaunchGrid, ...). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const struct tf__sym tf__syms[] = {
#define CU(name, ret, params) {#name, offsetof(struct tf__real, name), (void *)name, 0},
#define CUR(name, ret, params) {#name, offsetof(struct tf__real, name), NULL, 0},
#define NV(name, ret, params) {#name, offsetof(struct tf__real, name), (void *)name, 1},
#define NVR(name, ret, params) {#name, offsetof(struct tf__real, name), NULL, 1},
#include "limiter/hooks.def"
#undef CU
#undef CUR
#undef NV
#undef NVR
};
#pragma GCC diagnostic pop
const size_t tf__nsyms = sizeof(tf__syms) / sizeof(tf__syms[0]);

TF_EARLY static void *real_slot(size_t i)
{
    return *(void **)((char *)&tf__L.real + tf__syms[i].real_off);
}

void *tf__subst(void *p)
{
    if (!p)
        return p;
    for (size_t i = 0; i < tf__nsyms; i++)
        if (tf__syms[i].hook && real_slot(i) == p)
            return tf__syms[i].hook;
    return p;
}

TF_EARLY static const struct tf__sym *hooked_name(const char *name)
{
    if (!name || (!prefix(name, "cu") && !prefix(name, "nvml")))
        return NULL;
    for (size_t i = 0; i < tf__nsyms; i++)
        if (tf__syms[i].hook && eq(tf__syms[i].name, name))
            return &tf__syms[i];
    return NULL;
}

/* --- dlsym ------------------------------------------------------------------------------- */

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym_p;

TF_EARLY static dlsym_fn get_real_dlsym(void)
{
    dlsym_fn f = atomic_load_explicit(&real_dlsym_p, memory_order_acquire);
    if (f)
        return f;
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.17", "GLIBC_2.2.5"};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !f; i++)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    atomic_store_explicit(&real_dlsym_p, f, memory_order_release);
    return f;
}

TF_EARLY void *tf__real_dlsym(void *handle, const char *name)
{
    dlsym_fn f = get_real_dlsym();
    return f ? f(handle, name) : NULL;
}

/* True if P is defined in the real driver or NVML library (by the object's name). */
TF_EARLY static bool from_driver(void *p, bool nvml)
{
    Dl_info info;
    if (!dladdr(p, &info) || !info.dli_fname)
        return false;
    const char *base = info.dli_fname;
    for (const char *q = info.dli_fname; *q; q++)
        if (*q == '/')
            base = q + 1;
    return prefix(base, nvml ? "libnvidia-ml.so" : "libcuda.so");
}

/* Called by the dlsym entry (dlsym_<arch>.S): the real dlsym if the lookup must run as our
 * caller's own (RTLD_NEXT for names we do not interpose: its meaning depends on who asks),
 * NULL to continue in tf__dlsym_c. */
TF_EARLY void *tf__dlsym_tail(void *handle, const char *name);
TF_EARLY void *tf__dlsym_tail(void *handle, const char *name)
{
    if (handle == RTLD_NEXT && !hooked_name(name))
        return (void *)get_real_dlsym();
    return NULL;
}

/* The rest of dlsym: a name we interpose, looked up in a library that has it, comes back as
 * our hook -- runtimes that dlopen the driver and dlsym its entry points (or
 * cuGetProcAddress) are limited like apps linked against it. RTLD_NEXT of such a name also
 * answers with our hook, so another interposer loaded after us wraps the limited function. */
TF_EARLY void *tf__dlsym_c(void *handle, const char *name);
TF_EARLY void *tf__dlsym_c(void *handle, const char *name)
{
    const struct tf__sym *s = hooked_name(name);
    if (handle == RTLD_NEXT)
        return s ? s->hook : NULL; /* (unhooked names never get here) */
    void *p = tf__real_dlsym(handle, name);
    if (!s || !p || p == s->hook)
        return p;
    bool known = atomic_load_explicit(&tf__L.phase, memory_order_acquire) == TF_LIM_PHASE_READY &&
                 (s->nvml ? atomic_load_explicit(&tf__L.nvml_phase, memory_order_acquire) == 2 : 1);
    if ((known && real_slot((size_t)(s - tf__syms)) == p) || from_driver(p, s->nvml))
        return s->hook;
    return p;
}

/* dlsym itself is defined in dlsym_<arch>.S. */
TF_EXPORT void *dlsym(void *handle, const char *name);

/* --- cuGetProcAddress -------------------------------------------------------------------- */

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!tf__ready() || !tf__L.real.cuGetProcAddress_v2) {
        CUresult (*f)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
            (CUresult(*)(const char *, void **, int, cuuint64_t,
                         CUdriverProcAddressQueryResult *))tf__real_cuda_sym("cuGetProcAddress_v2");
        if (!f)
            return CUDA_ERROR_NOT_INITIALIZED;
        return f(symbol, pfn, cudaVersion, flags, symbolStatus);
    }
    tf__depth++;
    CUresult rc = tf__L.real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    tf__depth--;
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = tf__subst(*pfn);
    return rc;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    if (!tf__ready() || !tf__L.real.cuGetProcAddress) {
        CUresult (*f)(const char *, void **, int, cuuint64_t) = (CUresult(*)(
            const char *, void **, int, cuuint64_t))tf__real_cuda_sym("cuGetProcAddress");
        if (!f)
            return CUDA_ERROR_NOT_INITIALIZED;
        return f(symbol, pfn, cudaVersion, flags);
    }
    tf__depth++;
    CUresult rc = tf__L.real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    tf__depth--;
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = tf__subst(*pfn);
    return rc;
}
