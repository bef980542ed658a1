/* SPDX-License-Identifier: Apache-2.0
 *
 * The device plugin's messages on the wire: protobuf (kubelet deviceplugin API v1beta1,
 * api.proto, compiled with protoc-c) to and from the pure logic of dp_slots.h. No I/O: the
 * gRPC server (dp_server.h) hands each request's bytes to a handler here and sends back the
 * bytes it returns, so everything the kubelet sends is decoded and checked in this file (and
 * fuzzed by fuzz/fuzz_deviceplugin.c).
 *
 * Handlers return 0 with *OUT (malloc'ed, caller frees) and *OUTLEN set, or a negative code
 * with ERR set; the server answers a failed call with the gRPC status for its code:
 *   TF_EPROTO  the bytes are not the expected message      INVALID_ARGUMENT
 *   TF_EINVAL  a request the API does not allow            INVALID_ARGUMENT
 *   TF_ERANGE  more than the limits below                   INVALID_ARGUMENT
 *   TF_ENOENT  a device ID this plugin never advertised     NOT_FOUND
 *   TF_ESTATE  an unhealthy device                          FAILED_PRECONDITION
 *   TF_ENOMEM                                               RESOURCE_EXHAUSTED
 * Limits on a request: TF_DP_MAX_CONTAINERS container requests, each with at most as many
 * device IDs as the list has slots (the kubelet never sends more). Thread-safe.
 */
#ifndef TF_HYPERVISOR_DP_CODEC_H
#define TF_HYPERVISOR_DP_CODEC_H

#include "hypervisor/deviceplugin/dp_slots.h"

#include <stddef.h>
#include <stdint.h>

#define TF_DP_MAX_CONTAINERS 256

/* DevicePluginOptions: GetPreferredAllocation available, PreStartContainer not required. */
int tf_dp_encode_options(uint8_t **out, size_t *outlen);
/* ListAndWatchResponse with every slot of L and its health. */
int tf_dp_encode_list(const struct tf_dp_list *l, uint8_t **out, size_t *outlen);
/* RegisterRequest {version v1beta1, ENDPOINT, resource tensor-fusion.ai/vgpu, options}. */
int tf_dp_encode_register(const char *endpoint, uint8_t **out, size_t *outlen);

/* Empty (the request of GetDevicePluginOptions and ListAndWatch, the Register answer). */
int tf_dp_decode_empty(const uint8_t *in, size_t inlen, char *err, size_t errlen);

/* Allocate: AllocateRequest → AllocateResponse, one ContainerAllocateResponse per container
 * request, each with env TF_DP_ENV_IDS (tf_dp_allocate); no mounts, no device nodes (see
 * docs/kubernetes.md, "Device plugin"). Fails as a whole when any container fails. */
int tf_dp_handle_allocate(const struct tf_dp_list *l, const uint8_t *in, size_t inlen,
                          uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* GetPreferredAllocation: PreferredAllocationRequest → PreferredAllocationResponse
 * (tf_dp_preferred per container). */
int tf_dp_handle_preferred(const struct tf_dp_list *l, const uint8_t *in, size_t inlen,
                           uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* PreStartContainer: checks that every ID is ours, answers the empty response. */
int tf_dp_handle_prestart(const struct tf_dp_list *l, const uint8_t *in, size_t inlen,
                          uint8_t **out, size_t *outlen, char *err, size_t errlen);

#endif
