/* SPDX-License-Identifier: Apache-2.0
 *
 * One logging call for the whole project. Each record is formatted into a stack buffer and
 * emitted with a single write(2) on stderr (or the fd set by tf_log_set_fd), as
 *   2026-12-02T17:56:29.123Z INFO 1234 1235 subsys message key=value
 * The threshold comes from TF_LOG_LEVEL (error|warn|info|debug|trace; default info) read once.
 * No stdio, no locks, no allocation: safe inside interposer hooks and signal-free paths.
 * Thread-safe.
 */
#ifndef TF_COMMON_LOG_H
#define TF_COMMON_LOG_H

#include <stdarg.h>

enum tf_log_level {
    TF_LOG_ERROR = 0,
    TF_LOG_WARN = 1,
    TF_LOG_INFO = 2,
    TF_LOG_DEBUG = 3,
    TF_LOG_TRACE = 4,
};

/* True when records of LEVEL would be written; lets hot paths skip argument formatting. */
int tf_log_enabled(enum tf_log_level level);
/* Overrides the threshold (e.g. from a --log-level flag). */
void tf_log_set_level(enum tf_log_level level);
/* Parses "error".."trace"; returns 0 and sets *out, or TF_EINVAL. */
int tf_log_parse_level(const char *s, enum tf_log_level *out);
/* Redirects output to FD (default 2). The caller keeps ownership of FD. */
void tf_log_set_fd(int fd);

void tf_log(enum tf_log_level level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tf_vlog(enum tf_log_level level, const char *subsys, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
