/* SPDX-License-Identifier: Apache-2.0
 *
 * The GPU model table: names users write, names NVML reports, TFLOPS <-> percent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/gpu_models.h"

#define GiB (INT64_C(1) << 30)

static void every_model_the_issue_names_is_in_the_table(void **state)
{
    static const struct {
        const char *name;
        int64_t tflops_milli;
        int64_t vram;
    } want[] = {
        {"A100-40GB", 312000, 40 * GiB}, {"A100-80GB", 312000, 80 * GiB},
        {"H100", 989000, 80 * GiB},      {"H200", 989000, 141 * GiB},
        {"H20", 148000, 96 * GiB},       {"L40S", 362000, 48 * GiB},
        {"L40", 181000, 48 * GiB},       {"L4", 121000, 24 * GiB},
        {"A10", 125000, 24 * GiB},       {"T4", 65000, 16 * GiB},
        {"RTX4090", 165200, 24 * GiB},   {"RTX5090", 209500, 32 * GiB},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_find(want[i].name);
        if (!m)
            fail_msg("missing model %s", want[i].name);
        assert_string_equal(m->name, want[i].name);
        assert_int_equal(m->tflops_milli, want[i].tflops_milli);
        assert_int_equal(m->vram_bytes, want[i].vram);
        assert_string_equal(m->vendor, "NVIDIA");
        assert_true(m->sm_count > 0);
    }
}

static void users_write_families_in_any_case(void **state)
{
    assert_string_equal(tf_gpu_model_find("a100")->family, "A100");
    assert_string_equal(tf_gpu_model_find("L40s")->name, "L40S");
    assert_string_equal(tf_gpu_model_find("rtx 4090")->name, "RTX4090");
    assert_null(tf_gpu_model_find("A1000"));
    assert_null(tf_gpu_model_find(NULL));
    const struct tf_gpu_model *a80 = tf_gpu_model_find("A100-80GB");
    assert_true(tf_gpu_model_matches(a80, "A100"));
    assert_true(tf_gpu_model_matches(a80, "a100-80gb"));
    assert_false(tf_gpu_model_matches(a80, "A100-40GB"));
    assert_false(tf_gpu_model_matches(tf_gpu_model_find("L40S"), "L40"));
    assert_false(tf_gpu_model_matches(tf_gpu_model_find("L40"), "L4"));
}

static void nvml_names_map_to_models(void **state)
{
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA A100-SXM4-80GB", 80 * GiB)->name,
                        "A100-80GB");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA A100-PCIE-40GB", 40 * GiB)->name,
                        "A100-40GB");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA A100-SXM4-80GB", 0)->name, "A100-80GB");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA H100 80GB HBM3", 0)->name, "H100");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA H100 PCIe", 0)->name, "H100-PCIe");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA L40S", 0)->name, "L40S");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA L40", 0)->name, "L40");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA L4", 0)->name, "L4");
    assert_string_equal(tf_gpu_model_from_nvml("Tesla T4", 0)->name, "T4");
    assert_string_equal(tf_gpu_model_from_nvml("NVIDIA GeForce RTX 4090", 0)->name, "RTX4090");
    assert_null(tf_gpu_model_from_nvml("Matrox G200", 0));
    /* Every table entry recognises its own NVML name. */
    for (size_t i = 0; i < tf_gpu_model_count(); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_at(i);
        assert_ptr_equal(tf_gpu_model_from_nvml(m->nvml_name, m->vram_bytes), m);
    }
}

/* GPU objects carry upstream TensorFusion's board name (its GPU info list), picked by the NVML
 * name where the table has several boards for one entry; each resolves back to the entry, so a
 * gpu-model annotation naming it matches. */
static void gpus_are_named_as_upstreams_gpu_info_names_them(void **state)
{
    static const struct {
        const char *nvml, *upstream;
    } boards[] = {
        {"NVIDIA A100-SXM4-80GB", "A100_SXM_80G"},
        {"NVIDIA A100 80GB PCIe", "A100_PCIe_80G"},
        {"NVIDIA A100-PCIE-80GB", "A100_PCIe_80GB"},
        {"NVIDIA A100-SXM4-40GB", "A100_SXM_40G"},
        {"NVIDIA A100 40GB PCIe", "A100_PCIe_40G"},
        {"NVIDIA A100-PCIE-40GB", "A100_PCIe_40GB"},
        {"NVIDIA A800-SXM4-80GB", "A800_SXM_80G"},
        {"NVIDIA H100 80GB HBM3", "H100_SXM"},
        {"NVIDIA H100 PCIe", "H100_PCIe"},
        {"NVIDIA H800 80GB HBM3", "H800_SXM"},
        {"NVIDIA GeForce RTX 5090", "RTX_5090"},
        {"NVIDIA L4", "L4"},
        {"Tesla T4", "T4"},
        {"NVIDIA L40S", "L40S"},
        {"NVIDIA H200", "H200"},
        {"NVIDIA GeForce RTX 4090", "RTX4090"},
    };
    for (size_t i = 0; i < sizeof(boards) / sizeof(boards[0]); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_from_nvml(boards[i].nvml, 0);
        assert_non_null(m);
        assert_string_equal(tf_gpu_model_upstream_name(m, boards[i].nvml), boards[i].upstream);
        assert_ptr_equal(tf_gpu_model_find(boards[i].upstream), m);
        assert_true(tf_gpu_model_matches(m, boards[i].upstream));
    }
    /* An NVML name upstream does not list: the entry's default board. */
    assert_string_equal(tf_gpu_model_upstream_name(tf_gpu_model_find("H800"), "NVIDIA H800"),
                        "H800_SXM");
    assert_string_equal(tf_gpu_model_upstream_name(tf_gpu_model_find("A100-80GB"), NULL),
                        "A100_SXM_80G");
    assert_null(tf_gpu_model_upstream_name(NULL, "NVIDIA L4"));
    /* Every entry's upstream name leads back to it. */
    for (size_t i = 0; i < tf_gpu_model_count(); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_at(i);
        assert_ptr_equal(tf_gpu_model_find(tf_gpu_model_upstream_name(m, m->nvml_name)), m);
    }
}

static void percent_converts_with_the_models_tflops(void **state)
{
    const struct tf_gpu_model *h100 = tf_gpu_model_find("H100");
    assert_int_equal(tf_percent_to_tflops(5000, h100->tflops_milli), 494500);
    assert_int_equal(tf_percent_to_tflops(10000, h100->tflops_milli), 989000);
    assert_int_equal(tf_percent_to_tflops(0, h100->tflops_milli), 0);
    assert_int_equal(tf_tflops_to_percent(494500, h100->tflops_milli), 5000);
    assert_int_equal(tf_tflops_to_percent(121000, tf_gpu_model_find("L4")->tflops_milli), 10000);
    assert_int_equal(tf_tflops_to_percent(5, 0), 0);
}

static void all_thirteen_vendors_of_seed_001(void **state)
{
    static const char *const v[] = {"NVIDIA",   "AMD",       "Ascend",    "Intel",   "Hygon",
                                    "MetaX",    "MThreads",  "Cambricon", "Enflame", "Qualcomm",
                                    "Cerebras", "AWSNeuron", "Google"};
    for (size_t i = 0; i < 13; i++)
        assert_string_equal(tf_vendor_canonical(v[i]), v[i]);
    assert_string_equal(tf_vendor_canonical("nvidia"), "NVIDIA");
    assert_null(tf_vendor_canonical("Nvidea"));
    assert_null(tf_vendor_canonical(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_model_the_issue_names_is_in_the_table),
        cmocka_unit_test(users_write_families_in_any_case),
        cmocka_unit_test(nvml_names_map_to_models),
        cmocka_unit_test(gpus_are_named_as_upstreams_gpu_info_names_them),
        cmocka_unit_test(percent_converts_with_the_models_tflops),
        cmocka_unit_test(all_thirteen_vendors_of_seed_001),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
