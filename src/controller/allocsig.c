/* SPDX-License-Identifier: Apache-2.0
 *
 * Allocation signatures (see allocsig.h): HMAC-SHA256 with GnuTLS over a canonical form of a
 * pod's placement.
 */
#include "controller/allocsig.h"

#include "common/err.h"
#include "common/yamljson.h"
#include "core/spec.h"

#include <gnutls/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIG_PREFIX "v1:"
#define MAX_KEYS 160 /* gpu-ids, container-gpus and one gpu-ids-<container> per container */

int tf_allocsig_init(struct tf_allocsig *s, const void *key, size_t len)
{
    memset(s, 0, sizeof(*s));
    if (!key || len < TF_ALLOCSIG_KEY_MIN || len > TF_ALLOCSIG_KEY_MAX)
        return TF_EINVAL;
    memcpy(s->key, key, len);
    s->keylen = len;
    return 0;
}

bool tf_allocsig_covers(const char *k)
{
    return strcmp(k, TF_KEY_PREFIX "gpu-ids") == 0 || strcmp(k, TF_ANN_CONTAINER_GPUS) == 0 ||
           strcmp(k, TF_ANN_PARTITION) == 0 ||
           strncmp(k, TF_ANN_CONTAINER_GPU_IDS_PREFIX,
                   sizeof(TF_ANN_CONTAINER_GPU_IDS_PREFIX) - 1) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int add(gnutls_hmac_hd_t h, const char *s)
{
    return gnutls_hmac(h, s, strlen(s) + 1); /* with its NUL: fields cannot run together */
}

/* The MAC of the canonical form into DIGEST[32]. */
static int mac(const struct tf_allocsig *s, const char *ns, const char *name, const char *uid,
               const char *node, json_object *anns, unsigned char digest[32])
{
    const char *keys[MAX_KEYS];
    size_t n = 0;
    if (anns && json_object_is_type(anns, json_type_object)) {
        json_object_object_foreach(anns, k, v)
        {
            if (!tf_allocsig_covers(k))
                continue;
            if (n == MAX_KEYS || !json_object_is_type(v, json_type_string))
                return TF_EINVAL;
            keys[n++] = k;
        }
    }
    qsort(keys, n, sizeof(keys[0]), cmp_str);
    gnutls_hmac_hd_t h;
    if (gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, s->key, s->keylen) < 0)
        return TF_ENOMEM;
    int grc = add(h, "tf-allocation-v1");
    const char *fixed[] = {ns, name, uid, node};
    for (size_t i = 0; i < 4 && grc >= 0; i++)
        grc = add(h, fixed[i]);
    for (size_t i = 0; i < n && grc >= 0; i++) {
        json_object *v = NULL;
        json_object_object_get_ex(anns, keys[i], &v);
        grc = add(h, keys[i]);
        if (grc >= 0)
            grc = add(h, json_object_get_string(v));
    }
    gnutls_hmac_deinit(h, digest);
    return grc < 0 ? TF_ENOMEM : 0;
}

int tf_allocsig_sign(const struct tf_allocsig *s, const char *ns, const char *name, const char *uid,
                     const char *node, json_object *anns, char out[TF_ALLOCSIG_LEN])
{
    out[0] = '\0';
    if (!s || !s->keylen || !ns || !name || !uid || !*uid || !node || !*node)
        return TF_EINVAL;
    unsigned char d[32];
    int rc = mac(s, ns, name, uid, node, anns, d);
    if (rc)
        return rc;
    memcpy(out, SIG_PREFIX, sizeof(SIG_PREFIX) - 1);
    for (size_t i = 0; i < sizeof(d); i++)
        snprintf(out + sizeof(SIG_PREFIX) - 1 + 2 * i, 3, "%02x", d[i]);
    return 0;
}

bool tf_allocsig_verify(const struct tf_allocsig *s, json_object *pod)
{
    if (!s)
        return true;
    const char *sig =
        tf_json_str(pod, "metadata", "annotations", TF_ANN_ALLOCATION_SIGNATURE, NULL);
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    const char *uid = tf_json_str(pod, "metadata", "uid", NULL);
    const char *node = tf_json_str(pod, "spec", "nodeName", NULL);
    char want[TF_ALLOCSIG_LEN];
    if (!sig || strlen(sig) != TF_ALLOCSIG_LEN - 1 ||
        tf_allocsig_sign(s, ns, name, uid, node, tf_json_path(pod, "metadata", "annotations", NULL),
                         want))
        return false;
    unsigned char diff = 0; /* constant time: no byte-by-byte oracle */
    for (size_t i = 0; i < TF_ALLOCSIG_LEN - 1; i++)
        diff |= (unsigned char)(sig[i] ^ want[i]);
    return diff == 0;
}
