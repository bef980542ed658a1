/* SPDX-License-Identifier: Apache-2.0
 *
 * What stands around the extender in bench_extender (peers.c): kube-scheduler's HTTP client,
 * the stub kube-apiserver, the transport floor's handler, the machine's own figures, and the
 * clocks and percentiles the benchmark reads.
 */
#ifndef TF_BENCH_EXTENDER_PEERS_H
#define TF_BENCH_EXTENDER_PEERS_H

#include "controller/extender.h"
#include "controller/https.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define NS "ml" /* the pods' namespace */

/* Clocks in seconds: monotonic; CPU of this process (all threads) or of this thread; CPU of
 * the thread behind CLK (0 when it is gone). */
double now_s(void);
double cpu_s(bool thread);
double clock_s(clockid_t clk);
/* The P quantile of the N seconds in V (sorted in place), in milliseconds. */
double pct(double *v, int n, double p);
/* Prints extender_loadavg_1min_WHEN. */
void loadavg(const char *when);
/* This process's resident set, KiB. */
long rss_kib(void);

/* A pod as the webhook leaves it: VRAM_REQ asked; with NODE and IDS (resident pods), bound
 * there with that allocation. Returns snprintf's count. */
int pod_text(char *buf, size_t len, const char *name, const char *vram_req, const char *node,
             const char *ids);

/* The stub API server: answers what /bind asks of kube-apiserver (GET pod, POST
 * pods/binding, POST events) and, after a Binding, hands the pod's update to X's pod handler
 * as the pod informer would. ARG: a struct stub. */
struct stub {
    struct tf_extender *x;
};
void stub_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg);

/* kube-scheduler's side: libcurl over one keep-alive TLS connection. */
struct conn {
    CURL *h;
    char url[128];
    struct curl_blob ca;
    char *out; /* the last answer (NUL-terminated), LEN bytes */
    size_t len, cap;
};
void conn_init(struct conn *c, int port, const char *ca_pem);
void conn_free(struct conn *c);
/* POSTs BODY to /scheduler/VERB; the answer is in C->out. 0, or -1 (printed). */
int post(struct conn *c, const char *verb, const char *body, size_t len);

/* A growable text buffer for request bodies. */
struct text {
    char *s;
    size_t len, cap;
};
void put(struct text *t, const char *p, size_t n);
void puts_(struct text *t, const char *s);

/* The transport floor's handler (ARG: a struct canned): the same server with a handler that
 * answers /filter and /prioritize with the bytes the extender answered the pass's first pod. */
struct canned {
    char *filter, *prioritize;
    size_t flen, plen;
};
void floor_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg);

/* p50 of ROUNDS one-byte round trips over loopback TCP between two threads, microseconds. */
double loopback_rtt_us(int rounds);
/* Prints how this machine's idle CPUs wait (see peers.c). */
void machine_idle(void);

#endif
