/* SPDX-License-Identifier: Apache-2.0
 *
 * The kubelet device plugin (API v1beta1) on gRPC C-core: serves v1beta1.DevicePlugin on the
 * unix socket <dir>/<endpoint> and registers its resource (tensor-fusion.ai/vgpu, or a
 * pod-index resource tensor-fusion.ai/index_<k>: tf_dp_start_index, dp_index.h) with the
 * kubelet through v1beta1.Registration/Register on <dir>/kubelet.sock.
 *
 * One thread owns everything gRPC (one completion queue for the server and the Register
 * call, so the kubelet may call back GetDevicePluginOptions while its Register is still
 * pending, as the real kubelet does). Every tick (TF_DP_TICK_MS) it
 *   - asks the inventory callback for the GPUs and rebuilds the slot list (dp_slots.h); when
 *     the list changed, every open ListAndWatch stream is sent the new list;
 *   - checks the sockets: when its own socket file is gone or replaced (the kubelet deletes
 *     plugin sockets when it starts) it restarts the server; when kubelet.sock appears or is
 *     replaced (kubelet restart) it registers again; failed registrations are retried with
 *     a backoff of 1 s doubling to 30 s (at once when kubelet.sock is recreated).
 * A missing plugin directory is waited for, not an error.
 *
 * tf_dp_start / tf_dp_stop are called by one thread (main); the inventory callback runs on
 * the plugin thread and must be thread-safe with respect to the rest of the program.
 */
#ifndef TF_HYPERVISOR_DP_SERVER_H
#define TF_HYPERVISOR_DP_SERVER_H

#include "hypervisor/deviceplugin/dp_index.h"
#include "hypervisor/deviceplugin/dp_slots.h"

#include <stdbool.h>
#include <stddef.h>

#define TF_DP_DEFAULT_DIR "/var/lib/kubelet/device-plugins"
#define TF_DP_DEFAULT_ENDPOINT "tensor-fusion-vgpu.sock"
#define TF_DP_DEFAULT_SLOTS 16
#define TF_DP_TICK_MS 200

struct tf_dp_config {
    bool enabled;      /* --device-plugin on|off (default off) */
    char dir[200];     /* --kubelet-dir: the kubelet's plugin directory */
    char endpoint[64]; /* socket file name inside DIR */
    int slots;         /* --vgpu-slots: virtual devices per GPU */
};

/* Fills the defaults (disabled, TF_DP_DEFAULT_DIR, TF_DP_DEFAULT_ENDPOINT, 16 slots). */
void tf_dp_config_init(struct tf_dp_config *c);
/* Applies command-line option FLAG with value VAL when it is one of the device plugin's
 * (--device-plugin, --kubelet-dir, --vgpu-slots): 1 when taken, 0 when FLAG is not one of
 * them, TF_EINVAL / TF_ERANGE with ERR naming the flag and value. */
int tf_dp_config_option(struct tf_dp_config *c, const char *flag, const char *val, char *err,
                        size_t errlen);

/* Fills OUT (capacity MAX) with the GPUs; returns their count (or a negative code: the
 * list is then kept as it was). */
typedef int (*tf_dp_inventory_fn)(void *arg, struct tf_dp_gpu *out, char (*uuids)[64], int max);

struct tf_dp;

/* Starts the plugin thread. TF_ERANGE when the socket paths do not fit a unix socket
 * address, TF_ENOMEM, TF_EIO (thread). The caller owns *OUT: tf_dp_stop. */
int tf_dp_start(const struct tf_dp_config *cfg, tf_dp_inventory_fn inventory, void *arg,
                struct tf_dp **out, char *err, size_t errlen);
/* Starts pod-index plugin K (dp_index.h): resource tensor-fusion.ai/index_<k> on endpoint
 * tensor-fusion-index-<k>.sock in CFG->dir, Allocate answered through RESOLVE (on this
 * plugin's thread). Same errors as tf_dp_start. */
int tf_dp_start_index(const struct tf_dp_config *cfg, int k, tf_dp_resolve_fn resolve, void *arg,
                      struct tf_dp **out, char *err, size_t errlen);
/* Stops serving (open streams are cancelled), removes the socket, joins the thread, frees.
 * Accepts NULL. */
void tf_dp_stop(struct tf_dp *dp);

#endif
