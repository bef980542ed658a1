/* SPDX-License-Identifier: Apache-2.0
 *
 * cuGetProcAddress of the simulated driver resolves names the way the real driver does (the
 * newest ABI version at or before the caller's CUDA version, per-thread-stream variants on
 * request, NOT_FOUND with the right symbolStatus otherwise), every exported symbol is
 * reachable through it, and the libraries export nothing but driver / NVML names, each one a
 * name the real libcuda.so.1 exports.
 */
#include "simtest.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

/* Defined global functions of the shared object at PATH (NUL-separated, double-NUL end). */
static char *exported(const char *path, int *count)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    fstat(fd, &st);
    unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    assert_true(m != MAP_FAILED);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
    assert_memory_equal(eh->e_ident, ELFMAG, SELFMAG);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
    char *out = calloc(1, 1 << 20);
    size_t pos = 0;
    *count = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(m + sh[i].sh_offset);
        const char *strtab = (const char *)(m + sh[sh[i].sh_link].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
            int bind = ELF64_ST_BIND(sym[k].st_info), type = ELF64_ST_TYPE(sym[k].st_info);
            if (sym[k].st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
                (type != STT_FUNC && type != STT_OBJECT))
                continue;
            const char *name = strtab + sym[k].st_name;
            size_t l = strlen(name);
            memcpy(out + pos, name, l + 1);
            pos += l + 1;
            (*count)++;
        }
    }
    munmap(m, (size_t)st.st_size);
    return out;
}

static int contains(const char *list, const char *name)
{
    for (const char *p = list; *p; p += strlen(p) + 1)
        if (strcmp(p, name) == 0)
            return 1;
    return 0;
}

static void *resolve(const char *sym, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult *st)
{
    void *fn = (void *)1;
    CUresult rc = cuGetProcAddress(sym, &fn, version, flags, st);
    if (rc != CUDA_SUCCESS) {
        assert_int_equal(rc, CUDA_ERROR_NOT_FOUND);
        assert_null(fn);
        return NULL;
    }
    assert_int_equal(*st, CU_GET_PROC_ADDRESS_SUCCESS);
    return fn;
}

static void *self_handle(void)
{
    Dl_info info;
    assert_true(dladdr((void *)cuInit, &info) != 0);
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    return h;
}

static void names_resolve_to_the_newest_abi_version_the_caller_knows(void **state)
{
    /* Works before cuInit (the CUDA runtime fetches cuInit itself this way). */
    void *h = self_handle();
    CUdriverProcAddressQueryResult st;
    assert_ptr_equal(resolve("cuInit", 13000, 0, &st), dlsym(h, "cuInit"));
    assert_ptr_equal(resolve("cuMemAlloc", 12000, 0, &st), dlsym(h, "cuMemAlloc_v2"));
    assert_ptr_equal(resolve("cuCtxCreate", 13000, 0, &st), dlsym(h, "cuCtxCreate_v4"));
    assert_ptr_equal(resolve("cuCtxCreate", 12000, 0, &st), dlsym(h, "cuCtxCreate_v3"));
    assert_ptr_equal(resolve("cuCtxCreate", 11000, 0, &st), dlsym(h, "cuCtxCreate_v2"));
    assert_ptr_equal(resolve("cuCtxCreate", 2000, 0, &st), dlsym(h, "cuCtxCreate"));
    assert_ptr_equal(resolve("cuEventElapsedTime", 12080, 0, &st),
                     dlsym(h, "cuEventElapsedTime_v2"));
    assert_ptr_equal(resolve("cuEventElapsedTime", 12000, 0, &st), dlsym(h, "cuEventElapsedTime"));
    assert_ptr_equal(resolve("cuGetProcAddress", 12000, 0, &st), dlsym(h, "cuGetProcAddress_v2"));
    assert_ptr_equal(resolve("cuGetProcAddress", 11030, 0, &st), dlsym(h, "cuGetProcAddress"));
    assert_ptr_equal(resolve("cuStreamGetCtx", 12050, 0, &st), dlsym(h, "cuStreamGetCtx_v2"));
    assert_ptr_equal(resolve("cuDevicePrimaryCtxRelease", 11000, 0, &st),
                     dlsym(h, "cuDevicePrimaryCtxRelease_v2"));
    dlclose(h);
}

static void per_thread_stream_variants_are_chosen_on_request(void **state)
{
    void *h = self_handle();
    CUdriverProcAddressQueryResult st;
    assert_ptr_equal(resolve("cuMemcpyHtoD", 12000, PT, &st), dlsym(h, "cuMemcpyHtoD_v2_ptds"));
    assert_ptr_equal(resolve("cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st),
                     dlsym(h, "cuMemcpyHtoD_v2"));
    assert_ptr_equal(resolve("cuMemcpyHtoD", 12000, 0, &st), dlsym(h, "cuMemcpyHtoD_v2"));
    assert_ptr_equal(resolve("cuLaunchHostFunc", 12000, PT, &st),
                     dlsym(h, "cuLaunchHostFunc_ptsz"));
    assert_ptr_equal(resolve("cuStreamSynchronize", 13000, PT, &st),
                     dlsym(h, "cuStreamSynchronize_ptsz"));
    /* Before CUDA 7 there were no per-thread variants: the legacy one is returned. */
    assert_ptr_equal(resolve("cuMemcpyHtoD", 6050, PT, &st), dlsym(h, "cuMemcpyHtoD_v2"));
    /* Functions without a stream have no variant: the plain symbol either way. */
    assert_ptr_equal(resolve("cuMemAlloc", 12000, PT, &st), dlsym(h, "cuMemAlloc_v2"));
    dlclose(h);
}

static void unknown_names_and_old_versions_are_not_found(void **state)
{
    CUdriverProcAddressQueryResult st = 99;
    void *fn = (void *)1;
    CU_IS(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &st));
    assert_null(fn);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* A name introduced after the caller's version. */
    CU_IS(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cuLaunchKernelEx", &fn, 11000, 0, &st));
    CU_IS(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cuStreamGetId", &fn, 11080, 0, &st));
    assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* Versioned spellings are not names. */
    CU_IS(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cuMemAlloc_v2", &fn, 13000, 0, &st));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress(NULL, &fn, 13000, 0, &st));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress("cuInit", NULL, 13000, 0, &st));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress("cuInit", &fn, 13000, 4, &st));
    /* The v1 entry point has no status argument but the same answers. */
    PFN_cuGetProcAddress_v11030 v1;
    CU_OK(cuGetProcAddress("cuGetProcAddress", (void **)&v1, 11030, 0, &st));
    CU_OK(v1("cuInit", &fn, 13000, 0));
    CU_IS(CUDA_ERROR_NOT_FOUND, v1("cuNoSuchThing", &fn, 13000, 0));
}

typedef CUresult (*any_fn)(void);

/* A function the real driver has but the simulator does not implement (textures), or an ABI
 * version it does not offer (cuMemAlloc's 32-bit pointers before CUDA 3.2), resolves: calling
 * it fails with NOT_SUPPORTED, never "not found" and never a pretended success. */
static void unimplemented_driver_functions_resolve_to_not_supported(void **state)
{
    CUdriverProcAddressQueryResult st = 99;
    void *fn = NULL;
    CU_OK(cuGetProcAddress("cuTexObjectCreate", &fn, 13000, 0, &st));
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_non_null(fn);
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, ((any_fn)fn)());
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, ((any_fn)fn)()); /* logged once, still failing */
    void *old = NULL;
    CU_OK(cuGetProcAddress("cuMemAlloc", &old, 3010, 0, &st));
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, ((any_fn)old)());
    void *cur = NULL;
    CU_OK(cuGetProcAddress("cuMemAlloc", &cur, 13000, 0, &st));
    assert_ptr_not_equal(old, cur);
    /* Every name of cudaTypedefs.h resolves (procs.def lists them all). */
    CU_OK(cuGetProcAddress("cuIpcGetMemHandle", &fn, 13000, 0, &st));
    CU_OK(cuGetProcAddress("cuGraphicsUnregisterResource", &fn, 13000, 0, &st));
}

/* Versions named in procs.def (the table's sources of truth). */
static int versions[64], nversions;

static void load_versions(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/src/sim/procs.def", getenv("TF_SRCDIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char *c = strchr(line, ',');
        if ((line[0] != 'P' && line[0] != 'U') || !c)
            continue;
        int v = atoi(c + 1), k = 0;
        while (k < nversions && versions[k] != v)
            k++;
        if (k == nversions && nversions < 64)
            versions[nversions++] = v;
    }
    fclose(f);
    assert_true(nversions > 10);
}

static void every_exported_symbol_is_reachable_and_a_real_driver_name(void **state)
{
    Dl_info info;
    assert_true(dladdr((void *)cuInit, &info) != 0);
    int n = 0, nstub = 0;
    char *ours = exported(info.dli_fname, &n);
    assert_non_null(ours);
    assert_true(n > 100);
    char *stub = exported("/usr/local/cuda/lib64/stubs/libcuda.so", &nstub);
    load_versions();
    void *h = self_handle();
    for (const char *p = ours; *p; p += strlen(p) + 1) {
        if (strncmp(p, "cu", 2) != 0)
            fail_msg("libcuda.so.1 exports a non-driver name: %s", p);
        if (stub && !contains(stub, p))
            fail_msg("%s is not a name the real libcuda.so.1 exports", p);
        /* Strip the ABI suffixes to get the name cuGetProcAddress is asked for. */
        char base[128];
        snprintf(base, sizeof(base), "%s", p);
        int pt = 0;
        char *u = strrchr(base, '_');
        if (u && (strcmp(u, "_ptds") == 0 || strcmp(u, "_ptsz") == 0)) {
            *u = 0;
            pt = 1;
        }
        u = strrchr(base, '_');
        if (u && u[1] == 'v' && u[2] >= '0' && u[2] <= '9')
            *u = 0;
        void *want = dlsym(h, p);
        int found = 0;
        for (int k = 0; k < nversions && !found; k++) {
            CUdriverProcAddressQueryResult st;
            void *fn = NULL;
            if (cuGetProcAddress(base, &fn, versions[k], pt ? PT : 0, &st) == CUDA_SUCCESS)
                found = fn == want;
        }
        if (!found)
            fail_msg("exported %s is not reachable through cuGetProcAddress(\"%s\")", p, base);
    }
    dlclose(h);
    free(ours);
    free(stub);
}

static void nvml_library_exports_only_nvml_names(void **state)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/src/sim/libnvidia-ml.so.1", getenv("TF_BUILDDIR"));
    int n = 0;
    char *names = exported(path, &n);
    assert_non_null(names);
    assert_true(n > 30);
    for (const char *p = names; *p; p += strlen(p) + 1)
        if (strncmp(p, "nvml", 4) != 0)
            fail_msg("libnvidia-ml.so.1 exports a non-NVML name: %s", p);
    assert_true(contains(names, "nvmlInit_v2") && contains(names, "nvmlInit"));
    assert_true(contains(names, "nvmlDeviceGetComputeRunningProcesses_v3"));
    free(names);
}

int main(void)
{
    simtest_env(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_resolve_to_the_newest_abi_version_the_caller_knows),
        cmocka_unit_test(per_thread_stream_variants_are_chosen_on_request),
        cmocka_unit_test(unknown_names_and_old_versions_are_not_found),
        cmocka_unit_test(unimplemented_driver_functions_resolve_to_not_supported),
        cmocka_unit_test(every_exported_symbol_is_reachable_and_a_real_driver_name),
        cmocka_unit_test(nvml_library_exports_only_nvml_names),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    simtest_cleanup();
    return rc;
}
