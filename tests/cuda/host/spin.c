/* SPDX-License-Identifier: Apache-2.0
 *
 * The %globaltimer spin kernel (kernels/timer.cu): COUNT launches of NS nanoseconds each on
 * one stream; checks every launch completed (device-side atomic counter) and that the
 * events around them measured at least COUNT * NS. With a third argument of 0 it runs
 * forever (a load generator for multi-process tests), printing "spin: running" once.
 * Usage: spin timer.ptx [NS=20000000] [COUNT=5]
 */
#include "hostcommon.h"

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("spin", argc, argv, &dev);
    unsigned long long ns = (unsigned long long)host_arg(argc, argv, 2, 20000000);
    long count = host_arg(argc, argv, 3, 5);
    CUfunction f;
    CUdeviceptr done;
    CUstream s;
    CUevent e0, e1;
    CK(cuModuleGetFunction(&f, mod, "spin_ns"));
    CK(cuMemAlloc(&done, 8));
    CK(cuMemsetD32(done, 0, 2));
    CK(cuStreamCreate(&s, 0));
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    void *params[] = {&ns, &done};
    if (count == 0) {
        printf("spin: running\n");
        fflush(stdout);
        for (;;) {
            CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
            CK(cuStreamSynchronize(s));
        }
    }
    CK(cuEventRecord(e0, s));
    for (long i = 0; i < count; i++)
        CK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, NULL));
    CK(cuEventRecord(e1, s));
    CK(cuStreamSynchronize(s));
    unsigned long long got = 0;
    CK(cuMemcpyDtoH(&got, done, 8));
    float ms = 0;
    CK(cuEventElapsedTime(&ms, e0, e1));
    if (got != (unsigned long long)count)
        host_mismatch("%llu kernels counted, want %ld", got, count);
    if ((double)ms * 1e6 < (double)ns * (double)count * 0.999)
        host_mismatch("%ld spins of %llu ns took %.3f ms", count, ns, (double)ms);
    CK(cuEventDestroy(e0));
    CK(cuEventDestroy(e1));
    CK(cuStreamDestroy(s));
    CK(cuMemFree(done));
    host_teardown(mod, dev);
    printf("spin: PASS %ld x %llu ns in %.3f ms\n", count, ns, (double)ms);
    return 0;
}
