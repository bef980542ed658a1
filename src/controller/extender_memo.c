/* SPDX-License-Identifier: Apache-2.0
 *
 * The last /filter's answer, kept for the /prioritize that follows it (see extender_int.h).
 */
#include "controller/extender_int.h"

#include <stdlib.h>
#include <string.h>

void tf__ext_memo_free(struct tf__ext_memo *m)
{
    if (!m)
        return;
    free(m->pod);
    free(m->names);
    free(m->node_names);
    free(m->lens);
    free(m->hashes);
    free(m->ids);
    free(m->names_buf);
    free(m);
}

struct tf__ext_memo *tf__ext_memo_new(struct tf_ext_args *args, const struct tf_podreq *pr,
                                      uint32_t *ids, const char *const *reasons, uint64_t serial,
                                      const char *out, const size_t span[2])
{
    if (!args->pod_text || !args->name_hashes || !ids || !span[1])
        return NULL;
    struct tf__ext_memo *m = calloc(1, sizeof(*m));
    if (!m || !(m->pod = malloc(args->pod_len)) || !(m->names = malloc(span[1]))) {
        tf__ext_memo_free(m);
        return NULL;
    }
    memcpy(m->pod, args->pod_text, args->pod_len);
    m->pod_len = args->pod_len;
    memcpy(m->names, out + span[0], span[1]);
    m->names_len = span[1];
    m->pr = *pr;
    m->serial = serial;
    m->names_plain = args->names_plain;
    /* The nodes that passed, in order: the candidates' arrays compacted in place and taken. */
    size_t n = 0;
    for (size_t i = 0; i < args->n_nodes; i++) {
        if (reasons[i])
            continue;
        args->node_names[n] = args->node_names[i];
        args->name_lens[n] = args->name_lens[i];
        args->name_hashes[n] = args->name_hashes[i];
        ids[n++] = ids[i];
    }
    m->n = n;
    m->node_names = args->node_names;
    m->lens = args->name_lens;
    m->hashes = args->name_hashes;
    m->names_buf = args->names_buf;
    m->ids = ids;
    args->node_names = NULL;
    args->name_lens = NULL;
    args->name_hashes = NULL;
    args->names_buf = NULL;
    args->n_nodes = 0;
    return m;
}

struct tf__ext_memo *tf__ext_memo_take(struct tf_extender *x)
{
    pthread_mutex_lock(&x->memo_lock);
    struct tf__ext_memo *m = x->memo;
    x->memo = NULL;
    pthread_mutex_unlock(&x->memo_lock);
    return m;
}

void tf__ext_memo_put(struct tf_extender *x, struct tf__ext_memo *m, bool replace)
{
    if (!m)
        return;
    pthread_mutex_lock(&x->memo_lock);
    struct tf__ext_memo *old = x->memo;
    if (replace || !old) {
        x->memo = m;
        m = old;
    }
    pthread_mutex_unlock(&x->memo_lock);
    tf__ext_memo_free(m);
}

uint64_t tf_extender_memo_hits(struct tf_extender *x)
{
    return atomic_load(&x->memo_hits);
}
