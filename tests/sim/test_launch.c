/* SPDX-License-Identifier: Apache-2.0
 *
 * Module loading and kernel launches on the simulated GPU (needs the PTX engine): module
 * variables as device memory, the launch checks and their CUresult codes, dynamic shared
 * memory opt-in, parameter layout and both parameter-passing styles, context-independent
 * libraries, function / library / kernel queries, JIT errors, an illegal address breaking
 * only its own context, and many threads loading and launching at once.
 * Usage: test_launch driver.ptx oob.ptx
 */
#include "simtest.h"

#include <cuda.h>
#include <pthread.h>

static const char *driver_ptx_path, *oob_ptx_path;
static char *driver_ptx;
static CUcontext ctx;
static CUmodule mod;

static CUfunction fn(const char *name)
{
    CUfunction f;
    CU_OK(cuModuleGetFunction(&f, mod, name));
    return f;
}

static void module_variables_are_device_memory(void **state)
{
    CUdeviceptr table, coeff, launches;
    size_t size;
    CU_OK(cuModuleGetGlobal(&table, &size, mod, "table"));
    assert_int_equal(size, 16);
    int t[4];
    CU_OK(cuMemcpyDtoH(t, table, sizeof(t)));
    assert_int_equal(t[0], 10);
    assert_int_equal(t[3], 40);
    CU_OK(cuModuleGetGlobal(&coeff, NULL, mod, "coeff"));
    float c[4] = {0.5f, 1.5f, -2.0f, 4.0f};
    CU_OK(cuMemcpyHtoD(coeff, c, sizeof(c)));
    CU_OK(cuModuleGetGlobal(&launches, NULL, mod, "launches"));
    unsigned mt;
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, table));
    assert_int_equal(mt, CU_MEMORYTYPE_DEVICE);
    CU_IS(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal(&table, &size, mod, "nope"));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFree(table)); /* not an allocation of its own */
    int n = 37;
    CUdeviceptr out;
    CU_OK(cuMemAlloc(&out, n * sizeof(float)));
    void *p[] = {&out, &n};
    CUfunction f = fn("use_globals");
    CU_OK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    CU_OK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    float o[37];
    CU_OK(cuMemcpyDtoH(o, out, sizeof(o)));
    for (int i = 0; i < n; i++)
        assert_true(o[i] == c[i & 3] * (float)t[i & 3]);
    int count;
    CU_OK(cuMemcpyDtoH(&count, launches, 4));
    assert_int_equal(count, 2);
    CU_OK(cuMemFree(out));
}

static void bad_launch_geometry_gets_the_real_error_codes(void **state)
{
    CUdeviceptr out;
    CU_OK(cuMemAlloc(&out, 1 << 20));
    void *p[] = {&out};
    CUfunction f = fn("bounded");
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 0, 1, 1, 0, NULL, p, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, p, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, NULL, p, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, p, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 65536, 1, 32, 1, 1, 0, NULL, p, NULL));
    /* __launch_bounds__(128): more threads than the kernel allows. */
    int maxt;
    CU_OK(cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    assert_int_equal(maxt, 128);
    CU_IS(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
          cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, p, NULL));
    CU_OK(cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, NULL, p, NULL));
    int got[512];
    CU_OK(cuMemcpyDtoH(got, out, sizeof(got)));
    assert_int_equal(got[511], 127);
    CU_IS(CUDA_ERROR_INVALID_HANDLE,
          cuLaunchKernel((CUfunction)&maxt, 1, 1, 1, 1, 1, 1, 0, NULL, p, NULL));
    CU_IS(CUDA_ERROR_INVALID_HANDLE,
          cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, (CUstream)&maxt, p, NULL));
    CU_OK(cuMemFree(out));
}

static void dynamic_shared_memory_above_48k_needs_the_opt_in(void **state)
{
    CUfunction f = fn("big_shared");
    CUdeviceptr out;
    CU_OK(cuMemAlloc(&out, 4));
    CU_OK(cuMemsetD32(out, 0, 1));
    int words = 16 * 1024; /* 64 KiB */
    void *p[] = {&out, &words};
    unsigned bytes = (unsigned)words * 4;
    int v;
    CU_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    assert_int_equal(v, 48 * 1024);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, bytes, NULL, p, NULL));
    int optin;
    CU_OK(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin + 1));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 8));
    CU_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes));
    CU_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    assert_int_equal(v, (int)bytes);
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, bytes, NULL, p, NULL));
    int sum;
    CU_OK(cuMemcpyDtoH(&sum, out, 4));
    assert_int_equal(sum, 3 * (words - 1) * words / 2);
    CU_OK(cuMemFree(out));
}

struct mixed {
    char c;
    double d;
    int i;
};

static void parameters_follow_the_ptx_layout_in_both_styles(void **state)
{
    CUfunction f = fn("struct_param");
    size_t off, size;
    CU_OK(cuFuncGetParamInfo(f, 0, &off, &size));
    assert_int_equal(off, 0);
    assert_int_equal(size, sizeof(struct mixed));
    CU_OK(cuFuncGetParamInfo(f, 1, &off, &size));
    assert_int_equal(off, 24);
    assert_int_equal(size, 8);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 2, &off, &size));
    CUdeviceptr out;
    CU_OK(cuMemAlloc(&out, 24));
    struct mixed m = {'x', 12345.0, -7};
    void *p[] = {&m, &out};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    long long o[3];
    CU_OK(cuMemcpyDtoH(o, out, sizeof(o)));
    assert_int_equal(o[0], 'x');
    assert_int_equal(o[1], 12345);
    assert_int_equal(o[2], -7);
    /* The same through one packed buffer (CU_LAUNCH_PARAM_BUFFER_*). */
    unsigned char buf[32];
    m.i = 99;
    memcpy(buf, &m, 24);
    memcpy(buf + 24, &out, 8);
    size_t bsize = sizeof(buf);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize,
                     CU_LAUNCH_PARAM_END};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
    CU_OK(cuMemcpyDtoH(o, out, sizeof(o)));
    assert_int_equal(o[2], 99);
    size_t short_size = 16;
    void *bad[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &short_size,
                   CU_LAUNCH_PARAM_END};
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, bad));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, p, extra));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    /* cuLaunchKernelEx with a config struct. */
    CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PRIORITY};
    CUlaunchConfig cfg = {1, 1, 1, 32, 1, 1, 0, NULL, &attr, 1};
    m.i = 5;
    CU_OK(cuLaunchKernelEx(&cfg, f, p, NULL));
    CU_OK(cuMemcpyDtoH(o, out, sizeof(o)));
    assert_int_equal(o[2], 5);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = 2;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuLaunchKernelEx(&cfg, f, p, NULL));
    CU_OK(cuMemFree(out));
}

static void cooperative_launch_is_limited_to_co_resident_blocks(void **state)
{
    CUfunction f = fn("bounded");
    CUdeviceptr out;
    CU_OK(cuMemAlloc(&out, 4 << 20));
    void *p[] = {&out};
    int sms, per_sm;
    CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CU_OK(cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 0));
    CU_OK(cuLaunchCooperativeKernel(f, (unsigned)sms, 1, 1, 32, 1, 1, 0, NULL, p));
    CU_IS(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
          cuLaunchCooperativeKernel(f, (unsigned)(sms * per_sm + 1), 1, 1, 32, 1, 1, 0, NULL, p));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(out));
}

static void libraries_instantiate_in_every_context(void **state)
{
    CUlibrary lib;
    CU_OK(cuLibraryLoadData(&lib, driver_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k;
    CU_OK(cuLibraryGetKernel(&k, lib, "use_globals"));
    CU_IS(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "missing"));
    CU_OK(cuLibraryGetKernel(&k, lib, "use_globals"));
    unsigned nk;
    CU_OK(cuLibraryGetKernelCount(&nk, lib));
    assert_int_equal(nk, 4);
    const char *name;
    CU_OK(cuKernelGetName(&name, k));
    assert_string_equal(name, "use_globals");
    CUfunction fa, fb;
    CU_OK(cuKernelGetFunction(&fa, k));
    CUcontext other;
    CU_OK(cuCtxCreate(&other, NULL, 0, 1));
    CU_OK(cuKernelGetFunction(&fb, k));
    assert_ptr_not_equal(fa, fb);
    /* Launch the CUkernel itself in the other context; its globals are that context's. */
    CUdeviceptr coeff, out;
    CU_OK(cuLibraryGetGlobal(&coeff, NULL, lib, "coeff"));
    float c[4] = {1, 1, 1, 1};
    CU_OK(cuMemcpyHtoD(coeff, c, sizeof(c)));
    int n = 4;
    CU_OK(cuMemAlloc(&out, 16));
    void *p[] = {&out, &n};
    CU_OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 4, 1, 1, 0, NULL, p, NULL));
    float o[4];
    CU_OK(cuMemcpyDtoH(o, out, sizeof(o)));
    assert_true(o[0] == 10.0f && o[3] == 40.0f);
    CU_IS(CUDA_ERROR_INVALID_HANDLE,
          cuLaunchKernel(fa, 1, 1, 1, 4, 1, 1, 0, NULL, p, NULL)); /* fa is ctx's function */
    CU_OK(cuCtxDestroy(other));
    CU_OK(cuLibraryUnload(lib));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetKernel(&k, lib, "use_globals"));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&fa, k));
}

static void function_library_and_kernel_queries(void **state)
{
    /* functions of a module */
    CUfunction fs[4];
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuModuleEnumerateFunctions(fs, 3, mod));
    CU_OK(cuModuleEnumerateFunctions(fs, 4, mod));
    int seen = 0;
    for (int i = 0; i < 4; i++) {
        const char *name;
        CUmodule m;
        CUfunctionLoadingState st;
        CU_OK(cuFuncGetName(&name, fs[i]));
        static const char *const names[] = {"use_globals", "bounded", "big_shared", "struct_param"};
        for (int k = 0; k < 4; k++)
            if (strcmp(name, names[k]) == 0)
                seen |= 1 << k;
        CU_OK(cuFuncGetModule(&m, fs[i]));
        assert_ptr_equal(m, mod);
        CU_OK(cuFuncLoad(fs[i]));
        CU_OK(cuFuncIsLoaded(&st, fs[i]));
        assert_int_equal(st, CU_FUNCTION_LOADING_STATE_LOADED);
    }
    assert_int_equal(seen, 15);
    CUmoduleLoadingMode lm;
    CU_OK(cuModuleGetLoadingMode(&lm));
    assert_int_equal(lm, CU_MODULE_EAGER_LOADING); /* so every function is loaded */
    CU_OK(cuFuncSetCacheConfig(fs[0], CU_FUNC_CACHE_PREFER_L1));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuFuncSetCacheConfig(fs[0], (CUfunc_cache)9));
    int junk;
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuFuncGetName(&(const char *){NULL}, (CUfunction)&junk));

    /* a library from a file, its kernels and their per-context module */
    CUlibrary lib;
    CU_IS(CUDA_ERROR_FILE_NOT_FOUND,
          cuLibraryLoadFromFile(&lib, "/nonexistent.ptx", NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryLoadFromFile(&lib, driver_ptx_path, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel ks[4], sp = NULL, bs = NULL, bd = NULL;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLibraryEnumerateKernels(ks, 3, lib));
    CU_OK(cuLibraryEnumerateKernels(ks, 4, lib));
    for (int i = 0; i < 4; i++) {
        const char *name;
        CUlibrary back;
        CU_OK(cuKernelGetName(&name, ks[i]));
        sp = strcmp(name, "struct_param") ? sp : ks[i];
        bs = strcmp(name, "big_shared") ? bs : ks[i];
        bd = strcmp(name, "bounded") ? bd : ks[i];
        CU_OK(cuKernelGetLibrary(&back, ks[i]));
        assert_ptr_equal(back, lib);
    }
    assert_true(sp && bs && bd);
    size_t off, size;
    CU_OK(cuKernelGetParamInfo(sp, 1, &off, &size));
    assert_int_equal(off, 24);
    assert_int_equal(size, 8);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(sp, 2, &off, &size));
    CUmodule m1, m2;
    CU_OK(cuLibraryGetModule(&m1, lib));
    CU_OK(cuLibraryGetModule(&m2, lib));
    assert_ptr_equal(m1, m2); /* one instance per context */
    CUfunction viaMod, viaKernel;
    CU_OK(cuModuleGetFunction(&viaMod, m1, "bounded"));
    CU_OK(cuKernelGetFunction(&viaKernel, bd));
    assert_ptr_equal(viaMod, viaKernel);
    int v;
    CU_OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bd, 0));
    assert_int_equal(v, 128);
    CU_OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024, bs, 0));
    CUfunction fb;
    CU_OK(cuKernelGetFunction(&fb, bs));
    CU_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fb));
    assert_int_equal(v, 64 * 1024);
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, 8, bs, 0)); /* read-only */
    CU_OK(cuLibraryUnload(lib));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetModule(&m1, lib));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuKernelGetParamInfo(sp, 0, &off, &size));
}

/* Many threads on one context at once: each loads its own module and launches from it on its
 * own stream, and all instantiate one shared library (one function for all of them). */
#define LT 6
static CUlibrary shared_lib;
static CUfunction lib_func[LT];

static void *load_and_launch(void *arg)
{
    intptr_t t = (intptr_t)arg, ok = 1;
    ok &= cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
    CUstream s;
    CUdeviceptr out;
    ok &= cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    ok &= cuMemAlloc(&out, 256 * sizeof(int)) == CUDA_SUCCESS;
    CUkernel k;
    ok &= cuLibraryGetKernel(&k, shared_lib, "bounded") == CUDA_SUCCESS;
    ok &= cuKernelGetFunction(&lib_func[t], k) == CUDA_SUCCESS;
    for (int round = 0; round < 4 && ok; round++) {
        CUmodule m;
        CUfunction f;
        ok &= cuModuleLoadData(&m, driver_ptx) == CUDA_SUCCESS;
        ok &= cuModuleGetFunction(&f, m, "bounded") == CUDA_SUCCESS;
        ok &= cuMemsetD32Async(out, 0xffffffffu, 256, s) == CUDA_SUCCESS;
        void *p[] = {&out};
        /* the module's function, then the library's kernel itself */
        ok &= cuLaunchKernel(round % 2 ? (CUfunction)k : f, 2, 1, 1, 128, 1, 1, 0, s, p, NULL) ==
              CUDA_SUCCESS;
        int got[256];
        ok &= cuMemcpyDtoHAsync(got, out, sizeof(got), s) == CUDA_SUCCESS;
        ok &= cuStreamSynchronize(s) == CUDA_SUCCESS;
        for (int i = 0; i < 256 && ok; i++)
            ok &= got[i] == i % 128;
        ok &= cuModuleUnload(m) == CUDA_SUCCESS;
    }
    ok &= cuMemFree(out) == CUDA_SUCCESS;
    ok &= cuStreamDestroy(s) == CUDA_SUCCESS;
    return (void *)ok;
}

static void many_threads_load_and_launch_at_once(void **state)
{
    CU_OK(cuLibraryLoadData(&shared_lib, driver_ptx, NULL, NULL, 0, NULL, NULL, 0));
    pthread_t th[LT];
    for (intptr_t i = 0; i < LT; i++)
        pthread_create(&th[i], NULL, load_and_launch, (void *)i);
    for (int i = 0; i < LT; i++) {
        void *ok;
        pthread_join(th[i], &ok);
        assert_int_equal((intptr_t)ok, 1);
    }
    for (int i = 1; i < LT; i++)
        assert_ptr_equal(lib_func[i], lib_func[0]);
    CU_OK(cuLibraryUnload(shared_lib));
}

static void jit_errors_name_the_problem(void **state)
{
    char log[512] = "";
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof(log)};
    CUmodule m;
    const char *bad = ".version 9.0\n.target sm_80\n.address_size 64\n"
                      ".visible .entry k()\n{\n\tfrobnicate.u32 %r1, 3;\n\tret;\n}\n";
    CU_IS(CUDA_ERROR_INVALID_PTX, cuModuleLoadDataEx(&m, bad, 2, opt, val));
    assert_non_null(strstr(log, "line 6"));
    assert_true((uintptr_t)val[1] == strlen(log) + 1);
    const char *newer = ".version 9.0\n.target sm_90\n.address_size 64\n";
    CU_IS(CUDA_ERROR_INVALID_PTX, cuModuleLoadData(&m, newer)); /* L4 is sm_89 */
    const char *future = ".version 9.9\n.target sm_80\n.address_size 64\n";
    CU_IS(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, cuModuleLoadData(&m, future));
    const char elf[] = "\x7f"
                       "ELF\x02\x01\x01";
    CU_IS(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadData(&m, elf));
    CU_IS(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&m, "/nonexistent/k.ptx"));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(&m, NULL));
    CU_OK(cuModuleLoad(&m, driver_ptx_path));
    CUfunction f;
    CU_IS(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&f, m, "nope"));
    unsigned count;
    CU_OK(cuModuleGetFunctionCount(&count, m));
    assert_int_equal(count, 4);
    CU_OK(cuModuleUnload(m));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, m, "bounded"));
}

static void illegal_address_breaks_only_its_own_context(void **state)
{
    CUcontext victim;
    CU_OK(cuCtxCreate(&victim, NULL, 0, 0));
    CUmodule m;
    CU_OK(cuModuleLoad(&m, oob_ptx_path));
    CUfunction f;
    CU_OK(cuModuleGetFunction(&f, m, "write_oob"));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 64));
    long long off = 1LL << 30;
    void *args[] = {&p, &off};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&p, 64));
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(NULL));
    CU_OK(cuCtxDestroy(victim)); /* destroying the broken context is allowed */
    /* The other context on the same device is unaffected. */
    CU_OK(cuCtxGetCurrent(&victim));
    assert_ptr_equal(victim, ctx);
    CU_OK(cuMemAlloc(&p, 64));
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxSynchronize());
}

/* Every test gets its own context (a fault in one must not leak into the next). */
static int fresh_context(void **state)
{
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    CU_OK(cuModuleLoadData(&mod, driver_ptx));
    return 0;
}

static int drop_context(void **state)
{
    CU_OK(cuCtxDestroy(ctx));
    return 0;
}

static const char *spin_ptx_text =
    ".version 9.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry forever()\n{\n\t.reg .pred %p<2>;\n$L:\n\tbra $L;\n\tret;\n}\n";

static void runaway_kernels_stop_at_the_instruction_budget(void **state)
{
    /* TF_SIM_LAUNCH_MAX_INSNS (set in main) bounds every launch. */
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, spin_ptx_text));
    CU_OK(cuModuleGetFunction(&f, m, "forever"));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CU_IS(CUDA_ERROR_LAUNCH_TIMEOUT, cuCtxSynchronize());
    CU_IS(CUDA_ERROR_LAUNCH_TIMEOUT, cuStreamQuery(NULL)); /* sticky, like a fault */
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_launch driver.ptx oob.ptx\n");
        return 2;
    }
    driver_ptx_path = argv[1];
    oob_ptx_path = argv[2];
    simtest_env("L4:1Gi:8,A100-40GB:2Gi");
    driver_ptx = simtest_slurp(driver_ptx_path);
    setenv("TF_SIM_LAUNCH_MAX_INSNS", "2000000", 1);
    CU_OK(cuInit(0));
#define T(name) cmocka_unit_test_setup_teardown(name, fresh_context, drop_context)
    const struct CMUnitTest tests[] = {
        T(module_variables_are_device_memory),
        T(bad_launch_geometry_gets_the_real_error_codes),
        T(dynamic_shared_memory_above_48k_needs_the_opt_in),
        T(parameters_follow_the_ptx_layout_in_both_styles),
        T(cooperative_launch_is_limited_to_co_resident_blocks),
        T(libraries_instantiate_in_every_context),
        T(function_library_and_kernel_queries),
        T(many_threads_load_and_launch_at_once),
        T(jit_errors_name_the_problem),
        T(illegal_address_breaks_only_its_own_context),
        T(runaway_kernels_stop_at_the_instruction_budget),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(driver_ptx);
    simtest_cleanup();
    return rc;
}
