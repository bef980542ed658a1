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

/* Starts the plugin when HV->cfg.dp.enabled (else *OUT = NULL and 0). Stop with
 * tf_dp_stop before closing the state store. */
int tf_hv_dp_start(struct tf_hv *hv, struct tf_dp **out, char *err, size_t errlen);

#endif
