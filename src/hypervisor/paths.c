/* SPDX-License-Identifier: Apache-2.0
 *
 * Local-mode file locations (see paths.h).
 */
#include "hypervisor/paths.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
