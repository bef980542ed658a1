/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to the hypervisor tests: a scratch state directory, the fake NVML device file, the
 * real tf-hypervisor binary started and killed as a user would, HTTP calls to its API, and
 * tfctl invocations with captured output. Binaries come from $TF_HYPERVISOR_BIN,
 * $TF_TFCTL_BIN and $TF_FAKE_NVML (set by tests/hypervisor/meson.build).
 */
#ifndef TF_TESTS_HVTEST_H
#define TF_TESTS_HVTEST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

struct hvt {
    char dir[256];     /* scratch root */
    char state[300];   /* state directory */
    char devfile[300]; /* fake NVML device list */
    pid_t pid;         /* running hypervisor or 0 */
    char base[96];     /* http://127.0.0.1:PORT */
    char auth[600];    /* extra request header ("Authorization: Bearer ..."), or "": the
                          state directory's api-token, as tfctl sends it */
    bool no_auth;      /* send no token at all (an outsider) */
};

/* Makes the scratch dirs and the device file with DEVLINES (fake_nvml.c format). Sets the
 * environment (TF_STATE_DIR, TF_NVML_LIBRARY, TF_FAKE_NVML_FILE) for children. */
void hvt_init(struct hvt *t, const char *devlines);
void hvt_set_devices(struct hvt *t, const char *devlines);
/* Starts tf-hypervisor with extra args (NULL-terminated) and waits for /healthz. */
void hvt_start(struct hvt *t, const char *const *extra);
/* SIGKILL (hard) or SIGTERM and reap. */
void hvt_kill(struct hvt *t, int sig);
/* Stops everything and removes the scratch directory. */
void hvt_cleanup(struct hvt *t);

/* HTTP METHOD PATH with raw BODY (may be NULL) and optional CONTENT_TYPE; returns the status
 * and the parsed answer in *OUT (NULL when not JSON; caller owns). */
int hvt_http(struct hvt *t, const char *method, const char *path, const char *body,
             const char *content_type, json_object **out);
/* GET PATH as text (malloc'ed). */
char *hvt_get_text(struct hvt *t, const char *path);

/* Runs tfctl with ARGV (NULL-terminated, without "tfctl"); captures stdout+stderr into OUT
 * (malloc'ed, may be NULL) and returns the exit status (128+sig when killed). */
int hvt_tfctl(struct hvt *t, char **out, const char *const *argv);
/* Starts tfctl in the background (stdout+stderr to LOG); returns its pid. */
pid_t hvt_tfctl_bg(struct hvt *t, const char *log, const char *const *argv);

/* Polls FN(ARG) every 20 ms for up to MS; true when it returned true. */
bool hvt_wait(bool (*fn)(struct hvt *, void *), struct hvt *t, void *arg, int ms);

/* Number of workloads the API lists. */
int hvt_count_workloads(struct hvt *t);

#endif
