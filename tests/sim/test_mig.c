/* SPDX-License-Identifier: Apache-2.0
 *
 * MIG on the simulated GPU through NVML, as a MIG manager (the hypervisor) drives it: MIG
 * mode, GPU instance profiles from the model's partition profile, creating and destroying GPU
 * and compute instances (placements, capacity, the order NVML requires), MIG device handles
 * with their own UUID and memory, a table shared by every process, and a GPU without MIG.
 */
#include "simtest.h"

#include "common/err.h"
#include "sim/migtab.h"
#include "sim/nvml_abi.h"

#include <cuda.h>

#define MiB (1ull << 20)

static nvmlDevice_t dev(unsigned i)
{
    nvmlDevice_t d;
    assert_int_equal(nvmlDeviceGetHandleByIndex(i, &d), NVML_SUCCESS);
    return d;
}

static void enable(nvmlDevice_t d)
{
    nvmlReturn_t act;
    assert_int_equal(nvmlDeviceSetMigMode(d, NVML_DEVICE_MIG_ENABLE, &act), NVML_SUCCESS);
    assert_int_equal(act, NVML_SUCCESS);
}

static void a_gpu_without_mig_says_not_supported(void **state)
{
    nvmlDevice_t l4 = dev(1);
    unsigned cur, pend;
    nvmlReturn_t act;
    assert_int_equal(nvmlDeviceGetMigMode(l4, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceSetMigMode(l4, NVML_DEVICE_MIG_ENABLE, &act),
                     NVML_ERROR_NOT_SUPPORTED);
    nvmlGpuInstanceProfileInfo_t info;
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(l4, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &info),
        NVML_ERROR_NOT_SUPPORTED);
}

static void profiles_follow_the_models_templates(void **state)
{
    nvmlDevice_t a = dev(0); /* A100-80GB: 7 compute, 8 memory slices, 108 SMs */
    nvmlGpuInstanceProfileInfo_t info;
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &info),
        NVML_SUCCESS);
    assert_int_equal(info.id, NVML_GPU_INSTANCE_PROFILE_3_SLICE);
    assert_int_equal(info.sliceCount, 3);
    assert_int_equal(info.instanceCount, 2);
    assert_int_equal(info.memorySizeMB, 40960); /* 3g.40gb: 4 of 8 memory slices */
    assert_int_equal(info.multiprocessorCount, 108 * 3 / 7);
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(a, NVML_GPU_INSTANCE_PROFILE_7_SLICE, &info),
        NVML_SUCCESS);
    assert_int_equal(info.memorySizeMB, 81920);
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(a, NVML_GPU_INSTANCE_PROFILE_6_SLICE, &info),
        NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfo(a, 99, &info),
                     NVML_ERROR_INVALID_ARGUMENT);
}

static void instances_need_mig_mode_and_fit_the_slices(void **state)
{
    nvmlDevice_t a = dev(0);
    nvmlGpuInstance_t gi[8];
    unsigned cur, pend, n;
    assert_int_equal(nvmlDeviceGetMigMode(a, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &gi[0]),
                     NVML_ERROR_NOT_SUPPORTED);
    enable(a);
    assert_int_equal(nvmlDeviceGetMigMode(a, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(pend, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(
        nvmlDeviceGetGpuInstanceRemainingCapacity(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &n),
        NVML_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &gi[0]),
                     NVML_SUCCESS);
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &gi[1]),
                     NVML_SUCCESS);
    nvmlGpuInstanceInfo_t gii;
    assert_int_equal(nvmlGpuInstanceGetInfo(gi[1], &gii), NVML_SUCCESS);
    assert_ptr_equal(gii.device, a);
    assert_int_equal(gii.profileId, NVML_GPU_INSTANCE_PROFILE_3_SLICE);
    assert_int_equal(gii.placement.start, 4);
    assert_int_equal(gii.placement.size, 4);
    /* 6 of 7 compute slices and every memory slice are taken: not even a 1g fits. */
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &gi[2]),
                     NVML_ERROR_INSUFFICIENT_RESOURCES);
    assert_int_equal(nvmlDeviceGetGpuInstances(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, gi + 4, &n),
                     NVML_SUCCESS);
    assert_int_equal(n, 2);
    /* Disabling MIG with instances left is refused. */
    nvmlReturn_t act;
    assert_int_equal(nvmlDeviceSetMigMode(a, NVML_DEVICE_MIG_DISABLE, &act), NVML_ERROR_IN_USE);
    assert_int_equal(nvmlGpuInstanceDestroy(gi[0]), NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceDestroy(gi[1]), NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceGetInfo(gi[1], &gii), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceSetMigMode(a, NVML_DEVICE_MIG_DISABLE, &act), NVML_SUCCESS);
}

static void a_mig_device_has_its_own_uuid_and_memory(void **state)
{
    nvmlDevice_t a = dev(0);
    enable(a);
    nvmlGpuInstance_t gi;
    nvmlComputeInstance_t ci;
    nvmlDevice_t mig;
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_2_SLICE, &gi),
                     NVML_SUCCESS);
    /* No compute instance yet: no MIG device. */
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(a, 0, &mig), NVML_ERROR_NOT_FOUND);
    nvmlComputeInstanceProfileInfo_t cip;
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                         gi, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
                         NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cip),
                     NVML_SUCCESS);
    assert_int_equal(cip.sliceCount, 2);
    assert_int_equal(
        nvmlGpuInstanceCreateComputeInstance(gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &ci),
        NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlGpuInstanceCreateComputeInstance(gi, cip.id, &ci), NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_ERROR_IN_USE);
    unsigned count, is_mig, id;
    assert_int_equal(nvmlDeviceGetMaxMigDeviceCount(a, &count), NVML_SUCCESS);
    assert_int_equal(count, 7);
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(a, 0, &mig), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceIsMigDeviceHandle(mig, &is_mig), NVML_SUCCESS);
    assert_int_equal(is_mig, 1);
    assert_int_equal(nvmlDeviceIsMigDeviceHandle(a, &is_mig), NVML_SUCCESS);
    assert_int_equal(is_mig, 0);
    nvmlGpuInstanceInfo_t gii;
    assert_int_equal(nvmlGpuInstanceGetInfo(gi, &gii), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetGpuInstanceId(mig, &id), NVML_SUCCESS);
    assert_int_equal(id, gii.id);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], parent[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetUUID(a, parent, sizeof(parent)), NVML_SUCCESS);
    assert_int_equal(strncmp(uuid, "MIG-", 4), 0);
    assert_int_equal(strlen(uuid), 40);
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(mig, &m), NVML_SUCCESS);
    assert_int_equal(m.total, 20480 * MiB); /* 2g.20gb */
    nvmlDevice_t back;
    assert_int_equal(nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &back), NVML_SUCCESS);
    assert_ptr_equal(back, a);
    /* The table lives next to the device's region, where every process reads it. */
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "test -s %s/dev-%s.mig", simtest_dir, parent);
    assert_int_equal(system(cmd), 0);
    /* Teardown in NVML's order: compute instance, then GPU instance. */
    assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
    /* A new instance in the same place is a new MIG device. */
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_2_SLICE, &gi),
                     NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceCreateComputeInstance(gi, cip.id, &ci), NVML_SUCCESS);
    char uuid2[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(a, 0, &mig), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetUUID(mig, uuid2, sizeof(uuid2)), NVML_SUCCESS);
    assert_string_not_equal(uuid, uuid2);
    assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
}

/* Runs sim_helper ARGS with CUDA_VISIBLE_DEVICES=VISIBLE; its first output line into LINE. */
static int helper(const char *visible, const char *arg, const char *arg2, char *line, size_t cap)
{
    setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    const char *args[] = {arg, arg2, NULL};
    int out;
    pid_t pid = simtest_spawn(&out, NULL, args);
    unsetenv("CUDA_VISIBLE_DEVICES");
    line[0] = 0;
    simtest_read_line(out, line, cap);
    char rest[256];
    while (simtest_read_line(out, rest, sizeof(rest)) >= 0)
        ; /* the rest of its output: it must not die writing it */
    close(out);
    return simtest_wait(pid);
}

static void cuda_sees_a_mig_device_with_its_memory_and_sm_share(void **state)
{
    nvmlDevice_t a = dev(0);
    enable(a);
    nvmlGpuInstance_t gi;
    nvmlComputeInstance_t ci;
    nvmlDevice_t mig;
    assert_int_equal(nvmlDeviceCreateGpuInstance(a, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &gi),
                     NVML_SUCCESS);
    assert_int_equal(
        nvmlGpuInstanceCreateComputeInstance(gi, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, &ci),
        NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(a, 0, &mig), NVML_SUCCESS);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], line[256], want[64];
    assert_int_equal(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
    /* The MIG device alone, as CUDA device 0: 40 GiB and 3/7 of the A100's 108 SMs. */
    assert_int_equal(helper(uuid, "info", NULL, line, sizeof(line)), 0);
    unsigned long long free_b, total;
    int sms;
    assert_int_equal(sscanf(line, "free %llu total %llu sms %d", &free_b, &total, &sms), 3);
    assert_int_equal(total, 40ull << 30);
    assert_int_equal(sms, 108 * 3 / 7);
    assert_int_equal(helper(uuid, "devices", NULL, line, sizeof(line)), 0);
    assert_string_equal(line, "count 1");
    /* Its memory is its own: more than 40 GiB cannot be held on it. */
    assert_int_equal(helper(uuid, "hold", "45097156608", line, sizeof(line)), 1); /* 42 GiB */
    assert_non_null(strstr(line, "CUDA_ERROR_OUT_OF_MEMORY"));
    /* A prefix names it too; a MIG device that does not exist shows nothing. */
    snprintf(want, sizeof(want), "%.16s", uuid);
    assert_int_equal(helper(want, "info", NULL, line, sizeof(line)), 0);
    assert_int_equal(
        helper("MIG-00000000-0000-4000-8000-000000000000", "init", NULL, line, sizeof(line)), 0);
    assert_int_equal(atoi(line), CUDA_ERROR_NO_DEVICE);
    assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
    /* Gone with its instance. */
    assert_int_equal(helper(uuid, "init", NULL, line, sizeof(line)), 0);
    assert_int_equal(atoi(line), CUDA_ERROR_NO_DEVICE);
}

static void a_corrupt_table_reads_as_mig_off(void **state)
{
    struct tf_partition_profile p;
    assert_int_equal(tf_partition_builtin(tf_gpu_model_find("A100-80GB"), &p), 0);
    struct tf_sim_mig_table t;
    tf_sim_mig_init(&t);
    t.mode = NVML_DEVICE_MIG_ENABLE;
    uint32_t id;
    assert_int_equal(tf_sim_mig_create(&t, &p, 4 /* 7g.80gb */, &id), 0);
    assert_int_equal(tf_sim_mig_check(&t, &p), 0);
    assert_int_equal(tf_sim_mig_capacity(&t, &p, 0), 0);
    t.inst[0].start = 1; /* misaligned */
    assert_int_equal(tf_sim_mig_check(&t, &p), TF_ESTATE);
    t.inst[0].start = 0;
    t.inst[1] = t.inst[0]; /* overlapping, wrong id */
    assert_int_equal(tf_sim_mig_check(&t, &p), TF_ESTATE);
}

int main(void)
{
    simtest_env("A100-80GB,L4");
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_gpu_without_mig_says_not_supported),
        cmocka_unit_test(profiles_follow_the_models_templates),
        cmocka_unit_test(instances_need_mig_mode_and_fit_the_slices),
        cmocka_unit_test(a_mig_device_has_its_own_uuid_and_memory),
        cmocka_unit_test(cuda_sees_a_mig_device_with_its_memory_and_sm_share),
        cmocka_unit_test(a_corrupt_table_reads_as_mig_off),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nvmlShutdown();
    simtest_cleanup();
    return rc;
}
