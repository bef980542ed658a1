/* SPDX-License-Identifier: Apache-2.0
 *
 * Test helper for end-to-end remote-GPU tests: starts a real tf-worker (on the simulated GPU,
 * its own device-state files) on a private unix socket or loopback port, points this
 * process's libtf_client at it, runs scenarios in forked children (each child gets its own
 * client connection) and kills or stops the worker for fault tests.
 *
 * Environment (set by tests/remote/meson.build): TF_WORKER (tf-worker path) and
 * TF_SIM_LIBDIR (directory of the simulated libcuda.so.1).
 */
#ifndef TF_TESTS_REMOTE_E2E_H
#define TF_TESTS_REMOTE_E2E_H

#include <sys/types.h>

#define E2E_TOKEN "e2e-token-5f3c2a9d41"

struct e2e_worker {
    pid_t pid;
    char addr[160]; /* what it listens on */
    char dir[64];   /* private temp dir: token, ready file, socket, sim state */
};

/* Starts tf-worker with the extra arguments EXTRA (NULL-terminated, may be NULL), listening
 * on a unix socket (TCP: 0) or tcp://127.0.0.1:0. Exports TF_REMOTE and TF_TOKEN for the
 * children. Fails the test when it does not come up within 10 s. */
void e2e_start(struct e2e_worker *w, int tcp, const char *const *extra);
/* SIGTERM, wait, remove the temp dir. */
void e2e_stop(struct e2e_worker *w);
/* SIGKILL the worker (fault tests); e2e_stop afterwards still cleans up. */
void e2e_kill(struct e2e_worker *w);

/* The whole file at PATH, NUL-terminated (a PTX module), malloc'ed; NULL if unreadable. */
char *e2e_slurp(const char *path);

/* Runs FN(ARG) in a child process; returns its exit status (0 = passed), or -1 when it died
 * from a signal or exceeded TIMEOUT_S (then it is killed). */
int e2e_run(int (*fn)(void *arg), void *arg, int timeout_s);
/* Starts FN(ARG) in a child and returns its pid (for concurrent clients). */
pid_t e2e_spawn(int (*fn)(void *arg), void *arg);
/* Waits for a child from e2e_spawn: its exit status, or -1. */
int e2e_wait(pid_t pid, int timeout_s);

/* In children: fail with a message (exit status LINE so the parent can tell where). */
#define E2E_CHECK(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            e2e_fail(__FILE__, __LINE__, #cond);                                                   \
            return __LINE__ % 250 + 1;                                                             \
        }                                                                                          \
    } while (0)
#define E2E_CU(call) E2E_CHECK_CU((call), CUDA_SUCCESS, #call)
#define E2E_CHECK_CU(call, want, text)                                                             \
    do {                                                                                           \
        int got_ = (int)(call);                                                                    \
        if (got_ != (int)(want)) {                                                                 \
            e2e_fail_cu(__FILE__, __LINE__, text, got_, (int)(want));                              \
            return __LINE__ % 250 + 1;                                                             \
        }                                                                                          \
    } while (0)
void e2e_fail(const char *file, int line, const char *what);
void e2e_fail_cu(const char *file, int line, const char *what, int got, int want);

#endif
