/* SPDX-License-Identifier: Apache-2.0
 *
 * The handle registry of the simulated driver: a set of live object pointers with their type,
 * so every API call can reject a destroyed, foreign or garbage handle with the real driver's
 * error code instead of dereferencing it. Open addressing with linear probing and
 * tombstones, one mutex; thread-safe.
 */
#include "sim/drv.h"

#include "common/err.h"

#include <stdlib.h>

#define TOMB ((const void *)1)

struct slot {
    const void *p;
    int type;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot *tab; /* guarded by reg_mu */
static size_t cap, used; /* used counts live entries and tombstones */

static size_t hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x;
}

/* Rehashes into a table with room to spare: the same size when most used slots were
 * tombstones, twice the size otherwise. */
static int grow(void)
{
    size_t live = 0;
    for (size_t i = 0; i < cap; i++)
        live += tab[i].p && tab[i].p != TOMB;
    size_t ncap = !cap ? 256 : live * 4 < cap ? cap : cap * 2;
    struct slot *n = calloc(ncap, sizeof(*n));
    if (!n)
        return TF_ENOMEM;
    live = 0;
    for (size_t i = 0; i < cap; i++) {
        if (!tab[i].p || tab[i].p == TOMB)
            continue;
        size_t j = hash(tab[i].p) & (ncap - 1);
        while (n[j].p)
            j = (j + 1) & (ncap - 1);
        n[j] = tab[i];
        live++;
    }
    free(tab);
    tab = n;
    cap = ncap;
    used = live;
    return 0;
}

int tf__handle_add(const void *p, enum sim_htype type)
{
    int rc = 0;
    pthread_mutex_lock(&reg_mu);
    if ((used + 1) * 2 > cap)
        rc = grow();
    if (!rc) {
        size_t j = hash(p) & (cap - 1);
        while (tab[j].p && tab[j].p != TOMB)
            j = (j + 1) & (cap - 1);
        if (!tab[j].p)
            used++;
        tab[j].p = p;
        tab[j].type = (int)type;
    }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

static size_t find(const void *p)
{
    if (!cap || !p || p == TOMB)
        return (size_t)-1;
    size_t j = hash(p) & (cap - 1);
    for (size_t k = 0; k < cap && tab[j].p; k++) {
        if (tab[j].p == p)
            return j;
        j = (j + 1) & (cap - 1);
    }
    return (size_t)-1;
}

void tf__handle_del(const void *p)
{
    pthread_mutex_lock(&reg_mu);
    size_t j = find(p);
    if (j != (size_t)-1)
        tab[j].p = TOMB;
    pthread_mutex_unlock(&reg_mu);
}

int tf__handle_is(const void *p, enum sim_htype type)
{
    pthread_mutex_lock(&reg_mu);
    size_t j = find(p);
    int ok = j != (size_t)-1 && tab[j].type == (int)type;
    pthread_mutex_unlock(&reg_mu);
    return ok;
}
