/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl simulate --cluster CLUSTER.yaml --pods PODS.yaml [--placement MODE] [--preempt]
 * [-o json|table]`: places a stream of pod manifests on a described cluster with the real
 * allocator, reading each pod through the workload spec parser (core/spec.h) exactly as the
 * webhook does, and prints every decision and the final per-GPU and per-node allocation.
 *
 * The pods file is a YAML/JSON document stream, processed in order:
 *   - Pod (and Deployment, StatefulSet, ReplicaSet, Job, ... : spec.replicas pods named
 *     <name>-0..N-1; enabled-replicas limits how many are TensorFusion pods) arrives;
 *   - kind: WorkloadProfile is remembered for later pods that reference it;
 *   - kind: Delete with metadata {name, namespace} removes that pod (or a controller's
 *     replicas) and frees its GPUs.
 * Pods without TensorFusion enabled are skipped with a note on stderr. A document that cannot
 * be simulated (a pod the spec parser rejects, a missing name or profile, a pod arriving
 * twice, a kind that is none of the above) is refused: its decision says why, the message
 * also goes to stderr with the file and document number, and the rest of the stream is
 * simulated.
 *
 * -o json prints {"decisions": [{"pod", "node", "gpus": [uuid...]} | {"pod", "node": null,
 * "reasons": [...]}], "gpus": [{"uuid", "node", "model", "capacityTflops", "availableTflops",
 * "capacityVramBytes", "availableVramBytes", "isolation", "workloads"}], "nodes": [...]}.
 * With --preempt, a high/critical pod that does not fit evicts the minimal set of low/medium
 * pods and its decision lists them under "preempted". A refused document's decision is
 * {"pod": "ns/name" (or "document N" without a name), "document": N, "node": null,
 * "refused": message}.
 *
 * Exit codes: 0 simulated (unschedulable pods are results, not errors); 3 simulated, but some
 * documents were refused (each is a decision, and on stderr); 2 bad usage or an unusable file
 * (cluster description errors, YAML syntax: message with the file and the offending path on
 * stderr, nothing on stdout); 1 runtime failure.
 */
#include "cli/cmds.h"
#include "common/dynbuf.h"
#include "common/err.h"
#include "common/yamljson.h"
#include "core/alloc.h"
#include "core/cluster_yaml.h"
#include "core/preempt.h"
#include "core/quantity.h"
#include "core/spec.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (64u << 20)
#define REASONS_CAP (1u << 20)
#define MAX_REPLICAS 100000

struct sim {
    const char *pods_path;
    struct tf_cluster *c;
    struct tf_quota_set *q;
    struct tf_alloc *a;
    struct tf_profile *profiles;
    size_t nprofiles;
    bool preempt;
    json_object *decisions; /* owned */
    char *reasons;          /* REASONS_CAP bytes */
    size_t refused;         /* documents refused */
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tfctl simulate --cluster CLUSTER.yaml --pods PODS.yaml "
               "[--placement MODE] [--preempt] [-o json|table]\n"
               "  -c, --cluster FILE     cluster description (pools, nodes, GPUs, quotas)\n"
               "  -p, --pods FILE        pod manifests in arrival order; kind: Delete removes\n"
               "      --placement MODE   override every pool's placement: CompactFirst,\n"
               "                         LowLoadFirst or NodeCompactGPULowLoad\n"
               "      --preempt          let high/critical pods evict low/medium ones\n"
               "  -o, --output FORMAT    table (default) or json\n"
               "exit status: 0 simulated, 3 simulated with documents refused (listed with\n"
               "their reasons), 2 bad usage or an unusable file, 1 runtime failure\n");
}

/* Reads PATH ("-" = stdin) into B. 0 or TF_EIO / TF_ERANGE / TF_ENOMEM (message printed). */
static int read_file(const char *path, struct tf_dynbuf *b)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "tfctl simulate: %s: %s\n", path, strerror(errno));
        return TF_EIO;
    }
    char chunk[65536];
    size_t got;
    int rc = 0;
    while (!rc && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = tf_dynbuf_add(b, chunk, got);
    if (!rc && ferror(f))
        rc = TF_EIO;
    if (f != stdin)
        fclose(f);
    if (rc)
        fprintf(stderr, "tfctl simulate: %s: %s\n", path,
                rc == TF_ERANGE ? "file too large" : tf_strerror(rc));
    return rc;
}

static json_object *milli_json(int64_t milli)
{
    char s[32];
    tf_quantity_format_milli(milli, s, sizeof(s));
    return json_object_new_double_s((double)milli / 1000.0, s);
}

/* ---------- decisions ---------- */

static json_object *new_decision(const char *key)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "pod", json_object_new_string(key));
    return d;
}

static void add_placed(struct sim *s, const char *key, const struct tf_alloc_result *res,
                       json_object *preempted)
{
    json_object *d = new_decision(key);
    json_object_object_add(d, "node", json_object_new_string(s->c->nodes[res->node].name));
    json_object *g = json_object_new_array();
    for (unsigned i = 0; i < res->ngpus; i++)
        json_object_array_add(g, json_object_new_string(s->c->gpus[res->gpus[i]].uuid));
    json_object_object_add(d, "gpus", g);
    if (preempted)
        json_object_object_add(d, "preempted", preempted);
    json_object_array_add(s->decisions, d);
}

static void add_unschedulable(struct sim *s, const char *key, const struct tf_reasons *rb,
                              const char *err)
{
    json_object *d = new_decision(key);
    json_object_object_add(d, "node", NULL);
    json_object *r = json_object_new_array();
    for (const char *x = tf_reasons_next(rb, NULL); x; x = tf_reasons_next(rb, x))
        json_object_array_add(r, json_object_new_string(x));
    if (json_object_array_length(r) == 0)
        json_object_array_add(r, json_object_new_string(err));
    json_object_object_add(d, "reasons", r);
    json_object_array_add(s->decisions, d);
}

/* Refuses document DOC (pod KEY, NULL when it has no name): a decision with the message, the
 * message on stderr. Returns 0: the stream goes on. */
__attribute__((format(printf, 4, 5))) static int refuse(struct sim *s, size_t doc, const char *key,
                                                        const char *fmt, ...)
{
    char msg[1200], name[64];
    int n = snprintf(msg, sizeof(msg), "document %zu: ", doc);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tfctl simulate: %s: %s\n", s->pods_path, msg);
    snprintf(name, sizeof(name), "document %zu", doc);
    json_object *d = new_decision(key ? key : name);
    json_object_object_add(d, "document", json_object_new_int64((int64_t)doc));
    json_object_object_add(d, "node", NULL);
    json_object_object_add(d, "refused", json_object_new_string(msg));
    json_object_array_add(s->decisions, d);
    s->refused++;
    return 0;
}

/* The "namespace/name" of a document's pod in KEY, or NULL when it has no name. */
static const char *doc_key(json_object *doc, const char *ns, char *key, size_t len)
{
    const char *name = tf_json_str(doc, "metadata", "name", NULL);
    if (!name || !*name)
        return NULL;
    snprintf(key, len, "%s/%s", ns, name);
    return key;
}

/* Evicts PLAN's victims; returns their keys (a new JSON array). */
static json_object *evict(struct sim *s, const struct tf_preempt_plan *plan)
{
    json_object *keys = json_object_new_array();
    for (unsigned i = 0; i < plan->nvictims; i++) {
        const struct tf_alloc_record *r = tf_alloc_record_at(s->a, plan->victims[i]);
        json_object_array_add(keys, json_object_new_string(tf_alloc_record_key(r)));
    }
    for (size_t i = 0; i < json_object_array_length(keys); i++) {
        char key[TF_KEY_MAX];
        snprintf(key, sizeof(key), "%s",
                 json_object_get_string(json_object_array_get_idx(keys, i)));
        char *slash = strchr(key, '/');
        *slash = '\0';
        tf_alloc_release(s->a, key, slash + 1);
    }
    return keys;
}

/* Places one pod (or refuses it). Returns 0, or 1 for a runtime failure. */
static int place(struct sim *s, const struct tf_spec *spec, const char *ns, const char *name,
                 size_t doc)
{
    struct tf_alloc_request req;
    struct tf_alloc_request_buf buf;
    char err[1024], key[TF_KEY_MAX];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (tf_alloc_request_from_spec(spec, ns, name, &req, &buf, err, sizeof(err)))
        return refuse(s, doc, key, "%s", err);
    if (tf_alloc_find(s->a, req.ns, req.name) != TF_NONE)
        return refuse(s, doc, key, "pod %s arrives again without a Delete", key);
    struct tf_reasons rb;
    struct tf_alloc_result res;
    tf_reasons_init(&rb, s->reasons, REASONS_CAP);
    int rc = tf_alloc_place(s->a, &req, &res, &rb, err, sizeof(err));
    if (rc == 0) {
        add_placed(s, key, &res, NULL);
        return 0;
    }
    if (rc == TF_ENOSPC && s->preempt) {
        struct tf_preempt_plan plan;
        char perr[512];
        if (tf_preempt_plan(s->a, &req, &plan, perr, sizeof(perr)) == 0 && plan.nvictims) {
            json_object *victims = evict(s, &plan);
            if (tf_alloc_place(s->a, &req, &res, NULL, perr, sizeof(perr)) == 0) {
                add_placed(s, key, &res, victims);
                return 0;
            }
            json_object_put(victims); /* not reached: the plan guarantees the room */
        }
    }
    if (rc == TF_ENOMEM)
        return 1;
    add_unschedulable(s, key, &rb, err);
    return 0;
}

/* ---------- pods stream ---------- */

static const char *doc_ns(json_object *doc)
{
    const char *ns = tf_json_str(doc, "metadata", "namespace", NULL);
    json_object *t = tf_spec_pod_template(doc);
    if (!ns && t)
        ns = tf_json_str(t, "metadata", "namespace", NULL);
    return ns && *ns ? ns : "default";
}

static const struct tf_profile *find_profile(const struct sim *s, const char *ns, const char *name)
{
    for (size_t i = s->nprofiles; i-- > 0;)
        if (!strcmp(s->profiles[i].name, name) &&
            (!s->profiles[i].ns || !strcmp(s->profiles[i].ns, ns)))
            return &s->profiles[i];
    return NULL;
}

static int add_profile(struct sim *s, json_object *doc, size_t i)
{
    struct tf_profile p;
    char err[512], key[TF_KEY_MAX];
    if (tf_profile_parse(doc, &p, err, sizeof(err)))
        return refuse(s, i, doc_key(doc, doc_ns(doc), key, sizeof(key)), "%s", err);
    struct tf_profile *np = realloc(s->profiles, (s->nprofiles + 1) * sizeof(*np));
    if (!np) {
        tf_profile_free(&p);
        return 1;
    }
    s->profiles = np;
    s->profiles[s->nprofiles++] = p;
    return 0;
}

static int delete_pod(struct sim *s, json_object *doc, size_t i)
{
    const char *name = tf_json_str(doc, "metadata", "name", NULL);
    const char *ns = tf_json_str(doc, "metadata", "namespace", NULL);
    if (!name || !*name)
        return refuse(s, i, NULL, "metadata.name: required for kind Delete");
    if (!ns || !*ns)
        ns = "default";
    if (tf_alloc_release(s->a, ns, name) == 0)
        return 0;
    /* A controller's replicas <name>-0, -1, ... */
    char rep[TF_KEY_MAX];
    int k = 0;
    for (;; k++) {
        snprintf(rep, sizeof(rep), "%s-%d", name, k);
        if (tf_alloc_release(s->a, ns, rep))
            break;
    }
    if (k == 0)
        fprintf(stderr, "tfctl simulate: note: document %zu: delete %s/%s: no such placed pod\n", i,
                ns, name);
    return 0;
}

/* Pool-level defaults for a pod, as the webhook would resolve them. */
static void pool_defaults(const struct sim *s, json_object *doc, const char *ns,
                          struct tf_pool_defaults *d)
{
    memset(d, 0, sizeof(*d));
    json_object *t = tf_spec_pod_template(doc);
    const char *pname = t ? tf_json_str(t, "metadata", "annotations", TF_ANN_GPUPOOL, NULL) : NULL;
    uint32_t pid = pname ? tf_cluster_pool_find(s->c, pname) : TF_NONE;
    if (pid == TF_NONE)
        pid = tf_cluster_default_pool(s->c);
    if (pid != TF_NONE) {
        d->pool_name = s->c->pools[pid].name;
        d->qos = s->c->pools[pid].cfg.default_qos;
    }
    const struct tf_quota_spec *q = tf_quota_get(s->q, ns, strlen(ns));
    if (q) { /* GPUResourceQuota single.defaultRequests / defaultLimits */
        if (q->default_requests.tflops != TF_QUOTA_UNSET) {
            d->requests.tflops_milli = q->default_requests.tflops;
            d->requests.tflops_set = true;
        }
        if (q->default_requests.vram != TF_QUOTA_UNSET) {
            d->requests.vram_bytes = q->default_requests.vram;
            d->requests.vram_set = true;
        }
        if (q->default_limits.tflops != TF_QUOTA_UNSET) {
            d->limits.tflops_milli = q->default_limits.tflops;
            d->limits.tflops_set = true;
        }
        if (q->default_limits.vram != TF_QUOTA_UNSET) {
            d->limits.vram_bytes = q->default_limits.vram;
            d->limits.vram_set = true;
        }
    }
}

static int arrive(struct sim *s, json_object *doc, size_t i)
{
    const char *ns = doc_ns(doc);
    json_object *t = tf_spec_pod_template(doc);
    const char *pname =
        t ? tf_json_str(t, "metadata", "annotations", TF_ANN_WORKLOAD_PROFILE, NULL) : NULL;
    const struct tf_profile *prof = NULL;
    char key[TF_KEY_MAX];
    const char *dkey = doc_key(doc, ns, key, sizeof(key));
    if (pname && !(prof = find_profile(s, ns, pname)))
        return refuse(s, i, dkey,
                      "%s: WorkloadProfile %s/%s not found (put it in the pods file before the "
                      "pods that use it)",
                      TF_ANN_WORKLOAD_PROFILE, ns, pname);
    struct tf_pool_defaults d;
    pool_defaults(s, doc, ns, &d);
    struct tf_spec spec;
    char err[1024];
    int rc = tf_spec_parse_object(doc, prof, &d, &spec, err, sizeof(err));
    if (rc)
        return rc == TF_ENOMEM ? 1 : refuse(s, i, dkey, "%s", err);
    for (size_t w = 0; w < spec.nwarnings; w++)
        fprintf(stderr, "tfctl simulate: warning: document %zu: %s\n", i, spec.warnings[w]);
    const char *name = spec.name;
    if (!name || !*name) {
        tf_spec_free(&spec);
        return refuse(s, i, NULL, "metadata.name: required");
    }
    int out = 0;
    bool controller = spec.kind && strcmp(spec.kind, "Pod") != 0;
    int32_t n = controller ? (spec.has_replicas ? spec.replicas : 1) : 1;
    if (n < 0 || n > MAX_REPLICAS) {
        tf_spec_free(&spec);
        return refuse(s, i, dkey, "spec.replicas %d out of range 0..%d", n, MAX_REPLICAS);
    }
    if (!spec.enabled) {
        fprintf(stderr,
                "tfctl simulate: note: document %zu: %s/%s is not a TensorFusion pod "
                "(label " TF_LABEL_ENABLED " is not \"true\"): skipped\n",
                i, ns, name);
        tf_spec_free(&spec);
        return 0;
    }
    for (int32_t k = 0; k < n && !out; k++) {
        if (controller && spec.has_enabled_replicas && k >= spec.enabled_replicas)
            break; /* the rest of the replicas run without TensorFusion */
        char pod[TF_KEY_MAX];
        if (controller)
            snprintf(pod, sizeof(pod), "%s-%d", name, k);
        else
            snprintf(pod, sizeof(pod), "%s", name);
        out = place(s, &spec, ns, pod, i);
    }
    tf_spec_free(&spec);
    return out;
}

static int run_stream(struct sim *s, json_object *docs)
{
    for (size_t i = 0; i < json_object_array_length(docs); i++) {
        json_object *doc = json_object_array_get_idx(docs, i);
        const char *kind = tf_json_str(doc, "kind", NULL);
        int rc;
        if (kind && !strcmp(kind, "Delete"))
            rc = delete_pod(s, doc, i);
        else if (kind && !strcmp(kind, "WorkloadProfile"))
            rc = add_profile(s, doc, i);
        else if (tf_spec_kind_supported(doc))
            rc = arrive(s, doc, i);
        else {
            char key[TF_KEY_MAX];
            rc = refuse(s, i, doc_key(doc, doc_ns(doc), key, sizeof(key)),
                        "kind: %s%s%s is not a pod, a workload, a WorkloadProfile or Delete",
                        kind ? "\"" : "", kind ? kind : "(missing)", kind ? "\"" : "");
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* ---------- output ---------- */

static json_object *gpu_json(const struct sim *s, uint32_t gi)
{
    const struct tf_gpu *g = &s->c->gpus[gi];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "uuid", json_object_new_string(g->uuid));
    json_object_object_add(o, "node", json_object_new_string(s->c->nodes[g->node].name));
    json_object_object_add(o, "model", json_object_new_string(g->model->name));
    json_object_object_add(o, "capacityTflops", milli_json(g->cap_tflops));
    json_object_object_add(o, "availableTflops", milli_json(g->avail_tflops));
    json_object_object_add(o, "capacityVramBytes", json_object_new_int64(g->cap_vram));
    json_object_object_add(o, "availableVramBytes", json_object_new_int64(g->avail_vram));
    const char *iso = tf_isolation_name((enum tf_isolation)g->mode);
    json_object_object_add(o, "isolation", iso ? json_object_new_string(iso) : NULL);
    json_object *w = json_object_new_array();
    uint32_t ids[4096];
    size_t n = tf_alloc_gpu_workloads(s->a, gi, ids, 4096);
    if (n > 4096)
        n = 4096;
    for (size_t i = n; i-- > 0;) /* arrival order */
        json_object_array_add(
            w, json_object_new_string(tf_alloc_record_key(tf_alloc_record_at(s->a, ids[i]))));
    json_object_object_add(o, "workloads", w);
    return o;
}

struct node_sum {
    int64_t ct, at, cv, av;
};

static struct node_sum node_sum(const struct sim *s, uint32_t ni)
{
    struct node_sum t = {0, 0, 0, 0};
    const struct tf_node *n = &s->c->nodes[ni];
    for (unsigned i = 0; i < n->ngpus; i++) {
        const struct tf_gpu *g = &s->c->gpus[n->gpu_first + i];
        t.ct += g->cap_tflops;
        t.at += g->avail_tflops;
        t.cv += g->cap_vram;
        t.av += g->avail_vram;
    }
    return t;
}

static json_object *node_json(const struct sim *s, uint32_t ni)
{
    const struct tf_node *n = &s->c->nodes[ni];
    struct node_sum t = node_sum(s, ni);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(n->name));
    json_object_object_add(o, "pool", json_object_new_string(s->c->pools[n->pool].name));
    json_object_object_add(o, "gpus", json_object_new_int(n->ngpus));
    json_object_object_add(o, "workers", json_object_new_int64(n->nworkers));
    json_object_object_add(o, "capacityTflops", milli_json(t.ct));
    json_object_object_add(o, "availableTflops", milli_json(t.at));
    json_object_object_add(o, "capacityVramBytes", json_object_new_int64(t.cv));
    json_object_object_add(o, "availableVramBytes", json_object_new_int64(t.av));
    return o;
}

static void print_json(struct sim *s)
{
    json_object *root = json_object_new_object();
    json_object_object_add(root, "decisions", json_object_get(s->decisions));
    json_object *gpus = json_object_new_array(), *nodes = json_object_new_array();
    for (uint32_t g = 0; g < s->c->ngpus; g++)
        json_object_array_add(gpus, gpu_json(s, g));
    for (uint32_t n = 0; n < s->c->nnodes; n++)
        json_object_array_add(nodes, node_json(s, n));
    json_object_object_add(root, "gpus", gpus);
    json_object_object_add(root, "nodes", nodes);
    printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
}

static void fmt_pair_milli(char *buf, size_t len, int64_t avail, int64_t cap)
{
    char a[32], c[32];
    tf_quantity_format_milli(avail, a, sizeof(a));
    tf_quantity_format_milli(cap, c, sizeof(c));
    if (snprintf(buf, len, "%s/%s", a, c) >= (int)len)
        buf[len - 1] = '\0'; /* already terminated; the check keeps -Wformat-truncation quiet */
}

static void fmt_pair_bytes(char *buf, size_t len, int64_t avail, int64_t cap)
{
    char a[32], c[32];
    tf_quantity_format_bytes(avail, a, sizeof(a));
    tf_quantity_format_bytes(cap, c, sizeof(c));
    if (snprintf(buf, len, "%s/%s", a, c) >= (int)len)
        buf[len - 1] = '\0';
}

static void print_table(struct sim *s)
{
    size_t nd = json_object_array_length(s->decisions), placed = 0;
    printf("%-36s %-16s %s\n", "POD", "NODE", "GPUS / REASONS");
    for (size_t i = 0; i < nd; i++) {
        json_object *d = json_object_array_get_idx(s->decisions, i);
        const char *pod = tf_json_str(d, "pod", NULL);
        const char *node = tf_json_str(d, "node", NULL);
        json_object *list = tf_json_path(d, node ? "gpus" : "reasons", NULL);
        const char *refused = tf_json_str(d, "refused", NULL);
        if (refused) {
            printf("%-36s %-16s refused\n    %s\n", pod, "-", refused);
        } else if (node) {
            placed++;
            printf("%-36s %-16s", pod, node);
            for (size_t k = 0; k < json_object_array_length(list); k++)
                printf("%s%s", k ? "," : " ",
                       json_object_get_string(json_object_array_get_idx(list, k)));
            json_object *pre = tf_json_path(d, "preempted", NULL);
            for (size_t k = 0; pre && k < json_object_array_length(pre); k++)
                printf("%s%s", k ? "," : " (preempted ",
                       json_object_get_string(json_object_array_get_idx(pre, k)));
            printf("%s\n", tf_json_path(d, "preempted", NULL) ? ")" : "");
        } else {
            printf("%-36s %-16s unschedulable\n", pod, "-");
            for (size_t k = 0; k < json_object_array_length(list); k++)
                printf("    %s\n", json_object_get_string(json_object_array_get_idx(list, k)));
        }
    }
    printf("\n%zu of %zu pods placed, %u holding GPUs now", placed, nd - s->refused,
           tf_alloc_count(s->a));
    if (s->refused)
        printf("; %zu document%s refused", s->refused, s->refused == 1 ? "" : "s");
    printf("\n\n");
    printf("%-24s %-16s %-10s %-18s %-16s %-11s %s\n", "GPU", "NODE", "MODEL", "TFLOPS", "VRAM",
           "ISOLATION", "WORKLOADS");
    for (uint32_t gi = 0; gi < s->c->ngpus; gi++) {
        const struct tf_gpu *g = &s->c->gpus[gi];
        char t[72], v[72];
        fmt_pair_milli(t, sizeof(t), g->avail_tflops, g->cap_tflops);
        fmt_pair_bytes(v, sizeof(v), g->avail_vram, g->cap_vram);
        const char *iso = tf_isolation_name((enum tf_isolation)g->mode);
        printf("%-24s %-16s %-10s %-18s %-16s %-11s", g->uuid, s->c->nodes[g->node].name,
               g->model->name, t, v, iso ? iso : "-");
        uint32_t ids[4096];
        size_t n = tf_alloc_gpu_workloads(s->a, gi, ids, 4096);
        if (n > 4096)
            n = 4096;
        if (!n)
            printf(" -");
        for (size_t k = n; k-- > 0;)
            printf("%s%s", k == n - 1 ? " " : ",",
                   tf_alloc_record_key(tf_alloc_record_at(s->a, ids[k])));
        printf("%s\n", g->phase != TF_GPU_RUNNING ? "  (not Running)" : "");
    }
    printf("\n%-16s %-12s %5s %8s %-22s %-20s %s\n", "NODE", "POOL", "GPUS", "WORKERS", "TFLOPS",
           "VRAM", "ALLOCATED");
    for (uint32_t ni = 0; ni < s->c->nnodes; ni++) {
        const struct tf_node *n = &s->c->nodes[ni];
        struct node_sum t = node_sum(s, ni);
        char a[72], b[72];
        fmt_pair_milli(a, sizeof(a), t.at, t.ct);
        fmt_pair_bytes(b, sizeof(b), t.av, t.cv);
        printf("%-16s %-12s %5u %8u %-22s %-20s %3lld%% TFLOPS, %3lld%% VRAM\n", n->name,
               s->c->pools[n->pool].name, n->ngpus, n->nworkers, a, b,
               (long long)(t.ct ? (t.ct - t.at) * 100 / t.ct : 0),
               (long long)(t.cv ? (t.cv - t.av) * 100 / t.cv : 0));
    }
}

int tf_cmd_simulate(int argc, char **argv)
{
    static const struct option opts[] = {{"cluster", required_argument, NULL, 'c'},
                                         {"pods", required_argument, NULL, 'p'},
                                         {"placement", required_argument, NULL, 'P'},
                                         {"preempt", no_argument, NULL, 'E'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cluster_path = NULL, *pods_path = NULL, *placement = NULL, *output = "table";
    bool preempt = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:p:o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            cluster_path = optarg;
            break;
        case 'p':
            pods_path = optarg;
            break;
        case 'P':
            placement = optarg;
            break;
        case 'E':
            preempt = true;
            break;
        case 'o':
            output = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || !cluster_path || !pods_path ||
        (strcmp(output, "json") && strcmp(output, "table"))) {
        usage(stderr);
        return 2;
    }
    enum tf_placement_mode mode = TF_PLACE_COMPACT_FIRST;
    if (placement && tf_placement_parse(placement, &mode)) {
        fprintf(stderr,
                "tfctl simulate: --placement: unknown mode \"%s\" (CompactFirst, LowLoadFirst, "
                "NodeCompactGPULowLoad)\n",
                placement);
        return 2;
    }

    int ret = 1;
    struct sim s;
    memset(&s, 0, sizeof(s));
    s.pods_path = pods_path;
    s.preempt = preempt;
    struct tf_dynbuf cb, pb;
    tf_dynbuf_init(&cb, MAX_FILE);
    tf_dynbuf_init(&pb, MAX_FILE);
    json_object *docs = NULL;
    char err[1024];
    int rc;
    if ((rc = read_file(cluster_path, &cb)) || (rc = read_file(pods_path, &pb))) {
        ret = rc == TF_ENOMEM ? 1 : 2;
        goto out;
    }
    if ((rc = tf_cluster_yaml_parse(tf_dynbuf_str(&cb), cb.len, &s.c, &s.q, err, sizeof(err)))) {
        fprintf(stderr, "tfctl simulate: %s: %s\n", cluster_path, err);
        ret = rc == TF_ENOMEM ? 1 : 2;
        goto out;
    }
    if ((rc = tf_manifest_parse(tf_dynbuf_str(&pb), pb.len, &docs, err, sizeof(err)))) {
        fprintf(stderr, "tfctl simulate: %s: %s\n", pods_path, err);
        ret = rc == TF_ENOMEM ? 1 : 2;
        goto out;
    }
    if (placement)
        for (uint32_t i = 0; i < s.c->npools; i++)
            s.c->pools[i].cfg.placement = mode;
    s.a = tf_alloc_new(s.c, s.q);
    s.decisions = json_object_new_array();
    s.reasons = malloc(REASONS_CAP);
    if (!s.a || !s.decisions || !s.reasons) {
        fprintf(stderr, "tfctl simulate: out of memory\n");
        goto out;
    }
    if ((ret = run_stream(&s, docs)))
        goto out;
    if (tf_alloc_check(s.a, err, sizeof(err))) { /* a bug, never an input problem */
        fprintf(stderr, "tfctl simulate: internal error: %s\n", err);
        ret = 1;
        goto out;
    }
    if (!strcmp(output, "json"))
        print_json(&s);
    else
        print_table(&s);
    ret = s.refused ? 3 : 0;
out:
    for (size_t i = 0; i < s.nprofiles; i++)
        tf_profile_free(&s.profiles[i]);
    free(s.profiles);
    free(s.reasons);
    json_object_put(s.decisions);
    json_object_put(docs);
    tf_alloc_destroy(s.a);
    tf_quota_set_destroy(s.q);
    tf_cluster_destroy(s.c);
    tf_dynbuf_free(&cb);
    tf_dynbuf_free(&pb);
    return ret;
}
