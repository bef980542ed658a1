/* SPDX-License-Identifier: Apache-2.0
 *
 * How exactly compute caps hold on the simulated GPU, and that they never choke a workload
 * that stays below its cap. Workloads are separate processes running the real %globaltimer
 * spin kernel (tests/cuda/kernels/timer.cu) through lim_host `load`: DEPTH launches in
 * flight, unsynchronised, either one continuous stream or bursts with idle gaps (a burst,
 * a stream synchronise, a sleep: an inference server's requests), optionally after a
 * warm-up. Soft isolation runs them under LD_PRELOAD=libtf_limiter.so with this process
 * running the limit engine (NVML of the simulated GPU, 100 ms steps) as the hypervisor
 * would; hard isolation runs them as clients of a tf-worker started with --compute-percent
 * (its own engine). Every second this process asks the simulated driver, through an NVML
 * handle of its own (independent of the engines' sampling), how much GPU time each
 * workload's process used in that 1 s window.
 *
 * Every figure is printed next to an uncapped run of the same load in this same run (the
 * load alone, without the limiter), so the machine's speed at that moment cancels out (for
 * launch rates, the mean of an uncapped run before and one after the capped ones, each as
 * long as they are):
 *   - kernel lengths ~1 us, 5 us, 20 us, 1 ms, 100 ms: the uncapped stream (natural share,
 *     launch rate); the stream under a cap below its natural share (held: windows, mean and
 *     worst error after the first second, first-second overshoot, settling); the stream
 *     under a cap above its natural share (below: launch rate against uncapped), cold and
 *     after a warm-up; bursts with idle gaps under a cap (below), cold and warm;
 *   - a cap sweep 10..90 % with 1 ms kernels; two tenants 30 % + 60 % (1 ms; 1 ms + 20 ms);
 *     four tenants 25 % each;
 *   - hard isolation: caps 10 / 30 / 90 % with 1 ms kernels (the worker's own engine), and
 *     a short-kernel stream under a cap above its natural share (the pod's region, its
 *     engine here, as the hypervisor runs it).
 * Output, per held workload: `limiter_accuracy_<case>_w<N>: SHARE %` per window, then
 * _cap, _mean and _max_error (windows 2.., percentage points), _first_second_overshoot,
 * _settling (seconds until every later window of the case is within +-3 points; "never"),
 * all against the cap, or for a lone workload whose uncapped run got less than its cap (the
 * simulated GPU runs on the CPU: a loaded machine slows it), against what that run got
 * (_target; for the four tenants, whose caps add up to the whole device, their part of what
 * four uncapped processes got together, _four_uncapped_total_share),
 * _work_share (kernels completed per second against the uncapped run of the same load).
 * Per below-cap workload (the round with the median ratio of three, each round's
 * _roundN_rate_ratio printed too): _uncapped_rate and _rate (launches/s), _rate_ratio and
 * _first_second_rate_ratio (%), _share (its mean share, %) and, soft, _throttled_time (the
 * time its launches waited for tokens in the measured run, after any warm-up, % of it: what
 * the limiter itself took, free of the machine's noise). Last, the worst of each figure over
 * all cases (_worst_*), which is what the targets are about. Groups can be picked on the
 * command line (k1us k5us k20us k1ms k100ms sweep tenants hard; none: all).
 */
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"
#include "spawn.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXW 4
#define MAXSEC 12
#define TOL 3.0

/* BARE: the load alone; SOFT: under the limiter, the region's engine here; HARD: a client of
 * a tf-worker with --compute-percent (its own engine); HARD_REGION: a client of a tf-worker
 * with --limits-region, the region's engine here (the hypervisor's set-up). */
enum mode { BARE, SOFT, HARD, HARD_REGION };

/* What a workload process runs (lim_host load). */
struct load {
    unsigned long long kernel_ns;
    int depth;
    long burst, gap_us; /* burst 0: continuous */
    double warm_s;
};

struct wl {
    const char *name;
    uint32_t bp; /* 0: no compute limit */
    enum mode mode;
    struct load ld;
    /* run state */
    char path[512];
    struct tf_shm_map map;
    struct child c;
    struct child worker;
    /* results */
    double share[MAXSEC];
    long long launched, completed, launched_s1;
    double rate, rate_s1; /* launches per second: measured run, its first second */
    double done_rate;     /* kernels completed per second */
    double mean;
    double throttled; /* share of the run its launches spent waiting for tokens (soft) */
    uint64_t waited0; /* the region's wait counter when the measured run started */
};

static const struct tf_shm_perms bench_perms = {.lmode = 0644, .umode = 0600, .uid = -1, .gid = -1};

static struct tf_nvml *nv, *meas;
static uint8_t uuid[16];
static char prefix[128];

/* Worst figures over every case. */
static double worst_err, worst_over, worst_ratio = 1e9, worst_settle;

/* Groups named on the command line (none: all): k1us k5us k20us k1ms k100ms sweep tenants
 * hard. */
static int nonly;
static char **only;

static int want(const char *group)
{
    for (int i = 0; i < nonly; i++)
        if (!strcmp(only[i], group))
            return 1;
    return nonly == 0;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Starts W's tf-worker (hard) and waits for its address in ADDR. */
static int start_worker(struct wl *w, const char *name, char *addr, size_t len)
{
    char tok[300], ready[300], listen[320], pct[16], ld[600], simp[300];
    snprintf(tok, sizeof(tok), "%stoken", prefix);
    snprintf(ready, sizeof(ready), "%sready-%s", prefix, name);
    snprintf(listen, sizeof(listen), "unix://%sworker-%s.sock", prefix, name);
    snprintf(pct, sizeof(pct), "%u.%02u", w->bp / 100, w->bp % 100);
    snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", LIM_SIM_DIR);
    snprintf(simp, sizeof(simp), "TF_SIM_SHM_PREFIX=%s", prefix);
    FILE *f = fopen(tok, "w");
    if (!f)
        return 1;
    fputs("bench-accuracy-token-42\n", f);
    fclose(f);
    unlink(ready);
    char *argv[] = {LIM_WORKER_PATH,
                    "--listen",
                    listen,
                    "--token-file",
                    tok,
                    "--ready-file",
                    ready,
                    w->mode == HARD_REGION ? "--limits-region"
                    : w->bp                ? "--compute-percent"
                                           : NULL,
                    w->mode == HARD_REGION ? w->path : pct,
                    NULL};
    const char *env[] = {ld, simp, "TF_SIM_DEVICES=L4", "TF_LOG_LEVEL=error", NULL};
    child_start(&w->worker, argv, env);
    for (int i = 0; i < 1000; i++) {
        f = fopen(ready, "r");
        if (f) {
            if (!fgets(addr, (int)len, f))
                addr[0] = 0;
            fclose(f);
            addr[strcspn(addr, "\n")] = 0;
            if (addr[0])
                return 0;
        }
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    fprintf(stderr, "bench_limiter_accuracy: tf-worker did not start\n");
    return 1;
}

static int make_region(struct wl *w, const char *name, struct tf_engine *e)
{
    snprintf(w->path, sizeof(w->path), "%sregion-%s-%s", prefix, name, w->name);
    unlink(w->path);
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "%s/%s", name, w->name);
    c.ndev = 1;
    memcpy(c.dev[0].uuid, uuid, 16);
    c.dev[0].flags = TF_SHM_DEV_PRESENT | (w->bp ? TF_SHM_DEV_COMPUTE_LIMIT : 0);
    c.dev[0].compute_limit_bp = w->bp;
    char err[256];
    if (tf_shm_create(w->path, &c, &bench_perms, &w->map, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_limiter_accuracy: %s\n", err);
        return 1;
    }
    tf_engine_add(e, &w->map.r, c.name);
    return 0;
}

static int start_load(struct wl *w, const char *name, int secs)
{
    char ld[600], pre[600], shm[600], simp[300], kns[32], sec[32], depth[16], burst[32], gap[32],
        warm[32], addr[300] = "", remote[320];
    snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", LIM_SIM_DIR);
    snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", w->mode == SOFT ? LIM_PRELOAD_PATH : "");
    snprintf(shm, sizeof(shm), "TF_SHM_PATH=%s", w->mode == SOFT ? w->path : "");
    snprintf(simp, sizeof(simp), "TF_SIM_SHM_PREFIX=%s", prefix);
    snprintf(kns, sizeof(kns), "%llu", w->ld.kernel_ns);
    snprintf(sec, sizeof(sec), "%d", secs + 1); /* it outlives the measurement by a second */
    snprintf(depth, sizeof(depth), "%d", w->ld.depth);
    snprintf(burst, sizeof(burst), "%ld", w->ld.burst);
    snprintf(gap, sizeof(gap), "%ld", w->ld.gap_us);
    snprintf(warm, sizeof(warm), "%.2f", w->ld.warm_s);
    char *argv[] = {LIM_HOST_PATH, "load", LIM_TIMER_PTX, kns, sec, depth, burst, gap, warm, NULL};
    if (w->mode == HARD || w->mode == HARD_REGION) {
        if (start_worker(w, name, addr, sizeof(addr)) != 0)
            return 1;
        snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", LIM_CLIENT_DIR);
        snprintf(remote, sizeof(remote), "TF_REMOTE=%s", addr);
        const char *env[] = {
            ld,  remote, "TF_TOKEN=bench-accuracy-token-42", "LD_PRELOAD=", "TF_LOG_LEVEL=error",
            NULL};
        child_start(&w->c, argv, env);
        return 0;
    }
    const char *env[] = {ld, pre, shm, simp, "TF_SIM_DEVICES=L4", "TF_LOG_LEVEL=error", NULL};
    child_start(&w->c, argv, env);
    return 0;
}

/* Runs the N workloads of case NAME together for SECS measured seconds. */
static int run(const char *name, struct wl *w, int n, int secs)
{
    struct tf_engine_opts o = {
        .period_ms = 100,
        .usage = {.sample = tf_nvml_sample, .ctx = nv},
        .self_owner = tf_proc_self_owner(),
        .pidns = tf_proc_pidns(0),
    };
    struct tf_engine *e = tf_engine_new(&o);
    for (int i = 0; i < n; i++)
        if ((w[i].mode == SOFT || w[i].mode == HARD_REGION) && make_region(&w[i], name, e) != 0)
            return 1;
    struct tf_engine_thread *th;
    if (tf_engine_thread_start(e, "engine", &th) != 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (start_load(&w[i], name, secs) != 0)
            return 1;
    double wait = 30;
    for (int i = 0; i < n; i++)
        wait = wait > w[i].ld.warm_s + 30 ? wait : w[i].ld.warm_s + 30;
    for (int i = 0; i < n; i++) {
        if (!child_wait_for(&w[i].c, "load: running", wait)) {
            fprintf(stderr, "bench_limiter_accuracy: %s: workload did not start: %s%s\n", name,
                    w[i].c.out, w[i].c.err);
            return 1;
        }
        /* (waits of a warm-up are not the measured run's) */
        if (w[i].mode == SOFT || w[i].mode == HARD_REGION)
            w[i].waited0 = atomic_load(&w[i].map.r.use->dev[0].throttle_ns);
    }
    struct tf_usage_dev u;
    uint64_t t0 = mono_ns();
    tf_nvml_sample(meas, uuid, 0, t0, &u); /* starts the measurement window */
    for (int s = 0; s < secs; s++) {
        uint64_t until = t0 + 1000000000u, now = mono_ns();
        if (until > now) {
            struct timespec ts = {(time_t)((until - now) / 1000000000u),
                                  (long)((until - now) % 1000000000u)};
            nanosleep(&ts, NULL);
        }
        uint64_t t1 = mono_ns();
        tf_nvml_sample(meas, uuid, 0, t1, &u);
        for (int i = 0; i < n; i++) {
            uint64_t b = 0;
            pid_t gpu_pid =
                w[i].mode == HARD || w[i].mode == HARD_REGION ? w[i].worker.pid : w[i].c.pid;
            for (int k = 0; k < u.nproc; k++)
                if (u.proc[k].pid == (uint32_t)gpu_pid)
                    b = u.proc[k].busy_ns;
            w[i].share[s] = (double)b * 100.0 / (double)(t1 - t0);
        }
        t0 = t1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++)
        if (child_finish(&w[i].c, 60) != 0) { /* the load ends by itself a second later */
            fprintf(stderr, "bench_limiter_accuracy: %s: workload failed: %s\n", name, w[i].c.err);
            rc = 1;
        }
    tf_engine_thread_stop(th); /* before the regions it steps go */
    tf_engine_destroy(e);
    for (int i = 0; i < n; i++) {
        w[i].launched = child_num(&w[i].c, "launched");
        w[i].completed = child_num(&w[i].c, "completed");
        w[i].launched_s1 = child_num(&w[i].c, "launched_s1");
        /* The load ran secs + 1 seconds: rates over all of it, and over its first second. */
        w[i].rate = (double)w[i].launched / (secs + 1);
        w[i].done_rate = (double)w[i].completed / (secs + 1);
        w[i].rate_s1 = (double)w[i].launched_s1;
        double sum = 0;
        for (int s = 0; s < secs; s++)
            sum += s >= 1 || secs == 1 ? w[i].share[s] : 0;
        w[i].mean = sum / (secs > 1 ? secs - 1 : 1);
        if (w[i].mode == HARD || w[i].mode == HARD_REGION) {
            kill(w[i].worker.pid, SIGTERM);
            child_finish(&w[i].worker, 30);
        }
        if (w[i].mode == SOFT || w[i].mode == HARD_REGION) {
            uint64_t waited = atomic_load(&w[i].map.r.use->dev[0].throttle_ns) - w[i].waited0;
            w[i].throttled = (double)waited * 100.0 / ((secs + 1) * 1e9);
            tf_shm_unmap(&w[i].map);
            unlink(w[i].path);
        }
    }
    return rc;
}

/* The uncapped reference of load LD (MODE BARE: without the limiter; HARD: a worker
 * without a cap). */
static int reference(const char *name, const struct load *ld, enum mode mode, int secs,
                     struct wl *out)
{
    *out = (struct wl){.name = "ref", .bp = 0, .mode = mode, .ld = *ld};
    int rc = run(name, out, 1, secs);
    double sum = 0;
    for (int s = 0; s < secs; s++)
        sum += out->share[s];
    out->mean = sum / secs;
    printf("limiter_accuracy_%s_share: %.1f %%\n", name, out->mean);
    printf("limiter_accuracy_%s_rate: %.1f launches/s\n", name, out->rate);
    fflush(stdout);
    return rc;
}

/* What workload I of N should get: its cap, or for a lone workload whose uncapped run of the
 * same load (REF) got less than that (a simulated GPU slowed by a loaded machine cannot
 * deliver more), what that run got; for tenants whose caps add up to more than the device
 * delivered to as many uncapped processes together (TOGETHER %, 0: not measured), their
 * caps' part of it. */
static double target_of(const struct wl *w, int n, int i, const struct wl *ref, double together)
{
    double cap = w[i].bp / 100.0, caps = 0;
    for (int k = 0; k < n; k++)
        caps += w[k].bp / 100.0;
    if (n > 1 && together > 0 && caps > together)
        return cap * together / caps;
    return n == 1 && ref && ref[i].mean < cap ? ref[i].mean : cap;
}

/* Prints the held figures of the N capped workloads of case NAME (REF: their uncapped
 * runs; TOGETHER: target_of). */
static void report_held(const char *name, struct wl *w, int n, int secs, const struct wl *ref,
                        double together)
{
    int settle = secs;
    for (int s = secs - 1; s >= 0; s--) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            if (fabs(w[i].share[s] - target_of(w, n, i, ref, together)) > TOL)
                ok = 0;
        if (!ok)
            break;
        settle = s;
    }
    for (int i = 0; i < n; i++) {
        double cap = w[i].bp / 100.0, target = target_of(w, n, i, ref, together), maxerr = 0;
        for (int s = 0; s < secs; s++) {
            printf("limiter_accuracy_%s_%s_w%02d: %.1f %%\n", name, w[i].name, s + 1,
                   w[i].share[s]);
            if (s >= 1 && fabs(w[i].share[s] - target) > maxerr)
                maxerr = fabs(w[i].share[s] - target);
        }
        double over = w[i].share[0] - cap > 0 ? w[i].share[0] - cap : 0;
        printf("limiter_accuracy_%s_%s_cap: %.1f %%\n", name, w[i].name, cap);
        if (target < cap)
            printf("limiter_accuracy_%s_%s_target: %.1f %% (what uncapped runs got)\n", name,
                   w[i].name, target);
        printf("limiter_accuracy_%s_%s_mean: %.1f %%\n", name, w[i].name, w[i].mean);
        printf("limiter_accuracy_%s_%s_max_error: %.1f pp\n", name, w[i].name, maxerr);
        printf("limiter_accuracy_%s_%s_first_second_overshoot: %.1f pp\n", name, w[i].name, over);
        if (ref && ref[i].done_rate > 0)
            printf("limiter_accuracy_%s_%s_work_share: %.1f %%\n", name, w[i].name,
                   w[i].done_rate * 100.0 / ref[i].done_rate);
        worst_err = maxerr > worst_err ? maxerr : worst_err;
        worst_over = over > worst_over ? over : worst_over;
    }
    if (settle < secs)
        printf("limiter_accuracy_%s_settling: %d s\n", name, settle);
    else
        printf("limiter_accuracy_%s_settling: never (not within +-%.0f points) s\n", name, TOL);
    worst_settle = settle > worst_settle ? settle : worst_settle;
    fflush(stdout);
}

/* Prints the below-cap figures of W against its uncapped run REF. */
static void report_below(const char *name, const struct wl *w, const struct wl *ref)
{
    double ratio = ref->rate > 0 ? w->rate * 100.0 / ref->rate : 0;
    double ratio1 = ref->rate > 0 ? w->rate_s1 * 100.0 / ref->rate : 0;
    printf("limiter_accuracy_%s_cap: %.1f %%\n", name, w->bp / 100.0);
    printf("limiter_accuracy_%s_share: %.1f %%\n", name, w->mean);
    printf("limiter_accuracy_%s_uncapped_rate: %.1f launches/s\n", name, ref->rate);
    printf("limiter_accuracy_%s_rate: %.1f launches/s\n", name, w->rate);
    printf("limiter_accuracy_%s_rate_ratio: %.1f %%\n", name, ratio);
    printf("limiter_accuracy_%s_first_second_rate_ratio: %.1f %%\n", name, ratio1);
    if (w->mode == SOFT || w->mode == HARD_REGION)
        printf("limiter_accuracy_%s_throttled_time: %.2f %%\n", name, w->throttled);
    worst_ratio = ratio < worst_ratio ? ratio : worst_ratio;
    fflush(stdout);
}

/* A cap (bp) that binds a stream of natural share SHARE %: half of it, 5..50 %. */
static uint32_t binding_cap(double share)
{
    double c = share >= 75 ? 50 : floor(share / 2);
    return (uint32_t)(c < 5 ? 5 : c) * 100;
}

/* A cap (bp) well above a natural share SHARE %, rounded to 5 points (at most 90 %). */
static uint32_t roomy_cap(double share)
{
    double c = ceil((share + 25) / 5) * 5;
    if (c < 50)
        c = 50;
    return (uint32_t)(c > 90 ? 90 : c) * 100;
}

/* The load LD under cap BP (bp; 0: a cap well above the uncapped run's share), cold and
 * after a warm-up, BELOW_ROUNDS times each, every capped run between two uncapped runs as long
 * as it: the machine's speed drifts, so a capped run's reference is the mean of the uncapped
 * runs just before and just after it (and a load of few long bursts launches a whole number
 * of them, so runs of other lengths would differ by a burst). Run to run, a 1 us stream's
 * rate moves by 5-10 % with nothing capped, so the figures are the round with the median
 * ratio; each round's ratio is printed too. */
#define BELOW_SECS 3
#define BELOW_ROUNDS 3
static int below(const char *tag, const struct load *ld, enum mode mode, uint32_t bp)
{
    char nm[96];
    int rc = 0;
    struct wl prev, next, w[2][BELOW_ROUNDS], ref[2][BELOW_ROUNDS];
    double ratio[2][BELOW_ROUNDS];
    enum mode bare = mode == HARD_REGION ? HARD : BARE;
    snprintf(nm, sizeof(nm), "%s_uncapped", tag);
    rc |= reference(nm, ld, bare, BELOW_SECS, &prev);
    if (!bp)
        bp = roomy_cap(prev.mean);
    for (int r = 0; r < BELOW_ROUNDS; r++)
        for (int warm = 0; warm < 2; warm++) {
            struct load l = *ld;
            l.warm_s = warm ? 1.0 : 0.0;
            struct wl *c = &w[warm][r];
            *c = (struct wl){.name = "a", .bp = bp, .mode = mode, .ld = l};
            snprintf(nm, sizeof(nm), "%s_below_%s", tag, warm ? "warm" : "cold");
            rc |= run(nm, c, 1, BELOW_SECS);
            snprintf(nm, sizeof(nm), "%s_uncapped_%d", tag, 2 * r + warm + 1);
            rc |= reference(nm, ld, bare, BELOW_SECS, &next);
            ref[warm][r] = prev;
            ref[warm][r].rate = (prev.rate + next.rate) / 2;
            ratio[warm][r] = ref[warm][r].rate > 0 ? c->rate * 100.0 / ref[warm][r].rate : 0;
            prev = next;
        }
    for (int warm = 0; warm < 2; warm++) {
        snprintf(nm, sizeof(nm), "%s_below_%s", tag, warm ? "warm" : "cold");
        int med = 0;
        for (int r = 0; r < BELOW_ROUNDS; r++) {
            int below_r = 0, above_r = 0;
            for (int k = 0; k < BELOW_ROUNDS; k++) {
                below_r += ratio[warm][k] < ratio[warm][r];
                above_r += ratio[warm][k] > ratio[warm][r];
            }
            if (below_r <= BELOW_ROUNDS / 2 && above_r <= BELOW_ROUNDS / 2)
                med = r;
            printf("limiter_accuracy_%s_round%d_rate_ratio: %.1f %%\n", nm, r + 1, ratio[warm][r]);
        }
        report_below(nm, &w[warm][med], &ref[warm][med]);
    }
    return rc;
}

struct len {
    const char *tag;
    unsigned long long ns;
    int depth;
    long burst;
};

static int kernel_length(const struct len *k)
{
    char nm[96];
    int rc = 0;
    struct load cont = {.kernel_ns = k->ns, .depth = k->depth};
    struct wl ref, held;

    snprintf(nm, sizeof(nm), "%s_uncapped", k->tag);
    rc |= reference(nm, &cont, BARE, 2, &ref);

    /* Held below its natural share, from a cold start. */
    held = (struct wl){.name = "a", .bp = binding_cap(ref.mean), .mode = SOFT, .ld = cont};
    snprintf(nm, sizeof(nm), "%s_held", k->tag);
    rc |= run(nm, &held, 1, 4);
    report_held(nm, &held, 1, 4, &ref, 0);

    /* Under a cap above its natural share: never throttled, cold or warm. */
    if (ref.mean < 60) {
        snprintf(nm, sizeof(nm), "%s_stream", k->tag);
        rc |= below(nm, &cont, SOFT, roomy_cap(ref.mean));
    }

    /* Bursts with idle gaps (about a quarter of the uncapped stream's time busy), under a
     * cap well above that: never throttled, cold or warm. */
    double per_launch_us = ref.rate > 0 ? 1e6 / ref.rate : 1000;
    struct load bursty = cont;
    bursty.burst = k->burst;
    bursty.gap_us = (long)(3.0 * (double)k->burst * per_launch_us);
    if (bursty.gap_us < 200)
        bursty.gap_us = 200;
    snprintf(nm, sizeof(nm), "%s_bursts", k->tag);
    rc |= below(nm, &bursty, SOFT, 0);
    return rc;
}

/* Tenants sharing the device: 30 % + 60 % (1 ms kernels; 1 ms + 20 ms), 4 x 25 %. */
static int tenants(const struct load *ms, const struct wl *ref_ms)
{
    int rc = 0;
    struct load ms20 = {.kernel_ns = 20000000, .depth = 4};
    struct wl ref_ms20;
    rc |= reference("k20ms_uncapped", &ms20, BARE, 2, &ref_ms20);
    struct wl pair[2] = {{.name = "a", .bp = 3000, .mode = SOFT, .ld = *ms},
                         {.name = "b", .bp = 6000, .mode = SOFT, .ld = *ms}};
    struct wl pref[2] = {*ref_ms, *ref_ms};
    rc |= run("pair_30_60", pair, 2, 5);
    report_held("pair_30_60", pair, 2, 5, pref, 0);
    struct wl mixed[2] = {{.name = "a", .bp = 3000, .mode = SOFT, .ld = *ms},
                          {.name = "b", .bp = 6000, .mode = SOFT, .ld = ms20}};
    struct wl mref[2] = {*ref_ms, ref_ms20};
    rc |= run("pair_30_60_long", mixed, 2, 5);
    report_held("pair_30_60_long", mixed, 2, 5, mref, 0);
    /* Four processes sharing the simulated GPU lose some of it to handing it over: what four
     * uncapped ones get together is what four caps of 25 % can share. */
    struct wl four[4], fref[4], free4[4];
    static const char *names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        free4[i] = (struct wl){.name = names[i], .bp = 0, .mode = BARE, .ld = *ms};
        four[i] = (struct wl){.name = names[i], .bp = 2500, .mode = SOFT, .ld = *ms};
        fref[i] = *ref_ms;
    }
    rc |= run("four_uncapped", free4, 4, 3);
    double together = 0;
    for (int i = 0; i < 4; i++)
        for (int s = 0; s < 3; s++)
            together += free4[i].share[s] / 3;
    printf("limiter_accuracy_four_uncapped_total_share: %.1f %%\n", together);
    rc |= run("four_25", four, 4, 5);
    report_held("four_25", four, 4, 5, fref, together);
    return rc;
}

/* Hard isolation: caps 10 / 30 / 90 % held by a tf-worker (1 ms kernels), and a
 * short-kernel stream under a cap above its natural share, cold and warm. */
static int hard(const struct load *ms)
{
    int rc = 0;
    struct wl href;
    rc |= reference("hard_k1ms_uncapped", ms, HARD, 2, &href);
    static const uint32_t hcaps[] = {1000, 3000, 9000};
    for (size_t i = 0; i < sizeof(hcaps) / sizeof(hcaps[0]); i++) {
        char nm[64];
        struct wl w = {.name = "a", .bp = hcaps[i], .mode = HARD, .ld = *ms};
        snprintf(nm, sizeof(nm), "hard_%u", hcaps[i] / 100);
        rc |= run(nm, &w, 1, 4);
        report_held(nm, &w, 1, 4, &href, 0);
    }
    struct load us = {.kernel_ns = 1000, .depth = 4};
    rc |= below("hard_k1us", &us, HARD_REGION, 0);
    return rc;
}

int main(int argc, char **argv)
{
    nonly = argc - 1;
    only = argv + 1;
    snprintf(prefix, sizeof(prefix), "/tmp/tf-bench-accuracy-%d-", (int)getpid());
    setenv("TF_SIM_DEVICES", "L4", 1);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1);
    setenv("TF_LOG_LEVEL", "error", 0);
    char err[256];
    if (tf_nvml_open(LIM_SIM_DIR "/libnvidia-ml.so.1", NULL, &nv, err, sizeof(err)) != 0 ||
        tf_nvml_open(LIM_SIM_DIR "/libnvidia-ml.so.1", NULL, &meas, err, sizeof(err)) != 0 ||
        tf_nvml_device_uuid(nv, 0, uuid, NULL) != 0) {
        fprintf(stderr, "bench_limiter_accuracy: simulated NVML: %s\n", err);
        return 1;
    }
    int rc = 0;
    static const struct len lens[] = {
        {"k1us", 1000, 4, 64},    {"k5us", 5000, 4, 64},       {"k20us", 20000, 4, 64},
        {"k1ms", 1000000, 4, 16}, {"k100ms", 100000000, 2, 2},
    };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        if (want(lens[i].tag))
            rc |= kernel_length(&lens[i]);

    /* Cap sweep, 1 ms kernels (50 % is k1ms_held). */
    struct load ms = {.kernel_ns = 1000000, .depth = 4};
    struct wl ref_ms;
    if (want("sweep") || want("tenants"))
        rc |= reference("k1ms_ref_uncapped", &ms, BARE, 2, &ref_ms);
    static const uint32_t sweep[] = {1000, 3000, 7000, 9000};
    for (size_t i = 0; want("sweep") && i < sizeof(sweep) / sizeof(sweep[0]); i++) {
        char nm[64];
        struct wl w = {.name = "a", .bp = sweep[i], .mode = SOFT, .ld = ms};
        snprintf(nm, sizeof(nm), "sweep_%u", sweep[i] / 100);
        rc |= run(nm, &w, 1, 4);
        report_held(nm, &w, 1, 4, &ref_ms, 0);
    }
    if (want("tenants"))
        rc |= tenants(&ms, &ref_ms);
    if (want("hard"))
        rc |= hard(&ms);

    printf("limiter_accuracy_worst_max_error: %.1f pp\n", worst_err);
    printf("limiter_accuracy_worst_first_second_overshoot: %.1f pp\n", worst_over);
    printf("limiter_accuracy_worst_settling: %.0f s\n", worst_settle);
    if (worst_ratio < 1e9)
        printf("limiter_accuracy_worst_below_cap_rate_ratio: %.1f %%\n", worst_ratio);
    tf_nvml_close(meas);
    tf_nvml_close(nv);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -f %s*", prefix);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
