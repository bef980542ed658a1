// SPDX-License-Identifier: Apache-2.0
// VRAM limits as a runtime program meets them, run under libtf_limiter.so with a limit of
// argv[1] MiB (the limiter suite): the device and cudaMemGetInfo report the limit; the 32 MiB
// __device__ array of this program counts against it once the module is in use; cudaMalloc,
// cudaMallocPitch and cudaMalloc3D past what is left fail with cudaErrorMemoryAllocation while
// smaller ones succeed; frees give the room back. The same for stream-ordered allocation (the
// device's pool and one of the program's own), managed memory (where the device has it: not
// through the remote client), and a captured graph's memory node (counted from instantiation:
// a graph whose allocation does not fit is refused there), each sharing the one budget with
// cudaMalloc. Also run through libtf_client under a tf-worker's --vram-limit.
#include "check.h"

#define BIG (32u << 20)
#define MiB (1u << 20)

__device__ char big[BIG];

__global__ void touch(unsigned i)
{
    big[i] = 1;
}

// cudaMemGetInfo must show FREE bytes free again once WHAT gave its memory back.
static void all_back(size_t free_want, const char *what)
{
    size_t free_b, total_b;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b != free_want)
        mismatch("free %zu after freeing the memory of %s, %zu before", free_b, what, free_want);
}

int main(int argc, char **argv)
{
    prog = "vram";
    if (argc != 2 || atoi(argv[1]) < 96) {
        printf("usage: vram LIMIT_MIB (>= 96), run under the limiter with that VRAM limit\n");
        return 2;
    }
    size_t limit = (size_t)atoi(argv[1]) * MiB;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    size_t free_b, total_b;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (prop.totalGlobalMem != limit || total_b != limit || free_b > limit)
        mismatch("device memory %zu, cudaMemGetInfo free %zu total %zu: the limit is %zu",
                 prop.totalGlobalMem, free_b, total_b, limit);

    // The module's 32 MiB of variables are charged once it is in use.
    touch<<<1, 1>>>(BIG - 1);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b > limit - BIG)
        mismatch("free %zu after the module's use: its %u bytes of variables are not counted",
                 free_b, BIG);
    size_t after_module = free_b;

    void *p = NULL, *q = NULL;
    EXPECT_ERR(cudaMalloc(&p, limit - 16 * MiB), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaMalloc(&p, after_module - 16 * MiB)); // 16 MiB left
    EXPECT_ERR(cudaMalloc(&q, 32 * MiB), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();

    size_t pitch;
    EXPECT_ERR(cudaMallocPitch(&q, &pitch, MiB, 32), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaMallocPitch(&q, &pitch, MiB, 4));
    CK(cudaFree(q));

    cudaPitchedPtr pp;
    EXPECT_ERR(cudaMalloc3D(&pp, make_cudaExtent(MiB, 8, 4)), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaMalloc3D(&pp, make_cudaExtent(MiB, 2, 2)));
    CK(cudaFree(pp.ptr));

    CK(cudaFree(p));
    all_back(after_module, "cudaMalloc");

    // Stream-ordered allocation, from the device's pool and from one of our own.
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t own;
    CK(cudaMemPoolCreate(&own, &props));
    for (int from_own = 0; from_own < 2; from_own++) {
        CK(from_own ? cudaMallocFromPoolAsync(&p, after_module - 16 * MiB, own, s)
                    : cudaMallocAsync(&p, after_module - 16 * MiB, s));
        EXPECT_ERR(cudaMalloc(&q, 32 * MiB), cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        EXPECT_ERR(from_own ? cudaMallocFromPoolAsync(&q, 32 * MiB, own, s)
                            : cudaMallocAsync(&q, 32 * MiB, s),
                   cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        CK(cudaMallocAsync(&q, 8 * MiB, s));
        CK(cudaFreeAsync(q, s));
        CK(cudaFreeAsync(p, s));
        CK(cudaStreamSynchronize(s));
        all_back(after_module, from_own ? "cudaMallocFromPoolAsync" : "cudaMallocAsync");
    }
    CK(cudaMemPoolDestroy(own));

    // Managed memory, where the device has it (not through the remote client).
    int managed = 0;
    CK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    if (managed) {
        CK(cudaMallocManaged(&p, after_module - 16 * MiB));
        EXPECT_ERR(cudaMalloc(&q, 32 * MiB), cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        EXPECT_ERR(cudaMallocManaged(&q, 32 * MiB), cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        CK(cudaFree(p));
        all_back(after_module, "cudaMallocManaged");
    }

    // A graph's memory node: refused at instantiation while 32 MiB are taken, then counted
    // for as long as the executable graph exists.
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMallocAsync(&p, after_module - 16 * MiB, s));
    CK(cudaMemsetAsync(p, 1, after_module - 16 * MiB, s));
    CK(cudaFreeAsync(p, s));
    CK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e;
    CK(cudaMalloc(&q, 32 * MiB));
    EXPECT_ERR(cudaGraphInstantiate(&e, g, 0), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaFree(q));
    CK(cudaGraphInstantiate(&e, g, 0));
    EXPECT_ERR(cudaMalloc(&q, 32 * MiB), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaGraphLaunch(e, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
    CK(cudaDeviceGraphMemTrim(0));
    all_back(after_module, "a graph's memory node");
    CK(cudaStreamDestroy(s));
    pass("limit %zu MiB reported; module variables (%u MiB) counted; cudaMalloc, "
         "cudaMallocPitch, cudaMalloc3D, cudaMallocAsync, cudaMallocFromPoolAsync, %s"
         "graph memory nodes refused past the limit",
         limit / MiB, BIG / MiB, managed ? "cudaMallocManaged and " : "");
    return 0;
}
