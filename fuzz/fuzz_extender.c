/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: kube-scheduler extender bodies (ExtenderArgs and ExtenderBindingArgs)
 * must decode or fail cleanly; decoded args must encode filter and priority results.
 */
#include "controller/extender_codec.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_ext_args a;
    struct tf_ext_binding b;
    char err[256];
    if (tf_ext_decode_args((const char *)data, size, &a, err, sizeof(err)) == 0) {
        const char **reasons = calloc(a.n_nodes + 1, sizeof(char *));
        int *scores = calloc(a.n_nodes + 1, sizeof(int));
        if (!reasons || !scores)
            abort();
        for (size_t i = 0; i < a.n_nodes; i++) {
            reasons[i] = i % 2 ? "no gpu" : NULL;
            scores[i] = (int)i;
        }
        char *f = tf_ext_encode_filter(&a, reasons, NULL, NULL);
        char *p = tf_ext_encode_priorities(&a, scores);
        if (!f || !p)
            abort();
        free(f);
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
