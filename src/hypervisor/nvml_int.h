/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor's NVML wrapper: what nvml_mig.c needs of nvml.c's handle.
 */
#ifndef TF_HYPERVISOR_NVML_INT_H
#define TF_HYPERVISOR_NVML_INT_H

#include "hypervisor/nvml.h"
#include "sim/nvml_abi.h"

struct tf_hv_mig_api;

const char *tf__hv_nvml_msg(struct tf_hv_nvml *n, int r);
void *tf__hv_nvml_lib(struct tf_hv_nvml *n);
/* The MIG entry points' slot (owned by the handle: freed with it). */
struct tf_hv_mig_api **tf__hv_nvml_mig(struct tf_hv_nvml *n);
/* The handle of device INDEX, or NULL. */
nvmlDevice_t tf__hv_nvml_device(struct tf_hv_nvml *n, int index);

#endif
