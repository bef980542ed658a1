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

/* How long a group is refused after its wait ran out or a member failed (upstream's
 * DefaultBackoffDuration). */
#define TF_GANG_BACKOFF_MS 10000
/* Longest member and group names ("namespace/name"). */
#define TF_GANG_NAME_MAX 320

/* What to do with a member whose GPUs were just reserved (tf_gang_hold). */
enum tf_gang_step {
    TF_GANG_WAIT,     /* keep the reservation, do not bind yet (the bind fails, to be retried) */
    TF_GANG_BIND_ALL, /* the quorum is complete: bind every waiting member (tf_gang_waiting),
                         this one included, then tf_gang_bound */
    TF_GANG_BIND,     /* the group reached its quorum before: this one (a restart) binds alone */
    TF_GANG_REFUSE,   /* the group is backed off: release the reservation, fail the bind */
};

struct tf_gang_book;

struct tf_gang_book *tf_gang_book_new(void);
void tf_gang_book_destroy(struct tf_gang_book *b);

/* MEMBER ("ns/name") of group KEY (REQUIRED members, waiting at most TIMEOUT_MS, 0 = forever)
 * holds GPUs on NODE since NOW_MS. A member already waiting updates its node. *WAITING is the
 * number now waiting (this one included). Returns 0 or TF_ENOMEM / TF_EINVAL (names too long,
 * REQUIRED < 2). */
int tf_gang_hold(struct tf_gang_book *b, const char *key, int32_t required, int64_t timeout_ms,
                 const char *member, const char *node, int64_t now_ms, enum tf_gang_step *step,
                 int *waiting);

/* Up to CAP members of KEY waiting to be bound, in arrival order: pointers into the book,
 * valid until its next change. Returns how many there are. */
size_t tf_gang_waiting(const struct tf_gang_book *b, const char *key, const char **members,
                       const char **nodes, size_t cap);

/* Every waiting member of KEY was bound: the group has reached its quorum (later members bind
 * at once). */
void tf_gang_bound(struct tf_gang_book *b, const char *key);

/* Binding the group failed: its waiting members stop waiting (the caller releases them; they
 * are listed in RELEASED, up to CAP, count returned) and the group is refused until
 * NOW_MS + TF_GANG_BACKOFF_MS. */
size_t tf_gang_fail(struct tf_gang_book *b, const char *key, int64_t now_ms,
                    char (*released)[TF_GANG_NAME_MAX], size_t cap);

/* Groups whose oldest waiting member has waited their timeout by NOW_MS: as tf_gang_fail for
 * each (their members listed in RELEASED, up to CAP; count returned). */
size_t tf_gang_expire(struct tf_gang_book *b, int64_t now_ms, char (*released)[TF_GANG_NAME_MAX],
                      size_t cap);

/* MEMBER is gone (deleted, finished): it no longer waits. */
void tf_gang_forget(struct tf_gang_book *b, const char *member);

#endif
