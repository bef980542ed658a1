/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl spec -f FILE [--profile PROFILE.yaml] [-o json|yaml|table]`: prints the normalised
 * workload spec of every pod template in FILE (Pod, Deployment, StatefulSet, ReplicaSet, Job,
 * DaemonSet, CronJob, PodTemplate; multi-document YAML or JSON). The JSON form is the stable
 * contract of docs/spec.md. GPUPool, GPUResourceQuota and ProviderConfig documents in the files
 * stand for the cluster's: their defaults apply as the webhook would apply them. Invalid input:
 * exit 2, the reason on stderr, nothing on stdout (everything is parsed before anything is
 * printed).
 */
#include "cli/cmds.h"
#include "common/err.h"
#include "common/yamljson.h"
#include "core/defaults.h"
#include "core/quantity.h"
#include "core/spec.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (16u << 20) /* manifests are small; refuse anything absurd */
#define MAX_FILES 16

enum fmt { FMT_TABLE, FMT_JSON, FMT_YAML };

struct profiles {
    struct tf_profile *v;
    size_t n;
    size_t nexplicit; /* the first nexplicit came from --profile */
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tfctl spec -f FILE [-f FILE...] [--profile PROFILE.yaml] "
               "[-o json|yaml|table]\n"
               "  -f, --filename FILE   manifest(s) to read (YAML or JSON, '-' for stdin); their\n"
               "                        GPUPool, GPUResourceQuota and ProviderConfig documents\n"
               "                        stand for the cluster's\n"
               "  -p, --profile FILE    WorkloadProfile(s) to merge (annotation > profile)\n"
               "  -o, --output FORMAT   table (default), json (stable contract) or yaml\n");
}

/* Reads PATH ("-" = stdin) into a NUL-terminated heap buffer. 0, or TF_EIO / TF_ERANGE /
 * TF_ENOMEM with a message on stderr. */
static int read_file(const char *path, char **out, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "tfctl spec: %s: %s\n", path, strerror(errno));
        return TF_EIO;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n < cap)
            continue;
        if (cap >= MAX_FILE) {
            fprintf(stderr, "tfctl spec: %s: too large (the limit is %u bytes)\n", path, MAX_FILE);
            rc = TF_ERANGE;
            break;
        }
        cap *= 2;
        char *g = realloc(buf, cap + 1);
        if (!g)
            free(buf);
        buf = g;
    }
    if (!buf)
        rc = TF_ENOMEM;
    else if (!rc && ferror(f)) {
        fprintf(stderr, "tfctl spec: %s: read error\n", path);
        rc = TF_EIO;
    }
    if (f != stdin)
        fclose(f);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

static int load_docs(const char *path, json_object **docs)
{
    char *buf;
    size_t len;
    int rc = read_file(path, &buf, &len);
    if (rc)
        return rc;
    char err[256];
    rc = tf_manifest_parse(buf, len, docs, err, sizeof(err));
    free(buf);
    if (rc)
        fprintf(stderr, "tfctl spec: %s: %s\n", path, err);
    return rc;
}

static const char *kind_of(json_object *doc)
{
    json_object *k = json_object_object_get(doc, "kind");
    return k && json_object_is_type(k, json_type_string) ? json_object_get_string(k) : NULL;
}

static int add_profile(struct profiles *ps, json_object *doc, const char *path, size_t idx)
{
    struct tf_profile *g = realloc(ps->v, (ps->n + 1) * sizeof(*g));
    if (!g)
        return TF_ENOMEM;
    ps->v = g;
    char err[256];
    int rc = tf_profile_parse(doc, &ps->v[ps->n], err, sizeof(err));
    if (rc) {
        fprintf(stderr, "tfctl spec: %s: document %zu: %s\n", path, idx + 1, err);
        return rc;
    }
    ps->n++;
    return 0;
}

/* The profile a pod uses: the one its annotation names, else the only --profile given. */
static const struct tf_profile *pick_profile(const struct profiles *ps, json_object *doc,
                                             const char **missing)
{
    *missing = NULL;
    json_object *t = tf_spec_pod_template(doc);
    const char *want = tf_json_str(t, "metadata", "annotations", TF_ANN_WORKLOAD_PROFILE, NULL);
    const char *ns = tf_json_str(doc, "metadata", "namespace", NULL);
    if (!ns)
        ns = tf_json_str(t, "metadata", "namespace", NULL);
    if (want) {
        for (size_t i = 0; i < ps->n; i++)
            if (!strcmp(ps->v[i].name, want) && (!ns || !ps->v[i].ns || !strcmp(ns, ps->v[i].ns)))
                return &ps->v[i];
    }
    if (ps->nexplicit == 1)
        return &ps->v[0];
    *missing = want;
    return NULL;
}

/* ---- output -------------------------------------------------------------------------------- */

static void yaml_value(FILE *f, json_object *v, int indent, bool in_list);

static void yaml_scalar(FILE *f, json_object *v)
{
    if (!v)
        fputs("null", f);
    else
        fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                    JSON_C_TO_STRING_NOSLASHESCAPE),
              f);
}

static bool is_container(json_object *v, bool *empty)
{
    if (json_object_is_type(v, json_type_object)) {
        *empty = json_object_object_length(v) == 0;
        return true;
    }
    if (json_object_is_type(v, json_type_array)) {
        *empty = json_object_array_length(v) == 0;
        return true;
    }
    return false;
}

/* Block YAML of V; keys and strings are JSON-quoted (valid YAML double-quoted scalars). */
/* A key that YAML reads back as the same plain string (no quoting needed). */
static bool plain_key(const char *k)
{
    if (!*k || strchr("-.0123456789", *k) || !strcmp(k, "null") || !strcmp(k, "true") ||
        !strcmp(k, "false") || !strcmp(k, "yes") || !strcmp(k, "no") || !strcmp(k, "on") ||
        !strcmp(k, "off") || !strcmp(k, "y") || !strcmp(k, "n"))
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.' || *p == '/'))
            return false;
    return true;
}

static void yaml_value(FILE *f, json_object *v, int indent, bool in_list)
{
    bool empty = false;
    if (!v || !is_container(v, &empty) || empty) {
        fputc(' ', f);
        if (v && empty)
            fputs(json_object_is_type(v, json_type_array) ? "[]" : "{}", f);
        else
            yaml_scalar(f, v);
        fputc('\n', f);
        return;
    }
    if (!in_list)
        fputc('\n', f);
    bool first = true;
    if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, k, child)
        {
            if (!(in_list && first))
                fprintf(f, "%*s", indent, "");
            first = false;
            if (plain_key(k)) {
                fputs(k, f);
            } else {
                json_object *key = json_object_new_string(k);
                yaml_scalar(f, key);
                json_object_put(key);
            }
            fputc(':', f);
            yaml_value(f, child, indent + 2, false);
        }
    } else {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *child = json_object_array_get_idx(v, i);
            if (!(in_list && first))
                fprintf(f, "%*s", indent, "");
            first = false;
            fputc('-', f);
            bool e = false;
            if (child && is_container(child, &e) && !e &&
                json_object_is_type(child, json_type_object)) {
                fputc(' ', f);
                yaml_value(f, child, indent + 2, true);
            } else {
                yaml_value(f, child, indent + 2, false);
            }
        }
    }
}

static void fmt_compute(const struct tf_spec *s, const struct tf_spec_res *r, char *buf, size_t len)
{
    if (r->tflops_set)
        tf_quantity_format_milli(r->tflops_milli, buf, len);
    else if (r->percent_set && s->model)
        tf_quantity_format_milli(tf_percent_to_tflops(r->percent_bp, s->model->tflops_milli), buf,
                                 len);
    else if (r->percent_set) {
        tf_quantity_format_milli((int64_t)r->percent_bp * 10, buf, len);
        strncat(buf, "%", len - strlen(buf) - 1);
    } else
        snprintf(buf, len, "-");
}

static void fmt_vram(const struct tf_spec_res *r, char *buf, size_t len)
{
    if (r->vram_set)
        tf_quantity_format_bytes(r->vram_bytes, buf, len);
    else
        snprintf(buf, len, "-");
}

static void print_table(FILE *f, const struct tf_spec *v, size_t n)
{
    fprintf(f, "%-24s %-12s %-11s %-7s %-11s %-8s %4s %-15s %-13s %-5s %-14s %s\n", "NAME",
            "NAMESPACE", "KIND", "ENABLED", "ISOLATION", "QOS", "GPUS", "TFLOPS(REQ/LIM)",
            "VRAM(REQ/LIM)", "LOCAL", "POOL", "MODEL");
    for (size_t i = 0; i < n; i++) {
        const struct tf_spec *s = &v[i];
        char tf[48] = "-", vr[48] = "-", a[20], b[20], gpus[8] = "-";
        if (s->enabled) {
            fmt_compute(s, &s->requests, a, sizeof(a));
            fmt_compute(s, &s->limits, b, sizeof(b));
            snprintf(tf, sizeof(tf), "%s/%s", a, b);
            fmt_vram(&s->requests, a, sizeof(a));
            fmt_vram(&s->limits, b, sizeof(b));
            snprintf(vr, sizeof(vr), "%s/%s", a, b);
            snprintf(gpus, sizeof(gpus), "%d%s", s->gpu_count, s->whole_gpu ? "*" : "");
        }
        fprintf(f, "%-24s %-12s %-11s %-7s %-11s %-8s %4s %-15s %-13s %-5s %-14s %s\n",
                s->name ? s->name : "-", s->ns ? s->ns : "-", s->kind ? s->kind : "-",
                s->enabled ? "true" : "false", s->enabled ? tf_isolation_name(s->isolation) : "-",
                s->enabled ? tf_qos_name(s->qos) : "-", gpus, tf, vr,
                !s->enabled       ? "-"
                : s->is_local_gpu ? "true"
                                  : "false",
                s->enabled && s->pool ? s->pool : "-",
                s->enabled && s->gpu_model ? s->gpu_model : "-");
    }
    bool star = false;
    for (size_t i = 0; i < n; i++)
        star |= v[i].enabled && v[i].whole_gpu;
    if (star)
        fprintf(f, "(* whole GPUs)\n");
    for (size_t i = 0; i < n; i++)
        for (size_t w = 0; w < v[i].nwarnings; w++)
            fprintf(f, "warning: %s: %s\n", v[i].name ? v[i].name : "-", v[i].warnings[w]);
}

/* Prints json-c's pretty output with empty arrays as "[]" instead of "[\n   ]". Raw
 * newlines never occur inside JSON strings, so a bracket, blanks with a newline, and a closing
 * bracket can only be an empty array. */
static void print_json(FILE *f, const char *s)
{
    while (*s) {
        if (*s == '[') {
            const char *p = s + 1;
            bool nl = false;
            while (*p == ' ' || *p == '\n') {
                nl |= *p == '\n';
                p++;
            }
            if (nl && *p == ']') {
                fputs("[]", f);
                s = p + 1;
                continue;
            }
        }
        fputc(*s++, f);
    }
    fputc('\n', f);
}

/* ---- cluster objects ----------------------------------------------------------------------- */

/* GPUPool, GPUResourceQuota and ProviderConfig documents of the -f files: what the webhook
 * would read from the cluster (core/defaults.h). Arrays of borrowed documents. */
struct cluster_objs {
    json_object *pools, *quotas, *providers;
    struct tf_native_resource *native;
    size_t nnative;
};

static bool cluster_kind(struct cluster_objs *co, json_object *doc, const char *kind)
{
    json_object *arr = !kind                               ? NULL
                       : !strcmp(kind, "GPUPool")          ? co->pools
                       : !strcmp(kind, "GPUResourceQuota") ? co->quotas
                       : !strcmp(kind, "ProviderConfig")   ? co->providers
                                                           : NULL;
    if (arr)
        json_object_array_add(arr, json_object_get(doc));
    return arr != NULL;
}

static json_object *named(json_object *arr, const char *name)
{
    for (size_t i = 0; name && i < json_object_array_length(arr); i++) {
        const char *n = tf_json_str(json_object_array_get_idx(arr, i), "metadata", "name", NULL);
        if (n && !strcmp(n, name))
            return json_object_array_get_idx(arr, i);
    }
    return NULL;
}

/* The defaults DOC's pod gets from the cluster objects, as the webhook resolves them. */
static int cluster_defaults(const struct cluster_objs *co, json_object *doc,
                            const struct tf_profile *prof, struct tf_pool_defaults *pd, char *err,
                            size_t errlen)
{
    memset(pd, 0, sizeof(*pd));
    pd->native = co->native;
    pd->nnative = co->nnative;
    json_object *tmpl = tf_spec_pod_template(doc);
    const char *pname = tf_json_str(tmpl, "metadata", "annotations", TF_ANN_GPUPOOL, NULL);
    if (!pname && prof)
        pname = prof->pool;
    json_object *pool = named(co->pools, pname);
    for (size_t i = 0; !pname && !pool && i < json_object_array_length(co->pools); i++)
        if (tf_pool_is_default(json_object_array_get_idx(co->pools, i)))
            pool = json_object_array_get_idx(co->pools, i);
    if (pool)
        tf_defaults_from_pool(pool, pd);
    const char *ns = tf_json_str(doc, "metadata", "namespace", NULL);
    if (!ns)
        ns = tf_json_str(tmpl, "metadata", "namespace", NULL);
    for (size_t i = 0; i < json_object_array_length(co->quotas); i++) {
        json_object *q = json_object_array_get_idx(co->quotas, i);
        const char *qns = tf_json_str(q, "metadata", "namespace", NULL);
        if (strcmp(qns ? qns : "default", ns ? ns : "default") == 0)
            return tf_defaults_from_quota(q, pd, err, errlen);
    }
    return 0;
}

/* ---- the command --------------------------------------------------------------------------- */

int tf_cmd_spec(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"profile", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *files[MAX_FILES], *pfiles[MAX_FILES];
    size_t nfiles = 0, npfiles = 0;
    enum fmt fmt = FMT_TABLE;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "f:p:o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'f':
        case 'p':
            if ((ch == 'f' ? nfiles : npfiles) == MAX_FILES) {
                fprintf(stderr, "tfctl spec: at most %d files per option\n", MAX_FILES);
                return 2;
            }
            if (ch == 'f')
                files[nfiles++] = optarg;
            else
                pfiles[npfiles++] = optarg;
            break;
        case 'o':
            if (!strcmp(optarg, "json"))
                fmt = FMT_JSON;
            else if (!strcmp(optarg, "yaml"))
                fmt = FMT_YAML;
            else if (!strcmp(optarg, "table") || !strcmp(optarg, "wide"))
                fmt = FMT_TABLE;
            else {
                fprintf(stderr, "tfctl spec: -o %s: use json, yaml or table\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || nfiles == 0) {
        if (optind < argc)
            fprintf(stderr, "tfctl spec: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }

    int ret = 2;
    json_object *pdocs[MAX_FILES] = {0}, *fdocs[MAX_FILES] = {0};
    struct profiles ps = {0};
    struct cluster_objs co = {json_object_new_array(), json_object_new_array(),
                              json_object_new_array(), NULL, 0};
    struct tf_spec *specs = NULL;
    size_t nspecs = 0;

    for (size_t i = 0; i < npfiles; i++) {
        if (load_docs(pfiles[i], &pdocs[i]))
            goto out;
        for (size_t d = 0; d < json_object_array_length(pdocs[i]); d++) {
            json_object *doc = json_object_array_get_idx(pdocs[i], d);
            const char *kind = kind_of(doc);
            if (!kind || strcmp(kind, "WorkloadProfile") != 0) {
                fprintf(stderr,
                        "tfctl spec: %s: document %zu: kind \"%s\" is not "
                        "WorkloadProfile\n",
                        pfiles[i], d + 1, kind ? kind : "");
                goto out;
            }
            if (add_profile(&ps, doc, pfiles[i], d))
                goto out;
        }
    }
    ps.nexplicit = ps.n;
    for (size_t i = 0; i < nfiles; i++) {
        if (load_docs(files[i], &fdocs[i]))
            goto out;
        for (size_t d = 0; d < json_object_array_length(fdocs[i]); d++) {
            json_object *doc = json_object_array_get_idx(fdocs[i], d);
            const char *kind = kind_of(doc);
            if (kind && !strcmp(kind, "WorkloadProfile") && add_profile(&ps, doc, files[i], d))
                goto out;
            cluster_kind(&co, doc, kind);
        }
    }
    if (tf_defaults_native(co.providers, &co.native, &co.nnative)) {
        ret = 1;
        goto out;
    }
    for (size_t i = 0; i < nfiles; i++) {
        for (size_t d = 0; d < json_object_array_length(fdocs[i]); d++) {
            json_object *doc = json_object_array_get_idx(fdocs[i], d);
            const char *kind = kind_of(doc);
            if (kind && (!strcmp(kind, "WorkloadProfile") || !strcmp(kind, "GPUPool") ||
                         !strcmp(kind, "GPUResourceQuota") || !strcmp(kind, "ProviderConfig")))
                continue;
            if (!tf_spec_kind_supported(doc)) {
                fprintf(stderr,
                        "tfctl spec: %s: document %zu: kind \"%s\" has no pod template, "
                        "skipped\n",
                        files[i], d + 1, kind ? kind : "");
                continue;
            }
            struct tf_spec *g = realloc(specs, (nspecs + 1) * sizeof(*g));
            if (!g) {
                ret = 1;
                goto out;
            }
            specs = g;
            const char *missing;
            const struct tf_profile *prof = pick_profile(&ps, doc, &missing);
            char err[512];
            struct tf_pool_defaults pd;
            int rc = cluster_defaults(&co, doc, prof, &pd, err, sizeof(err));
            if (!rc)
                rc = tf_spec_parse_object(doc, prof, &pd, &specs[nspecs], err, sizeof(err));
            if (rc) {
                const char *name = tf_json_str(doc, "metadata", "name", NULL);
                fprintf(stderr, "tfctl spec: %s: %s/%s: %s\n", files[i], kind ? kind : "?",
                        name ? name : "(unnamed)", err);
                ret = rc == TF_ENOMEM ? 1 : 2;
                goto out;
            }
            nspecs++;
            if (missing && specs[nspecs - 1].enabled &&
                tf_spec_add_warning(&specs[nspecs - 1],
                                    "%s: WorkloadProfile \"%s\" is not in the given files "
                                    "(--profile or -f): not applied",
                                    TF_ANN_WORKLOAD_PROFILE, missing)) {
                ret = 1;
                goto out;
            }
        }
    }
    if (nspecs == 0) {
        fprintf(stderr, "tfctl spec: no Pod, Deployment, StatefulSet, ReplicaSet, Job, DaemonSet, "
                        "CronJob or PodTemplate in the input\n");
        goto out;
    }

    if (fmt == FMT_TABLE) {
        print_table(stdout, specs, nspecs);
    } else {
        json_object *arr = json_object_new_array();
        for (size_t i = 0; arr && i < nspecs; i++) {
            json_object *o = tf_spec_to_json(&specs[i]);
            if (!o) {
                json_object_put(arr);
                arr = NULL;
                break;
            }
            json_object_array_add(arr, o);
        }
        if (!arr) {
            fprintf(stderr, "tfctl spec: out of memory\n");
            ret = 1;
            goto out;
        }
        if (fmt == FMT_JSON)
            print_json(stdout, json_object_to_json_string_ext(
                                   arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                            JSON_C_TO_STRING_NOSLASHESCAPE));
        else if (json_object_array_length(arr) == 0)
            printf("[]\n");
        else
            yaml_value(stdout, arr, 0, true);
        json_object_put(arr);
    }
    ret = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
out:
    for (size_t i = 0; i < nspecs; i++)
        tf_spec_free(&specs[i]);
    free(specs);
    for (size_t i = 0; i < ps.n; i++)
        tf_profile_free(&ps.v[i]);
    free(ps.v);
    json_object_put(co.pools);
    json_object_put(co.quotas);
    json_object_put(co.providers);
    tf_defaults_native_free(co.native, co.nnative);
    for (size_t i = 0; i < MAX_FILES; i++) {
        json_object_put(pdocs[i]);
        json_object_put(fdocs[i]);
    }
    return ret;
}
