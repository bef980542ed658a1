/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated libnvidia-ml.so.1 as a monitoring agent (the hypervisor) uses it: the same
 * devices as CUDA sees, memory used by every process on the device (also another process),
 * the running-process list in each struct layout, utilisation and per-process samples from
 * the shared busy time, and NVML's error codes for misuse.
 */
#include "simtest.h"

#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <strings.h>

#include "sim/devshm.h"
#include "sim/nvml_abi.h"
#include "sim/simcfg.h"

#define MiB (1ull << 20)

static CUcontext ctx;

static nvmlDevice_t dev0(void)
{
    nvmlDevice_t d;
    assert_int_equal(nvmlDeviceGetHandleByIndex(0, &d), NVML_SUCCESS);
    return d;
}

static void calls_before_init_are_uninitialized(void **state)
{
    unsigned n;
    nvmlDevice_t d;
    assert_int_equal(nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlDeviceGetHandleByIndex(0, &d), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    char v[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
    assert_int_equal(nvmlSystemGetNVMLVersion(v, sizeof(v)), NVML_SUCCESS);
    assert_int_equal(nvmlSystemGetDriverVersion(v, sizeof(v)), NVML_ERROR_UNINITIALIZED);
    assert_string_equal(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");
    assert_string_equal(nvmlErrorString(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");
    assert_string_equal(nvmlErrorString((nvmlReturn_t)12345), "Unknown Error");
    assert_int_equal(nvmlInitWithFlags(0x100), NVML_ERROR_INVALID_ARGUMENT);
}

static void init_is_reference_counted(void **state)
{
    assert_int_equal(nvmlInit(), NVML_SUCCESS);
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    unsigned n;
    assert_int_equal(nvmlDeviceGetCount(&n), NVML_SUCCESS); /* still one reference */
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH), NVML_SUCCESS);
}

static void devices_match_what_cuda_reports(void **state)
{
    unsigned n;
    int cn;
    assert_int_equal(nvmlDeviceGetCount(&n), NVML_SUCCESS);
    CU_OK(cuDeviceGetCount(&cn));
    assert_int_equal(n, (unsigned)cn);
    assert_int_equal(n, 2);
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t d;
        assert_int_equal(nvmlDeviceGetHandleByIndex(i, &d), NVML_SUCCESS);
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], cname[96];
        assert_int_equal(nvmlDeviceGetName(d, name, sizeof(name)), NVML_SUCCESS);
        CU_OK(cuDeviceGetName(cname, sizeof(cname), (CUdevice)i));
        assert_string_equal(name, cname);
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        assert_int_equal(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)), NVML_SUCCESS);
        CUuuid cu;
        CU_OK(cuDeviceGetUuid(&cu, (CUdevice)i));
        char want[64];
        tf_sim_uuid_format((const uint8_t *)cu.bytes, want);
        assert_string_equal(uuid, want);
        nvmlDevice_t back;
        assert_int_equal(nvmlDeviceGetHandleByUUID(uuid, &back), NVML_SUCCESS);
        assert_ptr_equal(back, d);
        unsigned idx, minor;
        assert_int_equal(nvmlDeviceGetIndex(d, &idx), NVML_SUCCESS);
        assert_int_equal(nvmlDeviceGetMinorNumber(d, &minor), NVML_SUCCESS);
        assert_int_equal(idx, i);
        int major, min_, cmaj, cmin;
        assert_int_equal(nvmlDeviceGetCudaComputeCapability(d, &major, &min_), NVML_SUCCESS);
        CU_OK(cuDeviceGetAttribute(&cmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, (int)i));
        CU_OK(cuDeviceGetAttribute(&cmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, (int)i));
        assert_int_equal(major, cmaj);
        assert_int_equal(min_, cmin);
        nvmlPciInfo_t pci;
        assert_int_equal(nvmlDeviceGetPciInfo(d, &pci), NVML_SUCCESS);
        char cbus[32];
        CU_OK(cuDeviceGetPCIBusId(cbus, sizeof(cbus), (CUdevice)i));
        assert_int_equal(strcasecmp(pci.busId + 4, cbus), 0); /* 8- vs 4-digit domain */
        assert_int_equal(pci.pciDeviceId & 0xFFFF, 0x10DE);
        assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &back), NVML_SUCCESS);
        assert_ptr_equal(back, d);
        nvmlMemory_t m;
        size_t ctotal;
        assert_int_equal(nvmlDeviceGetMemoryInfo(d, &m), NVML_SUCCESS);
        CU_OK(cuDeviceTotalMem(&ctotal, (CUdevice)i));
        assert_int_equal(m.total, ctotal);
    }
    nvmlDevice_t d = dev0();
    char small[8];
    assert_int_equal(nvmlDeviceGetName(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(nvmlDeviceGetUUID(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(nvmlDeviceGetHandleByIndex(2, &d), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetHandleByUUID("GPU-nope", &d), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2("0000:77:00.0", &d), NVML_ERROR_NOT_FOUND);
    unsigned idx;
    assert_int_equal(nvmlDeviceGetIndex((nvmlDevice_t)&idx, &idx), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetIndex(NULL, &idx), NVML_ERROR_INVALID_ARGUMENT);
    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    assert_int_equal(nvmlSystemGetDriverVersion(ver, sizeof(ver)), NVML_SUCCESS);
    int cudav;
    assert_int_equal(nvmlSystemGetCudaDriverVersion_v2(&cudav), NVML_SUCCESS);
    assert_int_equal(cudav, 13000);
}

/* Processes on device 0, v3 layout; returns the count and fills P (capacity 8). */
static unsigned procs(nvmlProcessInfo_t *p)
{
    unsigned n = 8;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &n, p), NVML_SUCCESS);
    return n;
}

static unsigned long long used_by(const nvmlProcessInfo_t *p, unsigned n, int pid)
{
    for (unsigned i = 0; i < n; i++)
        if ((int)p[i].pid == pid)
            return p[i].usedGpuMemory;
    return 0;
}

static void memory_of_every_process_on_the_device_is_visible(void **state)
{
    nvmlDevice_t d = dev0();
    nvmlMemory_t m0, m1;
    assert_int_equal(nvmlDeviceGetMemoryInfo(d, &m0), NVML_SUCCESS);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 8 * MiB));
    nvmlProcessInfo_t pi[8];
    unsigned n = procs(pi);
    assert_int_equal(used_by(pi, n, getpid()), 8 * MiB);
    assert_int_equal(pi[0].gpuInstanceId, 0xFFFFFFFFu);
    /* A second process allocates 16 MiB: NVML and this process's cuMemGetInfo see it. */
    int out, in;
    const char *args[] = {"hold", "16777216", NULL};
    pid_t helper = simtest_spawn(&out, &in, args);
    char line[128];
    assert_true(simtest_read_line(out, line, sizeof(line)) > 0);
    assert_memory_equal(line, "ready", 5);
    assert_int_equal(nvmlDeviceGetMemoryInfo(d, &m1), NVML_SUCCESS);
    assert_int_equal(m1.used - m0.used, 24 * MiB);
    assert_int_equal(m1.free + m1.used, m1.total);
    size_t cfree, ctotal;
    CU_OK(cuMemGetInfo(&cfree, &ctotal));
    assert_int_equal(cfree, m1.free);
    n = procs(pi);
    assert_int_equal(n, 2);
    assert_int_equal(used_by(pi, n, helper), 16 * MiB);
    /* Count semantics: too small a buffer says how many, in every layout. */
    unsigned c = 1;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(d, &c, pi),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(c, 2);
    c = 0;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v2(d, &c, NULL),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(c, 2);
    /* The unversioned symbol has the legacy 16-byte layout (nvml.h maps the name to _v3, so
     * only programs built against old headers, or dlsym, reach it). */
    nvmlReturn_t (*legacy)(nvmlDevice_t, unsigned *, nvmlProcessInfo_v1_t *);
    *(void **)&legacy = dlsym(RTLD_DEFAULT, "nvmlDeviceGetComputeRunningProcesses");
    assert_non_null(legacy);
    nvmlProcessInfo_v1_t v1[4];
    c = 4;
    assert_int_equal(legacy(d, &c, v1), NVML_SUCCESS);
    assert_int_equal(c, 2);
    assert_int_equal(v1[0].usedGpuMemory + v1[1].usedGpuMemory, 24 * MiB);
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(d, NULL, pi),
                     NVML_ERROR_INVALID_ARGUMENT);
    /* Killed: its memory comes back and it leaves the list. */
    kill(helper, SIGKILL);
    simtest_wait(helper);
    close(out);
    close(in);
    n = procs(pi);
    assert_int_equal(n, 1);
    assert_int_equal(nvmlDeviceGetMemoryInfo(d, &m1), NVML_SUCCESS);
    assert_int_equal(m1.used - m0.used, 8 * MiB);
    nvmlMemory_v2_t m2 = {.version = 0};
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m2.version = nvmlMemory_v2;
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_SUCCESS);
    assert_int_equal(m2.used, m1.used);
    CU_OK(cuMemFree(p));
}

static void a_process_that_exits_normally_returns_its_memory_at_once(void **state)
{
    int out, in;
    const char *args[] = {"hold", "1048576", NULL};
    pid_t helper = simtest_spawn(&out, &in, args);
    char line[128];
    assert_true(simtest_read_line(out, line, sizeof(line)) > 0);
    nvmlProcessInfo_t pi[8];
    assert_int_equal(used_by(pi, procs(pi), helper), MiB);
    close(in); /* EOF: the helper returns from main */
    assert_int_equal(simtest_wait(helper), 0);
    close(out);
    assert_int_equal(used_by(pi, procs(pi), helper), 0);
}

static void utilisation_comes_from_shared_busy_time(void **state)
{
    nvmlDevice_t d;
    assert_int_equal(nvmlDeviceGetHandleByIndex(1, &d), NVML_SUCCESS); /* idle so far */
    nvmlUtilization_t u;
    assert_int_equal(nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 0);
    unsigned n = 4;
    nvmlProcessUtilizationSample_t s[4];
    assert_int_equal(nvmlDeviceGetProcessUtilization(d, s, &n, 0), NVML_ERROR_NOT_FOUND);
    assert_int_equal(n, 0);
    /* Kernels of this process ran 400 ms of the last second (written straight into the
     * device's shared region, as the simulated libcuda.so.1 does after each kernel). */
    struct tf_sim_config cfg;
    char err[256];
    assert_int_equal(tf_sim_config_load(&cfg, err, sizeof(err)), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s%s", cfg.shm_prefix, cfg.dev[1].uuid_str);
    struct tf_sim_shm *shm;
    int slot;
    assert_int_equal(tf_sim_shm_open(path, cfg.dev[1].uuid_str, "T4", 1, &shm, NULL, err, 256), 0);
    assert_int_equal(tf_sim_shm_attach(shm, &slot), 0);
    uint64_t now = tf_sim_now_ns();
    tf_sim_shm_exec_release(shm, slot, now - 700000000ull, now - 300000000ull);
    unsigned long long before_us = (now - 800000000ull) / 1000;
    assert_int_equal(nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS);
    assert_true(u.gpu >= 38 && u.gpu <= 41); /* 400 ms of a 1 s window, a few ms later */
    n = 0;
    assert_int_equal(nvmlDeviceGetProcessUtilization(d, NULL, &n, before_us),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 1);
    n = 4;
    assert_int_equal(nvmlDeviceGetProcessUtilization(d, s, &n, before_us), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].pid, (unsigned)getpid());
    assert_true(s[0].smUtil >= 48 && s[0].smUtil <= 51); /* 400 ms of the 800 ms since then */
    assert_true(s[0].timeStamp > before_us);
    /* Nothing ran since that sample. */
    assert_int_equal(nvmlDeviceGetProcessUtilization(d, s, &n, s[0].timeStamp),
                     NVML_ERROR_NOT_FOUND);
    unsigned temp, power, limit, clk, maxclk;
    assert_int_equal(nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
    assert_true(temp >= 30 && temp <= 70);
    assert_int_equal(nvmlDeviceGetTemperature(d, (nvmlTemperatureSensors_t)3, &temp),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetPowerUsage(d, &power), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetPowerManagementLimit(d, &limit), NVML_SUCCESS);
    assert_int_equal(limit, 70000); /* T4: 70 W */
    assert_true(power > limit * 15 / 100 && power <= limit);
    assert_int_equal(nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &clk), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMaxClockInfo(d, NVML_CLOCK_SM, &maxclk), NVML_SUCCESS);
    assert_true(clk > 0 && clk <= maxclk);
    assert_int_equal(nvmlDeviceGetClockInfo(d, (nvmlClockType_t)9, &clk),
                     NVML_ERROR_INVALID_ARGUMENT);
    tf_sim_shm_detach(shm, slot);
    tf_sim_shm_close(shm);
}

int main(void)
{
    simtest_env("L4:1Gi,T4");
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calls_before_init_are_uninitialized),
        cmocka_unit_test(init_is_reference_counted),
        cmocka_unit_test(devices_match_what_cuda_reports),
        cmocka_unit_test(memory_of_every_process_on_the_device_is_visible),
        cmocka_unit_test(a_process_that_exits_normally_returns_its_memory_at_once),
        cmocka_unit_test(utilisation_comes_from_shared_busy_time),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nvmlShutdown();
    cuCtxDestroy(ctx);
    simtest_cleanup();
    return rc;
}
