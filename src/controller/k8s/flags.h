/* SPDX-License-Identifier: Apache-2.0
 *
 * The API-connection flags shared by tf-controller and tf-hypervisor --kubernetes, and the
 * one rule both use to turn them into a client configuration:
 *   --kubeconfig FILE   a kubeconfig (out-of-cluster); --context NAME picks its context
 *   --server URL        the API server (e.g. http://127.0.0.1:8001 from `kubectl proxy`):
 *                       with --kubeconfig it replaces the context's server, alone it is used
 *                       without credentials
 *   (none)              the pod's service account (in-cluster)
 * Plain data, thread-safe.
 */
#ifndef TF_CONTROLLER_K8S_FLAGS_H
#define TF_CONTROLLER_K8S_FLAGS_H

#include "controller/k8s/client.h"

#include <stdbool.h>
#include <stddef.h>

/* Borrowed strings (argv), NULL when not given. */
struct tf_k8s_flags {
    const char *kubeconfig;
    const char *context;
    const char *server;
};

/* Usage lines for the flags (each "  --flag ARG  text\n"), for the binaries' --help. */
#define TF_K8S_FLAGS_USAGE                                                                         \
    "  --kubeconfig FILE      out-of-cluster API access (default: service account)\n"              \
    "  --context NAME         kubeconfig context (default: current)\n"                             \
    "  --server URL           API server URL (overrides the kubeconfig's; alone: no "              \
    "credentials)\n"

/* When ARG is "--kubeconfig", "--context" or "--server", stores VAL (borrowed) in F and
 * returns true; false for any other ARG. */
bool tf_k8s_flags_set(struct tf_k8s_flags *f, const char *arg, const char *val);

/* Fills CFG (initialised here with tf_k8s_config_init) by the rule above. Returns 0, or the
 * loader's error (TF_ENOENT outside a cluster, a kubeconfig error) with ERR set; CFG is then
 * freed. */
int tf_k8s_flags_config(const struct tf_k8s_flags *f, struct tf_k8s_config *cfg, char *err,
                        size_t errlen);

#endif
