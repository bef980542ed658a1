/* SPDX-License-Identifier: Apache-2.0
 *
 * The allocator's full invariant check (tf_alloc_check, see alloc.h).
 */
#include "core/alloc_int.h"

#include "common/err.h"
#include "common/strutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- invariants ---------- */

struct ns_sum {
    char ns[TF_KEY_MAX];
    size_t len;
    struct tf_quota_usage u;
};

int tf_alloc_check(const struct tf_alloc *a, char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    int rc = TF_ESTATE;
    struct ns_sum *sums = NULL;
    size_t nsums = 0;
    uint32_t *workers = calloc(c->nnodes ? c->nnodes : 1, sizeof(*workers));
    if (!workers) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    for (uint32_t gi = 0; gi < c->ngpus; gi++) {
        const struct tf_gpu *g = &c->gpus[gi];
        int64_t t = 0, v = 0, lt = 0, lv = 0;
        unsigned k = 0, pc = 0, pm = 0, np = 0;
        uint32_t prev = TF_NONE;
        for (uint32_t ref = g->head; ref != TF_NONE; ref = slot_ref(a, ref)->next) {
            const struct tf_alloc_slot *s = slot_ref(a, ref);
            const struct tf_alloc_record *r = rec(a, REF_ID(ref));
            if (!r->live || r->suspended || s->gpu != gi || s->prev != prev ||
                REF_POS(ref) >= r->ngpus || k > a->live) {
                tf_errf(err, errlen, "GPU %s: corrupt workload list", g->uuid);
                goto out;
            }
            if (c->policy == TF_ISOPOL_DYNAMIC && r->isolation != g->mode) {
                tf_errf(err, errlen, "GPU %s: mode %s but holds %s pod %s", g->uuid,
                        tf_isolation_name((enum tf_isolation)g->mode),
                        tf_isolation_name((enum tf_isolation)r->isolation), tf_alloc_record_key(r));
                goto out;
            }
            t += s->tflops;
            v += s->vram;
            lt += s->lim_tflops;
            lv += s->lim_vram;
            const struct tf_partition_template *tp = tf__alloc_slot_tpl(a, s);
            if (tp) {
                pc += tp->compute_slots;
                pm += tp->memory_slots;
                np++;
            }
            k++;
            prev = ref;
        }
        if (g->avail_tflops < 0 || g->avail_vram < 0 || g->avail_tflops > g->cap_tflops ||
            g->avail_vram > g->cap_vram) {
            tf_errf(err, errlen, "GPU %s: available out of 0..capacity", g->uuid);
            goto out;
        }
        if (t != g->cap_tflops - g->avail_tflops || v != g->cap_vram - g->avail_vram) {
            tf_errf(err, errlen,
                    "GPU %s: reservations (%lld mTFLOPS, %lld B) != capacity - available "
                    "(%lld, %lld)",
                    g->uuid, (long long)t, (long long)v,
                    (long long)(g->cap_tflops - g->avail_tflops),
                    (long long)(g->cap_vram - g->avail_vram));
            goto out;
        }
        if (lt != g->lim_tflops || lv != g->lim_vram || k != g->nworkloads ||
            pc != g->part_compute || pm != g->part_memory || np != g->nparts) {
            tf_errf(err, errlen, "GPU %s: limits, workload count or partition slots disagree",
                    g->uuid);
            goto out;
        }
        const struct tf_partition_profile *pp = tf_cluster_profile(c, g);
        if (np && (!pp || pc > pp->compute_total || pm > pp->memory_total)) {
            tf_errf(err, errlen, "GPU %s: partition slots over the total", g->uuid);
            goto out;
        }
        bool want_none = c->policy == TF_ISOPOL_DYNAMIC && k == 0;
        if ((c->policy == TF_ISOPOL_DYNAMIC && want_none != (g->mode == TF_ISOLATION_UNSET)) ||
            (c->policy == TF_ISOPOL_STATIC && g->mode != c->nodes[g->node].static_mode)) {
            tf_errf(err, errlen, "GPU %s: isolation mode %s does not follow the policy", g->uuid,
                    g->mode ? tf_isolation_name((enum tf_isolation)g->mode) : "none");
            goto out;
        }
    }
    uint32_t live = 0;
    for (uint32_t id = 0; id < a->limit; id++) {
        const struct tf_alloc_record *r = rec(a, id);
        if (!r->live)
            continue;
        live++;
        const char *key = tf_alloc_record_key(r);
        if (r->node >= c->nnodes) {
            tf_errf(err, errlen, "pod %s: bad node", key);
            goto out;
        }
        for (unsigned i = 0; i < r->ngpus; i++) {
            const struct tf_alloc_slot *s = tf_alloc_record_slot(r, i);
            if (s->gpu >= c->ngpus || c->gpus[s->gpu].node != r->node) {
                tf_errf(err, errlen, "pod %s: slot %u not on its node", key, i);
                goto out;
            }
        }
        if (r->suspended)
            continue;
        workers[r->node]++;
        if (r->quota_exempt || !a->q)
            continue;
        size_t j;
        for (j = 0; j < nsums; j++)
            if (sums[j].len == r->ns_len && !memcmp(sums[j].ns, key, r->ns_len))
                break;
        if (j == nsums) {
            struct ns_sum *ns2 = realloc(sums, (nsums + 1) * sizeof(*sums));
            if (!ns2) {
                tf_errf(err, errlen, "out of memory");
                rc = TF_ENOMEM;
                goto out;
            }
            sums = ns2;
            memset(&sums[j], 0, sizeof(sums[j]));
            memcpy(sums[j].ns, key, r->ns_len);
            sums[j].len = r->ns_len;
            nsums++;
        }
        sums[j].u.req_tflops += r->charged.req_tflops;
        sums[j].u.req_vram += r->charged.req_vram;
        sums[j].u.lim_tflops += r->charged.lim_tflops;
        sums[j].u.lim_vram += r->charged.lim_vram;
        sums[j].u.workers += r->charged.workers;
    }
    /* The key index maps each live record's own key to its id: every entry points at a
     * live record whose key pointer it holds (so no two entries share a record), and there
     * are as many entries as live records. */
    for (size_t i = 0; i < a->by_key.cap; i++) {
        const struct tf_strmap_slot *sl = &a->by_key.slots[i];
        if (!sl->key)
            continue;
        const struct tf_alloc_record *r = sl->val < a->limit ? rec(a, sl->val) : NULL;
        if (!r || !r->live || sl->key != tf_alloc_record_key(r)) {
            tf_errf(err, errlen, "key index entry %s points at the wrong record", sl->key);
            goto out;
        }
    }
    if (live != a->live || a->by_key.len != a->live) {
        tf_errf(err, errlen, "live record count %u, counter %u, index %zu", live, a->live,
                a->by_key.len);
        goto out;
    }
    for (uint32_t ni = 0; ni < c->nnodes; ni++) {
        struct tf_node want;
        tf_cluster_node_aggregate(c, ni, &want);
        const struct tf_node *n = &c->nodes[ni];
        if (want.running_gpus != n->running_gpus || want.idle_gpus != n->idle_gpus ||
            want.max_free_tflops != n->max_free_tflops || want.max_free_vram != n->max_free_vram ||
            memcmp(want.sum, n->sum, sizeof(want.sum)) || workers[ni] != n->nworkers) {
            tf_errf(err, errlen, "node %s: aggregates out of date", n->name);
            goto out;
        }
        if (tf_cluster_index_check(c, ni)) {
            tf_errf(err, errlen, "node %s: misplaced in its pool's utilisation index", n->name);
            goto out;
        }
    }
    /* Every namespace's usage is the sum of its live, charged records (zero when none). */
    for (size_t e = 0; a->q && e < tf_quota_entries(a->q); e++) {
        struct tf_quota_usage u, want = {0};
        const char *ns = tf_quota_entry(a->q, e, &u);
        size_t len = strlen(ns);
        for (size_t j = 0; j < nsums; j++)
            if (sums[j].len == len && !memcmp(sums[j].ns, ns, len))
                want = sums[j].u;
        if (memcmp(&u, &want, sizeof(u))) {
            tf_errf(err, errlen, "namespace %s: quota usage disagrees with the records", ns);
            goto out;
        }
    }
    for (size_t j = 0; j < nsums; j++) {
        struct tf_quota_usage u = tf_quota_usage_of(a->q, sums[j].ns, sums[j].len);
        if (memcmp(&u, &sums[j].u, sizeof(u))) {
            tf_errf(err, errlen, "namespace %.*s: quota usage disagrees with the records",
                    (int)sums[j].len, sums[j].ns);
            goto out;
        }
    }
    rc = 0;
out:
    free(workers);
    free(sums);
    return rc;
}
