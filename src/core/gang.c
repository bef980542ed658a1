/* SPDX-License-Identifier: Apache-2.0
 *
 * Gang scheduling: the group size rules and the all-or-nothing planner (see gang.h).
 */
#include "core/gang.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/spec.h"

#include <stdlib.h>
#include <string.h>

int tf_gang_quorum(int32_t min_members, int32_t desired, bool known, int32_t *desired_out,
                   int32_t *required, char *err, size_t errlen)
{
    if (min_members == 1) {
        tf_errf(err, errlen, "%s: \"1\": a gang needs at least 2 members", TF_ANN_GANG_MIN_MEMBERS);
        return TF_EINVAL;
    }
    if (known && desired < 2) {
        tf_errf(err, errlen, "%s: gang scheduling needs at least 2 replicas, the workload has %d",
                TF_ANN_GANG_ENABLED, desired);
        return TF_EINVAL;
    }
    if (known && min_members > desired) {
        tf_errf(err, errlen, "%s: \"%d\" is more than the workload's %d replicas",
                TF_ANN_GANG_MIN_MEMBERS, min_members, desired);
        return TF_EINVAL;
    }
    if (!known && min_members < 2) {
        tf_errf(err, errlen,
                "%s: the gang's size is unknown: set %s or the replicas of the workload's owner",
                TF_ANN_GANG_ENABLED, TF_ANN_GANG_MIN_MEMBERS);
        return TF_EINVAL;
    }
    *desired_out = known ? desired : min_members;
    *required = min_members >= 2 ? min_members : *desired_out;
    return 0;
}

/* ---- the planner --------------------------------------------------------------------------- */

struct member {
    char name[TF_GANG_NAME_MAX];
    char node[256];
};

struct group {
    char key[TF_GANG_NAME_MAX];
    int32_t required;
    int64_t timeout_ms;
    int64_t since_ms;         /* when the oldest waiting member started waiting */
    int64_t backoff_until_ms; /* refused before this */
    bool satisfied;           /* reached its quorum once */
    struct member *waiting;
    size_t nwaiting;
};

struct tf_gang_book {
    struct group *groups;
    size_t ngroups;
};

struct tf_gang_book *tf_gang_book_new(void)
{
    return calloc(1, sizeof(struct tf_gang_book));
}

void tf_gang_book_destroy(struct tf_gang_book *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->ngroups; i++)
        free(b->groups[i].waiting);
    free(b->groups);
    free(b);
}

static struct group *find(const struct tf_gang_book *b, const char *key)
{
    for (size_t i = 0; i < b->ngroups; i++)
        if (!strcmp(b->groups[i].key, key))
            return &b->groups[i];
    return NULL;
}

/* Drops group G when it holds nothing worth remembering. */
static void tidy(struct tf_gang_book *b, struct group *g, int64_t now_ms)
{
    if (g->nwaiting || g->satisfied || g->backoff_until_ms > now_ms)
        return;
    free(g->waiting);
    *g = b->groups[--b->ngroups];
}

int tf_gang_hold(struct tf_gang_book *b, const char *key, int32_t required, int64_t timeout_ms,
                 const char *member, const char *node, int64_t now_ms, enum tf_gang_step *step,
                 int *waiting)
{
    if (strlen(key) >= TF_GANG_NAME_MAX || strlen(member) >= TF_GANG_NAME_MAX ||
        strlen(node) >= sizeof(((struct member *)0)->node) || required < 2)
        return TF_EINVAL;
    struct group *g = find(b, key);
    if (!g) {
        struct group *grown = realloc(b->groups, (b->ngroups + 1) * sizeof(*grown));
        if (!grown)
            return TF_ENOMEM;
        b->groups = grown;
        g = &grown[b->ngroups++];
        memset(g, 0, sizeof(*g));
        tf_strlcpy(g->key, key, sizeof(g->key));
    }
    g->required = required;
    g->timeout_ms = timeout_ms;
    *waiting = (int)g->nwaiting;
    if (g->backoff_until_ms > now_ms) {
        *step = TF_GANG_REFUSE;
        return 0;
    }
    if (g->satisfied) {
        *step = TF_GANG_BIND;
        return 0;
    }
    struct member *m = NULL;
    for (size_t i = 0; i < g->nwaiting; i++)
        if (!strcmp(g->waiting[i].name, member))
            m = &g->waiting[i];
    if (!m) {
        struct member *grown = realloc(g->waiting, (g->nwaiting + 1) * sizeof(*grown));
        if (!grown)
            return TF_ENOMEM;
        g->waiting = grown;
        m = &grown[g->nwaiting++];
        tf_strlcpy(m->name, member, sizeof(m->name));
        if (g->nwaiting == 1)
            g->since_ms = now_ms;
    }
    tf_strlcpy(m->node, node, sizeof(m->node));
    *waiting = (int)g->nwaiting;
    *step = (int32_t)g->nwaiting >= g->required ? TF_GANG_BIND_ALL : TF_GANG_WAIT;
    return 0;
}

size_t tf_gang_waiting(const struct tf_gang_book *b, const char *key, const char **members,
                       const char **nodes, size_t cap)
{
    const struct group *g = find(b, key);
    if (!g)
        return 0;
    for (size_t i = 0; i < g->nwaiting && i < cap; i++) {
        members[i] = g->waiting[i].name;
        if (nodes)
            nodes[i] = g->waiting[i].node;
    }
    return g->nwaiting;
}

void tf_gang_bound(struct tf_gang_book *b, const char *key)
{
    struct group *g = find(b, key);
    if (!g)
        return;
    g->satisfied = true;
    g->nwaiting = 0;
}

static size_t drop_waiting(struct group *g, char (*released)[TF_GANG_NAME_MAX], size_t cap,
                           size_t n)
{
    for (size_t i = 0; i < g->nwaiting; i++)
        if (n < cap)
            tf_strlcpy(released[n++], g->waiting[i].name, TF_GANG_NAME_MAX);
    g->nwaiting = 0;
    return n;
}

size_t tf_gang_fail(struct tf_gang_book *b, const char *key, int64_t now_ms,
                    char (*released)[TF_GANG_NAME_MAX], size_t cap)
{
    struct group *g = find(b, key);
    if (!g)
        return 0;
    size_t n = drop_waiting(g, released, cap, 0);
    g->backoff_until_ms = now_ms + TF_GANG_BACKOFF_MS;
    return n;
}

size_t tf_gang_expire(struct tf_gang_book *b, int64_t now_ms, char (*released)[TF_GANG_NAME_MAX],
                      size_t cap)
{
    size_t n = 0;
    for (size_t i = b->ngroups; i-- > 0;) {
        struct group *g = &b->groups[i];
        if (g->nwaiting && g->timeout_ms > 0 && now_ms - g->since_ms >= g->timeout_ms) {
            n = drop_waiting(g, released, cap, n);
            g->backoff_until_ms = now_ms + TF_GANG_BACKOFF_MS;
        }
        tidy(b, g, now_ms);
    }
    return n;
}

void tf_gang_forget(struct tf_gang_book *b, const char *member)
{
    for (size_t i = 0; i < b->ngroups; i++) {
        struct group *g = &b->groups[i];
        for (size_t j = 0; j < g->nwaiting; j++) {
            if (strcmp(g->waiting[j].name, member) != 0)
                continue;
            memmove(&g->waiting[j], &g->waiting[j + 1],
                    (g->nwaiting - j - 1) * sizeof(g->waiting[0]));
            g->nwaiting--;
            return;
        }
    }
}
