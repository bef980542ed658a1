/* SPDX-License-Identifier: Apache-2.0
 *
 * The API client's configuration (see client.h): defaults, in-cluster service account,
 * kubeconfig contexts.
 */
#include "controller/k8s/client.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/base64.h"
#include "controller/k8s/client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration ------------------------------------------------------------------------ */

void tf_k8s_config_init(struct tf_k8s_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_attempts = 6;
    cfg->backoff_base_ms = 200;
    cfg->backoff_max_ms = 10000;
    cfg->timeout_ms = 30000;
}

void tf_k8s_config_free(struct tf_k8s_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free(cfg->key_pem);
    free(cfg->namespace);
    int a = cfg->max_attempts, b = cfg->backoff_base_ms, m = cfg->backoff_max_ms,
        t = cfg->timeout_ms;
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_attempts = a;
    cfg->backoff_base_ms = b;
    cfg->backoff_max_ms = m;
    cfg->timeout_ms = t;
}

char *tf__k8s_read_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max, f) : 0;
    int bad = buf && (ferror(f) || (n == max && fgetc(f) != EOF));
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

void tf__k8s_trim_end(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

int tf_k8s_config_in_cluster(struct tf_k8s_config *cfg, const char *root, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!root)
        root = "/var/run/secrets/kubernetes.io/serviceaccount";
    if (!host || !*host || !port || !*port) {
        tf_errf(err, errlen, "not running in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
        return TF_ENOENT;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/token", root);
    char *tok = tf__k8s_read_file(path, 64 << 10);
    if (!tok) {
        tf_errf(err, errlen, "cannot read service-account token %s: %s", path, strerror(errno));
        return TF_ENOENT;
    }
    tf__k8s_trim_end(tok);
    cfg->token = tok;
    cfg->token_file = strdup(path);
    snprintf(path, sizeof(path), "%s/ca.crt", root);
    cfg->ca_pem = tf__k8s_read_file(path, 1 << 20);
    snprintf(path, sizeof(path), "%s/namespace", root);
    cfg->namespace = tf__k8s_read_file(path, 256);
    if (cfg->namespace)
        tf__k8s_trim_end(cfg->namespace);
    size_t n = strlen(host) + strlen(port) + 16;
    cfg->server = malloc(n);
    if (!cfg->server || !cfg->token_file)
        return TF_ENOMEM;
    /* IPv6 service hosts need brackets. */
    snprintf(cfg->server, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    return 0;
}

/* Finds the entry named NAME in the kubeconfig list KEY ("clusters", "users", "contexts")
 * and returns its KEY-singular member. */
static json_object *kc_named(json_object *kc, const char *list, const char *member,
                             const char *name)
{
    json_object *arr = tf_json_path(kc, list, NULL);
    if (!arr || !json_object_is_type(arr, json_type_array) || !name)
        return NULL;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *n = tf_json_str(e, "name", NULL);
        if (n && strcmp(n, name) == 0)
            return tf_json_path(e, member, NULL);
    }
    return NULL;
}

/* Value of KEY-data (base64) or of file KEY (relative to DIR) as a new string. */
static int kc_blob(json_object *obj, const char *key, const char *dir, char **out, char *err,
                   size_t errlen)
{
    char dkey[64];
    snprintf(dkey, sizeof(dkey), "%s-data", key);
    const char *data = tf_json_str(obj, dkey, NULL);
    const char *file = tf_json_str(obj, key, NULL);
    if (data) {
        *out = tf_base64_decode(data, NULL);
        if (!*out) {
            tf_errf(err, errlen, "kubeconfig %s: not valid base64", dkey);
            return TF_EPARSE;
        }
    } else if (file) {
        char path[4096];
        snprintf(path, sizeof(path), "%s%s%s", file[0] == '/' ? "" : dir, file[0] == '/' ? "" : "/",
                 file);
        *out = tf__k8s_read_file(path, 1 << 20);
        if (!*out) {
            tf_errf(err, errlen, "kubeconfig %s: cannot read %s", key, path);
            return TF_ENOENT;
        }
    }
    return 0;
}

int tf_k8s_config_kubeconfig(struct tf_k8s_config *cfg, const char *path, const char *context,
                             char *err, size_t errlen)
{
    char *text = tf__k8s_read_file(path, 4 << 20);
    if (!text) {
        tf_errf(err, errlen, "cannot read kubeconfig %s", path);
        return TF_ENOENT;
    }
    char dir[4096];
    tf_strlcpy(dir, path, sizeof(dir));
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    int rc =
        tf__k8s_config_kubeconfig_text(cfg, text, strlen(text), path, dir, context, err, errlen);
    free(text);
    return rc;
}

int tf__k8s_config_kubeconfig_text(struct tf_k8s_config *cfg, const char *text, size_t len,
                                   const char *path, const char *dir, const char *context,
                                   char *err, size_t errlen)
{
    json_object *docs = NULL;
    char perr[200];
    int rc = tf_yaml_to_json(text, len, &docs, perr, sizeof(perr));
    if (rc) {
        tf_errf(err, errlen, "kubeconfig %s: %s", path, perr);
        return rc;
    }
    json_object *kc = json_object_array_get_idx(docs, 0);
    const char *ctxname = context ? context : tf_json_str(kc, "current-context", NULL);
    json_object *ctx = kc_named(kc, "contexts", "context", ctxname);
    rc = TF_EINVAL;
    if (!ctx) {
        tf_errf(err, errlen, "kubeconfig %s: context \"%s\" not found", path,
                ctxname ? ctxname : "");
        goto out;
    }
    json_object *cl = kc_named(kc, "clusters", "cluster", tf_json_str(ctx, "cluster", NULL));
    json_object *user = kc_named(kc, "users", "user", tf_json_str(ctx, "user", NULL));
    const char *server = tf_json_str(cl, "server", NULL);
    if (!server) {
        tf_errf(err, errlen, "kubeconfig %s: cluster of context \"%s\" has no server", path,
                ctxname);
        goto out;
    }
    cfg->server = strdup(server);
    const char *ns = tf_json_str(ctx, "namespace", NULL);
    cfg->namespace = strdup(ns ? ns : "default");
    /* A boolean, as client-go reads it: a quoted "false" is a string, which json-c would read
     * as true, turning verification off. */
    json_object *ins = NULL;
    json_object_object_get_ex(cl, "insecure-skip-tls-verify", &ins);
    if (ins && !json_object_is_type(ins, json_type_boolean) &&
        !json_object_is_type(ins, json_type_null)) {
        tf_errf(err, errlen,
                "kubeconfig %s: insecure-skip-tls-verify of cluster \"%s\": expected true or "
                "false, not %s",
                path, tf_json_str(ctx, "cluster", NULL) ? tf_json_str(ctx, "cluster", NULL) : "",
                json_object_to_json_string(ins));
        goto out;
    }
    cfg->insecure = ins && json_object_get_boolean(ins);
    if ((rc = kc_blob(cl, "certificate-authority", dir, &cfg->ca_pem, err, errlen)))
        goto out;
    if (user) {
        if ((rc = kc_blob(user, "client-certificate", dir, &cfg->cert_pem, err, errlen)) ||
            (rc = kc_blob(user, "client-key", dir, &cfg->key_pem, err, errlen)))
            goto out;
        const char *tok = tf_json_str(user, "token", NULL);
        const char *tokfile = tf_json_str(user, "tokenFile", NULL);
        if (tok)
            cfg->token = strdup(tok);
        if (tokfile) { /* the file wins over token, as in client-go */
            free(cfg->token);
            cfg->token_file = strdup(tokfile);
            cfg->token = tf__k8s_read_file(tokfile, 64 << 10);
            if (!cfg->token) {
                tf_errf(err, errlen, "kubeconfig tokenFile %s: cannot read", tokfile);
                rc = TF_ENOENT;
                goto out;
            }
            tf__k8s_trim_end(cfg->token);
        }
    }
    rc = cfg->server && cfg->namespace ? 0 : TF_ENOMEM;
out:
    json_object_put(docs);
    return rc;
}
