/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: YAML/JSON manifest parsing (tf_manifest_parse) must never crash, leak or
 * exceed its bounds, and what it returns must serialise.
 */
#include "common/yamljson.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *docs = NULL;
    char err[256];
    if (tf_manifest_parse((const char *)data, size, &docs, err, sizeof(err)) == 0) {
        if (!json_object_to_json_string(docs))
            abort();
        json_object_put(docs);
    } else if (docs) {
        abort();
    }
    return 0;
}
