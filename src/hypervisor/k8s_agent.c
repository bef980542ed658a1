/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes mode: flags and wiring of the node agent (see k8s_agent.h).
 */
#include "hypervisor/k8s_agent.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/k8s_gpus.h"
#include "hypervisor/k8s_pods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tf_hv_k8s {
    struct tf_k8s_client *c;
    struct tf_hv_k8s_gpus *gpus;
    struct tf_hv_k8s_pods *pods;
};

int tf_hv_k8s_flag(struct tf_hv_k8s_opts *o, const char *arg, const char *val)
{
    if (!strcmp(arg, "--kubernetes")) {
        o->enabled = true;
        return 1;
    }
    bool ours = !strcmp(arg, "--node-name") || !strcmp(arg, "--shm-root") ||
                !strcmp(arg, "--lease-namespace") || !strcmp(arg, "--kubeconfig") ||
                !strcmp(arg, "--context") || !strcmp(arg, "--server");
    if (!ours)
        return 0;
    if (!val) {
        fprintf(stderr, "tf-hypervisor: %s needs a value\n", arg);
        return -1;
    }
    if (!strcmp(arg, "--node-name"))
        o->node = val;
    else if (!strcmp(arg, "--shm-root"))
        o->shm_root = val;
    else if (!strcmp(arg, "--lease-namespace"))
        o->lease_ns = val;
    else
        tf_k8s_flags_set(&o->api, arg, val);
    return 2;
}

/* tf-controller assigned this node's GPUs to POOL: metric lines carry it from now on. */
static void pool_assigned(const char *pool, void *arg)
{
    if (tf_hv_set_pool_tag(arg, pool))
        tf_log(TF_LOG_WARN, "k8s", "pool %s: out of memory", pool);
}

int tf_hv_k8s_start(struct tf_hv *hv, const struct tf_hv_k8s_opts *o, struct tf_hv_k8s **out,
                    char *err, size_t errlen)
{
    *out = NULL;
    const char *node = o->node ? o->node : getenv("NODE_NAME");
    const char *root = o->shm_root ? o->shm_root : TF_HV_K8S_SHM_ROOT;
    if (!node || !*node) {
        tf_errf(err, errlen, "--kubernetes needs the node name: --node-name or $NODE_NAME");
        return TF_EINVAL;
    }
    if (root[0] != '/') {
        tf_errf(err, errlen, "--shm-root %s: not an absolute path", root);
        return TF_EINVAL;
    }
    if (!hv->soft)
        tf_log(TF_LOG_WARN, "k8s", "the limit engine did not start: soft pods get no regions");
    hv->cfg.kubernetes = true;
    if (!tf_strlcpy(hv->cfg.node, node, sizeof(hv->cfg.node))) {
        tf_errf(err, errlen, "node name %s too long", node);
        return TF_ERANGE;
    }
    struct tf_k8s_config cfg;
    int rc = tf_k8s_flags_config(&o->api, &cfg, err, errlen);
    if (rc)
        return rc;
    /* A node agent retries in its own loops: keep single requests short so that shutdown
     * (which joins the threads) stays prompt when the API server is unreachable. */
    cfg.max_attempts = 3;
    cfg.backoff_max_ms = 2000;
    cfg.timeout_ms = 10000;
    struct tf_hv_k8s *k = calloc(1, sizeof(*k));
    if (k)
        k->c = tf_k8s_client_new(&cfg);
    tf_k8s_config_free(&cfg);
    if (!k || !k->c) {
        tf_hv_k8s_stop(k);
        tf_errf(err, errlen, "cannot create the API client");
        return TF_ENOMEM;
    }
    const char *lease_ns = o->lease_ns ? o->lease_ns : getenv("POD_NAMESPACE");
    k->gpus = tf_hv_k8s_gpus_start(k->c, hv->state, node, hv->cfg.pool,
                                   lease_ns && *lease_ns ? lease_ns : "tensor-fusion-sys",
                                   pool_assigned, hv);
    k->pods = tf_hv_k8s_pods_start(hv, k->c, node, root);
    if (!k->gpus || !k->pods) {
        tf_hv_k8s_stop(k);
        tf_errf(err, errlen, "cannot start the node agent's threads");
        return TF_ENOMEM;
    }
    tf_log(TF_LOG_INFO, "k8s", "node agent for node %s: pool %s, pod regions under %s", node,
           hv->cfg.pool[0] ? hv->cfg.pool : "(assigned by tf-controller)", root);
    *out = k;
    return 0;
}

void tf_hv_k8s_step(struct tf_hv_k8s *k, int64_t now_ms)
{
    tf_hv_k8s_pods_step(k->pods, now_ms);
}

bool tf_hv_k8s_owns(struct tf_hv_k8s *k, const char *key, int pid)
{
    return k && tf_hv_k8s_pods_owns(k->pods, key, pid);
}

void tf_hv_k8s_check_escapes(struct tf_hv_k8s *k)
{
    if (k)
        tf_hv_k8s_pods_check_escapes(k->pods);
}

void tf_hv_k8s_stop(struct tf_hv_k8s *k)
{
    if (!k)
        return;
    tf_hv_k8s_pods_destroy(k->pods);
    tf_hv_k8s_gpus_stop(k->gpus);
    tf_k8s_client_destroy(k->c);
    free(k);
}
