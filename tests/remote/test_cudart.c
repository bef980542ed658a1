/* SPDX-License-Identifier: Apache-2.0
 *
 * The CUDA runtime programs of tests/cudart (plain nvcc, static and shared runtime),
 * unchanged, through libtf_client -> tf-worker -> the simulated GPU: each must print
 * "<name>: PASS" with its exact results; several at once on one worker (one module upload
 * per image: the worker's content-addressed image cache); and under a worker with hard limits,
 * each limit must hold: VRAM (the vram program: allocations, pitched and 3D allocations,
 * module variables past the limit refused) and compute (the burn program on each runtime
 * launch path held near the worker's share).
 *
 * Environment (from meson): TF_WORKER, TF_SIM_LIBDIR, TF_CLIENT_LIBDIR, CUDART_EXES
 * ("name_kind=path;..."), CUDART_PROGS (the programs that check themselves), CUDART_LIBPATH
 * (the toolkit's libraries: shared runtime, NVRTC), CUDART_PRELOAD (ASan's runtime in
 * sanitizer builds, which nvcc-linked programs lack).
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

struct run {
    pid_t pid;
    int out;
    char name[64];
};

/* The path of program NAME_KIND ("vecadd_static"), from CUDART_EXES. */
static const char *exe(const char *name_kind)
{
    static char path[1024];
    const char *list = getenv("CUDART_EXES");
    size_t n = strlen(name_kind);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && strncmp(p, name_kind, n) == 0 && p[n] == '=') {
            snprintf(path, sizeof(path), "%.*s", (int)(len - n - 1), p + n + 1);
            return path;
        }
        p = end ? end + 1 : p + len;
    }
    fail_msg("no program %s in CUDART_EXES", name_kind);
    return NULL;
}

static void start(struct run *r, const char *name_kind, const char *const *args)
{
    int fds[2];
    if (pipe(fds) != 0)
        fail_msg("pipe");
    const char *path = exe(name_kind);
    snprintf(r->name, sizeof(r->name), "%s", name_kind);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char libpath[4096];
        snprintf(libpath, sizeof(libpath), "%s:%s", getenv("TF_CLIENT_LIBDIR"),
                 getenv("CUDART_LIBPATH") ? getenv("CUDART_LIBPATH") : "");
        setenv("LD_LIBRARY_PATH", libpath, 1);
        const char *pre = getenv("CUDART_PRELOAD");
        if (pre && *pre)
            setenv("LD_PRELOAD", pre, 1);
        setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 1);
        setenv("TF_LOG_LEVEL", "error", 1);
        const char *argv[8] = {path};
        for (int i = 0; args && args[i] && i < 6; i++)
            argv[i + 1] = args[i];
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    r->pid = pid;
    r->out = fds[0];
}

/* Waits for R; fails the test unless it exited 0 and printed "<prog>: PASS". OUT (may be
 * NULL) gets what it printed. */
static void finish(struct run *r, char *out, size_t cap)
{
    char buf[8192];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof(buf) - 1 && (k = read(r->out, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    close(r->out);
    int st;
    waitpid(r->pid, &st, 0);
    char want[80];
    snprintf(want, sizeof(want), "%.*s: PASS", (int)strcspn(r->name, "_"), r->name);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(buf, want))
        fail_msg("%s through the worker: status %d, output: %s", r->name, st, buf);
    printf("remote %s: %s", r->name, strstr(buf, want) + strlen(want) - 4);
    if (out)
        snprintf(out, cap, "%s", buf);
}

static void run_one(const char *name_kind, const char *const *args, char *out, size_t cap)
{
    struct run r;
    start(&r, name_kind, args);
    finish(&r, out, cap);
}

/* Calls FN(NAME) for each program of CUDART_PROGS. */
static void each_prog(void (*fn)(const char *name, void *arg), void *arg)
{
    char list[1024];
    snprintf(list, sizeof(list), "%s", getenv("CUDART_PROGS") ? getenv("CUDART_PROGS") : "");
    for (char *save, *p = strtok_r(list, ";", &save); p; p = strtok_r(NULL, ";", &save))
        fn(p, arg);
}

static void run_both(const char *name, void *arg)
{
    (void)arg;
    char nk[96];
    snprintf(nk, sizeof(nk), "%s_static", name);
    run_one(nk, NULL, NULL, 0);
    snprintf(nk, sizeof(nk), "%s_shared", name);
    run_one(nk, NULL, NULL, 0);
}

static void runtime_programs_pass_unchanged_through_the_worker(void **state)
{
    (void)state;
    struct e2e_worker w;
    e2e_start(&w, 0, (const char *[]){"--pinned-staging", NULL});
    each_prog(run_both, NULL);
    e2e_stop(&w);
}

struct many {
    struct run r[32];
    int n;
};

static void start_static(const char *name, void *arg)
{
    struct many *m = arg;
    char nk[96];
    snprintf(nk, sizeof(nk), "%s_static", name);
    if (m->n < 32)
        start(&m->r[m->n++], nk, NULL);
}

static void runtime_programs_run_concurrently_on_one_worker(void **state)
{
    (void)state;
    struct e2e_worker w;
    e2e_start(&w, 0, NULL);
    struct many m = {.n = 0};
    each_prog(start_static, &m);
    /* The same image from several processes at once. */
    for (int i = 0; i < 3 && m.n < 32; i++)
        start(&m.r[m.n++], "matmul_shared", NULL);
    for (int i = 0; i < m.n; i++)
        finish(&m.r[i], NULL, 0);
    e2e_stop(&w);
}

/* Counter NAME of the worker's --stats-file PATH. */
static unsigned long long stat_of(const char *path, const char *name)
{
    char buf[1024], key[80];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *p = strstr(buf, key);
    if (!p)
        fail_msg("no %s in %s", name, buf);
    return strtoull(p + strlen(key), NULL, 10);
}

/* Images are shipped by content: a second process loading the same program's image names it
 * by its digest and sends none of its bytes (the worker's counters say so). */
static void a_second_process_loading_the_same_image_sends_none_of_it(void **state)
{
    (void)state;
    struct e2e_worker w;
    char stats[128];
    snprintf(stats, sizeof(stats), "/tmp/tf-imgstats-%d.json", (int)getpid());
    e2e_start(&w, 0, (const char *[]){"--stats-file", stats, NULL});
    run_one("matmul_static", NULL, NULL, 0);
    unsigned long long sent = stat_of(stats, "module_loads_sent");
    unsigned long long bytes = stat_of(stats, "module_image_bytes_received");
    unsigned long long cached = stat_of(stats, "module_loads_cached");
    assert_true(sent >= 1 && bytes > 0);
    assert_int_equal(stat_of(stats, "module_images_held"), sent);
    run_one("matmul_static", NULL, NULL, 0);
    assert_int_equal(stat_of(stats, "module_loads_sent"), sent);
    assert_int_equal(stat_of(stats, "module_image_bytes_received"), bytes);
    assert_int_equal(stat_of(stats, "module_loads_cached"), 2 * cached + sent);
    printf("matmul twice: %llu image(s), %llu bytes sent once\n", sent, bytes);
    e2e_stop(&w);
    unlink(stats);
}

/* The VRAM limit of a worker holds for what the runtime allocates: the vram program checks
 * what the device reports, module variables counted, allocations past the limit refused. */
static void a_workers_vram_limit_holds_for_runtime_programs(void **state)
{
    (void)state;
    struct e2e_worker w;
    e2e_start(&w, 0, (const char *[]){"--vram-limit", "128Mi", NULL});
    run_one("vram_static", (const char *[]){"128", NULL}, NULL, 0);
    run_one("vram_shared", (const char *[]){"128", NULL}, NULL, 0);
    e2e_stop(&w);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* burn PATH for SECS seconds of 2 ms kernels: the share of the time its kernels ran. */
static double burn_share(const char *path, double secs)
{
    char out[8192], s[16];
    snprintf(s, sizeof(s), "%.1f", secs);
    double t0 = now_s();
    run_one("burn_static", (const char *[]){path, s, "2", NULL}, out, sizeof(out));
    double t = now_s() - t0;
    const char *c = strstr(out, "completed=");
    assert_non_null(c);
    double busy = (double)strtoull(c + 10, NULL, 10) * 2e-3;
    printf("burn %s: %.2f s of kernels in %.2f s = %.1f %%\n", path, busy, t, busy * 100 / t);
    return busy / t;
}

/* The compute limit of a worker holds on every launch path the runtime takes, graph launches
 * included; the same load on a worker without a limit runs well above it (so the limit, not
 * the overhead of the wire, is what holds it). */
static void a_workers_compute_limit_holds_on_every_runtime_launch_path(void **state)
{
    (void)state;
    struct e2e_worker w;
    e2e_start(&w, 0, NULL);
    double free_run = burn_share("graph", 3.0);
    e2e_stop(&w);
    e2e_start(&w, 0, (const char *[]){"--compute-percent", "10", NULL});
    static const char *const paths[] = {"launch", "ex", "coop", "graph"};
    double most = 0;
    for (int i = 0; i < 4; i++) {
        double share = burn_share(paths[i], 3.0);
        /* The process's lifetime includes start-up; the limit is an upper bound. */
        assert_true(share <= 0.20);
        assert_true(share >= 0.01);
        most = share > most ? share : most;
    }
    assert_true(free_run >= 2 * most);
    e2e_stop(&w);
}

int main(void)
{
    if (!getenv("TF_CLIENT_LIBDIR") || !getenv("CUDART_EXES") || !getenv("CUDART_PROGS")) {
        fprintf(stderr, "usage: TF_CLIENT_LIBDIR=... CUDART_EXES=... CUDART_PROGS=... "
                        "test_cudart\n");
        return 2;
    }
    setenv("TF_SIM_DEVICES", "L4", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_programs_pass_unchanged_through_the_worker),
        cmocka_unit_test(runtime_programs_run_concurrently_on_one_worker),
        cmocka_unit_test(a_second_process_loading_the_same_image_sends_none_of_it),
        cmocka_unit_test(a_workers_vram_limit_holds_for_runtime_programs),
        cmocka_unit_test(a_workers_compute_limit_holds_on_every_runtime_launch_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
