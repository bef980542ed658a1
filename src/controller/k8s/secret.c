/* SPDX-License-Identifier: Apache-2.0
 *
 * Get-or-create of the controller's own Secrets (secret.h).
 */
#include "controller/k8s/secret.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/base64.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static json_object *new_secret(const char *ns, const char *name, const char *key, const char *b64)
{
    json_object *s = json_object_new_object(), *meta = json_object_new_object(),
                *data = json_object_new_object();
    json_object_object_add(s, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(s, "kind", json_object_new_string("Secret"));
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(s, "metadata", meta);
    json_object_object_add(s, "type", json_object_new_string("Opaque"));
    json_object_object_add(data, key, json_object_new_string(b64));
    json_object_object_add(s, "data", data);
    return s;
}

int tf_k8s_secret_ensure(struct tf_k8s_client *c, const char *ns, const char *name, const char *key,
                         size_t nbytes, bool hex, char **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        json_object *sec = NULL;
        int rc = tf_k8s_get(c, &tf_k8s_secrets, ns, name, &sec, err, errlen);
        if (rc == 0) {
            const char *b = tf_json_str(sec, "data", key, NULL);
            *out = b ? tf_base64_decode(b, len) : NULL;
            json_object_put(sec);
            if (!*out) {
                tf_errf(err, errlen, "secret %s/%s: data.%s is missing or not base64", ns, name,
                        key);
                return TF_EINVAL;
            }
            return 0;
        }
        if (rc != TF_ENOENT)
            return rc;
        unsigned char raw[64];
        if (nbytes > sizeof(raw) || getrandom(raw, nbytes, 0) != (ssize_t)nbytes) {
            tf_errf(err, errlen, "no random bytes for secret %s/%s", ns, name);
            return TF_EIO;
        }
        char text[2 * sizeof(raw) + 1];
        for (size_t i = 0; hex && i < nbytes; i++)
            snprintf(text + 2 * i, 3, "%02x", raw[i]);
        char *b64 = hex ? tf_base64_encode(text, 2 * nbytes) : tf_base64_encode(raw, nbytes);
        memset(raw, 0, sizeof(raw));
        memset(text, 0, sizeof(text));
        if (!b64)
            return TF_ENOMEM;
        json_object *s = new_secret(ns, name, key, b64);
        memset(b64, 0, strlen(b64));
        free(b64);
        rc = tf_k8s_create(c, &tf_k8s_secrets, ns, s, NULL, err, errlen);
        json_object_put(s);
        if (rc && rc != TF_EEXIST)
            return rc;
        if (rc == 0)
            tf_log(TF_LOG_INFO, "controller", "generated secret=%s/%s", ns, name);
        /* read back what is stored (ours, or the replica's that won) */
    }
    tf_errf(err, errlen, "secret %s/%s: created but not readable", ns, name);
    return TF_EIO;
}
