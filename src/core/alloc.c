/* SPDX-License-Identifier: Apache-2.0
 *
 * The GPU allocator's record store and the operations that change the state: place, reserve,
 * restore, release, resize, suspend/resume (see alloc.h for the contract, alloc_int.h for the
 * layout of the files).
 */
#include "core/alloc_int.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- records ---------- */

const char *tf_alloc_record_key(const struct tf_alloc_record *r)
{
    return r->key_heap ? r->key_heap : r->key_inline;
}

const struct tf_alloc_slot *tf_alloc_record_slot(const struct tf_alloc_record *r, unsigned i)
{
    return i < r->ngpus ? (r->slots_heap ? &r->slots_heap[i] : &r->slots_inline[i]) : NULL;
}

struct tf_alloc *tf_alloc_new(struct tf_cluster *c, struct tf_quota_set *q)
{
    struct tf_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->c = c;
    a->q = q;
    a->free_head = TF_NONE;
    tf_strmap_init(&a->by_key);
    return a;
}

void tf_alloc_destroy(struct tf_alloc *a)
{
    if (!a)
        return;
    for (uint32_t id = 0; id < a->limit; id++) {
        struct tf_alloc_record *r = rec(a, id);
        free(r->key_heap);
        free(r->slots_heap);
    }
    for (uint32_t i = 0; i < a->nchunks; i++)
        free(a->chunks[i]);
    free(a->chunks);
    tf_strmap_free(&a->by_key);
    free(a->stale);
    free(a);
}

static uint32_t rec_new(struct tf_alloc *a)
{
    uint32_t id;
    if (a->free_head != TF_NONE) {
        id = a->free_head;
        a->free_head = rec(a, id)->next_free;
    } else {
        if (a->limit >= MAX_RECORDS)
            return TF_NONE;
        if ((a->limit >> CHUNK_SHIFT) >= a->nchunks) {
            if (a->nchunks == a->chunks_cap) {
                uint32_t ncap = a->chunks_cap ? a->chunks_cap * 2 : 8;
                struct tf_alloc_record **nc = realloc(a->chunks, ncap * sizeof(*nc));
                if (!nc)
                    return TF_NONE;
                a->chunks = nc;
                a->chunks_cap = ncap;
            }
            struct tf_alloc_record *chunk = calloc(CHUNK_SIZE, sizeof(*chunk));
            if (!chunk)
                return TF_NONE;
            a->chunks[a->nchunks++] = chunk;
        }
        id = a->limit++;
    }
    memset(rec(a, id), 0, sizeof(struct tf_alloc_record));
    return id;
}

static void rec_free(struct tf_alloc *a, uint32_t id)
{
    struct tf_alloc_record *r = rec(a, id);
    free(r->key_heap);
    free(r->slots_heap);
    memset(r, 0, sizeof(*r));
    r->next_free = a->free_head;
    a->free_head = id;
}

const struct tf_cluster *tf_alloc_cluster(const struct tf_alloc *a)
{
    return a->c;
}

uint32_t tf_alloc_request_pool(const struct tf_alloc *a, const struct tf_alloc_request *req)
{
    return (req->pool && *req->pool) ? tf_cluster_pool_find(a->c, req->pool)
                                     : tf_cluster_default_pool(a->c);
}

uint32_t tf_alloc_find(const struct tf_alloc *a, const char *ns, const char *name)
{
    char key[TF_KEY_MAX];
    int len = snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    uint32_t id;
    if (len < 0 || (size_t)len >= sizeof(key) || tf_strmap_get(&a->by_key, key, (size_t)len, &id))
        return TF_NONE;
    return id;
}

const struct tf_alloc_record *tf_alloc_record_at(const struct tf_alloc *a, uint32_t id)
{
    if (id >= a->limit)
        return NULL;
    const struct tf_alloc_record *r = rec(a, id);
    return r->live ? r : NULL;
}

uint32_t tf_alloc_id_limit(const struct tf_alloc *a)
{
    return a->limit;
}

uint32_t tf_alloc_count(const struct tf_alloc *a)
{
    return a->live;
}

size_t tf_alloc_gpu_workloads(const struct tf_alloc *a, uint32_t gpu, uint32_t *ids, size_t cap)
{
    size_t n = 0;
    if (gpu >= a->c->ngpus)
        return 0;
    for (uint32_t ref = a->c->gpus[gpu].head; ref != TF_NONE; ref = slot_ref(a, ref)->next) {
        if (n < cap)
            ids[n] = REF_ID(ref);
        n++;
    }
    return n;
}

/* ---------- applying records ---------- */

#ifndef NDEBUG
/* Debug builds: a GPU's reservations add up after every change. */
static void assert_gpu(const struct tf_alloc *a, uint32_t gi)
{
    const struct tf_gpu *g = &a->c->gpus[gi];
    int64_t t = 0, v = 0;
    uint32_t k = 0;
    for (uint32_t ref = g->head; ref != TF_NONE; ref = slot_ref(a, ref)->next, k++) {
        t += slot_ref(a, ref)->tflops;
        v += slot_ref(a, ref)->vram;
    }
    assert(g->avail_tflops >= 0 && g->avail_vram >= 0);
    assert(g->avail_tflops <= g->cap_tflops && g->avail_vram <= g->cap_vram);
    assert(t == g->cap_tflops - g->avail_tflops && v == g->cap_vram - g->avail_vram);
    assert(k == g->nworkloads);
    assert(a->c->policy == TF_ISOPOL_STATIC ||
           (g->nworkloads == 0) == (g->mode == TF_ISOLATION_UNSET));
}
#define ASSERT_GPU(a, g) assert_gpu(a, g)
#else
#define ASSERT_GPU(a, g) ((void)0)
#endif

static void link_slot(struct tf_alloc *a, uint32_t ref, struct tf_alloc_slot *s)
{
    struct tf_gpu *g = &a->c->gpus[s->gpu];
    s->prev = TF_NONE;
    s->next = g->head;
    if (g->head != TF_NONE)
        slot_ref(a, g->head)->prev = ref;
    g->head = ref;
}

static void unlink_slot(struct tf_alloc *a, struct tf_alloc_slot *s)
{
    struct tf_gpu *g = &a->c->gpus[s->gpu];
    if (s->prev != TF_NONE)
        slot_ref(a, s->prev)->next = s->next;
    else
        g->head = s->next;
    if (s->next != TF_NONE)
        slot_ref(a, s->next)->prev = s->prev;
    s->next = s->prev = TF_NONE;
}

const struct tf_partition_template *tf__alloc_slot_tpl(const struct tf_alloc *a,
                                                       const struct tf_alloc_slot *s)
{
    const struct tf_partition_profile *pp = tf_cluster_profile(a->c, &a->c->gpus[s->gpu]);
    return s->part >= 0 && pp ? &pp->templates[s->part] : NULL;
}

/* Node NID's GPUs changed: its aggregates now, or at the end of bulk loading. */
static void node_changed(struct tf_alloc *a, uint32_t nid)
{
    if (a->stale)
        a->stale[nid >> 3] |= (uint8_t)(1u << (nid & 7));
    else
        tf_cluster_node_refresh(a->c, nid);
}

int tf_alloc_bulk_begin(struct tf_alloc *a, uint32_t expected)
{
    if (a->stale)
        return 0;
    uint8_t *stale = calloc(a->c->nnodes / 8 + 1, 1);
    if (!stale || tf_strmap_reserve(&a->by_key, (size_t)a->live + expected)) {
        free(stale);
        return TF_ENOMEM;
    }
    a->stale = stale;
    return 0;
}

void tf_alloc_bulk_end(struct tf_alloc *a)
{
    uint8_t *stale = a->stale;
    a->stale = NULL;
    for (uint32_t n = 0; stale && n < a->c->nnodes; n++)
        if (stale[n >> 3] & (1u << (n & 7)))
            tf_cluster_node_refresh(a->c, n);
    free(stale);
}

/* Puts record ID's reservation on its GPUs. Only the quota charge can fail. */
static int rec_apply(struct tf_alloc *a, uint32_t id)
{
    struct tf_alloc_record *r = rec(a, id);
    if (!r->quota_exempt && a->q &&
        tf_quota_charge(a->q, tf_alloc_record_key(r), r->ns_len, &r->charged, +1))
        return TF_ENOMEM;
    for (unsigned i = 0; i < r->ngpus; i++) {
        struct tf_alloc_slot *s = slot_of(r, i);
        struct tf_gpu *g = &a->c->gpus[s->gpu];
        g->avail_tflops -= s->tflops;
        g->avail_vram -= s->vram;
        g->lim_tflops += s->lim_tflops;
        g->lim_vram += s->lim_vram;
        g->nworkloads++;
        link_slot(a, REF(id, i), s);
        const struct tf_partition_template *t = tf__alloc_slot_tpl(a, s);
        if (t) {
            g->part_compute += t->compute_slots;
            g->part_memory += t->memory_slots;
            g->nparts++;
        }
        if (a->c->policy == TF_ISOPOL_DYNAMIC && g->mode == TF_ISOLATION_UNSET)
            g->mode = r->isolation;
        ASSERT_GPU(a, s->gpu);
    }
    a->c->nodes[r->node].nworkers++;
    node_changed(a, r->node);
    return 0;
}

static void rec_unapply(struct tf_alloc *a, uint32_t id)
{
    struct tf_alloc_record *r = rec(a, id);
    for (unsigned i = 0; i < r->ngpus; i++) {
        struct tf_alloc_slot *s = slot_of(r, i);
        struct tf_gpu *g = &a->c->gpus[s->gpu];
        g->avail_tflops += s->tflops;
        g->avail_vram += s->vram;
        g->lim_tflops -= s->lim_tflops;
        g->lim_vram -= s->lim_vram;
        g->nworkloads--;
        unlink_slot(a, s);
        const struct tf_partition_template *t = tf__alloc_slot_tpl(a, s);
        if (t) {
            g->part_compute -= t->compute_slots;
            g->part_memory -= t->memory_slots;
            g->nparts--;
        }
        if (a->c->policy == TF_ISOPOL_DYNAMIC && g->nworkloads == 0)
            g->mode = TF_ISOLATION_UNSET;
        ASSERT_GPU(a, s->gpu);
    }
    a->c->nodes[r->node].nworkers--;
    node_changed(a, r->node);
    if (!r->quota_exempt && a->q)
        tf_quota_charge(a->q, tf_alloc_record_key(r), r->ns_len, &r->charged, -1);
}

/* Creates the record of P on NODE with the selection SEL (already checked) and applies it. */
static int commit(struct tf_alloc *a, const struct plan *p, uint32_t nid,
                  const struct selection *sel, char *err, size_t errlen)
{
    uint32_t tmp;
    if (!tf_strmap_get(&a->by_key, p->key, p->key_len, &tmp)) {
        tf_errf(err, errlen, "pod %s already holds GPUs", p->key);
        return TF_EEXIST;
    }
    uint32_t id = rec_new(a);
    if (id == TF_NONE)
        goto nomem;
    struct tf_alloc_record *r = rec(a, id);
    if (p->key_len < TF_KEY_INLINE) {
        memcpy(r->key_inline, p->key, p->key_len + 1);
    } else if (!(r->key_heap = strdup(p->key))) {
        rec_free(a, id);
        goto nomem;
    }
    if (sel->n > 2 && !(r->slots_heap = calloc(sel->n, sizeof(*r->slots_heap)))) {
        rec_free(a, id);
        goto nomem;
    }
    const struct tf_cluster *c = a->c;
    r->ns_len = (uint16_t)p->ns_len;
    r->isolation = (uint8_t)p->iso;
    r->qos = (uint8_t)p->qos;
    r->dedicated = p->req->dedicated;
    r->remote = p->req->remote;
    r->quota_exempt = p->quota_exempt;
    r->node = nid;
    r->pool = p->pool;
    r->ngpus = (uint16_t)sel->n;
    r->res = p->res;
    if (!p->quota_exempt)
        r->charged = tf_quota_ask_usage(&p->ask);
    for (unsigned i = 0; i < sel->n; i++) {
        struct tf_alloc_slot *s = slot_of(r, i);
        const struct tf_gpu *g = &c->gpus[c->nodes[nid].gpu_first + sel->pos[i]];
        struct need nd;
        tf__alloc_need_on(c, p, g, &nd);
        if (p->part) { /* the template chosen at selection time */
            const struct tf_partition_profile *pp = tf_cluster_profile(c, g);
            nd.tpl = sel->tpl[i];
            nd.t = nd.lt = pp->templates[nd.tpl].tflops_milli;
            nd.v = nd.lv = pp->templates[nd.tpl].vram_bytes;
        }
        s->gpu = c->nodes[nid].gpu_first + sel->pos[i];
        s->tflops = nd.t;
        s->vram = nd.v;
        s->lim_tflops = nd.lt;
        s->lim_vram = nd.lv;
        s->part = (int8_t)nd.tpl;
        s->next = s->prev = TF_NONE;
    }
    const char *key = tf_alloc_record_key(r);
    if (tf_strmap_put(&a->by_key, key, id)) {
        rec_free(a, id);
        goto nomem;
    }
    if (rec_apply(a, id)) {
        tf_strmap_del(&a->by_key, key, p->key_len);
        rec_free(a, id);
        goto nomem;
    }
    r->live = true;
    a->live++;
    return 0;
nomem:
    tf_errf(err, errlen, "out of memory");
    return TF_ENOMEM;
}

int tf_alloc_place(struct tf_alloc *a, const struct tf_alloc_request *req,
                   struct tf_alloc_result *res, struct tf_reasons *rb, char *err, size_t errlen)
{
    struct plan p;
    struct tf_alloc_result tmp;
    if (!res)
        res = &tmp;
    int rc = tf__alloc_prepare(a, req, &p, rb, err, errlen);
    if (rc)
        return rc;
    uint32_t id;
    if (!tf_strmap_get(&a->by_key, p.key, p.key_len, &id)) {
        tf_errf(err, errlen, "pod %s already holds GPUs", p.key);
        return TF_EEXIST;
    }
    uint32_t nid;
    struct selection sel;
    int32_t sc;
    if ((rc = tf__alloc_choose_or_reasons(a, &p, &nid, &sel, &sc, rb, err, errlen)))
        return rc;
    if ((rc = commit(a, &p, nid, &sel, err, errlen)))
        return rc;
    tf__alloc_to_result(a->c, nid, &sel, sc, res);
    return 0;
}

int tf_alloc_fit_node(const struct tf_alloc *a, const struct tf_alloc_request *req, uint32_t nid,
                      struct tf_alloc_result *res, char *err, size_t errlen)
{
    struct plan p;
    int rc = tf__alloc_compile(a, req, &p, err, errlen);
    if (rc)
        return rc;
    if (nid >= a->c->nnodes) {
        tf_errf(err, errlen, "no node %u", nid);
        return TF_ENOENT;
    }
    const struct tf_node *n = &a->c->nodes[nid];
    struct selection sel;
    if (!tf__alloc_node_select(a->c, &p, n, &sel)) {
        if (err && errlen)
            tf__alloc_node_reason(a->c, &p, n, err, errlen);
        return TF_ENOSPC;
    }
    if (res)
        tf__alloc_to_result(a->c, nid, &sel, tf__alloc_node_score_bp(a->c, &p, n), res);
    return 0;
}

int tf_alloc_reserve(struct tf_alloc *a, const struct tf_alloc_request *req, const char *node,
                     struct tf_alloc_result *res, char *err, size_t errlen)
{
    struct plan p;
    int rc = tf__alloc_prepare(a, req, &p, NULL, err, errlen);
    if (rc)
        return rc;
    uint32_t nid = node ? tf_cluster_node_find(a->c, node, strlen(node)) : TF_NONE;
    if (nid == TF_NONE) {
        tf_errf(err, errlen, "node %s: not a GPU node of this cluster", node ? node : "(null)");
        return TF_ENOENT;
    }
    uint32_t id;
    if (!tf_strmap_get(&a->by_key, p.key, p.key_len, &id)) {
        tf_errf(err, errlen, "pod %s already holds GPUs", p.key);
        return TF_EEXIST;
    }
    const struct tf_node *n = &a->c->nodes[nid];
    struct selection sel;
    if (!tf__alloc_node_select(a->c, &p, n, &sel)) {
        if (err && errlen)
            tf__alloc_node_reason(a->c, &p, n, err, errlen);
        return TF_ENOSPC;
    }
    int32_t sc = tf__alloc_node_score_bp(a->c, &p, n);
    if ((rc = commit(a, &p, nid, &sel, err, errlen)))
        return rc;
    if (res)
        tf__alloc_to_result(a->c, nid, &sel, sc, res);
    return 0;
}

int tf_alloc_restore(struct tf_alloc *a, const struct tf_alloc_request *req, const char *node,
                     const char *const *uuids, size_t n, char *err, size_t errlen)
{
    struct plan p;
    struct tf_alloc_request r2 = *req;
    if (n < 1 || n > TF_NODE_MAX_GPUS) {
        tf_errf(err, errlen, "restore needs 1..%d GPUs", TF_NODE_MAX_GPUS);
        return TF_EINVAL;
    }
    if (!r2.gpu_count)
        r2.gpu_count = (uint16_t)n;
    r2.pool = NULL; /* it runs in its node's pool, whatever it asked */
    int rc = tf__alloc_compile(a, &r2, &p, err, errlen);
    if (rc)
        return rc;
    if (p.count != n) {
        tf_errf(err, errlen, "pod %s: %zu GPU ids for gpu-count %u", p.key, n, p.count);
        return TF_EINVAL;
    }
    const struct tf_cluster *c = a->c;
    uint32_t nid = node ? tf_cluster_node_find(c, node, strlen(node)) : TF_NONE;
    if (nid == TF_NONE) {
        tf_errf(err, errlen, "pod %s: node %s is not a GPU node of this cluster", p.key,
                node ? node : "(null)");
        return TF_ENOENT;
    }
    p.pool = c->nodes[nid].pool;
    p.cfg = &c->pools[p.pool].cfg;
    struct selection sel = {.n = (unsigned)n};
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        const char *u = uuids[i] ? uuids[i] : "";
        uint32_t gi = tf_cluster_gpu_find(c, u, strlen(u));
        if (gi == TF_NONE || c->gpus[gi].node != nid) {
            tf_errf(err, errlen, "pod %s: GPU %s is not on node %s", p.key, u, node);
            return TF_ENOENT;
        }
        const struct tf_gpu *g = &c->gpus[gi];
        if (seen & (UINT64_C(1) << g->pos)) {
            tf_errf(err, errlen, "pod %s: GPU %s listed twice", p.key, u);
            return TF_EINVAL;
        }
        seen |= UINT64_C(1) << g->pos;
        struct need nd;
        tf__alloc_need_on(c, &p, g, &nd);
        const char *why = NULL;
        if (!iso_ok(c, g, &p))
            why = "isolation mode conflicts with its current workloads";
        else if (p.whole && !idle(g))
            why = "a whole-GPU pod needs it idle";
        else if (p.part && nd.tpl < 0)
            why = "no partition template fits its free slots";
        else if (g->avail_tflops < nd.t || g->avail_vram < nd.v)
            why = "not enough TFLOPS or VRAM left";
        if (why) {
            tf_errf(err, errlen, "pod %s: GPU %s: %s", p.key, u, why);
            return TF_ENOSPC;
        }
        sel.pos[i] = g->pos;
        sel.tpl[i] = (int8_t)nd.tpl;
    }
    return commit(a, &p, nid, &sel, err, errlen);
}

int tf_alloc_release(struct tf_alloc *a, const char *ns, const char *name)
{
    uint32_t id = tf_alloc_find(a, ns, name);
    if (id == TF_NONE)
        return TF_ENOENT;
    struct tf_alloc_record *r = rec(a, id);
    if (!r->suspended)
        rec_unapply(a, id);
    const char *key = tf_alloc_record_key(r);
    tf_strmap_del(&a->by_key, key, strlen(key));
    a->live--;
    rec_free(a, id);
    return 0;
}

int tf_alloc_resize(struct tf_alloc *a, const char *ns, const char *name,
                    const struct tf_alloc_resources *in, char *err, size_t errlen)
{
    uint32_t id = tf_alloc_find(a, ns, name);
    if (id == TF_NONE) {
        tf_errf(err, errlen, "pod %s/%s holds no GPUs", ns ? ns : "", name ? name : "");
        return TF_ENOENT;
    }
    struct tf_alloc_record *r = rec(a, id);
    const char *key = tf_alloc_record_key(r);
    if (r->suspended) {
        tf_errf(err, errlen, "pod %s is suspended", key);
        return TF_ESTATE;
    }
    if (r->dedicated || r->isolation == TF_ISOLATION_SHARED ||
        r->isolation == TF_ISOLATION_PARTITIONED) {
        tf_errf(err, errlen, "pod %s: %s allocations take fixed GPU shares and cannot be resized",
                key, r->dedicated ? "dedicated" : tf_isolation_name(r->isolation));
        return TF_ENOTSUP;
    }
    struct tf_alloc_resources res;
    char msg[160];
    int rc = tf__alloc_normalise(in, &res, msg, sizeof(msg));
    if (rc) {
        tf_errf(err, errlen, "pod %s: %s", key, msg);
        return rc;
    }
    struct need nd[TF_NODE_MAX_GPUS];
    for (unsigned i = 0; i < r->ngpus; i++) {
        const struct tf_alloc_slot *s = slot_of(r, i);
        const struct tf_gpu *g = &a->c->gpus[s->gpu];
        nd[i].t = tf_alloc_req_tflops(&res, g->cap_tflops);
        nd[i].v = res.req_vram;
        nd[i].lt = tf_alloc_lim_tflops(&res, g->cap_tflops);
        nd[i].lv = res.lim_vram;
        char q1[32], q2[32];
        if (g->avail_tflops + s->tflops < nd[i].t) {
            tf_quantity_format_milli(nd[i].t, q1, sizeof(q1));
            tf_quantity_format_milli(g->avail_tflops + s->tflops, q2, sizeof(q2));
            tf_errf(err, errlen, "pod %s: GPU %s: insufficient TFLOPS: need %s, max free %s", key,
                    g->uuid, q1, q2);
            return TF_ENOSPC;
        }
        if (g->avail_vram + s->vram < nd[i].v) {
            tf_quantity_format_bytes(nd[i].v, q1, sizeof(q1));
            tf_quantity_format_bytes(g->avail_vram + s->vram, q2, sizeof(q2));
            tf_errf(err, errlen, "pod %s: GPU %s: insufficient VRAM: need %s, max free %s", key,
                    g->uuid, q1, q2);
            return TF_ENOSPC;
        }
        if ((nd[i].lt > s->lim_tflops &&
             g->lim_tflops - s->lim_tflops + nd[i].lt > g->virt_tflops) ||
            (nd[i].lv > s->lim_vram && g->lim_vram - s->lim_vram + nd[i].lv > g->virt_vram)) {
            tf_errf(err, errlen, "pod %s: GPU %s: limits exceed the oversubscribed capacity", key,
                    g->uuid);
            return TF_ENOSPC;
        }
    }
    bool exempt = res.req_by_percent || res.lim_by_percent;
    struct tf_quota_ask ask = {res.req_tflops, res.req_vram, res.lim_tflops,
                               res.lim_vram,   r->ngpus,     0};
    struct tf_quota_usage newq = {0};
    if (!exempt) {
        newq = tf_quota_ask_usage(&ask);
        newq.workers = 1;
    }
    if (a->q) {
        if (!exempt) {
            struct tf_quota_usage old = r->quota_exempt ? (struct tf_quota_usage){0} : r->charged;
            if (!r->quota_exempt)
                old.workers = 0; /* a resize adds no worker */
            ask.workers = r->quota_exempt ? 1 : 0;
            if ((rc = tf_quota_check(a->q, key, r->ns_len, &ask, &old, err, errlen)))
                return rc;
        }
        /* Charge the new usage before giving back the old: only the charge can fail. */
        if (!exempt && tf_quota_charge(a->q, key, r->ns_len, &newq, +1)) {
            tf_errf(err, errlen, "out of memory");
            return TF_ENOMEM;
        }
        if (!r->quota_exempt)
            tf_quota_charge(a->q, key, r->ns_len, &r->charged, -1);
    }
    for (unsigned i = 0; i < r->ngpus; i++) {
        struct tf_alloc_slot *s = slot_of(r, i);
        struct tf_gpu *g = &a->c->gpus[s->gpu];
        g->avail_tflops += s->tflops - nd[i].t;
        g->avail_vram += s->vram - nd[i].v;
        g->lim_tflops += nd[i].lt - s->lim_tflops;
        g->lim_vram += nd[i].lv - s->lim_vram;
        s->tflops = nd[i].t;
        s->vram = nd[i].v;
        s->lim_tflops = nd[i].lt;
        s->lim_vram = nd[i].lv;
        ASSERT_GPU(a, s->gpu);
    }
    tf_cluster_node_refresh(a->c, r->node);
    r->res = res;
    r->quota_exempt = exempt;
    r->charged = newq;
    return 0;
}

int tf_alloc_suspend(struct tf_alloc *a, uint32_t id)
{
    if (id >= a->limit || !rec(a, id)->live)
        return TF_ENOENT;
    struct tf_alloc_record *r = rec(a, id);
    if (r->suspended)
        return TF_ESTATE;
    rec_unapply(a, id);
    r->suspended = true;
    return 0;
}

int tf_alloc_resume(struct tf_alloc *a, uint32_t id)
{
    if (id >= a->limit || !rec(a, id)->live)
        return TF_ENOENT;
    struct tf_alloc_record *r = rec(a, id);
    if (!r->suspended)
        return TF_ESTATE;
    const struct tf_cluster *c = a->c;
    for (unsigned i = 0; i < r->ngpus; i++) {
        const struct tf_alloc_slot *s = slot_of(r, i);
        const struct tf_gpu *g = &c->gpus[s->gpu];
        const struct tf_partition_template *t = tf__alloc_slot_tpl(a, s);
        const struct tf_partition_profile *pp = tf_cluster_profile(c, g);
        bool whole = r->dedicated || r->isolation == TF_ISOLATION_SHARED;
        bool mode_ok = c->policy == TF_ISOPOL_STATIC || g->mode == TF_ISOLATION_UNSET ||
                       (g->mode == r->isolation && r->isolation != TF_ISOLATION_SHARED);
        if (!mode_ok || (whole && !idle(g)) || g->avail_tflops < s->tflops ||
            g->avail_vram < s->vram ||
            (t && (g->part_compute + t->compute_slots > pp->compute_total ||
                   g->part_memory + t->memory_slots > pp->memory_total)))
            return TF_ENOSPC;
    }
    int rc = rec_apply(a, id);
    if (rc)
        return rc;
    r->suspended = false;
    return 0;
}
