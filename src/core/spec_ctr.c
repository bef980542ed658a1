/* SPDX-License-Identifier: Apache-2.0
 *
 * The workload spec's containers: the pod's containers and their nvidia.com/gpu limits
 * (seed 004), which of them use the GPU (container-gpu-count, inject-container), the pod's GPU
 * count and the system-written container-gpus (see spec.h, docs/spec.md "Containers").
 */
#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_int.h"
#include "core/spec_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- containers (seed 004 input) ----------------------------------------------------------- */

const struct tf_native_resource tf_native_resources_default[2] = {
    {"nvidia.com/gpu", false, "NVIDIA"},
    {"nvidia.com/mig-", true, "NVIDIA"},
};

const struct tf_native_resource *tf_native_resource_find(const struct tf_native_resource *list,
                                                         size_t n, const char *res)
{
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(list[i].name);
        if (list[i].prefix ? !strncmp(res, list[i].name, l) && res[l] : !strcmp(res, list[i].name))
            return &list[i];
    }
    return NULL;
}

const struct tf_native_resource *tf__spec_native(const struct ctx *c, size_t *n)
{
    if (c->pool && c->pool->native && c->pool->nnative) {
        *n = c->pool->nnative;
        return c->pool->native;
    }
    *n = NELEMS(tf_native_resources_default);
    return tf_native_resources_default;
}

/* The whole number of GPUs of container I's native limit RES (quantity Q). */
static int native_gpus(struct ctx *c, size_t i, const char *name, const char *res, json_object *q,
                       int *out)
{
    const char *txt;
    char buf[32];
    if (json_object_is_type(q, json_type_int)) {
        snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(q));
        txt = buf;
    } else if (json_object_is_type(q, json_type_string) ||
               json_object_is_type(q, json_type_double)) {
        txt = json_object_get_string(q);
    } else {
        return tf__spec_fail(
            c, TF_EINVAL, "spec.containers[%zu] (%s): resources.limits.%s must be a whole number",
            i, name, res);
    }
    int64_t milli;
    char key[300];
    snprintf(key, sizeof(key), "spec.containers[%zu] (%s): resources.limits.%s", i, name, res);
    int rc = tf_quantity_milli(txt, &milli, key, c->err, c->errlen);
    if (rc)
        return rc;
    if (milli % 1000 != 0 || milli / 1000 > TF_SPEC_MAX_GPUS)
        return tf__spec_fail(c, TF_ERANGE, "%s: \"%s\" must be a whole number of GPUs (0..%d)", key,
                             txt, TF_SPEC_MAX_GPUS);
    *out = (int)(milli / 1000);
    return 0;
}

/* Container I's native GPU limits: every resources.limits key of the native list. */
static int read_native(struct ctx *c, size_t i, struct container *ct)
{
    size_t nn;
    const struct tf_native_resource *list = tf__spec_native(c, &nn);
    if (!ct->limits || !json_object_is_type(ct->limits, json_type_object))
        return 0;
    json_object_object_foreach(ct->limits, k, q)
    {
        const struct tf_native_resource *r = tf_native_resource_find(list, nn, k);
        if (!r)
            continue;
        int n = 0, rc = native_gpus(c, i, ct->name, k, q, &n);
        if (rc)
            return rc;
        if (ct->native + n > TF_SPEC_MAX_GPUS)
            return tf__spec_fail(c, TF_ERANGE, "spec.containers[%zu] (%s): more than %d GPUs", i,
                                 ct->name, TF_SPEC_MAX_GPUS);
        ct->native += n;
        if (n && !ct->vendor)
            ct->vendor = r->vendor;
    }
    return 0;
}

int tf__spec_read_containers(struct ctx *c, json_object *podspec)
{
    json_object *arr = tf__get(podspec, "containers");
    if (!arr)
        return 0;
    if (!json_object_is_type(arr, json_type_array))
        return tf__spec_fail(c, TF_EINVAL, "spec.containers: must be a list");
    c->have_containers = true;
    size_t n = json_object_array_length(arr);
    if (n > 4096)
        return tf__spec_fail(c, TF_ERANGE, "spec.containers: %zu containers, at most 4096", n);
    if (n == 0)
        return 0;
    c->ctr = calloc(n, sizeof(*c->ctr));
    if (!c->ctr)
        return TF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_object *ct = json_object_array_get_idx(arr, i);
        const char *name = tf__get_str(ct, "name");
        if (!name || !*name)
            return tf__spec_fail(c, TF_EINVAL, "spec.containers[%zu]: name is missing", i);
        for (size_t j = 0; j < c->nctr; j++)
            if (!strcmp(c->ctr[j].name, name))
                return tf__spec_fail(c, TF_EINVAL,
                                     "spec.containers[%zu]: container name \"%s\" is used "
                                     "twice",
                                     i, name);
        struct container *cur = &c->ctr[c->nctr];
        cur->name = name;
        cur->limits = tf__get(tf__get(ct, "resources"), "limits");
        int rc = read_native(c, i, cur);
        if (rc)
            return rc;
        c->nctr++;
    }
    return 0;
}

static struct container *find_container(struct ctx *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->nctr; i++)
        if (strlen(c->ctr[i].name) == len && !memcmp(c->ctr[i].name, name, len))
            return &c->ctr[i];
    return NULL;
}

int tf__spec_native_total(struct ctx *c)
{
    int n = 0;
    for (size_t i = 0; i < c->nctr; i++)
        n += c->ctr[i].native;
    return n;
}

/* ---- containers and GPU counts ------------------------------------------------------------- */

struct cgc_entry {
    const char *name;
    int count;
};

/* Adds a GPU container NAME seeing COUNT GPUs; SRC (may be NULL) is the pod's container, whose
 * native limits it takes over. */
static int add_container(struct ctx *c, const char *name, size_t len, int count,
                         const struct container *src)
{
    struct tf_spec *s = c->s;
    int native = src ? src->native : 0;
    struct tf_spec_container *grown = realloc(s->containers, (s->ncontainers + 1) * sizeof(*grown));
    if (!grown)
        return TF_ENOMEM;
    s->containers = grown;
    struct tf_spec_container *ct = &grown[s->ncontainers];
    memset(ct, 0, sizeof(*ct));
    if (!(ct->name = strndup(name, len)))
        return TF_ENOMEM;
    ct->gpu_count = count;
    ct->native_gpus = native;
    ct->migrated = native > 0;
    s->ncontainers++;
    if (native) {
        size_t nn;
        const struct tf_native_resource *list = tf__spec_native(c, &nn);
        json_object_object_foreach(src->limits, k, v)
        {
            (void)v;
            if (tf_native_resource_find(list, nn, k) &&
                tf__strv_push(&ct->native_names, &ct->nnative_names, k, strlen(k)))
                return TF_ENOMEM;
        }
    }
    return 0;
}

static json_object *parse_json_ann(struct ctx *c, int k, int *rc)
{
    enum json_tokener_error jerr;
    json_object *o = json_tokener_parse_verbose(c->a[k], &jerr);
    if (!o || !json_object_is_type(o, json_type_object)) {
        *rc = tf__spec_fail(
            c, TF_EPARSE, "%s: \"%.60s\" is not a JSON object of container names (%s)",
            tf__spec_akeys[k], c->a[k], o ? "not an object" : json_tokener_error_desc(jerr));
        json_object_put(o);
        return NULL;
    }
    *rc = 0;
    return o;
}

static int check_container_name(struct ctx *c, int k, const char *name, size_t len)
{
    if (len == 0)
        return tf__spec_fail(c, TF_EINVAL, "%s: empty container name", tf__spec_akeys[k]);
    if (c->have_containers && !find_container(c, name, len))
        return tf__spec_fail(c, TF_EINVAL, "%s: container \"%.*s\" is not in spec.containers",
                             tf__spec_akeys[k], (int)(len > 64 ? 64 : len), name);
    return 0;
}

struct inject_ctx {
    struct ctx *c;
};

static int one_inject(const char *item, size_t len, void *arg)
{
    struct ctx *c = ((struct inject_ctx *)arg)->c;
    int rc = check_container_name(c, A_INJECT, item, len);
    if (rc)
        return rc;
    if (tf__strv_has(c->s->inject_containers, c->s->ninject_containers, item, len))
        return tf__warn(&c->s->warnings, &c->s->nwarnings,
                        "%s: container \"%.*s\" is listed "
                        "twice",
                        tf__spec_akeys[A_INJECT], (int)len, item);
    return tf__strv_push(&c->s->inject_containers, &c->s->ninject_containers, item, len);
}

int tf__spec_containers_and_count(struct ctx *c, int explicit_count, const char *count_src)
{
    struct tf_spec *s = c->s;
    int rc = 0;
    json_object *cgc = NULL;
    bool explicit_inject = c->a[A_INJECT] != NULL;

    if (explicit_inject) {
        struct inject_ctx ic = {c};
        if ((rc = tf_split_list(c->a[A_INJECT], one_inject, &ic)))
            return rc;
        if (s->ninject_containers == 0)
            return tf__spec_fail(c, TF_EINVAL, "%s: no container named", tf__spec_akeys[A_INJECT]);
    }

    int sum = 0, max = 0;
    if (c->a[A_CGC]) {
        if (!(cgc = parse_json_ann(c, A_CGC, &rc)))
            return rc;
        json_object_object_foreach(cgc, k, v)
        {
            if ((rc = check_container_name(c, A_CGC, k, strlen(k))))
                goto out;
            if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1 ||
                json_object_get_int64(v) > TF_SPEC_MAX_GPUS) {
                rc = tf__spec_fail(c, TF_ERANGE,
                                   "%s: container \"%s\": %s must be an integer GPU count "
                                   "1..%d",
                                   tf__spec_akeys[A_CGC], k, json_object_get_string(v),
                                   TF_SPEC_MAX_GPUS);
                goto out;
            }
            if (explicit_inject &&
                !tf__strv_has(s->inject_containers, s->ninject_containers, k, strlen(k))) {
                rc = tf__spec_fail(c, TF_EINVAL, "%s: container \"%s\" is not in %s",
                                   tf__spec_akeys[A_CGC], k, tf__spec_akeys[A_INJECT]);
                goto out;
            }
            int n = (int)json_object_get_int64(v);
            struct container *ct = find_container(c, k, strlen(k));
            if ((rc = add_container(c, k, strlen(k), n, ct)))
                goto out;
            sum += n;
            max = n > max ? n : max;
        }
        if (s->ncontainers == 0) {
            rc = tf__spec_fail(c, TF_EINVAL, "%s: names no container", tf__spec_akeys[A_CGC]);
            goto out;
        }
        for (size_t i = 0; i < s->ninject_containers; i++) {
            if (!json_object_object_get_ex(cgc, s->inject_containers[i], NULL)) {
                rc = tf__spec_fail(c, TF_EINVAL, "%s: no GPU count for container \"%s\" of %s",
                                   tf__spec_akeys[A_CGC], s->inject_containers[i],
                                   tf__spec_akeys[A_INJECT]);
                goto out;
            }
        }
        if (!explicit_count && sum > TF_SPEC_MAX_GPUS) {
            rc = tf__spec_fail(c, TF_ERANGE, "%s: %d GPUs in total, at most %d",
                               tf__spec_akeys[A_CGC], sum, TF_SPEC_MAX_GPUS);
            goto out;
        }
    } else if (explicit_inject) {
        for (size_t i = 0; i < s->ninject_containers; i++) {
            const char *n = s->inject_containers[i];
            struct container *ct = find_container(c, n, strlen(n));
            int native = ct ? ct->native : 0;
            if ((rc = add_container(c, n, strlen(n), native, ct)))
                goto out;
            sum += native;
            max = native > max ? native : max;
        }
    } else if (tf__spec_native_total(c) > 0) {
        for (size_t i = 0; i < c->nctr; i++) {
            if (!c->ctr[i].native)
                continue;
            const char *n = c->ctr[i].name;
            if ((rc = add_container(c, n, strlen(n), c->ctr[i].native, &c->ctr[i])))
                goto out;
            sum += c->ctr[i].native;
            max = c->ctr[i].native > max ? c->ctr[i].native : max;
        }
    } else if (c->nctr == 1) {
        if ((rc = add_container(c, c->ctr[0].name, strlen(c->ctr[0].name), 0, NULL)))
            goto out;
    } else if (c->nctr > 1) {
        rc = tf__spec_fail(c, TF_EINVAL,
                           "%s: required when the pod has %zu containers (name the ones "
                           "that use the GPU, comma-separated)",
                           tf__spec_akeys[A_INJECT], c->nctr);
        goto out;
    }
    if (!cgc && sum > TF_SPEC_MAX_GPUS) {
        rc = tf__spec_fail(c, TF_ERANGE, "%s limits: %d GPUs in total, at most %d",
                           TF_RES_NVIDIA_GPU, sum, TF_SPEC_MAX_GPUS);
        goto out;
    }

    /* The pod's GPU count, as upstream reads it: explicit (annotation, profile) > the
     * per-container sum > 1; gpu-indices override all of them with their number. */
    if (explicit_count) {
        s->gpu_count = explicit_count;
        if (cgc && max > explicit_count) {
            rc = tf__spec_fail(c, TF_EINVAL,
                               "%s \"%d\" is less than the %d GPUs one container asks for (%s)",
                               count_src, explicit_count, max, tf__spec_akeys[A_CGC]);
            goto out;
        }
        if (!cgc && sum && sum != explicit_count &&
            (rc = tf__warn(&s->warnings, &s->nwarnings,
                           "%s \"%d\" overrides the %d GPUs of the containers' native GPU "
                           "limits: the workload gets %d GPUs, which its containers share",
                           count_src, explicit_count, sum, explicit_count)))
            goto out;
    } else {
        s->gpu_count = sum ? sum : 1;
    }
    if (s->ngpu_indices) {
        if (s->ngpu_indices != s->gpu_count && (explicit_count || sum) &&
            (rc = tf__warn(&s->warnings, &s->nwarnings,
                           "%s lists %d GPU index(es): the workload gets those %d GPUs, not %d",
                           c->a[A_INDICES] ? tf__spec_akeys[A_INDICES]
                                           : "WorkloadProfile spec.gpuIndices",
                           s->ngpu_indices, s->ngpu_indices, s->gpu_count)))
            goto out;
        s->gpu_count = s->ngpu_indices;
        if (cgc && max > s->gpu_count) {
            rc = tf__spec_fail(c, TF_EINVAL, "%s gives %d GPUs but one container asks for %d (%s)",
                               c->a[A_INDICES] ? tf__spec_akeys[A_INDICES]
                                               : "WorkloadProfile spec.gpuIndices",
                               s->gpu_count, max, tf__spec_akeys[A_CGC]);
            goto out;
        }
    }
    /* Without container-gpu-count, an explicit or overridden count is seen whole by every GPU
     * container (upstream splits per container only what it read from native limits). */
    bool overridden = explicit_count || (sum && s->gpu_count != sum);
    for (size_t i = 0; i < s->ncontainers; i++)
        if (s->containers[i].gpu_count == 0 || (!cgc && overridden))
            s->containers[i].gpu_count = s->gpu_count;
    if (!explicit_inject)
        for (size_t i = 0; i < s->ncontainers; i++)
            if ((rc = tf__strv_push(&s->inject_containers, &s->ninject_containers,
                                    s->containers[i].name, strlen(s->containers[i].name))))
                goto out;
out:
    json_object_put(cgc);
    return rc;
}

int tf__spec_container_gpus(struct ctx *c)
{
    struct tf_spec *s = c->s;
    int rc;
    json_object *o = parse_json_ann(c, A_CGPUS, &rc);
    if (!o)
        return rc;
    json_object_object_foreach(o, k, v)
    {
        if ((rc = check_container_name(c, A_CGPUS, k, strlen(k))))
            goto out;
        if (!json_object_is_type(v, json_type_array) ||
            json_object_array_length(v) > TF_SPEC_MAX_GPUS) {
            rc = tf__spec_fail(c, TF_EINVAL,
                               "%s: container \"%s\": must be a list of at most %d GPU IDs",
                               tf__spec_akeys[A_CGPUS], k, TF_SPEC_MAX_GPUS);
            goto out;
        }
        struct tf_spec_container *ct = NULL;
        for (size_t i = 0; i < s->ncontainers; i++)
            if (!strcmp(s->containers[i].name, k))
                ct = &s->containers[i];
        char **ids = NULL;
        size_t nids = 0;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *id = json_object_array_get_idx(v, i);
            const char *str =
                json_object_is_type(id, json_type_string) ? json_object_get_string(id) : NULL;
            if (!str || !*str) {
                tf__strv_free(&ids, &nids);
                rc = tf__spec_fail(c, TF_EINVAL,
                                   "%s: container \"%s\": GPU IDs must be non-empty strings",
                                   tf__spec_akeys[A_CGPUS], k);
                goto out;
            }
            if (tf__strv_has(ids, nids, str, strlen(str))) {
                tf__strv_free(&ids, &nids);
                rc = tf__spec_fail(c, TF_EINVAL,
                                   "%s: container \"%s\": GPU ID \"%s\" is listed twice",
                                   tf__spec_akeys[A_CGPUS], k, str);
                goto out;
            }
            if ((rc = tf__strv_push(&ids, &nids, str, strlen(str)))) {
                tf__strv_free(&ids, &nids);
                goto out;
            }
        }
        if (!ct) {
            tf__strv_free(&ids, &nids);
            if ((rc = tf__warn(&s->warnings, &s->nwarnings,
                               "%s: container \"%s\" does not use the GPU, ignored",
                               tf__spec_akeys[A_CGPUS], k)))
                goto out;
            continue;
        }
        tf__strv_free(&ct->gpu_ids, &ct->ngpu_ids);
        ct->gpu_ids = ids;
        ct->ngpu_ids = nids;
        if ((int)nids != ct->gpu_count &&
            (rc = tf__warn(&s->warnings, &s->nwarnings,
                           "%s: container \"%s\" has %zu GPU IDs for %d GPUs",
                           tf__spec_akeys[A_CGPUS], k, nids, ct->gpu_count)))
            goto out;
    }
out:
    json_object_put(o);
    return rc;
}
