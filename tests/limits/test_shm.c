/* SPDX-License-Identifier: Apache-2.0
 *
 * The hypervisor <-> limiter shared-memory region: creation and validation, the pinned
 * layout, rejected corrupt regions, live limit changes without torn reads, a dead writer,
 * atomic VRAM reservations across threads and processes, PID slots and the reclaim of
 * processes killed with SIGKILL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "limits/proc.h"
#include "limits/shm.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

static char dir[256];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-test-shm-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static void two_gpu_config(struct tf_shm_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "default/pod-a");
    c->ndev = 2;
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 16; k++)
            c->dev[i].uuid[k] = (uint8_t)(0x10 * i + k);
        c->dev[i].flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT;
        c->dev[i].compute_limit_bp = 3000;
        c->dev[i].vram_limit = 2 * GiB;
        c->dev[i].mem_total = 80 * GiB;
    }
}

static struct tf_shm_region *anon_region(const struct tf_shm_config *c)
{
    void *p = mmap(NULL, TF_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    tf_shm_format(p, c, 1);
    return p;
}

static void hypervisor_creates_region_and_limiter_opens_it(void **state)
{
    char path[300], err[256] = "";
    path_of(path, sizeof(path), "shm");
    struct tf_shm_config c, got;
    two_gpu_config(&c);
    struct tf_shm_map w, r;
    assert_int_equal(tf_shm_create(path, &c, 0600, &w, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_open(path, &r, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_read_config(r.r, &got), 0);
    assert_string_equal(got.name, "default/pod-a");
    assert_int_equal(got.ndev, 2);
    assert_memory_equal(got.dev[1].uuid, c.dev[1].uuid, 16);
    assert_int_equal(got.dev[1].compute_limit_bp, 3000);
    assert_int_equal(got.dev[1].vram_limit, 2 * GiB);
    /* Buckets start full at the feed-forward rate for the limit: 30 % of a device. */
    assert_int_equal(atomic_load(&r.r->dev[0].bucket.rate), 300000000u);
    assert_int_equal(atomic_load(&r.r->dev[0].bucket.capacity), 6000000);
    /* The creator cannot clobber a region that processes may already map. */
    struct tf_shm_map again;
    assert_int_equal(tf_shm_create(path, &c, 0600, &again, err, sizeof(err)), TF_EEXIST);
    assert_non_null(strstr(err, "already exists"));
    tf_shm_unmap(&w);
    tf_shm_unmap(&r);
}

static void region_bytes_sit_at_the_documented_offsets(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    const unsigned char *b = (const unsigned char *)r;
    assert_memory_equal(b, "TFLIMSHM", 8);
    uint32_t v;
    memcpy(&v, b + 8, 4);
    assert_int_equal(v, TF_SHM_VERSION);
    uint64_t size;
    memcpy(&size, b + 16, 8);
    assert_int_equal(size, 24832);
    /* Device 1 starts at 256 + 256: uuid bytes, then flags at +16, limit bp at +20. */
    assert_int_equal(b[512], 0x10);
    assert_int_equal(b[512 + 15], 0x1f);
    memcpy(&v, b + 512 + 20, 4);
    assert_int_equal(v, 3000);
    uint64_t vram;
    memcpy(&vram, b + 512 + 24, 8);
    assert_int_equal(vram, 2 * GiB);
    assert_string_equal((const char *)b + 80, "default/pod-a");
    assert_int_equal(tf_shm_validate(b, TF_SHM_SIZE, NULL, 0), 0);
    munmap(r, TF_SHM_SIZE);
}

static void expect_rejected(const unsigned char *buf, size_t len, const char *needle)
{
    char err[256] = "";
    assert_int_equal(tf_shm_validate(buf, len, err, sizeof(err)), TF_EPROTO);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" does not name \"%s\"", err, needle);
}

static void corrupt_regions_are_rejected_naming_the_field(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    unsigned char *good = malloc(TF_SHM_SIZE), *bad = malloc(TF_SHM_SIZE);
    memcpy(good, r, TF_SHM_SIZE);

    expect_rejected(good, 100, "shorter than the 256-byte header");
    expect_rejected(good, TF_SHM_SIZE - 1, "region is 24831 bytes");
    memcpy(bad, good, TF_SHM_SIZE);
    memcpy(bad, "GARBAGE!", 8);
    expect_rejected(bad, TF_SHM_SIZE, "bad magic");
    memset(bad, 0, 8);
    expect_rejected(bad, TF_SHM_SIZE, "not initialised");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[8] = 2;
    expect_rejected(bad, TF_SHM_SIZE, "version 2");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[13] = 0;
    expect_rejected(bad, TF_SHM_SIZE, "header_size");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[17] = 1;
    expect_rejected(bad, TF_SHM_SIZE, "size field");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[24] = 8;
    expect_rejected(bad, TF_SHM_SIZE, "max_devices");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[40] = 17;
    expect_rejected(bad, TF_SHM_SIZE, "ndev is 17");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[44] = 0x80;
    expect_rejected(bad, TF_SHM_SIZE, "header flags");
    memcpy(bad, good, TF_SHM_SIZE);
    uint32_t bp = 20000;
    memcpy(bad + 512 + 20, &bp, 4);
    expect_rejected(bad, TF_SHM_SIZE, "device 1: compute_limit_bp 20000");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[256 + 16] = 0x41;
    expect_rejected(bad, TF_SHM_SIZE, "device 0: flags 0x41");
    memcpy(bad, good, TF_SHM_SIZE);
    bad[256 + 16] = 0;
    expect_rejected(bad, TF_SHM_SIZE, "not marked present");
    memcpy(bad, good, TF_SHM_SIZE);
    memset(bad + 80, 'x', 64);
    expect_rejected(bad, TF_SHM_SIZE, "name is not NUL-terminated");
    free(good);
    free(bad);
    munmap(r, TF_SHM_SIZE);
}

static void write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

static void limiter_rejects_corrupt_or_missing_region_files(void **state)
{
    char path[300], err[256] = "";
    struct tf_shm_map m;
    path_of(path, sizeof(path), "missing");
    assert_int_equal(tf_shm_open(path, &m, err, sizeof(err)), TF_ENOENT);
    assert_non_null(strstr(err, "cannot open limit region"));

    path_of(path, sizeof(path), "short");
    write_file(path, "TFLIMSHM", 8);
    assert_int_equal(tf_shm_open(path, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "shorter than the 256-byte header"));

    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    path_of(path, sizeof(path), "oldversion");
    unsigned char *buf = malloc(TF_SHM_SIZE);
    memcpy(buf, r, TF_SHM_SIZE);
    buf[8] = 7;
    write_file(path, buf, TF_SHM_SIZE);
    assert_int_equal(tf_shm_open(path, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "rejected limit region: version 7"));

    path_of(path, sizeof(path), "badlimit");
    memcpy(buf, r, TF_SHM_SIZE);
    uint32_t bp = 0;
    memcpy(buf + 256 + 20, &bp, 4);
    write_file(path, buf, TF_SHM_SIZE);
    assert_int_equal(tf_shm_open(path, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "compute_limit_bp 0 is outside 1..10000"));

    path_of(path, sizeof(path), "truncated");
    write_file(path, r, TF_SHM_SIZE / 2);
    assert_int_equal(tf_shm_open(path, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "region is 12416 bytes"));
    free(buf);
    munmap(r, TF_SHM_SIZE);
}

static void autoscaler_changes_limits_live(void **state)
{
    char path[300], err[256] = "";
    path_of(path, sizeof(path), "live");
    struct tf_shm_config c, got;
    two_gpu_config(&c);
    struct tf_shm_map w, r;
    assert_int_equal(tf_shm_create(path, &c, 0600, &w, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_open(path, &r, err, sizeof(err)), 0);
    assert_int_equal(
        tf_shm_set_limits(w.r, 1, TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT, 6000, 4 * GiB),
        0);
    /* The other mapping (a running limiter) sees it at once, single fields and snapshot. */
    assert_int_equal(atomic_load(&r.r->dev[1].compute_limit_bp), 6000);
    assert_int_equal(atomic_load(&r.r->dev[1].vram_limit), 4 * GiB);
    assert_int_equal(atomic_load(&r.r->dev[1].bucket.rate), 600000000u);
    assert_int_equal(tf_shm_read_config(r.r, &got), 0);
    assert_int_equal(got.dev[1].compute_limit_bp, 6000);
    /* Dropping the compute limit, keeping VRAM. */
    assert_int_equal(tf_shm_set_limits(w.r, 1, TF_SHM_DEV_VRAM_LIMIT, 0, 4 * GiB), 0);
    assert_int_equal(atomic_load(&r.r->dev[1].flags), TF_SHM_DEV_PRESENT | TF_SHM_DEV_VRAM_LIMIT);
    /* Bad values change nothing. */
    assert_int_equal(tf_shm_set_limits(w.r, 1, TF_SHM_DEV_COMPUTE_LIMIT, 10001, 0), TF_EINVAL);
    assert_int_equal(tf_shm_set_limits(w.r, 2, TF_SHM_DEV_VRAM_LIMIT, 0, GiB), TF_ERANGE);
    assert_int_equal(atomic_load(&r.r->dev[1].vram_limit), 4 * GiB);
    tf_shm_unmap(&w);
    tf_shm_unmap(&r);
}

/* --- torn reads ------------------------------------------------------------------------ */

struct torn {
    struct tf_shm_region *r;
    _Atomic(int) stop;
    _Atomic(long) snapshots, torn, busy;
};

static void pattern_config(struct tf_shm_config *c, uint32_t k)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "gen-%u", k);
    c->ndev = 1 + k % 16;
    for (uint32_t i = 0; i < c->ndev; i++) {
        memset(c->dev[i].uuid, (int)(k & 0xff), 16);
        c->dev[i].flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT;
        c->dev[i].compute_limit_bp = 1 + k % 10000;
        c->dev[i].vram_limit = (uint64_t)k * MiB;
        c->dev[i].mem_total = (uint64_t)k;
    }
}

static bool consistent(const struct tf_shm_config *c)
{
    unsigned k;
    if (sscanf(c->name, "gen-%u", &k) != 1)
        return false;
    struct tf_shm_config want;
    pattern_config(&want, k);
    return memcmp(&want, c, sizeof(want)) == 0;
}

static void *reader_main(void *arg)
{
    struct torn *t = arg;
    while (!atomic_load(&t->stop)) {
        struct tf_shm_config c;
        memset(&c, 0, sizeof(c));
        int rc = tf_shm_read_config(t->r, &c);
        if (rc == TF_EBUSY) {
            atomic_fetch_add(&t->busy, 1);
            continue;
        }
        atomic_fetch_add(&t->snapshots, 1);
        if (!consistent(&c))
            atomic_fetch_add(&t->torn, 1);
    }
    return NULL;
}

static void readers_never_see_a_half_written_config(void **state)
{
    struct tf_shm_config c;
    pattern_config(&c, 0);
    struct torn t = {.r = anon_region(&c)};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader_main, &t), 0);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint32_t k = 1;
    do {
        pattern_config(&c, k++);
        assert_int_equal(tf_shm_write_config(t.r, &c), 0);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < 300);
    atomic_store(&t.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_true(atomic_load(&t.snapshots) > 0);
    assert_int_equal(atomic_load(&t.torn), 0);
    munmap(t.r, TF_SHM_SIZE);
}

static void writer_killed_mid_update_never_wedges_readers(void **state)
{
    struct tf_shm_config c, got;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    /* A writer died after making seq odd. */
    atomic_store(&r->hdr.seq, 41);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(tf_shm_read_config(r, &got), TF_EBUSY); /* promptly, not forever */
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_true(b.tv_sec - a.tv_sec < 2);
    /* The hot-path fields still work: limits keep applying. */
    assert_int_equal(atomic_load(&r->dev[0].vram_limit), 2 * GiB);
    /* The next writer takes over after the takeover delay and the region heals. */
    c.dev[0].compute_limit_bp = 5000;
    assert_int_equal(tf_shm_write_config(r, &c), 0);
    assert_int_equal(atomic_load(&r->hdr.seq) & 1, 0);
    assert_int_equal(tf_shm_read_config(r, &got), 0);
    assert_int_equal(got.dev[0].compute_limit_bp, 5000);
    munmap(r, TF_SHM_SIZE);
}

/* --- VRAM --------------------------------------------------------------------------------- */

static void allocation_beyond_the_limit_is_refused_smaller_ones_fit(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB + GiB / 2), 0);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB), TF_ENOSPC);
    assert_int_equal(atomic_load(&r->dev[0].oom_count), 1);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB / 2), 0); /* exactly the limit */
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, 1), TF_ENOSPC);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), (int64_t)(2 * GiB));
    /* The other device has its own budget. */
    assert_int_equal(tf_shm_vram_reserve(r, 1, -1, GiB), 0);
    /* Overflowing sums and bad devices are refused, not wrapped. */
    atomic_store(&r->dev[1].flags, TF_SHM_DEV_PRESENT);
    assert_int_equal(tf_shm_vram_reserve(r, 1, -1, UINT64_MAX / 2), TF_ERANGE);
    assert_int_equal(tf_shm_vram_reserve(r, 16, -1, 1), TF_ERANGE);
    munmap(r, TF_SHM_SIZE);
}

static void free_never_takes_usage_below_zero(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), 0);
    assert_true(slot >= 0);
    assert_int_equal(tf_shm_vram_reserve(r, 0, slot, MiB), 0);
    tf_shm_vram_release(r, 0, slot, 5 * MiB);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), 0);
    assert_int_equal(atomic_load(&r->pid[slot].vram_used[0]), 0);
    /* A corrupt negative counter counts as zero and heals (found by fuzz_shm: it used to
     * spin forever). */
    atomic_store(&r->dev[0].vram_used, -12345);
    assert_int_equal(tf_shm_vram_reserve(r, 0, slot, MiB), 0);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), (int64_t)MiB);
    munmap(r, TF_SHM_SIZE);
}

static void memory_info_never_reports_used_above_total(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    uint64_t free, total;
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB + GiB / 2), 0);
    tf_shm_vram_view(r, 0, 70 * GiB, 80 * GiB, &free, &total);
    assert_int_equal(total, 2 * GiB);
    assert_int_equal(free, GiB / 2);
    /* The limit is lowered below what is in use: nothing wraps. */
    assert_int_equal(tf_shm_set_limits(r, 0, TF_SHM_DEV_VRAM_LIMIT, 0, GiB), 0);
    tf_shm_vram_view(r, 0, 70 * GiB, 80 * GiB, &free, &total);
    assert_int_equal(total, GiB);
    assert_int_equal(free, 0);
    /* The physical device is fuller than the limit says: free follows the device. */
    assert_int_equal(tf_shm_set_limits(r, 0, TF_SHM_DEV_VRAM_LIMIT, 0, 40 * GiB), 0);
    tf_shm_vram_view(r, 0, GiB / 4, 80 * GiB, &free, &total);
    assert_int_equal(total, 40 * GiB);
    assert_int_equal(free, GiB / 4);
    /* A limit above the device reports the device. */
    assert_int_equal(tf_shm_set_limits(r, 0, TF_SHM_DEV_VRAM_LIMIT, 0, 200 * GiB), 0);
    tf_shm_vram_view(r, 0, 70 * GiB, 80 * GiB, &free, &total);
    assert_int_equal(total, 80 * GiB);
    /* No limit: the physical figures. */
    assert_int_equal(tf_shm_set_limits(r, 0, 0, 0, 0), 0);
    tf_shm_vram_view(r, 0, 70 * GiB, 80 * GiB, &free, &total);
    assert_int_equal(total, 80 * GiB);
    assert_int_equal(free, 70 * GiB);
    munmap(r, TF_SHM_SIZE);
}

struct res_thread {
    struct tf_shm_region *r;
    int slot;
    _Atomic(int) *violations;
};

static void *reserve_main(void *arg)
{
    struct res_thread *t = arg;
    for (int i = 0; i < 20000; i++) {
        uint64_t sz = (uint64_t)(1 + (i * 7919) % 97) * MiB;
        if (tf_shm_vram_reserve(t->r, 0, t->slot, sz) == 0) {
            int64_t used = atomic_load(&t->r->dev[0].vram_used);
            if (used > (int64_t)(2 * GiB))
                atomic_fetch_add(t->violations, 1);
            tf_shm_vram_release(t->r, 0, t->slot, sz);
        }
    }
    return NULL;
}

static void concurrent_allocations_never_exceed_the_limit(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    _Atomic(int) violations = 0;
    struct res_thread t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct res_thread){
            .r = r, .slot = tf_shm_pid_claim(r, 1000 + i, 0), .violations = &violations};
        assert_int_equal(pthread_create(&th[i], NULL, reserve_main, &t[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&violations), 0);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), 0);
    assert_true(atomic_load(&r->dev[0].vram_peak) <= (int64_t)(2 * GiB));
    munmap(r, TF_SHM_SIZE);
}

static void two_processes_of_one_workload_share_one_limit(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    int pipes[2][2];
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pipe(pipes[k]), 0);
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
            int got = 0;
            for (int i = 0; i < 64; i++)
                got += tf_shm_vram_reserve(r, 0, slot, 64 * MiB) == 0;
            if (write(pipes[k][1], &got, sizeof(got)) != sizeof(got))
                _exit(2);
            _exit(0);
        }
    }
    int total = 0;
    for (int k = 0; k < 2; k++) {
        int got = 0;
        assert_int_equal(read(pipes[k][0], &got, sizeof(got)), sizeof(got));
        total += got;
        int st;
        waitpid(kids[k], &st, 0);
        close(pipes[k][0]);
        close(pipes[k][1]);
    }
    /* 2 GiB / 64 MiB = 32 reservations between both processes, whoever raced first. */
    assert_int_equal(total, 32);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), (int64_t)(2 * GiB));
    /* Both exited without releasing: reaping returns everything. */
    uint64_t ns = tf_proc_pidns(0);
    assert_int_equal(tf_shm_reap(r, tf_proc_self_owner(), 1, tf_proc_alive, &ns), 2);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), 0);
    munmap(r, TF_SHM_SIZE);
}

/* In Kubernetes the engine resolves host_pid, a pid of the host's namespace. A peer in the
 * same container reaping (the limiter does, on slot claim and before refusing memory) must not
 * read that pid in its own namespace, where it names another process or none: a live peer
 * would lose its slot and its VRAM would stop counting against the limit. The engine judges
 * through host_pid. */
static void peers_are_judged_in_their_own_namespace_the_engine_through_host_pid(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test, whatever it asserts */
        int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
        char one = tf_shm_vram_reserve(r, 0, slot, 64 * MiB) == 0;
        if (write(p[1], &one, 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    char one = 0;
    assert_int_equal(read(p[0], &one, 1), 1);
    assert_int_equal(one, 1);
    int slot = -1;
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++)
        if (tf_shm_owner_pid(atomic_load(&r->pid[i].owner)) == (uint32_t)kid)
            slot = i;
    assert_true(slot >= 0);
    uint64_t ns = tf_proc_pidns(0), self = tf_proc_self_owner();
    uint64_t owner = atomic_load(&r->pid[slot].owner);
    /* host_pid naming another process here (pid 1), then none. */
    uint32_t foreign[] = {1, 4194303};
    for (int k = 0; k < 2; k++) {
        atomic_store(&r->pid[slot].host_pid, foreign[k]);
        assert_true(tf_proc_alive(&r->pid[slot], owner, &ns));
        assert_int_equal(tf_shm_reap(r, self, 1, tf_proc_alive, &ns), 0);
        assert_int_equal(atomic_load(&r->dev[0].vram_used), (int64_t)(64 * MiB));
        assert_false(tf_proc_alive_host(&r->pid[slot], owner, &ns));
    }
    /* The engine with the right host_pid: alive while it runs, dead once it is gone. */
    atomic_store(&r->pid[slot].host_pid, (uint32_t)kid);
    assert_true(tf_proc_alive_host(&r->pid[slot], owner, &ns));
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_false(tf_proc_alive_host(&r->pid[slot], owner, &ns));
    assert_false(tf_proc_alive(&r->pid[slot], owner, &ns));
    assert_int_equal(tf_shm_reap(r, self, 1, tf_proc_alive_host, &ns), 1);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), 0);
    close(p[0]);
    close(p[1]);
    munmap(r, TF_SHM_SIZE);
}

static void process_killed_mid_work_gives_its_memory_back(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    uint64_t ns = tf_proc_pidns(0);
    for (int round = 0; round < 5; round++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t kid = fork();
        assert_true(kid >= 0);
        if (kid == 0) {
            int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
            char one = 1;
            if (write(p[1], &one, 1) != 1)
                _exit(2);
            for (;;) { /* reserve and release forever, until SIGKILL lands anywhere */
                if (tf_shm_vram_reserve(r, 1, slot, 3 * MiB) == 0 && (rand() & 1))
                    tf_shm_vram_release(r, 1, slot, 3 * MiB);
            }
        }
        char one;
        assert_int_equal(read(p[0], &one, 1), 1);
        struct timespec ts = {0, (round + 1) * 2000000L};
        nanosleep(&ts, NULL);
        kill(kid, SIGKILL);
        int st;
        waitpid(kid, &st, 0);
        close(p[0]);
        close(p[1]);
        /* The survivor (us) can still reserve: nothing was left locked. */
        assert_int_equal(tf_shm_vram_reserve(r, 0, -1, MiB), 0);
        tf_shm_vram_release(r, 0, -1, MiB);
        tf_shm_reap(r, tf_proc_self_owner(), 1, tf_proc_alive, &ns);
        /* Whatever instant it died at, its bytes come back (at most the one reservation
         * in flight between the device add and the slot add can be lost as slack). */
        int64_t left = atomic_load(&r->dev[1].vram_used);
        assert_true(left == 0 || left == (int64_t)(3 * MiB));
        atomic_store(&r->dev[1].vram_used, 0);
    }
    munmap(r, TF_SHM_SIZE);
}

static bool never_alive(const struct tf_shm_pid *slot, uint64_t owner, void *ctx)
{
    return false;
}

static bool always_alive(const struct tf_shm_pid *slot, uint64_t owner, void *ctx)
{
    return true;
}

static void pid_slots_are_claimed_released_and_reclaimed(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    int slots[TF_SHM_MAX_PIDS];
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++) {
        slots[i] = tf_shm_pid_claim(r, 100 + (uint64_t)i, 7);
        assert_int_equal(slots[i], i);
    }
    assert_int_equal(tf_shm_pid_claim(r, 999, 7), TF_ENOSPC);
    assert_int_equal(tf_shm_vram_reserve(r, 0, slots[3], GiB), 0);
    /* Releasing with the wrong owner does nothing; the right owner frees bytes and slot. */
    tf_shm_pid_release(r, slots[3], 12345);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), (int64_t)GiB);
    tf_shm_pid_release(r, slots[3], 103);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), 0);
    assert_int_equal(tf_shm_pid_claim(r, 999, 7), 3);
    /* Live owners are left alone. */
    assert_int_equal(tf_shm_reap(r, 1, 1, always_alive, NULL), 0);
    /* A reclaimer that died mid-reclaim: its mark is taken over once stale. */
    assert_int_equal(tf_shm_vram_reserve(r, 0, 5, GiB), 0);
    atomic_store(&r->pid[5].owner, TF_SHM_OWNER_RECLAIM | 4242);
    atomic_store(&r->pid[5].reclaim_ns, 1000);
    assert_int_equal(tf_shm_reap(r, 1, 1000 + 10 * UINT64_C(1000000), always_alive, NULL), 0);
    assert_int_equal(tf_shm_reap(r, 1, 1000 + 2000 * UINT64_C(1000000), always_alive, NULL), 1);
    assert_int_equal(atomic_load(&r->pid[5].owner), 0);
    assert_int_equal(atomic_load(&r->dev[0].vram_used), 0);
    /* Everyone dead: every slot comes back. */
    assert_int_equal(tf_shm_reap(r, 1, 1, never_alive, NULL), TF_SHM_MAX_PIDS - 1);
    munmap(r, TF_SHM_SIZE);
}

static void heartbeat_goes_stale_when_the_hypervisor_stops(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    uint64_t s = UINT64_C(1000000000);
    assert_false(tf_shm_heartbeat_stale(r, 100 * s)); /* never written: not stale */
    tf_shm_heartbeat(r, 100 * s, 200, 77);
    assert_false(tf_shm_heartbeat_stale(r, 101 * s));
    assert_false(tf_shm_heartbeat_stale(r, 102 * s)); /* 5 x 200 ms < 2 s minimum */
    assert_true(tf_shm_heartbeat_stale(r, 102 * s + 1000));
    tf_shm_heartbeat(r, 200 * s, 1000, 77);
    assert_false(tf_shm_heartbeat_stale(r, 204 * s));
    assert_true(tf_shm_heartbeat_stale(r, 206 * s));
    munmap(r, TF_SHM_SIZE);
}

/* The attack: an app rewrites its own region (its limit raised, its usage zeroed, the header
 * garbled so a restarted hypervisor rejects it). The hypervisor used to replace it with an
 * empty region the app never saw. Now it is repaired in place from the recorded limits, and
 * the reservations the app's processes still hold count again. */
static void a_region_an_app_rewrote_is_repaired_in_place(void **state)
{
    char path[300], err[256] = "";
    path_of(path, sizeof(path), "repaired-shm");
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_map hv, app;
    assert_int_equal(tf_shm_create(path, &c, 0600, &hv, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_open(path, &app, err, sizeof(err)), 0);
    uint64_t owner = tf_shm_owner_id(4242, 77);
    int slot = tf_shm_pid_claim(app.r, owner, 0);
    assert_true(slot >= 0);
    assert_int_equal(tf_shm_vram_reserve(app.r, 0, slot, 1536 * MiB), 0);
    tf_shm_unmap(&hv); /* the hypervisor is gone */
    /* The app's rewrite. */
    atomic_store(&app.r->dev[0].vram_limit, 1024 * GiB);
    atomic_store(&app.r->dev[0].vram_used, 0);
    atomic_store(&app.r->pid[9].vram_used[0], -5 * (int64_t)GiB);
    app.r->hdr.magic = 0x4141414141414141ull;
    assert_int_equal(tf_shm_open(path, &hv, err, sizeof(err)), TF_EPROTO);
    /* The restarted hypervisor repairs it from what it recorded. */
    assert_int_equal(tf_shm_repair(path, &c, &hv, err, sizeof(err)), 0);
    /* The app's own mapping sees the recorded limit and its 1.5 GiB still counted. */
    assert_int_equal(atomic_load(&app.r->dev[0].vram_limit), 2 * GiB);
    assert_int_equal(atomic_load(&app.r->dev[0].vram_used), (int64_t)(1536 * MiB));
    assert_int_equal(tf_shm_vram_reserve(app.r, 0, slot, 1024 * MiB), TF_ENOSPC);
    assert_int_equal(tf_shm_vram_reserve(app.r, 0, slot, 512 * MiB), 0);
    assert_int_equal(atomic_load(&app.r->pid[slot].owner), owner);
    assert_int_equal(tf_shm_validate(app.r, TF_SHM_SIZE, err, sizeof(err)), 0);
    /* A truncated file is sized back; no file at all is TF_ENOENT (then it is created). */
    assert_int_equal(truncate(path, 100), 0);
    tf_shm_unmap(&hv);
    assert_int_equal(tf_shm_repair(path, &c, &hv, err, sizeof(err)), 0);
    tf_shm_unmap(&hv);
    tf_shm_unmap(&app);
    unlink(path);
    assert_int_equal(tf_shm_repair(path, &c, &hv, err, sizeof(err)), TF_ENOENT);
}

static void gpu_uuids_round_trip_in_nvml_form(void **state)
{
    uint8_t u[16], v[16];
    for (int i = 0; i < 16; i++)
        u[i] = (uint8_t)(i * 17);
    char buf[64];
    tf_shm_uuid_format(u, buf, sizeof(buf));
    assert_string_equal(buf, "GPU-00112233-4455-6677-8899-aabbccddeeff");
    assert_int_equal(tf_shm_uuid_parse(buf, v), 0);
    assert_memory_equal(u, v, 16);
    assert_int_equal(tf_shm_uuid_parse("00112233445566778899AABBCCDDEEFF", v), 0);
    assert_memory_equal(u, v, 16);
    assert_int_equal(tf_shm_uuid_parse("GPU-0011", v), TF_EINVAL);
    assert_int_equal(tf_shm_uuid_parse("GPU-00112233-4455-6677-8899-aabbccddeefg", v), TF_EINVAL);
    assert_int_equal(tf_shm_uuid_parse("GPU-00112233-4455-6677-8899-aabbccddeeff00", v), TF_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hypervisor_creates_region_and_limiter_opens_it),
        cmocka_unit_test(region_bytes_sit_at_the_documented_offsets),
        cmocka_unit_test(corrupt_regions_are_rejected_naming_the_field),
        cmocka_unit_test(limiter_rejects_corrupt_or_missing_region_files),
        cmocka_unit_test(autoscaler_changes_limits_live),
        cmocka_unit_test(readers_never_see_a_half_written_config),
        cmocka_unit_test(writer_killed_mid_update_never_wedges_readers),
        cmocka_unit_test(allocation_beyond_the_limit_is_refused_smaller_ones_fit),
        cmocka_unit_test(free_never_takes_usage_below_zero),
        cmocka_unit_test(memory_info_never_reports_used_above_total),
        cmocka_unit_test(concurrent_allocations_never_exceed_the_limit),
        cmocka_unit_test(two_processes_of_one_workload_share_one_limit),
        cmocka_unit_test(peers_are_judged_in_their_own_namespace_the_engine_through_host_pid),
        cmocka_unit_test(process_killed_mid_work_gives_its_memory_back),
        cmocka_unit_test(pid_slots_are_claimed_released_and_reclaimed),
        cmocka_unit_test(heartbeat_goes_stale_when_the_hypervisor_stops),
        cmocka_unit_test(a_region_an_app_rewrote_is_repaired_in_place),
        cmocka_unit_test(gpu_uuids_round_trip_in_nvml_form),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
