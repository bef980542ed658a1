/* SPDX-License-Identifier: Apache-2.0
 *
 * SHA-256 (src/remote/sha256.h), which names module images on the wire: the FIPS 180-4 /
 * NIST example vectors, through the helper both client and worker call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "remote/sha256.h"

static void hex(const uint8_t d[TF_SHA256_LEN], char out[65])
{
    for (int i = 0; i < TF_SHA256_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check(const void *data, size_t len, const char *want)
{
    uint8_t d[TF_SHA256_LEN];
    char h[65];
    tf_sha256(data, len, d);
    hex(d, h);
    assert_string_equal(h, want);
}

static void digests_match_the_standards_examples(void **state)
{
    (void)state;
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *m = malloc(1000000);
    assert_non_null(m);
    memset(m, 'a', 1000000);
    check(m, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(digests_match_the_standards_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
