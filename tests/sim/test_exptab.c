/* SPDX-License-Identifier: Apache-2.0
 *
 * The CUDA runtime's private interface on the simulated GPU (src/exptab through
 * cuGetExportTable) and module loading from real nvcc fatbins (fuzz/corpus/fatbin/): the
 * tables the runtime asks for, its fatbin registration and primary-context entries, the
 * context-local storage whose destructors run when a context goes away, and cuModuleLoadData /
 * LoadFatBinary / LoadDataEx / Load, cuLibraryLoadData / LoadFromFile on compressed, multi-arch
 * and SASS-only containers. Needs the PTX engine.
 */
#include "simtest.h"

#include <cuda.h>

#include "../fatbin/seeds.h"

static const uint8_t CUDART[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                   0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
static const uint8_t HOOKS[16] = {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
                                  0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66};
static const uint8_t TLS[16] = {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
                                0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc};
static const uint8_t CLS[16] = {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
                                0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93};
static const uint8_t CHECKS[16] = {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
                                   0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e};
static const uint8_t INTEGRITY[16] = {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                      0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2};
static const uint8_t SKIP_INIT[16] = {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
                                      0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9};

typedef CUresult (*get_export_table_fn)(const void **, const CUuuid *);
typedef CUresult (*module_from_wrapper_fn)(CUmodule *, const void *);
typedef CUresult (*primary_ctx_fn)(CUcontext *, CUdevice);
typedef CUresult (*module_from_fatbin_fn)(const void *, CUmodule *, void *, void *, unsigned);
typedef CUresult (*void_fn)(void);
typedef void (*cls_dtor)(CUcontext, void *, void *);
typedef CUresult (*cls_put_fn)(CUcontext, void *, void *, cls_dtor);
typedef CUresult (*cls_delete_fn)(CUcontext, void *);
typedef CUresult (*cls_get_fn)(void **, CUcontext, void *);

static get_export_table_fn get_table;

static void *const *table(const uint8_t id[16])
{
    CUuuid u;
    memcpy(u.bytes, id, 16);
    const void *t = NULL;
    CU_OK(get_table(&t, &u));
    assert_non_null(t);
    return (void *const *)t;
}

/* Runs vecadd of module M on 1000 elements and checks the sums. */
static void vecadd_runs(CUmodule m)
{
    enum { N = 1000 };
    CUfunction f;
    CU_OK(cuModuleGetFunction(&f, m, "vecadd"));
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i * 0.25f;
        b[i] = 1.0f / (float)(i + 1);
    }
    CUdeviceptr da, db, dc;
    CU_OK(cuMemAlloc(&da, sizeof(a)));
    CU_OK(cuMemAlloc(&db, sizeof(b)));
    CU_OK(cuMemAlloc(&dc, sizeof(c)));
    CU_OK(cuMemcpyHtoD(da, a, sizeof(a)));
    CU_OK(cuMemcpyHtoD(db, b, sizeof(b)));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CU_OK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    CU_OK(cuMemcpyDtoH(c, dc, sizeof(c)));
    for (int i = 0; i < N; i++)
        assert_true(c[i] == a[i] + b[i]);
    CU_OK(cuMemFree(da));
    CU_OK(cuMemFree(db));
    CU_OK(cuMemFree(dc));
}

static int setup(void **state)
{
    simtest_env("L4"); /* compute capability 8.9 */
    CUresult rc = cuInit(0);
    if (rc != CUDA_SUCCESS)
        return -1;
    CUdriverProcAddressQueryResult st;
    return cuGetProcAddress("cuGetExportTable", (void **)&get_table, 13000, 0, &st) == CUDA_SUCCESS
               ? 0
               : -1;
}

static int teardown(void **state)
{
    simtest_cleanup();
    return 0;
}

static void the_tables_the_runtime_asks_for_are_served(void **state)
{
    static const struct {
        const uint8_t *id;
        size_t slots;
    } sized[] = {{CUDART, 13}, {HOOKS, 7}, {TLS, 4}, {CHECKS, 4}, {INTEGRITY, 3}};
    for (size_t i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
        void *const *t = table(sized[i].id);
        assert_int_equal((uintptr_t)t[0], sized[i].slots * sizeof(void *));
        for (size_t k = 1; k < sized[i].slots - (sized[i].id == INTEGRITY); k++)
            assert_non_null(t[k]);
    }
    void *const *cls = table(CLS); /* no size slot: three functions */
    assert_non_null(cls[0]);
    assert_non_null(cls[1]);
    assert_non_null(cls[2]);
    /* the runtime's bootstrap probe and unknown ids are absent, as on a driver without them */
    CUuuid u;
    const void *t = (const void *)1;
    memcpy(u.bytes, SKIP_INIT, 16);
    CU_IS(CUDA_ERROR_NOT_FOUND, get_table(&t, &u));
    assert_null(t);
    memset(u.bytes, 0x5a, 16);
    CU_IS(CUDA_ERROR_NOT_FOUND, get_table(&t, &u));
    CU_IS(CUDA_ERROR_INVALID_VALUE, get_table(NULL, &u));
    CU_IS(CUDA_ERROR_INVALID_VALUE, get_table(&t, NULL));
    /* an entry whose meaning is unknown answers NOT_SUPPORTED instead of jumping to NULL */
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, ((void_fn)table(CUDART)[3])());
    CU_OK(((void_fn)table(CUDART)[12])()); /* load the JIT compilers: nothing to load */
}

static void the_runtime_registers_fatbins_and_retains_the_primary_context(void **state)
{
    void *const *rt = table(CUDART);
    CUcontext pctx = NULL;
    CU_OK(((primary_ctx_fn)rt[2])(&pctx, 0));
    unsigned flags;
    int active = 0;
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_true(active);
    CU_OK(cuCtxSetCurrent(pctx));
    struct blob fb = seed_load("default_zstd.fatbin");
    struct {
        uint32_t magic, version;
        const void *data, *extra;
    } wrapper = {0x466243b1u, 1, fb.p, NULL};
    CUmodule m1 = NULL, m2 = NULL, m3 = NULL;
    CU_OK(((module_from_wrapper_fn)rt[1])(&m1, &wrapper));
    vecadd_runs(m1);
    CU_OK(((module_from_fatbin_fn)rt[8])(fb.p, &m2, NULL, NULL, 0));
    vecadd_runs(m2);
    wrapper.version = 2; /* linked with -rdc: the same record shape */
    CU_OK(((module_from_wrapper_fn)rt[1])(&m3, &wrapper));
    wrapper.magic ^= 1;
    CUmodule bad;
    CU_IS(CUDA_ERROR_INVALID_IMAGE, ((module_from_wrapper_fn)rt[1])(&bad, &wrapper));
    CU_OK(cuModuleUnload(m1));
    CU_OK(cuModuleUnload(m2));
    CU_OK(cuModuleUnload(m3));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    free(fb.p);
}

static int dtor_calls;
static CUcontext dtor_ctx;
static void *dtor_key, *dtor_value;
static CUresult dtor_ctx_usable;

static void record_dtor(CUcontext ctx, void *key, void *value)
{
    dtor_calls++;
    dtor_ctx = ctx;
    dtor_key = key;
    dtor_value = value;
    unsigned v;
    dtor_ctx_usable = cuCtxGetApiVersion(ctx, &v); /* the runtime frees its state here */
}

static void context_local_storage_lives_and_dies_with_its_context(void **state)
{
    void *const *cls = table(CLS);
    cls_put_fn put = (cls_put_fn)cls[0];
    cls_delete_fn del = (cls_delete_fn)cls[1];
    cls_get_fn get = (cls_get_fn)cls[2];
    int key1, key2, val1, val2;
    void *v = NULL;

    /* a created context: stored, read back, deleted, stored again, destroyed */
    CUcontext c;
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    CU_IS(CUDA_ERROR_NOT_FOUND, get(&v, c, &key1));
    CU_OK(put(c, &key1, &val1, record_dtor));
    CU_OK(put(NULL, &key2, &val2, NULL)); /* NULL: the current context (c) */
    CU_OK(get(&v, c, &key1));
    assert_ptr_equal(v, &val1);
    CU_OK(get(&v, NULL, &key2));
    assert_ptr_equal(v, &val2);
    CU_OK(del(c, &key1));
    CU_IS(CUDA_ERROR_NOT_FOUND, get(&v, c, &key1));
    CU_OK(put(c, &key1, &val1, record_dtor));
    dtor_calls = 0;
    CU_OK(cuCtxDestroy(c));
    assert_int_equal(dtor_calls, 1); /* once, for the entry that has a destructor */
    assert_ptr_equal(dtor_ctx, c);
    assert_ptr_equal(dtor_key, &key1);
    assert_ptr_equal(dtor_value, &val1);
    CU_OK(dtor_ctx_usable);
    CU_IS(CUDA_ERROR_NOT_FOUND, get(&v, c, &key1));
    CU_IS(CUDA_ERROR_NOT_FOUND, get(&v, c, &key2));

    /* the primary context: a reset and the last release run the destructors */
    CUcontext p;
    CU_OK(cuDevicePrimaryCtxRetain(&p, 0));
    CU_OK(put(p, &key1, &val1, record_dtor));
    dtor_calls = 0;
    CU_OK(cuDevicePrimaryCtxReset(0));
    assert_int_equal(dtor_calls, 1);
    CU_OK(dtor_ctx_usable);
    CU_OK(cuDevicePrimaryCtxRetain(&p, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&p, 0));
    CU_OK(put(p, &key2, &val2, record_dtor));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    assert_int_equal(dtor_calls, 1); /* still retained once */
    CU_OK(cuDevicePrimaryCtxRelease(0));
    assert_int_equal(dtor_calls, 2);
    assert_ptr_equal(dtor_value, &val2);
    CU_OK(dtor_ctx_usable);
    CU_OK(cuCtxSetCurrent(NULL));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, put(NULL, &key1, &val1, NULL));
}

static void nvcc_fatbins_load_and_run(void **state)
{
    CUcontext c;
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    static const char *const ok[] = {"default_zstd.fatbin", "lz4.fatbin", "nocompress.fatbin",
                                     "multi_arch.fatbin", "debug_g.fatbin"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct blob b = seed_load(ok[i]);
        CUmodule m;
        CU_OK(cuModuleLoadData(&m, b.p));
        vecadd_runs(m);
        CU_OK(cuModuleUnload(m));
        CU_OK(cuModuleLoadFatBinary(&m, b.p));
        CU_OK(cuModuleUnload(m));
        CUlibrary lib;
        CU_OK(cuLibraryLoadData(&lib, b.p, NULL, NULL, 0, NULL, NULL, 0));
        CU_OK(cuLibraryGetModule(&m, lib));
        vecadd_runs(m);
        CU_OK(cuLibraryUnload(lib));
        free(b.p);
    }
    /* the highest fitting PTX of a multi-arch image: compute_80 for this sm_89 device */
    struct blob multi = seed_load("multi_arch.fatbin");
    CUmodule m;
    CU_OK(cuModuleLoadData(&m, multi.p));
    CUfunction f;
    CU_OK(cuModuleGetFunction(&f, m, "vecadd"));
    int ptx = 0;
    CU_OK(cuFuncGetAttribute(&ptx, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
    assert_int_equal(ptx, 90); /* ISA 9.0 of the compute_80 entry */
    CU_OK(cuModuleUnload(m));

    /* SASS only: no binary for the simulated GPU, the architectures in the JIT log */
    struct blob sass = seed_load("sass_only.fatbin");
    char log[512] = "";
    CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *ov[] = {log, (void *)(uintptr_t)sizeof(log)};
    CU_IS(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadDataEx(&m, sass.p, 2, o, ov));
    assert_non_null(strstr(log, "sm_80"));
    assert_non_null(strstr(log, "PTX only"));
    CUlibrary lib;
    CU_IS(CUDA_ERROR_NO_BINARY_FOR_GPU,
          cuLibraryLoadData(&lib, sass.p, NULL, NULL, 0, NULL, NULL, 0));

    /* files: a whole fatbin loads, a truncated one is refused */
    char path[256];
    snprintf(path, sizeof(path), "%s/vecadd.fatbin", simtest_dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(multi.p, 1, multi.n, fp), multi.n);
    fclose(fp);
    CU_OK(cuModuleLoad(&m, path));
    vecadd_runs(m);
    CU_OK(cuModuleUnload(m));
    CU_OK(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryUnload(lib));
    fp = fopen(path, "wb");
    assert_int_equal(fwrite(multi.p, 1, 200, fp), 200);
    fclose(fp);
    CU_IS(CUDA_ERROR_INVALID_IMAGE, cuModuleLoad(&m, path));
    CU_IS(CUDA_ERROR_INVALID_IMAGE,
          cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
    unlink(path);
    free(multi.p);
    free(sass.p);
    CU_OK(cuCtxDestroy(c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_tables_the_runtime_asks_for_are_served),
        cmocka_unit_test(the_runtime_registers_fatbins_and_retains_the_primary_context),
        cmocka_unit_test(context_local_storage_lives_and_dies_with_its_context),
        cmocka_unit_test(nvcc_fatbins_load_and_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
