/* SPDX-License-Identifier: Apache-2.0
 *
 * File and argument helpers for the planning commands (see planio.h).
 */
#include "cli/planio.h"

#include "common/err.h"
#include "common/yamljson.h"
#include "core/timeutil.h"
#include "core/tzload.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int tf_planio_read(const char *cmd, const char *path, struct tf_dynbuf *b)
{
    tf_dynbuf_init(b, TF_PLAN_MAX_FILE);
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", cmd, path, strerror(errno));
        return TF_EIO;
    }
    char chunk[65536];
    size_t got;
    int rc = 0;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if ((rc = tf_dynbuf_add(b, chunk, got))) {
            fprintf(stderr, "%s: %s: %s\n", cmd, path,
                    rc == TF_ERANGE ? "file larger than 64 MiB" : "out of memory");
            break;
        }
    }
    if (!rc && ferror(f)) {
        fprintf(stderr, "%s: %s: read error\n", cmd, path);
        rc = TF_EIO;
    }
    if (f != stdin)
        fclose(f);
    return rc;
}

int tf_planio_manifest(const char *cmd, const char *path, json_object **docs)
{
    struct tf_dynbuf b;
    *docs = NULL;
    int rc = tf_planio_read(cmd, path, &b);
    if (!rc) {
        char err[512];
        rc = tf_manifest_parse(tf_dynbuf_str(&b), b.len, docs, err, sizeof(err));
        if (rc)
            fprintf(stderr, "%s: %s: %s\n", cmd, path, err);
    }
    tf_dynbuf_free(&b);
    return rc;
}

int64_t tf_planio_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tf_planio_time(const char *cmd, const char *opt, const char *s, int64_t *ms)
{
    if (!strcmp(s, "now")) {
        *ms = tf_planio_now();
        return 0;
    }
    char err[256];
    if (tf_rfc3339_parse(s, ms, opt, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return TF_EINVAL;
    }
    return 0;
}

int tf_planio_zone(const char *cmd, const char *dir, const char *name, const char *key,
                   struct tf_tz **out)
{
    char err[512];
    int rc = tf_tz_load(dir, name, out, key, err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s: %s\n", cmd, err);
    return rc;
}
