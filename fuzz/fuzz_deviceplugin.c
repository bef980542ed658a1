/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the device plugin's decoding of what the kubelet sends (dp_codec.h,
 * dp_index.h). The first byte picks the method (% 6: Allocate, GetPreferredAllocation,
 * PreStartContainer, the Empty of GetDevicePluginOptions / ListAndWatch, or a pod-index
 * plugin's Allocate and PreStartContainer, on plugin (byte / 6) % 16), the rest is its request
 * message, handled against a fixed node (3 GPUs x 4 slots, one GPU gone; pod indexes held by
 * even-numbered pods only). Every answer must decode again and agree with the request: one
 * response per container, preferred sets no larger than asked, made of advertised IDs,
 * without repeats; a pod-index container gets the env of the index its devices encode.
 */
#include "dp_api.pb-c.h"
#include "hypervisor/deviceplugin/dp_codec.h"
#include "hypervisor/deviceplugin/dp_index.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tf_dp_list node;

static void check_preferred(const uint8_t *in, size_t inlen, const uint8_t *out, size_t outlen)
{
    V1beta1__PreferredAllocationRequest *q =
        v1beta1__preferred_allocation_request__unpack(NULL, inlen, in);
    V1beta1__PreferredAllocationResponse *r =
        v1beta1__preferred_allocation_response__unpack(NULL, outlen, out);
    if (!q || !r || r->n_container_responses != q->n_container_requests)
        abort();
    for (size_t c = 0; c < r->n_container_responses; c++) {
        const V1beta1__ContainerPreferredAllocationResponse *a = r->container_responses[c];
        if (a->n_deviceids > (size_t)q->container_requests[c]->allocation_size)
            abort();
        for (size_t i = 0; i < a->n_deviceids; i++) {
            if (tf_dp_list_find(&node, a->deviceids[i]) < 0)
                abort();
            for (size_t j = 0; j < i; j++)
                if (!strcmp(a->deviceids[i], a->deviceids[j]))
                    abort();
        }
    }
    v1beta1__preferred_allocation_request__free_unpacked(q, NULL);
    v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
}

/* The pod of index I: even ones exist (one MIG device each), odd ones do not. */
static int resolve(void *arg, int i, struct tf_dp_env *env, int *nenv, char *err, size_t errlen)
{
    (void)arg;
    if (i % 2) {
        snprintf(err, errlen, "no pod holds %d", i);
        return -5;
    }
    snprintf(env[0].key, sizeof(env[0].key), "NVIDIA_VISIBLE_DEVICES");
    snprintf(env[0].value, sizeof(env[0].value), "MIG-%d", i);
    *nenv = 1;
    return 0;
}

/* Allocate's answer to IN: one response per container, no mounts or device nodes; K < 0 (the
 * vgpu plugin): its slot IDs in TF_VGPU_IDS; else the pod-index plugin K's resolved env. */
static void check_allocate(int k, const uint8_t *in, size_t inlen, const uint8_t *out,
                           size_t outlen)
{
    V1beta1__AllocateRequest *q = v1beta1__allocate_request__unpack(NULL, inlen, in);
    V1beta1__AllocateResponse *r = v1beta1__allocate_response__unpack(NULL, outlen, out);
    if (!q || !r || r->n_container_responses != q->n_container_requests)
        abort();
    for (size_t c = 0; c < r->n_container_responses; c++) {
        const V1beta1__ContainerAllocateResponse *a = r->container_responses[c];
        char want[32];
        snprintf(want, sizeof(want), "MIG-%d",
                 tf_podidx_decode(k, (int)q->container_requests[c]->n_devices_ids));
        if (a->n_envs != 1 || a->n_mounts || a->n_devices ||
            (k < 0 ? strcmp(a->envs[0]->key, TF_DP_ENV_IDS) != 0
                   : strcmp(a->envs[0]->value, want) != 0))
            abort();
    }
    v1beta1__allocate_request__free_unpacked(q, NULL);
    v1beta1__allocate_response__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!node.slot) {
        static const struct tf_dp_gpu gpus[] = {
            {"GPU-aaaaaaaa-1111-2222-3333-444444444444", true, 0},
            {"GPU-bbbbbbbb-1111-2222-3333-444444444444", false, -1},
            {"GPU-cccccccc-1111-2222-3333-444444444444", true, 1},
        };
        if (tf_dp_list_build(gpus, 3, 4, &node))
            abort();
    }
    if (size < 1)
        return 0;
    const uint8_t *in = data + 1;
    size_t inlen = size - 1;
    uint8_t *out = NULL;
    size_t outlen = 0;
    char err[512];
    int rc;
    int k = (data[0] / 6) % TF_PODIDX_KEYS;
    switch (data[0] % 6) {
    case 0:
        rc = tf_dp_handle_allocate(&node, in, inlen, &out, &outlen, err, sizeof(err));
        if (rc == 0)
            check_allocate(-1, in, inlen, out, outlen);
        break;
    case 1:
        rc = tf_dp_handle_preferred(&node, in, inlen, &out, &outlen, err, sizeof(err));
        if (rc == 0)
            check_preferred(in, inlen, out, outlen);
        break;
    case 2:
        rc = tf_dp_handle_prestart(&node, in, inlen, &out, &outlen, err, sizeof(err));
        break;
    case 4:
        rc = tf_dp_handle_index_allocate(k, resolve, NULL, in, inlen, &out, &outlen, err,
                                         sizeof(err));
        if (rc == 0)
            check_allocate(k, in, inlen, out, outlen);
        break;
    case 5:
        rc = tf_dp_handle_index_prestart(k, in, inlen, &out, &outlen, err, sizeof(err));
        break;
    default:
        rc = tf_dp_decode_empty(in, inlen, err, sizeof(err));
        break;
    }
    if (rc && out)
        abort(); /* failures hand nothing back */
    free(out);
    return 0;
}
