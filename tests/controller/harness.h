/* SPDX-License-Identifier: Apache-2.0
 *
 * Test harness: starts tests/controller/fakeapi.py (the in-memory API server) on a free
 * loopback port and talks to its /_fake control endpoints. Not thread-safe; one per test.
 */
#ifndef TF_TESTS_CONTROLLER_HARNESS_H
#define TF_TESTS_CONTROLLER_HARNESS_H

#include "controller/k8s/client.h"

#include <stdbool.h>
#include <sys/types.h>

struct fake_api {
    pid_t pid;
    int port;
    char dir[256];   /* scratch directory, removed by fake_stop */
    char server[64]; /* "http://127.0.0.1:PORT" */
    struct tf_k8s_client *client;
};

/* Starts the fake API server and a client for it (fast backoff). Returns 0, or -1 with a
 * message on stderr (the caller then skips: python3 missing). EXTRA_ARGS may be NULL. */
int fake_start(struct fake_api *f, const char *extra_args);
/* Starts another fake server of tests/controller (SCRIPT_REL, e.g.
 * "tests/controller/fakegreptime.py", taking --port 0 --port-file F) without a client. */
int fake_start_script(struct fake_api *f, const char *script_rel, const char *extra_args);
void fake_stop(struct fake_api *f);
/* POSTs BODY (JSON text) to /_fake/WHAT. */
void fake_control(struct fake_api *f, const char *what, const char *body);
/* Count of recorded requests whose line contains NEEDLE. */
int fake_count_requests(struct fake_api *f, const char *needle);
/* Parses JSON text, aborting the test on error. Caller owns the result. */
json_object *jparse(const char *text);
/* Applies the JSON Patch OPS to DOC with python3-jsonpatch (an independent implementation)
 * and returns the result (caller owns), or NULL when python3/jsonpatch is missing or the
 * patch does not apply (the message is on stderr). */
json_object *py_apply_patch(json_object *doc, json_object *ops);
/* The AdmissionReview (JSON text, caller frees) kube-apiserver sends for creating POD in NS,
 * uid "uid-1". */
char *admission_review(json_object *pod, const char *ns, bool dry_run);
/* Path of a file in the source tree (TF_SRCDIR), in a static buffer. */
const char *src_path(const char *rel);

#endif
