/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: cluster descriptions (tf_cluster_yaml_parse) must never crash or leak,
 * must fail with a message or succeed completely, and whatever cluster they describe must
 * keep the allocator's invariants through a few placements and releases.
 */
#include "common/err.h"
#include "core/alloc.h"
#include "core/cluster_yaml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(struct tf_cluster *c, struct tf_quota_set *q)
{
    struct tf_alloc *a = tf_alloc_new(c, q);
    if (!a)
        abort();
    static const enum tf_isolation isos[] = {TF_ISOLATION_SOFT, TF_ISOLATION_HARD,
                                             TF_ISOLATION_SHARED, TF_ISOLATION_PARTITIONED};
    char name[16], err[512], buf[4096];
    for (int i = 0; i < 8; i++) {
        struct tf_alloc_request r;
        memset(&r, 0, sizeof(r));
        r.ns = i & 1 ? "team-a" : "default";
        snprintf(name, sizeof(name), "p%d", i);
        r.name = name;
        r.res.req_tflops = 1000 * (i + 1) * 7;
        r.res.req_vram = (int64_t)(i + 1) << 30;
        r.gpu_count = (uint16_t)(1 + (i % 3 == 2));
        r.isolation = isos[i % 4];
        struct tf_reasons rb;
        tf_reasons_init(&rb, buf, sizeof(buf));
        struct tf_alloc_result res;
        int rc = tf_alloc_place(a, &r, &res, &rb, err, sizeof(err));
        if (rc != 0 && !err[0])
            abort();
        if (tf_alloc_check(a, err, sizeof(err)))
            abort();
    }
    for (int i = 0; i < 8; i += 2) {
        snprintf(name, sizeof(name), "p%d", i);
        tf_alloc_release(a, i & 1 ? "team-a" : "default", name);
    }
    if (tf_alloc_check(a, err, sizeof(err)))
        abort();
    tf_alloc_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_cluster *c = NULL;
    struct tf_quota_set *q = NULL;
    char err[512] = "";
    int rc = tf_cluster_yaml_parse((const char *)data, size, &c, &q, err, sizeof(err));
    if (rc) {
        if (c || q || !err[0])
            abort();
        return 0;
    }
    exercise(c, q);
    tf_cluster_destroy(c);
    tf_quota_set_destroy(q);
    return 0;
}
