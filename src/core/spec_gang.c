/* SPDX-License-Identifier: Apache-2.0
 *
 * The workload spec's gang scheduling keys (upstream TensorFusion): tensor-fusion.ai/gang-enabled,
 * gang-min-members and gang-timeout, or a WorkloadProfile's spec.gangScheduling (see spec.h,
 * docs/spec.md "Gang scheduling"). The group's size is checked against the workload's replicas
 * where those are known (tf_gang_quorum, core/gang.h).
 */
#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_int.h"
#include "core/spec_util.h"

#include <string.h>

int tf__spec_gang(struct ctx *c)
{
    struct tf_spec *s = c->s;
    const struct tf_profile *p = c->prof;
    int rc;
    bool enabled_set = c->a[A_GANG] != NULL;
    if (enabled_set) {
        if (tf_parse_bool(c->a[A_GANG], &s->gang))
            return tf__spec_fail(c, TF_EINVAL, "%s: \"%s\" must be \"true\" or \"false\"",
                                 tf__spec_akeys[A_GANG], c->a[A_GANG]);
    } else if (p && p->gang) {
        s->gang = true;
    }
    int32_t min = p ? p->gang_min_members : 0;
    if (c->a[A_GANG_MIN]) {
        long long n;
        if (tf__parse_uint(c->a[A_GANG_MIN], strlen(c->a[A_GANG_MIN]), 0, INT32_MAX, &n))
            return tf__spec_fail(c, TF_EINVAL,
                                 "%s: \"%s\" must be a whole number of pods (0 = all replicas)",
                                 tf__spec_akeys[A_GANG_MIN], c->a[A_GANG_MIN]);
        min = (int32_t)n;
        /* Upstream's documented form: gang-min-members alone turns the gang on. */
        if (!enabled_set && !s->gang && min >= 2) {
            s->gang = true;
            WARN(c, "%s \"%d\" without %s: gang scheduling is on (set %s: \"true\" as well)",
                 tf__spec_akeys[A_GANG_MIN], min, tf__spec_akeys[A_GANG], tf__spec_akeys[A_GANG]);
        }
    }
    if (s->gang && min == 1)
        return tf__spec_fail(c, TF_EINVAL,
                             "%s: \"1\": a gang needs at least 2 members (0 = all the replicas)",
                             c->a[A_GANG_MIN] ? tf__spec_akeys[A_GANG_MIN]
                                              : "WorkloadProfile spec.gangScheduling.minMembers");
    int64_t timeout = p ? p->gang_timeout_ms : 0;
    if (c->a[A_GANG_TIMEOUT] &&
        (rc = tf_go_duration_ms(c->a[A_GANG_TIMEOUT], &timeout, tf__spec_akeys[A_GANG_TIMEOUT],
                                c->err, c->errlen)))
        return rc;
    if (!s->gang) {
        if (c->a[A_GANG_MIN] || c->a[A_GANG_TIMEOUT])
            WARN(c, "%s is not \"true\": %s ignored", tf__spec_akeys[A_GANG],
                 c->a[A_GANG_MIN] ? tf__spec_akeys[A_GANG_MIN] : tf__spec_akeys[A_GANG_TIMEOUT]);
        return 0;
    }
    s->gang_min_members = min;
    s->gang_timeout_ms = timeout;
    return 0;
}
