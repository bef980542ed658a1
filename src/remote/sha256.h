/* SPDX-License-Identifier: Apache-2.0
 *
 * SHA-256 (FIPS 180-4), which names module images on the wire: the client names an image by
 * its digest, and the worker files an uploaded image only under the digest it computed
 * itself. Nettle's (a GnuTLS dependency), linked statically so that libtf_client still needs
 * nothing but libc at run time.
 */
#ifndef TF_REMOTE_SHA256_H
#define TF_REMOTE_SHA256_H

#include <nettle/sha2.h>
#include <stddef.h>
#include <stdint.h>

#define TF_SHA256_LEN SHA256_DIGEST_SIZE

/* The digest of DATA[0..LEN) in one call. */
static inline void tf_sha256(const void *data, size_t len, uint8_t out[TF_SHA256_LEN])
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, len, (const uint8_t *)data);
    sha256_digest(&c, TF_SHA256_LEN, out);
}

#endif
