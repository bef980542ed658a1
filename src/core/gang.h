/* SPDX-License-Identifier: Apache-2.0
 *
 * Gang scheduling (upstream TensorFusion's gang-* annotations, spec.gangScheduling): the pods of
 * one group are placed all together or not at all.
 *
 * tf_gang_quorum applies upstream's admission rules to a group's size. The planner (struct
 * tf_gang_book) is the extender's memory of groups whose members are waiting: it is pure data,
 * driven with explicit times, and answers what to do with the member being bound now. It holds
 * no locks: the caller serialises calls on one book.
 */
#ifndef TF_CORE_GANG_H
#define TF_CORE_GANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The number of members that must be placed together. MIN_MEMBERS is the spec's (0 = all,
 * else >= 2); DESIRED the workload's replicas when KNOWN. Upstream's rules: a gang of fewer
 * than 2 replicas, or a minimum above the replicas, is an error; with the replicas unknown the
 * minimum stands for both. Returns 0 with *DESIRED_OUT and *REQUIRED, or TF_EINVAL with a
 * message in ERR. */
int tf_gang_quorum(int32_t min_members, int32_t desired, bool known, int32_t *desired_out,
                   int32_t *required, char *err, size_t errlen);

#endif
