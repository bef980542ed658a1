/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream sockets for the remote-GPU link: addresses ("tcp://host:port", "tcp://[::1]:port",
 * "unix:///path"), listening, connecting with a timeout, the socket options the protocol
 * relies on (TCP_NODELAY, keepalive, read/write timeouts) and complete sends/receives.
 * Private to src/remote. All functions are thread-safe (they only touch the fds passed in).
 * Errors are negative TF_E* codes; functions taking ERR/ERRLEN describe the failure there.
 */
#ifndef TF_REMOTE_NET_H
#define TF_REMOTE_NET_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

enum tf_net_kind { TF_NET_TCP = 1, TF_NET_UNIX = 2 };

struct tf_net_addr {
    enum tf_net_kind kind;
    char host[256]; /* TCP: name or address literal (brackets removed) */
    char port[8];   /* TCP: decimal port, "0" = any (listen only) */
    char path[108]; /* UNIX: socket path */
};

/* Parses S. Returns 0 or TF_EINVAL with a message naming S. */
int tf_net_addr_parse(const char *s, struct tf_net_addr *a, char *err, size_t errlen);

/* Creates a listening socket (SO_REUSEADDR for TCP; a stale unix socket file at the path is
 * replaced, any other file is an error). BOUND gets the actual address in tf_net_addr_parse
 * syntax (the real port when PORT was 0). Returns the fd or a negative TF_E* code. */
int tf_net_listen(const struct tf_net_addr *a, int backlog, char *bound, size_t boundlen, char *err,
                  size_t errlen);

/* Connects within TIMEOUT_MS (> 0). Returns a blocking fd or a negative TF_E* code. */
int tf_net_connect(const struct tf_net_addr *a, int timeout_ms, char *err, size_t errlen);

/* Options for an established connection: TCP_NODELAY and keepalive (TCP only), receive and
 * send timeouts in milliseconds (0 = none), socket buffer sizes (0 = system default). */
struct tf_net_opts {
    int rcv_timeout_ms;
    int snd_timeout_ms;
    int sndbuf;
    int rcvbuf;
};
int tf_net_tune(int fd, const struct tf_net_opts *o);
int tf_net_set_timeouts(int fd, int rcv_timeout_ms, int snd_timeout_ms);
/* 1 when FD is a TCP socket. */
int tf_net_is_tcp(int fd);

/* Sends every byte of IOV (modified in place). 0, TF_ETIMEDOUT (send timeout expired) or
 * TF_EIO (peer gone). Never raises SIGPIPE. */
int tf_net_send_iov(int fd, struct iovec *iov, int iovcnt);
int tf_net_send_all(int fd, const void *p, size_t n);
/* Receives up to N bytes (at least 1): >0 bytes, TF_EIO on EOF or error, TF_ETIMEDOUT when
 * the receive timeout expired, TF_EBUSY when DONTWAIT and nothing is available. */
ssize_t tf_net_recv(int fd, void *p, size_t n, int dontwait);
/* Receives exactly N bytes. 0, TF_EIO or TF_ETIMEDOUT. */
int tf_net_recv_all(int fd, void *p, size_t n);
/* tf_net_recv without DONTWAIT, polling the socket for up to SPIN_NS nanoseconds before it
 * sleeps in the kernel. Waking a thread that sleeps on another CPU can cost far more than
 * a short request/reply (tens of microseconds when the CPU is idle or virtual); a bounded
 * poll keeps the waiting CPU awake for answers that come quickly. SPIN_NS 0: plain recv. */
ssize_t tf_net_recv_spin(int fd, void *p, size_t n, int64_t spin_ns);
/* The default poll budget of the client (TF_REMOTE_SPIN_US) and the worker (--spin-us). */
#define TF_NET_SPIN_US 30
/* The poll budget in nanoseconds for SPIN_US microseconds: 0 when this process may run on
 * one CPU only (the poll would keep the peer it waits for from running). */
int64_t tf_net_spin_ns(int spin_us);

#endif
