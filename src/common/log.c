/* SPDX-License-Identifier: Apache-2.0
 *
 * tf_log: single-write(2) log records with a timestamp, level, pid, tid and subsystem.
 */
#include "common/log.h"

#include "common/err.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = -1; /* -1: not read from the environment yet */
static atomic_int log_fd = 2;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

int tf_log_parse_level(const char *s, enum tf_log_level *out)
{
    static const char *const lower[] = {"error", "warn", "info", "debug", "trace"};
    if (!s)
        return TF_EINVAL;
    for (int i = 0; i < 5; i++) {
        if (strcmp(s, lower[i]) == 0) {
            *out = (enum tf_log_level)i;
            return 0;
        }
    }
    return TF_EINVAL;
}

static int current_level(void)
{
    int lvl = atomic_load_explicit(&log_level, memory_order_relaxed);
    if (lvl >= 0)
        return lvl;
    enum tf_log_level parsed = TF_LOG_INFO;
    const char *env = getenv("TF_LOG_LEVEL");
    if (env)
        (void)tf_log_parse_level(env, &parsed);
    int expected = -1;
    atomic_compare_exchange_strong(&log_level, &expected, (int)parsed);
    return atomic_load(&log_level);
}

int tf_log_enabled(enum tf_log_level level)
{
    return (int)level <= current_level();
}

void tf_log_set_level(enum tf_log_level level)
{
    atomic_store(&log_level, (int)level);
}

void tf_log_set_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

void tf_vlog(enum tf_log_level level, const char *subsys, const char *fmt, va_list ap)
{
    if (!tf_log_enabled(level))
        return;
    char buf[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %d %ld %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000L, level_names[level], (int)getpid(),
                     (long)syscall(SYS_gettid), subsys ? subsys : "-");
    if (n < 0)
        return;
    if ((size_t)n < sizeof(buf)) {
        int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
        if (m > 0)
            n += m;
    }
    if ((size_t)n >= sizeof(buf) - 1)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(atomic_load(&log_fd), buf, (size_t)n);
    (void)w;
}

void tf_log(enum tf_log_level level, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tf_vlog(level, subsys, fmt, ap);
    va_end(ap);
}
