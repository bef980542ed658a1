/* SPDX-License-Identifier: Apache-2.0
 *
 * The cluster model: pools, nodes, GPUs, partition profiles and per-node aggregates
 * (see cluster.h).
 */
#include "core/cluster.h"

#include "common/err.h"
#include "common/strutil.h"

#include <stdlib.h>
#include <string.h>

#define UUID_MAX 127
#define NAME_MAX_LEN 253
/* Bounds that keep every product below (x 100000 oversell, x 10000 basis points) in int64. */
#define MAX_TFLOPS_MILLI (INT64_C(1) << 40) /* ~1e9 TFLOPS */
#define MAX_VRAM (INT64_C(1) << 50)         /* 1 PiB */
#define MAX_HOST_MEM (INT64_C(1) << 55)     /* 32 PiB */

static const char *const placement_names[] = {"CompactFirst", "LowLoadFirst",
                                              "NodeCompactGPULowLoad"};
static const char *const phase_names[] = {"Pending", "Provisioning", "Running",
                                          "Unknown", "Destroying",   "Migrating"};

const char *tf_iso_policy_name(enum tf_iso_policy p)
{
    return p == TF_ISOPOL_STATIC ? "static" : "dynamic";
}

int tf_iso_policy_parse(const char *s, enum tf_iso_policy *out)
{
    if (s && tf_streq_ci(s, "dynamic"))
        *out = TF_ISOPOL_DYNAMIC;
    else if (s && tf_streq_ci(s, "static"))
        *out = TF_ISOPOL_STATIC;
    else
        return TF_EINVAL;
    return 0;
}

const char *tf_placement_name(enum tf_placement_mode m)
{
    return (unsigned)m < 3 ? placement_names[m] : NULL;
}

int tf_placement_parse(const char *s, enum tf_placement_mode *out)
{
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, placement_names[i])) {
            *out = (enum tf_placement_mode)i;
            return 0;
        }
    return TF_EINVAL;
}

const char *tf_gpu_phase_name(enum tf_gpu_phase p)
{
    return (unsigned)p < 6 ? phase_names[p] : NULL;
}

int tf_gpu_phase_parse(const char *s, enum tf_gpu_phase *out)
{
    for (int i = 0; s && i < 6; i++)
        if (!strcmp(s, phase_names[i])) {
            *out = (enum tf_gpu_phase)i;
            return 0;
        }
    return TF_EINVAL;
}

void tf_pool_config_init(struct tf_pool_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->placement = TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD;
    cfg->tflops_oversell_pct = 500;
    cfg->vram_expand_host_mem_pct = 50;
    cfg->vram_weight = 700;
    cfg->tflops_weight = 300;
    cfg->default_isolation = TF_ISOLATION_SOFT;
    cfg->default_qos = TF_QOS_MEDIUM;
}

static int model_index(const struct tf_gpu_model *m)
{
    for (size_t i = 0; i < tf_gpu_model_count(); i++)
        if (tf_gpu_model_at(i) == m)
            return (int)i;
    return -1;
}

static int vendor_index(const char *v)
{
    for (int i = 0; i < 13; i++)
        if (!strcmp(tf_vendors[i], v))
            return i;
    return -1;
}

struct tf_cluster *tf_cluster_new(enum tf_iso_policy policy)
{
    struct tf_cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->policy = policy;
    tf_strmap_init(&c->pool_by_name);
    tf_strmap_init(&c->node_by_name);
    tf_strmap_init(&c->gpu_by_uuid);
    size_t nm = tf_gpu_model_count();
    for (size_t i = 0; i < nm && i < 64; i++) {
        struct tf_partition_profile p;
        if (tf_partition_builtin(tf_gpu_model_at(i), &p) != 0)
            continue;
        c->profiles[i] = malloc(sizeof(p));
        if (!c->profiles[i]) {
            tf_cluster_destroy(c);
            return NULL;
        }
        *c->profiles[i] = p;
    }
    return c;
}

/* Strings that live as long as the cluster, packed in blocks that never move. */
#define STRPOOL_BLOCK 65536
struct tf_strpool {
    struct tf_strpool *next; /* older blocks */
    size_t used, cap;
    char data[];
};

static void strpool_free(struct tf_strpool *p)
{
    while (p) {
        struct tf_strpool *next = p->next;
        free(p);
        p = next;
    }
}

/* A copy of S in *POOL, or NULL on ENOMEM. */
static char *strpool_dup(struct tf_strpool **pool, const char *s)
{
    size_t n = strlen(s) + 1;
    struct tf_strpool *p = *pool;
    if (!p || p->cap - p->used < n) {
        size_t cap = n > STRPOOL_BLOCK ? n : STRPOOL_BLOCK;
        struct tf_strpool *b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        if (p && n > STRPOOL_BLOCK) { /* an outsize string: behind the current block */
            b->next = p->next;
            p->next = b;
        } else {
            b->next = p;
            *pool = b;
        }
        p = b;
    }
    char *d = p->data + p->used;
    memcpy(d, s, n);
    p->used += n;
    return d;
}

void tf_cluster_destroy(struct tf_cluster *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->npools; i++) {
        free(c->pools[i].name);
        free(c->pools[i].nodes);
        free(c->pools[i].index);
    }
    strpool_free(c->names);
    strpool_free(c->uuids);
    for (int i = 0; i < 64; i++)
        free(c->profiles[i]);
    free(c->pools);
    free(c->nodes);
    free(c->gpus);
    tf_strmap_free(&c->pool_by_name);
    tf_strmap_free(&c->node_by_name);
    tf_strmap_free(&c->gpu_by_uuid);
    free(c);
}

/* Grows *ARR (element size SZ) so that it holds at least NEED elements. */
static int reserve(void **arr, uint32_t *cap, uint32_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > UINT32_MAX / 2)
            return TF_ENOMEM;
        ncap *= 2;
    }
    void *p = realloc(*arr, (size_t)ncap * sz);
    if (!p)
        return TF_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

static int check_pool_config(const struct tf_pool_config *cfg, char *err, size_t errlen)
{
    if (cfg->tflops_oversell_pct < 100 || cfg->tflops_oversell_pct > 100000) {
        tf_errf(err, errlen, "tflopsOversellRatio %d out of range 100..100000",
                cfg->tflops_oversell_pct);
        return TF_EINVAL;
    }
    if (cfg->vram_expand_host_mem_pct < 0 || cfg->vram_expand_host_mem_pct > 100) {
        tf_errf(err, errlen, "vramExpandToHostMem %d out of range 0..100",
                cfg->vram_expand_host_mem_pct);
        return TF_EINVAL;
    }
    if (cfg->vram_weight < 0 || cfg->tflops_weight < 0 ||
        cfg->vram_weight + cfg->tflops_weight != 1000) {
        tf_errf(err, errlen,
                "score weights must be >= 0 and sum to 1 (vram %d/1000, tflops %d/1000)",
                cfg->vram_weight, cfg->tflops_weight);
        return TF_EINVAL;
    }
    if ((unsigned)cfg->placement > TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD ||
        cfg->default_qos < TF_QOS_LOW || cfg->default_qos > TF_QOS_CRITICAL) {
        tf_errf(err, errlen, "invalid placement mode or QoS");
        return TF_EINVAL;
    }
    if (cfg->default_isolation != TF_ISOLATION_SOFT &&
        cfg->default_isolation != TF_ISOLATION_HARD &&
        cfg->default_isolation != TF_ISOLATION_PARTITIONED) {
        tf_errf(err, errlen, "defaultIsolationMode must be soft, hard or partitioned");
        return TF_EINVAL;
    }
    if (cfg->min_tflops < 0 || cfg->max_tflops < 0 || cfg->min_vram < 0 || cfg->max_vram < 0 ||
        (cfg->max_tflops && cfg->min_tflops > cfg->max_tflops) ||
        (cfg->max_vram && cfg->min_vram > cfg->max_vram)) {
        tf_errf(err, errlen, "capacity minResources must not exceed maxResources");
        return TF_EINVAL;
    }
    return 0;
}

int tf_cluster_add_pool(struct tf_cluster *c, const char *name, const struct tf_pool_config *cfg,
                        uint32_t *id, char *err, size_t errlen)
{
    if (!name || !*name || strlen(name) > NAME_MAX_LEN) {
        tf_errf(err, errlen, "pool name must be 1..%d characters", NAME_MAX_LEN);
        return TF_EINVAL;
    }
    int rc = check_pool_config(cfg, err, errlen);
    if (rc)
        return rc;
    if (tf_cluster_pool_find(c, name) != TF_NONE) {
        tf_errf(err, errlen, "duplicate pool \"%s\"", name);
        return TF_EEXIST;
    }
    if (cfg->is_default)
        for (uint32_t i = 0; i < c->npools; i++)
            if (c->pools[i].cfg.is_default) {
                tf_errf(err, errlen, "pools \"%s\" and \"%s\" are both default", c->pools[i].name,
                        name);
                return TF_EINVAL;
            }
    if ((rc = reserve((void **)&c->pools, &c->pools_cap, c->npools + 1, sizeof(*c->pools))))
        goto nomem;
    struct tf_pool *p = &c->pools[c->npools];
    memset(p, 0, sizeof(*p));
    p->name = strdup(name);
    if (!p->name)
        goto nomem;
    p->cfg = *cfg;
    p->index = malloc(TF_VIEWS * sizeof(*p->index));
    if (!p->index || tf_strmap_put(&c->pool_by_name, p->name, c->npools)) {
        free(p->index);
        free(p->name);
        goto nomem;
    }
    for (int v = 0; v < TF_VIEWS; v++) {
        memset(p->index[v].head, 0xff, sizeof(p->index[v].head));
        memset(p->index[v].tail, 0xff, sizeof(p->index[v].tail));
        memset(p->index[v].bits, 0, sizeof(p->index[v].bits));
        memset(p->index[v].summary, 0, sizeof(p->index[v].summary));
    }
    if (id)
        *id = c->npools;
    c->npools++;
    return 0;
nomem:
    tf_errf(err, errlen, "out of memory");
    return TF_ENOMEM;
}

static int check_node(const struct tf_cluster *c, const struct tf_node_spec *s, char *err,
                      size_t errlen)
{
    if (!s->name || !*s->name || strlen(s->name) > NAME_MAX_LEN) {
        tf_errf(err, errlen, "node name must be 1..%d characters", NAME_MAX_LEN);
        return TF_EINVAL;
    }
    if (tf_cluster_node_find(c, s->name, strlen(s->name)) != TF_NONE) {
        tf_errf(err, errlen, "duplicate node \"%s\"", s->name);
        return TF_EEXIST;
    }
    if (s->static_mode != TF_ISOLATION_UNSET && s->static_mode != TF_ISOLATION_SOFT &&
        s->static_mode != TF_ISOLATION_HARD && s->static_mode != TF_ISOLATION_PARTITIONED) {
        tf_errf(err, errlen, "node %s: isolation mode must be soft, hard or partitioned", s->name);
        return TF_EINVAL;
    }
    if (s->host_mem_bytes < 0 || s->host_mem_bytes > MAX_HOST_MEM) {
        tf_errf(err, errlen, "node %s: host memory out of range", s->name);
        return TF_EINVAL;
    }
    if (s->ngpus < 1 || s->ngpus > TF_NODE_MAX_GPUS || !s->gpus) {
        tf_errf(err, errlen, "node %s: needs 1..%d GPUs", s->name, TF_NODE_MAX_GPUS);
        return TF_EINVAL;
    }
    uint64_t seen = 0;
    for (unsigned i = 0; i < s->ngpus; i++) {
        const struct tf_gpu_spec *g = &s->gpus[i];
        if (!g->model || model_index(g->model) < 0 || model_index(g->model) >= 64) {
            tf_errf(err, errlen, "node %s: gpu %u: unknown model", s->name, i);
            return TF_EINVAL;
        }
        if (!g->uuid || !*g->uuid || strlen(g->uuid) > UUID_MAX) {
            tf_errf(err, errlen, "node %s: gpu %u: uuid must be 1..%d characters", s->name, i,
                    UUID_MAX);
            return TF_EINVAL;
        }
        if (tf_cluster_gpu_find(c, g->uuid, strlen(g->uuid)) != TF_NONE) {
            tf_errf(err, errlen, "node %s: duplicate GPU uuid \"%s\"", s->name, g->uuid);
            return TF_EEXIST;
        }
        for (unsigned j = 0; j < i; j++)
            if (!strcmp(s->gpus[j].uuid, g->uuid)) {
                tf_errf(err, errlen, "node %s: duplicate GPU uuid \"%s\"", s->name, g->uuid);
                return TF_EEXIST;
            }
        if (g->index < 0 || g->index >= TF_NODE_MAX_GPUS) {
            tf_errf(err, errlen, "node %s: gpu %s: index %d out of range 0..%d", s->name, g->uuid,
                    g->index, TF_NODE_MAX_GPUS - 1);
            return TF_EINVAL;
        }
        if (seen & (UINT64_C(1) << g->index)) {
            tf_errf(err, errlen, "node %s: duplicate GPU index %d", s->name, g->index);
            return TF_EEXIST;
        }
        seen |= UINT64_C(1) << g->index;
        if ((unsigned)g->phase > TF_GPU_MIGRATING || g->tflops_milli < 0 ||
            g->tflops_milli > MAX_TFLOPS_MILLI || g->vram_bytes < 0 || g->vram_bytes > MAX_VRAM ||
            g->numa < -1) {
            tf_errf(err, errlen, "node %s: gpu %s: invalid phase, NUMA or capacity", s->name,
                    g->uuid);
            return TF_EINVAL;
        }
    }
    for (unsigned i = 0; i < s->ngpus; i++) {
        const struct tf_gpu_spec *g = &s->gpus[i];
        uint64_t missing = g->nvlink & ~seen;
        if (missing) {
            tf_errf(err, errlen, "node %s: gpu %s: NVLink peer index %d is not on the node",
                    s->name, g->uuid, __builtin_ctzll(missing));
            return TF_EINVAL;
        }
        if (g->nvlink & (UINT64_C(1) << g->index)) {
            tf_errf(err, errlen, "node %s: gpu %s: NVLink to itself", s->name, g->uuid);
            return TF_EINVAL;
        }
    }
    return 0;
}

/* ---------- utilisation index ---------- */

static int64_t frac_bp(int64_t used, int64_t cap)
{
    if (cap <= 0)
        return 0;
    if (used < INT64_MAX / 10000)
        return used * 10000 / cap;
    return (int64_t)((__int128)used * 10000 / cap);
}

uint16_t tf_util_bp(const struct tf_pool_config *cfg, int64_t cap_tflops, int64_t avail_tflops,
                    int64_t cap_vram, int64_t avail_vram)
{
    int64_t u = cfg->vram_weight * frac_bp(cap_vram - avail_vram, cap_vram) +
                cfg->tflops_weight * frac_bp(cap_tflops - avail_tflops, cap_tflops);
    return (uint16_t)(u / 1000);
}

uint16_t tf_cluster_node_util(const struct tf_cluster *c, const struct tf_node *n,
                              enum tf_view view)
{
    int64_t ct = 0, at = 0, cv = 0, av = 0;
    for (int m = 0; m < TF_ISO_MODES; m++) {
        if (view == TF_VIEW_SOFT && m != TF_ISOLATION_UNSET && m != TF_ISOLATION_SOFT)
            continue;
        if (view == TF_VIEW_HARD && m != TF_ISOLATION_UNSET && m != TF_ISOLATION_HARD)
            continue;
        ct += n->sum[m].cap_tflops;
        at += n->sum[m].avail_tflops;
        cv += n->sum[m].cap_vram;
        av += n->sum[m].avail_vram;
    }
    return tf_util_bp(&c->pools[n->pool].cfg, ct, at, cv, av);
}

static void bit_set(struct tf_util_index *x, unsigned b)
{
    x->bits[b >> 6] |= UINT64_C(1) << (b & 63);
    x->summary[b >> 12] |= UINT64_C(1) << ((b >> 6) & 63);
}

static void bit_clear(struct tf_util_index *x, unsigned b)
{
    unsigned w = b >> 6;
    x->bits[w] &= ~(UINT64_C(1) << (b & 63));
    if (!x->bits[w])
        x->summary[w >> 6] &= ~(UINT64_C(1) << (w & 63));
}

/* Mask of bits 0..I of a word (I in 0..63). */
static uint64_t upto(unsigned i)
{
    return i == 63 ? ~UINT64_C(0) : (UINT64_C(1) << (i + 1)) - 1;
}

/* The highest non-empty bucket <= B, or -1. */
static int find_le(const struct tf_util_index *x, int b)
{
    if (b < 0)
        return -1;
    int w = b >> 6;
    uint64_t m = x->bits[w] & upto((unsigned)b & 63);
    if (m)
        return (w << 6) + 63 - __builtin_clzll(m);
    if (--w < 0)
        return -1;
    int si = w >> 6;
    uint64_t sm = x->summary[si] & upto((unsigned)w & 63);
    while (!sm) {
        if (--si < 0)
            return -1;
        sm = x->summary[si];
    }
    w = (si << 6) + 63 - __builtin_clzll(sm);
    return (w << 6) + 63 - __builtin_clzll(x->bits[w]);
}

/* The lowest non-empty bucket >= B, or -1. */
static int find_ge(const struct tf_util_index *x, int b)
{
    if (b >= TF_UTIL_BUCKETS)
        return -1;
    int w = b >> 6;
    uint64_t m = x->bits[w] & ~(upto((unsigned)b & 63) >> 1);
    if (m)
        return (w << 6) + __builtin_ctzll(m);
    if (++w >= TF_UTIL_WORDS)
        return -1;
    int si = w >> 6;
    const int nsum = (TF_UTIL_WORDS + 63) / 64;
    uint64_t sm = x->summary[si] & ~(upto((unsigned)w & 63) >> 1);
    while (!sm) {
        if (++si >= nsum)
            return -1;
        sm = x->summary[si];
    }
    w = (si << 6) + __builtin_ctzll(sm);
    return (w << 6) + __builtin_ctzll(x->bits[w]);
}

static void link_tail(struct tf_cluster *c, uint32_t nid, enum tf_view v)
{
    struct tf_node *n = &c->nodes[nid];
    struct tf_util_index *x = &c->pools[n->pool].index[v];
    unsigned b = n->util[v];
    n->next[v] = TF_NONE;
    n->prev[v] = x->tail[b];
    if (x->tail[b] != TF_NONE)
        c->nodes[x->tail[b]].next[v] = nid;
    else
        x->head[b] = nid;
    x->tail[b] = nid;
    bit_set(x, b);
}

static void unlink_node(struct tf_cluster *c, uint32_t nid, enum tf_view v)
{
    struct tf_node *n = &c->nodes[nid];
    struct tf_util_index *x = &c->pools[n->pool].index[v];
    unsigned b = n->util[v];
    if (n->prev[v] != TF_NONE)
        c->nodes[n->prev[v]].next[v] = n->next[v];
    else
        x->head[b] = n->next[v];
    if (n->next[v] != TF_NONE)
        c->nodes[n->next[v]].prev[v] = n->prev[v];
    else
        x->tail[b] = n->prev[v];
    if (x->head[b] == TF_NONE)
        bit_clear(x, b);
}

uint32_t tf_cluster_index_first(const struct tf_cluster *c, uint32_t pool, enum tf_view view,
                                bool desc)
{
    const struct tf_util_index *x = &c->pools[pool].index[view];
    int b = desc ? find_le(x, TF_UTIL_BUCKETS - 1) : find_ge(x, 0);
    return b < 0 ? TF_NONE : x->head[b];
}

uint32_t tf_cluster_index_next(const struct tf_cluster *c, uint32_t nid, enum tf_view view,
                               bool desc)
{
    const struct tf_node *n = &c->nodes[nid];
    if (n->next[view] != TF_NONE)
        return n->next[view];
    const struct tf_util_index *x = &c->pools[n->pool].index[view];
    int b = desc ? find_le(x, (int)n->util[view] - 1) : find_ge(x, (int)n->util[view] + 1);
    return b < 0 ? TF_NONE : x->head[b];
}

int tf_cluster_index_check(const struct tf_cluster *c, uint32_t nid)
{
    const struct tf_node *n = &c->nodes[nid];
    for (int v = 0; v < TF_VIEWS; v++) {
        const struct tf_util_index *x = &c->pools[n->pool].index[v];
        unsigned b = n->util[v];
        if (b != tf_cluster_node_util(c, n, (enum tf_view)v) || b >= TF_UTIL_BUCKETS ||
            !(x->bits[b >> 6] & (UINT64_C(1) << (b & 63))) ||
            !(x->summary[b >> 12] & (UINT64_C(1) << ((b >> 6) & 63))))
            return TF_ESTATE;
        if (n->prev[v] == TF_NONE
                ? x->head[b] != nid
                : (n->prev[v] >= c->nnodes || c->nodes[n->prev[v]].next[v] != nid ||
                   c->nodes[n->prev[v]].util[v] != b))
            return TF_ESTATE;
        if (n->next[v] == TF_NONE
                ? x->tail[b] != nid
                : (n->next[v] >= c->nnodes || c->nodes[n->next[v]].prev[v] != nid ||
                   c->nodes[n->next[v]].util[v] != b))
            return TF_ESTATE;
    }
    return 0;
}

int tf_cluster_reserve(struct tf_cluster *c, uint32_t nodes, uint32_t gpus)
{
    if (nodes > UINT32_MAX - c->nnodes || gpus > UINT32_MAX - c->ngpus ||
        reserve((void **)&c->nodes, &c->nodes_cap, c->nnodes + nodes, sizeof(*c->nodes)) ||
        reserve((void **)&c->gpus, &c->gpus_cap, c->ngpus + gpus, sizeof(*c->gpus)) ||
        tf_strmap_reserve(&c->node_by_name, c->nnodes + nodes) ||
        tf_strmap_reserve(&c->gpu_by_uuid, c->ngpus + gpus))
        return TF_ENOMEM;
    return 0;
}

int tf_cluster_add_node(struct tf_cluster *c, uint32_t pool, const struct tf_node_spec *s,
                        uint32_t *id, char *err, size_t errlen)
{
    if (pool >= c->npools) {
        tf_errf(err, errlen, "no pool %u", pool);
        return TF_EINVAL;
    }
    int rc = check_node(c, s, err, errlen);
    if (rc)
        return rc;
    struct tf_pool *p = &c->pools[pool];
    if (reserve((void **)&c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof(*c->nodes)) ||
        reserve((void **)&c->gpus, &c->gpus_cap, c->ngpus + s->ngpus, sizeof(*c->gpus)) ||
        reserve((void **)&p->nodes, &p->nodes_cap, p->nnodes + 1, sizeof(*p->nodes)))
        goto nomem;

    uint32_t nid = c->nnodes;
    struct tf_node *n = &c->nodes[nid];
    memset(n, 0, sizeof(*n));
    n->name = strpool_dup(&c->names, s->name); /* (kept on failure: freed with the cluster) */
    if (!n->name)
        goto nomem;
    n->pool = pool;
    n->gpu_first = c->ngpus;
    n->ngpus = s->ngpus;
    n->static_mode =
        s->static_mode != TF_ISOLATION_UNSET ? s->static_mode : p->cfg.default_isolation;
    n->host_mem = s->host_mem_bytes;
    n->max_workers = s->max_workers ? s->max_workers : p->cfg.max_workers_per_node;

    /* Position of each GPU index, for translating NVLink masks. */
    int pos_of[TF_NODE_MAX_GPUS];
    for (unsigned i = 0; i < s->ngpus; i++)
        pos_of[s->gpus[i].index] = (int)i;
    int64_t host_share = n->host_mem * p->cfg.vram_expand_host_mem_pct / 100 / s->ngpus;

    uint32_t added = 0;
    for (unsigned i = 0; i < s->ngpus; i++) {
        const struct tf_gpu_spec *gs = &s->gpus[i];
        struct tf_gpu *g = &c->gpus[c->ngpus + i];
        memset(g, 0, sizeof(*g));
        g->uuid = strpool_dup(&c->uuids, gs->uuid);
        if (!g->uuid || tf_strmap_put(&c->gpu_by_uuid, g->uuid, c->ngpus + i))
            goto undo;
        added++;
        g->model = gs->model;
        g->node = nid;
        g->pos = (uint16_t)i;
        g->numa = gs->numa;
        g->index = gs->index;
        g->model_idx = (uint8_t)model_index(gs->model);
        g->vendor_idx = (uint8_t)vendor_index(gs->model->vendor);
        g->phase = (uint8_t)gs->phase;
        g->mode = c->policy == TF_ISOPOL_STATIC ? n->static_mode : TF_ISOLATION_UNSET;
        for (uint64_t m = gs->nvlink; m; m &= m - 1)
            g->nvlink |= UINT64_C(1) << pos_of[__builtin_ctzll(m)];
        g->cap_tflops = gs->tflops_milli ? gs->tflops_milli : gs->model->tflops_milli;
        g->cap_vram = gs->vram_bytes ? gs->vram_bytes : gs->model->vram_bytes;
        g->virt_tflops = g->cap_tflops * p->cfg.tflops_oversell_pct / 100;
        g->virt_vram = g->cap_vram + host_share;
        g->avail_tflops = g->cap_tflops;
        g->avail_vram = g->cap_vram;
        g->head = TF_NONE;
        n->model_mask |= UINT64_C(1) << g->model_idx;
        n->vendor_mask |= UINT32_C(1) << g->vendor_idx;
    }
    /* NVLink is symmetric: a link listed on either end connects both. */
    for (unsigned i = 0; i < s->ngpus; i++)
        for (uint64_t m = c->gpus[c->ngpus + i].nvlink; m; m &= m - 1)
            c->gpus[c->ngpus + __builtin_ctzll(m)].nvlink |= UINT64_C(1) << i;
    if (tf_strmap_put(&c->node_by_name, n->name, nid))
        goto undo;
    c->ngpus += s->ngpus;
    c->nnodes++;
    p->nodes[p->nnodes++] = nid;
    tf_cluster_node_aggregate(c, nid, n);
    for (int v = 0; v < TF_VIEWS; v++) {
        n->util[v] = tf_cluster_node_util(c, n, (enum tf_view)v);
        link_tail(c, nid, (enum tf_view)v);
    }
    if (id)
        *id = nid;
    return 0;
undo: /* the strings stay in the pools until the cluster goes */
    for (uint32_t i = 0; i < added; i++) {
        struct tf_gpu *g = &c->gpus[c->ngpus + i];
        tf_strmap_del(&c->gpu_by_uuid, g->uuid, strlen(g->uuid));
    }
nomem:
    tf_errf(err, errlen, "out of memory");
    return TF_ENOMEM;
}

int tf_cluster_set_partition_profile(struct tf_cluster *c, const struct tf_partition_profile *p,
                                     char *err, size_t errlen)
{
    int rc = tf_partition_validate(p, err, errlen);
    if (rc)
        return rc;
    int mi = model_index(p->model);
    if (mi < 0 || mi >= 64) {
        tf_errf(err, errlen, "unknown GPU model");
        return TF_EINVAL;
    }
    for (uint32_t i = 0; i < c->ngpus; i++)
        if (c->gpus[i].model_idx == mi && c->gpus[i].nparts) {
            tf_errf(err, errlen, "%s: GPU %s holds partitions", p->model->name, c->gpus[i].uuid);
            return TF_EBUSY;
        }
    if (!c->profiles[mi] && !(c->profiles[mi] = malloc(sizeof(*p)))) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    *c->profiles[mi] = *p;
    c->epoch++;
    return 0;
}

const struct tf_partition_profile *tf_cluster_profile(const struct tf_cluster *c,
                                                      const struct tf_gpu *g)
{
    return g->model_idx < 64 ? c->profiles[g->model_idx] : NULL;
}

uint32_t tf_cluster_pool_find(const struct tf_cluster *c, const char *name)
{
    uint32_t v;
    return name && !tf_strmap_get(&c->pool_by_name, name, strlen(name), &v) ? v : TF_NONE;
}

uint32_t tf_cluster_node_find(const struct tf_cluster *c, const char *name, size_t len)
{
    uint32_t v;
    return name && !tf_strmap_get(&c->node_by_name, name, len, &v) ? v : TF_NONE;
}

uint32_t tf_cluster_node_find_hashed(const struct tf_cluster *c, const char *name, size_t len,
                                     uint32_t hash)
{
    uint32_t v;
    return name && !tf_strmap_get_hashed(&c->node_by_name, name, len, hash, &v) ? v : TF_NONE;
}

uint32_t tf_cluster_gpu_find(const struct tf_cluster *c, const char *uuid, size_t len)
{
    uint32_t v;
    return uuid && !tf_strmap_get(&c->gpu_by_uuid, uuid, len, &v) ? v : TF_NONE;
}

uint32_t tf_cluster_default_pool(const struct tf_cluster *c)
{
    for (uint32_t i = 0; i < c->npools; i++)
        if (c->pools[i].cfg.is_default)
            return i;
    return c->npools ? 0 : TF_NONE;
}

void tf_cluster_set_gpu_phase(struct tf_cluster *c, uint32_t gpu, enum tf_gpu_phase phase)
{
    if (gpu >= c->ngpus || (unsigned)phase > TF_GPU_MIGRATING)
        return;
    c->gpus[gpu].phase = (uint8_t)phase;
    tf_cluster_node_refresh(c, c->gpus[gpu].node);
}

void tf_cluster_node_aggregate(const struct tf_cluster *c, uint32_t nid, struct tf_node *n)
{
    if (n != &c->nodes[nid])
        *n = c->nodes[nid];
    n->running_gpus = 0;
    n->idle_gpus = 0;
    n->max_free_tflops = 0;
    n->max_free_vram = 0;
    memset(n->sum, 0, sizeof(n->sum));
    for (uint32_t i = 0; i < n->ngpus; i++) {
        const struct tf_gpu *g = &c->gpus[n->gpu_first + i];
        if (g->phase != TF_GPU_RUNNING)
            continue;
        n->running_gpus++;
        if (!g->nworkloads && !g->nparts)
            n->idle_gpus++;
        if (g->avail_tflops > n->max_free_tflops)
            n->max_free_tflops = g->avail_tflops;
        if (g->avail_vram > n->max_free_vram)
            n->max_free_vram = g->avail_vram;
        struct tf_mode_sum *s = &n->sum[g->mode < TF_ISO_MODES ? g->mode : 0];
        s->cap_tflops += g->cap_tflops;
        s->cap_vram += g->cap_vram;
        s->avail_tflops += g->avail_tflops;
        s->avail_vram += g->avail_vram;
    }
}

void tf_cluster_node_refresh(struct tf_cluster *c, uint32_t nid)
{
    struct tf_node *n = &c->nodes[nid];
    tf_cluster_node_aggregate(c, nid, n);
    n->version++;
    for (int v = 0; v < TF_VIEWS; v++) {
        uint16_t u = tf_cluster_node_util(c, n, (enum tf_view)v);
        if (u == n->util[v])
            continue;
        unlink_node(c, nid, (enum tf_view)v);
        n->util[v] = u;
        link_tail(c, nid, (enum tf_view)v);
    }
}
