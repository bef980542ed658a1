/* SPDX-License-Identifier: Apache-2.0
 *
 * The device plugin's inventory: the hypervisor's discovered GPUs (dp_hv.h).
 */
#include "hypervisor/deviceplugin/dp_hv.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <stdlib.h>

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

int tf_hv_dp_start(struct tf_hv *hv, struct tf_dp **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!hv->cfg.dp.enabled)
        return 0;
    return tf_dp_start(&hv->cfg.dp, inventory, hv, out, err, errlen);
}
