/* SPDX-License-Identifier: Apache-2.0
 *
 * Token loading and constant-time comparison; see auth.h.
 */
#include "remote/auth.h"

#include "common/err.h"
#include "common/strutil.h"
#include "tf/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int token_trim(uint8_t *buf, size_t *len, const char *what, char *err, size_t errlen)
{
    size_t n = *len;
    while (n > 0 &&
           (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    if (n == 0) {
        tf_errf(err, errlen, "%s: token is empty", what);
        return TF_EINVAL;
    }
    *len = n;
    return 0;
}

int tf_auth_token_file(const char *path, uint8_t *buf, size_t cap, size_t *len, char *err,
                       size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tf_errf(err, errlen, "token file %s: %s", path, strerror(errno));
        return TF_EIO;
    }
    size_t n = 0;
    uint8_t tmp[TF_PROTO_MAX_TOKEN + 64];
    for (;;) {
        ssize_t r = read(fd, tmp + n, sizeof(tmp) - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            tf_errf(err, errlen, "token file %s: %s", path, strerror(errno));
            close(fd);
            return TF_EIO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == sizeof(tmp))
            break;
    }
    close(fd);
    int rc = token_trim(tmp, &n, path, err, errlen);
    if (rc)
        return rc;
    if (n > TF_PROTO_MAX_TOKEN || n > cap) {
        tf_errf(err, errlen, "token file %s: token longer than %u bytes", path, TF_PROTO_MAX_TOKEN);
        return TF_EINVAL;
    }
    memcpy(buf, tmp, n);
    *len = n;
    return 0;
}

int tf_auth_token_env(uint8_t *buf, size_t cap, size_t *len, char *err, size_t errlen)
{
    const char *t = getenv("TF_TOKEN");
    if (t && *t) {
        size_t n = strlen(t);
        if (n > TF_PROTO_MAX_TOKEN || n > cap) {
            tf_errf(err, errlen, "TF_TOKEN: token longer than %u bytes", TF_PROTO_MAX_TOKEN);
            return TF_EINVAL;
        }
        memcpy(buf, t, n);
        *len = n;
        return token_trim(buf, len, "TF_TOKEN", err, errlen);
    }
    const char *f = getenv("TF_TOKEN_FILE");
    if (f && *f)
        return tf_auth_token_file(f, buf, cap, len, err, errlen);
    tf_errf(err, errlen, "neither TF_TOKEN nor TF_TOKEN_FILE is set");
    return TF_ENOENT;
}

int tf_auth_token_equal(const uint8_t *want, size_t want_len, const uint8_t *got, size_t got_len)
{
    /* Walk the expected token in full whatever GOT holds; index GOT modulo its length so
     * the loop reads only valid bytes and its memory pattern does not depend on content. */
    volatile uint8_t diff = (uint8_t)(want_len != got_len);
    for (size_t i = 0; i < want_len; i++) {
        uint8_t g = got_len ? got[i % got_len] : 0;
        diff |= (uint8_t)(want[i] ^ g);
    }
    return want_len > 0 && diff == 0;
}
