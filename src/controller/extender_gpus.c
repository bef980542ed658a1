/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender's GPU table (see extender_int.h): what each GPU object says that the
 * scheduler needs, read once per change of the object, so that a rebuild of the state reads
 * no GPU JSON. One allocation per GPU: the record, then the object's name, node, uuid and
 * pool label, each NUL-terminated; the map's keys point into them.
 */
#include "controller/extender_int.h"

#include "common/log.h"
#include "common/yamljson.h"
#include "core/quantity.h"

#include <stdlib.h>
#include <string.h>

struct tf__gpus *tf__gpus_new(void)
{
    struct tf__gpus *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    tf_strmap_init(&t->t.by_key);
    return t;
}

void tf__gpus_destroy(struct tf__gpus *t)
{
    if (!t)
        return;
    tf__rectab_free(&t->t);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static int64_t q(const char *s, bool bytes)
{
    int64_t v = 0;
    if (!s ||
        (bytes ? tf_quantity_bytes(s, &v, "", NULL, 0) : tf_quantity_milli(s, &v, "", NULL, 0)))
        return 0;
    return v;
}

/* The record of GPU object G (new allocation), or NULL when it is not schedulable (no node,
 * unknown model: warned) or on ENOMEM (*NOMEM set). */
static struct tf__gpu_rec *extract(json_object *g, bool *nomem)
{
    json_object *st = NULL, *v;
    json_object_object_get_ex(g, "status", &st);
    const char *name = tf_json_str(g, "metadata", "name", NULL);
    const char *node = tf_json_str(st, "nodeSelector", "kubernetes.io/hostname", NULL);
    if (!node || !name)
        return NULL;
    const char *model = tf_json_str(st, "gpuModel", NULL);
    int64_t vram = q(tf_json_str(st, "capacity", "vram", NULL), true);
    const struct tf_gpu_model *m = model ? tf_gpu_model_find(model) : NULL;
    if (!m && model)
        m = tf_gpu_model_from_nvml(model, vram);
    if (!m) {
        tf_log(TF_LOG_WARN, "extender", "GPU %s: unknown model %s, not schedulable", name,
               model ? model : "(none)");
        return NULL;
    }
    const char *uuid = tf_json_str(st, "uuid", NULL);
    const char *pool = tf_json_str(g, "metadata", "labels", LABEL_GPUPOOL, NULL);
    if (!uuid)
        uuid = name;
    size_t ln = strlen(name) + 1, lno = strlen(node) + 1, lu = strlen(uuid) + 1,
           lp = pool ? strlen(pool) + 1 : 0;
    struct tf__gpu_rec *r = calloc(1, sizeof(*r) + ln + lno + lu + lp);
    if (!r) {
        *nomem = true;
        return NULL;
    }
    char *p = r->text;
    memcpy(p, name, ln);
    r->node = p += ln;
    memcpy(p, node, lno);
    r->uuid = p += lno;
    memcpy(p, uuid, lu);
    if (pool) {
        r->pool = p += lu;
        memcpy(p, pool, lp);
    }
    r->model = m;
    r->index = json_object_object_get_ex(st, "index", &v) ? json_object_get_int(v) : -1;
    int64_t numa =
        json_object_object_get_ex(st, "numaNode", &v) && json_object_is_type(v, json_type_int)
            ? json_object_get_int64(v)
            : -1;
    r->numa = numa >= 0 && numa <= INT16_MAX ? (int16_t)numa : -1; /* else unknown, not wrapped */
    const char *phase = tf_json_str(st, "phase", NULL);
    enum tf_gpu_phase ph = TF_GPU_RUNNING;
    if (phase && tf_gpu_phase_parse(phase, &ph))
        ph = TF_GPU_UNKNOWN;
    r->phase = (uint8_t)ph;
    /* The node's mode under its pool's isolationModeRules, as the controller resolved it
     * (written only under the static policy; the CRD's default "soft" alone means nothing). */
    const char *pol = tf_json_str(st, "isolationPolicy", NULL);
    const char *iso = tf_json_str(st, "isolationMode", NULL);
    enum tf_isolation mode = TF_ISOLATION_UNSET;
    if (pol && strcmp(pol, "Static") == 0 && iso && tf_isolation_parse(iso, &mode))
        mode = TF_ISOLATION_UNSET;
    r->mode = (uint8_t)mode;
    r->tflops = q(tf_json_str(st, "capacity", "tflops", NULL), false);
    r->vram = vram;
    return r;
}

static bool same(const struct tf__gpu_rec *a, const struct tf__gpu_rec *b)
{
    return a->model == b->model && a->tflops == b->tflops && a->vram == b->vram &&
           a->index == b->index && a->numa == b->numa && a->phase == b->phase &&
           a->mode == b->mode && !strcmp(a->node, b->node) && !strcmp(a->uuid, b->uuid) &&
           !a->pool == !b->pool && (!a->pool || !strcmp(a->pool, b->pool));
}

bool tf__gpus_put(struct tf__gpus *t, json_object *gpu)
{
    bool nomem = false;
    struct tf__gpu_rec *r = extract(gpu, &nomem);
    const char *name = tf_json_str(gpu, "metadata", "name", NULL);
    if (!name) {
        free(r);
        return false;
    }
    pthread_mutex_lock(&t->lock);
    const struct tf__gpu_rec *held = tf__rectab_get(&t->t, name, strlen(name));
    bool changed = !(held && r && same(held, r)) && (held || r);
    if (changed && r) { /* recorded or replaced */
        if (tf__rectab_put(&t->t, r->text, r)) {
            nomem = true;
            tf__rectab_del(&t->t, name, strlen(name));
        } else {
            r = NULL;
        }
    } else if (changed) { /* no longer schedulable */
        tf__rectab_del(&t->t, name, strlen(name));
    }
    pthread_mutex_unlock(&t->lock);
    free(r);
    if (nomem)
        tf_log(TF_LOG_ERROR, "extender", "GPU table: out of memory, GPU %s not recorded", name);
    return changed;
}

bool tf__gpus_del(struct tf__gpus *t, json_object *gpu)
{
    const char *name = tf_json_str(gpu, "metadata", "name", NULL);
    if (!name)
        return false;
    pthread_mutex_lock(&t->lock);
    bool had = tf__rectab_del(&t->t, name, strlen(name));
    pthread_mutex_unlock(&t->lock);
    return had;
}

void tf__gpus_load(struct tf__gpus *t, json_object *gpus)
{
    pthread_mutex_lock(&t->lock);
    tf__rectab_clear(&t->t);
    pthread_mutex_unlock(&t->lock);
    for (size_t i = 0; gpus && i < json_object_array_length(gpus); i++)
        tf__gpus_put(t, json_object_array_get_idx(gpus, i));
}
