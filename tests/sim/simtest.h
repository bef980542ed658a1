/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers shared by the simulated-GPU tests (test-only): an isolated shared-state prefix per
 * test process, CUDA/NVML result assertions that print the code's name, and running the
 * sim_helper program (a fresh process with its own environment).
 */
#ifndef TF_TESTS_SIM_SIMTEST_H
#define TF_TESTS_SIM_SIMTEST_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char simtest_dir[64];

/* Points TF_SIM_SHM_PREFIX at a fresh private directory (removed by simtest_cleanup) and sets
 * TF_SIM_DEVICES (unless NULL). Call before cuInit / nvmlInit. */
static inline void simtest_env(const char *devices)
{
    snprintf(simtest_dir, sizeof(simtest_dir), "/tmp/tf-simtest-XXXXXX");
    if (!mkdtemp(simtest_dir))
        abort();
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%s/dev-", simtest_dir);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1);
    unsetenv("TF_SIM_CONFIG");
    if (devices)
        setenv("TF_SIM_DEVICES", devices, 1);
    else
        unsetenv("TF_SIM_DEVICES");
}

static inline void simtest_cleanup(void)
{
    if (!simtest_dir[0])
        return;
    DIR *d = opendir(simtest_dir);
    if (d) {
        struct dirent *e;
        char path[512];
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", simtest_dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(simtest_dir);
}

#define CU_OK(expr)                                                                                \
    do {                                                                                           \
        CUresult r_ = (expr);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *n_ = "?";                                                                  \
            cuGetErrorName(r_, &n_);                                                               \
            fail_msg("%s -> %s (%d)", #expr, n_ ? n_ : "?", (int)r_);                              \
        }                                                                                          \
    } while (0)

#define CU_IS(want, expr)                                                                          \
    do {                                                                                           \
        CUresult r_ = (expr);                                                                      \
        if (r_ != (want)) {                                                                        \
            const char *n_ = "?", *w_ = "?";                                                       \
            cuGetErrorName(r_, &n_);                                                               \
            cuGetErrorName((want), &w_);                                                           \
            fail_msg("%s -> %s (%d), want %s", #expr, n_ ? n_ : "?", (int)r_, w_ ? w_ : "?");      \
        }                                                                                          \
    } while (0)

/* The contents of the file at PATH, NUL-terminated (caller frees); fails the test if it
 * cannot be read. */
static inline char *simtest_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* Path of the sim_helper program (next to the test executables). */
static inline const char *simtest_helper(void)
{
    static char path[512];
    const char *b = getenv("TF_BUILDDIR");
    snprintf(path, sizeof(path), "%s/tests/sim/sim_helper", b ? b : ".");
    return path;
}

/* Starts PROG (a path; NULL: sim_helper) with ARGS... (NULL-terminated) in a new process
 * inheriting the environment; returns its pid. Its stdout goes to the pipe *OUT_FD and its
 * stdin comes from the pipe *IN_FD when those are non-NULL (closing *IN_FD sends EOF). */
static inline pid_t simtest_spawn_prog(const char *prog, int *out_fd, int *in_fd,
                                       const char *const *args)
{
    int o[2] = {-1, -1}, i[2] = {-1, -1};
    if ((out_fd && pipe(o) != 0) || (in_fd && pipe(i) != 0))
        abort();
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        if (out_fd) {
            dup2(o[1], 1);
            close(o[0]);
            close(o[1]);
        }
        if (in_fd) {
            dup2(i[0], 0);
            close(i[0]);
            close(i[1]);
        }
        const char *argv[16];
        int n = 0;
        argv[n++] = prog ? prog : simtest_helper();
        for (int k = 0; args[k] && n < 15; k++)
            argv[n++] = args[k];
        argv[n] = NULL;
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (out_fd) {
        close(o[1]);
        *out_fd = o[0];
    }
    if (in_fd) {
        close(i[0]);
        *in_fd = i[1];
    }
    return pid;
}

static inline pid_t simtest_spawn(int *out_fd, int *in_fd, const char *const *args)
{
    return simtest_spawn_prog(NULL, out_fd, in_fd, args);
}

/* Reads one line (without newline) from FD into BUF; returns its length or -1 at EOF. */
static inline int simtest_read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r <= 0)
            return n ? (int)n : -1;
        if (c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = 0;
    return (int)n;
}

/* Waits for PID; returns its exit status, or 128 + signal. */
static inline int simtest_wait(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
