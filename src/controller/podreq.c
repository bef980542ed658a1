/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod -> scheduling request through the core workload spec (see podreq.h).
 */
#include "controller/podreq.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/spec.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(((struct tf_podreq *)0)->gpu_ids_key[0]) >= TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX,
               "room for a tensor-fusion.ai/gpu-ids-<container> key");

int tf_podreq_from_pod(json_object *pod, struct tf_podreq *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *comp = tf_json_str(pod, "metadata", "labels", TF_KEY_PREFIX "component", NULL);
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    const char *uid = tf_json_str(pod, "metadata", "uid", NULL);
    tf_strlcpy(out->ns, ns ? ns : "default", sizeof(out->ns));
    tf_strlcpy(out->name, name ? name : "", sizeof(out->name));
    tf_strlcpy(out->uid, uid ? uid : "", sizeof(out->uid));
    if (!comp || (strcmp(comp, "client") != 0 && strcmp(comp, "worker") != 0))
        return 0;
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    const char *pool = tf_json_str(pod, "metadata", "annotations", TF_ANN_GPUPOOL, NULL);
    pd.pool_name = pool;
    struct tf_spec s;
    int rc = tf_spec_parse(pod, NULL, &pd, &s, err, errlen);
    if (rc)
        return rc;
    if (!s.enabled) {
        tf_spec_free(&s);
        return 0;
    }
    out->managed = true;
    out->remote_client = !s.is_local_gpu && strcmp(comp, "client") == 0;
    tf_strlcpy(out->pool, s.pool ? s.pool : (pool ? pool : ""), sizeof(out->pool));
    out->req_pct = s.requests.percent_set;
    out->lim_pct = s.limits.percent_set;
    out->req_tflops = s.requests.tflops_set ? s.requests.tflops_milli : 0;
    out->lim_tflops = s.limits.tflops_set ? s.limits.tflops_milli : 0;
    out->req_bp = s.requests.percent_set ? s.requests.percent_bp : 0;
    out->lim_bp = s.limits.percent_set ? s.limits.percent_bp : 0;
    out->req_vram = s.requests.vram_set ? s.requests.vram_bytes : 0;
    out->lim_vram = s.limits.vram_set ? s.limits.vram_bytes : 0;
    out->gpu_count = s.gpu_count;
    switch (s.isolation) {
    case TF_ISOLATION_HARD:
        out->iso = TF_PODREQ_HARD;
        break;
    case TF_ISOLATION_SHARED:
        out->iso = TF_PODREQ_SHARED;
        break;
    case TF_ISOLATION_PARTITIONED:
        out->iso = TF_PODREQ_PARTITIONED;
        break;
    default:
        out->iso = TF_PODREQ_SOFT;
        break;
    }
    switch (s.qos) {
    case TF_QOS_LOW:
        out->qos = TF_PODREQ_LOW;
        break;
    case TF_QOS_HIGH:
        out->qos = TF_PODREQ_HIGH;
        break;
    case TF_QOS_CRITICAL:
        out->qos = TF_PODREQ_CRITICAL;
        break;
    default:
        out->qos = TF_PODREQ_MEDIUM;
        break;
    }
    out->dedicated = s.dedicated_gpu;
    tf_strlcpy(out->partition, s.partition ? s.partition : "", sizeof(out->partition));
    tf_strlcpy(out->model, s.gpu_model ? s.gpu_model : "", sizeof(out->model));
    tf_strlcpy(out->vendor, s.vendor ? s.vendor : "", sizeof(out->vendor));
    out->nindices = s.ngpu_indices;
    for (int i = 0; i < s.ngpu_indices && i < 128; i++)
        out->indices[i] = s.gpu_indices[i];
    int sum = 0;
    for (size_t i = 0; i < s.ncontainers && i < TF_PODREQ_MAX_CONTAINERS; i++) {
        sum += s.containers[i].gpu_count;
        tf_strlcpy(out->gpu_containers[i], s.containers[i].name, sizeof(out->gpu_containers[i]));
        tf_spec_container_gpu_ids_key(s.containers[i].name, out->gpu_ids_key[i]);
        out->ngpu_containers++;
    }
    out->split = tf_spec_split(&s);
    const char *gkey = tf_json_str(pod, "metadata", "annotations", TF_ANN_GANG_GROUP_KEY, NULL);
    const char *greq =
        tf_json_str(pod, "metadata", "annotations", TF_ANN_GANG_REQUIRED_MEMBERS, NULL);
    char *end = NULL;
    long long required = greq ? strtoll(greq, &end, 10) : 0;
    if (s.gang && gkey && greq && end != greq && *end == '\0' &&
        strlen(gkey) < sizeof(out->gang_key) && required >= 2 && required <= INT32_MAX) {
        out->gang = true;
        out->gang_required = (int32_t)required;
        out->gang_timeout_ms = s.gang_timeout_ms;
        tf_strlcpy(out->gang_key, gkey, sizeof(out->gang_key));
    }
    if (s.ncontainers > 1 && sum == s.gpu_count && s.ncontainers <= TF_PODREQ_MAX_CONTAINERS) {
        for (size_t i = 0; i < s.ncontainers; i++) {
            tf_strlcpy(out->containers[i].name, s.containers[i].name,
                       sizeof(out->containers[i].name));
            out->containers[i].gpus = s.containers[i].gpu_count;
        }
        out->ncontainers = (int)s.ncontainers;
    }
    tf_spec_free(&s);
    return 0;
}
