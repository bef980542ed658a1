/* SPDX-License-Identifier: Apache-2.0
 *
 * The last /filter's answer, kept for the /prioritize that follows it, and its candidates, for
 * the next /filter (see extender_int.h).
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

uint64_t tf_extender_cands_hits(struct tf_extender *x)
{
    return atomic_load(&x->cands_hits);
}

void tf__ext_cands_free(struct tf__ext_cands *c)
{
    if (!c)
        return;
    free(c->text);
    free(c->names_buf);
    free(c->offs);
    free(c->lens);
    free(c->hashes);
    free(c->ids);
    free(c);
}

struct tf__ext_cands *tf__ext_cands_new(const struct tf_ext_args *args, const uint32_t *ids,
                                        uint64_t serial)
{
    if (!args->names_text || !args->name_hashes || !args->names_buf || !ids || !args->n_nodes)
        return NULL;
    size_t n = args->n_nodes;
    /* The names lie in order in the decoder's buffer, each NUL-terminated where its closing
     * quote was: the buffer up to the last one's NUL holds them all. */
    const char *buf = args->names_buf;
    size_t buf_len = (size_t)(args->node_names[n - 1] - buf) + args->name_lens[n - 1] + 1;
    struct tf__ext_cands *c = calloc(1, sizeof(*c));
    if (!c || !(c->text = malloc(args->names_text_len)) || !(c->names_buf = malloc(buf_len)) ||
        !(c->offs = malloc(n * sizeof(*c->offs))) || !(c->lens = malloc(n * sizeof(*c->lens))) ||
        !(c->hashes = malloc(n * sizeof(*c->hashes))) || !(c->ids = malloc(n * sizeof(*c->ids)))) {
        tf__ext_cands_free(c);
        return NULL;
    }
    memcpy(c->text, args->names_text, args->names_text_len);
    c->text_len = args->names_text_len;
    memcpy(c->names_buf, buf, buf_len);
    c->buf_len = buf_len;
    for (size_t i = 0; i < n; i++)
        c->offs[i] = (uint32_t)(args->node_names[i] - buf);
    memcpy(c->lens, args->name_lens, n * sizeof(*c->lens));
    memcpy(c->hashes, args->name_hashes, n * sizeof(*c->hashes));
    memcpy(c->ids, ids, n * sizeof(*c->ids));
    c->n = n;
    c->serial = serial;
    c->names_plain = args->names_plain;
    c->distinct = args->names_distinct;
    return c;
}

bool tf__ext_cands_apply(const struct tf__ext_cands *c, struct tf_ext_args *args)
{
    const char **names = malloc(c->n * sizeof(*names));
    size_t *lens = malloc(c->n * sizeof(*lens));
    uint32_t *hashes = malloc(c->n * sizeof(*hashes));
    char *buf = malloc(c->buf_len);
    if (!names || !lens || !hashes || !buf) {
        free(names);
        free(lens);
        free(hashes);
        free(buf);
        return false;
    }
    memcpy(buf, c->names_buf, c->buf_len);
    for (size_t i = 0; i < c->n; i++)
        names[i] = buf + c->offs[i];
    memcpy(lens, c->lens, c->n * sizeof(*lens));
    memcpy(hashes, c->hashes, c->n * sizeof(*hashes));
    args->node_names = names;
    args->name_lens = lens;
    args->name_hashes = hashes;
    args->names_buf = buf;
    args->n_nodes = c->n;
    args->names_plain = c->names_plain;
    return true;
}

struct tf__ext_cands *tf__ext_cands_take(struct tf_extender *x)
{
    pthread_mutex_lock(&x->memo_lock);
    struct tf__ext_cands *c = x->cands;
    x->cands = NULL;
    pthread_mutex_unlock(&x->memo_lock);
    return c;
}

void tf__ext_cands_put(struct tf_extender *x, struct tf__ext_cands *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&x->memo_lock);
    struct tf__ext_cands *old = x->cands;
    x->cands = c;
    pthread_mutex_unlock(&x->memo_lock);
    tf__ext_cands_free(old);
}
