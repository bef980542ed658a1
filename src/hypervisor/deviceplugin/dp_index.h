/* SPDX-License-Identifier: Apache-2.0
 *
 * The pod-index device plugins' messages (core/podindex.h): plugin k advertises
 * tensor-fusion.ai/index_<k> as TF_PODIDX_DEVICES healthy counting devices "<k>-<j>"; the
 * kubelet gives a container n of them, so Allocate learns the pod index n + k * MOD and asks
 * the resolver (the hypervisor: the pod of this node holding that index) for the container's
 * environment, e.g. NVIDIA_VISIBLE_DEVICES=MIG-<uuid> for a partitioned pod.
 *
 * Same conventions as dp_codec.h (bytes in, bytes out, no I/O here; the resolver may block,
 * bounded, on the plugin's own thread). Fuzzed by fuzz/fuzz_deviceplugin.c.
 */
#ifndef TF_HYPERVISOR_DP_INDEX_H
#define TF_HYPERVISOR_DP_INDEX_H

#include "core/podindex.h"

#include <stddef.h>
#include <stdint.h>

#define TF_DP_INDEX_ENDPOINT_FMT "tensor-fusion-index-%d.sock"
#define TF_DP_MAX_ENV 4

struct tf_dp_env {
    char key[48];
    char value[1024];
};

/* The environment of one container of the pod holding INDEX: fills ENV[0..*NENV) (at most
 * TF_DP_MAX_ENV) and returns 0, or a negative code with ERR: TF_ENOENT (no pod of this node
 * holds it), TF_ECONFLICT (several do), TF_ETIMEDOUT (its partition did not appear in time). */
typedef int (*tf_dp_resolve_fn)(void *arg, int index, struct tf_dp_env *env, int *nenv, char *err,
                                size_t errlen);

/* DevicePluginOptions of an index plugin: nothing optional (no preferred allocation). */
int tf_dp_encode_index_options(uint8_t **out, size_t *outlen);
/* RegisterRequest {v1beta1, ENDPOINT, tensor-fusion.ai/index_<K>, options}. */
int tf_dp_encode_index_register(int k, const char *endpoint, uint8_t **out, size_t *outlen);
/* ListAndWatchResponse with bucket K's TF_PODIDX_DEVICES devices, all Healthy. */
int tf_dp_encode_index_list(int k, uint8_t **out, size_t *outlen);
/* Allocate on plugin K: each container request must name 1..TF_PODIDX_MOD distinct devices
 * of K (TF_EINVAL / TF_ENOENT otherwise); RESOLVE gives each container's env. Fails as a
 * whole when any container fails. */
int tf_dp_handle_index_allocate(int k, tf_dp_resolve_fn resolve, void *arg, const uint8_t *in,
                                size_t inlen, uint8_t **out, size_t *outlen, char *err,
                                size_t errlen);
/* PreStartContainer on plugin K: every ID must be one of K's devices. */
int tf_dp_handle_index_prestart(int k, const uint8_t *in, size_t inlen, uint8_t **out,
                                size_t *outlen, char *err, size_t errlen);

#endif
