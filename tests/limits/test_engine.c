/* SPDX-License-Identifier: Apache-2.0
 *
 * The limit engine with a scripted usage source: GPU time attributed to the right workload
 * by PID (also across PID namespaces), launches counted across a workload's processes, the
 * true-up debit, live limit changes, dead processes reclaimed, heartbeat, and the warning
 * when a workload's processes cannot be found in the usage data (the HAMi-core failure
 * where enforcement silently stopped), and the engine on a thread of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "limits/bucket.h"
#include "limits/engine.h"
#include "limits/proc.h"
#include "limits/shm.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MS UINT64_C(1000000)
#define GiB (UINT64_C(1) << 30)

/* Scripted source: every sample reports these per-PID figures for a 100 ms window. */
struct script {
    int calls;
    int nproc;
    struct tf_usage_proc proc[4];
    bool no_busy;
};

static int script_sample(void *ctx, const uint8_t uuid[16], unsigned ordinal, uint64_t now_ns,
                         struct tf_usage_dev *out)
{
    struct script *s = ctx;
    memset(out, 0, sizeof(*out));
    s->calls++;
    out->window_ns = 100 * MS;
    out->util_bp = 9000;
    out->have_busy = !s->no_busy;
    out->have_mem = true;
    out->nproc = s->nproc;
    memcpy(out->proc, s->proc, sizeof(s->proc));
    return 0;
}

static struct tf_shm_region *region(uint32_t bp)
{
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "ns/pod");
    c.ndev = 1;
    c.dev[0].flags =
        TF_SHM_DEV_PRESENT | TF_SHM_DEV_VRAM_LIMIT | (bp ? TF_SHM_DEV_COMPUTE_LIMIT : 0);
    c.dev[0].compute_limit_bp = bp;
    c.dev[0].vram_limit = 4 * GiB;
    struct tf_shm_map *m = malloc(sizeof(*m)); /* (its first member is the region) */
    assert_non_null(m);
    assert_int_equal(tf_shm_anon(&c, m), 0);
    return &m->r;
}

static void free_region(struct tf_shm_region *r)
{
    tf_shm_unmap((struct tf_shm_map *)r);
    free(r);
}

/* What a launcher does: counts N launches in SLOT and takes their TOKENS from the bucket. */
static void launch(struct tf_shm_region *r, int slot, uint64_t n, int64_t tokens)
{
    atomic_fetch_add(&r->use->pid[slot].launches[0], n);
    tf_bucket_adjust(&r->use->dev[0].bucket, &r->lim->dev[0].bucket, -tokens);
}

static struct tf_engine *engine(struct script *s, uint64_t pidns)
{
    struct tf_engine_opts o = {
        .period_ms = 100,
        .usage = {.sample = script_sample, .ctx = s},
        .self_owner = tf_proc_self_owner(),
        .pidns = pidns,
    };
    struct tf_engine *e = tf_engine_new(&o);
    assert_non_null(e);
    return e;
}

static void gpu_time_is_attributed_to_the_workload_by_pid(void **state)
{
    struct tf_shm_region *r = region(3000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    assert_true(slot >= 0);
    struct script s = {.nproc = 2,
                       .proc = {{.pid = (uint32_t)getpid(), .busy_ns = 30 * MS, .mem = GiB},
                                {.pid = 1, .busy_ns = 60 * MS, .mem = 2 * GiB}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    int id = tf_engine_add(e, r, "ns/pod");
    assert_true(id >= 0);
    launch(r, slot, 60, 30 * MS); /* 60 launches of 500 us measured */
    atomic_fetch_add(&r->use->dev[0].throttle_count, 1);
    /* (the engine credits the bucket up to its step: done here, the tokens show its
     * true-up alone) */
    tf_bucket_refill(&r->use->dev[0].bucket, &r->lim->dev[0].bucket, 1000 * MS);
    int64_t before = atomic_load(&r->use->dev[0].bucket.tokens);
    tf_engine_step(e, 1000 * MS);
    struct tf_engine_dev_stats st;
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_true(st.valid);
    assert_int_equal(st.busy_ns, 30 * MS); /* pid 1 belongs to someone else */
    assert_int_equal(st.launches, 60);
    assert_int_equal(st.charged, (int64_t)(30 * MS));
    assert_int_equal(st.share_bp, 3000);
    assert_true(st.throttled);
    assert_int_equal(atomic_load(&r->use->pid[slot].host_pid), (uint32_t)getpid());
    assert_int_equal(atomic_load(&r->lim->dev[0].vram_observed), GiB);
    assert_int_equal(atomic_load(&r->lim->dev[0].util_bp), 9000);
    assert_int_equal(atomic_load(&r->lim->dev[0].share_bp), 3000);
    /* The launches took 30 ms of tokens: exactly the GPU time, no true-up. */
    assert_int_equal(atomic_load(&r->use->dev[0].bucket.tokens), before);
    /* The heartbeat says the engine is alive. */
    assert_int_equal(atomic_load(&r->lim->hdr.heartbeat_ns), 1000 * MS);
    assert_int_equal(atomic_load(&r->lim->hdr.heartbeat_period_ms), 100);
    assert_false(tf_shm_heartbeat_stale(r, 1500 * MS));
    /* Next window: launches were under-priced (10 launches took 5 ms, the GPU says 30 ms):
     * the 25 ms missing are debited, and the engine's own debit is not mistaken for
     * consumption in the window after. */
    launch(r, slot, 10, 5 * MS);
    tf_bucket_refill(&r->use->dev[0].bucket, &r->lim->dev[0].bucket, 1100 * MS);
    before = atomic_load(&r->use->dev[0].bucket.tokens);
    tf_engine_step(e, 1100 * MS);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.launches, 10);
    assert_int_equal(st.charged, (int64_t)(5 * MS));
    assert_int_equal(atomic_load(&r->use->dev[0].bucket.tokens), before - (int64_t)(25 * MS));
    launch(r, slot, 60, 30 * MS);
    tf_engine_step(e, 1200 * MS);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.charged, (int64_t)(30 * MS));
    tf_engine_destroy(e);
    free_region(r);
}

static void process_in_a_container_pid_namespace_is_found(void **state)
{
    /* Pretend the engine lives in another PID namespace (a different inode): the slot's
     * PID means nothing to it, and the process must be found among the usage source's
     * PIDs by namespace inode + NSpid + start time. */
    struct tf_shm_region *r = region(3000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    struct script s = {
        .nproc = 2,
        .proc = {{.pid = 1, .busy_ns = 70 * MS}, {.pid = (uint32_t)getpid(), .busy_ns = 20 * MS}}};
    struct tf_engine *e = engine(&s, 12345);
    int id = tf_engine_add(e, r, "ns/pod");
    tf_engine_step(e, 1000 * MS);
    assert_int_equal(atomic_load(&r->use->pid[slot].host_pid), (uint32_t)getpid());
    struct tf_engine_dev_stats st;
    tf_engine_stats(e, id, 0, &st);
    assert_int_equal(st.busy_ns, 20 * MS);
    tf_engine_destroy(e);
    free_region(r);
}

static void autoscaler_limit_change_reaches_the_bucket_next_step(void **state)
{
    struct tf_shm_region *r = region(3000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    struct script s = {.nproc = 1, .proc = {{.pid = (uint32_t)getpid(), .busy_ns = 30 * MS}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    tf_engine_add(e, r, "ns/pod");
    for (int k = 0; k < 5; k++) {
        launch(r, slot, 60, 30 * MS);
        atomic_fetch_add(&r->use->dev[0].throttle_count, 1);
        tf_engine_step(e, (1000 + 100 * (uint64_t)k) * MS);
    }
    uint64_t rate = atomic_load(&r->lim->dev[0].bucket.rate);
    assert_in_range(rate, 280 * MS, 320 * MS);
    assert_int_equal(tf_shm_set_limits(r, 0, TF_SHM_DEV_COMPUTE_LIMIT, 6000, 0), 0);
    s.proc[0].busy_ns = 30 * MS; /* still at the old share for one window */
    launch(r, slot, 60, 30 * MS);
    atomic_fetch_add(&r->use->dev[0].throttle_count, 1);
    tf_engine_step(e, 1500 * MS);
    rate = atomic_load(&r->lim->dev[0].bucket.rate);
    assert_true(rate >= 560 * MS); /* bumpless: the feed-forward moved at once */
    /* Limit removed: the engine leaves the bucket alone from then on. */
    assert_int_equal(tf_shm_set_limits(r, 0, TF_SHM_DEV_VRAM_LIMIT, 0, GiB), 0);
    tf_bucket_set(&r->lim->dev[0].bucket, 12345, 678);
    tf_engine_step(e, 1600 * MS);
    assert_int_equal(atomic_load(&r->lim->dev[0].bucket.rate), 12345);
    tf_engine_destroy(e);
    free_region(r);
}

static void killed_process_vram_is_reclaimed_by_the_engine(void **state)
{
    struct tf_shm_region *r = region(0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
        _exit(tf_shm_vram_reserve(r, 0, slot, 3 * GiB) == 0 ? 0 : 1);
    }
    int st;
    waitpid(kid, &st, 0);
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)(3 * GiB));
    /* The survivor can allocate only 1 GiB more until the engine notices. */
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, 2 * GiB), TF_ENOSPC);
    struct script s = {0};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    tf_engine_add(e, r, "ns/pod");
    tf_engine_step(e, 1000 * MS);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), 0);
    assert_int_equal(tf_shm_vram_reserve(r, 0, -1, 2 * GiB), 0);
    tf_engine_destroy(e);
    free_region(r);
}

static void unattributable_workload_is_reported_not_silently_unlimited(void **state)
{
    struct tf_shm_region *r = region(2000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    /* The usage source knows only somebody else. */
    struct script s = {.nproc = 1, .proc = {{.pid = 1, .busy_ns = 90 * MS}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    int id = tf_engine_add(e, r, "ns/pod");
    struct tf_engine_dev_stats st;
    for (int k = 0; k < TF_LIMIT_BLIND_WINDOWS + 2; k++) {
        launch(r, slot, 100, 20 * MS); /* their measured cost: 20 % of the device */
        atomic_fetch_add(&r->use->dev[0].throttle_count, 1);
        tf_engine_step(e, (1000 + 100 * (uint64_t)k) * MS);
    }
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_true(st.blind);
    /* Enforcement continues on the launches' measured cost: never unlimited, never wound up,
     * and no true-up refunds what the usage source cannot see. */
    uint64_t rate = atomic_load(&r->lim->dev[0].bucket.rate);
    assert_in_range(rate, 150 * MS, 250 * MS);
    assert_int_equal(st.share_bp, 2000);
    tf_engine_destroy(e);
    free_region(r);
}

static void usage_below_the_samples_resolution_is_measured_by_the_launches(void **state)
{
    /* Tiny kernels: 2000 launches measured at 0.4 ms of GPU time in all; the usage source,
     * whose samples are whole percents, reports nothing. No warning, no refund. */
    struct tf_shm_region *r = region(5000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    struct script s = {.nproc = 1, .proc = {{.pid = 1, .busy_ns = 90 * MS}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    int id = tf_engine_add(e, r, "ns/pod");
    struct tf_engine_dev_stats st;
    for (int k = 0; k < TF_LIMIT_BLIND_WINDOWS + 2; k++) {
        launch(r, slot, 2000, 400000);
        uint64_t now = (1000 + 100 * (uint64_t)k) * MS;
        tf_bucket_refill(&r->use->dev[0].bucket, &r->lim->dev[0].bucket,
                         now); /* (as the engine does first) */
        int64_t before = atomic_load(&r->use->dev[0].bucket.tokens);
        tf_engine_step(e, now);
        assert_true(atomic_load(&r->use->dev[0].bucket.tokens) == before);
    }
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_false(st.blind);
    assert_int_equal(st.share_bp, 40);
    tf_engine_destroy(e);
    free_region(r);
}

static void no_usage_data_keeps_the_feed_forward(void **state)
{
    struct tf_shm_region *r = region(4000);
    struct script s = {.no_busy = true};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    tf_engine_add(e, r, "ns/pod");
    tf_engine_step(e, 1000 * MS);
    tf_engine_step(e, 1100 * MS);
    assert_int_equal(atomic_load(&r->lim->dev[0].bucket.rate), 400 * MS);
    assert_int_equal(atomic_load(&r->lim->hdr.heartbeat_ns), 1100 * MS);
    tf_engine_destroy(e);
    free_region(r);
}

/* The attack: the app side can write its usage part, so it puts tokens back into its bucket
 * (a "refill" the engine never granted) or lowers its VRAM reservation below what its
 * processes hold. The engine's audit takes the tokens back, restores the reservation from the
 * PID slots, and counts both in the limits part the app cannot write. */
static void forged_tokens_are_taken_back_and_counted(void **state)
{
    struct tf_shm_region *r = region(3000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    struct script s = {.nproc = 1, .proc = {{.pid = (uint32_t)getpid(), .busy_ns = 30 * MS}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    int id = tf_engine_add(e, r, "ns/pod");
    struct tf_engine_dev_stats st;
    for (int k = 0; k < 5; k++) { /* honest launches, throttled, refilled: nothing found */
        launch(r, slot, 60, 30 * MS);
        tf_bucket_refill(&r->use->dev[0].bucket, &r->lim->dev[0].bucket, (1000 + 100 * k) * MS);
        tf_engine_step(e, (1000 + 100 * (uint64_t)k) * MS);
        assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
        assert_int_equal(st.forged, 0);
    }
    assert_int_equal(atomic_load(&r->lim->dev[0].tampered), 0);
    atomic_store(&r->use->dev[0].bucket.tokens, INT64_C(1) << 50); /* the forgery */
    tf_engine_step(e, 1500 * MS);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.forged, TF_SHM_FORGED_TOKENS);
    int64_t cap = atomic_load(&r->lim->dev[0].bucket.capacity);
    assert_true(atomic_load(&r->use->dev[0].bucket.tokens) <= 2 * cap);
    assert_int_equal(atomic_load(&r->lim->dev[0].tampered), 1);
    /* What the engine took back is its own adjustment, not the workload's consumption. */
    launch(r, slot, 60, 30 * MS);
    tf_engine_step(e, 1600 * MS);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.forged, 0);
    assert_int_equal(st.charged, (int64_t)(30 * MS));
    tf_engine_destroy(e);
    free_region(r);
}

static bool allow_pause(void *ctx, const char *name, uint32_t host_pid)
{
    return strcmp(name, "ns/liar") == 0 && host_pid == (uint32_t) * (pid_t *)ctx;
}

/* The state letter of PID in /proc/PID/stat ('T': stopped). */
static char proc_state(pid_t pid)
{
    char path[64], buf[512] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    assert_non_null(p);
    return p[2];
}

/* Waits up to a second for PID to be stopped (STOPPED) or not; whether it came to be. */
static bool wait_state(pid_t pid, bool stopped)
{
    for (int i = 0; i < 100; i++) {
        if ((proc_state(pid) == 'T') == stopped)
            return true;
        usleep(10000);
    }
    return false;
}

/* The attack: a process of the workload uses the GPU (the device charges it 60 ms of every
 * 100 ms window, at a 30 % limit) but reports nothing -- no launch counted, no token taken: a
 * limiter patched out, or launches made around it. The engine compares what the device
 * measures with what the process reported, flags it, charges its GPU time to the bucket and
 * pauses it while the bucket is in debt: over ten seconds it gets about its limit, not 60 %. */
/* Runs the liar below for 10 s of virtual time; its GPU time is measured as 0 while it is
 * stopped, or, with STILL_BUSY, as if its queued work ran on regardless. */
static void hold_a_liar(bool still_busy)
{
    struct tf_shm_region *r = region(3000);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
        if (write(pfd[1], &slot, sizeof(slot)) != sizeof(slot))
            _exit(1);
        for (;;)
            pause();
    }
    int slot = -1;
    assert_int_equal(read(pfd[0], &slot, sizeof(slot)), sizeof(slot));
    assert_true(slot >= 0);
    atomic_store(&r->use->pid[slot].host_pid, (uint32_t)kid);
    struct script s = {.nproc = 1, .proc = {{.pid = (uint32_t)kid, .busy_ns = 60 * MS}}};
    struct tf_engine_opts o = {.period_ms = 100,
                               .usage = {.sample = script_sample, .ctx = &s},
                               .self_owner = tf_proc_self_owner(),
                               .pidns = tf_proc_pidns(0),
                               .may_pause = allow_pause,
                               .pause_ctx = &kid};
    struct tf_engine *e = tf_engine_new(&o);
    assert_non_null(e);
    int id = tf_engine_add(e, r, "ns/liar");
    struct tf_engine_dev_stats st;
    /* (on the clock the region's bucket started on: the engine refills it) */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000 * MS + (uint64_t)ts.tv_nsec + 100 * MS, busy = 0;
    int paused_steps = 0, resumes = 0;
    bool was = false;
    for (int k = 0; k < 100; k++, t += 100 * MS) {
        tf_engine_step(e, t);
        assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
        if (k < TF_ENGINE_LIE_WINDOWS - 1)
            assert_int_equal(st.liars, 0); /* not on one window's evidence */
        else
            assert_int_equal(st.liars, 1);
        bool now = st.paused == 1;
        /* the process itself is stopped and continued (checked on the first few changes) */
        if (now != was && paused_steps + resumes < 6)
            assert_true(wait_state(kid, now));
        paused_steps += now;
        resumes += was && !now;
        was = now;
        /* what the device will measure next: nothing while it is stopped */
        s.proc[0].busy_ns = now && !still_busy ? 0 : 60 * MS;
        busy += s.proc[0].busy_ns;
    }
    assert_int_equal(atomic_load(&r->lim->dev[0].underreported), 1); /* one episode */
    if (still_busy) {
        /* always in debt: stopped TF_ENGINE_PAUSE_MAX steps, then run for one, never for good */
        print_message("liar still busy while stopped: paused %d of 100 windows, resumed %d "
                      "times\n",
                      paused_steps, resumes);
        assert_true(paused_steps >= 80 && resumes >= 7);
        tf_engine_destroy(e);
        assert_true(wait_state(kid, false));
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        close(pfd[0]);
        close(pfd[1]);
        free_region(r);
        return;
    }
    double share = (double)busy / (double)(100 * 100 * MS);
    print_message("liar at a 30 %% limit: %.1f %% of the device (60 %% unchecked), paused %d of "
                  "100 windows, resumed %d times\n",
                  100 * share, paused_steps, resumes);
    assert_true(share < 0.40 && share > 0.10); /* held near its limit, not starved */
    assert_true(resumes >= 2);                 /* paused and resumed, not stopped for good */
    /* Removing the workload (or destroying the engine) never leaves it stopped. */
    s.proc[0].busy_ns = 60 * MS;
    for (int k = 0; k < 10 && !st.paused; k++, t += 100 * MS) {
        tf_engine_step(e, t);
        assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    }
    assert_int_equal(st.paused, 1);
    assert_true(wait_state(kid, true));
    tf_engine_remove(e, id);
    assert_true(wait_state(kid, false));
    tf_engine_destroy(e);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    close(pfd[0]);
    close(pfd[1]);
    free_region(r);
}

static void a_process_that_underreports_its_compute_is_caught_and_paused(void **state)
{
    hold_a_liar(false);
}

/* On a real GPU a stopped process's queued kernels still run (and the simulated GPU may keep
 * showing its in-flight kernel): a pause never lasts, whatever the device shows meanwhile. */
static void a_paused_process_is_never_stopped_for_good(void **state)
{
    hold_a_liar(true);
}

/* Without may_pause (tfctl limits serve, the standalone limiter) the liar is flagged only; and
 * a process that reports its launches is never flagged, however busy. */
static void underreporting_is_flagged_without_pausing_and_honest_use_never_is(void **state)
{
    struct tf_shm_region *r = region(3000);
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    struct script s = {.nproc = 1, .proc = {{.pid = (uint32_t)getpid(), .busy_ns = 60 * MS}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    int id = tf_engine_add(e, r, "ns/pod");
    struct tf_engine_dev_stats st;
    uint64_t t = 1000 * MS;
    for (int k = 0; k < 10; k++, t += 100 * MS) { /* honest: launches counted every window */
        launch(r, slot, 120, 60 * MS);
        tf_engine_step(e, t);
        assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
        assert_int_equal(st.liars, 0);
    }
    for (int k = 0; k < 5; k++, t += 100 * MS) /* then it stops reporting */
        tf_engine_step(e, t);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.liars, 0); /* it reported launches before: 30 windows of evidence */
    for (int k = 0; k < TF_ENGINE_LIE_WINDOWS_LAUNCHED; k++, t += 100 * MS)
        tf_engine_step(e, t);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.liars, 1);
    assert_int_equal(st.paused, 0);
    assert_int_equal(atomic_load(&r->lim->dev[0].underreported), 1);
    assert_true(proc_state(getpid()) != 'T');
    tf_engine_destroy(e);
    free_region(r);
}

static void a_forged_vram_reservation_is_restored(void **state)
{
    struct tf_shm_region *r = region(0); /* 4 GiB */
    int slot = tf_shm_pid_claim(r, tf_proc_self_owner(), tf_proc_pidns(0));
    assert_int_equal(tf_shm_vram_reserve(r, 0, slot, 3 * GiB), 0);
    struct script s = {.nproc = 1, .proc = {{.pid = (uint32_t)getpid(), .mem = 3 * GiB}}};
    struct tf_engine *e = engine(&s, tf_proc_pidns(0));
    int id = tf_engine_add(e, r, "ns/pod");
    tf_engine_step(e, 1000 * MS);
    atomic_store(&r->use->dev[0].vram_used, 0); /* the forgery: room for 4 GiB more */
    struct tf_engine_dev_stats st;
    tf_engine_step(e, 1100 * MS); /* seen once: could be a reservation in flight */
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.forged, 0);
    tf_engine_step(e, 1200 * MS); /* seen twice: forged */
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.forged, TF_SHM_FORGED_VRAM);
    assert_int_equal(atomic_load(&r->use->dev[0].vram_used), (int64_t)(3 * GiB));
    assert_int_equal(atomic_load(&r->lim->dev[0].tampered), 1);
    assert_int_equal(tf_shm_vram_reserve(r, 0, slot, 2 * GiB), TF_ENOSPC);
    assert_int_equal(tf_shm_vram_reserve(r, 0, slot, GiB), 0);
    tf_engine_step(e, 1300 * MS);
    assert_int_equal(tf_engine_stats(e, id, 0, &st), 0);
    assert_int_equal(st.forged, 0);
    tf_engine_destroy(e);
    free_region(r);
}

/* A usage source for the engine thread: counts its calls (read by the test thread). */
static _Atomic int thread_calls;

static int counting_sample(void *ctx, const uint8_t uuid[16], unsigned ordinal, uint64_t now_ns,
                           struct tf_usage_dev *out)
{
    memset(out, 0, sizeof(*out));
    atomic_fetch_add(&thread_calls, 1);
    return TF_ENOENT;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void an_engine_thread_steps_every_period_and_stops_at_once(void **state)
{
    struct tf_shm_region *r = region(3000);
    struct tf_engine_opts o = {
        .period_ms = 20,
        .usage = {.sample = counting_sample},
        .self_owner = tf_proc_self_owner(),
        .no_reap = true,
    };
    struct tf_engine *e = tf_engine_new(&o);
    assert_int_equal(tf_engine_add(e, r, "ns/pod"), 0);
    struct tf_engine_thread *th;
    assert_int_equal(tf_engine_thread_start(e, "test-engine", &th), 0);
    struct timespec ts = {0, 400 * 1000 * 1000};
    nanosleep(&ts, NULL);
    uint64_t t0 = mono_ns();
    tf_engine_thread_stop(th);
    uint64_t stop_ns = mono_ns() - t0;
    int calls = atomic_load(&thread_calls);
    /* 400 ms of 20 ms periods: loosely, descheduling may lose some. */
    assert_true(calls >= 5 && calls <= 25);
    assert_true(stop_ns < 1000000000u);
    assert_true(atomic_load(&r->lim->hdr.heartbeat_ns) != 0);
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&thread_calls), calls); /* nothing runs after stop */
    tf_engine_destroy(e);
    /* A 10 s period is not waited out by stop. */
    o.period_ms = 10000;
    e = tf_engine_new(&o);
    assert_int_equal(tf_engine_add(e, r, "ns/pod"), 0);
    assert_int_equal(tf_engine_thread_start(e, NULL, &th), 0);
    nanosleep(&ts, NULL);
    t0 = mono_ns();
    tf_engine_thread_stop(th);
    assert_true(mono_ns() - t0 < 2000000000u);
    tf_engine_destroy(e);
    free_region(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_time_is_attributed_to_the_workload_by_pid),
        cmocka_unit_test(process_in_a_container_pid_namespace_is_found),
        cmocka_unit_test(autoscaler_limit_change_reaches_the_bucket_next_step),
        cmocka_unit_test(killed_process_vram_is_reclaimed_by_the_engine),
        cmocka_unit_test(unattributable_workload_is_reported_not_silently_unlimited),
        cmocka_unit_test(usage_below_the_samples_resolution_is_measured_by_the_launches),
        cmocka_unit_test(no_usage_data_keeps_the_feed_forward),
        cmocka_unit_test(forged_tokens_are_taken_back_and_counted),
        cmocka_unit_test(a_forged_vram_reservation_is_restored),
        cmocka_unit_test(a_process_that_underreports_its_compute_is_caught_and_paused),
        cmocka_unit_test(a_paused_process_is_never_stopped_for_good),
        cmocka_unit_test(underreporting_is_flagged_without_pausing_and_honest_use_never_is),
        cmocka_unit_test(an_engine_thread_steps_every_period_and_stops_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
