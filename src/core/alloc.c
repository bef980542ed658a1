/* SPDX-License-Identifier: Apache-2.0
 *
 * The GPU allocator: request compilation, the ordered filter chain with its reasons, placement
 * scores, GPU selection (topology-aware), and the record store behind reserve/release/resize
 * (see alloc.h for the contract).
 *
 * Records live in fixed-size chunks that never move, so a record's inline key (the key of the
 * by_key map) and its inline slots keep their addresses. A slot ref is (record id << 6 | slot
 * position); each GPU threads its workloads through the slots' next/prev refs.
 */
#include "core/alloc.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SHIFT 10
#define CHUNK_SIZE (1u << CHUNK_SHIFT)
#define MAX_RECORDS (1u << 26) /* slot refs keep 6 bits for the position */
#define REF(id, pos) (((id) << 6) | (uint32_t)(pos))
#define REF_ID(ref) ((ref) >> 6)
#define REF_POS(ref) ((ref)&63u)

struct tf_alloc {
    struct tf_cluster *c;
    struct tf_quota_set *q;
    struct tf_alloc_record **chunks; /* owned */
    uint32_t nchunks, chunks_cap;
    uint32_t limit;     /* ids handed out so far */
    uint32_t free_head; /* free-list of ids, TF_NONE-terminated */
    uint32_t live;
    struct tf_strmap by_key; /* key -> id; keys point into the records */
};

/* Filter stages, in the order of alloc.h. */
enum stage {
    ST_QUOTA,
    ST_POOL,
    ST_PHASE,
    ST_ISO,
    ST_INDEX,
    ST_WHOLE,
    ST_PART,
    ST_RES,
    ST_MODEL,
    ST_VENDOR,
    ST_COUNT,
    ST_WORKERS,
    ST_PASS,
};

/* A request compiled once per call. */
struct plan {
    const struct tf_alloc_request *req;
    char key[TF_KEY_MAX];
    size_t key_len, ns_len;
    uint32_t pool;
    const struct tf_pool_config *cfg;
    unsigned count;
    enum tf_isolation iso;
    enum tf_qos qos; /* resolved: the pool's default when unset */
    bool whole;      /* shared or dedicated: a whole idle GPU */
    bool part;       /* partitioned */
    uint64_t model_mask, index_mask;
    uint32_t vendor_mask;
    struct tf_alloc_resources res; /* normalised: limits filled */
    bool quota_exempt;
    struct tf_quota_ask ask;
};

/* What a request takes on one GPU. */
struct need {
    int64_t t, v, lt, lv;
    int tpl; /* partition template, -1 none */
};

/* A GPU selection on one node. */
struct selection {
    unsigned n;
    unsigned tier; /* 2 NVLink, 1 same NUMA, 0 other (multi-GPU only) */
    uint16_t pos[TF_NODE_MAX_GPUS];
    int8_t tpl[TF_NODE_MAX_GPUS];
};

/* ---------- records ---------- */

static struct tf_alloc_record *rec(const struct tf_alloc *a, uint32_t id)
{
    return &a->chunks[id >> CHUNK_SHIFT][id & (CHUNK_SIZE - 1)];
}

static struct tf_alloc_slot *slot_of(struct tf_alloc_record *r, unsigned i)
{
    return r->slots_heap ? &r->slots_heap[i] : &r->slots_inline[i];
}

static struct tf_alloc_slot *slot_ref(const struct tf_alloc *a, uint32_t ref)
{
    return slot_of(rec(a, REF_ID(ref)), REF_POS(ref));
}

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
__attribute__((format(printf, 2, 3))) static const char *reason_add(struct tf_reasons *rb,
                                                                    const char *fmt, ...)
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

/* ---------- request compilation ---------- */

int64_t tf_alloc_req_tflops(const struct tf_alloc_resources *r, int64_t cap)
{
    return r->req_by_percent ? tf_percent_to_tflops(r->req_percent, cap) : r->req_tflops;
}

int64_t tf_alloc_lim_tflops(const struct tf_alloc_resources *r, int64_t cap)
{
    int64_t lim = r->lim_by_percent ? tf_percent_to_tflops(r->lim_percent, cap) : r->lim_tflops;
    int64_t req = tf_alloc_req_tflops(r, cap);
    return lim > req ? lim : req;
}

/* Validates and fills limits ("0 = same as the request"). */
static int normalise_res(const struct tf_alloc_resources *in, struct tf_alloc_resources *out,
                         char *err, size_t errlen)
{
    *out = *in;
    if (out->req_tflops < 0 || out->lim_tflops < 0 || out->req_vram < 0 || out->lim_vram < 0 ||
        (out->req_by_percent && (out->req_percent < 0 || out->req_percent > 10000)) ||
        (out->lim_by_percent && (out->lim_percent < 0 || out->lim_percent > 10000))) {
        tf_errf(err, errlen, "negative resources or a compute percent outside 0..100");
        return TF_EINVAL;
    }
    if (!out->lim_by_percent && out->lim_tflops == 0) {
        if (out->req_by_percent) {
            out->lim_by_percent = true;
            out->lim_percent = out->req_percent;
        } else {
            out->lim_tflops = out->req_tflops;
        }
    }
    if (out->lim_vram == 0)
        out->lim_vram = out->req_vram;
    if ((out->req_by_percent == out->lim_by_percent &&
         (out->req_by_percent ? out->lim_percent < out->req_percent
                              : out->lim_tflops < out->req_tflops)) ||
        out->lim_vram < out->req_vram) {
        tf_errf(err, errlen, "limit below request");
        return TF_EINVAL;
    }
    return 0;
}

static int compile(const struct tf_alloc *a, const struct tf_alloc_request *req, struct plan *p,
                   char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    p->req = req;
    if (!req->ns || !*req->ns || !req->name || !*req->name || strchr(req->ns, '/')) {
        tf_errf(err, errlen, "pod needs a namespace and a name");
        return TF_EINVAL;
    }
    int kl = snprintf(p->key, sizeof(p->key), "%s/%s", req->ns, req->name);
    if (kl < 0 || (size_t)kl >= sizeof(p->key)) {
        tf_errf(err, errlen, "pod %s/%s: namespace/name too long", req->ns, req->name);
        return TF_EINVAL;
    }
    p->key_len = (size_t)kl;
    p->ns_len = strlen(req->ns);

    p->pool =
        (req->pool && *req->pool) ? tf_cluster_pool_find(c, req->pool) : tf_cluster_default_pool(c);
    if (p->pool == TF_NONE) {
        tf_errf(err, errlen, "pod %s: unknown GPU pool \"%s\"", p->key,
                req->pool && *req->pool ? req->pool : "(default)");
        return TF_ENOENT;
    }
    p->cfg = &c->pools[p->pool].cfg;

    unsigned split = 0;
    for (unsigned i = 0; i < req->ncontainers; i++) {
        if (!req->containers || !req->containers[i].name || !req->containers[i].gpus) {
            tf_errf(err, errlen, "pod %s: container-gpu-count entries need a name and >= 1 GPU",
                    p->key);
            return TF_EINVAL;
        }
        split += req->containers[i].gpus;
    }
    p->count = req->gpu_count ? req->gpu_count : (split ? split : 1);
    if (split && split != p->count) {
        tf_errf(err, errlen, "pod %s: container-gpu-count sums to %u GPUs, gpu-count is %u", p->key,
                split, p->count);
        return TF_EINVAL;
    }
    if (p->count > TF_GPU_COUNT_MAX) {
        tf_errf(err, errlen, "pod %s: gpu-count %u out of range 1..%d", p->key, p->count,
                TF_GPU_COUNT_MAX);
        return TF_EINVAL;
    }

    p->iso = req->isolation == TF_ISOLATION_UNSET ? TF_ISOLATION_SOFT : req->isolation;
    p->qos = req->qos == TF_QOS_UNSET ? p->cfg->default_qos : req->qos;
    if ((unsigned)p->iso >= TF_ISO_MODES || (unsigned)req->qos > TF_QOS_CRITICAL) {
        tf_errf(err, errlen, "pod %s: invalid isolation or QoS", p->key);
        return TF_EINVAL;
    }
    p->part = p->iso == TF_ISOLATION_PARTITIONED;
    p->whole = p->iso == TF_ISOLATION_SHARED || req->dedicated;
    if (p->part && req->dedicated) {
        tf_errf(err, errlen, "pod %s: dedicated-gpu cannot be partitioned", p->key);
        return TF_EINVAL;
    }
    if (p->part && c->policy != TF_ISOPOL_STATIC) {
        tf_errf(err, errlen,
                "pod %s: isolation partitioned needs isolationModePolicy static (this cluster "
                "is dynamic)",
                p->key);
        return TF_ENOTSUP;
    }

    int rc = normalise_res(&req->res, &p->res, err, errlen);
    if (rc) {
        char msg[160];
        tf_strlcpy(msg, err ? err : "", sizeof(msg));
        tf_errf(err, errlen, "pod %s: %s", p->key, msg);
        return rc;
    }

    p->model_mask = ~UINT64_C(0);
    if (req->model && *req->model) {
        p->model_mask = 0;
        for (size_t i = 0; i < tf_gpu_model_count() && i < 64; i++)
            if (tf_gpu_model_matches(tf_gpu_model_at(i), req->model))
                p->model_mask |= UINT64_C(1) << i;
    }
    p->vendor_mask = ~UINT32_C(0);
    if (req->vendor && *req->vendor) {
        p->vendor_mask = 0;
        const char *v = tf_vendor_canonical(req->vendor);
        for (int i = 0; v && i < 13; i++)
            if (!strcmp(tf_vendors[i], v))
                p->vendor_mask = UINT32_C(1) << i;
    }
    p->index_mask = ~UINT64_C(0);
    if (req->n_indices) {
        p->index_mask = 0;
        for (unsigned i = 0; req->gpu_indices && i < req->n_indices; i++)
            if (req->gpu_indices[i] >= 0 && req->gpu_indices[i] < TF_NODE_MAX_GPUS)
                p->index_mask |= UINT64_C(1) << req->gpu_indices[i];
    }

    p->quota_exempt = p->res.req_by_percent || p->res.lim_by_percent;
    p->ask.req_tflops = p->res.req_tflops;
    p->ask.req_vram = p->res.req_vram;
    p->ask.lim_tflops = p->res.lim_tflops;
    p->ask.lim_vram = p->res.lim_vram;
    p->ask.gpu_count = p->count;
    p->ask.workers = 1;
    return 0;
}

int tf_alloc_request_from_spec(const struct tf_spec *s, const char *ns, const char *name,
                               struct tf_alloc_request *r, struct tf_alloc_request_buf *buf,
                               char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->ns = ns ? ns : (s->ns ? s->ns : "default");
    r->name = name ? name : s->name;
    if (!s->enabled) {
        tf_errf(err, errlen, "pod %s/%s: not a TensorFusion pod", r->ns, r->name ? r->name : "");
        return TF_EINVAL;
    }
    if (!r->name || !*r->name) {
        tf_errf(err, errlen, "pod in %s: no name", r->ns);
        return TF_EINVAL;
    }
    r->pool = s->pool;
    const struct tf_spec_res *q = &s->requests, *l = &s->limits;
    r->res.req_by_percent = q->percent_set;
    r->res.req_percent = q->percent_set ? q->percent_bp : 0;
    r->res.req_tflops = q->tflops_set ? q->tflops_milli : 0;
    r->res.req_vram = q->vram_set ? q->vram_bytes : 0;
    r->res.lim_by_percent = l->percent_set;
    r->res.lim_percent = l->percent_set ? l->percent_bp : 0;
    r->res.lim_tflops = l->tflops_set ? l->tflops_milli : 0;
    r->res.lim_vram = l->vram_set ? l->vram_bytes : 0;
    r->gpu_count = (uint16_t)s->gpu_count;
    r->isolation = s->isolation;
    r->qos = s->qos;
    r->model = s->gpu_model;
    r->vendor = s->vendor;
    r->dedicated = s->dedicated_gpu;
    r->remote = !s->is_local_gpu;
    for (int i = 0; i < s->ngpu_indices && i < TF_SPEC_MAX_GPUS; i++)
        buf->indices[i] = s->gpu_indices[i];
    r->gpu_indices = buf->indices;
    r->n_indices = (uint16_t)s->ngpu_indices;
    int sum = 0;
    for (size_t i = 0; i < s->ncontainers; i++)
        sum += s->containers[i].gpu_count;
    if (s->ncontainers > 1 && sum == s->gpu_count && s->ncontainers <= TF_GPU_COUNT_MAX) {
        for (size_t i = 0; i < s->ncontainers; i++) {
            buf->containers[i].name = s->containers[i].name;
            buf->containers[i].gpus = (uint16_t)s->containers[i].gpu_count;
        }
        r->containers = buf->containers;
        r->ncontainers = (uint16_t)s->ncontainers;
    }
    return 0;
}

/* Pod-level checks after compilation: the quota stage. */
static int pod_checks(const struct tf_alloc *a, const struct plan *p, char *err, size_t errlen)
{
    if (p->quota_exempt || !a->q)
        return 0;
    return tf_quota_check(a->q, p->req->ns, p->ns_len, &p->ask, NULL, err, errlen);
}

/* ---------- per-GPU checks ---------- */

static bool iso_ok(const struct tf_cluster *c, const struct tf_gpu *g, const struct plan *p)
{
    if (c->policy == TF_ISOPOL_STATIC)
        return p->iso == TF_ISOLATION_SHARED || g->mode == p->iso;
    return g->mode == TF_ISOLATION_UNSET || (g->mode == p->iso && p->iso != TF_ISOLATION_SHARED);
}

static bool idle(const struct tf_gpu *g)
{
    return !g->nworkloads && !g->nparts;
}

/* What P takes on G; for partitioned pods, TPL < 0 when no template fits the free slots. */
static void need_on(const struct tf_cluster *c, const struct plan *p, const struct tf_gpu *g,
                    struct need *n)
{
    n->tpl = -1;
    if (p->whole) {
        n->t = n->lt = g->cap_tflops;
        n->v = n->lv = g->cap_vram;
        return;
    }
    n->t = tf_alloc_req_tflops(&p->res, g->cap_tflops);
    n->v = p->res.req_vram;
    n->lt = tf_alloc_lim_tflops(&p->res, g->cap_tflops);
    n->lv = p->res.lim_vram;
    if (p->part) {
        const struct tf_partition_profile *pp = tf_cluster_profile(c, g);
        if (!pp)
            return;
        n->tpl = tf_partition_match(pp, n->t, n->v, pp->compute_total - g->part_compute,
                                    pp->memory_total - g->part_memory, p->req->partition_template);
        if (n->tpl >= 0) {
            n->t = n->lt = pp->templates[n->tpl].tflops_milli;
            n->v = n->lv = pp->templates[n->tpl].vram_bytes;
        }
    }
}

static bool res_ok(const struct tf_gpu *g, const struct need *n)
{
    return g->avail_tflops >= n->t && g->avail_vram >= n->v &&
           g->lim_tflops + n->lt <= g->virt_tflops && g->lim_vram + n->lv <= g->virt_vram;
}

/* The first stage G fails for P (ST_PASS if none), filling *N when it gets that far. */
static enum stage gpu_stage(const struct tf_cluster *c, const struct plan *p,
                            const struct tf_gpu *g, struct need *n)
{
    if (g->phase != TF_GPU_RUNNING)
        return ST_PHASE;
    if (!iso_ok(c, g, p))
        return ST_ISO;
    if (!(p->index_mask & (UINT64_C(1) << g->index)))
        return ST_INDEX;
    if (p->whole && !idle(g))
        return ST_WHOLE;
    need_on(c, p, g, n);
    if (p->part && n->tpl < 0)
        return ST_PART;
    if (!res_ok(g, n))
        return ST_RES;
    if (!(p->model_mask & (UINT64_C(1) << g->model_idx)))
        return ST_MODEL;
    if (!(p->vendor_mask & (UINT32_C(1) << g->vendor_idx)))
        return ST_VENDOR;
    return ST_PASS;
}

/* The same verdict, cheapest tests first (the hot path). */
static bool gpu_fits(const struct tf_cluster *c, const struct plan *p, const struct tf_gpu *g,
                     struct need *n)
{
    if (g->phase != TF_GPU_RUNNING || !(p->model_mask & (UINT64_C(1) << g->model_idx)) ||
        !(p->vendor_mask & (UINT32_C(1) << g->vendor_idx)) ||
        !(p->index_mask & (UINT64_C(1) << g->index)) || !iso_ok(c, g, p) || (p->whole && !idle(g)))
        return false;
    if (!p->part && !p->whole) { /* inline need_on for the common case */
        n->tpl = -1;
        n->t = p->res.req_by_percent ? tf_percent_to_tflops(p->res.req_percent, g->cap_tflops)
                                     : p->res.req_tflops;
        n->v = p->res.req_vram;
        if (g->avail_tflops < n->t || g->avail_vram < n->v)
            return false;
        n->lt = tf_alloc_lim_tflops(&p->res, g->cap_tflops);
        n->lv = p->res.lim_vram;
        return g->lim_tflops + n->lt <= g->virt_tflops && g->lim_vram + n->lv <= g->virt_vram;
    }
    need_on(c, p, g, n);
    if (p->part && n->tpl < 0)
        return false;
    return res_ok(g, n);
}

/* Node-level tests that reject without looking at GPUs (necessary conditions only). */
static bool node_quick_reject(const struct plan *p, const struct tf_node *n)
{
    if (n->pool != p->pool || (n->max_workers && n->nworkers >= n->max_workers) ||
        n->running_gpus < p->count || !(n->model_mask & p->model_mask) ||
        !(n->vendor_mask & p->vendor_mask))
        return true;
    if (p->whole)
        return n->idle_gpus < p->count;
    return n->max_free_vram < p->res.req_vram ||
           (!p->res.req_by_percent && n->max_free_tflops < p->res.req_tflops);
}

/* ---------- scores ---------- */

static int64_t frac_bp(int64_t used, int64_t cap)
{
    if (cap <= 0)
        return 0;
    if (used < INT64_MAX / 10000)
        return used * 10000 / cap;
    return (int64_t)((__int128)used * 10000 / cap);
}

/* Which utilisation view ranks nodes for P (see enum tf_view). */
static enum tf_view view_of(const struct tf_cluster *c, const struct plan *p)
{
    if (c->policy == TF_ISOPOL_STATIC || p->whole)
        return TF_VIEW_ALL;
    return p->iso == TF_ISOLATION_HARD ? TF_VIEW_HARD : TF_VIEW_SOFT;
}

/* The node's placement score in basis points (0..10000): its utilisation over the GPUs the
 * pod could share (dynamic policy: unlocked or in its mode, so another mode's load does not
 * make a node look packed; shared/dedicated take whole GPUs and see the whole node). O(1):
 * the utilisation is kept with the node's aggregates. */
static int32_t node_score_bp(const struct tf_cluster *c, const struct plan *p,
                             const struct tf_node *n)
{
    int32_t u = n->util[view_of(c, p)];
    return p->cfg->placement == TF_PLACE_LOW_LOAD_FIRST ? 10000 - u : u;
}

static int32_t gpu_used_bp(const struct tf_pool_config *cfg, const struct tf_gpu *g)
{
    return tf_util_bp(cfg, g->cap_tflops, g->avail_tflops, g->cap_vram, g->avail_vram);
}

/* ---------- GPU selection on one node ---------- */

struct cand {
    uint16_t pos;
    int8_t tpl;
    int32_t pref; /* higher = preferred */
};

/* Picks P->count GPUs among CANDS (sorted by preference) into SEL: the best topology tier
 * that can be had (2: every pair NVLinked, 1: one known NUMA node, 0: any), and within it the
 * set with the highest total preference. O(candidates^2), candidates <= 64. */
static void pick_set(const struct tf_cluster *c, const struct tf_node *n, const struct plan *p,
                     const struct cand *cands, unsigned nc, struct selection *sel)
{
    unsigned need = p->count;
    sel->n = need;
    sel->tier = 0;
    if (need > 1) {
        int64_t best = INT64_MIN;
        uint16_t pos[TF_NODE_MAX_GPUS];
        int8_t tpl[TF_NODE_MAX_GPUS];
        /* Tier 2: greedy cliques from each seed, in preference order. */
        for (unsigned s = 0; s < nc; s++) {
            uint64_t set = UINT64_C(1) << cands[s].pos;
            unsigned k = 0;
            int64_t sum = cands[s].pref;
            pos[k] = cands[s].pos;
            tpl[k++] = cands[s].tpl;
            for (unsigned d = 0; d < nc && k < need; d++) {
                if (d == s)
                    continue;
                const struct tf_gpu *g = &c->gpus[n->gpu_first + cands[d].pos];
                if ((g->nvlink & set) == set) {
                    set |= UINT64_C(1) << cands[d].pos;
                    sum += cands[d].pref;
                    pos[k] = cands[d].pos;
                    tpl[k++] = cands[d].tpl;
                }
            }
            if (k == need && sum > best) {
                best = sum;
                sel->tier = 2;
                memcpy(sel->pos, pos, need * sizeof(pos[0]));
                memcpy(sel->tpl, tpl, need * sizeof(tpl[0]));
            }
        }
        if (sel->tier == 2)
            return;
        /* Tier 1: the best NUMA node holding enough candidates. */
        uint64_t seen = 0; /* NUMA ids 0..63 tried */
        for (unsigned s = 0; s < nc; s++) {
            int numa = c->gpus[n->gpu_first + cands[s].pos].numa;
            if (numa < 0 || (numa < 64 && (seen & (UINT64_C(1) << numa))))
                continue;
            if (numa < 64)
                seen |= UINT64_C(1) << numa;
            unsigned k = 0;
            int64_t sum = 0;
            for (unsigned d = 0; d < nc && k < need; d++)
                if (c->gpus[n->gpu_first + cands[d].pos].numa == numa) {
                    sum += cands[d].pref;
                    pos[k] = cands[d].pos;
                    tpl[k++] = cands[d].tpl;
                }
            if (k == need && sum > best) {
                best = sum;
                sel->tier = 1;
                memcpy(sel->pos, pos, need * sizeof(pos[0]));
                memcpy(sel->tpl, tpl, need * sizeof(tpl[0]));
            }
        }
        if (sel->tier == 1)
            return;
    }
    for (unsigned k = 0; k < need; k++) {
        sel->pos[k] = cands[k].pos;
        sel->tpl[k] = cands[k].tpl;
    }
}

/* Full check of node N for P (all GPU stages, count, workers) and GPU selection. */
static bool node_select(const struct tf_cluster *c, const struct plan *p, const struct tf_node *n,
                        struct selection *sel)
{
    if (n->pool != p->pool || (n->max_workers && n->nworkers >= n->max_workers) ||
        n->ngpus < p->count)
        return false;
    bool compact = p->cfg->placement == TF_PLACE_COMPACT_FIRST;
    struct cand cands[TF_NODE_MAX_GPUS];
    unsigned nc = 0;
    for (unsigned i = 0; i < n->ngpus; i++) {
        const struct tf_gpu *g = &c->gpus[n->gpu_first + i];
        struct need nd;
        if (!gpu_fits(c, p, g, &nd))
            continue;
        int32_t used = gpu_used_bp(p->cfg, g);
        struct cand cd = {(uint16_t)i, (int8_t)nd.tpl, compact ? used : -used};
        if (p->count == 1) { /* keep only the best: first wins ties */
            if (!nc || cd.pref > cands[0].pref)
                cands[0] = cd;
            nc = 1;
            continue;
        }
        unsigned j = nc++;
        while (j > 0 && cands[j - 1].pref < cd.pref) {
            cands[j] = cands[j - 1];
            j--;
        }
        cands[j] = cd;
    }
    if (nc < p->count)
        return false;
    pick_set(c, n, p, cands, nc, sel);
    return true;
}

static void to_result(const struct tf_cluster *c, uint32_t nid, const struct selection *sel,
                      int32_t score_bp, struct tf_alloc_result *res)
{
    res->node = nid;
    res->ngpus = (uint16_t)sel->n;
    res->score = (score_bp + 50) / 100;
    for (unsigned i = 0; i < sel->n; i++)
        res->gpus[i] = c->nodes[nid].gpu_first + sel->pos[i];
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
static void node_reason(const struct tf_cluster *c, const struct plan *p, const struct tf_node *n,
                        char *buf, size_t len)
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
        first[i] = gpu_stage(c, p, &c->gpus[n->gpu_first + i], &needs[i]);
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

static const char *node_reason_add(const struct tf_cluster *c, const struct plan *p,
                                   const struct tf_node *n, struct tf_reasons *rb)
{
    char buf[512];
    node_reason(c, p, n, buf, sizeof(buf));
    return reason_add(rb, "%s", buf);
}

/* ---------- filter / score / choose ---------- */

static int fail_all(int rc, const char *err, size_t n, struct tf_node_verdict *out,
                    struct tf_reasons *rb, const struct tf_cluster *c, const char *const *names)
{
    const char *r = rb ? reason_add(rb, "%s", err) : NULL;
    for (size_t i = 0; i < n; i++) {
        out[i].node = names[i] ? tf_cluster_node_find(c, names[i], strlen(names[i])) : TF_NONE;
        out[i].fit = false;
        out[i].score = 0;
        out[i].reason = r;
    }
    return rc;
}

/* Evaluates node NID (TF_NONE = unknown) for P: fit, score and GPU selection. */
static bool eval_node(const struct tf_cluster *c, const struct plan *p, uint32_t nid,
                      struct selection *sel, int32_t *score_bp)
{
    if (nid == TF_NONE)
        return false;
    const struct tf_node *n = &c->nodes[nid];
    if (node_quick_reject(p, n) || !node_select(c, p, n, sel))
        return false;
    *score_bp = node_score_bp(c, p, n);
    return true;
}

int tf_alloc_filter(const struct tf_alloc *a, const struct tf_alloc_request *req,
                    const char *const *names, size_t n, struct tf_node_verdict *out,
                    struct tf_reasons *rb, char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    struct plan p;
    char perr[512];
    int rc = compile(a, req, &p, perr, sizeof(perr));
    if (!rc)
        rc = pod_checks(a, &p, perr, sizeof(perr));
    if (rc) {
        tf_errf(err, errlen, "%s", perr);
        return fail_all(rc, perr, n, out, rb, c, names);
    }
    for (size_t i = 0; i < n; i++) {
        const char *nm = names[i] ? names[i] : "";
        uint32_t nid = tf_cluster_node_find(c, nm, strlen(nm));
        struct selection sel;
        int32_t sc = 0;
        out[i].node = nid;
        out[i].fit = eval_node(c, &p, nid, &sel, &sc);
        out[i].score = out[i].fit ? (sc + 50) / 100 : 0;
        out[i].reason = NULL;
        if (!out[i].fit && rb) {
            if (nid == TF_NONE)
                out[i].reason = reason_add(rb, "node %s: not a GPU node of this cluster", nm);
            else
                out[i].reason = node_reason_add(c, &p, &c->nodes[nid], rb);
        }
    }
    return 0;
}

int tf_alloc_score(const struct tf_alloc *a, const struct tf_alloc_request *req,
                   const char *const *names, size_t n, int *scores, char *err, size_t errlen)
{
    struct plan p;
    int rc = compile(a, req, &p, err, errlen);
    if (!rc)
        rc = pod_checks(a, &p, err, errlen);
    for (size_t i = 0; i < n; i++) {
        scores[i] = 0;
        if (rc)
            continue;
        const char *nm = names[i] ? names[i] : "";
        struct selection sel;
        int32_t sc;
        if (eval_node(a->c, &p, tf_cluster_node_find(a->c, nm, strlen(nm)), &sel, &sc))
            scores[i] = (sc + 50) / 100;
    }
    return rc;
}

/* Best node of P's pool: true with its id, selection and score, or false. Walks the pool's
 * utilisation index best-first (fullest first for CompactFirst and NodeCompactGPULowLoad,
 * emptiest first for LowLoadFirst) and stops at the first node that fits, so the cost is the
 * number of better-scored nodes that do not fit (mostly rejected in O(1)), not the pool size.
 * Nodes of equal score are taken in the order they reached that score. */
static bool choose(const struct tf_cluster *c, const struct plan *p, uint32_t *node,
                   struct selection *sel, int32_t *score)
{
    enum tf_view v = view_of(c, p);
    bool desc = p->cfg->placement != TF_PLACE_LOW_LOAD_FIRST;
    for (uint32_t nid = tf_cluster_index_first(c, p->pool, v, desc); nid != TF_NONE;
         nid = tf_cluster_index_next(c, nid, v, desc)) {
        const struct tf_node *n = &c->nodes[nid];
        if (node_quick_reject(p, n) || !node_select(c, p, n, sel))
            continue;
        *node = nid;
        *score = node_score_bp(c, p, n);
        return true;
    }
    *node = TF_NONE;
    return false;
}

static int choose_or_reasons(const struct tf_alloc *a, const struct plan *p, uint32_t *node,
                             struct selection *sel, int32_t *score, struct tf_reasons *rb,
                             char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    if (choose(c, p, node, sel, score))
        return 0;
    const struct tf_pool *pool = &c->pools[p->pool];
    tf_errf(err, errlen, "pod %s: 0/%u nodes of pool %s fit", p->key, pool->nnodes, pool->name);
    if (rb) {
        if (!pool->nnodes)
            reason_add(rb, "pool %s has no nodes", pool->name);
        for (uint32_t i = 0; i < pool->nnodes; i++)
            node_reason_add(c, p, &c->nodes[pool->nodes[i]], rb);
    }
    return TF_ENOSPC;
}

int tf_alloc_choose(const struct tf_alloc *a, const struct tf_alloc_request *req,
                    struct tf_alloc_result *res, struct tf_reasons *rb, char *err, size_t errlen)
{
    struct plan p;
    int rc = compile(a, req, &p, err, errlen);
    if (!rc)
        rc = pod_checks(a, &p, err, errlen);
    if (rc) {
        if (rb)
            reason_add(rb, "%s", err ? err : "");
        return rc;
    }
    uint32_t nid;
    struct selection sel;
    int32_t sc;
    if ((rc = choose_or_reasons(a, &p, &nid, &sel, &sc, rb, err, errlen)))
        return rc;
    to_result(a->c, nid, &sel, sc, res);
    return 0;
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

static const struct tf_partition_template *slot_tpl(const struct tf_alloc *a,
                                                    const struct tf_alloc_slot *s)
{
    const struct tf_partition_profile *pp = tf_cluster_profile(a->c, &a->c->gpus[s->gpu]);
    return s->part >= 0 && pp ? &pp->templates[s->part] : NULL;
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
        const struct tf_partition_template *t = slot_tpl(a, s);
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
    tf_cluster_node_refresh(a->c, r->node);
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
        const struct tf_partition_template *t = slot_tpl(a, s);
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
    tf_cluster_node_refresh(a->c, r->node);
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
        need_on(c, p, g, &nd);
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
    int rc = compile(a, req, &p, err, errlen);
    if (!rc)
        rc = pod_checks(a, &p, err, errlen);
    if (rc) {
        if (rb)
            reason_add(rb, "%s", err ? err : "");
        return rc;
    }
    uint32_t id;
    if (!tf_strmap_get(&a->by_key, p.key, p.key_len, &id)) {
        tf_errf(err, errlen, "pod %s already holds GPUs", p.key);
        return TF_EEXIST;
    }
    uint32_t nid;
    struct selection sel;
    int32_t sc;
    if ((rc = choose_or_reasons(a, &p, &nid, &sel, &sc, rb, err, errlen)))
        return rc;
    if ((rc = commit(a, &p, nid, &sel, err, errlen)))
        return rc;
    to_result(a->c, nid, &sel, sc, res);
    return 0;
}

int tf_alloc_fit_node(const struct tf_alloc *a, const struct tf_alloc_request *req, uint32_t nid,
                      struct tf_alloc_result *res, char *err, size_t errlen)
{
    struct plan p;
    int rc = compile(a, req, &p, err, errlen);
    if (rc)
        return rc;
    if (nid >= a->c->nnodes) {
        tf_errf(err, errlen, "no node %u", nid);
        return TF_ENOENT;
    }
    const struct tf_node *n = &a->c->nodes[nid];
    struct selection sel;
    if (!node_select(a->c, &p, n, &sel)) {
        if (err && errlen)
            node_reason(a->c, &p, n, err, errlen);
        return TF_ENOSPC;
    }
    if (res)
        to_result(a->c, nid, &sel, node_score_bp(a->c, &p, n), res);
    return 0;
}

int tf_alloc_reserve(struct tf_alloc *a, const struct tf_alloc_request *req, const char *node,
                     struct tf_alloc_result *res, char *err, size_t errlen)
{
    struct plan p;
    int rc = compile(a, req, &p, err, errlen);
    if (!rc)
        rc = pod_checks(a, &p, err, errlen);
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
    if (!node_select(a->c, &p, n, &sel)) {
        if (err && errlen)
            node_reason(a->c, &p, n, err, errlen);
        return TF_ENOSPC;
    }
    int32_t sc = node_score_bp(a->c, &p, n);
    if ((rc = commit(a, &p, nid, &sel, err, errlen)))
        return rc;
    if (res)
        to_result(a->c, nid, &sel, sc, res);
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
    int rc = compile(a, &r2, &p, err, errlen);
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
        need_on(c, &p, g, &nd);
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
    int rc = normalise_res(in, &res, msg, sizeof(msg));
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
        const struct tf_partition_template *t = slot_tpl(a, s);
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
            const struct tf_partition_template *tp = slot_tpl(a, s);
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
