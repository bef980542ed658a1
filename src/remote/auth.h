/* SPDX-License-Identifier: Apache-2.0
 *
 * Shared-token authentication of remote-GPU connections: loading the token (worker: a file;
 * client: TF_TOKEN or TF_TOKEN_FILE) and comparing a presented token in constant time.
 * Private to src/remote. Thread-safe.
 *
 * The token travels in the HELLO frame in clear: it keeps unauthorised programs off a worker,
 * it does not protect the link against eavesdropping (run it on a trusted network).
 */
#ifndef TF_REMOTE_AUTH_H
#define TF_REMOTE_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* Reads the token from PATH into BUF (capacity CAP >= TF_PROTO_MAX_TOKEN): trailing
 * whitespace (the newline editors add) is dropped; an empty token, one longer than
 * TF_PROTO_MAX_TOKEN or an unreadable file is an error (TF_EINVAL / TF_EIO) described in ERR. */
int tf_auth_token_file(const char *path, uint8_t *buf, size_t cap, size_t *len, char *err,
                       size_t errlen);

/* The client's token: $TF_TOKEN if set, else the file named by $TF_TOKEN_FILE.
 * TF_ENOENT when neither is set. */
int tf_auth_token_env(uint8_t *buf, size_t cap, size_t *len, char *err, size_t errlen);

/* 1 when the presented token GOT equals the expected WANT. Time depends only on WANT_LEN and
 * GOT_LEN, never on the bytes. */
int tf_auth_token_equal(const uint8_t *want, size_t want_len, const uint8_t *got, size_t got_len);

#endif
