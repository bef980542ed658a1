/* SPDX-License-Identifier: Apache-2.0
 *
 * The pods of this node by pod index (see k8s_index.h).
 */
#include "hypervisor/k8s_index.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Whether container C requests resource RES with quantity N (limits or requests). */
static bool requests(json_object *c, const char *res, int n)
{
    static const char *const kinds[] = {"limits", "requests"};
    char want[8];
    snprintf(want, sizeof(want), "%d", n);
    for (size_t i = 0; i < 2; i++) {
        json_object *v = tf_json_path(c, "resources", kinds[i], res, NULL);
        if (v &&
            (json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int)) &&
            strcmp(json_object_get_string(v), want) == 0)
            return true;
    }
    return false;
}

int tf_hv_k8s_pod_index(json_object *pod)
{
    int index = tf_podidx_parse_annotation(
        tf_json_str(pod, "metadata", "annotations", TF_PODIDX_ANNOTATION, NULL));
    int k, n;
    char res[40];
    if (index < 0 || tf_podidx_encode(index, &k, &n) || tf_podidx_resource(k, res, sizeof(res)))
        return -1;
    static const char *const lists[] = {"initContainers", "containers"};
    for (size_t l = 0; l < 2; l++) {
        json_object *cs = tf_json_path(pod, "spec", lists[l], NULL);
        size_t nc =
            cs && json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
        for (size_t i = 0; i < nc; i++)
            if (requests(json_object_array_get_idx(cs, i), res, n))
                return index;
    }
    return -1;
}

static void set_env(struct tf_dp_env *e, const char *key, const struct tf_hv_idx_entry *x)
{
    tf_strlcpy(e->key, key, sizeof(e->key));
    e->value[0] = '\0';
    for (int g = 0; g < x->ngpu; g++) {
        if (g)
            strncat(e->value, ",", sizeof(e->value) - strlen(e->value) - 1);
        strncat(e->value, x->migs[g], sizeof(e->value) - strlen(e->value) - 1);
    }
}

int tf_hv_idx_resolve(const struct tf_hv_idx_entry *e, int n, int index, struct tf_dp_env *env,
                      int *nenv, char *err, size_t errlen)
{
    const struct tf_hv_idx_entry *x = NULL;
    *nenv = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].index != index)
            continue;
        if (x) {
            tf_errf(err, errlen, "pods %s and %s of this node both hold pod index %d", x->key,
                    e[i].key, index);
            return TF_ECONFLICT;
        }
        x = &e[i];
    }
    if (!x) {
        tf_errf(err, errlen, "no partitioned pod of this node holds pod index %d", index);
        return TF_ENOENT;
    }
    if (x->problem[0]) {
        tf_errf(err, errlen, "pod %s: %s", x->key, x->problem);
        return TF_EBUSY;
    }
    if (x->ngpu == 0) {
        tf_errf(err, errlen, "pod %s has no GPUs or partition template yet", x->key);
        return TF_EBUSY;
    }
    for (int g = 0; g < x->ngpu; g++)
        if (!x->migs[g][0]) {
            tf_errf(err, errlen, "pod %s: its partition on GPU %s is not created yet", x->key,
                    x->gpus[g]);
            return TF_EBUSY;
        }
    set_env(&env[0], "NVIDIA_VISIBLE_DEVICES", x);
    set_env(&env[1], "CUDA_VISIBLE_DEVICES", x);
    *nenv = 2;
    return 0;
}

struct tf_hv_idx {
    pthread_mutex_t mu;
    struct tf_hv_idx_entry *e; /* [mu] */
    int n;                     /* [mu] */
    atomic_bool kick;
    atomic_bool closed;
};

struct tf_hv_idx *tf_hv_idx_new(void)
{
    struct tf_hv_idx *t = calloc(1, sizeof(*t));
    if (t)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void tf_hv_idx_free(struct tf_hv_idx *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->e);
    free(t);
}

void tf_hv_idx_publish(struct tf_hv_idx *t, const struct tf_hv_idx_entry *e, int n)
{
    struct tf_hv_idx_entry *cp = n ? malloc((size_t)n * sizeof(*cp)) : NULL;
    if (n && !cp)
        return; /* the previous entries stay */
    if (n)
        memcpy(cp, e, (size_t)n * sizeof(*cp));
    pthread_mutex_lock(&t->mu);
    free(t->e);
    t->e = cp;
    t->n = n;
    pthread_mutex_unlock(&t->mu);
}

bool tf_hv_idx_kicked(struct tf_hv_idx *t)
{
    return t && atomic_exchange(&t->kick, false);
}

void tf_hv_idx_close(struct tf_hv_idx *t)
{
    if (t)
        atomic_store(&t->closed, true);
}

int tf_hv_idx_wait(struct tf_hv_idx *t, int index, int timeout_ms, struct tf_dp_env *env, int *nenv,
                   char *err, size_t errlen)
{
    for (int waited = 0;; waited += 100) {
        if (atomic_load(&t->closed)) {
            tf_errf(err, errlen, "the hypervisor is stopping");
            return TF_ESTATE;
        }
        pthread_mutex_lock(&t->mu);
        int rc = tf_hv_idx_resolve(t->e, t->n, index, env, nenv, err, errlen);
        pthread_mutex_unlock(&t->mu);
        if ((rc != TF_ENOENT && rc != TF_EBUSY) || waited >= timeout_ms) {
            if (rc == TF_ENOENT || rc == TF_EBUSY) {
                char last[512];
                tf_strlcpy(last, err, sizeof(last));
                tf_errf(err, errlen, "after %d ms: %s", waited, last);
                return TF_ETIMEDOUT;
            }
            return rc;
        }
        atomic_store(&t->kick, true);
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
}
