/* SPDX-License-Identifier: Apache-2.0
 *
 * Namespace GPUResourceQuota checks and usage accounting (see quota.h).
 */
#include "core/quota.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *ns; /* owned */
    bool has_spec;
    struct tf_quota_spec spec;
    struct tf_quota_usage used;
};

struct tf_quota_set {
    struct entry **entries; /* owned; stable addresses for the map keys */
    uint32_t n, cap;
    struct tf_strmap by_ns;
};

void tf_quota_spec_init(struct tf_quota_spec *s)
{
    s->total_requests.tflops = s->total_requests.vram = TF_QUOTA_UNSET;
    s->total_limits.tflops = s->total_limits.vram = TF_QUOTA_UNSET;
    s->max_workers = TF_QUOTA_UNSET;
    s->alert_threshold_pct = 95;
    s->max_requests.tflops = s->max_requests.vram = TF_QUOTA_UNSET;
    s->max_limits.tflops = s->max_limits.vram = TF_QUOTA_UNSET;
    s->max_gpu_count = TF_QUOTA_UNSET;
    s->default_requests.tflops = s->default_requests.vram = TF_QUOTA_UNSET;
    s->default_limits.tflops = s->default_limits.vram = TF_QUOTA_UNSET;
}

struct tf_quota_set *tf_quota_set_new(void)
{
    struct tf_quota_set *qs = calloc(1, sizeof(*qs));
    if (qs)
        tf_strmap_init(&qs->by_ns);
    return qs;
}

void tf_quota_set_destroy(struct tf_quota_set *qs)
{
    if (!qs)
        return;
    for (uint32_t i = 0; i < qs->n; i++) {
        free(qs->entries[i]->ns);
        free(qs->entries[i]);
    }
    free(qs->entries);
    tf_strmap_free(&qs->by_ns);
    free(qs);
}

static struct entry *find(const struct tf_quota_set *qs, const char *ns, size_t len)
{
    uint32_t i;
    if (!qs || tf_strmap_get(&qs->by_ns, ns, len, &i))
        return NULL;
    return qs->entries[i];
}

static struct entry *find_or_add(struct tf_quota_set *qs, const char *ns, size_t len)
{
    struct entry *e = find(qs, ns, len);
    if (e)
        return e;
    if (qs->n == qs->cap) {
        uint32_t ncap = qs->cap ? qs->cap * 2 : 8;
        struct entry **ne = realloc(qs->entries, ncap * sizeof(*ne));
        if (!ne)
            return NULL;
        qs->entries = ne;
        qs->cap = ncap;
    }
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->ns = strndup(ns, len);
    if (!e->ns || tf_strmap_put(&qs->by_ns, e->ns, qs->n)) {
        free(e->ns);
        free(e);
        return NULL;
    }
    qs->entries[qs->n++] = e;
    return e;
}

static bool res_ok(const struct tf_quota_res *r)
{
    return r->tflops >= TF_QUOTA_UNSET && r->vram >= TF_QUOTA_UNSET;
}

int tf_quota_put(struct tf_quota_set *qs, const char *ns, const struct tf_quota_spec *spec,
                 char *err, size_t errlen)
{
    if (!ns || !*ns) {
        tf_errf(err, errlen, "quota without a namespace");
        return TF_EINVAL;
    }
    if (!res_ok(&spec->total_requests) || !res_ok(&spec->total_limits) ||
        !res_ok(&spec->max_requests) || !res_ok(&spec->max_limits) ||
        !res_ok(&spec->default_requests) || !res_ok(&spec->default_limits) ||
        spec->max_workers < TF_QUOTA_UNSET || spec->alert_threshold_pct < 0 ||
        spec->alert_threshold_pct > 100 ||
        (spec->max_gpu_count != TF_QUOTA_UNSET && spec->max_gpu_count < 1)) {
        tf_errf(err, errlen, "namespace %s: invalid quota (negative amount or out of range)", ns);
        return TF_EINVAL;
    }
    struct entry *e = find_or_add(qs, ns, strlen(ns));
    if (!e) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    e->spec = *spec;
    e->has_spec = true;
    return 0;
}

int tf_quota_remove(struct tf_quota_set *qs, const char *ns)
{
    struct entry *e = find(qs, ns, strlen(ns));
    if (!e || !e->has_spec)
        return TF_ENOENT;
    e->has_spec = false;
    return 0;
}

const struct tf_quota_spec *tf_quota_get(const struct tf_quota_set *qs, const char *ns,
                                         size_t ns_len)
{
    struct entry *e = find(qs, ns, ns_len);
    return e && e->has_spec ? &e->spec : NULL;
}

struct tf_quota_usage tf_quota_usage_of(const struct tf_quota_set *qs, const char *ns,
                                        size_t ns_len)
{
    struct entry *e = find(qs, ns, ns_len);
    struct tf_quota_usage z = {0};
    return e ? e->used : z;
}

struct tf_quota_usage tf_quota_ask_usage(const struct tf_quota_ask *ask)
{
    struct tf_quota_usage u;
    u.req_tflops = ask->req_tflops * ask->gpu_count;
    u.req_vram = ask->req_vram * ask->gpu_count;
    u.lim_tflops = ask->lim_tflops * ask->gpu_count;
    u.lim_vram = ask->lim_vram * ask->gpu_count;
    u.workers = ask->workers;
    return u;
}

static void fmt_amount(char *buf, size_t len, int64_t v, bool is_vram)
{
    if (is_vram)
        tf_quantity_format_bytes(v, buf, len);
    else
        tf_quantity_format_milli(v, buf, len);
}

/* Single (per-GPU) cap: ASKED must not exceed CAP. */
static int single(const char *ns, size_t nslen, const char *what, int64_t asked, int64_t cap,
                  bool is_vram, char *reason, size_t rlen)
{
    if (cap == TF_QUOTA_UNSET || asked <= cap)
        return 0;
    char a[32], c[32];
    fmt_amount(a, sizeof(a), asked, is_vram);
    fmt_amount(c, sizeof(c), cap, is_vram);
    tf_errf(reason, rlen, "namespace %.*s: quota single.%s exceeded: asked %s > %s", (int)nslen, ns,
            what, a, c);
    return TF_ENOSPC;
}

/* Total cap: USED + ASKED must not exceed CAP. */
static int total(const char *ns, size_t nslen, const char *what, int64_t used, int64_t asked,
                 int64_t cap, bool is_vram, char *reason, size_t rlen)
{
    if (cap == TF_QUOTA_UNSET || asked <= 0 || used + asked <= cap)
        return 0;
    char u[32], a[32], c[32];
    fmt_amount(u, sizeof(u), used, is_vram);
    fmt_amount(a, sizeof(a), asked, is_vram);
    fmt_amount(c, sizeof(c), cap, is_vram);
    tf_errf(reason, rlen, "namespace %.*s: quota total.%s exceeded: used %s + asked %s > %s",
            (int)nslen, ns, what, u, a, c);
    return TF_ENOSPC;
}

int tf_quota_check(const struct tf_quota_set *qs, const char *ns, size_t ns_len,
                   const struct tf_quota_ask *ask, const struct tf_quota_usage *old, char *reason,
                   size_t rlen)
{
    struct entry *e = find(qs, ns, ns_len);
    if (!e || !e->has_spec)
        return 0;
    const struct tf_quota_spec *s = &e->spec;
    int rc;
    if ((rc = single(ns, ns_len, "maxRequests.tflops", ask->req_tflops, s->max_requests.tflops,
                     false, reason, rlen)) ||
        (rc = single(ns, ns_len, "maxRequests.vram", ask->req_vram, s->max_requests.vram, true,
                     reason, rlen)) ||
        (rc = single(ns, ns_len, "maxLimits.tflops", ask->lim_tflops, s->max_limits.tflops, false,
                     reason, rlen)) ||
        (rc = single(ns, ns_len, "maxLimits.vram", ask->lim_vram, s->max_limits.vram, true, reason,
                     rlen)))
        return rc;
    if (s->max_gpu_count != TF_QUOTA_UNSET && ask->gpu_count > (uint32_t)s->max_gpu_count) {
        tf_errf(reason, rlen, "namespace %.*s: quota single.maxGPUCount exceeded: asked %u > %d",
                (int)ns_len, ns, ask->gpu_count, s->max_gpu_count);
        return TF_ENOSPC;
    }
    struct tf_quota_usage want = tf_quota_ask_usage(ask);
    struct tf_quota_usage z = {0};
    if (!old)
        old = &z;
    /* Compare the net change against the room left after OLD is given back. */
    const struct tf_quota_usage *u = &e->used;
    if ((rc = total(ns, ns_len, "requests.tflops", u->req_tflops - old->req_tflops, want.req_tflops,
                    s->total_requests.tflops, false, reason, rlen)) ||
        (rc = total(ns, ns_len, "requests.vram", u->req_vram - old->req_vram, want.req_vram,
                    s->total_requests.vram, true, reason, rlen)) ||
        (rc = total(ns, ns_len, "limits.tflops", u->lim_tflops - old->lim_tflops, want.lim_tflops,
                    s->total_limits.tflops, false, reason, rlen)) ||
        (rc = total(ns, ns_len, "limits.vram", u->lim_vram - old->lim_vram, want.lim_vram,
                    s->total_limits.vram, true, reason, rlen)))
        return rc;
    if (s->max_workers != TF_QUOTA_UNSET && want.workers > 0 &&
        u->workers - old->workers + want.workers > s->max_workers) {
        tf_errf(reason, rlen, "namespace %.*s: quota total.maxWorkers exceeded: %d workers of %d",
                (int)ns_len, ns, u->workers - old->workers, s->max_workers);
        return TF_ENOSPC;
    }
    return 0;
}

int tf_quota_charge(struct tf_quota_set *qs, const char *ns, size_t ns_len,
                    const struct tf_quota_usage *d, int sign)
{
    struct entry *e = sign > 0 ? find_or_add(qs, ns, ns_len) : find(qs, ns, ns_len);
    if (!e)
        return sign > 0 ? TF_ENOMEM : 0;
    e->used.req_tflops += sign * d->req_tflops;
    e->used.req_vram += sign * d->req_vram;
    e->used.lim_tflops += sign * d->lim_tflops;
    e->used.lim_vram += sign * d->lim_vram;
    e->used.workers += sign * d->workers;
    return 0;
}

bool tf_quota_apply_defaults(const struct tf_quota_set *qs, const char *ns, int64_t *req_tflops,
                             int64_t *req_vram, int64_t *lim_tflops, int64_t *lim_vram)
{
    const struct tf_quota_spec *s = tf_quota_get(qs, ns, strlen(ns));
    bool filled = false;
    if (!s)
        return false;
#define FILL(ptr, v)                                                                               \
    if ((ptr) && *(ptr) == 0 && (v) != TF_QUOTA_UNSET) {                                           \
        *(ptr) = (v);                                                                              \
        filled = true;                                                                             \
    }
    FILL(req_tflops, s->default_requests.tflops);
    FILL(req_vram, s->default_requests.vram);
    FILL(lim_tflops, s->default_limits.tflops);
    FILL(lim_vram, s->default_limits.vram);
#undef FILL
    return filled;
}

size_t tf_quota_entries(const struct tf_quota_set *qs)
{
    return qs ? qs->n : 0;
}

const char *tf_quota_entry(const struct tf_quota_set *qs, size_t i, struct tf_quota_usage *used)
{
    if (!qs || i >= qs->n)
        return NULL;
    if (used)
        *used = qs->entries[i]->used;
    return qs->entries[i]->ns;
}
