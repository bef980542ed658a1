/* SPDX-License-Identifier: Apache-2.0
 *
 * What-if copies of a cluster and its allocations (see alloc_copy.h).
 */
#include "core/alloc_copy.h"

#include "common/err.h"
#include "common/strutil.h"

#include <string.h>

void tf_alloc_record_request(const struct tf_alloc *a, const struct tf_alloc_record *r,
                             struct tf_alloc_request *req, char *ns, char *name)
{
    const struct tf_cluster *c = tf_alloc_cluster(a);
    const char *key = tf_alloc_record_key(r);
    size_t nl = r->ns_len < TF_KEY_MAX ? r->ns_len : TF_KEY_MAX - 1;
    memcpy(ns, key, nl);
    ns[nl] = 0;
    tf_strlcpy(name, key + r->ns_len + (key[r->ns_len] == '/'), TF_KEY_MAX);
    memset(req, 0, sizeof(*req));
    req->ns = ns;
    req->name = name;
    req->pool = r->pool < c->npools ? c->pools[r->pool].name : NULL;
    req->res = r->res;
    req->gpu_count = r->ngpus;
    req->isolation = (enum tf_isolation)r->isolation;
    req->qos = (enum tf_qos)r->qos;
    req->dedicated = r->dedicated;
    req->remote = r->remote;
    const struct tf_alloc_slot *s0 = tf_alloc_record_slot(r, 0);
    if (s0 && s0->part >= 0) {
        const struct tf_partition_profile *p = tf_cluster_profile(c, &c->gpus[s0->gpu]);
        if (p && s0->part < p->ntemplates)
            req->partition_template = p->templates[s0->part].id;
    }
}

static int copy_cluster(const struct tf_cluster *c, struct tf_cluster *d, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < c->npools; i++) {
        uint32_t id;
        int rc = tf_cluster_add_pool(d, c->pools[i].name, &c->pools[i].cfg, &id, err, errlen);
        if (rc)
            return rc;
    }
    for (unsigned m = 0; m < 64; m++)
        if (c->profiles[m]) {
            int rc = tf_cluster_set_partition_profile(d, c->profiles[m], err, errlen);
            if (rc)
                return rc;
        }
    struct tf_gpu_spec gs[TF_NODE_MAX_GPUS];
    for (uint32_t ni = 0; ni < c->nnodes; ni++) {
        const struct tf_node *n = &c->nodes[ni];
        for (unsigned k = 0; k < n->ngpus; k++) {
            const struct tf_gpu *g = &c->gpus[n->gpu_first + k];
            uint64_t links = 0;
            for (uint64_t m = g->nvlink; m; m &= m - 1)
                links |= UINT64_C(1) << c->gpus[n->gpu_first + __builtin_ctzll(m)].index;
            gs[k] = (struct tf_gpu_spec){g->uuid,  g->model, g->index,      g->numa,
                                         g->phase, links,    g->cap_tflops, g->cap_vram};
        }
        struct tf_node_spec ns = {
            n->name, (enum tf_isolation)n->static_mode, n->host_mem, n->max_workers, gs, n->ngpus};
        uint32_t id;
        int rc = tf_cluster_add_node(d, n->pool, &ns, &id, err, errlen);
        if (rc)
            return rc;
        if (id != ni) {
            tf_errf(err, errlen, "copy: node %s got id %u, not %u", n->name, id, ni);
            return TF_ESTATE;
        }
    }
    return 0;
}

int tf_alloc_copy(const struct tf_alloc *a, struct tf_cluster **c_out, struct tf_alloc **a_out,
                  char *err, size_t errlen)
{
    *c_out = NULL;
    *a_out = NULL;
    const struct tf_cluster *c = tf_alloc_cluster(a);
    struct tf_cluster *d = tf_cluster_new(c->policy);
    struct tf_alloc *b = d ? tf_alloc_new(d, NULL) : NULL;
    int rc = TF_ENOMEM;
    if (!b) {
        tf_errf(err, errlen, "out of memory");
        goto fail;
    }
    rc = copy_cluster(c, d, err, errlen);
    if (rc)
        goto fail;
    uint32_t lim = tf_alloc_id_limit(a);
    for (uint32_t id = 0; id < lim; id++) {
        const struct tf_alloc_record *r = tf_alloc_record_at(a, id);
        if (!r || !r->live || r->suspended)
            continue;
        char ns[TF_KEY_MAX], name[TF_KEY_MAX];
        struct tf_alloc_request req;
        tf_alloc_record_request(a, r, &req, ns, name);
        const char *uuids[TF_NODE_MAX_GPUS];
        unsigned n = r->ngpus < TF_NODE_MAX_GPUS ? r->ngpus : TF_NODE_MAX_GPUS;
        for (unsigned i = 0; i < n; i++)
            uuids[i] = c->gpus[tf_alloc_record_slot(r, i)->gpu].uuid;
        char why[256];
        rc = tf_alloc_restore(b, &req, c->nodes[r->node].name, uuids, n, why, sizeof(why));
        if (rc) {
            tf_errf(err, errlen, "copy: %s", why);
            rc = rc == TF_ENOMEM ? TF_ENOMEM : TF_ESTATE;
            goto fail;
        }
    }
    *c_out = d;
    *a_out = b;
    return 0;
fail:
    tf_alloc_destroy(b);
    tf_cluster_destroy(d);
    return rc;
}
