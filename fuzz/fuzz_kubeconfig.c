/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: a kubeconfig as tf-controller and tf-hypervisor read it (--kubeconfig,
 * $KUBECONFIG; controller/k8s/config.c): YAML, contexts, clusters, users, *-data in base64,
 * tokens. Relative file names resolve against a directory that does not exist. Aborts when a
 * configuration is accepted without a server or namespace, or with TLS verification turned
 * off although the selected cluster does not say insecure-skip-tls-verify: true (a boolean).
 */
#include "common/yamljson.h"
#include "controller/k8s/client.h"
#include "controller/k8s/client_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The NAME entry of the kubeconfig list LIST, its MEMBER (an independent reading). */
static json_object *named(json_object *kc, const char *list, const char *member, const char *name)
{
    json_object *arr = tf_json_array(kc, list, NULL);
    for (size_t i = 0; arr && name && i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *n = tf_json_str(e, "name", NULL);
        if (n && !strcmp(n, name))
            return tf_json_path(e, member, NULL);
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    char err[256];
    int rc = tf__k8s_config_kubeconfig_text(&cfg, (const char *)data, size, "fuzz",
                                            "/nonexistent-tf-fuzz", NULL, err, sizeof(err));
    if (rc == 0) {
        if (!cfg.server || !cfg.namespace)
            abort();
        if (cfg.insecure) {
            json_object *docs = NULL;
            char perr[64];
            if (tf_yaml_to_json((const char *)data, size, &docs, perr, sizeof(perr)))
                abort();
            json_object *kc = json_object_array_get_idx(docs, 0);
            json_object *ctx =
                named(kc, "contexts", "context", tf_json_str(kc, "current-context", NULL));
            json_object *cl = named(kc, "clusters", "cluster", tf_json_str(ctx, "cluster", NULL));
            if (!tf_json_true(cl, "insecure-skip-tls-verify", NULL))
                abort();
            json_object_put(docs);
        }
    }
    tf_k8s_config_free(&cfg);
    return 0;
}
