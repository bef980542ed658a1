/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA_VISIBLE_DEVICES on the simulated GPU: the parser's rules (indices read like strtoul,
 * UUIDs and unique prefixes, renumbering in list order, the first invalid entry ending the
 * list, a repeated device hiding all), and the driver applying them at cuInit (names, UUIDs,
 * PCI bus ids and memory accounting stay the physical device's) while NVML ignores the
 * variable, as on hardware.
 */
#include "simtest.h"

#include <cuda.h>

#include "sim/nvml_abi.h"
#include "sim/simcfg.h"
#include "sim/visible.h"

/* u0 and u1 share the prefix "GPU-8932"; u2 and u3 "GPU-1" */
static const char *const uuids[] = {
    "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
    "GPU-8932aaaa-0000-4000-8000-000000000001",
    "GPU-1234abcd-1111-4111-8111-111111111111",
    "GPU-1fff0000-2222-4222-8222-222222222222",
};

/* Checks that SPEC over the first NDEV devices of uuids[] shows exactly the N physical
 * indices that follow, in that order. */
static struct tf_sim_visible expect_n(const char *spec, int ndev, int n, ...)
{
    struct tf_sim_visible v;
    tf_sim_visible_parse(spec, uuids, ndev, &v);
    va_list ap;
    va_start(ap, n);
    int want[TF_SIM_MAX_DEVICES];
    for (int i = 0; i < n; i++)
        want[i] = va_arg(ap, int);
    va_end(ap);
    if (v.n != n)
        fail_msg("CUDA_VISIBLE_DEVICES=\"%s\": %d devices visible, want %d (%s)", spec, v.n, n,
                 v.note);
    for (int i = 0; i < n; i++)
        if (v.phys[i] != want[i])
            fail_msg("CUDA_VISIBLE_DEVICES=\"%s\": ordinal %d is device %d, want %d", spec, i,
                     v.phys[i], want[i]);
    return v;
}

static void unset_shows_every_device_in_machine_order(void **state)
{
    struct tf_sim_visible v = expect_n(NULL, 4, 4, 0, 1, 2, 3);
    assert_string_equal(v.note, "");
    expect_n(NULL, 0, 0);
}

static void indices_renumber_devices_in_list_order(void **state)
{
    struct tf_sim_visible v = expect_n("2,0", 4, 2, 2, 0);
    assert_string_equal(v.note, "");
    expect_n("3,2,1,0", 4, 4, 3, 2, 1, 0);
    expect_n(" 1,\t3", 4, 2, 1, 3); /* leading white space is skipped */
    expect_n("+1", 4, 1, 1);
    expect_n("1gpu,2ampere", 4, 2, 1, 2); /* strtoul: what follows the digits is ignored */
    expect_n("0x3", 4, 1, 0);
    expect_n("-0,1", 4, 2, 0, 1);
    expect_n("1,", 4, 1, 1); /* the empty last entry is invalid, after device 1 */
}

static void the_first_invalid_entry_ends_the_list(void **state)
{
    struct tf_sim_visible v = expect_n("0,2,-1,1", 4, 2, 0, 2);
    assert_non_null(strstr(v.note, "entry 3 (\"-1\") is not the index of a device"));
    expect_n("1,9,0", 4, 1, 1); /* index past the last device */
    expect_n("0,,1", 4, 1, 0);
    expect_n("0,abc,1", 4, 1, 0);
    expect_n("0,GPU-8932f937", 4, 1, 0); /* a list of indices takes no UUIDs */
    expect_n("99999999999999999999999999", 4, 0);
    expect_n("4", 4, 0);
    expect_n("-1", 4, 0);
    v = expect_n("", 4, 0); /* empty: no device at all */
    assert_non_null(strstr(v.note, "entry 1 (\"\")"));
    expect_n("   ", 4, 0);
    expect_n("0", 0, 0);
}

static void uuids_and_unique_prefixes_name_devices(void **state)
{
    expect_n(uuids[2], 4, 1, 2);
    expect_n("GPU-8932f", 4, 1, 0);
    expect_n("GPU-1f,GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,GPU-12", 4, 3, 3, 0, 2);
    expect_n("  GPU-1f, GPU-12", 4, 2, 3, 2);
    struct tf_sim_visible v = expect_n("GPU-8932", 4, 0); /* ambiguous */
    assert_non_null(strstr(v.note, "names no single device"));
    expect_n("GPU-12,GPU-1", 4, 1, 2); /* the second is ambiguous */
    expect_n("GPU-12,1", 4, 1, 2);     /* a list of UUIDs takes no indices */
    expect_n("GPU-zzzz", 4, 0);
    expect_n("GPU-8932F937", 4, 0); /* the UUID's own spelling: lower-case hex */
    expect_n("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6-x", 4, 0);
    expect_n("GPU-", 4, 0); /* matches every device */
    expect_n("GPU-", 1, 1, 0);
}

static void a_repeated_device_hides_every_device(void **state)
{
    struct tf_sim_visible v = expect_n("0,1,0", 4, 0);
    assert_non_null(strstr(v.note, "entry 3 (\"0\") repeats a device"));
    expect_n("1,+1", 4, 0);
    expect_n("2,2x", 4, 0);
    expect_n("0,1,1,-1", 4, 0);
    expect_n("GPU-12,GPU-1234abcd", 4, 0); /* one device by two prefixes */
    expect_n("0,5,0", 4, 1, 0);            /* the list ended before the repeat */
}

static void a_mig_entry_names_one_mig_device_on_its_gpu(void **state)
{
    /* No MIG device of that name (and the old "MIG-GPU-.../gi/ci" form names none). */
    struct tf_sim_visible v = expect_n("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", 4, 0);
    assert_non_null(strstr(v.note, "MIG"));
    static const char *const migs[] = {"MIG-11111111-2222-4333-8444-555555555555",
                                       "MIG-11112222-2222-4333-8444-555555555555"};
    static const int parent[] = {2, 3};
    tf_sim_visible_parse_mig("MIG-11112222", uuids, 4, migs, parent, 2, &v);
    assert_int_equal(v.n, 1);
    assert_int_equal(v.phys[0], 3);
    assert_int_equal(v.mig[0], 1);
    /* One MIG device per process: the rest of the list is ignored, with a note. */
    tf_sim_visible_parse_mig(" MIG-11111111-2222-4333-8444-555555555555,MIG-11112222", uuids, 4,
                             migs, parent, 2, &v);
    assert_int_equal(v.n, 1);
    assert_int_equal(v.mig[0], 0);
    assert_non_null(strstr(v.note, "one at most"));
    /* An ambiguous prefix names none. */
    tf_sim_visible_parse_mig("MIG-1111", uuids, 4, migs, parent, 2, &v);
    assert_int_equal(v.n, 0);
    /* Whole GPUs keep mig -1. */
    tf_sim_visible_parse_mig("1", uuids, 4, migs, parent, 2, &v);
    assert_int_equal(v.n, 1);
    assert_int_equal(v.mig[0], -1);
}

static void hostile_values_stay_bounded(void **state)
{
    enum { N = 200000 };
    char *s = malloc(N + 1);
    for (int i = 0; i < N; i++)
        s[i] = i % 2 ? ',' : '3';
    s[N] = 0;
    struct tf_sim_visible v = expect_n(s, 4, 0); /* "3,3,...": a repeat at once */
    for (int i = 0; i < N; i++)
        s[i] = (char)(1 + i % 255);
    s[N] = 0;
    tf_sim_visible_parse(s, uuids, 4, &v);
    assert_true(v.n >= 0 && v.n <= 4);
    assert_true(strlen(v.note) < sizeof(v.note));
    for (const char *c = v.note; *c; c++)
        assert_true(*c >= 0x20 && *c < 0x7f); /* the note is printable */
    free(s);
}

/* ---- the driver and NVML ---- */

static const char *machine = "L4,T4,A100-40GB";
static struct tf_sim_config cfg;

/* Output of "sim_helper devices" under CUDA_VISIBLE_DEVICES=SPEC (NULL: unset). */
static char *devices_with(const char *spec)
{
    if (spec)
        setenv("CUDA_VISIBLE_DEVICES", spec, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    int out;
    const char *args[] = {"devices", NULL};
    pid_t pid = simtest_spawn(&out, NULL, args);
    static char buf[2048];
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof(buf) && (r = read(out, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(out);
    simtest_wait(pid);
    unsetenv("CUDA_VISIBLE_DEVICES");
    return buf;
}

/* The line sim_helper prints for CUDA ordinal ORD being machine device PHYS. */
static const char *dev_line(int ord, int phys)
{
    static char line[256];
    char name[64];
    snprintf(name, sizeof(name), "%s", cfg.dev[phys].model->nvml_name);
    for (char *c = name; *c; c++)
        *c = *c == ' ' ? '_' : *c;
    snprintf(line, sizeof(line), "dev %d %s %s 0000:%02x:00.0\n", ord, name, cfg.dev[phys].uuid_str,
             0x10 + phys);
    return line;
}

static void the_driver_renumbers_devices_and_keeps_their_identity(void **state)
{
    char want[1024];
    char *got = devices_with("2,0");
    snprintf(want, sizeof(want), "count 2\n%s", dev_line(0, 2));
    strcat(want, dev_line(1, 0));
    assert_string_equal(got, want);

    char prefix[16];
    snprintf(prefix, sizeof(prefix), "%.12s", cfg.dev[1].uuid_str);
    got = devices_with(prefix);
    snprintf(want, sizeof(want), "count 1\n%s", dev_line(0, 1));
    assert_string_equal(got, want);

    got = devices_with(NULL);
    snprintf(want, sizeof(want), "count 3\n%s", dev_line(0, 0));
    strcat(want, dev_line(1, 1));
    strcat(want, dev_line(2, 2));
    assert_string_equal(got, want);

    assert_string_equal(devices_with(""), "error cuInit CUDA_ERROR_NO_DEVICE\n");
    assert_string_equal(devices_with("1,1"), "error cuInit CUDA_ERROR_NO_DEVICE\n");
    assert_string_equal(devices_with("-1,0"), "error cuInit CUDA_ERROR_NO_DEVICE\n");
}

static void nvml_ignores_it_and_sees_the_memory_of_the_visible_device(void **state)
{
    /* This process: CUDA sees only machine device 1 (the T4). */
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    CU_OK(cuInit(0));
    int n;
    CU_OK(cuDeviceGetCount(&n));
    assert_int_equal(n, 1);
    CUdevice d;
    CU_OK(cuDeviceGetByPCIBusId(&d, "0000:11:00.0"));
    assert_int_equal(d, 0);
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetByPCIBusId(&d, "0000:10:00.0"));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 1));
    int group;
    CU_OK(cuDeviceGetAttribute(&group, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, 0));
    assert_int_equal(group, 1);

    assert_int_equal(nvmlInit(), NVML_SUCCESS);
    unsigned count;
    assert_int_equal(nvmlDeviceGetCount(&count), NVML_SUCCESS);
    assert_int_equal(count, 3);
    nvmlDevice_t t4;
    assert_int_equal(nvmlDeviceGetHandleByIndex(1, &t4), NVML_SUCCESS);
    char u[96];
    assert_int_equal(nvmlDeviceGetUUID(t4, u, sizeof(u)), NVML_SUCCESS);
    assert_string_equal(u, cfg.dev[1].uuid_str);
    nvmlMemory_t before, after;
    assert_int_equal(nvmlDeviceGetMemoryInfo(t4, &before), NVML_SUCCESS);

    /* Memory allocated on CUDA ordinal 0 is charged to machine device 1. */
    CUcontext ctx;
    CUdeviceptr p;
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    CU_OK(cuMemAlloc(&p, 64u << 20));
    assert_int_equal(nvmlDeviceGetMemoryInfo(t4, &after), NVML_SUCCESS);
    assert_true(after.used >= before.used + (64u << 20));
    nvmlDevice_t l4;
    assert_int_equal(nvmlDeviceGetHandleByIndex(0, &l4), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMemoryInfo(l4, &after), NVML_SUCCESS);
    assert_int_equal(after.used, 0);
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxDestroy(ctx));
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

int main(void)
{
    simtest_env(machine);
    char err[256];
    if (tf_sim_config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "config: %s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unset_shows_every_device_in_machine_order),
        cmocka_unit_test(indices_renumber_devices_in_list_order),
        cmocka_unit_test(the_first_invalid_entry_ends_the_list),
        cmocka_unit_test(uuids_and_unique_prefixes_name_devices),
        cmocka_unit_test(a_repeated_device_hides_every_device),
        cmocka_unit_test(a_mig_entry_names_one_mig_device_on_its_gpu),
        cmocka_unit_test(hostile_values_stay_bounded),
        cmocka_unit_test(the_driver_renumbers_devices_and_keeps_their_identity),
        cmocka_unit_test(nvml_ignores_it_and_sees_the_memory_of_the_visible_device),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    simtest_cleanup();
    return rc;
}
