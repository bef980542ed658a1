// SPDX-License-Identifier: Apache-2.0
// A compute load through one of the runtime's launch paths, for the limiter's compute limit:
// kernels spinning MS milliseconds on %globaltimer, kept 4 deep in flight on a stream for SECS
// seconds, launched with <<<>>>, cudaLaunchKernelEx, cudaLaunchCooperativeKernel or as a
// captured graph of one kernel (cudaGraphLaunch). Prints "burn: running" when the load starts,
// then launched= / completed= (a device-side count).
// Usage: burn launch|ex|coop|graph SECS MS
#include "check.h"
#include "spin.h"

int main(int argc, char **argv)
{
    prog = "burn";
    if (argc != 4 || atoi(argv[3]) < 1 ||
        (strcmp(argv[1], "launch") && strcmp(argv[1], "ex") && strcmp(argv[1], "coop") &&
         strcmp(argv[1], "graph"))) {
        printf("usage: burn launch|ex|coop|graph SECS MS\n");
        return 2;
    }
    const char *path = argv[1];
    double secs = atof(argv[2]);
    unsigned long long ns = 1000000ull * (unsigned)atoi(argv[3]), *done;
    CK(cudaMalloc(&done, sizeof(*done)));
    CK(cudaMemset(done, 0, sizeof(*done)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    const int depth = 4;
    cudaEvent_t ev[depth];
    for (int i = 0; i < depth; i++)
        CK(cudaEventCreate(&ev[i]));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(32);
    cfg.stream = s;
    void *args[] = {&ns, &done};
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    if (path[0] == 'g') {
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        spin_ns<<<1, 32, 0, s>>>(ns, done);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
    }
    printf("burn: running\n");
    fflush(stdout);
    double end = now_s() + secs;
    long i = 0;
    while (now_s() < end) {
        int slot = (int)(i % depth);
        if (i >= depth)
            CK(cudaEventSynchronize(ev[slot]));
        if (path[0] == 'l')
            spin_ns<<<1, 32, 0, s>>>(ns, done);
        else if (path[0] == 'g')
            CK(cudaGraphLaunch(ge, s));
        else if (path[0] == 'e')
            CK(cudaLaunchKernelEx(&cfg, spin_ns, ns, done));
        else
            CK(cudaLaunchCooperativeKernel((const void *)spin_ns, dim3(1), dim3(32), args, 0, s));
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev[slot], s));
        i++;
    }
    CK(cudaStreamSynchronize(s));
    if (ge) {
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
    unsigned long long got = 0;
    CK(cudaMemcpy(&got, done, sizeof(got), cudaMemcpyDeviceToHost));
    if ((long)got != i)
        mismatch("%ld launched, %llu completed", i, got);
    printf("launched=%ld\ncompleted=%llu\n", i, got);
    pass("%s: %ld kernels of %llu ms", path, i, ns / 1000000);
    return 0;
}
