/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker: executes CUDA driver calls forwarded by remote clients (libtf_client.so) on the
 * GPU of this node and enforces hard isolation limits.
 *
 *   tf-worker --listen ADDR --token-file F [--vram-limit Q] [--compute-percent P]
 *             [--limits-region PATH [--limits-wait S]] [--device N[,N...]] [--max-clients N]
 *             [--max-pending N] [--module-buffer-limit Q] [--pinned-staging] [--driver PATH]
 *             [--ready-file F]
 *             [--spin-us N] [--log-level L]
 *
 * Limits come from the flags, or (in Kubernetes) live from the pod's limit region that the
 * hypervisor writes (--limits-region; region.h): the two are exclusive. A worker told to use
 * a region never starts without it.
 *
 * One thread per client connection; SIGINT/SIGTERM stop it cleanly (connections closed, their
 * resources freed). docs/remote.md is the user documentation.
 */
#include "common/err.h"
#include "common/log.h"
#include "core/quantity.h"
#include "remote/auth.h"
#include "remote/worker/server.h"
#include "remote/worker/session.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: tf-worker --listen ADDR --token-file FILE [options]\n"
               "  --listen ADDR          tcp://HOST:PORT (PORT 0: any free port) or unix:///PATH\n"
               "  --token-file FILE      shared token clients must present (TF_TOKEN)\n"
               "  --vram-limit Q         VRAM cap per device, a quantity (e.g. 4Gi)\n"
               "  --compute-percent P    compute share of each device, 0 < P <= 100\n"
               "  --limits-region PATH   take both limits, live, from the pod's limit region\n"
               "                         (written by tf-hypervisor); not with the two above\n"
               "  --limits-wait S        wait up to S seconds for PATH to appear (default 60)\n"
               "  --device N[,N...]      driver device ordinals to expose (default 0)\n"
               "  --max-clients N        concurrent authenticated clients (default 64)\n"
               "  --max-pending N        connections still in their handshake, without the\n"
               "                         token yet (default 16; the oldest is dropped for a new)\n"
               "  --module-buffer-limit Q  module images all clients may buffer at once while\n"
               "                         uploading them or keeping them by digest (default 1Gi)\n"
               "  --stats-file FILE      rewrite FILE (JSON) with the module image counters\n"
               "                         after each module load\n"
               "  --pinned-staging       page-locked bulk-copy staging (faster on a GPU; its\n"
               "                         data is reachable from every client's kernels: use\n"
               "                         only when all clients are one tenant)\n"
               "  --driver PATH          CUDA driver library (default libcuda.so.1)\n"
               "  --ready-file FILE      write the bound address to FILE once listening\n"
               "  --spin-us N            poll N us for a client's next request before sleeping\n"
               "                         (default 30; 0: never; off on a single CPU)\n"
               "  --log-level L          error|warn|info|debug|trace\n");
}

static int write_ready(const char *path, const char *addr)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return TF_EIO;
    fprintf(f, "%s\n", addr);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return TF_EIO;
    return 0;
}

/* An integer option in [LO, HI]; prints why not and returns -1 otherwise. */
static int int_arg(const char *s, int lo, int hi, const char *name, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "tf-worker: %s \"%s\" is not %d..%d\n", name, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"listen", required_argument, 0, 'l'},
                                         {"token-file", required_argument, 0, 't'},
                                         {"vram-limit", required_argument, 0, 'v'},
                                         {"compute-percent", required_argument, 0, 'c'},
                                         {"limits-region", required_argument, 0, 'R'},
                                         {"limits-wait", required_argument, 0, 'W'},
                                         {"device", required_argument, 0, 'd'},
                                         {"max-clients", required_argument, 0, 'm'},
                                         {"max-pending", required_argument, 0, 'P'},
                                         {"module-buffer-limit", required_argument, 0, 'B'},
                                         {"pinned-staging", no_argument, 0, 'S'},
                                         {"stats-file", required_argument, 0, 'T'},
                                         {"driver", required_argument, 0, 'D'},
                                         {"ready-file", required_argument, 0, 'r'},
                                         {"spin-us", required_argument, 0, 's'},
                                         {"log-level", required_argument, 0, 'L'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *listen = NULL, *token_file = NULL, *ready = NULL;
    struct tf_worker_config wc = {0};
    int max_clients = 0, max_pending = 0, spin_us = 0, wait_s = -1;
    char err[512];
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            listen = optarg;
            break;
        case 't':
            token_file = optarg;
            break;
        case 'v':
            if (tf_quantity_bytes(optarg, &wc.vram_limit, "--vram-limit", err, sizeof(err)) ||
                wc.vram_limit <= 0) {
                fprintf(stderr, "tf-worker: %s\n",
                        wc.vram_limit <= 0 ? "--vram-limit must be positive" : err);
                return 2;
            }
            break;
        case 'c':
            if (tf_percent_parse(optarg, &wc.compute_bp, "--compute-percent", err, sizeof(err)) ||
                wc.compute_bp <= 0) {
                fprintf(stderr, "tf-worker: %s\n",
                        wc.compute_bp <= 0 ? "--compute-percent must be above 0" : err);
                return 2;
            }
            break;
        case 'R':
            if (!*optarg) {
                fprintf(stderr, "tf-worker: --limits-region needs a path\n");
                return 2;
            }
            wc.limits_region = optarg;
            break;
        case 'W':
            if (int_arg(optarg, 0, 86400, "--limits-wait", &wait_s) != 0)
                return 2;
            break;
        case 'd':
            wc.devices = optarg;
            break;
        case 'm':
            if (int_arg(optarg, 1, 4096, "--max-clients", &max_clients) != 0)
                return 2;
            break;
        case 'S':
            wc.pinned_staging = true;
            break;
        case 'P':
            if (int_arg(optarg, 1, 4096, "--max-pending", &max_pending) != 0)
                return 2;
            break;
        case 'B':
            if (tf_quantity_bytes(optarg, &wc.module_buffer_limit, "--module-buffer-limit", err,
                                  sizeof(err)) ||
                wc.module_buffer_limit < (1 << 20)) {
                fprintf(stderr, "tf-worker: %s\n",
                        wc.module_buffer_limit < (1 << 20) ? "--module-buffer-limit must be at "
                                                             "least 1Mi"
                                                           : err);
                return 2;
            }
            break;
        case 's':
            if (int_arg(optarg, 0, 100000, "--spin-us", &spin_us) != 0)
                return 2;
            if (spin_us == 0)
                spin_us = -1; /* never (0 in the server config is the default) */
            break;
        case 'T':
            wc.stats_file = optarg;
            break;
        case 'D':
            wc.driver_path = optarg;
            break;
        case 'r':
            ready = optarg;
            break;
        case 'L': {
            enum tf_log_level lvl;
            if (tf_log_parse_level(optarg, &lvl) != 0) {
                fprintf(stderr,
                        "tf-worker: --log-level \"%s\" is not error|warn|info|debug|trace\n",
                        optarg);
                return 2;
            }
            tf_log_set_level(lvl);
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!listen || !token_file || optind != argc) {
        usage(stderr);
        return 2;
    }
    if (wc.limits_region && (wc.vram_limit > 0 || wc.compute_bp > 0)) {
        fprintf(stderr,
                "tf-worker: --limits-region cannot be combined with %s: the region "
                "holds the limits\n",
                wc.vram_limit > 0 && wc.compute_bp > 0 ? "--vram-limit and --compute-percent"
                : wc.vram_limit > 0                    ? "--vram-limit"
                                                       : "--compute-percent");
        return 2;
    }
    if (wait_s >= 0 && !wc.limits_region) {
        fprintf(stderr, "tf-worker: --limits-wait is only meaningful with --limits-region\n");
        return 2;
    }
    wc.limits_wait_ms = (wait_s < 0 ? 60 : wait_s) * 1000;
    uint8_t token[TF_PROTO_MAX_TOKEN];
    size_t token_len = 0;
    if (tf_auth_token_file(token_file, token, sizeof(token), &token_len, err, sizeof(err))) {
        fprintf(stderr, "tf-worker: %s\n", err);
        return 2;
    }
    /* Signals are taken synchronously by the main thread; every other thread blocks them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    static struct tf_worker w;
    if (tf_worker_init(&w, &wc, err, sizeof(err))) {
        fprintf(stderr, "tf-worker: %s\n", err);
        return 1;
    }
    struct tf_server_config sc = {.listen = listen,
                                  .token = token,
                                  .token_len = token_len,
                                  .max_clients = max_clients,
                                  .max_pending = max_pending,
                                  .spin_us = spin_us};
    struct tf_server_handler h = {.hello = tf_worker_hello, .serve = tf_worker_serve, .arg = &w};
    struct tf_server *srv;
    if (tf_server_start(&sc, &h, &srv, err, sizeof(err))) {
        fprintf(stderr, "tf-worker: %s\n", err);
        tf_worker_fini(&w);
        return 1;
    }
    tf_log(TF_LOG_INFO, "worker", "listening on %s (%d device(s))", tf_server_address(srv), w.ndev);
    if (ready && write_ready(ready, tf_server_address(srv)) != 0) {
        fprintf(stderr, "tf-worker: cannot write --ready-file %s\n", ready);
        tf_server_destroy(srv);
        tf_worker_fini(&w);
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    tf_log(TF_LOG_INFO, "worker", "signal %d: shutting down", sig);
    tf_worker_shutdown(&w);
    tf_server_destroy(srv);
    tf_worker_fini(&w);
    return 0;
}
