/* SPDX-License-Identifier: Apache-2.0
 *
 * A second process for the simulated-GPU tests (run by simtest_spawn with the test's
 * environment):
 *   sim_helper hold BYTES   cuMemAlloc BYTES on device 0, print "ready <pid>", sleep until
 *                           killed (or until stdin closes, then exit normally)
 *   sim_helper info         print "free <bytes> total <bytes> sms <count>" of device 0
 *   sim_helper init         print cuInit's result code
 *   sim_helper devices      print "count N", then per CUDA ordinal "dev I NAME UUID BUSID"
 *                           (cuInit's failure: "error cuInit CUDA_ERROR_...")
 * Exit status: 0 ok, 1 a CUDA call failed (its name is printed), 2 bad usage.
 */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, CUresult r)
{
    const char *n = NULL;
    cuGetErrorName(r, &n);
    printf("error %s %s\n", what, n ? n : "?");
    return 1;
}

static int setup(void)
{
    CUresult r;
    CUcontext ctx;
    if ((r = cuInit(0)))
        return fail("cuInit", r);
    if ((r = cuDevicePrimaryCtxRetain(&ctx, 0)))
        return fail("cuDevicePrimaryCtxRetain", r);
    if ((r = cuCtxSetCurrent(ctx)))
        return fail("cuCtxSetCurrent", r);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc >= 2 && strcmp(argv[1], "init") == 0) {
        printf("%d\n", (int)cuInit(0));
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "devices") == 0) {
        CUresult r;
        int n;
        if ((r = cuInit(0)) || (r = cuDeviceGetCount(&n)))
            return fail("cuInit", r);
        printf("count %d\n", n);
        for (int i = 0; i < n; i++) {
            CUdevice d;
            CUuuid u;
            char name[64], bus[32];
            if ((r = cuDeviceGet(&d, i)) || (r = cuDeviceGetName(name, sizeof(name), d)) ||
                (r = cuDeviceGetUuid(&u, d)) || (r = cuDeviceGetPCIBusId(bus, sizeof(bus), d)))
                return fail("device", r);
            for (char *c = name; *c; c++)
                *c = *c == ' ' ? '_' : *c;
            printf("dev %d %s GPU-", i, name);
            for (int k = 0; k < 16; k++)
                printf("%s%02x", k == 4 || k == 6 || k == 8 || k == 10 ? "-" : "",
                       (unsigned char)u.bytes[k]);
            printf(" %s\n", bus);
        }
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "info") == 0) {
        size_t free_b, total;
        CUresult r;
        if (setup())
            return 1;
        int sms = 0;
        if ((r = cuMemGetInfo(&free_b, &total)))
            return fail("cuMemGetInfo", r);
        if ((r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)))
            return fail("cuDeviceGetAttribute", r);
        printf("free %zu total %zu sms %d\n", free_b, total, sms);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "hold") == 0) {
        CUdeviceptr p;
        CUresult r;
        if (setup())
            return 1;
        if ((r = cuMemAlloc(&p, (size_t)strtoull(argv[2], NULL, 0))))
            return fail("cuMemAlloc", r);
        printf("ready %d\n", (int)getpid());
        char c;
        while (read(0, &c, 1) > 0)
            ;
        return 0;
    }
    fprintf(stderr, "usage: sim_helper hold BYTES | info | init | devices\n");
    return 2;
}
