/* SPDX-License-Identifier: Apache-2.0
 *
 * Local-mode file locations (see paths.h).
 */
#include "hypervisor/paths.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int tf_hv_state_dir(char *buf, size_t len)
{
    const char *e = getenv("TF_STATE_DIR");
    int n;
    if (e && *e)
        n = snprintf(buf, len, "%s", e);
    else if (geteuid() == 0)
        n = snprintf(buf, len, "/var/lib/tensor-fusion");
    else if ((e = getenv("XDG_STATE_HOME")) && *e)
        n = snprintf(buf, len, "%s/tensor-fusion", e);
    else if ((e = getenv("HOME")) && *e)
        n = snprintf(buf, len, "%s/.local/state/tensor-fusion", e);
    else
        return TF_ENOENT;
    return n < 0 || (size_t)n >= len ? TF_ERANGE : 0;
}

int tf_hv_mkdirs(const char *dir, int mode, char *err, size_t errlen)
{
    char p[1024];
    if (!tf_strlcpy(p, dir, sizeof(p))) {
        tf_errf(err, errlen, "path too long: %s", dir);
        return TF_ERANGE;
    }
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
                tf_errf(err, errlen, "cannot create %s: %s", p, strerror(errno));
                return TF_EIO;
            }
            *s = c;
            if (!c)
                break;
        }
    }
    return 0;
}

int tf_hv_token_read(const char *path, char *tok, size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        tf_errf(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? TF_ENOENT : e == EACCES ? TF_EPERM : TF_EIO;
    }
    bool ok = fgets(tok, (int)len, f) != NULL;
    /* The whole first line must fit: no newline read and more bytes after it is too long. */
    bool whole = ok && (strchr(tok, '\n') || fgetc(f) == EOF);
    fclose(f);
    if (ok)
        tok[strcspn(tok, "\r\n")] = '\0';
    if (ok && !whole) {
        tf_errf(err, errlen, "%s: token longer than %zu characters", path, len - 1);
        tok[0] = '\0';
        return TF_EINVAL;
    }
    if (!ok || strlen(tok) < 16) {
        tf_errf(err, errlen, "%s: no token of at least 16 characters", path);
        tok[0] = '\0';
        return TF_EINVAL;
    }
    return 0;
}

int tf_hv_token_ensure(const char *path, char *tok, size_t len, char *err, size_t errlen)
{
    struct stat st;
    char rerr[256];
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        !(st.st_mode & 077) && tf_hv_token_read(path, tok, len, rerr, sizeof(rerr)) == 0)
        return 0;
    unsigned char raw[24];
    if (len < 2 * sizeof(raw) + 1 || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        tf_errf(err, errlen, "no random bytes for the API token");
        return TF_EIO;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(tok + 2 * i, 3, "%02x", raw[i]);
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && fchmod(fd, 0600) == 0 &&
              write(fd, tok, strlen(tok)) == (ssize_t)strlen(tok) && write(fd, "\n", 1) == 1;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        tf_errf(err, errlen, "%s: cannot write the API token: %s", path, strerror(errno));
        unlink(tmp);
        return TF_EIO;
    }
    return 0;
}
