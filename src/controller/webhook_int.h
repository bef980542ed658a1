/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the Pod webhook (webhook.c, webhook_defaults.c): the cluster lookups of an
 * admission. Not a public header.
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

#endif
