/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client: the controller lookup of remote mode (one HTTP GET per attempt, the waiting
 * and backoff); see locate.h.
 */
#include "remote/client/locate.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "remote/lookup.h"
#include "remote/net.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 2000
#define ATTEMPT_MIN_MS 1000
#define ATTEMPT_MAX_MS 10000

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
}

/* One attempt: connect, send REQ, read the answer until the controller closes, all within
 * TIMEOUT_MS. 0 with *LEN bytes in BUF; TF_EPROTO for an answer over TF_LOOKUP_MAX_ANSWER
 * (not worth retrying); another negative code for the network failures that are. */
static int fetch(const struct tf_lookup_url *u, const char *req, size_t reqlen, char *buf,
                 size_t *len, int timeout_ms, char *err, size_t errlen)
{
    int64_t end = now_ms() + timeout_ms;
    struct tf_net_addr a = {.kind = TF_NET_TCP};
    snprintf(a.host, sizeof(a.host), "%s", u->host);
    snprintf(a.port, sizeof(a.port), "%s", u->port);
    int fd = tf_net_connect(&a, timeout_ms, err, errlen);
    if (fd < 0)
        return fd;
    int rc = 0;
    size_t n = 0;
    int64_t left = end - now_ms();
    if (left < 1)
        left = 1;
    tf_net_set_timeouts(fd, 0, (int)left);
    rc = tf_net_send_all(fd, req, reqlen);
    if (rc != 0) {
        tf_errf(err, errlen, "sending the request: %s",
                rc == TF_ETIMEDOUT ? "timed out" : "connection closed");
        goto out;
    }
    for (;;) {
        left = end - now_ms();
        if (left <= 0) {
            tf_errf(err, errlen, "no complete answer within %d ms", timeout_ms);
            rc = TF_ETIMEDOUT;
            goto out;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            tf_errf(err, errlen, "poll: %s", strerror(errno));
            rc = TF_EIO;
            goto out;
        }
        if (pr == 0)
            continue;
        /* One byte of room beyond the cap tells an oversized answer. */
        ssize_t r = recv(fd, buf + n, TF_LOOKUP_MAX_ANSWER + 1 - n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (r < 0) {
            tf_errf(err, errlen, "receiving the answer: %s", strerror(errno));
            rc = TF_EIO;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > TF_LOOKUP_MAX_ANSWER) {
            tf_errf(err, errlen, "answer longer than %d bytes", TF_LOOKUP_MAX_ANSWER);
            rc = TF_EPROTO;
            goto out;
        }
    }
    if (n == 0) {
        tf_errf(err, errlen, "the controller closed the connection without answering");
        rc = TF_EIO;
        goto out;
    }
    *len = n;
out:
    close(fd);
    return rc;
}

int tfc_locate(const char *url, const char *name, const char *ns, int wait_ms, char *addr,
               size_t addrlen, char *err, size_t errlen)
{
    struct tf_lookup_url u;
    char req[TF_LOOKUP_MAX_REQUEST], last[400] = "";
    char *buf = NULL;
    int rc = tf_lookup_url_parse(url, &u, err, errlen);
    if (rc != 0)
        return rc;
    int reqlen = tf_lookup_request(&u, name, ns, req, sizeof(req), err, errlen);
    if (reqlen < 0)
        return reqlen;
    buf = malloc(TF_LOOKUP_MAX_ANSWER + 1);
    if (!buf) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    int64_t start = now_ms(), deadline = start + (wait_ms > 0 ? wait_ms : 0);
    int64_t backoff = BACKOFF_FIRST_MS;
    int said_waiting = 0;
    for (;;) {
        int64_t left = deadline - now_ms();
        int attempt = (int)(left < ATTEMPT_MIN_MS   ? ATTEMPT_MIN_MS
                            : left > ATTEMPT_MAX_MS ? ATTEMPT_MAX_MS
                                                    : left);
        size_t len = 0;
        rc = fetch(&u, req, (size_t)reqlen, buf, &len, attempt, last, sizeof(last));
        if (rc == 0) {
            struct tf_lookup_reply r;
            rc = tf_lookup_reply_parse(buf, len, &r, last, sizeof(last));
            if (rc == 0)
                rc = tf_lookup_reply_verdict(&r, addr, addrlen, last, sizeof(last));
            if (rc == 0) {
                tf_log(TF_LOG_DEBUG, "client",
                       "controller %s: connection %s/%s is served by the tf-worker at %s", url, ns,
                       name, addr);
                goto out;
            }
            if (rc != TF_EBUSY) {
                tf_errf(err, errlen, "controller %s, connection %s/%s: %s", url, ns, name, last);
                goto out;
            }
        } else if (rc == TF_EPROTO) {
            tf_errf(err, errlen, "controller %s, connection %s/%s: %s", url, ns, name, last);
            goto out;
        }
        left = deadline - now_ms();
        if (left <= 0) {
            tf_errf(err, errlen,
                    "controller %s: no tf-worker for connection %s/%s after %lld ms "
                    "(TF_CONNECT_WAIT_MS=%d); last answer: %s",
                    url, ns, name, (long long)(now_ms() - start), wait_ms, last);
            rc = TF_ETIMEDOUT;
            goto out;
        }
        if (!said_waiting) {
            said_waiting = 1;
            tf_log(TF_LOG_INFO, "client",
                   "waiting up to %d ms for the controller %s to pair connection %s/%s with a "
                   "tf-worker (%s)",
                   wait_ms, url, ns, name, last);
        }
        sleep_ms(backoff < left ? backoff : left);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
out:
    free(buf);
    return rc;
}
