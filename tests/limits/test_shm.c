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

#include <errno.h>

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
#include <sys/stat.h>
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

/* A region in anonymous shared memory (forked children share it); free_region releases it.
 * (The map's first member is the region.) */
static struct tf_shm_region *anon_region(const struct tf_shm_config *c)
{
    struct tf_shm_map *m = malloc(sizeof(*m));
    assert_non_null(m);
    assert_int_equal(tf_shm_anon(c, m), 0);
    return &m->r;
}

static void free_region(struct tf_shm_region *r)
{
    struct tf_shm_map *m = (struct tf_shm_map *)r;
    tf_shm_unmap(m);
    free(m);
}

static const struct tf_shm_perms perms = {.lmode = 0644, .umode = 0600, .uid = -1, .gid = -1};

static void hypervisor_creates_region_and_limiter_opens_it(void **state)
{
    char path[300], err[256] = "";
    path_of(path, sizeof(path), "shm");
    struct tf_shm_config c, got;
    two_gpu_config(&c);
    struct tf_shm_map w, r;
    assert_int_equal(tf_shm_create(path, &c, &perms, &w, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &r, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_read_config(&r.r, &got), 0);
    assert_string_equal(got.name, "default/pod-a");
    assert_int_equal(got.ndev, 2);
    assert_memory_equal(got.dev[1].uuid, c.dev[1].uuid, 16);
    assert_int_equal(got.dev[1].compute_limit_bp, 3000);
    assert_int_equal(got.dev[1].vram_limit, 2 * GiB);
    /* Buckets start full at the feed-forward rate for the limit: 30 % of a device. */
    assert_int_equal(atomic_load(&r.r.lim->dev[0].bucket.rate), 300000000u);
    assert_int_equal(atomic_load(&r.r.lim->dev[0].bucket.capacity), 6000000);
    /* The creator cannot clobber a region that processes may already map. */
    struct tf_shm_map again;
    assert_int_equal(tf_shm_create(path, &c, &perms, &again, err, sizeof(err)), TF_EEXIST);
    assert_non_null(strstr(err, "already exists"));
    tf_shm_unmap(&w);
    tf_shm_unmap(&r);
}

static void region_bytes_sit_at_the_documented_offsets(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    const unsigned char *b = (const unsigned char *)r->lim, *u = (const unsigned char *)r->use;
    assert_memory_equal(b, "TFLIMSHM", 8);
    assert_memory_equal(u, "TFUSGSHM", 8);
    uint32_t v;
    memcpy(&v, b + 8, 4);
    assert_int_equal(v, 2);
    memcpy(&v, u + 8, 4);
    assert_int_equal(v, 2);
    uint64_t size;
    memcpy(&size, b + 16, 8);
    assert_int_equal(size, 3328);
    memcpy(&size, u + 16, 8);
    assert_int_equal(size, 22592);
    /* Both parts carry the region's instance. */
    assert_memory_equal(b + 72, u + 32, 8);
    /* Limits device 1 starts at 256 + 192: uuid bytes, then flags at +16, limit bp at +20,
     * VRAM limit at +24, the bucket's rate at +64. */
    assert_int_equal(b[448], 0x10);
    assert_int_equal(b[448 + 15], 0x1f);
    memcpy(&v, b + 448 + 20, 4);
    assert_int_equal(v, 3000);
    uint64_t q;
    memcpy(&q, b + 448 + 24, 8);
    assert_int_equal(q, 2 * GiB);
    memcpy(&q, b + 448 + 64, 8);
    assert_int_equal(q, 300000000u);
    assert_string_equal((const char *)b + 80, "default/pod-a");
    /* Usage device 1 starts at 64 + 128: the bucket's tokens (full: 6 ms at 30 %), then its
     * reservation at +64; PID slots from 2112. */
    int64_t t;
    memcpy(&t, u + 192, 8);
    assert_int_equal(t, 6000000);
    assert_int_equal(tf_shm_vram_reserve(r, 1, 2, 5 * MiB), 0);
    memcpy(&t, u + 192 + 64, 8);
    assert_int_equal(t, 5 * MiB);
    memcpy(&t, u + 2112 + 2 * 320 + 32 + 8, 8); /* slot 2's vram_used[1] */
    assert_int_equal(t, 5 * MiB);
    assert_int_equal(tf_shm_validate_limits(b, TF_SHM_LIMITS_SIZE, NULL, 0), 0);
    assert_int_equal(tf_shm_validate_usage(u, TF_SHM_USAGE_SIZE, NULL, NULL, 0), 0);
    free_region(r);
}
static void expect_rejected(const unsigned char *buf, size_t len, const char *needle)
{
    char err[256] = "";
    assert_int_equal(tf_shm_validate_limits(buf, len, err, sizeof(err)), TF_EPROTO);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" does not name \"%s\"", err, needle);
}

static void expect_usage_rejected(const unsigned char *buf, size_t len, const char *needle)
{
    char err[256] = "";
    assert_int_equal(tf_shm_validate_usage(buf, len, NULL, err, sizeof(err)), TF_EPROTO);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" does not name \"%s\"", err, needle);
}

static void corrupt_regions_are_rejected_naming_the_field(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    const size_t L = TF_SHM_LIMITS_SIZE, U = TF_SHM_USAGE_SIZE;
    unsigned char *good = malloc(U), *bad = malloc(U);
    memcpy(good, r->lim, L);

    expect_rejected(good, 100, "shorter than the 256-byte header");
    expect_rejected(good, L - 1, "file is 3327 bytes");
    memcpy(bad, good, L);
    memcpy(bad, "GARBAGE!", 8);
    expect_rejected(bad, L, "bad magic");
    memset(bad, 0, 8);
    expect_rejected(bad, L, "not initialised");
    memcpy(bad, "TFUSGSHM", 8);
    expect_rejected(bad, L, "this is a region's usage part, not its limits part");
    memcpy(bad, good, L);
    bad[8] = 3;
    expect_rejected(bad, L, "version 3");
    bad[8] = 1; /* the one-file layout of older releases */
    expect_rejected(bad, L, "version 1, this build supports version 2 (a one-file region");
    memcpy(bad, good, L);
    bad[13] = 0;
    expect_rejected(bad, L, "header_size");
    memcpy(bad, good, L);
    bad[17] = 1;
    expect_rejected(bad, L, "size field");
    memcpy(bad, good, L);
    bad[24] = 8;
    expect_rejected(bad, L, "max_devices");
    memcpy(bad, good, L);
    bad[40] = 17;
    expect_rejected(bad, L, "ndev is 17");
    memcpy(bad, good, L);
    bad[44] = 0x80;
    expect_rejected(bad, L, "header flags");
    memcpy(bad, good, L);
    uint32_t bp = 20000;
    memcpy(bad + 448 + 20, &bp, 4);
    expect_rejected(bad, L, "device 1: compute_limit_bp 20000");
    memcpy(bad, good, L);
    bad[256 + 16] = 0x41;
    expect_rejected(bad, L, "device 0: flags 0x41");
    memcpy(bad, good, L);
    bad[256 + 16] = 0;
    expect_rejected(bad, L, "not marked present");
    memcpy(bad, good, L);
    memset(bad + 80, 'x', 64);
    expect_rejected(bad, L, "name is not NUL-terminated");

    /* The usage part. */
    memcpy(good, r->use, U);
    expect_usage_rejected(good, 10, "shorter than the 64-byte header");
    expect_usage_rejected(good, U - 1, "file is 22591 bytes");
    memcpy(bad, good, U);
    memcpy(bad, "TFLIMSHM", 8);
    expect_usage_rejected(bad, U, "this is a region's limits part, not its usage part");
    memcpy(bad, good, U);
    bad[8] = 1;
    expect_usage_rejected(bad, U, "version 1");
    memcpy(bad, good, U);
    bad[28] = 65;
    expect_usage_rejected(bad, U, "max_pids");
    free(good);
    free(bad);
    free_region(r);
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
    char path[300], upath[320], rw[300], err[512] = "";
    struct tf_shm_map m;
    path_of(path, sizeof(path), "missing");
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_ENOENT);
    assert_non_null(strstr(err, "(the limit region's limits part)"));

    path_of(path, sizeof(path), "short");
    write_file(path, "TFLIMSHM", 8);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "shorter than the 256-byte header"));

    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    path_of(rw, sizeof(rw), "rw");
    assert_true(mkdir(rw, 0755) == 0 || errno == EEXIST);
    path_of(path, sizeof(path), "oldversion");
    unsigned char *buf = malloc(TF_SHM_USAGE_SIZE);
    memcpy(buf, r->lim, TF_SHM_LIMITS_SIZE);
    buf[8] = 7;
    write_file(path, buf, TF_SHM_LIMITS_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "rejected the limit region's limits part: version 7"));

    path_of(path, sizeof(path), "badlimit");
    memcpy(buf, r->lim, TF_SHM_LIMITS_SIZE);
    uint32_t bp = 0;
    memcpy(buf + 256 + 20, &bp, 4);
    write_file(path, buf, TF_SHM_LIMITS_SIZE);
    snprintf(upath, sizeof(upath), "%s/badlimit", rw);
    write_file(upath, r->use, TF_SHM_USAGE_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "compute_limit_bp 0 is outside 1..10000"));

    path_of(path, sizeof(path), "truncated");
    write_file(path, r->lim, TF_SHM_LIMITS_SIZE / 2);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "file is 1664 bytes"));

    /* A good limits part without its usage part (not there yet), with a broken one, or with
     * the usage part of another region. */
    path_of(path, sizeof(path), "nousage");
    write_file(path, r->lim, TF_SHM_LIMITS_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_ENOENT);
    assert_non_null(strstr(err, "(the limit region's usage part)"));
    snprintf(upath, sizeof(upath), "%s/nousage", rw);
    memcpy(buf, r->use, TF_SHM_USAGE_SIZE);
    buf[12] = 0;
    write_file(upath, buf, TF_SHM_USAGE_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "rejected the limit region's usage part: header_size 0"));
    memcpy(buf, r->use, TF_SHM_USAGE_SIZE);
    buf[32] ^= 1; /* another instance */
    write_file(upath, buf, TF_SHM_USAGE_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "belongs to another region"));
    write_file(upath, r->use, TF_SHM_USAGE_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), 0);
    tf_shm_unmap(&m);
    /* A region file of the one-file layout (version 1) says what it is. */
    path_of(path, sizeof(path), "v1");
    memset(buf, 0, TF_SHM_USAGE_SIZE);
    memcpy(buf, "TFLIMSHM", 8);
    buf[8] = 1;
    write_file(path, buf, TF_SHM_USAGE_SIZE);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &m, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "version 1, this build supports version 2 (a one-file region"));
    free(buf);
    free_region(r);
}
static void autoscaler_changes_limits_live(void **state)
{
    char path[300], err[256] = "";
    path_of(path, sizeof(path), "live");
    struct tf_shm_config c, got;
    two_gpu_config(&c);
    struct tf_shm_map w, r;
    assert_int_equal(tf_shm_create(path, &c, &perms, &w, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &r, err, sizeof(err)), 0);
    assert_int_equal(
        tf_shm_set_limits(&w.r, 1, TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT, 6000, 4 * GiB),
        0);
    /* The other mapping (a running limiter) sees it at once, single fields and snapshot. */
    assert_int_equal(atomic_load(&r.r.lim->dev[1].compute_limit_bp), 6000);
    assert_int_equal(atomic_load(&r.r.lim->dev[1].vram_limit), 4 * GiB);
    assert_int_equal(atomic_load(&r.r.lim->dev[1].bucket.rate), 600000000u);
    assert_int_equal(tf_shm_read_config(&r.r, &got), 0);
    assert_int_equal(got.dev[1].compute_limit_bp, 6000);
    /* Dropping the compute limit, keeping VRAM. */
    assert_int_equal(tf_shm_set_limits(&w.r, 1, TF_SHM_DEV_VRAM_LIMIT, 0, 4 * GiB), 0);
    assert_int_equal(atomic_load(&r.r.lim->dev[1].flags),
                     TF_SHM_DEV_PRESENT | TF_SHM_DEV_VRAM_LIMIT);
    /* Bad values change nothing. */
    assert_int_equal(tf_shm_set_limits(&w.r, 1, TF_SHM_DEV_COMPUTE_LIMIT, 10001, 0), TF_EINVAL);
    assert_int_equal(tf_shm_set_limits(&w.r, 2, TF_SHM_DEV_VRAM_LIMIT, 0, GiB), TF_ERANGE);
    assert_int_equal(atomic_load(&r.r.lim->dev[1].vram_limit), 4 * GiB);
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
    free_region(t.r);
}

static void writer_killed_mid_update_never_wedges_readers(void **state)
{
    struct tf_shm_config c, got;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    /* A writer died after making seq odd. */
    atomic_store(&r->lim->hdr.seq, 41);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(tf_shm_read_config(r, &got), TF_EBUSY); /* promptly, not forever */
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_true(b.tv_sec - a.tv_sec < 2);
    /* The hot-path fields still work: limits keep applying. */
    assert_int_equal(atomic_load(&r->lim->dev[0].vram_limit), 2 * GiB);
    /* The next writer takes over after the takeover delay and the region heals. */
    c.dev[0].compute_limit_bp = 5000;
    assert_int_equal(tf_shm_write_config(r, &c), 0);
    assert_int_equal(atomic_load(&r->lim->hdr.seq) & 1, 0);
    assert_int_equal(tf_shm_read_config(r, &got), 0);
    assert_int_equal(got.dev[0].compute_limit_bp, 5000);
    free_region(r);
}

/* --- VRAM --------------------------------------------------------------------------------- */

static void allocation_beyond_the_limit_is_refused_smaller_ones_fit(void **state)
{
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_region *r = anon_region(&c);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB + GiB / 2), 0);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB), TF_ENOSPC);
    assert_int_equal(atomic_load(&r->use->dev[0].oom_count), 1);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, GiB / 2), 0); /* exactly the limit */
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, 1), TF_ENOSPC);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)(2 * GiB));
    /* The other device has its own budget. */
    assert_int_equal(tf_shm_vram_reserve(r, 1, -1, GiB), 0);
    /* Overflowing sums and bad devices are refused, not wrapped. */
    atomic_store(&r->lim->dev[1].flags, TF_SHM_DEV_PRESENT);
    assert_int_equal(tf_shm_vram_reserve(r, 1, -1, UINT64_MAX / 2), TF_ERANGE);
    assert_int_equal(tf_shm_vram_reserve(r, 16, -1, 1), TF_ERANGE);
    free_region(r);
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
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    assert_int_equal(atomic_load(&r->use->pid[slot].vram_used[0]), 0);
    /* A corrupt negative counter counts as zero and heals (found by fuzz_shm: it used to
     * spin forever). */
    atomic_store(&r->use->dev[0].vram_used, -12345);
    assert_int_equal(tf_shm_vram_reserve(r, 0, slot, MiB), 0);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)MiB);
    free_region(r);
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
    free_region(r);
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
            int64_t used = atomic_load(&t->r->use->dev[0].vram_used);
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
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    assert_true(atomic_load(&r->use->dev[0].vram_peak) <= (int64_t)(2 * GiB));
    free_region(r);
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
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)(2 * GiB));
    /* Both exited without releasing: reaping returns everything. */
    uint64_t ns = tf_proc_pidns(0);
    assert_int_equal(tf_shm_reap(r, tf_proc_self_owner(), 1, tf_proc_alive, &ns), 2);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    free_region(r);
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
        if (tf_shm_owner_pid(atomic_load(&r->use->pid[i].owner)) == (uint32_t)kid)
            slot = i;
    assert_true(slot >= 0);
    uint64_t ns = tf_proc_pidns(0), self = tf_proc_self_owner();
    uint64_t owner = atomic_load(&r->use->pid[slot].owner);
    /* host_pid naming another process here (pid 1), then none. */
    uint32_t foreign[] = {1, 4194303};
    for (int k = 0; k < 2; k++) {
        atomic_store(&r->use->pid[slot].host_pid, foreign[k]);
        assert_true(tf_proc_alive(&r->use->pid[slot], owner, &ns));
        assert_int_equal(tf_shm_reap(r, self, 1, tf_proc_alive, &ns), 0);
        assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)(64 * MiB));
        assert_false(tf_proc_alive_host(&r->use->pid[slot], owner, &ns));
    }
    /* The engine with the right host_pid: alive while it runs, dead once it is gone. */
    atomic_store(&r->use->pid[slot].host_pid, (uint32_t)kid);
    assert_true(tf_proc_alive_host(&r->use->pid[slot], owner, &ns));
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_false(tf_proc_alive_host(&r->use->pid[slot], owner, &ns));
    assert_false(tf_proc_alive(&r->use->pid[slot], owner, &ns));
    assert_int_equal(tf_shm_reap(r, self, 1, tf_proc_alive_host, &ns), 1);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    close(p[0]);
    close(p[1]);
    free_region(r);
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
        int64_t left = atomic_load(&r->use->dev[1].vram_used);
        assert_true(left == 0 || left == (int64_t)(3 * MiB));
        atomic_store(&r->use->dev[1].vram_used, 0);
    }
    free_region(r);
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
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)GiB);
    tf_shm_pid_release(r, slots[3], 103);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    assert_int_equal(tf_shm_pid_claim(r, 999, 7), 3);
    /* Live owners are left alone. */
    assert_int_equal(tf_shm_reap(r, 1, 1, always_alive, NULL), 0);
    /* A reclaimer that died mid-reclaim: its mark is taken over once stale. */
    assert_int_equal(tf_shm_vram_reserve(r, 0, 5, GiB), 0);
    atomic_store(&r->use->pid[5].owner, TF_SHM_OWNER_RECLAIM | 4242);
    atomic_store(&r->use->pid[5].reclaim_ns, 1000);
    assert_int_equal(tf_shm_reap(r, 1, 1000 + 10 * UINT64_C(1000000), always_alive, NULL), 0);
    assert_int_equal(tf_shm_reap(r, 1, 1000 + 2000 * UINT64_C(1000000), always_alive, NULL), 1);
    assert_int_equal(atomic_load(&r->use->pid[5].owner), 0);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    /* Everyone dead: every slot comes back. */
    assert_int_equal(tf_shm_reap(r, 1, 1, never_alive, NULL), TF_SHM_MAX_PIDS - 1);
    free_region(r);
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
    free_region(r);
}

/* The attack: an app garbles its usage part (its reservations zeroed or made negative, the
 * header broken so that a restarted hypervisor rejects the region). The hypervisor used to
 * replace a rejected region with an empty one the app never saw. It is repaired in place: the
 * limits part from the recorded limits, the usage part's header rewritten, and the
 * reservations the app's processes still hold in their PID slots count again. */
static void a_region_an_app_rewrote_is_repaired_in_place(void **state)
{
    char path[300], err[512] = "";
    path_of(path, sizeof(path), "repaired-shm");
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_map hv, app;
    assert_int_equal(tf_shm_create(path, &c, &perms, &hv, err, sizeof(err)), 0);
    assert_int_equal(tf_shm_open(path, TF_SHM_APP, &app, err, sizeof(err)), 0);
    uint64_t owner = tf_shm_owner_id(4242, 77);
    int slot = tf_shm_pid_claim(&app.r, owner, 0);
    assert_true(slot >= 0);
    assert_int_equal(tf_shm_vram_reserve(&app.r, 0, slot, 1536 * MiB), 0);
    tf_shm_unmap(&hv); /* the hypervisor is gone */
    /* The app's rewrite of what it can write. */
    atomic_store(&app.r.use->dev[0].vram_used, 0);
    atomic_store(&app.r.use->pid[9].vram_used[0], -5 * (int64_t)GiB);
    app.r.use->hdr.magic = 0x4141414141414141ull;
    assert_int_equal(tf_shm_open(path, TF_SHM_ENGINE, &hv, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "usage part: bad magic"));
    /* The restarted hypervisor repairs it from what it recorded. */
    assert_int_equal(tf_shm_repair(path, &c, &perms, &hv, err, sizeof(err)), 0);
    /* The app's own mappings see the recorded limit and its 1.5 GiB still counted. */
    assert_int_equal(atomic_load(&app.r.lim->dev[0].vram_limit), 2 * GiB);
    assert_int_equal(atomic_load(&app.r.use->dev[0].vram_used), (int64_t)(1536 * MiB));
    assert_int_equal(tf_shm_vram_reserve(&app.r, 0, slot, 1024 * MiB), TF_ENOSPC);
    assert_int_equal(tf_shm_vram_reserve(&app.r, 0, slot, 512 * MiB), 0);
    assert_int_equal(atomic_load(&app.r.use->pid[slot].owner), owner);
    assert_int_equal(tf_shm_validate_usage(app.r.use, TF_SHM_USAGE_SIZE, NULL, err, sizeof(err)),
                     0);
    tf_shm_unmap(&hv);
    assert_int_equal(tf_shm_open(path, TF_SHM_ENGINE, &hv, err, sizeof(err)), 0);
    tf_shm_unmap(&hv);
    /* A truncated part is sized back; a usage part replaced by a symlink (planted by whoever
     * may write rw/) is replaced, never followed; no limits part at all is TF_ENOENT (then
     * the region is created). */
    assert_int_equal(truncate(path, 100), 0);
    assert_int_equal(tf_shm_repair(path, &c, &perms, &hv, err, sizeof(err)), 0);
    tf_shm_unmap(&hv);
    char upath[400], victim[300];
    assert_true(tf_shm_usage_path(path, upath, sizeof(upath)));
    path_of(victim, sizeof(victim), "victim");
    write_file(victim, "precious", 8);
    assert_int_equal(unlink(upath), 0);
    assert_int_equal(symlink(victim, upath), 0);
    assert_int_equal(tf_shm_open(path, TF_SHM_ENGINE, &hv, err, sizeof(err)), TF_EIO);
    assert_int_equal(tf_shm_repair(path, &c, &perms, &hv, err, sizeof(err)), 0);
    tf_shm_unmap(&hv);
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_size, 8);
    assert_int_equal(lstat(upath, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    tf_shm_unmap(&app);
    unlink(path);
    assert_int_equal(tf_shm_repair(path, &c, &perms, &hv, err, sizeof(err)), TF_ENOENT);
}

/* The attack: an app (or a child that dropped LD_PRELOAD, or anything the workload's user
 * runs) raises its own limits by writing the region's limits part: through the limiter's
 * mapping, by making that mapping writable, or by opening the file for writing. Each fails:
 * the limiter maps the limits part read-only from a read-only descriptor, and the file belongs
 * to the hypervisor's user. Only the usage part is the workload's to write. */
static void an_app_cannot_write_its_limits_part(void **state)
{
    char path[300], err[512] = "";
    path_of(path, sizeof(path), "attacked");
    struct tf_shm_config c;
    two_gpu_config(&c);
    struct tf_shm_perms owned = perms;
    bool root = geteuid() == 0;
    if (root)
        owned.uid = owned.gid = 65534; /* the workload's user */
    assert_int_equal(chmod(dir, 0755), 0);
    struct tf_shm_map hv;
    assert_int_equal(tf_shm_create(path, &c, &owned, &hv, err, sizeof(err)), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        if (root && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(10);
        struct tf_shm_map app;
        if (tf_shm_open(path, TF_SHM_APP, &app, err, sizeof(err)) != 0)
            _exit(11);
        /* Its own usage: fine. */
        if (tf_shm_vram_reserve(&app.r, 0, -1, GiB) != 0)
            _exit(12);
        /* The limiter's mapping cannot be made writable (EACCES: a read-only descriptor). */
        long pg = sysconf(_SC_PAGESIZE);
        if (mprotect(app.base[0], (size_t)pg, PROT_READ | PROT_WRITE) == 0 || errno != EACCES)
            _exit(13);
        /* Nor can the file be opened for writing by the workload's user. */
        if (root && (open(path, O_RDWR) >= 0 || errno != EACCES))
            _exit(14);
        if (root && (chmod(path, 0666) == 0 || errno != EPERM))
            _exit(15);
        /* Nor replaced: the directory is not the workload's. */
        char fake[320];
        snprintf(fake, sizeof(fake), "%s.fake", path);
        if (root && (rename(fake, path) == 0 || (errno != EACCES && errno != ENOENT)))
            _exit(16);
        if (root && (unlink(path) == 0 || errno != EACCES))
            _exit(17);
        /* A store through the mapping faults. */
        pid_t g = fork();
        if (g == 0) {
            signal(SIGSEGV, SIG_DFL);
            atomic_store(&app.r.lim->dev[0].vram_limit, 1024 * GiB);
            _exit(0);
        }
        int gst;
        waitpid(g, &gst, 0);
        if (WIFEXITED(gst) && WEXITSTATUS(gst) == 0) /* (under ASan: its report, exit 1) */
            _exit(18);
        _exit(0);
    }
    int st;
    waitpid(kid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* The limits are the engine's, the reservation was made. */
    assert_int_equal(atomic_load(&hv.r.lim->dev[0].vram_limit), 2 * GiB);
    assert_int_equal(atomic_load(&hv.r.use->dev[0].vram_used), (int64_t)GiB);
    struct stat fs;
    assert_int_equal(stat(path, &fs), 0);
    assert_int_equal(fs.st_mode & 0777, 0644);
    char upath[400];
    assert_true(tf_shm_usage_path(path, upath, sizeof(upath)));
    assert_int_equal(stat(upath, &fs), 0);
    assert_int_equal(fs.st_mode & 0777, 0600);
    if (root)
        assert_int_equal(fs.st_uid, 65534);
    tf_shm_unmap(&hv);
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
        cmocka_unit_test(an_app_cannot_write_its_limits_part),
        cmocka_unit_test(gpu_uuids_round_trip_in_nvml_form),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
