/* SPDX-License-Identifier: Apache-2.0
 *
 * The vGPU slot list, its ID scheme, and the Allocate / GetPreferredAllocation decisions
 * (dp_slots.h).
 */
#include "hypervisor/deviceplugin/dp_slots.h"

#include "common/err.h"
#include "common/strutil.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tf_dp_slot_id(const char *uuid, int k, char *buf, size_t len)
{
    size_t ul = strlen(uuid);
    if (ul == 0 || ul > TF_DP_UUID_MAX || k < 0 || k >= TF_DP_MAX_SLOTS)
        return TF_ERANGE;
    int n = snprintf(buf, len, "%s::%d", uuid, k);
    return n < 0 || (size_t)n >= len ? TF_ERANGE : 0;
}

void tf_dp_list_free(struct tf_dp_list *l)
{
    if (!l)
        return;
    free(l->slot);
    memset(l, 0, sizeof(*l));
}

int tf_dp_list_build(const struct tf_dp_gpu *gpus, int ngpu, int slots, struct tf_dp_list *out)
{
    memset(out, 0, sizeof(*out));
    if (slots < 1 || slots > TF_DP_MAX_SLOTS || ngpu < 0)
        return TF_EINVAL;
    out->slots_per_gpu = slots;
    out->slot = calloc((size_t)(ngpu < TF_DP_MAX_GPUS ? ngpu : TF_DP_MAX_GPUS) * (size_t)slots + 1,
                       sizeof(*out->slot));
    if (!out->slot)
        return TF_ENOMEM;
    for (int i = 0; i < ngpu; i++) {
        const char *u = gpus[i].uuid ? gpus[i].uuid : "";
        bool dup = false;
        for (int g = 0; g < out->ngpu && !dup; g++)
            dup = strcmp(out->uuids[g], u) == 0;
        if (dup || !*u || strlen(u) > TF_DP_UUID_MAX || out->ngpu == TF_DP_MAX_GPUS) {
            out->skipped++;
            continue;
        }
        int g = out->ngpu++;
        tf_strlcpy(out->uuids[g], u, sizeof(out->uuids[g]));
        out->numa[g] = gpus[i].numa >= 0 ? gpus[i].numa : -1;
        for (int k = 0; k < slots; k++) {
            struct tf_dp_slot *s = &out->slot[out->nslot++];
            int rc = tf_dp_slot_id(u, k, s->id, sizeof(s->id));
            assert(rc == 0);
            (void)rc;
            s->gpu = g;
            s->k = k;
            s->healthy = gpus[i].healthy;
        }
    }
    return 0;
}

bool tf_dp_list_equal(const struct tf_dp_list *a, const struct tf_dp_list *b)
{
    if (a->nslot != b->nslot || a->ngpu != b->ngpu)
        return false;
    for (int g = 0; g < a->ngpu; g++)
        if (a->numa[g] != b->numa[g])
            return false;
    for (int i = 0; i < a->nslot; i++)
        if (a->slot[i].healthy != b->slot[i].healthy || strcmp(a->slot[i].id, b->slot[i].id))
            return false;
    return true;
}

int tf_dp_list_healthy(const struct tf_dp_list *l)
{
    int n = 0;
    for (int i = 0; i < l->nslot; i++)
        n += l->slot[i].healthy;
    return n;
}

int tf_dp_list_find(const struct tf_dp_list *l, const char *id)
{
    const char *sep = NULL;
    for (const char *p = strstr(id, "::"); p; p = strstr(p + 1, "::"))
        sep = p;
    if (!sep || l->slots_per_gpu < 1)
        return -1;
    size_t ul = (size_t)(sep - id);
    char *end;
    long k = strtol(sep + 2, &end, 10);
    if (*end || end == sep + 2 || k < 0 || k >= l->slots_per_gpu)
        return -1;
    for (int g = 0; g < l->ngpu; g++) {
        if (strlen(l->uuids[g]) != ul || memcmp(l->uuids[g], id, ul) != 0)
            continue;
        int i = g * l->slots_per_gpu + (int)k;
        /* rejects spellings that strtol accepts but the scheme never writes ("+3", "03") */
        return strcmp(l->slot[i].id, id) == 0 ? i : -1;
    }
    return -1;
}

int tf_dp_allocate(const struct tf_dp_list *l, const char *const *ids, size_t n, char *env,
                   size_t len, char *err, size_t errlen)
{
    if (n == 0) {
        tf_errf(err, errlen, "no device IDs in the container request");
        return TF_EINVAL;
    }
    unsigned char *seen = calloc((size_t)l->nslot + 1, 1);
    if (!seen)
        return TF_ENOMEM;
    int rc = 0;
    size_t used = 0;
    for (size_t j = 0; j < n; j++) {
        int i = tf_dp_list_find(l, ids[j]);
        if (i < 0) {
            tf_errf(err, errlen, "unknown device ID \"%.80s\"", ids[j]);
            rc = TF_ENOENT;
            goto out;
        }
        if (seen[i]) {
            tf_errf(err, errlen, "device ID \"%s\" requested twice", ids[j]);
            rc = TF_EINVAL;
            goto out;
        }
        seen[i] = 1;
        if (!l->slot[i].healthy) {
            tf_errf(err, errlen, "device \"%s\" is unhealthy (GPU %s is gone)", ids[j],
                    l->uuids[l->slot[i].gpu]);
            rc = TF_ESTATE;
            goto out;
        }
        size_t il = strlen(l->slot[i].id);
        if (used + (j > 0) + il + 1 > len) {
            tf_errf(err, errlen, "%zu device IDs do not fit in %zu bytes", n, len);
            rc = TF_ERANGE;
            goto out;
        }
        if (j > 0)
            env[used++] = ',';
        memcpy(env + used, l->slot[i].id, il + 1);
        used += il;
    }
out:
    free(seen);
    return rc;
}

int tf_dp_preferred(const struct tf_dp_list *l, const char *const *avail, size_t navail,
                    const char *const *must, size_t nmust, int size, int *out, int *nout)
{
    *nout = 0;
    if (size < 0)
        return TF_EINVAL;
    if (size > l->nslot)
        size = l->nslot;
    /* state[i]: 0 not offered, 1 available, 2 chosen */
    unsigned char *state = calloc((size_t)l->nslot + 1, 1);
    int chosen[TF_DP_MAX_GPUS] = {0}, left[TF_DP_MAX_GPUS] = {0}, cursor[TF_DP_MAX_GPUS];
    if (!state)
        return TF_ENOMEM;
    for (size_t j = 0; j < nmust && *nout < size; j++) {
        int i = tf_dp_list_find(l, must[j]);
        if (i >= 0 && state[i] != 2) {
            state[i] = 2;
            chosen[l->slot[i].gpu]++;
            out[(*nout)++] = i;
        }
    }
    for (size_t j = 0; j < navail; j++) {
        int i = tf_dp_list_find(l, avail[j]);
        if (i >= 0 && state[i] == 0 && l->slot[i].healthy) {
            state[i] = 1;
            left[l->slot[i].gpu]++;
        }
    }
    for (int g = 0; g < l->ngpu; g++)
        cursor[g] = g * l->slots_per_gpu;
    while (*nout < size) {
        int best = -1;
        for (int g = 0; g < l->ngpu; g++) {
            if (!left[g])
                continue;
            if (best < 0 || chosen[g] < chosen[best] ||
                (chosen[g] == chosen[best] && left[g] > left[best]))
                best = g;
        }
        if (best < 0)
            break;
        while (state[cursor[best]] != 1)
            cursor[best]++;
        int i = cursor[best]++;
        state[i] = 2;
        left[best]--;
        chosen[best]++;
        out[(*nout)++] = i;
    }
    free(state);
    return 0;
}
