/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: request bodies of the hypervisor's HTTP API (POST /api/v1/workloads), parsed
 * the way api.c parses them (json-c tokener, depth 32) and validated by
 * tf_hv_request_from_json. Must never crash or leak; an accepted request must serialise
 * (tf_hv_request_to_json) and parse back to the same normalised request.
 */
#include "hypervisor/workload.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    struct json_tokener *tok = json_tokener_new_ex(32);
    if (!tok)
        abort();
    json_object *o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    json_tokener_free(tok);
    if (!o)
        return 0;
    struct tf_hv_request r, r2;
    char err[512];
    if (tf_hv_request_from_json(o, &r, err, sizeof(err)) == 0) {
        json_object *back = tf_hv_request_to_json(&r);
        if (tf_hv_request_from_json(back, &r2, err, sizeof(err)) != 0)
            abort();
        if (memcmp(&r, &r2, sizeof(r)) != 0)
            abort();
        json_object_put(back);
    } else if (!err[0]) {
        abort(); /* every refusal says why */
    }
    json_object_put(o);
    return 0;
}
