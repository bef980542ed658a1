/* SPDX-License-Identifier: Apache-2.0
 *
 * Webhook / extender certificates with GnuTLS: a self-generated CA and a serving certificate
 * whose subjectAltNames are the Service names kube-apiserver dials (<svc>, <svc>.<ns>,
 * <svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local) plus any extra DNS names or IP addresses
 * (127.0.0.1 for tests). Keys are ECDSA P-256 (fast handshakes). Mounted certificates
 * (cert-manager) are read with tf_tls_load_files, which also reports the files' mtimes so the
 * caller can reload on rotation.
 *
 * All strings returned are PEM, NUL-terminated, owned by the caller (free). Thread-safe.
 */
#ifndef TF_CONTROLLER_TLS_H
#define TF_CONTROLLER_TLS_H

#include <stddef.h>
#include <time.h>

struct tf_tls_bundle {
    char *ca_pem;   /* the CA certificate: goes into the webhook's caBundle */
    char *cert_pem; /* serving certificate (leaf) */
    char *key_pem;  /* serving key */
};

/* Generates a CA and a serving certificate valid for DAYS days, with SANs for SERVICE in
 * NAMESPACE (either may be NULL to skip them) and each of the N_EXTRA names in EXTRA (an IPv4
 * or IPv6 literal becomes an IP SAN, anything else a DNS SAN). */
int tf_tls_generate(const char *service, const char *ns, const char *const *extra, size_t n_extra,
                    int days, struct tf_tls_bundle *out, char *err, size_t errlen);
/* Reads CERT_PATH, KEY_PATH and (optional, may be NULL) CA_PATH; checks that the key matches
 * the certificate. *MTIME (if non-NULL) gets the newest modification time of the files. */
int tf_tls_load_files(const char *cert_path, const char *key_path, const char *ca_path,
                      struct tf_tls_bundle *out, time_t *mtime, char *err, size_t errlen);
/* Newest mtime of the files (0 when unreadable). */
time_t tf_tls_files_mtime(const char *cert_path, const char *key_path);
void tf_tls_bundle_free(struct tf_tls_bundle *b);

#endif
