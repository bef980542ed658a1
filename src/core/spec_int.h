/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to libtfcore's pod parser (spec.c, spec_res.c, spec_ctr.c, spec_manifest.c): the
 * annotation key table and the parse context they share. Not a public header. Pure.
 */
#ifndef TF_CORE_SPEC_INT_H
#define TF_CORE_SPEC_INT_H

#include "core/spec.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The annotations of seed 001, in the order of akeys[]. */
enum akey {
    A_TFLOPS_REQ,
    A_TFLOPS_LIM,
    A_VRAM_REQ,
    A_VRAM_LIM,
    A_PCT_REQ,
    A_PCT_LIM,
    A_INJECT,
    A_QOS,
    A_LOCAL,
    A_GPU_COUNT,
    A_POOL,
    A_VENDOR,
    A_MODEL,
    A_DEDICATED,
    A_ISOLATION,
    A_INDICES,
    A_CGC,
    A_CGPUS,
    A_WORKLOAD,
    A_PROFILE,
    A_ENABLED_REPLICAS,
    A_AUTOSCALE,
    A_AUTOSCALE_TARGET,
    A_STANDALONE,
    A_DISABLE,
    A_GANG,
    A_GANG_MIN,
    A_GANG_TIMEOUT,
    A_SIDECAR,
    A_WORKER_TEMPLATE,
    A_PARTITION,
    NKEYS
};

/* The annotation key of each enum akey value. */
extern const char *const tf__spec_akeys[NKEYS];

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define PREFIX_LEN (sizeof(TF_KEY_PREFIX) - 1)

/* ---- parse context ------------------------------------------------------------------------- */

struct container {
    const char *name;    /* borrowed from the pod tree */
    int native;          /* native GPU limits (nvidia.com/gpu, nvidia.com/mig-*, ...), summed */
    json_object *limits; /* resources.limits (borrowed), for the native names */
    const char *vendor;  /* the vendor of its first native resource, or NULL */
};

struct ctx {
    struct tf_spec *s;
    const struct tf_profile *prof;
    const struct tf_pool_defaults *pool;
    char *err;
    size_t errlen;
    json_object *meta, *labels, *ann;
    bool have_containers;
    struct container *ctr;
    size_t nctr;
    const char *a[NKEYS]; /* annotation values as text, NULL when absent */
    char num[NKEYS][32];  /* text of integer annotation values */
};

#define WARN(c, ...)                                                                               \
    do {                                                                                           \
        int wrc_ = tf__warn(&(c)->s->warnings, &(c)->s->nwarnings, __VA_ARGS__);                   \
        if (wrc_)                                                                                  \
            return wrc_;                                                                           \
    } while (0)

/* Writes the message to C's error buffer and returns RC. */
int tf__spec_fail(struct ctx *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* spec_res.c: the four resource slots by precedence, inheritance and checks, into C->s.
 * MIGRATED_FROM names the native limits the pod's GPUs were taken over from when they give a
 * compute limit of 100 % (seed 004, no explicit GPU count), else NULL. */
int tf__spec_resources(struct ctx *c, const char *migrated_from);
/* QoS "high" by default (upstream's rule): TFLOPS and VRAM requests equal their limits. */
bool tf__spec_guaranteed(const struct tf_spec *s);

/* spec_ctr.c: the pod's containers and their nvidia.com/gpu limits (seed 004 input). */
int tf__spec_read_containers(struct ctx *c, json_object *podspec);
/* Sum of the containers' native GPU limits. */
int tf__spec_native_total(struct ctx *c);
/* The GPU containers, the inject list and the GPU count (EXPLICIT_COUNT > 0: given by
 * COUNT_SRC). */
int tf__spec_containers_and_count(struct ctx *c, int explicit_count, const char *count_src);
/* tensor-fusion.ai/container-gpus onto the GPU containers. */
int tf__spec_container_gpus(struct ctx *c);

/* The native GPU resources in force: the pool defaults' list, else the default. */
const struct tf_native_resource *tf__spec_native(const struct ctx *c, size_t *n);

/* spec_gang.c: the gang keys into C->s (after the rest). */
int tf__spec_gang(struct ctx *c);

/* spec.c: parses META (and PODSPEC, may be NULL) into OUT; OUT is empty on error. */
int tf__spec_parse_meta(json_object *meta, json_object *podspec, const struct tf_profile *profile,
                        const struct tf_pool_defaults *pool, struct tf_spec *out, char *err,
                        size_t errlen);

#endif
