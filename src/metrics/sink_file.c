/* SPDX-License-Identifier: Apache-2.0
 *
 * File sink: line protocol appended to a file, rotated by size like logrotate's numbered
 * scheme (PATH -> PATH.1 -> ... -> PATH.keep, the oldest removed). A batch never straddles two
 * files.
 */
#include "metrics/sink.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_sink {
    struct tf_metrics_sink base;
    char *path;
    int fd;
    int64_t size;
    int64_t max_bytes;
    int keep;
    struct tf_dynbuf buf;
};

static int open_file(struct file_sink *f, char *err, size_t errlen)
{
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        tf_errf(err, errlen, "metrics file %s: %s", f->path, strerror(errno));
        return TF_EIO;
    }
    struct stat st;
    f->size = fstat(f->fd, &st) == 0 ? (int64_t)st.st_size : 0;
    return 0;
}

static int rotate(struct file_sink *f, char *err, size_t errlen)
{
    char from[PATH_MAX], to[PATH_MAX];
    close(f->fd);
    f->fd = -1;
    for (int i = f->keep; i >= 1; i--) {
        if (i == 1)
            snprintf(from, sizeof(from), "%s", f->path);
        else
            snprintf(from, sizeof(from), "%s.%d", f->path, i - 1);
        snprintf(to, sizeof(to), "%s.%d", f->path, i);
        if (rename(from, to) != 0 && errno != ENOENT) {
            tf_errf(err, errlen, "metrics file: rotating %s: %s", from, strerror(errno));
            break;
        }
    }
    return open_file(f, err, errlen);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return TF_EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int file_write(struct tf_metrics_sink *s, const struct tf_lp_point *pts, size_t n, char *err,
                      size_t errlen)
{
    struct file_sink *f = (struct file_sink *)s;
    int first_bad = 0;
    char perr[256];
    tf_dynbuf_reset(&f->buf);
    for (size_t i = 0; i < n; i++) {
        int rc = tf_lp_encode(&pts[i], &f->buf, perr, sizeof(perr));
        if (rc) {
            s->points_dropped++;
            if (!first_bad) {
                first_bad = rc;
                tf_errf(err, errlen, "point %zu: %s", i, perr);
            }
        }
    }
    if (f->buf.len == 0)
        return first_bad;
    if (f->fd < 0 || (f->size > 0 && f->size + (int64_t)f->buf.len > f->max_bytes)) {
        int rc = f->fd < 0 ? open_file(f, err, errlen) : rotate(f, err, errlen);
        if (rc) {
            s->points_dropped += n;
            return rc;
        }
    }
    if (write_all(f->fd, f->buf.data, f->buf.len)) {
        tf_errf(err, errlen, "metrics file %s: write: %s", f->path, strerror(errno));
        s->points_dropped += n;
        close(f->fd);
        f->fd = -1; /* reopened by the next write */
        return TF_EIO;
    }
    f->size += (int64_t)f->buf.len;
    s->points_written += n;
    return first_bad;
}

static void file_destroy(struct tf_metrics_sink *s)
{
    struct file_sink *f = (struct file_sink *)s;
    if (f->fd >= 0)
        close(f->fd);
    tf_dynbuf_free(&f->buf);
    free(f->path);
    free(f);
}

static const struct tf_metrics_sink_ops file_ops = {"file", file_write, NULL, file_destroy, NULL};

int tf_metrics_file_sink_new(const char *path, const struct tf_metrics_file_opts *opts,
                             struct tf_metrics_sink **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || !*path) {
        tf_errf(err, errlen, "metrics file sink: empty path");
        return TF_EINVAL;
    }
    struct file_sink *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return TF_ENOMEM;
    }
    f->base.ops = &file_ops;
    f->max_bytes = opts && opts->max_bytes > 0 ? opts->max_bytes : 100 * 1024 * 1024;
    f->keep = opts && opts->keep > 0 ? opts->keep : 10;
    tf_dynbuf_init(&f->buf, 64 * 1024 * 1024);
    int rc = open_file(f, err, errlen);
    if (rc) {
        file_destroy(&f->base);
        return rc;
    }
    *out = &f->base;
    return 0;
}
