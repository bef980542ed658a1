/* SPDX-License-Identifier: Apache-2.0
 *
 * Hand-driven protocol peer for tests; see rawconn.h.
 */
#include "rawconn.h"

#include "common/err.h"
#include "remote/net.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int raw_connect(const char *addr)
{
    struct tf_net_addr a;
    char err[256];
    if (tf_net_addr_parse(addr, &a, err, sizeof(err)) != 0)
        return -1;
    int fd = tf_net_connect(&a, 5000, err, sizeof(err));
    if (fd < 0)
        return -1;
    tf_net_set_timeouts(fd, 5000, 5000);
    return fd;
}

int raw_send(int fd, uint16_t op, uint64_t req, const void *fixed, size_t flen, const void *tail,
             size_t tlen)
{
    uint8_t h[TF_PROTO_HDR_SIZE];
    tf_proto_hdr_put(h, op, 0, (uint32_t)(flen + tlen), req);
    struct iovec iov[3] = {{h, sizeof(h)}, {(void *)fixed, flen}, {(void *)tail, tlen}};
    return tf_net_send_iov(fd, iov, 3) == 0 ? 0 : -1;
}

int raw_send_bytes(int fd, const void *p, size_t n)
{
    return tf_net_send_all(fd, p, n) == 0 ? 0 : -1;
}

int raw_recv(int fd, struct tf_msg_frame_hdr *h, uint8_t *payload, size_t cap)
{
    uint8_t b[TF_PROTO_HDR_SIZE];
    if (tf_net_recv_all(fd, b, sizeof(b)) != 0)
        return -1;
    tf_msg_frame_hdr_get(b, h);
    if (h->length > cap)
        return -1;
    if (h->length && tf_net_recv_all(fd, payload, h->length) != 0)
        return -1;
    return 0;
}

int raw_reply(int fd, uint64_t req, uint8_t *payload, size_t cap)
{
    struct tf_msg_frame_hdr h;
    for (;;) {
        if (raw_recv(fd, &h, payload, cap) != 0)
            return -1;
        if ((h.flags & TF_PROTO_F_REPLY) && h.req_id == req && h.length >= 4)
            return (int)tf__get_4(payload);
        if (h.opcode == TF_OP_CLOSE)
            return -1;
    }
}

int raw_hello(int fd, const char *token)
{
    uint8_t fixed[TF_PROTO_SIZE_hello_req];
    struct tf_msg_hello_req m = {.pid = (uint32_t)getpid()};
    tf_msg_hello_req_put(fixed, &m);
    if (raw_send(fd, TF_OP_HELLO, 1, fixed, sizeof(fixed), token, strlen(token)) != 0)
        return -1;
    static uint8_t buf[TF_PROTO_MAX_PAYLOAD];
    return raw_reply(fd, 1, buf, sizeof(buf));
}

int raw_wait_closed(int fd, uint32_t *reason)
{
    static uint8_t buf[TF_PROTO_MAX_PAYLOAD];
    if (reason)
        *reason = 0;
    for (;;) {
        struct tf_msg_frame_hdr h;
        uint8_t b[TF_PROTO_HDR_SIZE];
        ssize_t r = recv(fd, b, sizeof(b), MSG_WAITALL);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return 1;
        if (r != (ssize_t)sizeof(b))
            return 0; /* timeout or a torn header */
        tf_msg_frame_hdr_get(b, &h);
        if (h.length > sizeof(buf))
            return 0;
        if (h.length) {
            int rc = tf_net_recv_all(fd, buf, h.length);
            if (rc)
                return rc == TF_EIO;
        }
        if (h.opcode == TF_OP_CLOSE && reason && h.length >= 4)
            *reason = tf__get_4(buf);
    }
}

static uint64_t raw_req = 10;

int raw_call(int fd, uint16_t op, const void *fixed, size_t flen, const void *tail, size_t tlen,
             uint8_t *rep, size_t cap)
{
    uint64_t id = ++raw_req;
    if (raw_send(fd, op, id, fixed, flen, tail, tlen) != 0)
        return -1;
    return raw_reply(fd, id, rep, cap);
}

uint64_t raw_ctx(int fd)
{
    uint64_t id = TF_PROTO_HANDLE(TF_PROTO_H_CTX, 0x777); /* not an id the victims use */
    uint8_t p[TF_PROTO_SIZE_ctx_create_req], rep[64];
    struct tf_msg_ctx_create_req m = {.ctx = id};
    tf_msg_ctx_create_req_put(p, &m);
    return raw_call(fd, TF_OP_PRIMARY_RETAIN, p, sizeof(p), NULL, 0, rep, sizeof(rep)) == 0 ? id
                                                                                            : 0;
}
