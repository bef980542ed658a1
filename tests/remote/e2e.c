/* SPDX-License-Identifier: Apache-2.0
 *
 * End-to-end test helper: a real tf-worker on the simulated GPU; see e2e.h.
 */
#include "e2e.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void sleep_ms(int ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

void e2e_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
}

void e2e_fail_cu(const char *file, int line, const char *what, int got, int want)
{
    fprintf(stderr, "%s:%d: %s returned %d, want %d\n", file, line, what, got, want);
}

void e2e_start(struct e2e_worker *w, int tcp, const char *const *extra)
{
    memset(w, 0, sizeof(*w));
    /* A test program linked against the client must really be using it (LD_LIBRARY_PATH
     * could put another libcuda.so.1 first). */
    void *init = dlsym(RTLD_DEFAULT, "cuInit");
    Dl_info di;
    if (init && dladdr(init, &di) && di.dli_fname && !strstr(di.dli_fname, "remote/client"))
        fail_msg("cuInit comes from %s, not libtf_client", di.dli_fname);
    snprintf(w->dir, sizeof(w->dir), "/tmp/tf-e2e-XXXXXX");
    if (!mkdtemp(w->dir))
        fail_msg("mkdtemp: %s", strerror(errno));
    char token[128], ready[128], shm[128], sock[128];
    snprintf(token, sizeof(token), "%s/token", w->dir);
    snprintf(ready, sizeof(ready), "%s/ready", w->dir);
    snprintf(shm, sizeof(shm), "%s/sim-", w->dir);
    snprintf(sock, sizeof(sock), "unix://%s/worker.sock", w->dir);
    FILE *f = fopen(token, "w");
    fprintf(f, "%s\n", E2E_TOKEN);
    fclose(f);
    const char *worker = getenv("TF_WORKER"), *simdir = getenv("TF_SIM_LIBDIR");
    if (!worker || !simdir)
        fail_msg("TF_WORKER and TF_SIM_LIBDIR must be set");
    const char *argv[32];
    int n = 0;
    argv[n++] = worker;
    argv[n++] = "--listen";
    argv[n++] = tcp ? "tcp://127.0.0.1:0" : sock;
    argv[n++] = "--token-file";
    argv[n++] = token;
    argv[n++] = "--ready-file";
    argv[n++] = ready;
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("LD_LIBRARY_PATH", simdir, 1);
        setenv("TF_SIM_SHM_PREFIX", shm, 1);
        if (!getenv("TF_SIM_DEVICES"))
            setenv("TF_SIM_DEVICES", "A100:4Gi", 1);
        if (!getenv("TF_LOG_LEVEL"))
            setenv("TF_LOG_LEVEL", "error", 1);
        execv(worker, (char *const *)argv);
        _exit(127);
    }
    w->pid = pid;
    for (int i = 0; i < 1000; i++) {
        FILE *r = fopen(ready, "r");
        if (r) {
            char line[160] = "";
            if (fgets(line, sizeof(line), r))
                line[strcspn(line, "\n")] = 0;
            fclose(r);
            snprintf(w->addr, sizeof(w->addr), "%s", line);
            setenv("TF_REMOTE", w->addr, 1);
            setenv("TF_TOKEN", E2E_TOKEN, 1);
            return;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            fail_msg("tf-worker exited during start-up (status %d)", st);
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    fail_msg("tf-worker did not come up");
}

static void rm_dir(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

void e2e_kill(struct e2e_worker *w)
{
    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
        w->pid = 0;
    }
}

void e2e_stop(struct e2e_worker *w)
{
    if (w->pid > 0) {
        kill(w->pid, SIGTERM);
        int st = 0;
        for (int i = 0; i < 500; i++) {
            if (waitpid(w->pid, &st, WNOHANG) == w->pid) {
                w->pid = 0;
                break;
            }
            sleep_ms(10);
        }
        if (w->pid > 0) {
            kill(w->pid, SIGKILL);
            waitpid(w->pid, NULL, 0);
            w->pid = 0;
            fail_msg("tf-worker did not stop on SIGTERM");
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("tf-worker exited with status %d", st);
    }
    rm_dir(w->dir);
}

char *e2e_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!t || fread(t, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(t);
        return NULL;
    }
    t[n] = 0;
    fclose(f);
    return t;
}

pid_t e2e_spawn(int (*fn)(void *arg), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* A scenario never outlives its test (a killed or timed-out test takes it along). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        exit(fn(arg));
    }
    return pid;
}

int e2e_wait(pid_t pid, int timeout_s)
{
    int st;
    for (int i = 0; i < timeout_s * 100; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(st))
                return WEXITSTATUS(st);
            fprintf(stderr, "child %d died from signal %d\n", (int)pid, WTERMSIG(st));
            return -1;
        }
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    fprintf(stderr, "child %d timed out after %d s\n", (int)pid, timeout_s);
    return -1;
}

int e2e_run(int (*fn)(void *arg), void *arg, int timeout_s)
{
    return e2e_wait(e2e_spawn(fn, arg), timeout_s);
}
