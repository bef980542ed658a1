/* SPDX-License-Identifier: Apache-2.0
 *
 * Provisioned pools (see reconcile.h and core/provision.h): node requests recorded as
 * GPUNodeClaims and followed through their lifecycle. TensorFusion creates no machines itself
 * here (no cloud API): whatever provisions nodes for the cluster (a cloud's node groups,
 * cluster-api, an operator, a person) serves a claim by registering a Node labelled
 * tensor-fusion.ai/node-provisioner=<claim> or named as the claim's spec.nodeName.
 *
 *   Pending  created for a pool short of capacity; status.message says what it waits for
 *   Bound    a Node serves it: status.instanceID = the Node's spec.providerID, else its name
 *   (gone)   a Bound claim whose Node left the cluster is deleted (the pool asks again if it is
 *            still short)
 */
#include "controller/reconcile_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/yamljson.h"
#include "core/provision.h"
#include "core/quantity.h"

#include <stdio.h>
#include <string.h>

#define LABEL_OWNER "tensor-fusion.ai/owner"
#define LABEL_NODE_CLASS "tensor-fusion.ai/node-class"
#define LABEL_PROVISIONER "tensor-fusion.ai/node-provisioner"

static bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The Node serving CLAIM, borrowed from NODES, or NULL. */
static json_object *serving_node(json_object *claim, json_object *nodes)
{
    const char *name = tf_json_str(claim, "metadata", "name", NULL);
    const char *want = tf_json_str(claim, "spec", "nodeName", NULL);
    for (size_t i = 0; i < json_object_array_length(nodes); i++) {
        json_object *n = json_object_array_get_idx(nodes, i);
        if (str_eq(tf__rc_lbl(n, LABEL_PROVISIONER), name) ||
            str_eq(tf_json_str(n, "metadata", "name", NULL), want))
            return n;
    }
    return NULL;
}

/* An Event on the claim's pool (its owner label), else on the claim. */
static json_object *event_target(struct tf_reconciler *r, json_object *claim)
{
    json_object *pool = tf_informer_get(r->src.pools, NULL, tf__rc_lbl(claim, LABEL_OWNER));
    return pool ? pool : json_object_get(claim);
}

static void follow_claims(struct tf_reconciler *r, json_object *claims, json_object *nodes)
{
    char err[256];
    for (size_t i = 0; i < json_object_array_length(claims); i++) {
        json_object *c = json_object_array_get_idx(claims, i);
        const char *name = tf_json_str(c, "metadata", "name", NULL);
        const char *phase = tf_json_str(c, "status", "phase", NULL);
        json_object *node = serving_node(c, nodes);
        if (node && !str_eq(phase, "Bound")) {
            const char *nn = tf_json_str(node, "metadata", "name", NULL);
            const char *pid = tf_json_str(node, "spec", "providerID", NULL);
            json_object *st = json_object_new_object();
            json_object_object_add(st, "phase", json_object_new_string("Bound"));
            json_object_object_add(st, "instanceID", json_object_new_string(pid ? pid : nn));
            json_object_object_add(st, "message", json_object_new_string(""));
            tf__rc_put_status(r, &tf_k8s_gpunodeclaims, c, st);
            json_object *t = event_target(r, c);
            tf__rc_event(r, t, "Normal", "GPUNodeClaimBound", "node %s serves GPUNodeClaim %s", nn,
                         name);
            json_object_put(t);
        } else if (!node && str_eq(phase, "Bound")) {
            if (tf_k8s_delete(r->c, &tf_k8s_gpunodeclaims, NULL, name, err, sizeof(err)) == 0) {
                r->writes++;
                json_object *t = event_target(r, c);
                tf__rc_event(r, t, "Normal", "GPUNodeClaimReleased",
                             "the node of GPUNodeClaim %s (%s) left the cluster", name,
                             tf_json_str(c, "status", "instanceID", NULL)
                                 ? tf_json_str(c, "status", "instanceID", NULL)
                                 : "?");
                json_object_put(t);
            } else {
                tf_log(TF_LOG_WARN, "reconcile", "cannot delete GPUNodeClaim %s: %s", name, err);
            }
        } else if (!node && !tf_json_str(c, "status", "message", NULL)) {
            char msg[512];
            const char *want = tf_json_str(c, "spec", "nodeName", NULL);
            snprintf(msg, sizeof(msg), "waiting for a node labelled %s=%s%s%s to join the cluster",
                     LABEL_PROVISIONER, name, want ? " or named " : "", want ? want : "");
            json_object *st = json_object_new_object();
            json_object_object_add(st, "phase", json_object_new_string("Pending"));
            json_object_object_add(st, "message", json_object_new_string(msg));
            tf__rc_put_status(r, &tf_k8s_gpunodeclaims, c, st);
        }
    }
}

/* Upstream's capacity types from Karpenter's values. */
static const char *capacity_type(const char *v)
{
    if (str_eq(v, "on-demand"))
        return "OnDemand";
    if (str_eq(v, "spot"))
        return "Spot";
    if (str_eq(v, "reserved"))
        return "Reserved";
    return v;
}

/* spec.{region, zone, instanceType, capacityType} from the first value of the pool's
 * gpuRequirements with those keys (the provisioner's choice is recorded, not made here). */
static void requirements(json_object *spec, json_object *reqs)
{
    static const struct {
        const char *key, *field;
    } map[] = {{"topology.kubernetes.io/region", "region"},
               {"topology.kubernetes.io/zone", "zone"},
               {"node.kubernetes.io/instance-type", "instanceType"},
               {"karpenter.sh/capacity-type", "capacityType"}};
    for (size_t i = 0; reqs && i < json_object_array_length(reqs); i++) {
        json_object *q = json_object_array_get_idx(reqs, i);
        const char *op = tf_json_str(q, "operator", NULL);
        json_object *vals = tf_json_path(q, "values", NULL);
        if ((op && strcmp(op, "In") != 0) || !vals || !json_object_array_length(vals))
            continue;
        const char *v = json_object_get_string(json_object_array_get_idx(vals, 0));
        for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
            if (str_eq(tf_json_str(q, "key", NULL), map[k].key) &&
                !tf_json_path(spec, map[k].field, NULL))
                json_object_object_add(spec, map[k].field,
                                       json_object_new_string(k == 3 ? capacity_type(v) : v));
    }
}

static json_object *new_claim(json_object *pool, const char *cls,
                              const struct tf_provision_decision *d)
{
    const char *pname = tf_json_str(pool, "metadata", "name", NULL);
    const char *uid = tf_json_str(pool, "metadata", "uid", NULL);
    char buf[300];
    json_object *obj = json_object_new_object(), *meta = json_object_new_object(),
                *labels = json_object_new_object(), *spec = json_object_new_object(),
                *ref = json_object_new_object();
    json_object_object_add(obj, "apiVersion", json_object_new_string("tensor-fusion.ai/v1"));
    json_object_object_add(obj, "kind", json_object_new_string("GPUNodeClaim"));
    snprintf(buf, sizeof(buf), "%.200s-", pname);
    json_object_object_add(meta, "generateName", json_object_new_string(buf));
    json_object_object_add(labels, LABEL_OWNER, json_object_new_string(pname));
    json_object_object_add(labels, LABEL_NODE_CLASS, json_object_new_string(cls));
    json_object_object_add(meta, "labels", labels);
    if (uid) {
        json_object *owners = json_object_new_array(), *o = json_object_new_object();
        json_object_object_add(o, "apiVersion", json_object_new_string("tensor-fusion.ai/v1"));
        json_object_object_add(o, "kind", json_object_new_string("GPUPool"));
        json_object_object_add(o, "name", json_object_new_string(pname));
        json_object_object_add(o, "uid", json_object_new_string(uid));
        json_object_array_add(owners, o);
        json_object_object_add(meta, "ownerReferences", owners);
    }
    json_object_object_add(obj, "metadata", meta);
    json_object_object_add(ref, "group", json_object_new_string("tensor-fusion.ai"));
    json_object_object_add(ref, "version", json_object_new_string("v1"));
    json_object_object_add(ref, "kind", json_object_new_string("GPUNodeClass"));
    json_object_object_add(ref, "name", json_object_new_string(cls));
    json_object_object_add(spec, "nodeClassRef", ref);
    tf_quantity_format_milli(d->tflops_milli, buf, sizeof(buf));
    json_object_object_add(spec, "tflopsOffered", json_object_new_string(buf));
    tf_quantity_format_bytes(d->vram_bytes, buf, sizeof(buf));
    json_object_object_add(spec, "vramOffered", json_object_new_string(buf));
    json_object_object_add(spec, "gpuDeviceOffered", json_object_new_int(d->gpus));
    requirements(spec, tf_json_path(pool, "spec", "nodeManagerConfig", "nodeProvisioner",
                                    "gpuRequirements", NULL));
    json_object_object_add(obj, "spec", spec);
    return obj;
}

/* Events that would repeat every pass are recorded once per pool and reason. */
static void note(struct tf_reconciler *r, json_object *pool, const char *type, const char *reason,
                 const char *msg)
{
    const char *pname = tf_json_str(pool, "metadata", "name", NULL);
    char key[512];
    snprintf(key, sizeof(key), "%s\n%s", reason, msg);
    json_object *prev = NULL;
    if (json_object_object_get_ex(r->prov_notes, pname, &prev) &&
        str_eq(json_object_get_string(prev), key))
        return;
    json_object_object_add(r->prov_notes, pname, json_object_new_string(key));
    tf__rc_event(r, pool, type, reason, "%s", msg);
}

static void provision_pool(struct tf_reconciler *r, json_object *pool, json_object *claims)
{
    const char *pname = tf_json_str(pool, "metadata", "name", NULL);
    struct tf_provision_pool in;
    char err[512];
    memset(&in, 0, sizeof(in));
    if (tf_pool_efficiency_parse(tf_json_path(pool, "spec", NULL), "spec", &in.eff, err,
                                 sizeof(err)))
        return; /* invalid settings are reported by the efficiency reconcilers */
    if (in.eff.provisioning != TF_PROVISION_PROVISIONED) {
        /* Only a provisioning controller has something to stop: say so, never silently. */
        if (in.eff.max.tflops_set || in.eff.max.vram_set) {
            char msg[300];
            snprintf(msg, sizeof(msg),
                     "spec.capacityConfig.maxResources has no effect: provisioningMode is %s "
                     "(only a Provisioned pool creates nodes, and stops at maxResources)",
                     tf_provisioning_mode_name(in.eff.provisioning));
            note(r, pool, "Warning", "MaxResourcesIgnored", msg);
        }
        return;
    }
    in.running = str_eq(tf_json_str(pool, "status", "phase", NULL), "Running");
    in.total_tflops_milli = tf__rc_q_milli(tf_json_str(pool, "status", "totalTFlops", NULL));
    in.total_vram = tf__rc_q_bytes(tf_json_str(pool, "status", "totalVRAM", NULL));
    in.avail_tflops_milli = tf__rc_q_milli(tf_json_str(pool, "status", "availableTFlops", NULL));
    in.avail_vram = tf__rc_q_bytes(tf_json_str(pool, "status", "availableVRAM", NULL));
    json_object *v = tf_json_path(pool, "status", "totalNodes", NULL);
    in.nodes = v ? json_object_get_int(v) : 0;
    v = tf_json_path(pool, "status", "totalGPUs", NULL);
    in.gpus = v ? json_object_get_int(v) : 0;
    for (size_t i = 0; i < json_object_array_length(claims); i++) {
        json_object *c = json_object_array_get_idx(claims, i);
        struct tf_node_claim nc;
        if (!str_eq(tf__rc_lbl(c, LABEL_OWNER), pname) ||
            str_eq(tf_json_str(c, "status", "phase", NULL), "Bound") ||
            tf_node_claim_parse(tf_json_path(c, "spec", NULL), &nc, err, sizeof(err)))
            continue;
        in.pending_tflops_milli += nc.tflops_milli;
        in.pending_vram += nc.vram_bytes;
    }
    struct tf_provision_decision d;
    tf_provision_plan(&in, &d);
    if (d.max_reached) {
        note(r, pool, "Warning", "MaxResourceConstraintReached", d.reason);
        return;
    }
    if (!d.request)
        return;
    const char *cls =
        tf_json_str(pool, "spec", "nodeManagerConfig", "nodeProvisioner", "nodeClass", NULL);
    json_object *nc = cls ? tf_informer_get(r->src.nodeclasses, NULL, cls) : NULL;
    if (!nc) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s, but %s", d.reason,
                 cls ? "its GPUNodeClass does not exist"
                     : "spec.nodeManagerConfig.nodeProvisioner.nodeClass is not set");
        note(r, pool, "Warning", "ProvisioningBlocked", msg);
        return;
    }
    json_object_put(nc);
    json_object *obj = new_claim(pool, cls, &d), *made = NULL;
    if (tf_k8s_create(r->c, &tf_k8s_gpunodeclaims, NULL, obj, &made, err, sizeof(err)) == 0) {
        r->writes++;
        tf__rc_event(r, pool, "Normal", "ManagedNodeRequested",
                     "%s: GPUNodeClaim %s for %d GPUs of class %s", d.reason,
                     tf_json_str(made, "metadata", "name", NULL), d.gpus, cls);
        /* Counted as pending by this pass's successors before the informer sees it. */
        json_object_array_add(claims, made);
    } else {
        tf_log(TF_LOG_WARN, "reconcile", "cannot create GPUNodeClaim for pool %s: %s", pname, err);
    }
    json_object_put(obj);
}

void tf__rc_provision(struct tf_reconciler *r)
{
    if (!r->src.claims || !r->src.nodes || !r->src.nodeclasses)
        return;
    json_object *claims = tf_informer_snapshot(r->src.claims),
                *nodes = tf_informer_snapshot(r->src.nodes),
                *pools = tf_informer_snapshot(r->src.pools);
    follow_claims(r, claims, nodes);
    for (size_t i = 0; i < json_object_array_length(pools); i++)
        provision_pool(r, json_object_array_get_idx(pools, i), claims);
    json_object_put(pools);
    json_object_put(nodes);
    json_object_put(claims);
}
