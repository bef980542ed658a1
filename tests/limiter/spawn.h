/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: run lim_host (or any program) as a child with extra environment variables,
 * capturing stdout and stderr, with a timeout; or start it in the background and wait for
 * a line. Used by the limiter tests on the fake driver and on the simulated GPU.
 */
#ifndef TF_TEST_SPAWN_H
#define TF_TEST_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct child {
    pid_t pid;
    int out_fd, err_fd;
    char out[16384], err[16384];
    size_t out_len, err_len;
    int status;   /* waitpid status */
    double cpu_s; /* user + system CPU time of the child */
    double wall_s;
};

/* Starts ARGV[0] with the current environment plus ENV ("K=V" strings, NULL-terminated;
 * "K=" unsets K). */
void child_start(struct child *c, char *const argv[], const char *const env[]);
/* Reads until stdout contains NEEDLE or TIMEOUT_S passes; true if found. */
int child_wait_for(struct child *c, const char *needle, double timeout_s);
/* Collects everything until exit (killing it after TIMEOUT_S); returns the exit code, or
 * 128 + signal. */
int child_finish(struct child *c, double timeout_s);
/* child_start + child_finish. */
int child_run(struct child *c, char *const argv[], const char *const env[], double timeout_s);
/* The value of "KEY=value" in stdout as a string (static buffer) or NULL. */
const char *child_value(const struct child *c, const char *key);
/* The same as an unsigned number (-1 if absent). */
long long child_num(const struct child *c, const char *key);

#endif
