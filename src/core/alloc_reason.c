/* SPDX-License-Identifier: Apache-2.0
 *
 * The allocator's reasons: caller-provided reason buffers and the per-node sentence saying at
 * which filter stage a node failed, as kube-scheduler shows it (see alloc.h).
 */
#include "core/alloc_int.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------- reasons ---------- */

void tf_reasons_init(struct tf_reasons *rb, char *buf, size_t cap)
{
    rb->buf = buf;
    rb->cap = cap;
    rb->len = 0;
    rb->n = 0;
    if (buf && cap)
        buf[0] = '\0';
}

const char *tf_reasons_next(const struct tf_reasons *rb, const char *prev)
{
    if (!rb || !rb->n)
        return NULL;
    if (!prev)
        return rb->buf;
    const char *next = prev + strlen(prev) + 1;
    return next < rb->buf + rb->len ? next : NULL;
}

/* Appends a formatted reason; returns it, or NULL when RB is full. */
const char *tf__alloc_reason_add(struct tf_reasons *rb, const char *fmt, ...)
{
    if (!rb || !rb->buf || rb->len + 4 >= rb->cap)
        return NULL;
    char *dst = rb->buf + rb->len;
    size_t room = rb->cap - rb->len;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (w < 0)
        return NULL;
    if ((size_t)w >= room) { /* cut: end in "..." */
        memcpy(dst + room - 4, "...", 4);
        w = (int)room - 1;
    }
    rb->len += (size_t)w + 1;
    rb->n++;
    return dst;
}

const char *tf__alloc_reason_put(struct tf_reasons *rb, const char *s)
{
    if (!rb || !rb->buf || rb->len + 4 >= rb->cap)
        return NULL;
    char *dst = rb->buf + rb->len;
    size_t room = rb->cap - rb->len, w = strlen(s);
    if (w >= room) { /* cut: end in "..." */
        memcpy(dst, s, room - 4);
        memcpy(dst + room - 4, "...", 4);
        w = room - 1;
    } else {
        memcpy(dst, s, w + 1);
    }
    rb->len += w + 1;
    rb->n++;
    return dst;
}

/* ---------- reasons per node ---------- */

static void list_models(const struct tf_cluster *c, const struct tf_node *n, uint64_t only,
                        char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n->ngpus && o + 1 < len; i++) {
        const struct tf_gpu *g = &c->gpus[n->gpu_first + i];
        if (!(only & (UINT64_C(1) << i)))
            continue;
        bool dup = false;
        for (unsigned j = 0; j < i && !dup; j++)
            dup = (only & (UINT64_C(1) << j)) && c->gpus[n->gpu_first + j].model == g->model;
        if (!dup) {
            int w = snprintf(buf + o, len - o, "%s%s", o ? "," : "", g->model->name);
            o = w > 0 ? o + (size_t)w : o;
        }
    }
}

static void list_vendors(const struct tf_cluster *c, const struct tf_node *n, uint64_t only,
                         char *buf, size_t len)
{
    size_t o = 0;
    uint32_t seen = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n->ngpus && o + 1 < len; i++) {
        const struct tf_gpu *g = &c->gpus[n->gpu_first + i];
        if (!(only & (UINT64_C(1) << i)) || (seen & (UINT32_C(1) << g->vendor_idx)))
            continue;
        seen |= UINT32_C(1) << g->vendor_idx;
        int w = snprintf(buf + o, len - o, "%s%s", o ? "," : "", tf_vendors[g->vendor_idx]);
        o = w > 0 ? o + (size_t)w : o;
    }
}

/* Writes why P does not fit node N (N fails) into BUF. */
void tf__alloc_node_reason(const struct tf_cluster *c, const struct plan *p,
                           const struct tf_node *n, char *buf, size_t len)
{
    const struct tf_alloc_request *req = p->req;
    if (n->pool != p->pool) {
        tf_errf(buf, len, "node %s: in pool %s, the pod asks for pool %s", n->name,
                c->pools[n->pool].name, c->pools[p->pool].name);
        return;
    }
    /* Survivors of each stage, in order. */
    enum stage first[TF_NODE_MAX_GPUS];
    struct need needs[TF_NODE_MAX_GPUS];
    for (unsigned i = 0; i < n->ngpus; i++)
        first[i] = tf__alloc_gpu_stage(c, p, &c->gpus[n->gpu_first + i], &needs[i]);
    static const enum stage order[] = {ST_PHASE, ST_ISO, ST_INDEX, ST_WHOLE,
                                       ST_PART,  ST_RES, ST_MODEL, ST_VENDOR};
    uint64_t alive = n->ngpus == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n->ngpus) - 1;
    for (size_t s = 0; s < sizeof(order) / sizeof(order[0]); s++) {
        uint64_t next = 0;
        for (unsigned i = 0; i < n->ngpus; i++)
            if ((alive & (UINT64_C(1) << i)) && first[i] != order[s])
                next |= UINT64_C(1) << i;
        if (next) {
            alive = next;
            continue;
        }
        unsigned in = (unsigned)__builtin_popcountll(alive), tot = n->ngpus;
        char m1[96], m2[96], m3[48], m4[48];
        switch (order[s]) {
        case ST_PHASE:
            tf_errf(buf, len, "node %s: gpu 0/%u in phase Running", n->name, tot);
            return;
        case ST_ISO:
            if (c->policy == TF_ISOPOL_STATIC) {
                tf_errf(buf, len, "node %s: node isolation mode is %s, the pod needs %s", n->name,
                        tf_isolation_name(n->static_mode), tf_isolation_name(p->iso));
            } else {
                size_t o = 0;
                uint32_t seen = 0;
                m1[0] = '\0';
                for (unsigned i = 0; i < tot; i++) {
                    unsigned md = c->gpus[n->gpu_first + i].mode;
                    if ((alive & (UINT64_C(1) << i)) && md && !(seen & (1u << md))) {
                        seen |= 1u << md;
                        int w = snprintf(m1 + o, sizeof(m1) - o, "%s%s", o ? "," : "",
                                         tf_isolation_name((enum tf_isolation)md));
                        o = w > 0 && (size_t)w < sizeof(m1) - o ? o + (size_t)w : o;
                    }
                }
                tf_errf(buf, len,
                        "node %s: gpu %u/%u eligible, none compatible with isolation %s (GPUs in "
                        "use as %s)",
                        n->name, in, tot, tf_isolation_name(p->iso), m1);
            }
            return;
        case ST_INDEX: {
            size_t o = 0;
            m1[0] = '\0';
            for (unsigned i = 0; i < req->n_indices && o + 12 < sizeof(m1); i++)
                o += (size_t)snprintf(m1 + o, sizeof(m1) - o, "%s%d", i ? "," : "",
                                      req->gpu_indices[i]);
            tf_errf(buf, len, "node %s: gpu %u/%u eligible, none has an index in gpu-indices %s",
                    n->name, in, tot, m1);
            return;
        }
        case ST_WHOLE:
            tf_errf(buf, len,
                    "node %s: gpu %u/%u eligible, %s needs a whole idle GPU, none is idle", n->name,
                    in, tot, req->dedicated ? "dedicated-gpu" : "shared");
            return;
        case ST_PART: {
            bool any_profile = false;
            for (unsigned i = 0; i < tot; i++)
                if ((alive & (UINT64_C(1) << i)) &&
                    tf_cluster_profile(c, &c->gpus[n->gpu_first + i]))
                    any_profile = true;
            list_models(c, n, alive, m1, sizeof(m1));
            if (!any_profile) {
                tf_errf(buf, len, "node %s: gpu %u/%u eligible, %s cannot be partitioned", n->name,
                        in, tot, m1);
                return;
            }
            const struct tf_gpu *g0 = &c->gpus[n->gpu_first + __builtin_ctzll(alive)];
            tf_quantity_format_milli(tf_alloc_req_tflops(&p->res, g0->cap_tflops), m3, sizeof(m3));
            tf_quantity_format_bytes(p->res.req_vram, m4, sizeof(m4));
            tf_errf(buf, len,
                    "node %s: gpu %u/%u eligible, no %s partition template%s%s fits %s TFLOPS / "
                    "%s in the free slots",
                    n->name, in, tot, m1, req->partition_template ? " " : "",
                    req->partition_template ? req->partition_template : "", m3, m4);
            return;
        }
        case ST_RES: {
            int64_t mfv = 0, mft = 0, mfp = 0, need_v = 0, need_t = 0;
            bool both = false; /* some GPU has the request free: the limits failed */
            for (unsigned i = 0; i < tot; i++) {
                if (!(alive & (UINT64_C(1) << i)))
                    continue;
                const struct tf_gpu *g = &c->gpus[n->gpu_first + i];
                const struct need *nd = &needs[i];
                need_v = nd->v;
                need_t = nd->t;
                if (g->avail_vram > mfv)
                    mfv = g->avail_vram;
                if (g->avail_tflops > mft)
                    mft = g->avail_tflops;
                int64_t fp = frac_bp(g->avail_tflops, g->cap_tflops);
                if (fp > mfp)
                    mfp = fp;
                if (g->avail_tflops >= nd->t && g->avail_vram >= nd->v)
                    both = true;
            }
            char head[300];
            tf_errf(head, sizeof(head), "node %s: gpu %u/%u available", n->name, in, tot);
            if (mfv < need_v) {
                tf_quantity_format_bytes(need_v, m3, sizeof(m3));
                tf_quantity_format_bytes(mfv, m4, sizeof(m4));
                tf_errf(buf, len, "%s, insufficient VRAM: need %s, max free %s", head, m3, m4);
            } else if (p->res.req_by_percent && mfp < p->res.req_percent) {
                tf_errf(buf, len, "%s, insufficient TFLOPS: need %d.%02d%%, max free %d.%02d%%",
                        head, p->res.req_percent / 100, p->res.req_percent % 100, (int)(mfp / 100),
                        (int)(mfp % 100));
            } else if (!p->res.req_by_percent && mft < need_t) {
                tf_quantity_format_milli(need_t, m3, sizeof(m3));
                tf_quantity_format_milli(mft, m4, sizeof(m4));
                tf_errf(buf, len, "%s, insufficient TFLOPS: need %s, max free %s", head, m3, m4);
            } else if (!both) {
                tf_quantity_format_milli(need_t, m3, sizeof(m3));
                tf_quantity_format_bytes(need_v, m4, sizeof(m4));
                tf_errf(buf, len, "%s, no GPU has %s TFLOPS and %s VRAM free at once", head, m3,
                        m4);
            } else {
                if (p->res.lim_by_percent)
                    snprintf(m1, sizeof(m1), "%d.%02d%%", p->res.lim_percent / 100,
                             p->res.lim_percent % 100);
                else
                    tf_quantity_format_milli(p->res.lim_tflops, m1, sizeof(m1));
                tf_quantity_format_bytes(p->res.lim_vram, m2, sizeof(m2));
                tf_errf(buf, len,
                        "%s, limits %s TFLOPS / %s VRAM exceed the oversubscribed capacity "
                        "(tflopsOversellRatio %d%%, vramExpandToHostMem %d%%)",
                        head, m1, m2, p->cfg->tflops_oversell_pct,
                        p->cfg->vram_expand_host_mem_pct);
            }
            return;
        }
        case ST_MODEL:
            list_models(c, n, alive, m1, sizeof(m1));
            tf_errf(buf, len, "node %s: gpu %u/%u eligible, none of model %s (node has %s)",
                    n->name, in, tot, req->model, m1);
            return;
        case ST_VENDOR:
            list_vendors(c, n, alive, m1, sizeof(m1));
            tf_errf(buf, len, "node %s: gpu %u/%u eligible, none of vendor %s (node has %s)",
                    n->name, in, tot, req->vendor, m1);
            return;
        default:
            break;
        }
    }
    unsigned eligible = (unsigned)__builtin_popcountll(alive);
    if (eligible < p->count) {
        tf_errf(buf, len, "node %s: needs %u GPUs on one node, %u eligible", n->name, p->count,
                eligible);
        return;
    }
    if (n->max_workers && n->nworkers >= n->max_workers) {
        tf_errf(buf, len, "node %s: max workers per node reached (%u/%u)", n->name, n->nworkers,
                n->max_workers);
        return;
    }
    tf_errf(buf, len, "node %s: does not fit", n->name); /* not reached when N fails */
}

const char *tf__alloc_node_reason_add(const struct tf_cluster *c, const struct plan *p,
                                      const struct tf_node *n, struct tf_reasons *rb)
{
    char buf[512];
    tf__alloc_node_reason(c, p, n, buf, sizeof(buf));
    return tf__alloc_reason_add(rb, "%s", buf);
}
