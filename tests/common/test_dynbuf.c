/* SPDX-License-Identifier: Apache-2.0
 *
 * tf_dynbuf: growth, the hard length limit (also an unlimited SIZE_MAX one), consume/truncate;
 * JSON string escaping and the scan for the first byte that needs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/dynbuf.h"
#include "common/err.h"

#include <stdlib.h>
#include <string.h>

static void grows_past_the_first_allocation_and_stays_terminated(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    assert_string_equal(tf_dynbuf_str(&b), "");
    for (int i = 0; i < 5000; i++)
        assert_int_equal(tf_dynbuf_addc(&b, (char)('a' + i % 26)), 0);
    assert_int_equal(b.len, 5000);
    assert_int_equal(b.data[5000], '\0');
    assert_int_equal(b.data[4999], 'a' + 4999 % 26);
    tf_dynbuf_free(&b);
}

static void the_length_limit_appends_nothing_past_it(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 4);
    assert_int_equal(tf_dynbuf_adds(&b, "abc"), 0);
    assert_int_equal(tf_dynbuf_adds(&b, "de"), TF_ERANGE);
    assert_int_equal(tf_dynbuf_addc(&b, 'd'), 0);
    assert_int_equal(tf_dynbuf_addc(&b, 'e'), TF_ERANGE);
    assert_string_equal(tf_dynbuf_str(&b), "abcd");
    tf_dynbuf_free(&b);
}

/* SIZE_MAX means "no limit": max + 1 must not wrap the capacity clamp to zero. */
static void an_unlimited_buffer_grows_like_any_other(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, SIZE_MAX);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tf_dynbuf_addc(&b, 'x'), 0);
    assert_int_equal(tf_dynbuf_addf(&b, "%d", 42), 0);
    assert_int_equal(b.len, 1002);
    assert_true(b.cap > b.len);
    tf_dynbuf_free(&b);
}

static void json_strings_are_escaped_and_quoted(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 10);
    const char s[] = "a\"b\\c\n\x01/";
    assert_int_equal(tf_dynbuf_add_json_str(&b, s, sizeof(s) - 1), 0);
    assert_string_equal(tf_dynbuf_str(&b), "\"a\\\"b\\\\c\\n\\u0001/\"");
    tf_dynbuf_consume(&b, 1);
    tf_dynbuf_truncate(&b, 1);
    assert_string_equal(tf_dynbuf_str(&b), "a");
    tf_dynbuf_free(&b);
}

/* The plain-run scan (sixteen or eight bytes a step) stops where a byte-by-byte one does, for
 * every offset of the first byte to escape; escaped lengths are what the escaper writes. */
static void plain_runs_end_at_the_first_byte_to_escape(void **state)
{
    static const char special[] = {'"', '\\', '\0', '\n', 0x1f, 0x01};
    char s[80], out[80 * 6];
    uint32_t seed = 1;
    for (size_t n = 0; n <= 70; n++) {
        for (size_t at = 0; at <= n; at++) {
            for (size_t k = 0; k < n; k++) {
                seed = seed * 1103515245u + 12345u;
                s[k] = (char)(0x20 + (seed >> 16) % 0xe0); /* printable or UTF-8 bytes */
                if (s[k] == '"' || s[k] == '\\')
                    s[k] = 'x';
            }
            if (at < n)
                s[at] = special[(at + n) % sizeof(special)];
            assert_int_equal(tf_json_plain_len(s, n), at);
            size_t e = tf_json_escaped_len(s, n);
            assert_int_equal((size_t)(tf_json_escape(out, s, n) - out), e);
            assert_int_equal(e == n, at == n);
        }
    }
}

static void arrays_grow_by_doubling_and_refuse_overflow(void **state)
{
    (void)state;
    size_t cap = 0;
    int *v = tf_grow(NULL, &cap, 1, sizeof(*v), 4);
    assert_non_null(v);
    assert_int_equal(cap, 4);
    for (int i = 0; i < 4; i++)
        v[i] = i;
    assert_ptr_equal(tf_grow(v, &cap, 4, sizeof(*v), 4), v); /* room enough: unchanged */
    int *w = tf_grow(v, &cap, 5, sizeof(*w), 4);
    assert_non_null(w);
    assert_int_equal(cap, 8);
    w = tf_grow(w, &cap, 100, sizeof(*w), 4);
    assert_non_null(w);
    assert_int_equal(cap, 128);
    for (int i = 0; i < 4; i++)
        assert_int_equal(w[i], i); /* kept across reallocations */
    size_t before = cap;
    assert_null(tf_grow(w, &cap, SIZE_MAX / 2 + 2, sizeof(*w), 4));
    assert_null(tf_grow(w, &cap, SIZE_MAX / 4, sizeof(*w), 4)); /* bytes overflow */
    assert_int_equal(cap, before);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grows_past_the_first_allocation_and_stays_terminated),
        cmocka_unit_test(the_length_limit_appends_nothing_past_it),
        cmocka_unit_test(an_unlimited_buffer_grows_like_any_other),
        cmocka_unit_test(json_strings_are_escaped_and_quoted),
        cmocka_unit_test(plain_runs_end_at_the_first_byte_to_escape),
        cmocka_unit_test(arrays_grow_by_doubling_and_refuse_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
