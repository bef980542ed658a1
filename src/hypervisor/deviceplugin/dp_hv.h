/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the kubelet device plugin (dp_server.h) over the hypervisor's
 * GPU inventory. The plugin thread reads the devices of the state store (state.h, its own
 * lock): a device NVML discovery reports present is a healthy GPU, one that has disappeared
 * is an unhealthy one. Enabled by --device-plugin on (Kubernetes mode); local mode never
 * starts it.
 */
#ifndef TF_HYPERVISOR_DP_HV_H
#define TF_HYPERVISOR_DP_HV_H

#include "hypervisor/deviceplugin/dp_server.h"
#include "hypervisor/hv.h"

/* The plugins: tensor-fusion.ai/vgpu and the pod-index ones (tensor-fusion.ai/index_0..f,
 * answered from HV->idx: a partitioned pod's containers get their MIG devices). */
struct tf_hv_dp {
    struct tf_dp *vgpu;
    struct tf_dp *index[TF_PODIDX_KEYS];
};

/* Starts the plugins when HV->cfg.dp.enabled (else nothing, and 0). Stop with
 * tf_hv_dp_stop before closing the state store. */
int tf_hv_dp_start(struct tf_hv *hv, struct tf_hv_dp *out, char *err, size_t errlen);
/* Stops what tf_hv_dp_start started (a zeroed D is fine). */
void tf_hv_dp_stop(struct tf_hv_dp *d);

#endif
