/* SPDX-License-Identifier: Apache-2.0
 *
 * The SQLite state store: workloads and allocations survive a reopen, processes racing to
 * allocate the same GPU never over-book it, and writers killed with SIGKILL at random instants
 * leave a consistent store (every workload whole, capacity never exceeded), and a store of an
 * earlier version is migrated in place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "hypervisor/proc.h"
#include "hypervisor/state.h"

#define GiB (INT64_C(1) << 30)

static char dir[256], db[300];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-test-state-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(db, sizeof(db), "%s/state.db", dir);
    return 0;
}

static int teardown(void **state)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct tf_hv_state *open_with_gpu(void)
{
    struct tf_hv_state *st;
    char err[256];
    if (tf_hv_state_open(db, &st, err, sizeof(err)))
        fail_msg("open: %s", err);
    struct tf_hv_device d = {.uuid = "GPU-0",
                             .index = 0,
                             .name = "NVIDIA A100-SXM4-80GB",
                             .model = "A100-80GB",
                             .vendor = "NVIDIA",
                             .tflops_milli = 312000,
                             .vram_bytes = 80 * GiB,
                             .present = true};
    assert_int_equal(tf_hv_state_sync_devices(st, &d, 1, err, sizeof(err)), 0);
    return st;
}

static int create(struct tf_hv_state *st, const char *name, int64_t vram, int pid)
{
    struct tf_hv_request r = {.tflops_limit = 10000, .vram_limit = vram, .pid = pid};
    snprintf(r.name, sizeof(r.name), "%s", name);
    char err[256];
    assert_int_equal(tf_hv_request_normalize(&r, err, sizeof(err)), 0);
    struct tf_dynbuf reasons;
    tf_dynbuf_init(&reasons, 4096);
    struct tf_hv_workload w;
    int rc = tf_hv_state_create(st, &r, &w, &reasons, err, sizeof(err));
    tf_dynbuf_free(&reasons);
    return rc;
}

static void workloads_and_limits_survive_a_reopen(void **state)
{
    struct tf_hv_state *st = open_with_gpu();
    assert_int_equal(create(st, "train", 30 * GiB, getpid()), 0);
    assert_int_equal(create(st, "train", 1 * GiB, 0), TF_EEXIST);
    char err[256];
    assert_int_equal(tf_hv_state_set_runtime(st, "train", "/run/x/shm", 0, "", err, sizeof(err)),
                     0);
    tf_hv_state_close(st);
    st = open_with_gpu();
    struct tf_hv_workload w;
    assert_int_equal(tf_hv_state_get(st, "train", &w, err, sizeof(err)), 0);
    assert_int_equal(w.nalloc, 1);
    assert_string_equal(w.alloc[0].uuid, "GPU-0");
    assert_int_equal(w.alloc[0].vram_limit, 30 * GiB);
    assert_int_equal(w.alloc[0].tflops_limit, 10000);
    assert_int_equal(w.npids, 1);
    assert_int_equal(w.pids[0].pid, getpid());
    assert_true(tf_hv_proc_alive(w.pids[0].pid, w.pids[0].start_ticks));
    assert_false(tf_hv_proc_alive(w.pids[0].pid, w.pids[0].start_ticks + 1)); /* reused PID */
    assert_string_equal(w.shm_path, "/run/x/shm");
    /* 50Gi left: 60Gi does not fit, 50Gi does. */
    assert_int_equal(create(st, "big", 60 * GiB, 0), TF_ENOSPC);
    assert_int_equal(create(st, "fits", 50 * GiB, 0), 0);
    struct tf_hv_device d[4];
    int n;
    assert_int_equal(tf_hv_state_devices(st, d, 4, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(d[0].alloc_vram_bytes, 80 * GiB);
    assert_int_equal(d[0].nworkloads, 2);
    assert_int_equal(tf_hv_state_delete(st, "train", err, sizeof(err)), 0);
    assert_int_equal(tf_hv_state_delete(st, "train", err, sizeof(err)), TF_ENOENT);
    assert_int_equal(tf_hv_state_counter(st, "alloc_fail"), 2);
    tf_hv_state_close(st);
}

static void processes_racing_for_one_gpu_never_overbook_it(void **state)
{
    struct tf_hv_state *st = open_with_gpu();
    tf_hv_state_close(st);
    enum { KIDS = 4, EACH = 6 };
    pid_t kids[KIDS];
    for (int k = 0; k < KIDS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            struct tf_hv_state *s;
            char err[256];
            if (tf_hv_state_open(db, &s, err, sizeof(err)))
                _exit(100);
            int won = 0;
            for (int i = 0; i < EACH; i++) {
                char name[32];
                snprintf(name, sizeof(name), "k%d-%d", k, i);
                struct tf_hv_request r = {.tflops_limit = 1000, .vram_limit = 10 * GiB};
                snprintf(r.name, sizeof(r.name), "%s", name);
                tf_hv_request_normalize(&r, err, sizeof(err));
                struct tf_dynbuf reasons;
                tf_dynbuf_init(&reasons, 4096);
                int rc = tf_hv_state_create(s, &r, NULL, &reasons, err, sizeof(err));
                tf_dynbuf_free(&reasons);
                if (rc == 0)
                    won++;
                else if (rc != TF_ENOSPC)
                    _exit(101);
            }
            tf_hv_state_close(s);
            _exit(won);
        }
    }
    int total = 0;
    for (int k = 0; k < KIDS; k++) {
        int wst;
        waitpid(kids[k], &wst, 0);
        assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) <= EACH);
        total += WEXITSTATUS(wst);
    }
    assert_int_equal(total, 8); /* 80Gi / 10Gi, exactly */
    st = open_with_gpu();
    struct tf_hv_device d[2];
    int n;
    char err[256];
    assert_int_equal(tf_hv_state_devices(st, d, 2, &n, err, sizeof(err)), 0);
    assert_int_equal(d[0].alloc_vram_bytes, 80 * GiB);
    tf_hv_state_close(st);
}

static void writers_killed_mid_transaction_leave_a_consistent_store(void **state)
{
    struct tf_hv_state *st = open_with_gpu();
    tf_hv_state_close(st);
    srand(42);
    for (int round = 0; round < 12; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct tf_hv_state *s;
            char err[256];
            if (tf_hv_state_open(db, &s, err, sizeof(err)))
                _exit(100);
            for (unsigned i = 0;; i++) {
                char name[32];
                snprintf(name, sizeof(name), "r%d-%u", round, i % 16);
                struct tf_hv_request r = {
                    .tflops_limit = 1000, .vram_limit = 7 * GiB, .gpu_count = 1};
                snprintf(r.name, sizeof(r.name), "%s", name);
                tf_hv_request_normalize(&r, err, sizeof(err));
                struct tf_dynbuf reasons;
                tf_dynbuf_init(&reasons, 4096);
                if (tf_hv_state_create(s, &r, NULL, &reasons, err, sizeof(err)) == TF_EEXIST)
                    tf_hv_state_delete(s, name, err, sizeof(err));
                tf_dynbuf_free(&reasons);
            }
        }
        usleep((useconds_t)(20000 + rand() % 60000));
        kill(pid, SIGKILL);
        int wst;
        waitpid(pid, &wst, 0);
        /* After every crash: integrity, whole workloads, capacity respected. */
        sqlite3 *h;
        assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
        sqlite3_stmt *q;
        assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &q, NULL), 0);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(q, 0), "ok");
        sqlite3_finalize(q);
        assert_int_equal(sqlite3_prepare_v2(h,
                                            "SELECT count(*) FROM workloads w WHERE gpu_count !="
                                            " (SELECT count(*) FROM allocations a WHERE"
                                            " a.workload = w.name)",
                                            -1, &q, NULL),
                         0);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(q, 0), 0);
        sqlite3_finalize(q);
        assert_int_equal(sqlite3_prepare_v2(h,
                                            "SELECT COALESCE(sum(vram_bytes), 0) FROM"
                                            " allocations",
                                            -1, &q, NULL),
                         0);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        assert_true(sqlite3_column_int64(q, 0) <= 80 * GiB);
        sqlite3_finalize(q);
        sqlite3_close(h);
    }
}

/* A version 2 store (no NUMA column) opens, keeps its devices (NUMA unknown until the next
 * discovery) and records NUMA nodes from then on. */
static void version_2_store_is_migrated_and_keeps_its_devices(void **state)
{
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(raw,
                     "CREATE TABLE devices(uuid TEXT PRIMARY KEY, idx INTEGER NOT NULL,"
                     " name TEXT NOT NULL, model TEXT NOT NULL, vendor TEXT NOT NULL,"
                     " tflops_milli INTEGER NOT NULL, vram_bytes INTEGER NOT NULL,"
                     " present INTEGER NOT NULL, seen_ms INTEGER NOT NULL);"
                     "INSERT INTO devices VALUES('GPU-old', 0, 'NVIDIA L4', 'L4', 'NVIDIA',"
                     " 121000, 24, 1, 0);"
                     "PRAGMA user_version = 2;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(raw);
    struct tf_hv_state *st;
    char err[256];
    if (tf_hv_state_open(db, &st, err, sizeof(err)))
        fail_msg("open: %s", err);
    struct tf_hv_device devs[4];
    int n = 0;
    assert_int_equal(tf_hv_state_devices(st, devs, 4, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_string_equal(devs[0].uuid, "GPU-old");
    assert_int_equal(devs[0].numa, -1);
    devs[0].numa = 1;
    assert_int_equal(tf_hv_state_sync_devices(st, devs, 1, err, sizeof(err)), 0);
    tf_hv_state_close(st);
    if (tf_hv_state_open(db, &st, err, sizeof(err)))
        fail_msg("reopen: %s", err);
    assert_int_equal(tf_hv_state_devices(st, devs, 4, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(devs[0].numa, 1);
    tf_hv_state_close(st);
    assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
    sqlite3_stmt *v;
    assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &v, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(v), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(v, 0), 3);
    sqlite3_finalize(v);
    sqlite3_close(raw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(workloads_and_limits_survive_a_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(version_2_store_is_migrated_and_keeps_its_devices, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(processes_racing_for_one_gpu_never_overbook_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(writers_killed_mid_transaction_leave_a_consistent_store,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
