/* SPDX-License-Identifier: Apache-2.0
 *
 * Loading a zone from the zoneinfo directory (see tzload.h).
 */
#include "core/tzload.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const builtin_utc[] = {"UTC",       "Etc/UTC",       "Etc/UCT", "UCT",
                                          "Zulu",      "Etc/Zulu",      "GMT",     "Etc/GMT",
                                          "Universal", "Etc/Universal", NULL};

static bool is_builtin_utc(const char *name)
{
    for (int i = 0; builtin_utc[i]; i++)
        if (!strcmp(name, builtin_utc[i]))
            return true;
    return false;
}

int tf_tz_load(const char *dir, const char *name, struct tf_tz **out, const char *key, char *err,
               size_t errlen)
{
    const char *k = key ? key : "timezone";
    *out = NULL;
    if (!tf_tz_name_valid(name, k, err, errlen))
        return TF_EINVAL;
    if (!dir)
        dir = TF_ZONEINFO_DIR;
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
        tf_errf(err, errlen, "%s: \"%s\": path too long", k, name);
        return TF_EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if ((e == ENOENT || e == ENOTDIR) && is_builtin_utc(name))
            return tf_tz_new_utc(name, out);
        if (e == ENOENT || e == ENOTDIR) {
            struct stat st;
            bool have = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
            tf_errf(err, errlen, "%s: \"%s\": unknown time zone%s", k, name,
                    have ? " (not in the IANA database; e.g. UTC, Asia/Shanghai)"
                         : " (no zoneinfo directory: install the tzdata package)");
            return TF_ENOENT;
        }
        tf_errf(err, errlen, "%s: \"%s\": cannot open %s: %s", k, name, path, strerror(e));
        return TF_EIO;
    }
    int rc = 0;
    uint8_t *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        tf_errf(err, errlen, "%s: \"%s\": %s is not a zone file", k, name, path);
        rc = TF_ENOENT;
        goto out;
    }
    if (st.st_size > TF_TZ_FILE_MAX) {
        tf_errf(err, errlen, "%s: \"%s\": %s is too large for a zone file", k, name, path);
        rc = TF_EPARSE;
        goto out;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    buf = malloc(cap);
    if (!buf) {
        rc = TF_ENOMEM;
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            tf_errf(err, errlen, "%s: \"%s\": reading %s: %s", k, name, path, strerror(errno));
            rc = TF_EIO;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap) {
            /* The file grew since fstat: zone files are small; refuse anything larger. */
            tf_errf(err, errlen, "%s: \"%s\": %s changed while being read", k, name, path);
            rc = TF_EIO;
            goto out;
        }
    }
    rc = tf_tz_parse_tzif(buf, len, name, out, err, errlen);
out:
    free(buf);
    close(fd);
    return rc;
}
