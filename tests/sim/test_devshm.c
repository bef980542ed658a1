/* SPDX-License-Identifier: Apache-2.0
 *
 * The cross-process state of a simulated GPU: processes share one memory budget and one
 * execution lock, a process killed at any point (kill -9, zombie or reaped) never wedges the
 * others and its memory comes back, and busy time turns into utilisation over a window.
 */
#include "simtest.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "common/err.h"
#include "sim/devshm.h"

#define UUID "GPU-00000000-1111-2222-3333-444444444444"

static char path[128];

static struct tf_sim_shm *open_region(int64_t budget)
{
    struct tf_sim_shm *s = NULL;
    char err[256] = "";
    if (tf_sim_shm_open(path, UUID, "L4", budget, &s, NULL, err, sizeof(err)) != 0)
        fail_msg("open: %s", err);
    return s;
}

static int setup(void **state)
{
    simtest_env(NULL);
    snprintf(path, sizeof(path), "%s/dev-%s", simtest_dir, UUID);
    return 0;
}

static int teardown(void **state)
{
    simtest_cleanup();
    return 0;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Forks a child that attaches, reserves BYTES, optionally takes the execution lock, reports
 * on a pipe and then sleeps until killed. */
static pid_t holder(uint64_t bytes, int take_exec_lock)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct tf_sim_shm *s = NULL;
        char err[128];
        int slot = -1;
        if (tf_sim_shm_open(path, UUID, "L4", 1, &s, NULL, err, sizeof(err)) ||
            tf_sim_shm_attach(s, &slot) || tf_sim_shm_mem_reserve(s, slot, bytes) ||
            (take_exec_lock && tf_sim_shm_exec_acquire(s, slot)))
            _exit(1);
        if (write(fds[1], "R", 1) != 1)
            _exit(2);
        for (;;)
            pause();
    }
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return pid;
}

static void processes_share_one_memory_budget(void **state)
{
    struct tf_sim_shm *s = open_region(1000);
    int slot;
    assert_int_equal(tf_sim_shm_attach(s, &slot), 0);
    pid_t child = holder(600, 0);
    struct tf_sim_shm_mem m;
    tf_sim_shm_mem_info(s, &m);
    assert_int_equal(m.total, 1000);
    assert_int_equal(m.used, 600);
    assert_int_equal(tf_sim_shm_mem_reserve(s, slot, 401), TF_ENOSPC);
    assert_int_equal(tf_sim_shm_mem_reserve(s, slot, 400), 0);
    assert_int_equal(tf_sim_shm_mem_reserve(s, slot, 1), TF_ENOSPC);
    struct tf_sim_shm_proc_info p[4];
    assert_int_equal(tf_sim_shm_processes(s, 0, 1, p, 4), 2);
    assert_int_equal(p[0].mem_used + p[1].mem_used, 1000);
    kill(child, SIGKILL);
    assert_int_equal(simtest_wait(child), 128 + SIGKILL);
    /* The dead child's 600 bytes come back on the next reservation that needs them. */
    assert_int_equal(tf_sim_shm_mem_reserve(s, slot, 600), 0);
    tf_sim_shm_mem_release(s, slot, 5000); /* over-release clamps at zero */
    tf_sim_shm_mem_info(s, &m);
    assert_int_equal(m.used, 0);
    tf_sim_shm_detach(s, slot);
    tf_sim_shm_close(s);
}

static void killed_zombie_process_memory_is_returned(void **state)
{
    struct tf_sim_shm *s = open_region(1 << 20);
    pid_t child = holder(4096, 0);
    struct tf_sim_shm_mem m;
    tf_sim_shm_mem_info(s, &m);
    assert_int_equal(m.used, 4096);
    kill(child, SIGKILL);
    /* Not waited for yet: a zombie still answers kill(pid, 0). */
    uint64_t t0 = now_ms();
    do {
        tf_sim_shm_mem_info(s, &m);
    } while (m.used != 0 && now_ms() - t0 < 2000);
    assert_int_equal(m.used, 0);
    simtest_wait(child);
    tf_sim_shm_close(s);
}

static void killed_lock_owner_never_wedges_the_others(void **state)
{
    struct tf_sim_shm *s = open_region(1 << 20);
    int slot;
    assert_int_equal(tf_sim_shm_attach(s, &slot), 0);
    pid_t child = holder(0, 1);
    pid_t killer = fork();
    if (killer == 0) {
        usleep(100 * 1000);
        kill(child, SIGKILL);
        _exit(0);
    }
    uint64_t t0 = now_ms();
    assert_int_equal(tf_sim_shm_exec_acquire(s, slot), 0); /* blocks until the kill */
    uint64_t waited = now_ms() - t0;
    assert_true(waited >= 80);
    assert_true(waited < 2000);
    tf_sim_shm_exec_release(s, slot, 0, 0);
    simtest_wait(killer);
    simtest_wait(child);
    tf_sim_shm_detach(s, slot);
    tf_sim_shm_close(s);
}

/* Shared log of execution intervals written by contending children. */
struct interval_log {
    _Atomic int n;
    struct {
        uint64_t a, b;
        int who;
    } v[256];
};

static void execution_lock_is_exclusive_and_fifo_across_processes(void **state)
{
    struct interval_log *log =
        mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(log != MAP_FAILED);
    memset(log, 0, sizeof(*log));
    enum { KIDS = 3, ROUNDS = 15 };
    pid_t kids[KIDS];
    for (int k = 0; k < KIDS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            struct tf_sim_shm *s = open_region(1 << 20);
            int slot;
            if (tf_sim_shm_attach(s, &slot))
                _exit(1);
            for (int r = 0; r < ROUNDS; r++) {
                if (tf_sim_shm_exec_acquire(s, slot))
                    _exit(2);
                uint64_t a = tf_sim_now_ns();
                usleep(2000);
                uint64_t b = tf_sim_now_ns();
                int i = atomic_fetch_add(&log->n, 1);
                log->v[i].a = a;
                log->v[i].b = b;
                log->v[i].who = k;
                tf_sim_shm_exec_release(s, slot, a, b);
            }
            tf_sim_shm_detach(s, slot);
            _exit(0);
        }
    }
    for (int k = 0; k < KIDS; k++)
        assert_int_equal(simtest_wait(kids[k]), 0);
    int n = atomic_load(&log->n);
    assert_int_equal(n, KIDS * ROUNDS);
    /* Intervals never overlap: one kernel at a time on the device. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && log->v[i].a < log->v[j].b && log->v[j].a < log->v[i].b)
                fail_msg("intervals %d and %d overlap", i, j);
    /* FIFO hand-over: no process runs twice in a row while another one is waiting (after
     * start-up every process is always waiting), so no long streaks. */
    int streak = 1, worst = 1;
    for (int i = 1; i < n; i++) {
        streak = log->v[i].who == log->v[i - 1].who ? streak + 1 : 1;
        worst = streak > worst ? streak : worst;
    }
    assert_true(worst <= ROUNDS / 2);
    struct tf_sim_shm *s = open_region(1 << 20);
    struct tf_sim_shm_totals t;
    tf_sim_shm_totals(s, &t);
    assert_int_equal(t.kernels, KIDS * ROUNDS);
    assert_true(t.busy_ns >= (uint64_t)KIDS * ROUNDS * 2000000);
    tf_sim_shm_close(s);
    munmap(log, sizeof(*log));
}

static void kill_at_random_points_never_wedges_the_region(void **state)
{
    struct tf_sim_shm *s = open_region(1 << 30);
    int slot;
    assert_int_equal(tf_sim_shm_attach(s, &slot), 0);
    srand(7);
    for (int round = 0; round < 12; round++) {
        pid_t child = fork();
        if (child == 0) {
            struct tf_sim_shm *c = open_region(1 << 30);
            int cs;
            if (tf_sim_shm_attach(c, &cs))
                _exit(1);
            for (;;) { /* hammer every locked path */
                tf_sim_shm_mem_reserve(c, cs, 64);
                tf_sim_shm_exec_acquire(c, cs);
                tf_sim_shm_exec_release(c, cs, 1, 2);
                tf_sim_shm_mem_release(c, cs, 64);
                tf_sim_shm_account_copy(c, cs, 1, 2);
            }
        }
        usleep((useconds_t)(1000 + rand() % 4000));
        kill(child, SIGKILL);
        simtest_wait(child);
        uint64_t t0 = now_ms();
        assert_int_equal(tf_sim_shm_exec_acquire(s, slot), 0);
        tf_sim_shm_exec_release(s, slot, 0, 0);
        assert_int_equal(tf_sim_shm_mem_reserve(s, slot, 1), 0);
        tf_sim_shm_mem_release(s, slot, 1);
        struct tf_sim_shm_mem m;
        tf_sim_shm_mem_info(s, &m);
        assert_int_equal(m.used, 0);
        assert_true(now_ms() - t0 < 2000);
    }
    tf_sim_shm_detach(s, slot);
    tf_sim_shm_close(s);
}

static void utilisation_is_busy_time_over_the_window(void **state)
{
    struct tf_sim_shm *s = open_region(1 << 20);
    int a, b;
    assert_int_equal(tf_sim_shm_attach(s, &a), 0);
    assert_int_equal(tf_sim_shm_attach(s, &b), 0);
    const uint64_t S = 1000000000ull, T = 1000 * S; /* a fixed "now" far from zero */
    /* Slot a ran 250 ms, slot b 100 ms, inside the last second; plus an old interval. */
    tf_sim_shm_exec_release(s, a, T - 900 * 1000000ull, T - 650 * 1000000ull);
    tf_sim_shm_exec_release(s, b, T - 300 * 1000000ull, T - 200 * 1000000ull);
    tf_sim_shm_exec_release(s, a, T - 5 * S, T - 4 * S);
    tf_sim_shm_account_copy(s, b, T - 100 * 1000000ull, T - 50 * 1000000ull);
    unsigned gpu, mem;
    tf_sim_shm_utilization(s, T, S, &gpu, &mem);
    assert_int_equal(gpu, 35);
    assert_int_equal(mem, 5);
    tf_sim_shm_utilization(s, T, 6 * S, &gpu, &mem);
    assert_int_equal(gpu, 23); /* 1350 ms of 6 s, rounded */
    struct tf_sim_shm_proc_info p[4];
    int n = tf_sim_shm_processes(s, T - S, T, p, 4);
    assert_int_equal(n, 1); /* both slots belong to this one pid */
    assert_int_equal(p[0].sm_util, 35);
    assert_int_equal(p[0].window_sm_ns, 350 * 1000000ull);
    assert_int_equal(p[0].busy_ns, 1350 * 1000000ull);
    /* A window starting mid-interval counts only the part inside it. */
    n = tf_sim_shm_processes(s, T - 250 * 1000000ull, T, p, 4);
    assert_int_equal(p[0].window_sm_ns, 50 * 1000000ull);
    tf_sim_shm_detach(s, a);
    tf_sim_shm_detach(s, b);
    tf_sim_shm_close(s);
}

static void stale_or_foreign_region_files_are_rejected(void **state)
{
    struct tf_sim_shm *s = open_region(100);
    tf_sim_shm_close(s);
    char err[256] = "";
    assert_int_equal(tf_sim_shm_open(path, "GPU-other", "L4", 100, &s, NULL, err, sizeof(err)),
                     TF_ECONFLICT);
    assert_non_null(strstr(err, "belongs to"));
    /* A later budget does not override the first creator's one. */
    int64_t eff = 0;
    assert_int_equal(tf_sim_shm_open(path, UUID, "L4", 999, &s, &eff, err, sizeof(err)), 0);
    assert_int_equal(eff, 100);
    tf_sim_shm_close(s);
    /* A region of another layout version names the file and asks to remove it. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    uint32_t v = 99;
    fseek(f, 8, SEEK_SET);
    fwrite(&v, 4, 1, f);
    fclose(f);
    assert_int_equal(tf_sim_shm_open(path, UUID, "L4", 100, &s, NULL, err, sizeof(err)), TF_ESTATE);
    assert_non_null(strstr(err, "remove the stale file"));
    unlink(path);
    assert_int_equal(
        tf_sim_shm_open("/nonexistent-dir/x", UUID, "L4", 1, &s, NULL, err, sizeof(err)), TF_EIO);
    assert_non_null(strstr(err, "/nonexistent-dir/x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(processes_share_one_memory_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(killed_zombie_process_memory_is_returned, setup, teardown),
        cmocka_unit_test_setup_teardown(killed_lock_owner_never_wedges_the_others, setup, teardown),
        cmocka_unit_test_setup_teardown(execution_lock_is_exclusive_and_fifo_across_processes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(kill_at_random_points_never_wedges_the_region, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(utilisation_is_busy_time_over_the_window, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_or_foreign_region_files_are_rejected, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
