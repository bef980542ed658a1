/* SPDX-License-Identifier: Apache-2.0
 *
 * Gang scheduling: the group size rules and the all-or-nothing planner (see gang.h).
 */
#include "core/gang.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/spec.h"

int tf_gang_quorum(int32_t min_members, int32_t desired, bool known, int32_t *desired_out,
                   int32_t *required, char *err, size_t errlen)
{
    if (min_members == 1) {
        tf_errf(err, errlen, "%s: \"1\": a gang needs at least 2 members", TF_ANN_GANG_MIN_MEMBERS);
        return TF_EINVAL;
    }
    if (known && desired < 2) {
        tf_errf(err, errlen, "%s: gang scheduling needs at least 2 replicas, the workload has %d",
                TF_ANN_GANG_ENABLED, desired);
        return TF_EINVAL;
    }
    if (known && min_members > desired) {
        tf_errf(err, errlen, "%s: \"%d\" is more than the workload's %d replicas",
                TF_ANN_GANG_MIN_MEMBERS, min_members, desired);
        return TF_EINVAL;
    }
    if (!known && min_members < 2) {
        tf_errf(err, errlen,
                "%s: the gang's size is unknown: set %s or the replicas of the workload's owner",
                TF_ANN_GANG_ENABLED, TF_ANN_GANG_MIN_MEMBERS);
        return TF_EINVAL;
    }
    *desired_out = known ? desired : min_members;
    *required = min_members >= 2 ? min_members : *desired_out;
    return 0;
}
