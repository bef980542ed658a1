// SPDX-License-Identifier: Apache-2.0
// Several streams with page-locked host buffers: each stream copies its chunk in, scales it and
// copies it back asynchronously; an event recorded on one stream gates a kernel on another
// (cudaStreamWaitEvent) that reads the first stream's result; a host function runs in stream
// order; events time the work. Checks every value and the orderings.
#include "check.h"

#define NSTREAMS 4
#define CHUNK 4099

__global__ void scale(const float *in, float *out, float f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * f;
}

__global__ void combine(const float *x, const float *y, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = x[i] + y[i];
}

static volatile int host_fn_ran;
static volatile float host_fn_saw;
static float *host_fn_buf;

static void CUDART_CB after_copy(void *arg)
{
    (void)arg;
    host_fn_saw = host_fn_buf[CHUNK - 1]; // the copy before it in the stream has completed
    host_fn_ran = 1;
}

int main()
{
    prog = "streams";
    cudaStream_t s[NSTREAMS];
    float *h_in, *h_out, *h_comb, *d_in, *d_out, *d_comb;
    size_t bytes = (size_t)NSTREAMS * CHUNK * sizeof(float);
    CK(cudaMallocHost(&h_in, bytes));
    CK(cudaHostAlloc(&h_out, bytes, cudaHostAllocDefault));
    CK(cudaMallocHost(&h_comb, CHUNK * sizeof(float)));
    CK(cudaMalloc(&d_in, bytes));
    CK(cudaMalloc(&d_out, bytes));
    CK(cudaMalloc(&d_comb, CHUNK * sizeof(float)));
    for (int i = 0; i < NSTREAMS * CHUNK; i++)
        h_in[i] = rndf();
    for (int i = 0; i < NSTREAMS; i++)
        CK(i % 2 ? cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking) : cudaStreamCreate(&s[i]));
    cudaEvent_t start, stop, done0;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    CK(cudaEventCreateWithFlags(&done0, cudaEventDisableTiming));
    CK(cudaEventRecord(start, s[0]));
    for (int i = 0; i < NSTREAMS; i++) {
        size_t off = (size_t)i * CHUNK;
        CK(cudaMemcpyAsync(d_in + off, h_in + off, CHUNK * sizeof(float), cudaMemcpyHostToDevice,
                           s[i]));
        scale<<<(CHUNK + 127) / 128, 128, 0, s[i]>>>(d_in + off, d_out + off, (float)(i + 2), CHUNK);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h_out + off, d_out + off, CHUNK * sizeof(float),
                           cudaMemcpyDeviceToHost, s[i]));
        if (i == 0)
            CK(cudaEventRecord(done0, s[0]));
    }
    host_fn_buf = h_out;
    CK(cudaLaunchHostFunc(s[0], after_copy, NULL));
    // Stream 3 (non-blocking) combines stream 0's result with its own once stream 0 is done.
    CK(cudaStreamWaitEvent(s[3], done0, 0));
    combine<<<(CHUNK + 127) / 128, 128, 0, s[3]>>>(d_out, d_out + 3 * CHUNK, d_comb, CHUNK);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(h_comb, d_comb, CHUNK * sizeof(float), cudaMemcpyDeviceToHost, s[3]));
    CK(cudaEventRecord(stop, s[3]));
    CK(cudaEventSynchronize(stop));
    for (int i = 0; i < NSTREAMS; i++)
        CK(cudaStreamSynchronize(s[i]));
    for (int i = 0; i < NSTREAMS; i++)
        CK(cudaStreamQuery(s[i]));
    CK(cudaEventQuery(done0));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, start, stop));
    if (!(ms >= 0.0f))
        mismatch("cudaEventElapsedTime = %g ms", ms);
    EXPECT_ERR(cudaEventElapsedTime(&ms, start, done0), cudaErrorInvalidResourceHandle);
    for (int i = 0; i < NSTREAMS * CHUNK; i++) {
        float want = h_in[i] * (float)(i / CHUNK + 2);
        if (!same_bits(h_out[i], want))
            mismatch("stream %d: out[%d] = %.9g, expected %.9g", i / CHUNK, i, h_out[i], want);
    }
    for (int i = 0; i < CHUNK; i++) {
        float want = h_in[i] * 2.0f + h_in[3 * CHUNK + i] * 5.0f;
        if (!same_bits(h_comb[i], want))
            mismatch("combined[%d] = %.9g, expected %.9g (cross-stream wait)", i, h_comb[i], want);
    }
    if (!host_fn_ran || !same_bits(host_fn_saw, h_in[CHUNK - 1] * 2.0f))
        mismatch("host function: ran %d, saw %.9g (copy not complete before it)", host_fn_ran,
                 host_fn_saw);
    for (int i = 0; i < NSTREAMS; i++)
        CK(cudaStreamDestroy(s[i]));
    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    CK(cudaEventDestroy(done0));
    CK(cudaFreeHost(h_in));
    CK(cudaFreeHost(h_out));
    CK(cudaFreeHost(h_comb));
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    CK(cudaFree(d_comb));
    pass("%d streams x %d floats, pinned async copies, event wait across streams, host "
         "function in order, %.3f ms",
         NSTREAMS, CHUNK, ms);
    return 0;
}
