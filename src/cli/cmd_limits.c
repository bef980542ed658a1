/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl limits`: run the soft-isolation limit engine without the hypervisor, and inspect or
 * change limit regions.
 *   tfctl limits serve [--interval-ms N] [--duration S] [--stats] [--nvml LIB]
 *                      --region PATH [--name N] [--device UUID|INDEX]... [--vram-limit Q]
 *                      [--compute-percent P] [--user USER[:GROUP]] [--region PATH ...]
 *       creates each region (or attaches to an existing valid one, applying the limits
 *       given) and drives the engine until SIGINT/SIGTERM or --duration; --stats prints one
 *       line per workload and device per second. A region's usage part belongs to --user
 *       (mode 0600; 0660 with GROUP), by default to the user running serve.
 *   tfctl limits set --region PATH [--device I] [--vram-limit Q|none]
 *                    [--compute-percent P|none]
 *   tfctl limits show --region PATH
 * Exit codes: 0 ok, 1 runtime failure, 2 bad usage or invalid input (message names it).
 */
#include "cli/cmds.h"

#include "common/err.h"
#include "common/log.h"
#include "core/quantity.h"
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_WL 32

struct wl_arg {
    const char *path;
    const char *name;
    const char *devices[TF_SHM_MAX_DEVICES];
    int ndev;
    bool has_vram, has_compute;
    uint64_t vram;
    uint32_t bp;
    int uid, gid; /* the usage part's owner (-1: serve's user) and group (-1: none) */
    struct tf_shm_map map;
    int id;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    stop = 1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int usage(FILE *f)
{
    fprintf(f, "usage: tfctl limits serve [--interval-ms N] [--duration S] [--stats] [--nvml LIB]\n"
               "                          --region PATH [--name N] [--device UUID|INDEX]...\n"
               "                          [--vram-limit Q] [--compute-percent P]\n"
               "                          [--user USER[:GROUP]] [--region ...]\n"
               "       tfctl limits set --region PATH [--device I] [--vram-limit Q|none]\n"
               "                        [--compute-percent P|none]\n"
               "       tfctl limits show --region PATH\n");
    return f == stdout ? 0 : 2;
}

static int parse_vram(const char *v, uint64_t *out)
{
    char err[256];
    int64_t b;
    if (tf_quantity_bytes(v, &b, "--vram-limit", err, sizeof(err)) != 0) {
        fprintf(stderr, "tfctl limits: %s\n", err);
        return 2;
    }
    if (b <= 0) {
        fprintf(stderr, "tfctl limits: --vram-limit: \"%s\" must be above 0\n", v);
        return 2;
    }
    *out = (uint64_t)b;
    return 0;
}

static int parse_percent(const char *v, uint32_t *out)
{
    char err[256];
    int32_t bp;
    if (tf_percent_parse(v, &bp, "--compute-percent", err, sizeof(err)) != 0) {
        fprintf(stderr, "tfctl limits: %s\n", err);
        return 2;
    }
    if (bp <= 0) {
        fprintf(stderr, "tfctl limits: --compute-percent: \"%s\" must be above 0\n", v);
        return 2;
    }
    *out = (uint32_t)bp;
    return 0;
}

/* A --user value: USER or USER:GROUP, each a name or a number. */
static int parse_user(const char *v, int *uid, int *gid)
{
    char user[256], *group = NULL, *end;
    if (snprintf(user, sizeof(user), "%s", v) >= (int)sizeof(user) || !user[0])
        goto bad;
    if ((group = strchr(user, ':')))
        *group++ = '\0';
    long n = strtol(user, &end, 10);
    const struct passwd *pw = NULL;
    if (user[0] && !*end && n >= 0 && n < INT32_MAX)
        *uid = (int)n;
    else if ((pw = getpwnam(user)))
        *uid = (int)pw->pw_uid;
    else
        goto bad;
    *gid = -1;
    if (group) {
        const struct group *gr = NULL;
        n = strtol(group, &end, 10);
        if (group[0] && !*end && n >= 0 && n < INT32_MAX)
            *gid = (int)n;
        else if (group[0] && (gr = getgrnam(group)))
            *gid = (int)gr->gr_gid;
        else
            goto bad;
    }
    return 0;
bad:
    fprintf(stderr,
            "tfctl limits serve: --user \"%s\" is not USER or USER:GROUP (known names or "
            "numbers)\n",
            v);
    return 2;
}

/* The modes and owner of W's region: the limits part the engine's alone (0644); the usage
 * part W's user's (0600), shared with a group when one is given (0660). */
static struct tf_shm_perms region_perms(const struct wl_arg *w)
{
    struct tf_shm_perms p = {.lmode = 0644, .umode = 0600, .uid = w->uid, .gid = w->gid};
    if (w->gid >= 0)
        p.umode = 0660;
    return p;
}

/* Resolves a --device value (an index or a UUID) to its UUID and memory size. */
static int resolve_device(struct tf_nvml *nv, const char *s, uint8_t uuid[16], uint64_t *mem)
{
    char *end;
    unsigned long idx = strtoul(s, &end, 10);
    if (*s && !*end) {
        if (!nv) {
            fprintf(stderr, "tfctl limits: --device %s: an index needs NVML to find the UUID\n", s);
            return 2;
        }
        if (tf_nvml_device_uuid(nv, (unsigned)idx, uuid, mem) != 0) {
            fprintf(stderr, "tfctl limits: --device %s: no such GPU\n", s);
            return 2;
        }
        return 0;
    }
    if (tf_shm_uuid_parse(s, uuid) != 0) {
        fprintf(stderr, "tfctl limits: --device \"%s\" is neither an index nor a GPU UUID\n", s);
        return 2;
    }
    *mem = 0;
    return 0;
}

static void fill_limits(struct tf_shm_dev_config *d, const struct wl_arg *w)
{
    d->flags = TF_SHM_DEV_PRESENT;
    if (w->has_vram) {
        d->flags |= TF_SHM_DEV_VRAM_LIMIT;
        d->vram_limit = w->vram;
    }
    if (w->has_compute && w->bp < 10000) {
        d->flags |= TF_SHM_DEV_COMPUTE_LIMIT;
        d->compute_limit_bp = w->bp;
    }
}

static int open_workload(struct wl_arg *w, struct tf_nvml *nv)
{
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "%s", w->name ? w->name : w->path);
    if (w->ndev == 0)
        w->devices[w->ndev++] = "0";
    c.ndev = (uint32_t)w->ndev;
    for (int i = 0; i < w->ndev; i++) {
        int rc = resolve_device(nv, w->devices[i], c.dev[i].uuid, &c.dev[i].mem_total);
        if (rc)
            return rc;
        fill_limits(&c.dev[i], w);
    }
    char err[512];
    int rc = tf_shm_open(w->path, TF_SHM_ENGINE, &w->map, err, sizeof(err));
    if (rc == 0) {
        /* Attach: keep the counters of running processes, apply the limits given. */
        rc = tf_shm_write_config(&w->map.r, &c);
        if (rc) {
            fprintf(stderr, "tfctl limits: %s: cannot update: %s\n", w->path, tf_strerror(rc));
            return 1;
        }
        fprintf(stderr, "tfctl limits: attached to %s\n", w->path);
        if (w->uid >= 0) {
            struct tf_shm_perms perms = region_perms(w);
            if (tf_shm_set_perms(w->path, &perms, err, sizeof(err)) != 0) {
                fprintf(stderr, "tfctl limits: %s\n", err);
                return 1;
            }
        }
        return 0;
    }
    if (rc != TF_ENOENT) {
        fprintf(stderr, "tfctl limits: %s (remove the file to start over)\n", err);
        return 1;
    }
    struct tf_shm_perms perms = region_perms(w);
    rc = tf_shm_create(w->path, &c, &perms, &w->map, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "tfctl limits: %s\n", err);
        return 1;
    }
    return 0;
}

/* One line per workload and device: the share of the last second (from the engine's
 * cumulative GPU-time counter), the limit, the controller's rate, the average launch cost
 * and the calibration of measured costs, VRAM. */
static void print_stats(struct wl_arg *wl, int n, double t, uint64_t (*prev)[TF_SHM_MAX_DEVICES],
                        double secs)
{
    for (int i = 0; i < n; i++) {
        struct tf_shm_region *r = &wl[i].map.r;
        unsigned ndev = atomic_load(&r->lim->hdr.ndev);
        for (unsigned d = 0; d < ndev && d < TF_SHM_MAX_DEVICES; d++) {
            struct tf_shm_ldev *dev = &r->lim->dev[d];
            struct tf_shm_udev *ud = &r->use->dev[d];
            uint64_t busy = atomic_load(&dev->busy_ns);
            double share = secs > 0 ? (double)(busy - prev[i][d]) / (secs * 1e7) : 0;
            prev[i][d] = busy;
            uint32_t flags = atomic_load(&dev->flags);
            uint32_t scale = atomic_load(&dev->cost_scale);
            printf("t=%.1f workload=%s dev=%u share=%.1f%% limit=%.1f%% rate=%.1f%% "
                   "cost_us=%.1f cost_scale=%.3f vram_used=%" PRId64 " vram_limit=%" PRIu64
                   " throttled=%" PRIu64 "\n",
                   t, wl[i].name ? wl[i].name : wl[i].path, d, share,
                   (flags & TF_SHM_DEV_COMPUTE_LIMIT) ? atomic_load(&dev->compute_limit_bp) / 100.0
                                                      : 100.0,
                   atomic_load(&dev->rate_bp) / 100.0, atomic_load(&dev->launch_cost) / 1000.0,
                   scale ? scale / 65536.0 : 1.0, atomic_load(&ud->vram_used),
                   (flags & TF_SHM_DEV_VRAM_LIMIT) ? atomic_load(&dev->vram_limit) : 0,
                   atomic_load(&ud->throttle_count));
        }
    }
    fflush(stdout);
}

static int cmd_serve(int argc, char **argv)
{
    struct wl_arg wl[MAX_WL];
    int n = 0;
    memset(wl, 0, sizeof(wl));
    uint32_t interval = 100;
    double duration = 0;
    bool stats = false;
    const char *nvml_lib = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--stats")) {
            stats = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout);
        if (!v) {
            fprintf(stderr, "tfctl limits serve: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--region")) {
            if (n == MAX_WL) {
                fprintf(stderr, "tfctl limits serve: at most %d regions\n", MAX_WL);
                return 2;
            }
            wl[n].uid = wl[n].gid = -1;
            wl[n++].path = v;
            continue;
        }
        if (!strcmp(a, "--interval-ms")) {
            interval = (uint32_t)atoi(v);
            if (interval < 10 || interval > 5000) {
                fprintf(stderr, "tfctl limits serve: --interval-ms \"%s\" is outside 10..5000\n",
                        v);
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--duration")) {
            duration = atof(v);
            continue;
        }
        if (!strcmp(a, "--nvml")) {
            nvml_lib = v;
            continue;
        }
        if (n == 0) {
            fprintf(stderr, "tfctl limits serve: %s before any --region\n", a);
            return 2;
        }
        struct wl_arg *w = &wl[n - 1];
        int rc = 0;
        if (!strcmp(a, "--name")) {
            w->name = v;
        } else if (!strcmp(a, "--device")) {
            if (w->ndev == TF_SHM_MAX_DEVICES) {
                fprintf(stderr, "tfctl limits serve: at most %d devices\n", TF_SHM_MAX_DEVICES);
                return 2;
            }
            w->devices[w->ndev++] = v;
        } else if (!strcmp(a, "--vram-limit")) {
            rc = parse_vram(v, &w->vram);
            w->has_vram = true;
        } else if (!strcmp(a, "--compute-percent")) {
            rc = parse_percent(v, &w->bp);
            w->has_compute = true;
        } else if (!strcmp(a, "--user")) {
            rc = parse_user(v, &w->uid, &w->gid);
        } else {
            fprintf(stderr, "tfctl limits serve: unknown option %s\n", a);
            return usage(stderr);
        }
        if (rc)
            return rc;
    }
    if (n == 0)
        return usage(stderr);

    struct tf_nvml *nv = NULL;
    char err[256] = "";
    if (tf_nvml_open(nvml_lib, NULL, &nv, err, sizeof(err)) != 0)
        fprintf(stderr,
                "tfctl limits serve: NVML unavailable (%s): compute limits run open "
                "loop, device indexes cannot be resolved\n",
                err);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = open_workload(&wl[i], nv);
    struct tf_engine *e = NULL;
    if (rc == 0) {
        struct tf_engine_opts o = {
            .period_ms = interval,
            .usage = {.sample = nv ? tf_nvml_sample : NULL, .ctx = nv},
            .self_owner = tf_proc_self_owner(),
            .pidns = tf_proc_pidns(0),
        };
        e = tf_engine_new(&o);
        if (!e)
            rc = 1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        wl[i].id = tf_engine_add(e, &wl[i].map.r, wl[i].name ? wl[i].name : wl[i].path);
    if (rc == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        uint64_t start = mono_ns(), next = start, next_stats = start + 1000000000u;
        uint64_t last_stats = start;
        static uint64_t prev[MAX_WL][TF_SHM_MAX_DEVICES];
        for (int i = 0; i < n; i++)
            for (int d = 0; d < TF_SHM_MAX_DEVICES; d++)
                prev[i][d] = atomic_load(&wl[i].map.r.lim->dev[d].busy_ns);
        printf("serving %d region(s) every %u ms\n", n, interval);
        fflush(stdout);
        while (!stop) {
            next += (uint64_t)interval * 1000000u;
            uint64_t now = mono_ns();
            if (next > now) {
                struct timespec ts = {(time_t)((next - now) / 1000000000u),
                                      (long)((next - now) % 1000000000u)};
                nanosleep(&ts, NULL);
            }
            now = mono_ns();
            tf_engine_step(e, now);
            if (stats && now >= next_stats) {
                print_stats(wl, n, (double)(now - start) / 1e9, prev,
                            (double)(now - last_stats) / 1e9);
                last_stats = now;
                next_stats += 1000000000u;
            }
            if (duration > 0 && (double)(now - start) / 1e9 >= duration)
                break;
        }
    }
    tf_engine_destroy(e);
    for (int i = 0; i < n; i++)
        tf_shm_unmap(&wl[i].map);
    tf_nvml_close(nv);
    return rc;
}

static int cmd_set(int argc, char **argv)
{
    const char *path = NULL, *vram = NULL, *pct = NULL;
    unsigned dev = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--region"))
            path = argv[i + 1];
        else if (!strcmp(argv[i], "--device"))
            dev = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--vram-limit"))
            vram = argv[i + 1];
        else if (!strcmp(argv[i], "--compute-percent"))
            pct = argv[i + 1];
        else
            return usage(stderr);
    }
    if (!path || (argc - 1) % 2)
        return usage(stderr);
    struct tf_shm_map m;
    char err[512];
    if (tf_shm_open(path, TF_SHM_ENGINE, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "tfctl limits set: %s\n", err);
        return 1;
    }
    int rc = 0;
    struct tf_shm_ldev *d = &m.r.lim->dev[dev < TF_SHM_MAX_DEVICES ? dev : 0];
    uint32_t flags = atomic_load(&d->flags) & (TF_SHM_DEV_VRAM_LIMIT | TF_SHM_DEV_COMPUTE_LIMIT);
    uint64_t v = atomic_load(&d->vram_limit);
    uint32_t bp = atomic_load(&d->compute_limit_bp);
    if (vram && !strcmp(vram, "none"))
        flags &= ~TF_SHM_DEV_VRAM_LIMIT;
    else if (vram && (rc = parse_vram(vram, &v)) == 0)
        flags |= TF_SHM_DEV_VRAM_LIMIT;
    if (rc == 0 && pct && !strcmp(pct, "none"))
        flags &= ~TF_SHM_DEV_COMPUTE_LIMIT;
    else if (rc == 0 && pct && (rc = parse_percent(pct, &bp)) == 0)
        flags |= TF_SHM_DEV_COMPUTE_LIMIT;
    if (rc == 0) {
        int e = tf_shm_set_limits(&m.r, dev, flags, bp, v);
        if (e) {
            fprintf(stderr, "tfctl limits set: device %u: %s\n", dev, tf_strerror(e));
            rc = e == TF_ERANGE ? 2 : 1;
        }
    }
    tf_shm_unmap(&m);
    return rc;
}

static int cmd_show(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--region"))
        return usage(stderr);
    struct tf_shm_map m;
    char err[512];
    if (tf_shm_open(argv[2], TF_SHM_READ, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "tfctl limits show: %s\n", err);
        return 1;
    }
    struct tf_shm_config c;
    if (tf_shm_read_config(&m.r, &c) != 0) {
        fprintf(stderr, "tfctl limits show: %s: a config update is in progress\n", argv[2]);
        tf_shm_unmap(&m);
        return 1;
    }
    uint64_t hb = atomic_load(&m.r.lim->hdr.heartbeat_ns);
    printf("region %s\nname %s\nheartbeat %s\n", argv[2], c.name,
           hb == 0                                   ? "never"
           : tf_shm_heartbeat_stale(&m.r, mono_ns()) ? "stale"
                                                     : "fresh");
    printf("%-3s %-40s %8s %12s %12s %8s %8s %10s %8s %13s\n", "DEV", "UUID", "COMPUTE",
           "VRAM-LIMIT", "VRAM-USED", "SHARE", "RATE", "THROTTLED", "TAMPERED", "UNDERREPORTED");
    for (unsigned i = 0; i < c.ndev; i++) {
        struct tf_shm_ldev *d = &m.r.lim->dev[i];
        struct tf_shm_udev *ud = &m.r.use->dev[i];
        char u[48], lim[32] = "-", used[32];
        tf_shm_uuid_format(c.dev[i].uuid, u, sizeof(u));
        if (c.dev[i].flags & TF_SHM_DEV_VRAM_LIMIT)
            tf_quantity_format_bytes((int64_t)c.dev[i].vram_limit, lim, sizeof(lim));
        tf_quantity_format_bytes(atomic_load(&ud->vram_used), used, sizeof(used));
        char comp[16] = "-";
        if (c.dev[i].flags & TF_SHM_DEV_COMPUTE_LIMIT)
            snprintf(comp, sizeof(comp), "%.2f%%", c.dev[i].compute_limit_bp / 100.0);
        printf("%-3u %-40s %8s %12s %12s %7.1f%% %7.1f%% %10" PRIu64 " %8" PRIu64 " %13" PRIu64
               "\n",
               i, u, comp, lim, used, atomic_load(&d->share_bp) / 100.0,
               atomic_load(&d->rate_bp) / 100.0, atomic_load(&ud->throttle_count),
               atomic_load(&d->tampered), atomic_load(&d->underreported));
    }
    printf("processes:");
    int np = 0;
    for (int s = 0; s < TF_SHM_MAX_PIDS; s++) {
        uint64_t o = atomic_load(&m.r.use->pid[s].owner);
        if (o && !(o & TF_SHM_OWNER_RECLAIM)) {
            printf(" %u", tf_shm_owner_pid(o));
            np++;
        }
    }
    printf("%s\n", np ? "" : " none");
    tf_shm_unmap(&m);
    return 0;
}

int tf_cmd_limits(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    if (!strcmp(argv[1], "serve"))
        return cmd_serve(argc - 1, argv + 1);
    if (!strcmp(argv[1], "set"))
        return cmd_set(argc - 1, argv + 1);
    if (!strcmp(argv[1], "show"))
        return cmd_show(argc - 1, argv + 1);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
        return usage(stdout);
    fprintf(stderr, "tfctl limits: unknown subcommand \"%s\"\n", argv[1]);
    return usage(stderr);
}
