/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes objects -> compaction and defrag inputs (see plan_state.h).
 */
#include "core/plan_state.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "core/selector.h"
#include "core/spec.h"
#include "core/timeutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_AGO_MS INT64_C(0) /* "created long ago" for assumed GPUNodes: the epoch */

struct pod {
    char *ns, *name, *node, *key; /* owned */
    int64_t created_ms;
    bool pdb_covered;
    bool placed;
    uint32_t node_id;
    struct tf_spec spec;
    struct tf_alloc_request req;
    struct tf_alloc_request_buf *buf; /* owned */
};

struct nodefacts {
    bool have_node, have_gpunode;
    bool unschedulable, do_not_disrupt;
    bool running, deleting;
    int64_t created_ms;
    char *foreign_pod; /* owned "ns/name" */
    uint32_t tf_pods;
};

struct annot {
    char *pool, *key, *value; /* owned */
};

struct tf_plan_state {
    struct tf_alloc *a;
    struct pod *pods;
    size_t npods, cap;
    struct nodefacts *facts; /* by cluster node id */
    uint32_t nnodes;
    struct annot *annots;
    size_t nannots, acap;
    char **warnings;
    size_t nwarn, wcap;
    bool assume_gpunodes;
};

/* Path lookups on json-c trees (libtfcore does not link the YAML reader's helpers). */
static json_object *jpath(json_object *o, ...) __attribute__((sentinel));
static const char *jstr(json_object *o, ...) __attribute__((sentinel));

static json_object *vpath(json_object *o, va_list ap)
{
    const char *k;
    while (o && (k = va_arg(ap, const char *))) {
        json_object *n;
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &n))
            return NULL;
        o = n;
    }
    return o;
}

static json_object *jpath(json_object *o, ...)
{
    va_list ap;
    va_start(ap, o);
    json_object *r = vpath(o, ap);
    va_end(ap);
    return json_object_is_type(r, json_type_object) ? r : NULL;
}

static const char *jstr(json_object *o, ...)
{
    va_list ap;
    va_start(ap, o);
    json_object *r = vpath(o, ap);
    va_end(ap);
    return json_object_is_type(r, json_type_string) ? json_object_get_string(r) : NULL;
}

static void warn(struct tf_plan_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct tf_plan_state *s, const char *fmt, ...)
{
    char **w = tf_grow(s->warnings, &s->wcap, s->nwarn + 1, sizeof(*w), 8);
    if (!w)
        return; /* a lost warning is not worth failing the plan */
    s->warnings = w;
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) >= 0)
        s->warnings[s->nwarn++] = m;
    va_end(ap);
}

size_t tf_plan_state_nwarnings(const struct tf_plan_state *s)
{
    return s->nwarn;
}

const char *tf_plan_state_warning(const struct tf_plan_state *s, size_t i)
{
    return i < s->nwarn ? s->warnings[i] : NULL;
}

void tf_plan_state_destroy(struct tf_plan_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->npods; i++) {
        struct pod *p = &s->pods[i];
        free(p->ns);
        free(p->name);
        free(p->node);
        free(p->key);
        free(p->buf);
        tf_spec_free(&p->spec);
    }
    free(s->pods);
    for (uint32_t i = 0; i < s->nnodes; i++)
        free(s->facts[i].foreign_pod);
    free(s->facts);
    for (size_t i = 0; i < s->nannots; i++) {
        free(s->annots[i].pool);
        free(s->annots[i].key);
        free(s->annots[i].value);
    }
    free(s->annots);
    for (size_t i = 0; i < s->nwarn; i++)
        free(s->warnings[i]);
    free(s->warnings);
    free(s);
}

static const char *kind_of(json_object *doc)
{
    return jstr(doc, "kind", NULL);
}

static bool label_true(json_object *labels, const char *key)
{
    json_object *v;
    if (!labels || !json_object_object_get_ex(labels, key, &v) || !v)
        return false;
    if (json_object_is_type(v, json_type_boolean))
        return json_object_get_boolean(v);
    return json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), "true");
}

static uint32_t node_id(const struct tf_plan_state *s, const char *name)
{
    const struct tf_cluster *c = tf_alloc_cluster(s->a);
    return name ? tf_cluster_node_find(c, name, strlen(name)) : TF_NONE;
}

static int64_t timestamp(struct tf_plan_state *s, json_object *doc, const char *field,
                         const char *what, int64_t dflt)
{
    const char *t = jstr(doc, "metadata", field, NULL);
    if (!t)
        return dflt;
    int64_t ms;
    char err[160];
    if (tf_rfc3339_parse(t, &ms, field, err, sizeof(err))) {
        warn(s, "%s: %s", what, err);
        return dflt;
    }
    return ms;
}

/* True when a container of POD asks for a GPU resource TensorFusion does not manage. */
static bool native_gpu(json_object *pod)
{
    json_object *cs = jpath(pod, "spec", NULL);
    static const char *const lists[] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        json_object *arr;
        if (!cs || !json_object_object_get_ex(cs, lists[l], &arr) ||
            !json_object_is_type(arr, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *c = json_object_array_get_idx(arr, i);
            static const char *const sides[] = {"limits", "requests"};
            for (int k = 0; k < 2; k++) {
                json_object *r = jpath(c, "resources", sides[k], NULL);
                if (!r)
                    continue;
                json_object_object_foreach(r, key, v)
                {
                    (void)v;
                    /* nvidia.com/gpu, amd.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb */
                    const char *slash = strchr(key, '/');
                    if (slash && (strstr(slash, "gpu") || !strncmp(slash, "/mig-", 5)))
                        return true;
                }
            }
        }
    }
    return false;
}

static int add_annotations(struct tf_plan_state *s, json_object *doc)
{
    const char *name = jstr(doc, "metadata", "name", NULL);
    json_object *ann = jpath(doc, "metadata", "annotations", NULL);
    if (!name || !ann)
        return 0;
    json_object_object_foreach(ann, k, v)
    {
        if (!v || !json_object_is_type(v, json_type_string) || strncmp(k, TF_KEY_PREFIX, 17))
            continue;
        struct annot *na = tf_grow(s->annots, &s->acap, s->nannots + 1, sizeof(*na), 8);
        if (!na)
            return TF_ENOMEM;
        s->annots = na;
        struct annot *a = &s->annots[s->nannots];
        a->pool = strdup(name);
        a->key = strdup(k);
        a->value = strdup(json_object_get_string(v));
        if (!a->pool || !a->key || !a->value) {
            free(a->pool);
            free(a->key);
            free(a->value);
            return TF_ENOMEM;
        }
        s->nannots++;
    }
    return 0;
}

const char *tf_plan_state_pool_annotation(const struct tf_plan_state *s, const char *pool,
                                          const char *key)
{
    for (size_t i = 0; i < s->nannots; i++)
        if (!strcmp(s->annots[i].pool, pool) && !strcmp(s->annots[i].key, key))
            return s->annots[i].value;
    return NULL;
}

static void node_object(struct tf_plan_state *s, json_object *doc, bool gpunode, int64_t now_ms)
{
    const char *name = jstr(doc, "metadata", "name", NULL);
    uint32_t id = node_id(s, name);
    if (id == TF_NONE) {
        if (gpunode)
            warn(s, "GPUNode %s: not a node of the cluster description: ignored",
                 name ? name : "(no name)");
        return;
    }
    struct nodefacts *f = &s->facts[id];
    json_object *labels = jpath(doc, "metadata", "labels", NULL);
    if (label_true(labels, TF_LABEL_DO_NOT_DISRUPT))
        f->do_not_disrupt = true;
    if (gpunode) {
        f->have_gpunode = true;
        const char *phase = jstr(doc, "status", "phase", NULL);
        f->running = phase && !strcmp(phase, "Running");
        char what[300];
        snprintf(what, sizeof(what), "GPUNode %s", name);
        f->created_ms = timestamp(s, doc, "creationTimestamp", what, now_ms);
        f->deleting = jstr(doc, "metadata", "deletionTimestamp", NULL) != NULL;
    } else {
        f->have_node = true;
        json_object *u = jpath(doc, "spec", NULL);
        json_object *v;
        if (u && json_object_object_get_ex(u, "unschedulable", &v) && v &&
            json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v))
            f->unschedulable = true;
    }
}

struct pdb {
    const char *ns;
    json_object *sel; /* borrowed from the docs, NULL = matches nothing */
};

static int pod_object(struct tf_plan_state *s, json_object *doc, const struct pdb *pdbs,
                      size_t npdb, int64_t now_ms, char *err, size_t errlen)
{
    const char *name = jstr(doc, "metadata", "name", NULL);
    const char *ns = jstr(doc, "metadata", "namespace", NULL);
    const char *node = jstr(doc, "spec", "nodeName", NULL);
    const char *phase = jstr(doc, "status", "phase", NULL);
    if (!ns)
        ns = "default";
    if (!name) {
        tf_errf(err, errlen, "a Pod has no metadata.name");
        return TF_EINVAL;
    }
    if (!node || (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
        return 0;
    uint32_t nid = node_id(s, node);
    struct tf_spec spec;
    char perr[512];
    int rc = tf_spec_parse(doc, NULL, NULL, &spec, perr, sizeof(perr));
    bool tf = rc == 0 && spec.enabled;
    if (rc == TF_ENOMEM)
        return rc;
    if (rc) {
        /* An invalid TensorFusion pod still runs there: keep it as an unplaced worker. */
        json_object *labels = jpath(doc, "metadata", "labels", NULL);
        tf = label_true(labels, TF_LABEL_ENABLED);
        warn(s, "pod %s/%s: %s", ns, name, perr);
    }
    if (nid == TF_NONE) {
        if (tf)
            warn(s, "pod %s/%s: node %s is not in the cluster description: ignored", ns, name,
                 node);
        tf_spec_free(&spec);
        return 0;
    }
    if (!tf) {
        tf_spec_free(&spec);
        if (native_gpu(doc) && !s->facts[nid].foreign_pod) {
            size_t l = strlen(ns) + strlen(name) + 2;
            char *k = malloc(l);
            if (!k)
                return TF_ENOMEM;
            snprintf(k, l, "%s/%s", ns, name);
            s->facts[nid].foreign_pod = k;
        }
        return 0;
    }
    struct pod *np = tf_grow(s->pods, &s->cap, s->npods + 1, sizeof(*np), 16);
    if (!np) {
        tf_spec_free(&spec);
        return TF_ENOMEM;
    }
    s->pods = np;
    struct pod *p = &s->pods[s->npods];
    memset(p, 0, sizeof(*p));
    p->spec = spec;
    p->ns = strdup(ns);
    p->name = strdup(name);
    p->node = strdup(node);
    p->buf = calloc(1, sizeof(*p->buf));
    size_t kl = strlen(ns) + strlen(name) + 2;
    p->key = malloc(kl);
    if (!p->ns || !p->name || !p->node || !p->buf || !p->key) {
        free(p->ns);
        free(p->name);
        free(p->node);
        free(p->buf);
        free(p->key);
        tf_spec_free(&p->spec);
        return TF_ENOMEM;
    }
    snprintf(p->key, kl, "%s/%s", ns, name);
    s->npods++;
    p->node_id = nid;
    s->facts[nid].tf_pods++;
    char what[400];
    snprintf(what, sizeof(what), "pod %s", p->key);
    p->created_ms = timestamp(s, doc, "creationTimestamp", what, now_ms);
    json_object *labels = jpath(doc, "metadata", "labels", NULL);
    for (size_t i = 0; i < npdb && !p->pdb_covered; i++)
        if (!strcmp(pdbs[i].ns, ns) && tf_selector_match(pdbs[i].sel, labels))
            p->pdb_covered = true;
    if (rc) /* invalid spec: nothing to place */
        return 0;
    char aerr[512];
    if (tf_alloc_request_from_spec(&p->spec, p->ns, p->name, &p->req, p->buf, aerr, sizeof(aerr))) {
        warn(s, "pod %s: %s", p->key, aerr);
        return 0;
    }
    const char *ids = jstr(doc, "metadata", "annotations", TF_ANN_GPU_IDS_KEY, NULL);
    int prc;
    if (ids && *ids) {
        const char *uuids[TF_NODE_MAX_GPUS];
        char copy[4096];
        tf_strlcpy(copy, ids, sizeof(copy));
        size_t n = 0;
        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < TF_NODE_MAX_GPUS;
             t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ')
                t++;
            uuids[n++] = t;
        }
        prc = tf_alloc_restore(s->a, &p->req, node, uuids, n, aerr, sizeof(aerr));
    } else {
        prc = tf_alloc_reserve(s->a, &p->req, node, NULL, aerr, sizeof(aerr));
    }
    if (prc == TF_ENOMEM)
        return prc;
    if (prc)
        warn(s, "pod %s: its GPUs on node %s cannot be accounted: %s", p->key, node, aerr);
    else
        p->placed = true;
    return 0;
}

static void cluster_labels(struct tf_plan_state *s, json_object *doc)
{
    json_object *arr;
    if (!json_object_is_type(doc, json_type_object) ||
        !json_object_object_get_ex(doc, "pools", &arr) ||
        !json_object_is_type(arr, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *nodes;
        json_object *pool = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(pool, json_type_object) ||
            !json_object_object_get_ex(pool, "nodes", &nodes) ||
            !json_object_is_type(nodes, json_type_array))
            continue;
        for (size_t k = 0; k < json_object_array_length(nodes); k++) {
            json_object *n = json_object_array_get_idx(nodes, k);
            const char *name = jstr(n, "name", NULL);
            uint32_t id = node_id(s, name);
            if (id != TF_NONE && label_true(jpath(n, "labels", NULL), TF_LABEL_DO_NOT_DISRUPT))
                s->facts[id].do_not_disrupt = true;
        }
    }
}

int tf_plan_state_load(struct tf_alloc *a, json_object *docs, const struct tf_plan_state_opts *o,
                       int64_t now_ms, struct tf_plan_state **out, char *err, size_t errlen)
{
    *out = NULL;
    if (docs && !json_object_is_type(docs, json_type_array)) {
        tf_errf(err, errlen, "state: expected a list of Kubernetes objects");
        return TF_EINVAL;
    }
    struct tf_plan_state *s = calloc(1, sizeof(*s));
    const struct tf_cluster *c = tf_alloc_cluster(a);
    struct pdb *pdbs = NULL;
    int rc = TF_ENOMEM;
    if (!s)
        goto nomem;
    s->a = a;
    s->nnodes = c->nnodes;
    s->assume_gpunodes = o && o->assume_gpunodes;
    s->facts = calloc(c->nnodes ? c->nnodes : 1, sizeof(*s->facts));
    if (!s->facts)
        goto nomem;
    if (o && o->cluster_doc)
        cluster_labels(s, o->cluster_doc);
    size_t n = docs ? json_object_array_length(docs) : 0;
    pdbs = calloc(n ? n : 1, sizeof(*pdbs));
    if (!pdbs)
        goto nomem;
    size_t npdb = 0;
    /* First everything but pods, so that pods see every PDB and node. */
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(docs, i);
        const char *k = kind_of(d);
        if (!k) {
            tf_errf(err, errlen, "state: object %zu has no kind", i);
            rc = TF_EINVAL;
            goto fail;
        }
        if (!strcmp(k, "Node")) {
            node_object(s, d, false, now_ms);
        } else if (!strcmp(k, "GPUNode")) {
            node_object(s, d, true, now_ms);
        } else if (!strcmp(k, "PodDisruptionBudget")) {
            const char *ns = jstr(d, "metadata", "namespace", NULL);
            pdbs[npdb].ns = ns ? ns : "default";
            pdbs[npdb].sel = jpath(d, "spec", "selector", NULL);
            npdb++;
        } else if (!strcmp(k, "GPUPool")) {
            if ((rc = add_annotations(s, d)))
                goto fail;
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(docs, i);
        if (strcmp(kind_of(d), "Pod"))
            continue;
        if ((rc = pod_object(s, d, pdbs, npdb, now_ms, err, errlen)))
            goto fail;
    }
    free(pdbs);
    *out = s;
    return 0;
nomem:
    tf_errf(err, errlen, "state: out of memory");
    rc = TF_ENOMEM;
fail:
    free(pdbs);
    tf_plan_state_destroy(s);
    return rc;
}

int tf_plan_state_compaction(const struct tf_plan_state *s, uint32_t pool,
                             struct tf_compaction_node **nodes, size_t *n)
{
    const struct tf_cluster *c = tf_alloc_cluster(s->a);
    *nodes = NULL;
    *n = 0;
    if (pool >= c->npools)
        return TF_EINVAL;
    const struct tf_pool *p = &c->pools[pool];
    struct tf_compaction_node *v = calloc(p->nnodes ? p->nnodes : 1, sizeof(*v));
    if (!v)
        return TF_ENOMEM;
    for (uint32_t i = 0; i < p->nnodes; i++) {
        uint32_t id = p->nodes[i];
        const struct tf_node *nd = &c->nodes[id];
        const struct nodefacts *f = &s->facts[id];
        struct tf_compaction_node *o = &v[i];
        o->name = nd->name;
        for (unsigned k = 0; k < nd->ngpus; k++) {
            const struct tf_gpu *g = &c->gpus[nd->gpu_first + k];
            o->tflops_milli += g->cap_tflops;
            o->vram_bytes += g->cap_vram;
            o->avail_tflops_milli += g->avail_tflops;
            o->avail_vram_bytes += g->avail_vram;
        }
        o->workers = f->tf_pods > nd->nworkers ? f->tf_pods : nd->nworkers;
        o->gpunode_found = f->have_gpunode || s->assume_gpunodes;
        o->running = f->have_gpunode ? f->running : s->assume_gpunodes;
        o->created_ms = f->have_gpunode ? f->created_ms : LONG_AGO_MS;
        o->do_not_disrupt = f->do_not_disrupt;
        o->deleting = f->deleting;
    }
    *nodes = v;
    *n = p->nnodes;
    return 0;
}

int tf_plan_state_defrag(const struct tf_plan_state *s, struct tf_defrag_node **nodes, size_t *nn,
                         struct tf_defrag_pod **pods, size_t *np)
{
    const struct tf_cluster *c = tf_alloc_cluster(s->a);
    *nodes = calloc(c->nnodes ? c->nnodes : 1, sizeof(**nodes));
    *pods = calloc(s->npods ? s->npods : 1, sizeof(**pods));
    if (!*nodes || !*pods) {
        free(*nodes);
        free(*pods);
        *nodes = NULL;
        *pods = NULL;
        return TF_ENOMEM;
    }
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const struct nodefacts *f = &s->facts[i];
        (*nodes)[i] = (struct tf_defrag_node){c->nodes[i].name, f->unschedulable, f->do_not_disrupt,
                                              f->foreign_pod};
    }
    *nn = c->nnodes;
    size_t k = 0;
    for (size_t i = 0; i < s->npods; i++) {
        const struct pod *p = &s->pods[i];
        (*pods)[k++] = (struct tf_defrag_pod){
            p->ns, p->name, p->node, p->created_ms, p->pdb_covered, p->placed ? &p->req : NULL};
    }
    *np = k;
    return 0;
}
