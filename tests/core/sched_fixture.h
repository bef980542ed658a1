/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only helpers for the scheduling suites: build clusters and requests in a few lines.
 * Private to tests/core (static functions, included by each test file).
 */
#ifndef TF_TESTS_SCHED_FIXTURE_H
#define TF_TESTS_SCHED_FIXTURE_H

#include "common/err.h"
#include "core/alloc.h"
#include "core/cluster.h"
#include "core/quota.h"

#include <stdio.h>
#include <string.h>

#define GiB (INT64_C(1) << 30)
#define MiB (INT64_C(1) << 20)
#define TF(x) ((int64_t)(x)*1000) /* whole TFLOPS -> milli */

static __attribute__((unused)) uint32_t fx_pool(struct tf_cluster *c, const char *name,
                                                enum tf_placement_mode mode)
{
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.placement = mode;
    uint32_t id;
    char err[256];
    if (tf_cluster_add_pool(c, name, &cfg, &id, err, sizeof(err)))
        fail_msg("add pool: %s", err);
    return id;
}

/* NGPUS GPUs of MODEL with indexes 0..n-1 and uuids "<node>-g<i>"; NVLINK connects all of them;
 * NUMA splits them in two halves when NUMA2 is set. */
static __attribute__((unused)) uint32_t fx_node_ex(struct tf_cluster *c, uint32_t pool,
                                                   const char *name, const char *model,
                                                   unsigned ngpus, bool nvlink, bool numa2,
                                                   enum tf_isolation mode)
{
    struct tf_gpu_spec g[TF_NODE_MAX_GPUS];
    char uuids[TF_NODE_MAX_GPUS][64];
    memset(g, 0, sizeof(g));
    for (unsigned i = 0; i < ngpus; i++) {
        snprintf(uuids[i], sizeof(uuids[i]), "%s-g%u", name, i);
        g[i].uuid = uuids[i];
        g[i].model = tf_gpu_model_find(model);
        if (!g[i].model)
            fail_msg("no model %s", model);
        g[i].index = (int32_t)i;
        g[i].numa = numa2 ? (int16_t)(i * 2 / ngpus) : -1;
        g[i].phase = TF_GPU_RUNNING;
        g[i].nvlink = nvlink ? (((ngpus == 64) ? ~UINT64_C(0) : (UINT64_C(1) << ngpus) - 1) &
                                ~(UINT64_C(1) << i))
                             : 0;
    }
    struct tf_node_spec ns = {name, mode, 0, 0, g, (uint16_t)ngpus};
    uint32_t id;
    char err[256];
    if (tf_cluster_add_node(c, pool, &ns, &id, err, sizeof(err)))
        fail_msg("add node: %s", err);
    return id;
}

static __attribute__((unused)) uint32_t fx_node(struct tf_cluster *c, uint32_t pool,
                                                const char *name, const char *model, unsigned ngpus)
{
    return fx_node_ex(c, pool, name, model, ngpus, false, false, TF_ISOLATION_UNSET);
}

/* A soft request of T whole TFLOPS and V bytes per GPU. */
static __attribute__((unused)) struct tf_alloc_request fx_req(const char *ns, const char *name,
                                                              int64_t tflops, int64_t vram)
{
    struct tf_alloc_request r;
    memset(&r, 0, sizeof(r));
    r.ns = ns;
    r.name = name;
    r.res.req_tflops = TF(tflops);
    r.res.req_vram = vram;
    r.qos = TF_QOS_MEDIUM;
    return r;
}

static __attribute__((unused)) void fx_check(const struct tf_alloc *a)
{
    char err[512];
    if (tf_alloc_check(a, err, sizeof(err)))
        fail_msg("invariant: %s", err);
}

/* Places R and returns the chosen node's name (fails the test when unschedulable). */
static __attribute__((unused)) const char *
fx_place(struct tf_alloc *a, const struct tf_alloc_request *r, struct tf_alloc_result *res)
{
    char err[512];
    struct tf_alloc_result tmp;
    if (!res)
        res = &tmp;
    int rc = tf_alloc_place(a, r, res, NULL, err, sizeof(err));
    if (rc)
        fail_msg("place %s/%s: %s (%s)", r->ns, r->name, tf_strerror(rc), err);
    fx_check(a);
    return tf_alloc_cluster(a)->nodes[res->node].name;
}

/* The single reason of placing R on a one-node pool (or the pod-level error). */
static __attribute__((unused)) const char *fx_reason(struct tf_alloc *a,
                                                     const struct tf_alloc_request *r, int want_rc)
{
    static char buf[4096];
    struct tf_reasons rb;
    struct tf_alloc_result res;
    char err[512];
    tf_reasons_init(&rb, buf, sizeof(buf));
    int rc = tf_alloc_place(a, r, &res, &rb, err, sizeof(err));
    if (rc != want_rc)
        fail_msg("place %s/%s: rc %s, want %s (%s)", r->ns, r->name, tf_err_name(rc),
                 tf_err_name(want_rc), err);
    const char *first = tf_reasons_next(&rb, NULL);
    return first ? first : "";
}

static __attribute__((unused)) const char *gpu_uuid(const struct tf_alloc *a, uint32_t gpu)
{
    return tf_alloc_cluster(a)->gpus[gpu].uuid;
}

#endif
