/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the Pod webhook (webhook.c, webhook_config.c, webhook_defaults.c,
 * webhook_inject.c): the cluster lookups of an admission and the pod-spec edits. Not a public
 * header.
 */
#ifndef TF_CONTROLLER_WEBHOOK_INT_H
#define TF_CONTROLLER_WEBHOOK_INT_H

#include "controller/webhook.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* A container of POD asks for one of the native GPU resources NATIVE[0..N). */
bool tf__wh_has_native_gpus(json_object *pod, const struct tf_native_resource *native, size_t n);

/* The default GPUPool: the one annotated tensor-fusion.ai/is-default-pool: "true", else the
 * configured one. Returns the pool object (owned) or NULL, and its name in *NAME. */
json_object *tf__wh_default_pool(struct tf_webhook *wh, const char **name);

/* Writes gang pod S's normalised keys and its group's size and key (from POD's owner, through
 * WH's environment) onto ANN; false with OUT denied (400) when the size is not valid. */
bool tf__wh_gang_annotations(struct tf_webhook *wh, const struct tf_spec *s,
                             const struct tf_profile *p, json_object *pod, const char *ns,
                             const char *wname, json_object *ann, struct tf_webhook_result *out);

/* ---- pod-spec edits (webhook_inject.c) ---- */

/* PARENT's object / the string member KEY (created or replaced). */
json_object *tf__wh_child_obj(json_object *parent, const char *key);
void tf__wh_set_str(json_object *o, const char *key, const char *val);
/* The container of SPEC named NAME, or NULL. */
json_object *tf__wh_container_named(json_object *spec, const char *name);
/* NVIDIA_VISIBLE_DEVICES of container C from the pod's gpu-ids or, when the pod splits its
 * GPUs per container, from SPLIT_NAME's tensor-fusion.ai/gpu-ids-<container>. */
void tf__wh_visible_devices(json_object *c, const char *split_name);
/* Container C's limit (and request) of resource RES set to N. */
void tf__wh_set_limit(json_object *c, const char *res, int n);
/* Pod index I as the resource tensor-fusion.ai/index_<k>: <n> (core/podindex.h). */
void tf__wh_index_limit(json_object *c, int i);
/* Removes the native GPU resources (nvidia.com/gpu, ...) container CT takes over. */
void tf__wh_drop_native_gpu(json_object *c, const struct tf_spec_container *ct);
/* Soft isolation: the limiter library (init container), the pod's limit region (host
 * directory, read-only limits part), LD_PRELOAD and the limiter's environment. */
void tf__wh_inject_soft(struct tf_webhook *wh, json_object *spec, const struct tf_spec *s);
/* Remote and hard isolation: the client library in place of libcuda, the worker's address
 * and the workload's token (LOCAL: the worker is a sidecar of this pod). */
void tf__wh_inject_client(struct tf_webhook *wh, json_object *spec, const struct tf_spec *s,
                          const char *workload, bool local);

#endif
