/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated driver used from many threads at once, as the real one may be: each thread
 * has its own context stack, threads share contexts, copies on many streams at once keep
 * their data apart, and concurrent allocations never overshoot the device budget.
 */
#include "simtest.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

#define MiB (1u << 20)
#define THREADS 6

static CUcontext shared;

static void *stacks_are_per_thread(void *arg)
{
    intptr_t ok = 1;
    CUcontext mine, top;
    ok &= cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == NULL; /* nothing inherited */
    ok &= cuCtxCreate(&mine, NULL, 0, (int)(intptr_t)arg % 2) == CUDA_SUCCESS;
    ok &= cuCtxPushCurrent(shared) == CUDA_SUCCESS;
    ok &= cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == shared;
    ok &= cuCtxPopCurrent(&top) == CUDA_SUCCESS && top == shared;
    ok &= cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == mine;
    CUdevice d = -1;
    ok &= cuCtxGetDevice(&d) == CUDA_SUCCESS && d == (int)(intptr_t)arg % 2;
    ok &= cuCtxDestroy(mine) == CUDA_SUCCESS;
    ok &= cuCtxGetCurrent(&top) == CUDA_SUCCESS && top == NULL;
    return (void *)ok;
}

static void every_thread_has_its_own_context_stack(void **state)
{
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, stacks_are_per_thread, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        assert_int_equal((intptr_t)ok, 1);
    }
    CUcontext top;
    CU_OK(cuCtxGetCurrent(&top));
    assert_ptr_equal(top, shared);
}

/* Each thread pushes a pattern of its own through a device buffer on its own stream, many
 * times, in a shared context. */
static void *copy_worker(void *arg)
{
    enum { N = 64 * 1024, ROUNDS = 40 };
    unsigned id = (unsigned)(intptr_t)arg;
    unsigned *src = malloc(N * 4), *dst = malloc(N * 4);
    intptr_t ok = cuCtxSetCurrent(shared) == CUDA_SUCCESS;
    CUstream s;
    CUdeviceptr a, b;
    ok &= cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    ok &= cuMemAlloc(&a, N * 4) == CUDA_SUCCESS && cuMemAlloc(&b, N * 4) == CUDA_SUCCESS;
    for (int r = 0; ok && r < ROUNDS; r++) {
        for (int i = 0; i < N; i++)
            src[i] = id << 24 | (unsigned)r << 16 | (unsigned)i;
        ok &= cuMemcpyHtoDAsync(a, src, N * 4, s) == CUDA_SUCCESS;
        ok &= cuMemcpyDtoDAsync(b, a, N * 4, s) == CUDA_SUCCESS;
        ok &= cuMemsetD32Async(a, 0, N, s) == CUDA_SUCCESS;
        ok &= cuMemcpyDtoHAsync(dst, b, N * 4, s) == CUDA_SUCCESS;
        ok &= cuStreamSynchronize(s) == CUDA_SUCCESS;
        ok &= memcmp(src, dst, N * 4) == 0;
    }
    ok &= cuMemFree(a) == CUDA_SUCCESS && cuMemFree(b) == CUDA_SUCCESS;
    ok &= cuStreamDestroy(s) == CUDA_SUCCESS;
    free(src);
    free(dst);
    return (void *)ok;
}

static void concurrent_streams_keep_their_data_apart(void **state)
{
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, copy_worker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        assert_int_equal((intptr_t)ok, 1);
    }
}

static _Atomic long granted;

static void *allocate_until_full(void *arg)
{
    CUdeviceptr *mine = arg;
    if (cuCtxSetCurrent(shared) != CUDA_SUCCESS)
        return (void *)0;
    int n = 0;
    while (n < 64 && cuMemAlloc(&mine[n], MiB) == CUDA_SUCCESS)
        n++;
    atomic_fetch_add(&granted, n);
    return (void *)(intptr_t)n;
}

static void concurrent_allocations_never_overshoot_the_budget(void **state)
{
    size_t free0, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    assert_int_equal(total, 96 * MiB);
    static CUdeviceptr ptrs[THREADS][64];
    pthread_t t[THREADS];
    atomic_store(&granted, 0);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, allocate_until_full, ptrs[i]);
    int counts[THREADS];
    for (int i = 0; i < THREADS; i++) {
        void *n;
        pthread_join(t[i], &n);
        counts[i] = (int)(intptr_t)n;
    }
    assert_int_equal(atomic_load(&granted), (long)(free0 / MiB)); /* exactly the budget */
    size_t f;
    CU_OK(cuMemGetInfo(&f, &total));
    assert_true(f < MiB);
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < counts[i]; j++)
            CU_OK(cuMemFree(ptrs[i][j]));
    CU_OK(cuMemGetInfo(&f, &total));
    assert_int_equal(f, free0);
}

int main(void)
{
    simtest_env("L4:96Mi,L4:96Mi");
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&shared, NULL, 0, 0));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_thread_has_its_own_context_stack),
        cmocka_unit_test(concurrent_streams_keep_their_data_apart),
        cmocka_unit_test(concurrent_allocations_never_overshoot_the_budget),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cuCtxDestroy(shared);
    simtest_cleanup();
    return rc;
}
