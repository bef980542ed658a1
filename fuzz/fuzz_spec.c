/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the workload model on arbitrary labels, annotations and containers, built
 * straight into a json-c tree (no YAML in the way, so the fuzzer reaches every annotation
 * parser quickly). Input: lines
 *   /key=value      annotation tensor-fusion.ai/key
 *   key=value       annotation key (verbatim)
 *   l:key=value     label
 *   c:name[=N]      container, N = its nvidia.com/gpu limit (text, as a quantity)
 *   !off            no tensor-fusion.ai/enabled label;  !auto  auto-migration on
 *   !profile        merge a fixed WorkloadProfile
 * The parse must never crash or leak; success must give a spec that serialises, whose
 * invariants hold, and whose JSON re-parses.
 */
#include "core/spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void add_line(json_object *labels, json_object *ann, json_object *ctrs, const char *l,
                     int *flags)
{
    if (!strcmp(l, "!off")) {
        *flags |= 1;
        return;
    }
    if (!strcmp(l, "!auto")) {
        *flags |= 2;
        return;
    }
    if (!strcmp(l, "!profile")) {
        *flags |= 4;
        return;
    }
    const char *eq = strchr(l, '=');
    if (!strncmp(l, "c:", 2)) {
        json_object *c = json_object_new_object();
        size_t nlen = eq ? (size_t)(eq - l - 2) : strlen(l + 2);
        json_object_object_add(c, "name", json_object_new_string_len(l + 2, (int)nlen));
        if (eq) {
            json_object *lim = json_object_new_object(), *res = json_object_new_object();
            json_object_object_add(lim, "nvidia.com/gpu", json_object_new_string(eq + 1));
            json_object_object_add(res, "limits", lim);
            json_object_object_add(c, "resources", res);
        }
        json_object_array_add(ctrs, c);
        return;
    }
    if (!eq)
        return;
    json_object *target = ann;
    if (!strncmp(l, "l:", 2)) {
        target = labels;
        l += 2;
    }
    char key[256];
    size_t klen = (size_t)(eq - l);
    if (klen > 200)
        return;
    if (*l == '/') {
        memcpy(key, "tensor-fusion.ai", 16);
        memcpy(key + 16, l, klen);
        key[16 + klen] = 0;
    } else {
        memcpy(key, l, klen);
        key[klen] = 0;
    }
    json_object_object_add(target, key, json_object_new_string(eq + 1));
}

static void check(const struct tf_spec *s)
{
    if (!s->enabled)
        return;
    if (s->gpu_count < 1 || s->gpu_count > TF_SPEC_MAX_GPUS)
        abort();
    if (s->ngpu_indices && s->ngpu_indices < s->gpu_count)
        abort();
    if ((s->requests.tflops_set && s->requests.percent_set) ||
        (s->limits.tflops_set && s->limits.percent_set))
        abort();
    /* A request above its limit is admitted (with a warning), as upstream does. */
    if (!tf_isolation_name(s->isolation) || !tf_qos_name(s->qos))
        abort();
    for (size_t i = 0; i < s->ncontainers; i++)
        if (s->containers[i].gpu_count < 1 || s->containers[i].gpu_count > TF_SPEC_MAX_GPUS)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    json_object *pod = json_object_new_object(), *meta = json_object_new_object();
    json_object *labels = json_object_new_object(), *ann = json_object_new_object();
    json_object *spec = json_object_new_object(), *ctrs = json_object_new_array();
    int flags = 0;
    for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        add_line(labels, ann, ctrs, l, &flags);
    if (!(flags & 1) && !json_object_object_get_ex(labels, TF_LABEL_ENABLED, NULL))
        json_object_object_add(labels, TF_LABEL_ENABLED, json_object_new_string("true"));
    json_object_object_add(meta, "name", json_object_new_string("fuzz"));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(pod, "metadata", meta);
    if (json_object_array_length(ctrs) > 0) {
        json_object_object_add(spec, "containers", ctrs);
        ctrs = NULL;
    }
    json_object_object_add(pod, "spec", spec);
    json_object_put(ctrs);

    struct tf_profile prof;
    const struct tf_profile *pp = NULL;
    if (flags & 4) {
        json_object *pd = json_tokener_parse(
            "{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"WorkloadProfile\","
            "\"metadata\":{\"name\":\"p\"},\"spec\":{\"resources\":{\"requests\":{\"tflops\":"
            "\"5\",\"vram\":\"3Gi\"},\"limits\":{\"tflops\":\"15\",\"vram\":\"3Gi\"}},"
            "\"gpuModel\":\"A100\",\"gpuCount\":2,\"qos\":\"low\",\"gpuIndices\":[0,1,2]}}");
        if (tf_profile_parse(pd, &prof, NULL, 0) != 0)
            abort();
        json_object_put(pd);
        pp = &prof;
    }
    struct tf_pool_defaults pool = {.auto_migration = (flags & 2) != 0, .qos = TF_QOS_LOW};
    struct tf_spec s;
    char err[256];
    if (tf_spec_parse(pod, pp, &pool, &s, err, sizeof(err)) == 0) {
        check(&s);
        json_object *j = tf_spec_to_json(&s);
        const char *txt = json_object_to_json_string(j);
        json_object *back = txt ? json_tokener_parse(txt) : NULL;
        if (!back)
            abort();
        json_object_put(back);
        json_object_put(j);
    } else if (s.name || s.warnings || s.containers) {
        abort(); /* errors leave the spec empty */
    }
    tf_spec_free(&s);
    if (pp)
        tf_profile_free(&prof);
    json_object_put(pod);
    free(buf);
    return 0;
}
