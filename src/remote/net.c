/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream sockets for the remote-GPU link; see net.h.
 */
#include "remote/net.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int tf_net_addr_parse(const char *s, struct tf_net_addr *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    if (!s || !*s) {
        tf_errf(err, errlen, "empty address (want tcp://host:port or unix:///path)");
        return TF_EINVAL;
    }
    if (strncmp(s, "unix://", 7) == 0) {
        const char *path = s + 7;
        if (path[0] != '/') {
            tf_errf(err, errlen, "address \"%s\": unix socket path must be absolute", s);
            return TF_EINVAL;
        }
        if (!tf_strlcpy(a->path, path, sizeof(a->path))) {
            tf_errf(err, errlen, "address \"%s\": unix socket path longer than %zu bytes", s,
                    sizeof(a->path) - 1);
            return TF_EINVAL;
        }
        a->kind = TF_NET_UNIX;
        return 0;
    }
    if (strncmp(s, "tcp://", 6) != 0) {
        tf_errf(err, errlen, "address \"%s\": want tcp://host:port or unix:///path", s);
        return TF_EINVAL;
    }
    const char *h = s + 6, *colon;
    size_t hlen;
    if (*h == '[') {
        const char *close = strchr(h, ']');
        if (!close || close[1] != ':') {
            tf_errf(err, errlen, "address \"%s\": unterminated [IPv6] host or missing port", s);
            return TF_EINVAL;
        }
        h++;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(h, ':');
        if (!colon) {
            tf_errf(err, errlen, "address \"%s\": missing :port", s);
            return TF_EINVAL;
        }
        hlen = (size_t)(colon - h);
        if (memchr(h, ':', hlen)) {
            tf_errf(err, errlen, "address \"%s\": write IPv6 hosts as [addr]:port", s);
            return TF_EINVAL;
        }
    }
    if (hlen == 0 || hlen >= sizeof(a->host)) {
        tf_errf(err, errlen, "address \"%s\": empty or overlong host", s);
        return TF_EINVAL;
    }
    const char *port = colon + 1;
    char *end;
    errno = 0;
    long pn = strtol(port, &end, 10);
    if (!*port || *end || errno || pn < 0 || pn > 65535) {
        tf_errf(err, errlen, "address \"%s\": port \"%s\" is not 0..65535", s, port);
        return TF_EINVAL;
    }
    memcpy(a->host, h, hlen);
    a->host[hlen] = 0;
    snprintf(a->port, sizeof(a->port), "%ld", pn);
    a->kind = TF_NET_TCP;
    return 0;
}

static int unix_sockaddr(const struct tf_net_addr *a, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    if (!tf_strlcpy(sun->sun_path, a->path, sizeof(sun->sun_path)))
        return TF_EINVAL;
    return 0;
}

static int listen_unix(const struct tf_net_addr *a, int backlog, char *bound, size_t boundlen,
                       char *err, size_t errlen)
{
    struct sockaddr_un sun;
    if (unix_sockaddr(a, &sun)) {
        tf_errf(err, errlen, "unix socket path too long: %s", a->path);
        return TF_EINVAL;
    }
    struct stat st;
    if (lstat(a->path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            tf_errf(err, errlen, "%s exists and is not a socket", a->path);
            return TF_EEXIST;
        }
        unlink(a->path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        tf_errf(err, errlen, "socket: %s", strerror(errno));
        return TF_EIO;
    }
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || listen(fd, backlog) != 0) {
        tf_errf(err, errlen, "listen on unix://%s: %s", a->path, strerror(errno));
        close(fd);
        return TF_EIO;
    }
    snprintf(bound, boundlen, "unix://%s", a->path);
    return fd;
}

static int listen_tcp(const struct tf_net_addr *a, int backlog, char *bound, size_t boundlen,
                      char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    const char *host = strcmp(a->host, "*") == 0 ? NULL : a->host;
    int gai = getaddrinfo(host, a->port, &hints, &res);
    if (gai != 0) {
        tf_errf(err, errlen, "resolve %s: %s", a->host, gai_strerror(gai));
        return TF_ENOENT;
    }
    int fd = -1, last = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        last = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        tf_errf(err, errlen, "listen on tcp://%s:%s: %s", a->host, a->port, strerror(last));
        return TF_EIO;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char hbuf[NI_MAXHOST], pbuf[NI_MAXSERV];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        getnameinfo((struct sockaddr *)&ss, sl, hbuf, sizeof(hbuf), pbuf, sizeof(pbuf),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        if (ss.ss_family == AF_INET6)
            snprintf(bound, boundlen, "tcp://[%s]:%s", hbuf, pbuf);
        else
            snprintf(bound, boundlen, "tcp://%s:%s", hbuf, pbuf);
    } else {
        snprintf(bound, boundlen, "tcp://%s:%s", a->host, a->port);
    }
    return fd;
}

int tf_net_listen(const struct tf_net_addr *a, int backlog, char *bound, size_t boundlen, char *err,
                  size_t errlen)
{
    char dummy[8];
    if (!bound) {
        bound = dummy;
        boundlen = sizeof(dummy);
    }
    if (a->kind == TF_NET_UNIX)
        return listen_unix(a, backlog, bound, boundlen, err, errlen);
    return listen_tcp(a, backlog, bound, boundlen, err, errlen);
}

/* Non-blocking connect finished within the remaining time. */
static int connect_wait(int fd, const struct sockaddr *sa, socklen_t sl, int timeout_ms)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return errno;
    int rc = connect(fd, sa, sl);
    if (rc != 0 && errno != EINPROGRESS)
        return errno;
    if (rc != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n;
        do
            n = poll(&p, 1, timeout_ms);
        while (n < 0 && errno == EINTR);
        if (n == 0)
            return ETIMEDOUT;
        if (n < 0)
            return errno;
        int soerr = 0;
        socklen_t el = sizeof(soerr);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) != 0)
            return errno;
        if (soerr)
            return soerr;
    }
    if (fcntl(fd, F_SETFL, fl) < 0)
        return errno;
    return 0;
}

int tf_net_connect(const struct tf_net_addr *a, int timeout_ms, char *err, size_t errlen)
{
    if (a->kind == TF_NET_UNIX) {
        struct sockaddr_un sun;
        if (unix_sockaddr(a, &sun)) {
            tf_errf(err, errlen, "unix socket path too long: %s", a->path);
            return TF_EINVAL;
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            tf_errf(err, errlen, "socket: %s", strerror(errno));
            return TF_EIO;
        }
        int e = connect_wait(fd, (struct sockaddr *)&sun, sizeof(sun), timeout_ms);
        if (e) {
            tf_errf(err, errlen, "connect unix://%s: %s", a->path, strerror(e));
            close(fd);
            return e == ETIMEDOUT ? TF_ETIMEDOUT : TF_EIO;
        }
        return fd;
    }
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(a->host, a->port, &hints, &res);
    if (gai != 0) {
        tf_errf(err, errlen, "resolve %s: %s", a->host, gai_strerror(gai));
        return TF_ENOENT;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        e = connect_wait(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms);
        if (!e)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        tf_errf(err, errlen, "connect tcp://%s:%s: %s", a->host, a->port, strerror(e));
        return e == ETIMEDOUT ? TF_ETIMEDOUT : TF_EIO;
    }
    return fd;
}

int tf_net_is_tcp(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return 0;
    return ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
}

static void ms_to_tv(int ms, struct timeval *tv)
{
    tv->tv_sec = ms / 1000;
    tv->tv_usec = (ms % 1000) * 1000;
}

int tf_net_set_timeouts(int fd, int rcv_timeout_ms, int snd_timeout_ms)
{
    struct timeval tv;
    ms_to_tv(rcv_timeout_ms, &tv);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
        return TF_EIO;
    ms_to_tv(snd_timeout_ms, &tv);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
        return TF_EIO;
    return 0;
}

int tf_net_tune(int fd, const struct tf_net_opts *o)
{
    int one = 1;
    if (tf_net_is_tcp(fd)) {
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
            return TF_EIO;
        /* Dead peers (host gone, cable cut) are noticed within about 20 s. */
        int idle = 10, intvl = 3, cnt = 3;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
    if (o->sndbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o->sndbuf, sizeof(o->sndbuf));
    if (o->rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof(o->rcvbuf));
    return tf_net_set_timeouts(fd, o->rcv_timeout_ms, o->snd_timeout_ms);
}

int tf_net_send_iov(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return TF_ETIMEDOUT;
            return TF_EIO;
        }
        size_t left = (size_t)n;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int tf_net_send_all(int fd, const void *p, size_t n)
{
    struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
    return tf_net_send_iov(fd, &iov, 1);
}

ssize_t tf_net_recv(int fd, void *p, size_t n, int dontwait)
{
    for (;;) {
        ssize_t r = recv(fd, p, n, dontwait ? MSG_DONTWAIT : 0);
        if (r > 0)
            return r;
        if (r == 0)
            return TF_EIO;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return dontwait ? TF_EBUSY : TF_ETIMEDOUT;
        return TF_EIO;
    }
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

ssize_t tf_net_recv_spin(int fd, void *p, size_t n, int64_t spin_ns)
{
    if (spin_ns > 0) {
        int64_t end = mono_ns() + spin_ns;
        do {
            ssize_t r = tf_net_recv(fd, p, n, 1);
            if (r != TF_EBUSY)
                return r;
            /* The peer may be runnable on this very CPU: let it answer. */
            sched_yield();
        } while (mono_ns() < end);
    }
    return tf_net_recv(fd, p, n, 0);
}

int64_t tf_net_spin_ns(int spin_us)
{
    cpu_set_t set;
    if (spin_us <= 0 || sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) < 2)
        return 0;
    return (int64_t)spin_us * 1000;
}

int tf_net_recv_all(int fd, void *p, size_t n)
{
    uint8_t *q = p;
    while (n > 0) {
        ssize_t r = tf_net_recv(fd, q, n, 0);
        if (r < 0)
            return (int)r;
        q += r;
        n -= (size_t)r;
    }
    return 0;
}
