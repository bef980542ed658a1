/* SPDX-License-Identifier: Apache-2.0
 *
 * struct tf_spec -> the `tfctl spec -o json` object (the stable contract of docs/spec.md).
 * Numbers are written exactly: TFLOPS and percents as decimals without rounding, bytes as
 * integers.
 */
#include "core/spec.h"

#include "core/quantity.h"

#include <stdlib.h>

/* A decimal number from thousandths (3 decimals max), written exactly. */
static json_object *milli_number(int64_t milli)
{
    char buf[32];
    tf_quantity_format_milli(milli, buf, sizeof(buf));
    return json_object_new_double_s((double)milli / 1000.0, buf);
}

static json_object *str_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

static json_object *strv(char *const *v, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

static json_object *res_json(const struct tf_spec *s, const struct tf_spec_res *r)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object *tflops = NULL;
    if (r->tflops_set)
        tflops = milli_number(r->tflops_milli);
    else if (r->percent_set && s->model)
        tflops = milli_number(tf_percent_to_tflops(r->percent_bp, s->model->tflops_milli));
    json_object_object_add(o, "tflops", tflops);
    json_object_object_add(o, "computePercent",
                           r->percent_set ? milli_number((int64_t)r->percent_bp * 10) : NULL);
    json_object_object_add(o, "vramBytes",
                           r->vram_set ? json_object_new_int64(r->vram_bytes) : NULL);
    return o;
}

json_object *tf_spec_to_json(const struct tf_spec *s)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    bool on = s->enabled;
#define ADD(k, v) json_object_object_add(o, k, v)
    ADD("name", str_or_null(s->name));
    ADD("namespace", str_or_null(s->ns));
    ADD("enabled", json_object_new_boolean(on));
    ADD("poolName", on ? str_or_null(s->pool) : NULL);
    ADD("isolation", on ? str_or_null(tf_isolation_name(s->isolation)) : NULL);
    ADD("qos", on ? str_or_null(tf_qos_name(s->qos)) : NULL);
    ADD("isLocalGPU", on ? json_object_new_boolean(s->is_local_gpu) : NULL);
    ADD("gpuCount", on ? json_object_new_int(s->gpu_count) : NULL);
    ADD("requests", on ? res_json(s, &s->requests) : NULL);
    ADD("limits", on ? res_json(s, &s->limits) : NULL);
    ADD("gpuModel", on ? str_or_null(s->gpu_model) : NULL);
    ADD("vendor", on ? str_or_null(s->vendor) : NULL);
    json_object *idx = json_object_new_array();
    for (int i = 0; idx && i < s->ngpu_indices; i++)
        json_object_array_add(idx, json_object_new_int(s->gpu_indices[i]));
    ADD("gpuIndices", idx);
    ADD("dedicatedGPU", on ? json_object_new_boolean(s->dedicated_gpu) : NULL);
    ADD("workloadProfile", on ? str_or_null(s->workload_profile) : NULL);
    ADD("workload", on ? str_or_null(s->workload) : NULL);
    ADD("enabledReplicas",
        on && s->has_enabled_replicas ? json_object_new_int(s->enabled_replicas) : NULL);
    json_object *as = NULL;
    if (on && (as = json_object_new_object())) {
        json_object_object_add(as, "enabled", json_object_new_boolean(s->autoscale));
        json_object_object_add(as, "target",
                               str_or_null(tf_autoscale_target_name(s->autoscale_target)));
    }
    ADD("autoscale", as);
    ADD("standaloneWorkerMode", on && s->has_standalone_worker_mode
                                    ? json_object_new_boolean(s->standalone_worker_mode)
                                    : NULL);
    ADD("disableFeatures", strv(s->disable_feature_names, s->ndisable_feature_names));
    json_object *ctr = json_object_new_object();
    for (size_t i = 0; ctr && i < s->ncontainers; i++)
        json_object_object_add(ctr, s->containers[i].name,
                               json_object_new_int(s->containers[i].gpu_count));
    ADD("containers", ctr);
    ADD("warnings", strv(s->warnings, s->nwarnings));
    /* Extensions beyond the list (additive). */
    ADD("kind", str_or_null(s->kind));
    ADD("optedOut", json_object_new_boolean(s->opted_out));
    ADD("autoMigrated", json_object_new_boolean(s->auto_migrated));
    ADD("wholeGPU", on ? json_object_new_boolean(s->whole_gpu) : NULL);
    ADD("injectContainers", strv(s->inject_containers, s->ninject_containers));
    json_object *mig = json_object_new_array();
    for (size_t i = 0; mig && i < s->ncontainers; i++)
        if (s->containers[i].migrated)
            json_object_array_add(mig, json_object_new_string(s->containers[i].name));
    ADD("migratedContainers", mig);
    json_object *ids = NULL;
    for (size_t i = 0; i < s->ncontainers; i++) {
        if (!s->containers[i].gpu_ids)
            continue;
        if (!ids && !(ids = json_object_new_object()))
            break;
        json_object_object_add(ids, s->containers[i].name,
                               strv(s->containers[i].gpu_ids, s->containers[i].ngpu_ids));
    }
    ADD("containerGPUs", ids);
#undef ADD
    return o;
}
