/* SPDX-License-Identifier: Apache-2.0
 *
 * tf_strmap, the name -> index map behind node, GPU and pod lookups: keys of every length the
 * hash reads differently (under 4, 4..7, 8, between multiples of 8) are found from buffers
 * that are not NUL-terminated, their prefixes and extensions are not, deletions keep the rest
 * findable; the hash reads every byte of a key, and spreads node-like names over the slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/strmap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

#define NKEYS 6000

static void keys_of_every_length_are_found_exactly(void **state)
{
    static char keys[NKEYS][48];
    struct tf_strmap m;
    tf_strmap_init(&m);
    for (uint32_t i = 0; i < NKEYS; i++) {
        size_t n = 1 + i % 40; /* every length 1..40, then unique by the index in front */
        int w = snprintf(keys[i], sizeof(keys[i]), "%u-", i);
        for (size_t k = (size_t)w; k < n + (size_t)w && k + 1 < sizeof(keys[i]); k++)
            keys[i][k] = (char)('a' + rnd(26));
        keys[i][n + (size_t)w < sizeof(keys[i]) ? n + (size_t)w : sizeof(keys[i]) - 1] = '\0';
        assert_int_equal(tf_strmap_put(&m, keys[i], i), 0);
    }
    assert_int_equal(tf_strmap_put(&m, keys[7], 1), TF_EEXIST);
    char buf[64];
    for (uint32_t i = 0; i < NKEYS; i++) {
        size_t n = strlen(keys[i]);
        memset(buf, 'z', sizeof(buf)); /* no NUL after the key */
        memcpy(buf, keys[i], n);
        uint32_t v = UINT32_MAX;
        assert_int_equal(tf_strmap_get(&m, buf, n, &v), 0);
        assert_int_equal(v, i);
        assert_int_equal(tf_strmap_get_hashed(&m, buf, n, tf_strmap_hash(buf, n), &v), 0);
        assert_int_equal(tf_strmap_get(&m, buf, n - 1, &v), TF_ENOENT); /* a prefix */
        assert_int_equal(tf_strmap_get(&m, buf, n + 1, &v), TF_ENOENT); /* longer */
    }
    for (uint32_t i = 0; i < NKEYS; i += 2)
        assert_int_equal(tf_strmap_del(&m, keys[i], strlen(keys[i])), 0);
    for (uint32_t i = 0; i < NKEYS; i++) {
        uint32_t v;
        assert_int_equal(tf_strmap_get(&m, keys[i], strlen(keys[i]), &v), i % 2 ? 0 : TF_ENOENT);
    }
    assert_int_equal(m.len, NKEYS / 2);
    tf_strmap_free(&m);
}

static void the_hash_reads_every_byte(void **state)
{
    char a[64], b[64];
    for (size_t n = 1; n <= 48; n++) {
        for (int t = 0; t < 50; t++) {
            for (size_t k = 0; k < n; k++)
                a[k] = (char)rnd(256);
            size_t at = rnd((uint32_t)n);
            memcpy(b, a, n);
            b[at] = (char)(a[at] ^ (1 + rnd(255)));
            if (tf_strmap_hash(a, n) == tf_strmap_hash(b, n))
                fail_msg("length %zu: a change at byte %zu kept the hash", n, at);
        }
        if (tf_strmap_hash(a, n) == tf_strmap_hash(a, n - 1))
            fail_msg("length %zu: the hash of the prefix is the same", n);
    }
}

/* Node-like names ("node-0" .. "node-4999"): no slot's probe run grows long. */
static void node_names_spread_over_the_slots(void **state)
{
    static char names[5000][16];
    struct tf_strmap m;
    tf_strmap_init(&m);
    for (int i = 0; i < 5000; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%d", i);
        assert_int_equal(tf_strmap_put(&m, names[i], (uint32_t)i), 0);
    }
    size_t longest = 0;
    for (int i = 0; i < 5000; i++) {
        size_t mask = m.cap - 1, home = tf_strmap_hash(names[i], strlen(names[i])) & mask, d = 0;
        while (strcmp(m.slots[(home + d) & mask].key, names[i]))
            d++;
        longest = d > longest ? d : longest;
    }
    if (longest > 40)
        fail_msg("a probe run of %zu slots (cap %zu)", longest, m.cap);
    tf_strmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_of_every_length_are_found_exactly),
        cmocka_unit_test(the_hash_reads_every_byte),
        cmocka_unit_test(node_names_spread_over_the_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
