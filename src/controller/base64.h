/* SPDX-License-Identifier: Apache-2.0
 *
 * Standard base64 (RFC 4648, with padding), as used by AdmissionReview patches, caBundle and
 * kubeconfig *-data fields. Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_BASE64_H
#define TF_CONTROLLER_BASE64_H

#include <stddef.h>

/* Encodes LEN bytes of SRC; returns a new NUL-terminated string (caller frees) or NULL. */
char *tf_base64_encode(const void *src, size_t len);
/* Decodes S (whitespace ignored, padding optional); returns a new NUL-terminated buffer
 * (caller frees; *OUTLEN gets the byte count) or NULL when S is not base64. */
char *tf_base64_decode(const char *s, size_t *outlen);

#endif
