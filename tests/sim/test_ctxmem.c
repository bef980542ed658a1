/* SPDX-License-Identifier: Apache-2.0
 *
 * Per-context memory on the simulated GPU, as a GPU's per-context page tables give it: a
 * kernel touching device memory its context does not own — another context's, on the same
 * device, address known — faults with CUDA_ERROR_ILLEGAL_ADDRESS and breaks only its own
 * context; the owner's data is untouched. Page-locked host memory and managed memory stay
 * reachable from every context (unified addressing maps them into all of them).
 * Usage: test_ctxmem oob.ptx vecadd.ptx
 */
#include "simtest.h"

#include <cuda.h>

static const char *oob_path, *vecadd_path;

struct tenant {
    CUcontext ctx;
    CUmodule oob, vec;
    CUfunction write, add;
};

static void tenant_up(struct tenant *t)
{
    CU_OK(cuCtxCreate(&t->ctx, NULL, 0, 0));
    CU_OK(cuModuleLoad(&t->oob, oob_path));
    CU_OK(cuModuleLoad(&t->vec, vecadd_path));
    CU_OK(cuModuleGetFunction(&t->write, t->oob, "write_oob"));
    CU_OK(cuModuleGetFunction(&t->add, t->vec, "vecadd"));
}

/* write_oob(P, 0): *P = 42 from one thread. */
static CUresult write42(struct tenant *t, CUdeviceptr p)
{
    CU_OK(cuCtxSetCurrent(t->ctx));
    long long off = 0;
    void *args[] = {&p, &off};
    CU_OK(cuLaunchKernel(t->write, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    return cuCtxSynchronize();
}

/* C[i] = A[i] + B[i] for N floats. */
static CUresult add(struct tenant *t, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n)
{
    CU_OK(cuCtxSetCurrent(t->ctx));
    void *args[] = {&a, &b, &c, &n};
    CU_OK(cuLaunchKernel(t->add, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    return cuCtxSynchronize();
}

static void victim_buffer(struct tenant *v, CUdeviceptr *p, float *secret, int n)
{
    CU_OK(cuCtxSetCurrent(v->ctx));
    for (int i = 0; i < n; i++)
        secret[i] = (float)(i * 3 + 1);
    CU_OK(cuMemAlloc(p, (size_t)n * sizeof(float)));
    CU_OK(cuMemcpyHtoD(*p, secret, (size_t)n * sizeof(float)));
}

static void another_contexts_memory_faults_read_or_write(void **state)
{
    struct tenant a, b;
    tenant_up(&a);
    tenant_up(&b);
    float secret[64], back[64];
    CUdeviceptr pa, pb;
    victim_buffer(&a, &pa, secret, 64);
    /* B's own memory works as before. */
    CU_OK(cuCtxSetCurrent(b.ctx));
    CU_OK(cuMemAlloc(&pb, sizeof(back)));
    CU_OK(write42(&b, pb));
    CU_OK(add(&b, pb, pb, pb, 64));
    /* B reads A's buffer (the address guessed right): the kernel faults. */
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, add(&b, pa, pa, pb, 64));
    CU_OK(cuCtxDestroy(b.ctx));
    /* A fresh B overwrites it: faults too. */
    tenant_up(&b);
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, write42(&b, pa));
    CU_OK(cuCtxDestroy(b.ctx));
    /* A is not broken, and its data is what it wrote. */
    CU_OK(cuCtxSetCurrent(a.ctx));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpyDtoH(back, pa, sizeof(back)));
    assert_memory_equal(back, secret, sizeof(secret));
    /* A's own kernels still reach it. */
    CU_OK(write42(&a, pa));
    CU_OK(cuCtxDestroy(a.ctx));
}

static void another_contexts_module_variables_fault(void **state)
{
    struct tenant a, b;
    tenant_up(&a);
    tenant_up(&b);
    CUmodule m;
    CU_OK(cuCtxSetCurrent(a.ctx));
    static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .global .align 4 .b8 secret[256];\n";
    CU_OK(cuModuleLoadData(&m, ptx));
    CUdeviceptr g;
    size_t n;
    CU_OK(cuModuleGetGlobal(&g, &n, m, "secret"));
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, write42(&b, g));
    CU_OK(write42(&a, g));
    CU_OK(cuCtxDestroy(b.ctx));
    CU_OK(cuCtxDestroy(a.ctx));
}

static void host_and_managed_memory_reach_every_context(void **state)
{
    struct tenant a, b;
    tenant_up(&a);
    tenant_up(&b);
    CU_OK(cuCtxSetCurrent(a.ctx));
    void *host;
    CUdeviceptr managed;
    CU_OK(cuMemAllocHost(&host, 256));
    CU_OK(cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL));
    CU_OK(write42(&b, (CUdeviceptr)(uintptr_t)host));
    CU_OK(write42(&b, managed));
    assert_int_equal(*(int *)host, 42);
    CU_OK(cuCtxSetCurrent(a.ctx));
    CU_OK(cuMemFreeHost(host));
    CU_OK(cuMemFree(managed));
    CU_OK(cuCtxDestroy(b.ctx));
    CU_OK(cuCtxDestroy(a.ctx));
}

static int setup(void **state)
{
    simtest_env("A100:1Gi");
    return cuInit(0) == CUDA_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    simtest_cleanup();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_ctxmem oob.ptx vecadd.ptx\n");
        return 2;
    }
    oob_path = argv[1];
    vecadd_path = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(another_contexts_memory_faults_read_or_write),
        cmocka_unit_test(another_contexts_module_variables_fault),
        cmocka_unit_test(host_and_managed_memory_reach_every_context),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
