/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: kube-scheduler extender bodies (ExtenderArgs and ExtenderBindingArgs)
 * must decode or fail cleanly; decoded args must encode filter and priority results. The
 * strict scan must decode as the json-c tree decoder does (same result, names, Pod), and the
 * filter result's text writer must write json-c's bytes; a Pod of the bytes the decoder was
 * told to expect is recognised, and so are NodeNames of the bytes the scan says they were.
 */
#include "controller/extender_codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_ext_args a;
    struct tf_ext_binding b;
    char err[256];
    struct tf_ext_args t;
    char err2[256];
    int r1 = tf_ext_decode_args((const char *)data, size, &a, err, sizeof(err));
    int r2 = tf_ext_decode_args_tree((const char *)data, size, &t, err2, sizeof(err2));
    if (r1 != r2 || (r1 && strcmp(err, err2)))
        abort();
    if (r1 == 0) {
        /* As text: json-c takes the non-JSON NaN as a double, and json_object_equal compares
         * doubles with ==. */
        if (a.n_nodes != t.n_nodes ||
            (a.pod != t.pod &&
             (!a.pod || !t.pod ||
              strcmp(json_object_to_json_string_ext(a.pod, JSON_C_TO_STRING_PLAIN),
                     json_object_to_json_string_ext(t.pod, JSON_C_TO_STRING_PLAIN)))))
            abort();
        for (size_t i = 0; i < a.n_nodes; i++)
            if (strcmp(a.node_names[i], t.node_names[i]))
                abort();
        tf_ext_args_free(&t);
        /* Told to expect its own Pod bytes, the scan recognises them and decodes the rest. */
        if (a.pod_text) {
            struct tf_ext_expect ex = {a.pod_text, NULL, a.pod_len, 0};
            struct tf_ext_args e;
            if (tf_ext_decode_args_expect((const char *)data, size, &ex, &e, err, sizeof(err)) ||
                !e.pod_expected || e.pod || e.n_nodes != a.n_nodes)
                abort();
            tf_ext_args_free(&e);
        }
        /* Likewise its own NodeNames bytes: a span of the body from '[' to ']'. */
        if (a.names_text) {
            const char *d = (const char *)data;
            if (a.names_text < d || a.names_text + a.names_text_len > d + size ||
                a.names_text_len < 2 || a.names_text[0] != '[' ||
                a.names_text[a.names_text_len - 1] != ']')
                abort();
            struct tf_ext_expect ex = {NULL, a.names_text, 0, a.names_text_len};
            struct tf_ext_args e;
            if (tf_ext_decode_args_expect(d, size, &ex, &e, err, sizeof(err)) ||
                !e.names_expected || e.n_nodes || e.names_text)
                abort();
            tf_ext_args_free(&e);
        }
    }
    if (r1 == 0) {
        const char **reasons = calloc(a.n_nodes + 1, sizeof(char *));
        int *scores = calloc(a.n_nodes + 1, sizeof(int));
        if (!reasons || !scores)
            abort();
        for (size_t i = 0; i < a.n_nodes; i++) {
            reasons[i] = i % 2 ? "no gpu" : NULL;
            scores[i] = (int)i;
        }
        char *f = tf_ext_encode_filter(&a, reasons, NULL, NULL);
        char *ft = tf_ext_encode_filter_tree(&a, reasons, NULL, NULL);
        char *p = tf_ext_encode_priorities(&a, scores);
        if (!f || !p || !ft || strcmp(f, ft))
            abort();
        free(f);
        free(ft);
        free(p);
        free(reasons);
        free(scores);
        tf_ext_args_free(&a);
    }
    if (tf_ext_decode_binding((const char *)data, size, &b, err, sizeof(err)) == 0) {
        if (!b.pod_name || !b.node)
            abort();
        tf_ext_binding_free(&b);
    }
    return 0;
}
