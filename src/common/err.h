/* SPDX-License-Identifier: Apache-2.0
 *
 * Error codes shared by every TensorFusion module. Functions return int: 0 on success, a
 * negative TF_E* code on failure. Codes, names and messages come from the one X-macro list
 * below, so they can never drift apart. All functions here are thread-safe.
 */
#ifndef TF_COMMON_ERR_H
#define TF_COMMON_ERR_H

#define TF_ERRNO_MAP(XX)                                                                           \
    XX(INVAL, 1, "invalid argument")                                                               \
    XX(NOMEM, 2, "out of memory")                                                                  \
    XX(RANGE, 3, "value out of range")                                                             \
    XX(PARSE, 4, "parse error")                                                                    \
    XX(NOENT, 5, "not found")                                                                      \
    XX(EXIST, 6, "already exists")                                                                 \
    XX(IO, 7, "I/O error")                                                                         \
    XX(NOSPC, 8, "insufficient resources")                                                         \
    XX(PERM, 9, "permission denied")                                                               \
    XX(PROTO, 10, "protocol error")                                                                \
    XX(BUSY, 11, "resource busy")                                                                  \
    XX(TIMEDOUT, 12, "timed out")                                                                  \
    XX(NOTSUP, 13, "not supported")                                                                \
    XX(CONFLICT, 14, "conflict")                                                                   \
    XX(STATE, 15, "invalid state")

enum {
#define TF_ERR_ENUM(name, num, msg) TF_E##name = -(num),
    TF_ERRNO_MAP(TF_ERR_ENUM)
#undef TF_ERR_ENUM
};

/* Human-readable message for a TF_E* code ("unknown error" for anything else). */
const char *tf_strerror(int err);
/* Symbolic name ("TF_EINVAL") for a TF_E* code ("TF_EUNKNOWN" for anything else). */
const char *tf_err_name(int err);

#endif
