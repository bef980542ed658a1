/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: Kubernetes quantity parsing and every conversion built on it.
 * Checks that a successful parse round-trips through the byte formatter.
 */
#include "core/quantity.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char s[257];
    memcpy(s, data, size);
    s[size] = 0;
    char err[256];
    int64_t v, w;
    int32_t bp;
    if (tf_quantity_bytes(s, &v, "k", err, sizeof(err)) == 0) {
        char buf[64];
        tf_quantity_format_bytes(v, buf, sizeof(buf));
        if (tf_quantity_bytes(buf, &w, "k", err, sizeof(err)) != 0 || w != v)
            abort();
    }
    (void)tf_quantity_milli(s, &v, "k", err, sizeof(err));
    if (tf_percent_parse(s, &bp, "k", err, sizeof(err)) == 0 && (bp < 0 || bp > 10000))
        abort();
    return 0;
}
