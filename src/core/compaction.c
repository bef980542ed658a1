/* SPDX-License-Identifier: Apache-2.0
 *
 * Node compaction planning (see compaction.h).
 */
#include "core/compaction.h"

#include "common/strutil.h"
#include "core/quantity.h"
#include "core/timeutil.h"

#include <stdio.h>
#include <string.h>

static const char *const verdict_names[] = {
    "Release",      "HasWorkers", "NoGPUNode",          "NotRunning",        "TooYoung",
    "DoNotDisrupt", "Deleting",   "BelowWarmResources", "BelowMinResources",
};

const char *tf_compaction_verdict_name(enum tf_compaction_verdict v)
{
    return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v]
                                                                          : "Unknown";
}

const char *tf_compaction_action(enum tf_provisioning_mode mode)
{
    return mode == TF_PROVISION_KARPENTER ? "delete its Karpenter NodeClaim"
                                          : "label " TF_LABEL_SHOULD_DELETE "=true";
}

static void fmt_t(int64_t milli, char *buf, size_t len)
{
    tf_quantity_format_milli(milli, buf, len);
}

static void fmt_v(int64_t bytes, char *buf, size_t len)
{
    tf_quantity_format_bytes(bytes, buf, len);
}

/* Sort order of the decisions: eligible/released nodes first, largest first (VRAM, TFLOPS,
 * name, index); then the rejected ones in input order. */
static int dec_cmp(const struct tf_compaction_node *nodes, const struct tf_compaction_decision *a,
                   const struct tf_compaction_decision *b)
{
    bool ea = a->verdict == TF_COMPACT_RELEASE, eb = b->verdict == TF_COMPACT_RELEASE;
    if (ea != eb)
        return ea ? -1 : 1;
    if (ea) {
        const struct tf_compaction_node *x = &nodes[a->node], *y = &nodes[b->node];
        if (x->vram_bytes != y->vram_bytes)
            return x->vram_bytes > y->vram_bytes ? -1 : 1;
        if (x->tflops_milli != y->tflops_milli)
            return x->tflops_milli > y->tflops_milli ? -1 : 1;
        int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
        if (c)
            return c;
    }
    return a->node < b->node ? -1 : a->node > b->node;
}

static void swap_dec(struct tf_compaction_decision *a, struct tf_compaction_decision *b)
{
    struct tf_compaction_decision t = *a;
    *a = *b;
    *b = t;
}

static void sift(const struct tf_compaction_node *nodes, struct tf_compaction_decision *d,
                 size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && dec_cmp(nodes, &d[c], &d[c + 1]) < 0)
            c++;
        if (dec_cmp(nodes, &d[root], &d[c]) >= 0)
            return;
        swap_dec(&d[root], &d[c]);
        root = c;
    }
}

/* Heap sort (no allocation, total order so the result is deterministic). */
static void sort_dec(const struct tf_compaction_node *nodes, struct tf_compaction_decision *d,
                     size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(nodes, d, i, n);
    for (size_t end = n; end-- > 1;) {
        swap_dec(&d[0], &d[end]);
        sift(nodes, d, 0, end);
    }
}

size_t tf_compaction_plan(const struct tf_pool_efficiency *cfg,
                          const struct tf_compaction_node *nodes, size_t n, int64_t now_ms,
                          struct tf_compaction_decision *out, struct tf_compaction_summary *sum)
{
    struct tf_compaction_summary s = {0};
    for (size_t i = 0; i < n; i++) {
        const struct tf_compaction_node *nd = &nodes[i];
        if (nd->deleting || !nd->gpunode_found || !nd->running)
            continue;
        s.total_tflops_milli += nd->tflops_milli;
        s.total_vram_bytes += nd->vram_bytes;
        s.avail_tflops_milli += nd->avail_tflops_milli;
        s.avail_vram_bytes += nd->avail_vram_bytes;
    }
    int64_t tt = s.total_tflops_milli, tv = s.total_vram_bytes, at = s.avail_tflops_milli,
            av = s.avail_vram_bytes;

    /* Rules about the node itself. */
    for (size_t i = 0; i < n; i++) {
        const struct tf_compaction_node *nd = &nodes[i];
        struct tf_compaction_decision *o = &out[i];
        o->node = i;
        o->verdict = TF_COMPACT_RELEASE;
        o->reason[0] = 0;
        char d[32];
        if (nd->deleting) {
            o->verdict = TF_COMPACT_DELETING;
            snprintf(o->reason, sizeof(o->reason), "already being deleted");
        } else if (nd->workers) {
            o->verdict = TF_COMPACT_HAS_WORKERS;
            snprintf(o->reason, sizeof(o->reason), "%u TensorFusion worker%s running", nd->workers,
                     nd->workers == 1 ? "" : "s");
        } else if (!nd->gpunode_found) {
            o->verdict = TF_COMPACT_NO_GPUNODE;
            snprintf(o->reason, sizeof(o->reason), "no GPUNode for this node");
        } else if (!nd->running) {
            o->verdict = TF_COMPACT_NOT_RUNNING;
            snprintf(o->reason, sizeof(o->reason), "GPUNode is not Running");
        } else if (now_ms - nd->created_ms < TF_COMPACTION_MIN_NODE_AGE_MS) {
            o->verdict = TF_COMPACT_TOO_YOUNG;
            int64_t age = now_ms - nd->created_ms;
            tf_duration_format(age > 0 ? age : 0, d, sizeof(d));
            snprintf(o->reason, sizeof(o->reason), "GPUNode created %s ago (under 5m)", d);
        } else if (nd->do_not_disrupt) {
            o->verdict = TF_COMPACT_DO_NOT_DISRUPT;
            snprintf(o->reason, sizeof(o->reason), "label %s: \"true\"", TF_LABEL_DO_NOT_DISRUPT);
        }
    }
    sort_dec(nodes, out, n);

    /* Capacity rules, greedily over the eligible prefix, each release shrinking the pool. */
    size_t nreleased = 0;
    for (size_t k = 0; k < n && out[k].verdict == TF_COMPACT_RELEASE; k++) {
        struct tf_compaction_decision *o = &out[k];
        const struct tf_compaction_node *nd = &nodes[o->node];
        int64_t nat = at - nd->avail_tflops_milli, nav = av - nd->avail_vram_bytes;
        int64_t ntt = tt - nd->tflops_milli, ntv = tv - nd->vram_bytes;
        const struct tf_capacity *w = &cfg->warm, *m = &cfg->min;
        char a[32], b[32];
        if (w->tflops_set && nat < w->tflops_milli) {
            o->verdict = TF_COMPACT_BELOW_WARM;
            fmt_t(nat, a, sizeof(a));
            fmt_t(w->tflops_milli, b, sizeof(b));
            snprintf(o->reason, sizeof(o->reason),
                     "free TFLOPS would drop to %s, below warmResources.tflops %s", a, b);
        } else if (w->vram_set && nav < w->vram_bytes) {
            o->verdict = TF_COMPACT_BELOW_WARM;
            fmt_v(nav, a, sizeof(a));
            fmt_v(w->vram_bytes, b, sizeof(b));
            snprintf(o->reason, sizeof(o->reason),
                     "free VRAM would drop to %s, below warmResources.vram %s", a, b);
        } else if (m->tflops_set && ntt < m->tflops_milli) {
            o->verdict = TF_COMPACT_BELOW_MIN;
            fmt_t(ntt, a, sizeof(a));
            fmt_t(m->tflops_milli, b, sizeof(b));
            snprintf(o->reason, sizeof(o->reason),
                     "pool TFLOPS would drop to %s, below minResources.tflops %s", a, b);
        } else if (m->vram_set && ntv < m->vram_bytes) {
            o->verdict = TF_COMPACT_BELOW_MIN;
            fmt_v(ntv, a, sizeof(a));
            fmt_v(m->vram_bytes, b, sizeof(b));
            snprintf(o->reason, sizeof(o->reason),
                     "pool VRAM would drop to %s, below minResources.vram %s", a, b);
        } else {
            at = nat;
            av = nav;
            tt = ntt;
            tv = ntv;
            fmt_t(at, a, sizeof(a));
            fmt_v(av, b, sizeof(b));
            snprintf(o->reason, sizeof(o->reason),
                     "no workers, Running for over 5m; %s (the pool keeps %s TFLOPS and %s VRAM "
                     "free)",
                     tf_compaction_action(cfg->provisioning), a, b);
            /* Keep released nodes first, in release order. */
            if (k != nreleased)
                swap_dec(&out[nreleased], o);
            nreleased++;
        }
    }
    /* Rejections (static and capacity) in input order after the released ones. */
    if (n > nreleased)
        sort_dec(nodes, out + nreleased, n - nreleased);
    /* sort_dec puts RELEASE first: none are left in the tail, so the tail is by index. */
    if (sum) {
        s.nreleased = nreleased;
        s.after_total_tflops_milli = tt;
        s.after_total_vram_bytes = tv;
        s.after_avail_tflops_milli = at;
        s.after_avail_vram_bytes = av;
        *sum = s;
    }
    return nreleased;
}

enum tf_manual_compaction tf_compaction_manual(const char *value, const char *last_handled,
                                               int64_t now_ms, char *why, size_t whylen)
{
    if (!value) {
        tf_errf(why, whylen, "no %s annotation", TF_ANN_MANUAL_COMPACTION);
        return TF_MANUAL_NONE;
    }
    if (last_handled && !strcmp(value, last_handled)) {
        tf_errf(why, whylen, "%s=%s already triggered a run", TF_ANN_MANUAL_COMPACTION, value);
        return TF_MANUAL_HANDLED;
    }
    int64_t t;
    char err[160];
    if (tf_rfc3339_parse(value, &t, TF_ANN_MANUAL_COMPACTION, err, sizeof(err))) {
        tf_errf(why, whylen, "%s: ignored", err);
        return TF_MANUAL_INVALID;
    }
    if (now_ms - t > TF_MANUAL_COMPACTION_VALID_MS) {
        tf_errf(why, whylen, "%s=%s is older than 3s: ignored", TF_ANN_MANUAL_COMPACTION, value);
        return TF_MANUAL_STALE;
    }
    if (t - now_ms > TF_MANUAL_COMPACTION_VALID_MS) {
        tf_errf(why, whylen, "%s=%s is more than 3s in the future: ignored",
                TF_ANN_MANUAL_COMPACTION, value);
        return TF_MANUAL_FUTURE;
    }
    tf_errf(why, whylen, "%s=%s: compaction runs now", TF_ANN_MANUAL_COMPACTION, value);
    return TF_MANUAL_TRIGGER;
}

bool tf_compaction_due(const struct tf_pool_efficiency *cfg, int64_t last_run_ms, int64_t now_ms,
                       int64_t *next_ms)
{
    int64_t period =
        cfg->compaction_period_ms > 0 ? cfg->compaction_period_ms : TF_COMPACTION_DEFAULT_PERIOD_MS;
    if (last_run_ms <= 0 || now_ms - last_run_ms >= period || now_ms < last_run_ms) {
        if (next_ms)
            *next_ms = now_ms + period;
        return true;
    }
    if (next_ms)
        *next_ms = last_run_ms + period;
    return false;
}
