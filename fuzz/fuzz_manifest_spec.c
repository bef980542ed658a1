/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: whole manifests as `tfctl spec` reads them: YAML/JSON documents through
 * tf_manifest_parse, WorkloadProfiles through tf_profile_parse, the cluster objects (every
 * document as a GPUPool, a GPUResourceQuota and, all together, as ProviderConfigs) through
 * core/defaults.h, every other document through tf_spec_parse_object (with the first profile
 * and those defaults merged), then tf_spec_to_json. Nothing may crash or leak; errors must
 * leave the outputs empty.
 */
#include "common/yamljson.h"
#include "core/defaults.h"
#include "core/spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *docs = NULL;
    char err[256];
    if (tf_manifest_parse((const char *)data, size, &docs, err, sizeof(err)) != 0)
        return 0;
    struct tf_profile prof;
    int have_prof = 0;
    size_t n = json_object_array_length(docs);
    for (size_t i = 0; i < n && !have_prof; i++) {
        json_object *d = json_object_array_get_idx(docs, i);
        if (tf_profile_parse(d, &prof, err, sizeof(err)) == 0)
            have_prof = 1;
        else if (prof.name || prof.warnings)
            abort();
    }
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    struct tf_native_resource *native = NULL;
    size_t nnative = 0;
    if (tf_defaults_native(docs, &native, &nnative) == 0) {
        pd.native = native;
        pd.nnative = nnative;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(docs, i);
        (void)tf_pool_is_default(d);
        tf_defaults_from_pool(d, &pd);
        struct tf_pool_defaults q = pd;
        if (tf_defaults_from_quota(d, &q, err, sizeof(err)) == 0)
            pd = q;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(docs, i);
        struct tf_spec s;
        (void)tf_spec_pod_template(d);
        if (tf_spec_parse_object(d, have_prof ? &prof : NULL, &pd, &s, err, sizeof(err)) == 0) {
            json_object *j = tf_spec_to_json(&s);
            if (!j || !json_object_to_json_string(j))
                abort();
            json_object_put(j);
        } else if (s.name || s.warnings || s.containers || s.kind) {
            abort();
        }
        tf_spec_free(&s);
        /* The same document as a bare pod/metadata object. */
        if (tf_spec_parse(d, NULL, NULL, &s, err, sizeof(err)) == 0) {
            json_object *j = tf_spec_to_json(&s);
            json_object_put(j);
        }
        tf_spec_free(&s);
    }
    if (have_prof)
        tf_profile_free(&prof);
    tf_defaults_native_free(native, nnative);
    json_object_put(docs);
    return 0;
}
