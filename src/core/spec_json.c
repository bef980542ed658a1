/* SPDX-License-Identifier: Apache-2.0
 *
 * struct tf_spec -> the `tfctl spec -o json` object (the stable contract of docs/spec.md).
 * Numbers are written exactly: TFLOPS and percents as decimals without rounding, bytes as
 * integers.
 */
#include "core/spec.h"

#include "core/quantity.h"

#include <stdbool.h>
#include <stdlib.h>

/* A decimal number from thousandths (3 decimals max), written exactly. */
static json_object *milli_number(int64_t milli)
{
    char buf[32];
    tf_quantity_format_milli(milli, buf, sizeof(buf));
    return json_object_new_double_s((double)milli / 1000.0, buf);
}

/* Every constructor result goes through NN: a NULL where a value was due marks the whole
 * conversion failed (json-c out of memory), so no half-built object is ever returned. */
static json_object *nn(json_object *v, bool *bad)
{
    if (!v)
        *bad = true;
    return v;
}
#define NN(x) nn((x), bad)

static json_object *str_or_null(const char *s, bool *bad)
{
    return s ? NN(json_object_new_string(s)) : NULL;
}

static json_object *strv(char *const *v, size_t n, bool *bad)
{
    json_object *a = NN(json_object_new_array());
    for (size_t i = 0; a && i < n; i++)
        if (json_object_array_add(a, NN(json_object_new_string(v[i]))))
            *bad = true;
    return a;
}

static json_object *res_json(const struct tf_spec *s, const struct tf_spec_res *r, bool *bad)
{
    json_object *o = NN(json_object_new_object());
    if (!o)
        return NULL;
    json_object *tflops = NULL;
    if (r->tflops_set)
        tflops = NN(milli_number(r->tflops_milli));
    else if (r->percent_set && s->model)
        tflops = NN(milli_number(tf_percent_to_tflops(r->percent_bp, s->model->tflops_milli)));
    json_object_object_add(o, "tflops", tflops);
    json_object_object_add(o, "computePercent",
                           r->percent_set ? NN(milli_number((int64_t)r->percent_bp * 10)) : NULL);
    json_object_object_add(o, "vramBytes",
                           r->vram_set ? NN(json_object_new_int64(r->vram_bytes)) : NULL);
    return o;
}

json_object *tf_spec_to_json(const struct tf_spec *s)
{
    bool failed = false, *bad = &failed;
    json_object *o = NN(json_object_new_object());
    if (!o)
        return NULL;
    bool on = s->enabled;
#define ADD(obj, k, v)                                                                             \
    do {                                                                                           \
        if (json_object_object_add(obj, k, v))                                                     \
            failed = true;                                                                         \
    } while (0)
#define BOOL(b) NN(json_object_new_boolean(b))
#define INT(i) NN(json_object_new_int(i))
    ADD(o, "name", str_or_null(s->name, bad));
    ADD(o, "namespace", str_or_null(s->ns, bad));
    ADD(o, "enabled", BOOL(on));
    ADD(o, "poolName", on ? str_or_null(s->pool, bad) : NULL);
    ADD(o, "isolation", on ? str_or_null(tf_isolation_name(s->isolation), bad) : NULL);
    ADD(o, "qos", on ? str_or_null(tf_qos_name(s->qos), bad) : NULL);
    ADD(o, "isLocalGPU", on ? BOOL(s->is_local_gpu) : NULL);
    ADD(o, "gpuCount", on ? INT(s->gpu_count) : NULL);
    ADD(o, "requests", on ? res_json(s, &s->requests, bad) : NULL);
    ADD(o, "limits", on ? res_json(s, &s->limits, bad) : NULL);
    ADD(o, "gpuModel", on ? str_or_null(s->gpu_model, bad) : NULL);
    ADD(o, "vendor", on ? str_or_null(s->vendor, bad) : NULL);
    json_object *idx = NN(json_object_new_array());
    for (int i = 0; idx && i < s->ngpu_indices; i++)
        if (json_object_array_add(idx, INT(s->gpu_indices[i])))
            failed = true;
    ADD(o, "gpuIndices", idx);
    ADD(o, "dedicatedGPU", on ? BOOL(s->dedicated_gpu) : NULL);
    ADD(o, "workloadProfile", on ? str_or_null(s->workload_profile, bad) : NULL);
    ADD(o, "workload", on ? str_or_null(s->workload, bad) : NULL);
    ADD(o, "enabledReplicas", on && s->has_enabled_replicas ? INT(s->enabled_replicas) : NULL);
    json_object *as = NULL;
    if (on && (as = NN(json_object_new_object()))) {
        ADD(as, "enabled", BOOL(s->autoscale));
        ADD(as, "target", str_or_null(tf_autoscale_target_name(s->autoscale_target), bad));
    }
    ADD(o, "autoscale", as);
    ADD(o, "standaloneWorkerMode",
        on && s->has_standalone_worker_mode ? BOOL(s->standalone_worker_mode) : NULL);
    ADD(o, "disableFeatures", strv(s->disable_feature_names, s->ndisable_feature_names, bad));
    json_object *ctr = NN(json_object_new_object());
    for (size_t i = 0; ctr && i < s->ncontainers; i++)
        ADD(ctr, s->containers[i].name, INT(s->containers[i].gpu_count));
    ADD(o, "containers", ctr);
    ADD(o, "warnings", strv(s->warnings, s->nwarnings, bad));
    /* Extensions beyond the list (additive). */
    ADD(o, "kind", str_or_null(s->kind, bad));
    ADD(o, "optedOut", BOOL(s->opted_out));
    ADD(o, "autoMigrated", BOOL(s->auto_migrated));
    ADD(o, "wholeGPU", on ? BOOL(s->whole_gpu) : NULL);
    ADD(o, "injectContainers", strv(s->inject_containers, s->ninject_containers, bad));
    json_object *mig = NN(json_object_new_array());
    for (size_t i = 0; mig && i < s->ncontainers; i++)
        if (s->containers[i].migrated &&
            json_object_array_add(mig, NN(json_object_new_string(s->containers[i].name))))
            failed = true;
    ADD(o, "migratedContainers", mig);
    json_object *ids = NULL;
    for (size_t i = 0; i < s->ncontainers; i++) {
        if (!s->containers[i].gpu_ids)
            continue;
        if (!ids && !(ids = NN(json_object_new_object())))
            break;
        ADD(ids, s->containers[i].name,
            strv(s->containers[i].gpu_ids, s->containers[i].ngpu_ids, bad));
    }
    ADD(o, "containerGPUs", ids);
    json_object *gang = NULL;
    if (on && s->gang && (gang = NN(json_object_new_object()))) {
        ADD(gang, "minMembers", s->gang_min_members ? INT(s->gang_min_members) : NULL);
        ADD(gang, "timeoutMs",
            s->gang_timeout_ms ? NN(json_object_new_int64(s->gang_timeout_ms)) : NULL);
        ADD(gang, "desiredMembers", s->gang_desired ? INT(s->gang_desired) : NULL);
        ADD(gang, "requiredMembers", s->gang_required ? INT(s->gang_required) : NULL);
    }
    ADD(o, "gang", gang);
#undef ADD
#undef BOOL
#undef INT
    if (failed) {
        json_object_put(o);
        return NULL;
    }
    return o;
}
