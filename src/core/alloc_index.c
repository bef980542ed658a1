/* SPDX-License-Identifier: Apache-2.0
 *
 * The allocator's verdict index (see alloc_index.h): per request shape, each node's verdict,
 * score and reason stamped with the node's version.
 */
#include "core/alloc_index.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/alloc_int.h"

#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024
#define REASON_ROOM 160 /* reason arena bytes per node before it is emptied */

/* What of a compiled request decides its verdicts (zeroed before filling: compared as bytes). */
struct shape_fixed {
    struct tf_alloc_resources res;
    uint64_t model_mask, index_mask;
    uint32_t pool, vendor_mask;
    uint16_t count, n_indices;
    uint8_t iso, whole, part, dedicated;
};

struct shape {
    uint64_t hash, used;
    size_t keylen;
    char key[KEY_MAX];
    uint32_t cap;   /* nodes covered: ids >= cap are evaluated without being kept */
    uint32_t *ver;  /* node version + 1 the entry was computed at; 0 = never */
    int16_t *score; /* score in basis points, -1 = does not fit */
    uint32_t *roff; /* reason offset + 1 in ARENA, 0 = none kept */
    char *arena;
    size_t alen, acap, amax;
};

struct tf_alloc_index {
    const struct tf_alloc *a;
    uint64_t serial;
    uint32_t epoch; /* the cluster's, when the shapes were made */
    uint64_t tick;
    struct shape *shapes[TF_ALLOC_INDEX_SHAPES];
    struct tf_alloc_index_stats st;
};

static void shape_free(struct shape *s)
{
    if (!s)
        return;
    free(s->ver);
    free(s->score);
    free(s->roff);
    free(s->arena);
    free(s);
}

struct tf_alloc_index *tf_alloc_index_new(const struct tf_alloc *a)
{
    static _Atomic uint64_t serials;
    struct tf_alloc_index *x = calloc(1, sizeof(*x));
    if (x) {
        x->a = a;
        x->serial = ++serials;
        x->epoch = a->c->epoch;
    }
    return x;
}

void tf_alloc_index_destroy(struct tf_alloc_index *x)
{
    if (!x)
        return;
    for (int i = 0; i < TF_ALLOC_INDEX_SHAPES; i++)
        shape_free(x->shapes[i]);
    free(x);
}

uint64_t tf_alloc_index_serial(const struct tf_alloc_index *x)
{
    return x->serial;
}

void tf_alloc_index_stats(const struct tf_alloc_index *x, struct tf_alloc_index_stats *out)
{
    *out = x->st;
}

/* Appends the string S (with its NUL, NULL written as a lone 0xff) to KEY; false when full. */
static bool key_str(char *key, size_t *len, const char *s)
{
    size_t n = s ? strlen(s) + 1 : 1;
    if (*len + n > KEY_MAX)
        return false;
    if (s)
        memcpy(key + *len, s, n);
    else
        key[*len] = (char)0xff;
    *len += n;
    return true;
}

/* The shape key of P into KEY; false when it does not fit (the request is then evaluated
 * without the index). */
static bool shape_key(const struct plan *p, char *key, size_t *len)
{
    const struct tf_alloc_request *r = p->req;
    struct shape_fixed f;
    memset(&f, 0, sizeof(f));
    f.res = p->res;
    f.model_mask = p->model_mask;
    f.index_mask = p->index_mask;
    f.pool = p->pool;
    f.vendor_mask = p->vendor_mask;
    f.count = (uint16_t)p->count;
    f.n_indices = r->n_indices;
    f.iso = (uint8_t)p->iso;
    f.whole = p->whole;
    f.part = p->part;
    f.dedicated = r->dedicated;
    memcpy(key, &f, sizeof(f));
    *len = sizeof(f);
    size_t ib = (size_t)r->n_indices * sizeof(int32_t);
    if (r->n_indices && (!r->gpu_indices || *len + ib > KEY_MAX))
        return false;
    if (ib) {
        memcpy(key + *len, r->gpu_indices, ib);
        *len += ib;
    }
    return key_str(key, len, r->model) && key_str(key, len, r->vendor) &&
           key_str(key, len, r->partition_template);
}

static uint64_t fnv64(const char *s, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* The shape of P, made (replacing the least recently used) when new; NULL when it cannot be
 * kept (no memory, key too long): the caller evaluates without it. */
static struct shape *shape_get(struct tf_alloc_index *x, const struct plan *p)
{
    const struct tf_cluster *c = x->a->c;
    if (x->epoch != c->epoch) { /* partition profiles changed: every verdict may have */
        for (int i = 0; i < TF_ALLOC_INDEX_SHAPES; i++) {
            shape_free(x->shapes[i]);
            x->shapes[i] = NULL;
        }
        x->epoch = c->epoch;
    }
    char key[KEY_MAX];
    size_t len;
    if (!shape_key(p, key, &len))
        return NULL;
    uint64_t h = fnv64(key, len);
    int victim = 0;
    for (int i = 0; i < TF_ALLOC_INDEX_SHAPES; i++) {
        struct shape *s = x->shapes[i];
        if (s && s->hash == h && s->keylen == len && !memcmp(s->key, key, len)) {
            s->used = ++x->tick;
            return s;
        }
        if (!s || (x->shapes[victim] && s->used < x->shapes[victim]->used))
            victim = i;
    }
    struct shape *s = calloc(1, sizeof(*s));
    uint32_t cap = c->nnodes ? c->nnodes : 1;
    if (!s || !(s->ver = calloc(cap, sizeof(*s->ver))) ||
        !(s->score = malloc(cap * sizeof(*s->score))) ||
        !(s->roff = calloc(cap, sizeof(*s->roff)))) {
        shape_free(s);
        return NULL;
    }
    s->hash = h;
    s->keylen = len;
    memcpy(s->key, key, len);
    s->cap = cap;
    s->amax = (size_t)cap * REASON_ROOM;
    s->used = ++x->tick;
    if (x->shapes[victim])
        x->st.shapes_dropped++;
    shape_free(x->shapes[victim]);
    x->shapes[victim] = s;
    x->st.shapes_built++;
    return s;
}

/* P's score on node NID in basis points, or -1 when it does not fit: kept in S while the
 * node's version stays the same. */
static int32_t verdict(struct tf_alloc_index *x, struct shape *s, const struct plan *p,
                       uint32_t nid)
{
    const struct tf_cluster *c = x->a->c;
    const struct tf_node *n = &c->nodes[nid];
    uint32_t stamp = n->version + 1;
    x->st.lookups++;
    if (s && nid < s->cap && s->ver[nid] == stamp)
        return s->score[nid];
    x->st.computed++;
    int32_t sc = tf__alloc_node_fits(c, p, n) ? tf__alloc_node_score_bp(c, p, n) : -1;
    if (s && nid < s->cap) {
        s->ver[nid] = stamp;
        s->score[nid] = (int16_t)sc;
        s->roff[nid] = 0;
    }
    return sc;
}

/* Keeps REASON (LEN bytes) as node NID's in S; false when there is no room. */
static bool keep_reason(struct shape *s, uint32_t nid, const char *reason, size_t len)
{
    if (s->alen + len + 1 > s->acap) {
        if (s->alen + len + 1 > s->amax) { /* full: forget every kept reason */
            memset(s->roff, 0, s->cap * sizeof(*s->roff));
            s->alen = 0;
        }
        if (len + 1 > s->amax)
            return false;
        size_t ncap = s->acap ? s->acap : 4096;
        while (ncap < s->alen + len + 1)
            ncap *= 2;
        if (ncap > s->amax)
            ncap = s->amax;
        if (ncap > s->acap) {
            char *na = realloc(s->arena, ncap);
            if (!na)
                return false;
            s->arena = na;
            s->acap = ncap;
        }
    }
    memcpy(s->arena + s->alen, reason, len + 1);
    s->roff[nid] = (uint32_t)s->alen + 1;
    s->alen += len + 1;
    return true;
}

/* Node NID's reason for P into RB, from S when kept there. */
static const char *reason(struct tf_alloc_index *x, struct shape *s, const struct plan *p,
                          uint32_t nid, struct tf_reasons *rb)
{
    if (s && nid < s->cap && s->roff[nid])
        return tf__alloc_reason_put(rb, s->arena + s->roff[nid] - 1);
    const struct tf_cluster *c = x->a->c;
    char buf[512];
    tf__alloc_node_reason(c, p, &c->nodes[nid], buf, sizeof(buf));
    x->st.reasons++;
    if (s && nid < s->cap)
        keep_reason(s, nid, buf, strlen(buf));
    return tf__alloc_reason_put(rb, buf);
}

/* Fetches the version of the node IDS[I + AHEAD] names (when known) while earlier ones are
 * looked at: candidates' nodes lie hundreds of bytes apart. */
static void prefetch_node(const struct tf_cluster *c, const uint32_t *ids, size_t i, size_t n)
{
    enum { AHEAD = 8 };
    if (ids && i + AHEAD < n && ids[i + AHEAD] < c->nnodes)
        __builtin_prefetch(&c->nodes[ids[i + AHEAD]].version);
}

static uint32_t node_id(const struct tf_cluster *c, const char *const *names, const uint32_t *ids,
                        size_t i)
{
    if (ids)
        return ids[i] < c->nnodes ? ids[i] : TF_NONE;
    const char *nm = names[i] ? names[i] : "";
    return tf_cluster_node_find(c, nm, strlen(nm));
}

int tf_alloc_index_filter(struct tf_alloc_index *x, const struct tf_alloc_request *req,
                          const char *const *names, const uint32_t *ids, size_t n,
                          struct tf_node_verdict *out, struct tf_reasons *rb, char *err,
                          size_t errlen)
{
    const struct tf_cluster *c = x->a->c;
    struct plan p;
    char perr[512];
    int rc = tf__alloc_prepare(x->a, req, &p, NULL, perr, sizeof(perr));
    if (rc) {
        tf_errf(err, errlen, "%s", perr);
        return tf__alloc_fail_all(rc, perr, n, out, rb, c, names);
    }
    struct shape *s = shape_get(x, &p);
    for (size_t i = 0; i < n; i++) {
        prefetch_node(c, ids, i, n);
        uint32_t nid = node_id(c, names, ids, i);
        int32_t sc = nid == TF_NONE ? -1 : verdict(x, s, &p, nid);
        out[i].node = nid;
        out[i].fit = sc >= 0;
        out[i].score = sc >= 0 ? (sc + 50) / 100 : 0;
        out[i].reason = NULL;
        if (sc < 0 && rb)
            out[i].reason =
                nid == TF_NONE ? tf__alloc_reason_add(rb, "node %s: not a GPU node of this cluster",
                                                      names[i] ? names[i] : "")
                               : reason(x, s, &p, nid, rb);
    }
    return 0;
}

int tf_alloc_index_score(struct tf_alloc_index *x, const struct tf_alloc_request *req,
                         const char *const *names, const uint32_t *ids, size_t n, int *scores,
                         char *err, size_t errlen)
{
    const struct tf_cluster *c = x->a->c;
    struct plan p;
    int rc = tf__alloc_compile(x->a, req, &p, err, errlen);
    if (!rc)
        rc = tf__alloc_pod_checks(x->a, &p, err, errlen);
    struct shape *s = rc ? NULL : shape_get(x, &p);
    for (size_t i = 0; i < n; i++) {
        scores[i] = 0;
        if (rc)
            continue;
        prefetch_node(c, ids, i, n);
        uint32_t nid = node_id(c, names, ids, i);
        int32_t sc = nid == TF_NONE ? -1 : verdict(x, s, &p, nid);
        if (sc >= 0)
            scores[i] = (sc + 50) / 100;
    }
    return rc;
}
