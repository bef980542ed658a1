/* SPDX-License-Identifier: Apache-2.0
 *
 * The device plugin's inventory: the hypervisor's discovered GPUs (dp_hv.h).
 */
#include "hypervisor/deviceplugin/dp_hv.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/k8s_index.h"

#include <stdlib.h>
#include <string.h>

static int inventory(void *arg, struct tf_dp_gpu *out, char (*uuids)[64], int max)
{
    struct tf_hv *hv = arg;
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    int n = 0;
    char err[256];
    if (!devs)
        return TF_ENOMEM;
    if (tf_hv_state_devices(hv->state, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err))) {
        tf_log(TF_LOG_WARN, "deviceplugin", "%s", err);
        free(devs);
        return TF_EIO;
    }
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++) {
        tf_strlcpy(uuids[i], devs[i].uuid, 64);
        out[i].uuid = uuids[i];
        out[i].healthy = devs[i].present;
        out[i].numa = devs[i].numa;
    }
    free(devs);
    return n;
}

/* How long Allocate waits for a partitioned pod's MIG devices (the kubelet is waiting). */
#define RESOLVE_WAIT_MS 15000

static int resolve(void *arg, int index, struct tf_dp_env *env, int *nenv, char *err, size_t errlen)
{
    struct tf_hv *hv = arg;
    if (!hv->idx) {
        tf_errf(err, errlen, "pod indexes need the node agent (--kubernetes)");
        return TF_ESTATE;
    }
    int rc = tf_hv_idx_wait(hv->idx, index, RESOLVE_WAIT_MS, env, nenv, err, errlen);
    if (!rc)
        tf_log(TF_LOG_INFO, "deviceplugin", "pod index %d: %s=%s", index, env[0].key, env[0].value);
    return rc;
}

int tf_hv_dp_start(struct tf_hv *hv, struct tf_hv_dp *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!hv->cfg.dp.enabled)
        return 0;
    int rc = tf_dp_start(&hv->cfg.dp, inventory, hv, &out->vgpu, err, errlen);
    for (int k = 0; !rc && k < TF_PODIDX_KEYS; k++)
        rc = tf_dp_start_index(&hv->cfg.dp, k, resolve, hv, &out->index[k], err, errlen);
    if (rc)
        tf_hv_dp_stop(out);
    return rc;
}

void tf_hv_dp_stop(struct tf_hv_dp *d)
{
    tf_dp_stop(d->vgpu);
    for (int k = 0; k < TF_PODIDX_KEYS; k++)
        tf_dp_stop(d->index[k]);
    memset(d, 0, sizeof(*d));
}
