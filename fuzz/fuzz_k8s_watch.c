/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the Kubernetes watch stream as the API server (or anything between it and
 * the controller) sends it, through the decoder every informer uses (controller/k8s/watch.c).
 * The input is cut into pieces at arbitrary places (its first byte seeds the cuts), as TCP
 * and libcurl deliver it. Aborts when an event reaches the callback with another type than
 * ADDED/MODIFIED/DELETED/BOOKMARK or without an object, when the last resourceVersion is not
 * terminated inside its buffer, or when the decoder stops (other than at the callback's
 * word) without a message.
 */
#include "common/err.h"
#include "common/yamljson.h"
#include "controller/k8s/client_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(enum tf_k8s_event_type type, json_object *obj, void *arg)
{
    int *count = arg;
    if ((type != TF_K8S_ADDED && type != TF_K8S_MODIFIED && type != TF_K8S_DELETED &&
         type != TF_K8S_BOOKMARK) ||
        !json_object_is_type(obj, json_type_object))
        abort();
    /* The informer's reads of an event. */
    (void)tf_json_str(obj, "metadata", "namespace", NULL);
    (void)tf_json_str(obj, "metadata", "name", NULL);
    return ++*count > 1000 ? TF_EBUSY : 0; /* the caller stops the stream */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 20)
        return 0;
    unsigned seed = data[0];
    const char *in = (const char *)data + 1;
    size_t n = size - 1, off = 0;
    int count = 0;
    char rv[16], err[128] = "";
    memset(rv, 'x', sizeof(rv));
    rv[sizeof(rv) - 1] = '\0';
    struct tf__k8s_watch w = {.fn = on_event,
                              .arg = &count,
                              .last_rv = rv,
                              .rvlen = sizeof(rv),
                              .err = err,
                              .errlen = sizeof(err)};
    while (off < n) {
        seed = seed * 1103515245u + 12345u;
        size_t piece = 1 + (seed >> 16) % 97;
        if (piece > n - off)
            piece = n - off;
        size_t took = tf__k8s_watch_feed(&w, in + off, piece);
        if (took == 0) { /* stopped: by the callback, or with a message */
            if (!w.rc || (w.rc != TF_EBUSY && !err[0]))
                abort();
            break;
        }
        if (took != piece || w.rc)
            abort();
        off += piece;
    }
    if (off >= n && !w.rc && tf__k8s_watch_end(&w) && w.rc != TF_EBUSY && !err[0])
        abort();
    if (!memchr(rv, '\0', sizeof(rv)))
        abort();
    free(w.line);
    return 0;
}
