/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-hypervisor: the node daemon in local mode. Discovers GPUs through NVML, keeps workloads
 * and allocations in the SQLite state store, serves the HTTP API, releases workloads whose
 * processes are gone, and writes metric lines every interval. With --kubernetes it is also
 * the node agent (k8s_agent.h): GPU objects and the limit regions of the pods bound here.
 *
 * usage: tf-hypervisor [--state-dir DIR] [--listen HOST:PORT] [--nvml LIB]
 *                      [--metrics-sink URI|none] [--metrics-interval MS]
 *                      [--sample-interval MS] [--discovery-interval MS] [--node NAME]
 *                      [--pool NAME] [--lib-dir DIR] [--log-level LEVEL]
 *                      [--device-plugin on|off] [--kubelet-dir DIR] [--vgpu-slots N]
 *                      [--kubernetes [--node-name NAME] [--shm-root DIR] [API flags]]
 */
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "hypervisor/console.h"
#include "hypervisor/deviceplugin/dp_hv.h"
#include "hypervisor/escape.h"
#include "hypervisor/hv.h"
#include "hypervisor/k8s_agent.h"
#include "hypervisor/k8s_index.h"
#include "hypervisor/paths.h"
#include "hypervisor/runtime.h"
#include "hypervisor/soft.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    stop_requested = sig;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tf-hypervisor [--state-dir DIR] [--listen HOST:PORT] [--nvml LIB]\n"
            "                     [--metrics-sink sqlite:PATH|file:PATH|http(s)://URL|none]\n"
            "                     [--metrics-interval MS] [--sample-interval MS]\n"
            "                     [--discovery-interval MS] [--node NAME] [--pool NAME]\n"
            "                     [--lib-dir DIR] [--worker-host ADDR] [--api-token-file F]\n"
            "                     [--lease-timeout MS] [--log-level error|warn|info|debug]\n"
            "                     [--vram-escape off|report|kill] [--vram-escape-slack Q]\n"
            "                     [--compute-underreport report|pause]\n"
            "                     [--device-plugin on|off] [--kubelet-dir DIR] [--vgpu-slots N]\n"
            "Kubernetes mode:\n" TF_HV_K8S_USAGE);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_args(int argc, char **argv, struct tf_hv_config *c, struct tf_hv_k8s_opts *k8s)
{
    memset(c, 0, sizeof(*c));
    tf_dp_config_init(&c->dp);
    snprintf(c->listen, sizeof(c->listen), "127.0.0.1:0");
    snprintf(c->pool, sizeof(c->pool), "local");
    c->metrics_interval_ms = 5000;
    c->sample_interval_ms = 1000;
    c->discovery_interval_ms = 5000;
    c->liveness_interval_ms = 250;
    c->lease_timeout_ms = 15000;
    c->escape_action = TF_HV_ESCAPE_REPORT;
    c->escape_slack = (int64_t)512 << 20;
    c->underreport_pause = true;
    snprintf(c->worker_host, sizeof(c->worker_host), "127.0.0.1");
    if (gethostname(c->node, sizeof(c->node)) != 0)
        snprintf(c->node, sizeof(c->node), "local");
    c->node[sizeof(c->node) - 1] = '\0';
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *dst = NULL, err[256];
        size_t cap = 0;
        int rc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        int used = tf_hv_k8s_flag(k8s, a, v);
        if (used < 0)
            return 2;
        if (used) {
            i += used - 2;
            continue;
        }
        if (!v) {
            fprintf(stderr, "tf-hypervisor: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--state-dir"))
            dst = c->state_dir, cap = sizeof(c->state_dir);
        else if (!strcmp(a, "--listen"))
            dst = c->listen, cap = sizeof(c->listen);
        else if (!strcmp(a, "--nvml"))
            dst = c->nvml_lib, cap = sizeof(c->nvml_lib);
        else if (!strcmp(a, "--metrics-sink"))
            dst = c->metrics_sink, cap = sizeof(c->metrics_sink);
        else if (!strcmp(a, "--node"))
            dst = c->node, cap = sizeof(c->node);
        else if (!strcmp(a, "--pool"))
            dst = c->pool, cap = sizeof(c->pool);
        else if (!strcmp(a, "--lib-dir"))
            dst = c->lib_dir, cap = sizeof(c->lib_dir);
        else if (!strcmp(a, "--worker-host"))
            dst = c->worker_host, cap = sizeof(c->worker_host);
        if (dst) {
            if (!tf_strlcpy(dst, v, cap)) {
                fprintf(stderr, "tf-hypervisor: %s: value too long\n", a);
                return 2;
            }
        } else if (!strcmp(a, "--api-token-file")) {
            char terr[700];
            if (tf_hv_token_read(v, c->api_token, sizeof(c->api_token), terr, sizeof(terr))) {
                fprintf(stderr, "tf-hypervisor: --api-token-file %s\n", terr);
                return 2;
            }
        } else if (!strcmp(a, "--vram-escape")) {
            enum tf_hv_escape_action act;
            if (tf_hv_escape_action_parse(v, &act)) {
                fprintf(stderr, "tf-hypervisor: --vram-escape: \"%s\" is not off, report or kill\n",
                        v);
                return 2;
            }
            c->escape_action = (int)act;
        } else if (!strcmp(a, "--compute-underreport")) {
            if (strcmp(v, "report") && strcmp(v, "pause")) {
                fprintf(stderr,
                        "tf-hypervisor: --compute-underreport: \"%s\" is not report or pause\n", v);
                return 2;
            }
            c->underreport_pause = !strcmp(v, "pause");
        } else if (!strcmp(a, "--vram-escape-slack")) {
            char qerr[256];
            if (tf_quantity_bytes(v, &c->escape_slack, "--vram-escape-slack", qerr, sizeof(qerr)) ||
                c->escape_slack < 0) {
                fprintf(stderr, "tf-hypervisor: %s\n",
                        c->escape_slack < 0 ? "--vram-escape-slack must not be negative" : qerr);
                return 2;
            }
        } else if (!strcmp(a, "--lease-timeout")) {
            char *end;
            long ms = strtol(v, &end, 10);
            if (*end || ms < 500 || ms > 3600000) {
                fprintf(stderr, "tf-hypervisor: --lease-timeout: \"%s\" is not 500..3600000 ms\n",
                        v);
                return 2;
            }
            c->lease_timeout_ms = (int)ms;
        } else if (!strcmp(a, "--metrics-interval") || !strcmp(a, "--discovery-interval") ||
                   !strcmp(a, "--sample-interval")) {
            char *end;
            long ms = strtol(v, &end, 10);
            if (*end || ms < 50 || ms > 3600000) {
                fprintf(stderr, "tf-hypervisor: %s: \"%s\" is not 50..3600000 ms\n", a, v);
                return 2;
            }
            if (a[2] == 'm')
                c->metrics_interval_ms = (int)ms;
            else if (a[2] == 's')
                c->sample_interval_ms = (int)ms;
            else
                c->discovery_interval_ms = (int)ms;
        } else if (!strcmp(a, "--log-level")) {
            enum tf_log_level lvl;
            if (tf_log_parse_level(v, &lvl)) {
                fprintf(stderr, "tf-hypervisor: --log-level: \"%s\" is not a level\n", v);
                return 2;
            }
            tf_log_set_level(lvl);
        } else if ((rc = tf_dp_config_option(&c->dp, a, v, err, sizeof(err))) != 0) {
            if (rc < 0) {
                fprintf(stderr, "tf-hypervisor: %s\n", err);
                return 2;
            }
        } else {
            fprintf(stderr, "tf-hypervisor: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!c->state_dir[0] && tf_hv_state_dir(c->state_dir, sizeof(c->state_dir))) {
        fprintf(stderr, "tf-hypervisor: cannot determine the state directory; use --state-dir\n");
        return 2;
    }
    if (!c->lib_dir[0]) {
        /* Default: the directory of this executable (install layout) */
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0) {
            exe[n] = '\0';
            char *slash = strrchr(exe, '/');
            if (slash)
                *slash = '\0';
            tf_strlcpy(c->lib_dir, exe, sizeof(c->lib_dir));
        }
    }
    return 0;
}

/* The limit engine's compute cross-check may pause process HOST_PID of workload NAME only when
 * the hypervisor itself knows it as that workload's: a local workload's process tree, or a
 * process in the pod's cgroup (the region's PID slots are the app's to write). Main loop. */
struct pause_ctx {
    struct tf_hv *hv;
    struct tf_hv_k8s *k8s;
};

static bool may_pause(void *ctx, const char *name, uint32_t host_pid)
{
    const struct pause_ctx *pc = ctx;
    return tf_hv_workload_owns(pc->hv, name, (int)host_pid) ||
           tf_hv_k8s_owns(pc->k8s, name, (int)host_pid);
}

static int write_addr(const char *dir, int port)
{
    char tmp[600], path[600];
    snprintf(tmp, sizeof(tmp), "%s/hypervisor.addr.tmp", dir);
    snprintf(path, sizeof(path), "%s/hypervisor.addr", dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return TF_EIO;
    fprintf(f, "127.0.0.1:%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return TF_EIO;
    return 0;
}

int main(int argc, char **argv)
{
    struct tf_hv hv;
    struct tf_hv_k8s_opts k8s_opts = {0};
    struct tf_hv_k8s *k8s = NULL;
    memset(&hv, 0, sizeof(hv));
    int rc = parse_args(argc, argv, &hv.cfg, &k8s_opts);
    bool pool_given = false;
    for (int i = 1; i < argc; i++)
        pool_given |= !strcmp(argv[i], "--pool") || !strncmp(argv[i], "--pool=", 7);
    if (rc)
        return rc;
    char err[512], path[700];
    if (tf_hv_mkdirs(hv.cfg.state_dir, 0755, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "hypervisor", "%s", err);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/hypervisor.lock", hv.cfg.state_dir);
    int lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "?";
        if (lockfd >= 0) {
            ssize_t n = pread(lockfd, pid, sizeof(pid) - 1, 0);
            pid[n > 0 ? n : 0] = '\0';
            pid[strcspn(pid, "\n")] = '\0';
        }
        tf_log(TF_LOG_ERROR, "hypervisor",
               "another tf-hypervisor (pid %s) holds %s; one per state directory", pid, path);
        return 1;
    }
    char pidbuf[32];
    int pl = snprintf(pidbuf, sizeof(pidbuf), "%d\n", (int)getpid());
    if (ftruncate(lockfd, 0) != 0 || pwrite(lockfd, pidbuf, (size_t)pl, 0) != pl)
        tf_log(TF_LOG_WARN, "hypervisor", "cannot record pid in %s", path);

    if (!hv.cfg.api_token[0]) {
        /* Authenticated by default: the token only this user (and root) can read. */
        snprintf(path, sizeof(path), "%s/" TF_HV_API_TOKEN_FILE, hv.cfg.state_dir);
        if (tf_hv_token_ensure(path, hv.cfg.api_token, sizeof(hv.cfg.api_token), err,
                               sizeof(err))) {
            tf_log(TF_LOG_ERROR, "hypervisor", "%s", err);
            return 1;
        }
        tf_log(TF_LOG_INFO, "hypervisor", "API token in %s (this user only)", path);
    }
    snprintf(path, sizeof(path), "%s/state.db", hv.cfg.state_dir);
    if (tf_hv_state_open(path, &hv.state, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "hypervisor", "%s", err);
        return 1;
    }
    pthread_mutex_init(&hv.mu, NULL);
    /* Kubernetes mode: the node's pool is tf-controller's to assign (pools by selector); an
     * explicit --pool only labels GPU objects when they are first created. */
    if (k8s_opts.enabled && !pool_given)
        hv.cfg.pool[0] = '\0';
    if (tf_hv_set_pool_tag(&hv, hv.cfg.pool)) {
        tf_log(TF_LOG_ERROR, "hypervisor", "out of memory");
        return 1;
    }
    if (tf_hv_nvml_open(hv.cfg.nvml_lib[0] ? hv.cfg.nvml_lib : NULL, &hv.nvml, hv.nvml_error,
                        sizeof(hv.nvml_error))) {
        tf_log(TF_LOG_WARN, "hypervisor", "%s: running without GPUs", hv.nvml_error);
    } else {
        tf_log(TF_LOG_INFO, "hypervisor", "NVML: %s", tf_hv_nvml_library(hv.nvml));
    }
    if (strcmp(hv.cfg.metrics_sink, "none") != 0) {
        char uri[800];
        if (hv.cfg.metrics_sink[0])
            snprintf(uri, sizeof(uri), "%s", hv.cfg.metrics_sink);
        else
            snprintf(uri, sizeof(uri), "sqlite:%s/metrics.db", hv.cfg.state_dir);
        if (tf_metrics_sink_open_async(uri, &hv.sink, err, sizeof(err))) {
            tf_log(TF_LOG_ERROR, "hypervisor", "metrics sink: %s", err);
            return 1;
        }
    }
    hv.console = tf_hv_console_new(&hv);
    const char *usage_lib = hv.cfg.nvml_lib[0] ? hv.cfg.nvml_lib : getenv("TF_NVML_LIBRARY");
    struct pause_ctx pc = {&hv, NULL};
    if (tf_hv_soft_new(usage_lib, hv.cfg.underreport_pause ? may_pause : NULL, &pc, &hv.soft, err,
                       sizeof(err)))
        tf_log(TF_LOG_WARN, "hypervisor", "%s: soft isolation unavailable", err);
    tf_hv_discover(&hv);
    /* Workloads that outlived a previous hypervisor keep their allocations and limits (their
     * regions are reopened); the ones whose processes died meanwhile are released by the
     * first reap. */
    struct tf_hv_workload *ws;
    int nw = 0;
    if (tf_hv_state_list(hv.state, &ws, &nw, err, sizeof(err)) == 0) {
        if (nw)
            tf_log(TF_LOG_INFO, "hypervisor", "resuming %d workload(s) from %s", nw, path);
        for (int i = 0; i < nw; i++)
            if (tf_hv_runtime_resume(&hv, &ws[i], err, sizeof(err)))
                tf_log(TF_LOG_ERROR, "hypervisor", "resuming %s: %s", ws[i].req.name, err);
        free(ws);
    }
    tf_hv_reap(&hv);

    if (k8s_opts.enabled && !(hv.idx = tf_hv_idx_new())) {
        tf_log(TF_LOG_ERROR, "hypervisor", "out of memory");
        return 1;
    }
    if (k8s_opts.enabled && tf_hv_k8s_start(&hv, &k8s_opts, &k8s, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "hypervisor", "kubernetes: %s", err);
        return 1;
    }
    pc.k8s = k8s;

    struct tf_hv_http *http;
    if (tf_hv_http_start(&hv, &http, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "hypervisor", "%s", err);
        return 1;
    }
    if (write_addr(hv.cfg.state_dir, hv.port)) {
        tf_log(TF_LOG_ERROR, "hypervisor", "cannot write %s/hypervisor.addr", hv.cfg.state_dir);
        return 1;
    }
    tf_log(TF_LOG_INFO, "hypervisor", "listening on %s (port %d) state=%s", hv.cfg.listen, hv.port,
           hv.cfg.state_dir);
    struct tf_hv_dp dp;
    if (tf_hv_dp_start(&hv, &dp, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "hypervisor", "%s", err);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (hv.cfg.sample_interval_ms > hv.cfg.metrics_interval_ms)
        hv.cfg.sample_interval_ms = hv.cfg.metrics_interval_ms;
    int64_t next_sample = mono_ms(), next_metrics = mono_ms();
    int64_t next_disc = mono_ms() + hv.cfg.discovery_interval_ms;
    int64_t next_reap = mono_ms();
    while (!stop_requested) {
        int64_t now = mono_ms();
        tf_hv_soft_step(&hv);
        if (k8s)
            tf_hv_k8s_step(k8s, now);
        if (now >= next_reap) {
            tf_hv_reap(&hv);
            next_reap = now + hv.cfg.liveness_interval_ms;
        }
        if (now >= next_disc) {
            tf_hv_discover(&hv);
            next_disc = now + hv.cfg.discovery_interval_ms;
        }
        if (now >= next_sample) {
            bool record = now >= next_metrics;
            tf_hv_sample_and_record(&hv, record);
            if (record)
                tf_hv_console_flush(&hv);
            tf_hv_check_escapes(&hv);
            tf_hv_k8s_check_escapes(k8s);
            next_sample = now + hv.cfg.sample_interval_ms;
            if (record)
                next_metrics = now + hv.cfg.metrics_interval_ms;
        }
        struct timespec ts = {0, (long)TF_HV_ENGINE_PERIOD_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    tf_log(TF_LOG_INFO, "hypervisor", "stopping (signal %d); workloads stay recorded",
           (int)stop_requested);
    tf_hv_idx_close(hv.idx); /* an Allocate waiting for a partition ends now */
    tf_hv_dp_stop(&dp);
    tf_hv_k8s_stop(k8s);
    tf_hv_idx_free(hv.idx);
    tf_hv_http_stop(http);
    snprintf(path, sizeof(path), "%s/hypervisor.addr", hv.cfg.state_dir);
    unlink(path);
    tf_hv_console_flush(&hv);
    tf_hv_console_destroy(hv.console);
    tf_metrics_sink_destroy(hv.sink);
    tf_hv_soft_destroy(hv.soft); /* regions stay: running apps keep their limits */
    tf_hv_nvml_close(hv.nvml);
    tf_hv_state_close(hv.state);
    json_object_put(hv.escapes);
    json_object_put(hv.pool_names);
    pthread_mutex_destroy(&hv.mu);
    close(lockfd);
    return 0;
}
