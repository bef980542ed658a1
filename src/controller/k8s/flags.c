/* SPDX-License-Identifier: Apache-2.0
 *
 * API-connection flags shared by tf-controller and tf-hypervisor (see flags.h).
 */
#include "controller/k8s/flags.h"

#include "common/err.h"
#include "common/strutil.h"

#include <stdlib.h>
#include <string.h>

bool tf_k8s_flags_set(struct tf_k8s_flags *f, const char *arg, const char *val)
{
    if (!strcmp(arg, "--kubeconfig"))
        f->kubeconfig = val;
    else if (!strcmp(arg, "--context"))
        f->context = val;
    else if (!strcmp(arg, "--server"))
        f->server = val;
    else
        return false;
    return true;
}

int tf_k8s_flags_config(const struct tf_k8s_flags *f, struct tf_k8s_config *cfg, char *err,
                        size_t errlen)
{
    tf_k8s_config_init(cfg);
    int rc = 0;
    if (f->kubeconfig)
        rc = tf_k8s_config_kubeconfig(cfg, f->kubeconfig, f->context, err, errlen);
    else if (!f->server)
        rc = tf_k8s_config_in_cluster(cfg, NULL, err, errlen);
    if (rc == 0 && f->server) {
        char *s = strdup(f->server);
        if (!s) {
            tf_errf(err, errlen, "out of memory");
            rc = TF_ENOMEM;
        } else {
            free(cfg->server);
            cfg->server = s;
        }
    }
    if (rc)
        tf_k8s_config_free(cfg);
    return rc;
}
