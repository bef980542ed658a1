/* SPDX-License-Identifier: Apache-2.0
 *
 * Node requests of Provisioned pools: the decision and GPUNodeClaim specs (see provision.h).
 */
#include "core/provision.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/quantity.h"

#include <stdio.h>
#include <string.h>

static int64_t gap(int64_t want, int64_t have)
{
    return want > have ? want - have : 0;
}

void tf_provision_plan(const struct tf_provision_pool *in, struct tf_provision_decision *out)
{
    memset(out, 0, sizeof(*out));
    const struct tf_pool_efficiency *e = &in->eff;
    int64_t gt = 0, gv = 0;
    const char *which = NULL;
    if (e->min.tflops_set)
        gt = gap(e->min.tflops_milli, in->total_tflops_milli);
    if (e->min.vram_set)
        gv = gap(e->min.vram_bytes, in->total_vram);
    if (gt || gv) {
        which = "minResources";
    } else if (in->running) {
        if (e->warm.tflops_set)
            gt = gap(e->warm.tflops_milli, in->avail_tflops_milli);
        if (e->warm.vram_set)
            gv = gap(e->warm.vram_bytes, in->avail_vram);
        if (gt || gv)
            which = "warmResources";
    }
    if (!which)
        return;
    char t[48], v[48];
    tf_quantity_format_milli(gt, t, sizeof(t));
    tf_quantity_format_bytes(gv, v, sizeof(v));
    if ((e->max.tflops_set && in->total_tflops_milli >= e->max.tflops_milli) ||
        (e->max.vram_set && in->total_vram >= e->max.vram_bytes)) {
        out->max_reached = true;
        snprintf(out->reason, sizeof(out->reason),
                 "short of %s by %s TFLOPS / %s VRAM, but the pool is at maxResources", which, t,
                 v);
        return;
    }
    /* What Pending claims bring is on its way. */
    int64_t rt = gap(gt, in->pending_tflops_milli), rv = gap(gv, in->pending_vram);
    if (!rt && !rv) {
        snprintf(out->reason, sizeof(out->reason),
                 "short of %s by %s TFLOPS / %s VRAM, already requested", which, t, v);
        return;
    }
    out->request = true;
    out->tflops_milli = rt;
    out->vram_bytes = rv;
    out->gpus = in->nodes > 0 && in->gpus >= in->nodes ? in->gpus / in->nodes : 1;
    tf_quantity_format_milli(rt, t, sizeof(t));
    tf_quantity_format_bytes(rv, v, sizeof(v));
    snprintf(out->reason, sizeof(out->reason), "short of %s by %s TFLOPS / %s VRAM", which, t, v);
}

int tf_node_claim_parse(json_object *spec, struct tf_node_claim *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!spec || !json_object_is_type(spec, json_type_object)) {
        tf_errf(err, errlen, "spec: missing");
        return TF_EINVAL;
    }
    int rc;
    json_object *v;
    if (!(v = tf_json_path(spec, "tflopsOffered", NULL))) {
        tf_errf(err, errlen, "spec.tflopsOffered: required");
        return TF_EINVAL;
    }
    if ((rc = tf_json_quantity_milli(v, &out->tflops_milli, "spec.tflopsOffered", err, errlen)))
        return rc;
    if (!(v = tf_json_path(spec, "vramOffered", NULL))) {
        tf_errf(err, errlen, "spec.vramOffered: required");
        return TF_EINVAL;
    }
    if ((rc = tf_json_quantity_bytes(v, &out->vram_bytes, "spec.vramOffered", err, errlen)))
        return rc;
    v = tf_json_path(spec, "gpuDeviceOffered", NULL);
    if (!v || !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
        json_object_get_int64(v) > 1024) {
        tf_errf(err, errlen, "spec.gpuDeviceOffered: %s",
                v ? "must be a count 0..1024" : "required");
        return TF_EINVAL;
    }
    out->gpus = (int)json_object_get_int64(v);
    out->node_name = tf_json_str(spec, "nodeName", NULL);
    out->node_class = tf_json_str(spec, "nodeClassRef", "name", NULL);
    return 0;
}
