/* SPDX-License-Identifier: Apache-2.0
 *
 * Configuration of the simulated GPUs: TF_SIM_DEVICES lists, config files, defaults and
 * UUIDs, as users write them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "sim/simcfg.h"

#define GiB (INT64_C(1) << 30)

static struct tf_sim_config parse_ok(const char *spec)
{
    struct tf_sim_config cfg;
    char err[256] = "";
    tf_sim_config_default(&cfg);
    int rc = tf_sim_config_parse_devices(&cfg, spec, "TF_SIM_DEVICES", err, sizeof(err));
    if (rc)
        fail_msg("%s: %s", spec, err);
    return cfg;
}

static void parse_err(const char *spec, const char *want_in_msg)
{
    struct tf_sim_config cfg;
    char err[256] = "";
    tf_sim_config_default(&cfg);
    int rc = tf_sim_config_parse_devices(&cfg, spec, "TF_SIM_DEVICES", err, sizeof(err));
    if (rc == 0)
        fail_msg("\"%s\" parsed, want an error mentioning \"%s\"", spec, want_in_msg);
    if (!strstr(err, want_in_msg))
        fail_msg("\"%s\": message \"%s\" does not mention \"%s\"", spec, err, want_in_msg);
    assert_int_equal(cfg.ndev, 1); /* the config is untouched on error */
}

static void unset_environment_gives_one_a100_80gb(void **state)
{
    struct tf_sim_config cfg;
    tf_sim_config_default(&cfg);
    assert_int_equal(cfg.ndev, 1);
    assert_string_equal(cfg.dev[0].model->name, "A100-80GB");
    assert_int_equal(cfg.dev[0].memory, 80 * GiB);
    assert_int_equal(cfg.dev[0].sm_count, 108);
    assert_int_equal(cfg.dev[0].hw->cc_major, 8);
    assert_int_equal(cfg.dev[0].hw->cc_minor, 0);
    assert_string_equal(cfg.seed, "tf-sim");
    assert_string_equal(cfg.shm_prefix, "/dev/shm/tf-sim-");
}

static void user_lists_models_with_memory_and_sm_counts(void **state)
{
    struct tf_sim_config cfg = parse_ok("H100:80Gi:132, L4:24Gi:58");
    assert_int_equal(cfg.ndev, 2);
    assert_string_equal(cfg.dev[0].model->name, "H100");
    assert_int_equal(cfg.dev[0].memory, 80 * GiB);
    assert_int_equal(cfg.dev[0].sm_count, 132);
    assert_int_equal(cfg.dev[0].hw->cc_major, 9);
    assert_string_equal(cfg.dev[1].model->name, "L4");
    assert_int_equal(cfg.dev[1].memory, 24 * GiB);
    assert_int_equal(cfg.dev[1].sm_count, 58);
    assert_int_equal(cfg.dev[1].hw->cc_major * 10 + cfg.dev[1].hw->cc_minor, 89);
}

static void omitted_fields_default_from_the_model_table(void **state)
{
    struct tf_sim_config cfg = parse_ok("a100,L4::40,h200:1.5Gi");
    assert_int_equal(cfg.ndev, 3);
    assert_string_equal(cfg.dev[0].model->name, "A100-40GB"); /* family -> first variant */
    assert_int_equal(cfg.dev[0].memory, 40 * GiB);
    assert_int_equal(cfg.dev[1].memory, 24 * GiB);
    assert_int_equal(cfg.dev[1].sm_count, 40);
    assert_int_equal(cfg.dev[2].memory, 3 * GiB / 2);
    assert_int_equal(cfg.dev[2].sm_count, 132);
}

static void none_or_empty_means_no_device(void **state)
{
    assert_int_equal(parse_ok("").ndev, 0);
    assert_int_equal(parse_ok("none").ndev, 0);
    assert_int_equal(parse_ok(" NONE ").ndev, 0);
}

static void bad_specs_are_rejected_naming_the_value(void **state)
{
    parse_err("X100", "unknown GPU model \"X100\"");
    parse_err("H100,Z9", "device 1: unknown GPU model \"Z9\"");
    parse_err("MI300X", "not a CUDA device");
    parse_err("H100:80GB", "80GB");
    parse_err("H100:0", "out of range");
    parse_err("H100:80Gi:0", "SM count \"0\" out of range");
    parse_err("H100:80Gi:lots", "SM count \"lots\" is not an integer");
    parse_err("H100:80Gi:132:9", "too many fields");
    parse_err(":80Gi", "missing GPU model");
    parse_err(",", "names no device");
    parse_err("L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4,L4", "more than 16 devices");
}

static void uuids_are_stable_formatted_and_distinct(void **state)
{
    struct tf_sim_config a = parse_ok("H100,H100"), b = parse_ok("H100,H100");
    assert_string_equal(a.dev[0].uuid_str, b.dev[0].uuid_str);
    assert_string_not_equal(a.dev[0].uuid_str, a.dev[1].uuid_str);
    const char *u = a.dev[0].uuid_str;
    assert_int_equal(strlen(u), 40);
    assert_memory_equal(u, "GPU-", 4);
    assert_int_equal(u[12], '-');
    assert_int_equal(u[17], '-');
    assert_int_equal(u[22], '-');
    assert_int_equal(u[27], '-');
    uint8_t bytes[16];
    assert_int_equal(tf_sim_uuid_parse(u, bytes), 0);
    assert_memory_equal(bytes, a.dev[0].uuid, 16);
    /* Another seed (node) gives other UUIDs for the same devices. */
    struct tf_sim_config c;
    tf_sim_config_default(&c);
    strcpy(c.seed, "node-b");
    char err[128];
    assert_int_equal(tf_sim_config_parse_devices(&c, "H100,H100", "t", err, sizeof(err)), 0);
    assert_string_not_equal(c.dev[0].uuid_str, a.dev[0].uuid_str);
    assert_int_equal(tf_sim_uuid_parse("GPU-123", bytes), TF_EPARSE);
    assert_int_equal(tf_sim_uuid_parse("GPU-zzzzzzzz-0000-0000-0000-000000000000", bytes),
                     TF_EPARSE);
}

static const char *file_text =
    "# two simulated GPUs on node-a\n"
    "seed = node-a\n"
    "shm_prefix = /tmp/tf-sim-x-\n"
    "\n"
    "device = H100:80Gi:132\n"
    "device = L4 uuid=GPU-8A1B2C3D-0000-4000-8000-000000000001  # fixed\n";

static void config_file_sets_seed_prefix_devices_and_uuids(void **state)
{
    struct tf_sim_config cfg;
    char err[256] = "";
    tf_sim_config_default(&cfg);
    int rc =
        tf_sim_config_parse_file(&cfg, file_text, strlen(file_text), "sim.conf", err, sizeof(err));
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(cfg.ndev, 2);
    assert_string_equal(cfg.seed, "node-a");
    assert_string_equal(cfg.shm_prefix, "/tmp/tf-sim-x-");
    assert_string_equal(cfg.dev[0].model->name, "H100");
    assert_string_equal(cfg.dev[1].uuid_str, "GPU-8a1b2c3d-0000-4000-8000-000000000001");
    assert_true(cfg.dev[1].uuid_given);
}

static void file_errors_name_file_line_and_key(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"seed = a\ncolour = blue\n", "sim.conf:2: unknown key \"colour\""},
        {"device\n", "sim.conf:1: \"device\": expected key = value"},
        {"device = H100 uuid=nope\n", "sim.conf:1: uuid \"nope\""},
        {"device = H100 fast=yes\n", "unknown device option \"fast=yes\""},
        {"device = Q1\n", "sim.conf:1: unknown GPU model \"Q1\""},
        {"device = L4 uuid=GPU-8a1b2c3d-0000-4000-8000-000000000001\n"
         "device = L4 uuid=GPU-8a1b2c3d-0000-4000-8000-000000000001\n",
         "devices 0 and 1 have the same uuid"},
        {"seed =\n", "seed must be"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tf_sim_config cfg;
        char err[256] = "";
        tf_sim_config_default(&cfg);
        int rc = tf_sim_config_parse_file(&cfg, cases[i].text, strlen(cases[i].text), "sim.conf",
                                          err, sizeof(err));
        if (rc == 0 || !strstr(err, cases[i].want))
            fail_msg("case %zu: rc %d, message \"%s\", want \"%s\"", i, rc, err, cases[i].want);
    }
    /* NUL bytes inside a line are rejected, not silently cut. */
    struct tf_sim_config cfg;
    char err[128];
    tf_sim_config_default(&cfg);
    assert_int_not_equal(tf_sim_config_parse_file(&cfg, "seed = a\0b\n", 11, "f", err, 128), 0);
}

static void environment_overrides_the_file(void **state)
{
    char path[] = "/tmp/tf-simcfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, file_text, strlen(file_text)), (ssize_t)strlen(file_text));
    close(fd);
    setenv("TF_SIM_CONFIG", path, 1);
    unsetenv("TF_SIM_DEVICES");
    unsetenv("TF_SIM_SEED");
    unsetenv("TF_SIM_SHM_PREFIX");
    struct tf_sim_config cfg;
    char err[256] = "";
    assert_int_equal(tf_sim_config_load(&cfg, err, sizeof(err)), 0);
    assert_int_equal(cfg.ndev, 2);
    assert_string_equal(cfg.seed, "node-a");
    setenv("TF_SIM_DEVICES", "T4", 1);
    setenv("TF_SIM_SEED", "node-z", 1);
    setenv("TF_SIM_SHM_PREFIX", "/tmp/other-", 1);
    assert_int_equal(tf_sim_config_load(&cfg, err, sizeof(err)), 0);
    assert_int_equal(cfg.ndev, 1);
    assert_string_equal(cfg.dev[0].model->name, "T4");
    assert_string_equal(cfg.seed, "node-z");
    assert_string_equal(cfg.shm_prefix, "/tmp/other-");
    setenv("TF_SIM_DEVICES", "H100:1Zi", 1);
    assert_int_not_equal(tf_sim_config_load(&cfg, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "TF_SIM_DEVICES: device 0"));
    unlink(path);
    setenv("TF_SIM_DEVICES", "T4", 1);
    assert_int_equal(tf_sim_config_load(&cfg, err, sizeof(err)), TF_EIO);
    assert_non_null(strstr(err, path));
    unsetenv("TF_SIM_CONFIG");
    unsetenv("TF_SIM_DEVICES");
    unsetenv("TF_SIM_SEED");
    unsetenv("TF_SIM_SHM_PREFIX");
}

static void every_cuda_model_of_the_table_has_hardware_facts(void **state)
{
    for (size_t i = 0; i < tf_gpu_model_count(); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_at(i);
        const struct tf_sim_hwspec *hw = tf_sim_hwspec_find(m->name);
        if (strcmp(m->vendor, "NVIDIA") != 0) {
            assert_null(hw);
            continue;
        }
        if (!hw)
            fail_msg("no hardware facts for %s", m->name);
        assert_true(hw->cc_major >= 7);
        assert_true(hw->smem_optin <= hw->smem_per_sm);
        assert_true(hw->clock_mhz > 500 && hw->mem_clock_mhz > 500);
        assert_true(hw->pci_device_id > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unset_environment_gives_one_a100_80gb),
        cmocka_unit_test(user_lists_models_with_memory_and_sm_counts),
        cmocka_unit_test(omitted_fields_default_from_the_model_table),
        cmocka_unit_test(none_or_empty_means_no_device),
        cmocka_unit_test(bad_specs_are_rejected_naming_the_value),
        cmocka_unit_test(uuids_are_stable_formatted_and_distinct),
        cmocka_unit_test(config_file_sets_seed_prefix_devices_and_uuids),
        cmocka_unit_test(file_errors_name_file_line_and_key),
        cmocka_unit_test(environment_overrides_the_file),
        cmocka_unit_test(every_cuda_model_of_the_table_has_hardware_facts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
