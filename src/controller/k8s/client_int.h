/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to libtfk8s: what client.c, config.c and watch.c share (and the fuzz target of the
 * watch decoder).
 */
#ifndef TF_CONTROLLER_K8S_CLIENT_INT_H
#define TF_CONTROLLER_K8S_CLIENT_INT_H

#include "controller/k8s/client.h"

#include <json-c/json.h>
#include <stdatomic.h>
#include <stddef.h>

/* A whole (small) file, at most MAX bytes, NUL-terminated and malloc'd; NULL when it cannot be
 * read or is larger. */
char *tf__k8s_read_file(const char *path, size_t max);

/* tf_k8s_config_kubeconfig on the kubeconfig's TEXT (LEN bytes) read from PATH (for messages);
 * files it names are relative to DIR (config.c; the fuzz target fuzz_kubeconfig). */
int tf__k8s_config_kubeconfig_text(struct tf_k8s_config *cfg, const char *text, size_t len,
                                   const char *path, const char *dir, const char *context,
                                   char *err, size_t errlen);

/* Cuts trailing newlines, carriage returns and spaces off S. */
void tf__k8s_trim_end(char *s);

/* The watch stream's decoder (watch.c). Set FN, ARG, STOP (may be NULL), LAST_RV/RVLEN (the
 * caller's buffer for the last resourceVersion seen, may be NULL) and ERR/ERRLEN; the rest
 * starts zeroed. */
#define LINE_MAX_WATCH (16u << 20) /* the largest event */
struct tf__k8s_watch {
    int (*fn)(enum tf_k8s_event_type, json_object *, void *);
    void *arg;
    atomic_bool *stop;
    char *line; /* the event being received (malloc'd; the caller frees it) */
    size_t n, cap;
    int rc; /* FN's nonzero result, TF_ESTATE (410 Gone), TF_EIO, TF_EPROTO or TF_ERANGE */
    char *last_rv;
    size_t rvlen;
    char *err;
    size_t errlen;
};
/* Feeds N bytes of the stream: every event completed by a newline goes to FN (unknown types
 * skipped, as client-go does). N, or 0 once W->rc is set (the stream must stop). */
size_t tf__k8s_watch_feed(struct tf__k8s_watch *w, const char *data, size_t n);
/* The stream ended: an event left without a newline is decoded. Returns W->rc. */
int tf__k8s_watch_end(struct tf__k8s_watch *w);

#endif
