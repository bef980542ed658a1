/* SPDX-License-Identifier: Apache-2.0
 *
 * The pure part of the export-table layer: MD2 against RFC 1319's test suite, and the
 * integrity answer against a published sample (inputs and expected output of a runtime's
 * check recorded on a real driver, as the ZLUDA project documents it) and the fixed answers
 * of runtime versions ending in 0 and 1. The runtime programs (tests/cudart) check the rest:
 * a wrong answer makes every runtime call fail with cudaErrorSoftwareValidityNotEstablished
 * ("integrity checks failed").
 */
#include "exptab/integrity.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void hex(const uint8_t *d, char *out)
{
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void md2_matches_the_rfc_test_suite(void **state)
{
    static const char *const cases[][2] = {
        {"", "8350e5a3e24c153df2275c9f80692773"},
        {"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"},
        {"abc", "da853b0d3f88d99b30283a69e6ded6bb"},
        {"message digest", "ab4f496bfb2a530b219ff33031fe06b0"},
        {"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "da33def2a42df13975352846c30338cd"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "d5976f79d83d3a0dc9806c3c66f3efd8"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t d[16];
        char h[33];
        tf_md2(cases[i][0], strlen(cases[i][0]), d);
        hex(d, h);
        assert_string_equal(h, cases[i][1]);
    }
}

static void hmac_md2_keys_both_passes(void **state)
{
    uint8_t key[16], a[16], b[16];
    memset(key, 0x0b, sizeof(key));
    tf_hmac_md2(key, "Hi There", 8, a);
    key[15] ^= 1;
    tf_hmac_md2(key, "Hi There", 8, b);
    assert_memory_not_equal(a, b, 16);
    /* HMAC is not the plain digest of key || message */
    uint8_t cat[24];
    memset(cat, 0x0b, 16);
    memcpy(cat + 16, "Hi There", 8);
    key[15] ^= 1;
    tf_md2(cat, sizeof(cat), b);
    assert_memory_not_equal(a, b, 16);
}

static void the_answer_matches_a_recorded_driver_sample(void **state)
{
    struct tf_integrity_in in = {
        .driver_version = 12020,
        .version = 11082, /* a runtime version not ending in 0 or 1: hashed */
        .pid = 0x4d08,
        .thread = 0x2b78,
        .cudart_table = 0x00007ff8c80717f0ull,
        .integrity_table = 0x00007ff8c825e4b0ull,
        .fn = 0x00007ff8c7dd0ad0ull,
        .unix_seconds = 0x64a365ee,
    };
    struct tf_integrity_dev dev = {
        .uuid = {0x67, 0x22, 0xcb, 0xcf, 0xc6, 0x61, 0xf2, 0x92, 0x74, 0xd6, 0xed, 0x23, 0x2a, 0x32,
                 0x13, 0x1c},
        .pci_domain = 0,
        .pci_bus = 4,
        .pci_device = 0,
    };
    uint64_t out[2];
    tf_integrity_answer(&in, &dev, 1, out);
    assert_true(out[0] == 0xa7c34628f214707aull);
    assert_true(out[1] == 0xeaf1313342bfcd84ull);
    /* every input counts */
    in.thread ^= 1;
    tf_integrity_answer(&in, &dev, 1, out);
    assert_false(out[0] == 0xa7c34628f214707aull && out[1] == 0xeaf1313342bfcd84ull);
    in.thread ^= 1;
    dev.pci_bus = 5;
    tf_integrity_answer(&in, &dev, 1, out);
    assert_false(out[0] == 0xa7c34628f214707aull && out[1] == 0xeaf1313342bfcd84ull);
}

static void versions_ending_in_0_and_1_get_fixed_answers(void **state)
{
    struct tf_integrity_in in = {.driver_version = 13000, .version = 13000, .pid = 1};
    uint64_t out[2];
    tf_integrity_answer(&in, NULL, 0, out);
    assert_true(out[0] == 0x3341181c03cb675cull && out[1] == 0x8ed383aa1f4cd1e8ull);
    in.version = 13001;
    in.pid = 99; /* inputs do not matter */
    tf_integrity_answer(&in, NULL, 0, out);
    assert_true(out[0] == 0x1841181c03cb675cull && out[1] == 0x8ed383aa1f4cd1e8ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(md2_matches_the_rfc_test_suite),
        cmocka_unit_test(hmac_md2_keys_both_passes),
        cmocka_unit_test(the_answer_matches_a_recorded_driver_sample),
        cmocka_unit_test(versions_ending_in_0_and_1_get_fixed_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
