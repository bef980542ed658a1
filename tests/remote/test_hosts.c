/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated GPU's driver-API host programs (tests/cuda/host: vecadd, saxpy, sgemm,
 * reduce, spin, oob), unchanged, run through libtf_client -> tf-worker -> simulated GPU: each
 * alone, then all at once (with extra sgemm clients) on one worker. The programs check their
 * results bit-exactly against CPU references and print "<name>: PASS ...".
 *
 * Arguments (from meson): NAME PROGRAM PTX, repeated; environment: TF_WORKER, TF_SIM_LIBDIR,
 * TF_CLIENT_LIBDIR (the directory holding the client's libcuda.so.1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

#define MAX_PROGS 16

struct prog {
    char name[32];
    char path[1024];
    char ptx[1024];
};

static struct prog progs[MAX_PROGS];
static int nprogs;
static struct e2e_worker W;

struct run {
    pid_t pid;
    int out;
    const struct prog *p;
};

static void start(struct run *r, const struct prog *p)
{
    int fds[2];
    if (pipe(fds) != 0)
        fail_msg("pipe");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("LD_LIBRARY_PATH", getenv("TF_CLIENT_LIBDIR"), 1);
        setenv("TF_LOG_LEVEL", "error", 1);
        execl(p->path, p->path, p->ptx, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    r->pid = pid;
    r->out = fds[0];
    r->p = p;
}

/* Waits for R; fails the test unless it exited 0 and printed "<name>: PASS". */
static void finish(struct run *r)
{
    char buf[4096];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof(buf) - 1 && (k = read(r->out, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    close(r->out);
    int st;
    waitpid(r->pid, &st, 0);
    char want[64];
    snprintf(want, sizeof(want), "%s: PASS", r->p->name);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(buf, want))
        fail_msg("%s through the worker: status %d, output: %s", r->p->name, st, buf);
    printf("remote %s", strstr(buf, want));
}

static void host_programs_pass_unchanged_through_the_worker(void **state)
{
    for (int i = 0; i < nprogs; i++) {
        struct run r;
        start(&r, &progs[i]);
        finish(&r);
    }
}

static void host_programs_run_concurrently_on_one_worker(void **state)
{
    struct run r[MAX_PROGS + 4];
    int n = 0;
    for (int i = 0; i < nprogs; i++)
        start(&r[n++], &progs[i]);
    for (int i = 0; i < nprogs && n < MAX_PROGS + 2; i++)
        if (strcmp(progs[i].name, "sgemm") == 0 || strcmp(progs[i].name, "vecadd") == 0)
            start(&r[n++], &progs[i]);
    for (int i = 0; i < n; i++)
        finish(&r[i]);
}

static int setup(void **state)
{
    (void)state;
    e2e_start(&W, 0, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(&W);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 2 < argc && nprogs < MAX_PROGS; i += 3) {
        struct prog *p = &progs[nprogs++];
        snprintf(p->name, sizeof(p->name), "%s", argv[i]);
        snprintf(p->path, sizeof(p->path), "%s", argv[i + 1]);
        snprintf(p->ptx, sizeof(p->ptx), "%s", argv[i + 2]);
    }
    if (!getenv("TF_CLIENT_LIBDIR") || nprogs == 0 || argc % 3 != 1) {
        fprintf(stderr, "usage: TF_CLIENT_LIBDIR=... test_hosts {NAME PROGRAM PTX}...\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_programs_pass_unchanged_through_the_worker),
        cmocka_unit_test(host_programs_run_concurrently_on_one_worker),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
