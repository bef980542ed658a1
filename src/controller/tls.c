/* SPDX-License-Identifier: Apache-2.0
 *
 * Certificate generation and loading with GnuTLS (see tls.h).
 */
#include "controller/tls.h"

#include "common/err.h"
#include "common/strutil.h"

#include <arpa/inet.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void tf_tls_bundle_free(struct tf_tls_bundle *b)
{
    if (!b)
        return;
    free(b->ca_pem);
    free(b->cert_pem);
    free(b->key_pem);
    b->ca_pem = b->cert_pem = b->key_pem = NULL;
}

static char *datum_str(gnutls_datum_t *d)
{
    char *s = malloc(d->size + 1);
    if (s) {
        memcpy(s, d->data, d->size);
        s[d->size] = '\0';
    }
    gnutls_free(d->data);
    d->data = NULL;
    return s;
}

static int set_serial(gnutls_x509_crt_t crt)
{
    unsigned char serial[16];
    if (gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial)))
        return -1;
    serial[0] &= 0x7f; /* positive */
    return gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
}

static int base_cert(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn, int days)
{
    time_t now = time(NULL);
    int rc = gnutls_x509_crt_set_version(crt, 3);
    if (!rc)
        rc = set_serial(crt);
    if (!rc)
        rc = gnutls_x509_crt_set_activation_time(crt, now - 3600); /* clock skew */
    if (!rc)
        rc = gnutls_x509_crt_set_expiration_time(crt, now + (time_t)days * 86400);
    if (!rc)
        rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                           (unsigned)strlen(cn));
    if (!rc)
        rc = gnutls_x509_crt_set_key(crt, key);
    unsigned char kid[64];
    size_t kidlen = sizeof(kid);
    if (!rc)
        rc = gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA1, kid, &kidlen);
    if (!rc)
        rc = gnutls_x509_crt_set_subject_key_id(crt, kid, kidlen);
    return rc;
}

static int add_san(gnutls_x509_crt_t crt, const char *name)
{
    unsigned char ip[16];
    if (inet_pton(AF_INET, name, ip) == 1)
        return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
                                                    GNUTLS_FSAN_APPEND);
    if (inet_pton(AF_INET6, name, ip) == 1)
        return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
                                                    GNUTLS_FSAN_APPEND);
    return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name,
                                                (unsigned)strlen(name), GNUTLS_FSAN_APPEND);
}

int tf_tls_generate(const char *service, const char *ns, const char *const *extra, size_t n_extra,
                    int days, struct tf_tls_bundle *out, char *err, size_t errlen)
{
    gnutls_x509_privkey_t ca_key = NULL, key = NULL;
    gnutls_x509_crt_t ca = NULL, crt = NULL;
    gnutls_datum_t d = {NULL, 0};
    int rc = 0;
    const char *step = "init";
    memset(out, 0, sizeof(*out));
    if (days <= 0)
        days = 3650;
#define TRY(what, expr)                                                                            \
    do {                                                                                           \
        step = what;                                                                               \
        if ((rc = (expr)) < 0)                                                                     \
            goto out;                                                                              \
    } while (0)
    TRY("key init", gnutls_x509_privkey_init(&ca_key));
    TRY("key init", gnutls_x509_privkey_init(&key));
    TRY("CA key",
        gnutls_x509_privkey_generate(ca_key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0));
    TRY("serving key",
        gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0));
    TRY("crt init", gnutls_x509_crt_init(&ca));
    TRY("crt init", gnutls_x509_crt_init(&crt));
    TRY("CA fields", base_cert(ca, ca_key, "tensor-fusion-ca", days));
    TRY("CA constraints", gnutls_x509_crt_set_basic_constraints(ca, 1, 0));
    TRY("CA usage",
        gnutls_x509_crt_set_key_usage(ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
                                              GNUTLS_KEY_DIGITAL_SIGNATURE));
    TRY("CA sign", gnutls_x509_crt_sign2(ca, ca, ca_key, GNUTLS_DIG_SHA256, 0));

    char cn[300];
    snprintf(cn, sizeof(cn), "%s%s%s%s", service ? service : "tensor-fusion",
             service && ns ? "." : "", service && ns ? ns : "", service && ns ? ".svc" : "");
    TRY("serving fields", base_cert(crt, key, cn, days));
    TRY("serving constraints", gnutls_x509_crt_set_basic_constraints(crt, 0, -1));
    TRY("serving usage", gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
                                                                GNUTLS_KEY_KEY_ENCIPHERMENT));
    TRY("serving purpose", gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0));
    if (service) {
        char name[300];
        TRY("SAN", add_san(crt, service));
        if (ns) {
            snprintf(name, sizeof(name), "%s.%s", service, ns);
            TRY("SAN", add_san(crt, name));
            snprintf(name, sizeof(name), "%s.%s.svc", service, ns);
            TRY("SAN", add_san(crt, name));
            snprintf(name, sizeof(name), "%s.%s.svc.cluster.local", service, ns);
            TRY("SAN", add_san(crt, name));
        }
    }
    for (size_t i = 0; i < n_extra; i++)
        TRY("SAN", add_san(crt, extra[i]));
    {
        unsigned char kid[64];
        size_t kidlen = sizeof(kid);
        TRY("authority key id", gnutls_x509_crt_get_subject_key_id(ca, kid, &kidlen, NULL));
        TRY("authority key id", gnutls_x509_crt_set_authority_key_id(crt, kid, kidlen));
    }
    TRY("serving sign", gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0));

    TRY("export", gnutls_x509_crt_export2(ca, GNUTLS_X509_FMT_PEM, &d));
    out->ca_pem = datum_str(&d);
    TRY("export", gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d));
    out->cert_pem = datum_str(&d);
    TRY("export", gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d));
    out->key_pem = datum_str(&d);
    if (!out->ca_pem || !out->cert_pem || !out->key_pem)
        rc = GNUTLS_E_MEMORY_ERROR;
#undef TRY
out:
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(ca_key);
    gnutls_x509_privkey_deinit(key);
    if (rc < 0) {
        tf_errf(err, errlen, "certificate generation failed at %s: %s", step, gnutls_strerror(rc));
        tf_tls_bundle_free(out);
        return TF_EIO;
    }
    return 0;
}

static char *slurp(const char *path, time_t *mtime)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) || st.st_size > (1 << 20)) {
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (mtime && st.st_mtime > *mtime)
        *mtime = st.st_mtime;
    return buf;
}

time_t tf_tls_files_mtime(const char *cert_path, const char *key_path)
{
    struct stat a, b;
    if (stat(cert_path, &a) || stat(key_path, &b))
        return 0;
    return a.st_mtime > b.st_mtime ? a.st_mtime : b.st_mtime;
}

int tf_tls_load_files(const char *cert_path, const char *key_path, const char *ca_path,
                      struct tf_tls_bundle *out, time_t *mtime, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    time_t mt = 0;
    out->cert_pem = slurp(cert_path, &mt);
    out->key_pem = slurp(key_path, &mt);
    if (ca_path)
        out->ca_pem = slurp(ca_path, &mt);
    if (!out->cert_pem || !out->key_pem || (ca_path && !out->ca_pem)) {
        tf_errf(err, errlen, "cannot read %s",
                !out->cert_pem  ? cert_path
                : !out->key_pem ? key_path
                                : ca_path);
        tf_tls_bundle_free(out);
        return TF_ENOENT;
    }
    /* The pair must load as one credential, i.e. the key matches the certificate. */
    gnutls_certificate_credentials_t cred;
    int rc = gnutls_certificate_allocate_credentials(&cred);
    if (rc == 0) {
        gnutls_datum_t c = {(unsigned char *)out->cert_pem, (unsigned)strlen(out->cert_pem)};
        gnutls_datum_t k = {(unsigned char *)out->key_pem, (unsigned)strlen(out->key_pem)};
        rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
        gnutls_certificate_free_credentials(cred);
    }
    if (rc < 0) {
        tf_errf(err, errlen, "%s / %s: %s", cert_path, key_path, gnutls_strerror(rc));
        tf_tls_bundle_free(out);
        return TF_EINVAL;
    }
    if (mtime)
        *mtime = mt;
    return 0;
}
