/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only child process runner (see spawn.h).
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double started_at;

void child_start(struct child *c, char *const argv[], const char *const env[])
{
    memset(c, 0, sizeof(*c));
    int o[2], e[2];
    if (pipe(o) != 0 || pipe(e) != 0)
        abort();
    started_at = now_s();
    c->pid = fork();
    if (c->pid < 0)
        abort();
    if (c->pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(o[0]);
        close(e[0]);
        close(o[1]);
        close(e[1]);
        for (int i = 0; env && env[i]; i++) {
            const char *eq = strchr(env[i], '=');
            if (!eq)
                continue;
            char key[256];
            size_t n = (size_t)(eq - env[i]);
            if (n >= sizeof(key))
                continue;
            memcpy(key, env[i], n);
            key[n] = 0;
            if (eq[1])
                setenv(key, eq + 1, 1);
            else
                unsetenv(key);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    c->out_fd = o[0];
    c->err_fd = e[0];
    fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
}

static void drain(int fd, char *buf, size_t *len, size_t cap)
{
    for (;;) {
        char tmp[4096];
        ssize_t n = read(fd, tmp, sizeof(tmp));
        if (n <= 0)
            return;
        size_t room = cap - 1 - *len;
        size_t k = (size_t)n < room ? (size_t)n : room;
        memcpy(buf + *len, tmp, k);
        *len += k;
        buf[*len] = 0;
    }
}

static void pump(struct child *c, int ms)
{
    struct pollfd p[2] = {{c->out_fd, POLLIN, 0}, {c->err_fd, POLLIN, 0}};
    poll(p, 2, ms);
    drain(c->out_fd, c->out, &c->out_len, sizeof(c->out));
    drain(c->err_fd, c->err, &c->err_len, sizeof(c->err));
}

int child_wait_for(struct child *c, const char *needle, double timeout_s)
{
    double end = now_s() + timeout_s;
    while (now_s() < end) {
        pump(c, 20);
        if (strstr(c->out, needle))
            return 1;
        int st;
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
            pump(c, 0);
            c->status = st;
            c->pid = -c->pid;
            return strstr(c->out, needle) != NULL;
        }
    }
    return 0;
}

int child_finish(struct child *c, double timeout_s)
{
    double end = now_s() + timeout_s;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    if (c->pid > 0) {
        for (;;) {
            pump(c, 20);
            int st;
            pid_t r = wait4(c->pid, &st, WNOHANG, &ru);
            if (r == c->pid) {
                c->status = st;
                break;
            }
            if (now_s() > end) {
                kill(c->pid, SIGKILL);
                wait4(c->pid, &st, 0, &ru);
                c->status = st;
                break;
            }
        }
    }
    pump(c, 0);
    c->wall_s = now_s() - started_at;
    c->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    close(c->out_fd);
    close(c->err_fd);
    if (WIFEXITED(c->status))
        return WEXITSTATUS(c->status);
    return 128 + WTERMSIG(c->status);
}

int child_run(struct child *c, char *const argv[], const char *const env[], double timeout_s)
{
    child_start(c, argv, env);
    return child_finish(c, timeout_s);
}

const char *child_value(const struct child *c, const char *key)
{
    static char val[256];
    size_t kl = strlen(key);
    for (const char *p = c->out; (p = strstr(p, key)) != NULL; p++) {
        if ((p == c->out || p[-1] == '\n') && p[kl] == '=') {
            const char *v = p + kl + 1;
            size_t n = strcspn(v, "\n");
            if (n >= sizeof(val))
                n = sizeof(val) - 1;
            memcpy(val, v, n);
            val[n] = 0;
            return val;
        }
    }
    return NULL;
}

long long child_num(const struct child *c, const char *key)
{
    const char *v = child_value(c, key);
    return v ? strtoll(v, NULL, 10) : -1;
}
