/* SPDX-License-Identifier: Apache-2.0
 *
 * What our C code makes of custom resources, for the conformance test (test_conformance.py):
 * reads a JSON array of objects as the API server stored them (defaults applied) and prints,
 * per object, the meaning our parsers give it, as JSON:
 *
 *   GPUPool                 pool efficiency settings (core/efficiency.h, the controller's)
 *   TensorFusionCluster     the same per gpuPools[] entry
 *   WorkloadProfile         the profile (core/spec.h tf_profile_parse) and its autoscaling
 *   TensorFusionWorkload    the autoscaler's view (controller/effplan.h)
 *   SchedulingConfigTemplate placement mode and each vertical scaling rule's autoscaling
 *   GPUResourceQuota        the quota (core/quota.h, as tfctl simulate reads quotas)
 *   GPUNodeClaim            the node request (core/provision.h, as tf-controller reads it)
 *
 * A parser's refusal is printed as {"error": "..."}. Usage: crd_meaning FILE.json
 */
#include "common/err.h"
#include "common/yamljson.h"
#include "controller/effplan.h"
#include "core/autoscale.h"
#include "core/cluster.h"
#include "core/cluster_yaml.h"
#include "core/efficiency.h"
#include "core/provision.h"
#include "core/quota.h"
#include "core/spec.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static json_object *num(int64_t v, bool set)
{
    return set ? json_object_new_int64(v) : NULL;
}

static json_object *capacity(const struct tf_capacity *c)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tflopsMilli", num(c->tflops_milli, c->tflops_set));
    json_object_object_add(o, "vramBytes", num(c->vram_bytes, c->vram_set));
    return o;
}

static json_object *err_obj(const char *err)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(err));
    return o;
}

static json_object *efficiency(json_object *spec)
{
    struct tf_pool_efficiency e;
    char err[512];
    if (tf_pool_efficiency_parse(spec, "spec", &e, err, sizeof(err)))
        return err_obj(err);
    json_object *o = json_object_new_object(), *d = json_object_new_object();
    json_object_object_add(o, "provisioningMode",
                           json_object_new_string(tf_provisioning_mode_name(e.provisioning)));
    json_object_object_add(o, "compactionPeriodMs", json_object_new_int64(e.compaction_period_ms));
    json_object_object_add(o, "min", capacity(&e.min));
    json_object_object_add(o, "warm", capacity(&e.warm));
    json_object_object_add(o, "max", capacity(&e.max));
    json_object_object_add(d, "enabled", json_object_new_boolean(e.defrag.enabled));
    json_object_object_add(d, "schedule", json_object_new_string(e.defrag.schedule));
    json_object_object_add(d, "timezone", json_object_new_string(e.defrag.timezone));
    json_object_object_add(d, "maxDurationMs", json_object_new_int64(e.defrag.max_duration_ms));
    json_object_object_add(d, "utilizationThresholdPercent",
                           json_object_new_int(e.defrag.utilization_threshold_pct));
    json_object_object_add(o, "defrag", d);
    return o;
}

static json_object *res(const struct tf_spec_res *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tflopsMilli", num(r->tflops_milli, r->tflops_set));
    json_object_object_add(o, "percentBp", num(r->percent_bp, r->percent_set));
    json_object_object_add(o, "vramBytes", num(r->vram_bytes, r->vram_set));
    return o;
}

static json_object *autoscaling(json_object *as, const char *path)
{
    struct tf_autoscale_config c;
    char err[512];
    if (tf_autoscale_config_parse(as, path, &c, err, sizeof(err)))
        return err_obj(err);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "enable", json_object_new_boolean(c.enable));
    json_object_object_add(o, "target", json_object_new_string(tf_autoscale_target_name(c.target)));
    json_object_object_add(o, "margin", json_object_new_double(c.margin));
    json_object_object_add(o, "targetCompute", json_object_new_double(c.target_compute));
    json_object_object_add(o, "historyMs", json_object_new_int64(c.history_ms));
    json_object_object_add(o, "cronRules", json_object_new_int((int)c.nrules));
    return o;
}

static json_object *profile(json_object *obj)
{
    struct tf_profile p;
    char err[512];
    if (tf_profile_parse(obj, &p, err, sizeof(err)))
        return err_obj(err);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "requests", res(&p.requests));
    json_object_object_add(o, "limits", res(&p.limits));
    json_object_object_add(o, "pool", p.pool ? json_object_new_string(p.pool) : NULL);
    json_object_object_add(o, "qos", p.qos ? json_object_new_string(tf_qos_name(p.qos)) : NULL);
    json_object_object_add(o, "isolation",
                           p.isolation ? json_object_new_string(tf_isolation_name(p.isolation))
                                       : NULL);
    json_object_object_add(o, "gpuCount", num(p.gpu_count, p.gpu_count > 0));
    json_object_object_add(o, "isLocalGPU",
                           p.is_local_gpu_set ? json_object_new_boolean(p.is_local_gpu) : NULL);
    json_object_object_add(o, "replicas", num(p.replicas, p.replicas_set));
    json_object *w = json_object_new_array();
    for (size_t i = 0; i < p.nwarnings; i++)
        json_object_array_add(w, json_object_new_string(p.warnings[i]));
    json_object_object_add(o, "warnings", w);
    json_object_object_add(o, "autoScaling",
                           autoscaling(tf_json_path(obj, "spec", "autoScalingConfig", NULL),
                                       "spec.autoScalingConfig"));
    tf_profile_free(&p);
    return o;
}

static json_object *workload(json_object *obj)
{
    struct tf_effplan_workload w;
    char err[512];
    json_object *pods = json_object_new_array();
    int rc = tf_effplan_workload_read(obj, pods, &w, err, sizeof(err));
    json_object_put(pods);
    if (rc)
        return err_obj(err);
    if (tf_effplan_workload_config(&w, NULL, NULL, err, sizeof(err))) {
        tf_effplan_workload_free(&w);
        return err_obj(err);
    }
    json_object *o = json_object_new_object(), *r = json_object_new_object();
    json_object_object_add(r, "reqTflopsMilli", json_object_new_int64(w.original.req_tflops));
    json_object_object_add(r, "limTflopsMilli", json_object_new_int64(w.original.lim_tflops));
    json_object_object_add(r, "reqVramBytes", json_object_new_int64(w.original.req_vram));
    json_object_object_add(r, "limVramBytes", json_object_new_int64(w.original.lim_vram));
    json_object_object_add(o, "original", r);
    json_object_object_add(o, "computeByPercent", json_object_new_boolean(w.compute_by_percent));
    json_object_object_add(o, "autoscaleEnabled", json_object_new_boolean(w.cfg.enable));
    tf_effplan_workload_free(&w);
    return o;
}

static json_object *scheduling(json_object *obj)
{
    json_object *o = json_object_new_object();
    const char *mode = tf_json_str(obj, "spec", "placement", "mode", NULL);
    enum tf_placement_mode m;
    json_object_object_add(o, "placement",
                           mode && tf_placement_parse(mode, &m) == 0
                               ? json_object_new_string(tf_placement_name(m))
                               : err_obj("placement.mode"));
    json_object *rules = tf_json_path(obj, "spec", "verticalScalingRules", NULL),
                *out = json_object_new_array();
    for (size_t i = 0; rules && i < json_object_array_length(rules); i++)
        json_object_array_add(
            out, autoscaling(tf_json_path(json_object_array_get_idx(rules, i), "autoScaling", NULL),
                             "verticalScalingRules[].autoScaling"));
    json_object_object_add(o, "rules", out);
    return o;
}

static json_object *qres(const struct tf_quota_res *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tflopsMilli", num(r->tflops, r->tflops != TF_QUOTA_UNSET));
    json_object_object_add(o, "vramBytes", num(r->vram, r->vram != TF_QUOTA_UNSET));
    return o;
}

/* The quota's spec as one entry of a cluster description's quotas (the same shape). */
static json_object *quota(json_object *obj)
{
    const char *ns = tf_json_str(obj, "metadata", "namespace", NULL);
    json_object *desc = json_object_new_object(), *qs = json_object_new_array(), *q = NULL;
    if (json_object_deep_copy(tf_json_path(obj, "spec", NULL), &q, NULL) || !ns)
        return err_obj("no spec or namespace");
    json_object_object_add(q, "namespace", json_object_new_string(ns));
    json_object_array_add(qs, q);
    json_object_object_add(desc, "quotas", qs);
    json_object_object_add(desc, "pools",
                           json_tokener_parse("[{\"name\": \"p\", \"nodes\": [{\"name\": \"n\", "
                                              "\"gpus\": [{\"model\": \"L4\"}]}]}]"));
    struct tf_cluster *c = NULL;
    struct tf_quota_set *set = NULL;
    char err[512];
    int rc = tf_cluster_from_json(desc, &c, &set, err, sizeof(err));
    json_object_put(desc);
    if (rc)
        return err_obj(err);
    const struct tf_quota_spec *s = tf_quota_get(set, ns, strlen(ns));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "totalRequests", qres(&s->total_requests));
    json_object_object_add(o, "totalLimits", qres(&s->total_limits));
    json_object_object_add(o, "maxWorkers", json_object_new_int(s->max_workers));
    json_object_object_add(o, "alertThresholdPercent", json_object_new_int(s->alert_threshold_pct));
    json_object_object_add(o, "maxGPUCount", json_object_new_int(s->max_gpu_count));
    json_object_object_add(o, "defaultRequests", qres(&s->default_requests));
    json_object_object_add(o, "defaultLimits", qres(&s->default_limits));
    tf_cluster_destroy(c);
    tf_quota_set_destroy(set);
    return o;
}

static json_object *claim(json_object *obj)
{
    struct tf_node_claim c;
    char err[512];
    if (tf_node_claim_parse(tf_json_path(obj, "spec", NULL), &c, err, sizeof(err)))
        return err_obj(err);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tflopsMilli", json_object_new_int64(c.tflops_milli));
    json_object_object_add(o, "vramBytes", json_object_new_int64(c.vram_bytes));
    json_object_object_add(o, "gpus", json_object_new_int(c.gpus));
    json_object_object_add(o, "nodeName", c.node_name ? json_object_new_string(c.node_name) : NULL);
    json_object_object_add(o, "nodeClass",
                           c.node_class ? json_object_new_string(c.node_class) : NULL);
    return o;
}

static json_object *meaning(json_object *obj)
{
    const char *kind = tf_json_str(obj, "kind", NULL);
    if (!kind)
        return NULL;
    if (!strcmp(kind, "GPUPool"))
        return efficiency(tf_json_path(obj, "spec", NULL));
    if (!strcmp(kind, "TensorFusionCluster")) {
        json_object *o = json_object_new_object(),
                    *gp = tf_json_path(obj, "spec", "gpuPools", NULL);
        for (size_t i = 0; gp && i < json_object_array_length(gp); i++) {
            json_object *e = json_object_array_get_idx(gp, i);
            const char *n = tf_json_str(e, "name", NULL);
            json_object_object_add(o, n ? n : "",
                                   efficiency(tf_json_path(e, "specTemplate", NULL)));
        }
        return o;
    }
    if (!strcmp(kind, "WorkloadProfile"))
        return profile(obj);
    if (!strcmp(kind, "TensorFusionWorkload"))
        return workload(obj);
    if (!strcmp(kind, "SchedulingConfigTemplate"))
        return scheduling(obj);
    if (!strcmp(kind, "GPUResourceQuota"))
        return quota(obj);
    if (!strcmp(kind, "GPUNodeClaim"))
        return claim(obj);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: crd_meaning FILE.json\n");
        return 2;
    }
    json_object *in = json_object_from_file(argv[1]);
    if (!in || !json_object_is_type(in, json_type_array)) {
        fprintf(stderr, "crd_meaning: %s: not a JSON array\n", argv[1]);
        return 2;
    }
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(in); i++) {
        json_object *obj = json_object_array_get_idx(in, i), *m = meaning(obj);
        if (!m)
            continue;
        json_object *e = json_object_new_object();
        json_object_object_add(e, "kind", json_object_new_string(tf_json_str(obj, "kind", NULL)));
        const char *name = tf_json_str(obj, "metadata", "name", NULL);
        json_object_object_add(e, "name", json_object_new_string(name ? name : ""));
        json_object_object_add(e, "meaning", m);
        json_object_array_add(out, e);
    }
    puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY));
    json_object_put(out);
    json_object_put(in);
    return 0;
}
