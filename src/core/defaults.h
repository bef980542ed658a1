/* SPDX-License-Identifier: Apache-2.0
 *
 * What cluster objects contribute to a pod's workload spec at admission, as upstream
 * TensorFusion's webhook reads them (internal/webhook/v1/tf_parser.go): the GPUPool (its
 * tensor-fusion.ai/is-default-pool annotation, qosConfig.defaultQoS,
 * nodeManagerConfig.defaultIsolationMode / defaultVendor, defaultUsingLocalGPU), the
 * namespace's GPUResourceQuota (spec.single.defaultRequests / defaultLimits) and the
 * ProviderConfigs (the native GPU resource names each vendor's device plugin advertises).
 * Used by the webhook (objects from the API server) and `tfctl spec` (objects from -f files).
 *
 * Pure and thread-safe. Strings in struct tf_pool_defaults borrow from the json-c trees passed
 * in: keep those alive as long as the defaults.
 */
#ifndef TF_CORE_DEFAULTS_H
#define TF_CORE_DEFAULTS_H

#include "core/spec.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define TF_ANN_DEFAULT_POOL TF_KEY_PREFIX "is-default-pool"

/* True when GPUPool POOL carries tensor-fusion.ai/is-default-pool: "true". */
bool tf_pool_is_default(json_object *pool);

/* POOL's defaults into D (qos, isolation, isLocalGPU, vendor; pool_name = its name). Values
 * that are not valid enums are skipped: the CRD schema keeps them out. */
void tf_defaults_from_pool(json_object *pool, struct tf_pool_defaults *d);

/* GPUResourceQuota QUOTA's spec.single.defaultRequests / defaultLimits (tflops, vram) into
 * D->requests / D->limits, where upstream fills them in. Returns 0, or TF_EINVAL for a value
 * that is not a quantity (message in ERR naming the quota and field). */
int tf_defaults_from_quota(json_object *quota, struct tf_pool_defaults *d, char *err,
                           size_t errlen);

/* The native GPU resources of the ProviderConfig objects in ARRAY (a JSON array): each
 * spec.inUseResourceNames entry (exact; a trailing '*' makes it a prefix) and each
 * spec.devicePluginDetection.resourceNamePrefixes entry, with spec.vendor (canonical when
 * known). *OUT is a new array with *N entries, owned with its strings (release with
 * tf_defaults_native_free); (NULL, 0) when ARRAY holds no usable entry. Returns 0 or
 * TF_ENOMEM. */
int tf_defaults_native(json_object *array, struct tf_native_resource **out, size_t *n);
void tf_defaults_native_free(struct tf_native_resource *list, size_t n);

#endif
