/* SPDX-License-Identifier: Apache-2.0
 *
 * Prints what the driver reports about device 0: "name NAME", "mem BYTES", "cc MAJOR.MINOR"
 * and one "attr ID VALUE" line per CUdevice_attribute of cuda.h ("attr ID error CODE" when the
 * driver refuses one). Not a pass/fail program: scripts/gpu-check.sh runs it on a real GPU and
 * on the simulated model of the same name and lists the attributes that differ, to keep the
 * simulator's attribute table (src/sim/cu_device.c, hwspec.c) true to the hardware.
 * Usage: attrs
 */
#include "hostcommon.h"

int main(void)
{
    host_name = "attrs";
    CUdevice dev;
    char name[256];
    size_t mem;
    int major, minor;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDeviceGetName(name, sizeof(name), dev));
    CK(cuDeviceTotalMem(&mem, dev));
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    printf("name %s\nmem %zu\ncc %d.%d\n", name, mem, major, minor);
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
        int v = 0;
        CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, dev);
        if (r == CUDA_SUCCESS)
            printf("attr %d %d\n", a, v);
        else
            printf("attr %d error %d\n", a, (int)r);
    }
    return 0;
}
