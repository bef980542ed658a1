/* SPDX-License-Identifier: Apache-2.0
 *
 * Local mode on the simulated GPU (src/sim): the hypervisor discovers the simulated devices
 * through the sim's libnvidia-ml.so.1, `tfctl run` executes real PTX kernels (gpu_burn, the
 * timer.cu spin kernel) on the sim's libcuda.so.1, and the metric rows carry the utilisation
 * the sim measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvtest.h"

static struct hvt T;

static const char *sim_devices = "A100-80GB,L4";

static int setup(void **state)
{
    hvt_init(&T, "");
    char nvml[600], shm[400];
    snprintf(nvml, sizeof(nvml), "%s/libnvidia-ml.so.1", getenv("TF_SIM_LIBDIR"));
    snprintf(shm, sizeof(shm), "%s/sim-", T.dir);
    setenv("TF_NVML_LIBRARY", nvml, 1);
    setenv("LD_LIBRARY_PATH", getenv("TF_SIM_LIBDIR"), 1);
    setenv("TF_SIM_DEVICES", sim_devices, 1);
    setenv("TF_SIM_SHM_PREFIX", shm, 1);
    hvt_start(&T, NULL);
    return 0;
}

/* One GPU: the simulated driver does not filter devices by CUDA_VISIBLE_DEVICES (the real one
 * does), so a run must not depend on which device the hypervisor picked. */
static int setup_l4(void **state)
{
    sim_devices = "L4";
    return setup(state);
}

static int teardown(void **state)
{
    hvt_cleanup(&T);
    return 0;
}

static void the_simulated_gpus_are_discovered_with_their_models(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/devices", NULL, NULL, &o), 200);
    assert_int_equal(json_object_array_length(o), 2);
    json_object *a = json_object_array_get_idx(o, 0), *l = json_object_array_get_idx(o, 1);
    assert_string_equal(json_object_get_string(json_object_object_get(a, "model")), "A100-80GB");
    assert_string_equal(json_object_get_string(json_object_object_get(a, "tflops")), "312");
    assert_int_equal(json_object_get_int64(json_object_object_get(a, "vramBytes")), INT64_C(80)
                                                                                        << 30);
    assert_string_equal(json_object_get_string(json_object_object_get(l, "model")), "L4");
    assert_int_equal(strncmp(json_object_get_string(json_object_object_get(a, "uuid")), "GPU-", 4),
                     0);
    json_object_put(o);
}

static bool busy_rows(struct hvt *t, void *arg)
{
    char *out = NULL;
    const char *q[] = {"query", "-o", "csv",
                       "SELECT max(compute_percentage) FROM tf_gpu_usage WHERE greptime_timestamp"
                       " >= now() - '1 minute'::INTERVAL",
                       NULL};
    bool ok = hvt_tfctl(t, &out, q) == 0 && out && strchr(out, '\n') &&
              atof(strchr(out, '\n') + 1) > 20.0;
    free(out);
    return ok;
}

static void a_shared_run_executes_real_kernels_and_its_utilisation_is_recorded(void **state)
{
    char *out = NULL;
    const char *argv[] = {
        "run", "--isolation", "shared", "--", getenv("TF_GPU_BURN"), getenv("TF_TIMER_PTX"), "1.5",
        "512", "1000",        "burn",   NULL};
    assert_int_equal(hvt_tfctl(&T, &out, argv), 0);
    assert_non_null(strstr(out, "burn vram_total_mib=24576 vram_alloc_mib=512"));
    const char *k = strstr(out, "burn kernels=");
    assert_non_null(k);
    const char *share = strstr(k, "share_pct=");
    assert_non_null(share);
    assert_true(atof(share + 10) > 50.0); /* alone on its GPU: most of the time busy */
    free(out);
    /* The sim's NVML utilisation reached the metric rows (sampled every 200 ms here). */
    assert_true(hvt_wait(busy_rows, &T, NULL, 5000));
    assert_int_equal(hvt_count_workloads(&T), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_simulated_gpus_are_discovered_with_their_models, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_shared_run_executes_real_kernels_and_its_utilisation_is_recorded, setup_l4, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
