/* SPDX-License-Identifier: Apache-2.0
 *
 * Names and case-insensitive parsing of the workload spec's enumerations (isolation, QoS,
 * autoscale target, disable-features), and a side's TFLOPS on a GPU of a given capacity.
 */
#include "core/spec.h"

#include "common/err.h"
#include "common/strutil.h"

#include <stddef.h>

/* ---- enum names ---------------------------------------------------------------------------- */

static const char *const isolation_names[] = {NULL, "shared", "soft", "hard", "partitioned"};
static const char *const qos_names[] = {NULL, "low", "medium", "high", "critical"};
static const char *const target_names[] = {NULL, "compute", "vram", "all"};
static const char *const feature_names[] = {"gpu-limiter", "gpu-opt", "mem-manager",
                                            "start-worker"};
#define NFEATURES (sizeof(feature_names) / sizeof(feature_names[0]))

static int parse_enum(const char *s, const char *const *names, int n)
{
    for (int i = 1; i < n; i++)
        if (tf_streq_ci(s, names[i]))
            return i;
    return 0;
}

const char *tf_isolation_name(enum tf_isolation v)
{
    return (unsigned)v < 5 ? isolation_names[v] : NULL;
}

int tf_isolation_parse(const char *s, enum tf_isolation *out)
{
    int v = parse_enum(s, isolation_names, 5);
    if (!v)
        return TF_EINVAL;
    *out = (enum tf_isolation)v;
    return 0;
}

const char *tf_qos_name(enum tf_qos v)
{
    return (unsigned)v < 5 ? qos_names[v] : NULL;
}

int tf_qos_parse(const char *s, enum tf_qos *out)
{
    int v = parse_enum(s, qos_names, 5);
    if (!v)
        return TF_EINVAL;
    *out = (enum tf_qos)v;
    return 0;
}

const char *tf_autoscale_target_name(enum tf_autoscale_target v)
{
    return (unsigned)v < 4 ? target_names[v] : NULL;
}

int tf_autoscale_target_parse(const char *s, enum tf_autoscale_target *out)
{
    int v = parse_enum(s, target_names, 4);
    if (!v)
        return TF_EINVAL;
    *out = (enum tf_autoscale_target)v;
    return 0;
}

const char *tf_feature_name(enum tf_feature f)
{
    for (size_t i = 0; i < NFEATURES; i++)
        if ((unsigned)f == 1u << i)
            return feature_names[i];
    return NULL;
}

int tf_feature_parse(const char *s, enum tf_feature *out)
{
    for (size_t i = 0; i < NFEATURES; i++) {
        if (tf_streq_ci(s, feature_names[i])) {
            *out = (enum tf_feature)(1u << i);
            return 0;
        }
    }
    return TF_EINVAL;
}

int64_t tf_spec_res_tflops_on(const struct tf_spec_res *r, int64_t gpu_tflops_milli)
{
    if (r->tflops_set)
        return r->tflops_milli;
    if (r->percent_set)
        return tf_percent_to_tflops(r->percent_bp, gpu_tflops_milli);
    return 0;
}
