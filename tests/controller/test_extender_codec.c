/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender codec's fast paths against their json-c references, on seeded random inputs:
 * the strict scan of ExtenderArgs must give what the json-c tree decoder gives (same return
 * code and message, same node names in order, an equal Pod) for well-formed bodies in every
 * spelling (whitespace, key order, extra keys of every JSON type, names with any byte, escapes,
 * duplicate keys, NodeList mode) and for broken ones (cut, flipped bytes); the text writer of
 * ExtenderFilterResult must give json-c's bytes for any names and reasons (repeated names,
 * unresolvable nodes, control characters, UTF-8); a body holding the Pod and NodeNames bytes
 * the decoder was told to expect (a prioritize after its filter) is recognised, and any other
 * bytes are decoded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/dynbuf.h"
#include "common/err.h"
#include "controller/extender_codec.h"
#include "core/strmap.h"

static uint64_t rng = 0x853c49e6748fea9bull;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* A random name: mostly DNS-like, sometimes any byte 1..255. */
static void random_name(char *buf, size_t cap)
{
    size_t n = 1 + rnd(12);
    for (size_t i = 0; i < n && i + 1 < cap; i++) {
        if (rnd(20) == 0)
            buf[i] = (char)(1 + rnd(255));
        else
            buf[i] = "abcdefghijklmnop-0123456789."[rnd(28)];
        buf[i + 1] = '\0';
    }
}

static void ws(struct tf_dynbuf *b)
{
    static const char *sp[] = {"", "", "", " ", "\n  ", "\t", "\r\n"};
    tf_dynbuf_adds(b, sp[rnd(7)]);
}

static void random_value(struct tf_dynbuf *b, int depth)
{
    static const char *atoms[] = {"1",    "-0.5e+3",      "0",   "true",           "false",
                                  "null", "\"x\"",        "1E9", "\"\\u00e9\\n\"", "12.25",
                                  "-7",   "\"a\\\\b\\/\""};
    unsigned k = depth > 3 ? 0 : rnd(6);
    if (k == 0) {
        tf_dynbuf_adds(b, atoms[rnd(12)]);
    } else if (k == 1) {
        tf_dynbuf_addc(b, '[');
        unsigned n = rnd(4);
        for (unsigned i = 0; i < n; i++) {
            if (i)
                tf_dynbuf_addc(b, ',');
            ws(b);
            random_value(b, depth + 1);
        }
        tf_dynbuf_addc(b, ']');
    } else {
        tf_dynbuf_addc(b, '{');
        unsigned n = rnd(4);
        for (unsigned i = 0; i < n; i++) {
            if (i)
                tf_dynbuf_addc(b, ',');
            tf_dynbuf_addf(b, "\"k%u\"", rnd(5));
            ws(b);
            tf_dynbuf_addc(b, ':');
            random_value(b, depth + 1);
        }
        tf_dynbuf_addc(b, '}');
    }
}

static const char pod[] =
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"annotations\":{\"a\":\"b\\u00e9\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{}}]},\"n\":[1,2.5,-3e2]}";

/* A random ExtenderArgs body. */
static void random_args(struct tf_dynbuf *b)
{
    tf_dynbuf_reset(b);
    ws(b);
    tf_dynbuf_addc(b, '{');
    unsigned order = rnd(6), nkeys = 0;
    for (unsigned slot = 0; slot < 5; slot++) {
        unsigned which = (slot + order) % 5;
        const char *key = NULL;
        if (which == 0)
            key = "Pod";
        else if (which == 1 && rnd(8))
            key = "NodeNames";
        else if (which == 2 && rnd(2))
            key = "Nodes";
        else if (which >= 3 && rnd(2))
            key = which == 3 ? "Extra" : (rnd(10) ? "Other" : "Pod");
        if (!key)
            continue;
        if (nkeys++)
            tf_dynbuf_addc(b, ',');
        ws(b);
        if (rnd(30) == 0 && !strcmp(key, "Pod"))
            tf_dynbuf_adds(b, "\"P\\u006fd\"");
        else
            tf_dynbuf_addf(b, "\"%s\"", key);
        ws(b);
        tf_dynbuf_addc(b, ':');
        ws(b);
        if (!strcmp(key, "Pod")) {
            tf_dynbuf_adds(b, rnd(20) ? pod : "[]");
        } else if (!strcmp(key, "NodeNames")) {
            if (rnd(15) == 0) {
                tf_dynbuf_adds(b, "null");
                continue;
            }
            tf_dynbuf_addc(b, '[');
            unsigned n = rnd(20);
            for (unsigned i = 0; i < n; i++) {
                char nm[16];
                if (i)
                    tf_dynbuf_addc(b, ',');
                ws(b);
                if (rnd(25) == 0) {
                    tf_dynbuf_adds(b, rnd(2) ? "\"n\\u0031\"" : "7");
                    continue;
                }
                random_name(nm, sizeof(nm));
                tf_dynbuf_add_json_str(b, nm, strlen(nm));
            }
            tf_dynbuf_addc(b, ']');
        } else if (!strcmp(key, "Nodes")) {
            tf_dynbuf_adds(b, rnd(4) ? "null"
                                     : "{\"items\":[{\"metadata\":{\"name\":\"n1\"}},"
                                       "{\"metadata\":{\"name\":\"n2\"}}]}");
        } else {
            random_value(b, 0);
        }
    }
    ws(b);
    tf_dynbuf_addc(b, '}');
    ws(b);
}

static void same_decoding(const char *body, size_t len)
{
    struct tf_ext_args a, t;
    char e1[256] = "", e2[256] = "";
    int r1 = tf_ext_decode_args(body, len, &a, e1, sizeof(e1));
    int r2 = tf_ext_decode_args_tree(body, len, &t, e2, sizeof(e2));
    if (r1 != r2 || strcmp(e1, e2))
        fail_msg("decoders disagree (%d '%s' / %d '%s') on %.*s", r1, e1, r2, e2, (int)len, body);
    if (r1)
        return;
    assert_int_equal(a.n_nodes, t.n_nodes);
    assert_int_equal(a.node_list, t.node_list);
    for (size_t i = 0; i < a.n_nodes; i++)
        assert_string_equal(a.node_names[i], t.node_names[i]);
    assert_true(json_object_equal(a.pod, t.pod));
    for (size_t i = 0; a.name_hashes && i < a.n_nodes; i++)
        assert_int_equal(a.name_hashes[i],
                         tf_strmap_hash(a.node_names[i], strlen(a.node_names[i])));
    /* Names as decoded (written without escaping when the scan saw them plain). */
    const char **reasons = calloc(a.n_nodes + 1, sizeof(*reasons));
    for (size_t i = 0; i < a.n_nodes; i++)
        reasons[i] = rnd(3) ? NULL : "no \"GPU\"";
    char *t1 = tf_ext_encode_filter(&a, reasons, NULL, NULL);
    char *t2 = tf_ext_encode_filter_tree(&a, reasons, NULL, NULL);
    char *p1 = tf_ext_encode_priorities(&a, (const int *)reasons); /* any ints */
    char *p2 = tf_ext_encode_priorities(&t, (const int *)reasons);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    free(p1);
    free(p2);
    free(reasons);
    tf_ext_args_free(&a);
    tf_ext_args_free(&t);
}

static void the_strict_scan_decodes_as_json_c_does(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    unsigned fast = 0;
    for (int i = 0; i < 8000; i++) {
        random_args(&b);
        same_decoding(b.data, b.len);
        /* Broken copies: cut short, or one byte changed. */
        size_t cut = rnd((uint32_t)b.len + 1);
        same_decoding(b.data, cut);
        char *m = malloc(b.len + 1);
        memcpy(m, b.data, b.len + 1);
        m[rnd((uint32_t)b.len)] = (char)rnd(256);
        same_decoding(m, b.len);
        free(m);
        struct tf_ext_args a;
        if (tf_ext_decode_args(b.data, b.len, &a, NULL, 0) == 0) {
            fast += a.names_buf != NULL;
            tf_ext_args_free(&a);
        }
    }
    assert_true(fast > 2000); /* most well-formed bodies took the strict scan */
    tf_dynbuf_free(&b);
}

/* BODY (decoded by the strict scan into A) again as kube-scheduler's prioritize would send it:
 * A's Pod bytes, as NodeNames the text the filter writer puts in its answer. The decoder must
 * recognise exactly those bytes when told to expect them, and decode anything else. */
static void expected_bytes_are_recognised(const struct tf_ext_args *a)
{
    size_t span[2];
    char *out = tf_ext_encode_filter_span(a, NULL, NULL, NULL, span);
    assert_non_null(out);
    if (!span[1]) { /* written by json-c: no span */
        free(out);
        return;
    }
    /* The span is the answer's NodeNames array. */
    char *text = strndup(out + span[0], span[1]);
    json_object *whole = json_tokener_parse(out), *arr = json_tokener_parse(text);
    assert_true(json_object_equal(json_object_object_get(whole, "NodeNames"), arr));
    json_object_put(arr);
    free(text);
    json_object_put(whole);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    tf_dynbuf_adds(&b, "{\"Pod\":");
    tf_dynbuf_add(&b, a->pod_text, a->pod_len);
    tf_dynbuf_adds(&b, ",\"Nodes\":null,\"NodeNames\":");
    tf_dynbuf_add(&b, out + span[0], span[1]);
    tf_dynbuf_adds(&b, "}");
    struct tf_ext_expect ex = {a->pod_text, out + span[0], a->pod_len, span[1]};
    struct tf_ext_args e, plain;
    char err[256];
    assert_int_equal(tf_ext_decode_args_expect(b.data, b.len, &ex, &e, err, sizeof(err)), 0);
    assert_true(e.pod_expected && e.names_expected);
    assert_null(e.pod);
    assert_int_equal(e.n_nodes, 0);
    tf_ext_args_free(&e);
    /* One byte off in either: that part is decoded, as without expectations. */
    assert_int_equal(tf_ext_decode_args(b.data, b.len, &plain, err, sizeof(err)), 0);
    for (int k = 0; k < 2; k++) {
        struct tf_ext_expect off = ex;
        char *m = strndup(k ? off.names : off.pod, k ? off.names_len : off.pod_len);
        size_t at = rnd((uint32_t)(k ? off.names_len : off.pod_len));
        m[at] = m[at] == ' ' ? '\t' : ' ';
        if (k)
            off.names = m;
        else
            off.pod = m;
        assert_int_equal(tf_ext_decode_args_expect(b.data, b.len, &off, &e, err, sizeof(err)), 0);
        assert_true(e.pod_expected == (k == 1) && e.names_expected == (k == 0));
        if (k) { /* the names were off: decoded */
            assert_int_equal(e.n_nodes, plain.n_nodes);
            for (size_t i = 0; i < e.n_nodes; i++)
                assert_string_equal(e.node_names[i], plain.node_names[i]);
        } else { /* the Pod was */
            assert_true(json_object_equal(e.pod, plain.pod));
        }
        tf_ext_args_free(&e);
        free(m);
    }
    tf_ext_args_free(&plain);
    tf_dynbuf_free(&b);
    free(out);
}

static void expected_bytes_stand_for_their_decoding(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    unsigned seen = 0;
    for (int i = 0; i < 3000; i++) {
        random_args(&b);
        struct tf_ext_args a;
        if (tf_ext_decode_args(b.data, b.len, &a, NULL, 0))
            continue;
        if (a.pod_text) {
            expected_bytes_are_recognised(&a);
            seen++;
        }
        tf_ext_args_free(&a);
    }
    assert_true(seen > 500);
    tf_dynbuf_free(&b);
}

static void the_filter_result_text_is_json_c_s(void **state)
{
    for (int i = 0; i < 20000; i++) {
        char names[24][16], rs[24][64], word[24];
        const char *np[24], *reasons[24];
        bool unres[24];
        size_t n = rnd(24);
        for (size_t k = 0; k < n; k++) {
            if (k && rnd(6) == 0)
                strcpy(names[k], names[rnd((uint32_t)k)]); /* a repeated node */
            else
                random_name(names[k], sizeof(names[k]));
            np[k] = names[k];
            /* The allocator's reasons start "node NAME: ", which both writers drop; one of
             * another node's name, or none, is kept. */
            random_name(word, sizeof(word));
            uint32_t form = rnd(3);
            snprintf(rs[k], sizeof(rs[k]), "%s%s%s", form == 2 ? "" : "node ",
                     form == 0   ? names[k]
                     : form == 1 ? names[rnd((uint32_t)k + 1)]
                                 : "",
                     form == 2 ? word : ": ");
            if (form != 2)
                strncat(rs[k], word, sizeof(rs[k]) - strlen(rs[k]) - 1);
            reasons[k] = rnd(3) ? NULL : rs[k];
            unres[k] = rnd(4) == 0;
        }
        struct tf_ext_args a = {.node_names = np, .n_nodes = n};
        const char *error = rnd(5) ? NULL : "pod-level \"error\"\n";
        const char *const *rp = rnd(8) ? reasons : NULL;
        const bool *up = rnd(2) ? unres : NULL;
        char *t1 = tf_ext_encode_filter(&a, rp, up, error);
        char *t2 = tf_ext_encode_filter_tree(&a, rp, up, error);
        assert_non_null(t1);
        assert_non_null(t2);
        if (strcmp(t1, t2))
            fail_msg("text writer\n%s\njson-c\n%s", t1, t2);
        for (size_t k = 0; rp && k < n; k++) {
            char own[48];
            snprintf(own, sizeof(own), "\"%s\":\"node %s: ", names[k], names[k]);
            if (strstr(t1, own))
                fail_msg("a reason names its own node: %s", t1);
        }
        free(t1);
        free(t2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_strict_scan_decodes_as_json_c_does),
        cmocka_unit_test(the_filter_result_text_is_json_c_s),
        cmocka_unit_test(expected_bytes_stand_for_their_decoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
