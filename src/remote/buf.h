/* SPDX-License-Identifier: Apache-2.0
 *
 * Bounded dynamic byte buffer (in the spirit of curl's dynbuf) for all network input and
 * output of the remote-GPU code: it grows on demand but never beyond the MAX given at init,
 * so a peer can never make us allocate more than that. Private to src/remote.
 *
 * A tf_buf is owned by its embedder (_init/_free); DATA is owned by the buffer. Not
 * thread-safe: the embedder serialises access.
 */
#ifndef TF_REMOTE_BUF_H
#define TF_REMOTE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct tf_buf {
    uint8_t *data;
    size_t len; /* bytes in use */
    size_t cap; /* bytes allocated */
    size_t max; /* cap never exceeds this */
};

void tf_buf_init(struct tf_buf *b, size_t max);
void tf_buf_free(struct tf_buf *b);
/* Makes room for EXTRA more bytes. TF_ENOSPC when len + EXTRA > max, TF_ENOMEM on failure. */
int tf_buf_reserve(struct tf_buf *b, size_t extra);
/* Appends N uninitialised bytes and returns a pointer to them, or NULL (see reserve). */
uint8_t *tf_buf_grow(struct tf_buf *b, size_t n);
int tf_buf_append(struct tf_buf *b, const void *p, size_t n);
/* Forgets the contents, keeps the allocation. */
void tf_buf_reset(struct tf_buf *b);
/* Drops the first N (<= len) bytes. */
void tf_buf_consume(struct tf_buf *b, size_t n);

#endif
