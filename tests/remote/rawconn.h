/* SPDX-License-Identifier: Apache-2.0
 *
 * Test helper: a hand-driven protocol peer (no libtf_client) for tests that must send what a
 * well-behaved client never would: wrong tokens, malformed frames, other clients' handles.
 * Blocking sockets with a timeout; not thread-safe per connection.
 */
#ifndef TF_TESTS_REMOTE_RAWCONN_H
#define TF_TESTS_REMOTE_RAWCONN_H

#include "remote/codec.h"

#include <stddef.h>
#include <stdint.h>

/* Connects to ADDR (tcp://, unix://) with a 5 s receive timeout; fd or -1. */
int raw_connect(const char *addr);
/* Sends HELLO with TOKEN and reads the reply; returns its status (CUresult) or -1 when the
 * connection failed/closed first. */
int raw_hello(int fd, const char *token);
/* Sends one frame. 0 or -1. */
int raw_send(int fd, uint16_t op, uint64_t req, const void *fixed, size_t flen, const void *tail,
             size_t tlen);
/* Sends raw bytes. */
int raw_send_bytes(int fd, const void *p, size_t n);
/* Reads one frame into *H and PAYLOAD (capacity CAP). 0, or -1 on EOF/timeout/overflow. */
int raw_recv(int fd, struct tf_msg_frame_hdr *h, uint8_t *payload, size_t cap);
/* Reads frames until the reply to REQ arrives (skipping events); returns its status, or -1. */
int raw_reply(int fd, uint64_t req, uint8_t *payload, size_t cap);
/* Sends request OP and returns its reply's status (payload in REP), or -1. */
int raw_call(int fd, uint16_t op, const void *fixed, size_t flen, const void *tail, size_t tlen,
             uint8_t *rep, size_t cap);
/* Retains the primary context of device 0 under a fixed id; returns the id, 0 on failure. */
uint64_t raw_ctx(int fd);
/* 1 when the peer closes the connection within 5 s (CLOSE events are read and skipped);
 * *REASON gets the close reason when a CLOSE event came first (0 otherwise). */
int raw_wait_closed(int fd, uint32_t *reason);

#endif
