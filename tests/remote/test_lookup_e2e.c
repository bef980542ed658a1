/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes remote mode end to end: libtf_client without TF_REMOTE asks a controller for its
 * worker (TF_CONTROLLER_URL, TF_CONNECTION_NAME, TF_CONNECTION_NAMESPACE) and then uses a
 * real tf-worker on the simulated GPU. The controller is a fake one, an HTTP responder process
 * forked by this test on 127.0.0.1 (plain sockets), that checks each request line, path and
 * query and answers from a script (503 a few times then 200, 404, never paired, oversized,
 * silent, not listening yet). Client scenarios run in forked children (e2e.h). The controller
 * is a process, not a thread of this one: a child forked while a thread runs may inherit a
 * lock (the sanitizer allocator's) held, and hang at exit.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e.h"

#define POD "my-app-7d4f9-x2k8q"
#define NS "team-a"
#define TARGET "/api/connection?name=" POD "&namespace=" NS

static struct e2e_worker W;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the fake controller -------------------------------------------------------------------- */

enum ctl_final { CTL_200, CTL_404, CTL_OVERSIZE, CTL_SILENT };

/* Written by the controller process, read by the test (a MAP_SHARED page). */
struct ctl_shared {
    _Atomic int stop;
    _Atomic int requests; /* well-formed requests seen */
    _Atomic int bad;      /* requests that were not the expected GET */
};

struct ctl {
    int lfd;
    int port;
    char url[128];
    int n503;             /* answer 503 to the first N503 requests ... */
    enum ctl_final final; /* ... then this */
    int listen_delay_ms;  /* refuse connections (bound, not listening) this long */
    char worker[160];
    pid_t pid;
    struct ctl_shared *sh; /* shared with the controller process */
};

static void reply(int fd, int status, const char *reason, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %zu\r\n"
                     "Content-Type: application/json\r\n\r\n",
                     status, reason, strlen(body));
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) < 0 ||
        send(fd, body, strlen(body), MSG_NOSIGNAL) < 0)
        fprintf(stderr, "fake controller: send: %s\n", strerror(errno));
}

/* Reads one request head (up to the empty line) within 2 s; its length or -1. */
static int read_head(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    double end = now_s() + 2;
    while (n + 1 < cap && now_s() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = 0;
        if (strstr(buf, "\r\n\r\n"))
            return (int)n;
    }
    return -1;
}

static void serve(struct ctl *c, int fd)
{
    char req[4096], host[64];
    if (read_head(fd, req, sizeof(req)) < 0) {
        atomic_fetch_add(&c->sh->bad, 1);
        return;
    }
    snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", c->port);
    if (strncmp(req, "GET " TARGET " HTTP/1.0\r\n", strlen("GET " TARGET " HTTP/1.0\r\n")) != 0 ||
        !strstr(req, host) || !strstr(req, "\r\nConnection: close\r\n")) {
        fprintf(stderr, "fake controller: unexpected request:\n%s\n", req);
        atomic_fetch_add(&c->sh->bad, 1);
        reply(fd, 400, "Bad Request",
              "{\"error\":\"name and namespace query parameters are required\"}");
        return;
    }
    int k = atomic_fetch_add(&c->sh->requests, 1);
    if (k < c->n503) {
        reply(fd, 503, "Service Unavailable",
              "{\"error\":\"connection not paired with a worker yet\"}");
        return;
    }
    switch (c->final) {
    case CTL_200: {
        char body[256];
        snprintf(body, sizeof(body), "{\"workerURL\":\"%s\"}", c->worker);
        reply(fd, 200, "OK", body);
        break;
    }
    case CTL_404:
        reply(fd, 404, "Not Found", "{\"error\":\"no such TensorFusionConnection\"}");
        break;
    case CTL_OVERSIZE: {
        size_t n = 20000;
        char *body = malloc(n + 1);
        memset(body, ' ', n);
        memcpy(body, "{\"workerURL\":\"tcp://127.0.0.1:1\"", 32);
        body[n - 1] = '}';
        body[n] = 0;
        reply(fd, 200, "OK", body);
        free(body);
        break;
    }
    case CTL_SILENT:
        /* Keep the connection open without a word until the test ends. */
        while (!atomic_load(&c->sh->stop))
            usleep(10000);
        break;
    }
}

static void ctl_main(struct ctl *c)
{
    if (c->listen_delay_ms) {
        usleep((useconds_t)c->listen_delay_ms * 1000);
        if (listen(c->lfd, 16) != 0) {
            fprintf(stderr, "fake controller: listen: %s\n", strerror(errno));
            return;
        }
    }
    while (!atomic_load(&c->sh->stop)) {
        struct pollfd p = {.fd = c->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(c->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        serve(c, fd);
        close(fd);
    }
}

/* Binds 127.0.0.1:0 and listens now, or after LISTEN_DELAY_MS (connections are refused until
 * then); the controller process serves it until ctl_stop. */
static void ctl_start(struct ctl *c, int n503, enum ctl_final final, int listen_delay_ms)
{
    memset(c, 0, sizeof(*c));
    c->sh = mmap(NULL, sizeof(*c->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(c->sh != MAP_FAILED);
    c->n503 = n503;
    c->final = final;
    c->listen_delay_ms = listen_delay_ms;
    snprintf(c->worker, sizeof(c->worker), "%s", W.addr);
    c->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c->lfd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(c->lfd, (struct sockaddr *)&sa, &sl), 0);
    c->port = ntohs(sa.sin_port);
    snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%d/api/connection", c->port);
    if (!listen_delay_ms)
        assert_int_equal(listen(c->lfd, 16), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        ctl_main(c);
        _exit(0);
    }
}

static void ctl_stop(struct ctl *c)
{
    atomic_store(&c->sh->stop, 1);
    int st;
    assert_int_equal(waitpid(c->pid, &st, 0), c->pid);
    close(c->lfd);
}

/* ---- client scenarios (children) ------------------------------------------------------------ */

struct scenario {
    const char *url;     /* TF_CONTROLLER_URL */
    const char *wait_ms; /* TF_CONNECT_WAIT_MS, NULL: default */
    int keep_remote;     /* leave TF_REMOTE (the worker's address) set */
    double min_s, max_s; /* how long cuInit may take */
    CUresult want;       /* what cuInit returns */
};

static void remote_mode_env(const struct scenario *s)
{
    if (!s->keep_remote)
        unsetenv("TF_REMOTE");
    setenv("TF_CONTROLLER_URL", s->url, 1);
    setenv("TF_CONNECTION_NAME", POD, 1);
    setenv("TF_CONNECTION_NAMESPACE", NS, 1);
    if (s->wait_ms)
        setenv("TF_CONNECT_WAIT_MS", s->wait_ms, 1);
}

/* cuInit as the scenario says; on success a device query and a copy round trip. */
static int c_init(void *arg)
{
    const struct scenario *s = arg;
    remote_mode_env(s);
    double t0 = now_s();
    E2E_CHECK_CU(cuInit(0), s->want, "cuInit");
    double took = now_s() - t0;
    if (took < s->min_s || took > s->max_s)
        fprintf(stderr, "cuInit took %.3f s, want %.3f..%.3f\n", took, s->min_s, s->max_s);
    E2E_CHECK(took >= s->min_s && took <= s->max_s);
    int n = -1;
    if (s->want != CUDA_SUCCESS) {
        E2E_CHECK_CU(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED, "count after failed init");
        return 0;
    }
    E2E_CU(cuDeviceGetCount(&n));
    E2E_CHECK(n == 1);
    CUdevice dev;
    CUcontext ctx;
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    E2E_CU(cuCtxSetCurrent(ctx));
    const size_t len = (1u << 20) + 13;
    uint8_t *a = malloc(len), *b = calloc(1, len);
    for (size_t i = 0; i < len; i++)
        a[i] = (uint8_t)(i * 131 + 7);
    CUdeviceptr d;
    E2E_CU(cuMemAlloc(&d, len));
    E2E_CU(cuMemcpyHtoD(d, a, len));
    E2E_CU(cuMemcpyDtoH(b, d, len));
    E2E_CHECK(memcmp(a, b, len) == 0);
    E2E_CU(cuMemFree(d));
    E2E_CU(cuDevicePrimaryCtxRelease(dev));
    free(a);
    free(b);
    return 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void client_finds_its_worker_through_the_controller_once_paired(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 2, CTL_200, 0);
    /* Two 503s: waits 100 ms, then 200 ms, then gets the worker. */
    struct scenario s = {.url = c.url, .min_s = 0.25, .max_s = 10, .want = CUDA_SUCCESS};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 3);
    assert_int_equal(atomic_load(&c.sh->bad), 0);
}

static void unknown_connection_fails_at_once_with_no_device(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 0, CTL_404, 0);
    struct scenario s = {.url = c.url, .min_s = 0, .max_s = 2, .want = CUDA_ERROR_NO_DEVICE};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 1);
    assert_int_equal(atomic_load(&c.sh->bad), 0);
}

static void never_paired_connection_gives_up_after_the_connect_wait(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 1000000, CTL_200, 0);
    struct scenario s = {
        .url = c.url, .wait_ms = "1500", .min_s = 1.45, .max_s = 3.5, .want = CUDA_ERROR_NO_DEVICE};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    /* Asked at 0, 0.1, 0.3, 0.7 and 1.5 s. */
    assert_in_range(atomic_load(&c.sh->requests), 4, 6);
    assert_int_equal(atomic_load(&c.sh->bad), 0);
}

static void restarting_controller_is_waited_for(void **state)
{
    (void)state;
    struct ctl c;
    /* Connections are refused for 700 ms (the controller's port is not listening yet). */
    ctl_start(&c, 0, CTL_200, 700);
    struct scenario s = {.url = c.url, .min_s = 0.65, .max_s = 10, .want = CUDA_SUCCESS};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 1);
    assert_int_equal(atomic_load(&c.sh->bad), 0);
}

static void tf_remote_wins_over_the_controller(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 0, CTL_404, 0);
    struct scenario s = {
        .url = c.url, .keep_remote = 1, .min_s = 0, .max_s = 10, .want = CUDA_SUCCESS};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 0);
    assert_int_equal(atomic_load(&c.sh->bad), 0);
}

static void oversized_answer_fails_at_once(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 0, CTL_OVERSIZE, 0);
    struct scenario s = {.url = c.url, .min_s = 0, .max_s = 2, .want = CUDA_ERROR_NO_DEVICE};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 1);
}

static void silent_controller_times_out_instead_of_hanging(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 0, CTL_SILENT, 0);
    /* One attempt of at least 1 s, then the 800 ms wait is over. */
    struct scenario s = {
        .url = c.url, .wait_ms = "800", .min_s = 0.95, .max_s = 3, .want = CUDA_ERROR_NO_DEVICE};
    assert_int_equal(e2e_run(c_init, &s, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 1);
}

/* Misconfigured remote mode: each is CUDA_ERROR_NO_DEVICE at once, without a request. */
static int c_misconfigured(void *arg)
{
    const char *url = arg;
    unsetenv("TF_REMOTE");
    setenv("TF_CONTROLLER_URL", url, 1);
    unsetenv("TF_CONNECTION_NAME");
    setenv("TF_CONNECTION_NAMESPACE", NS, 1);
    double t0 = now_s();
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "cuInit without TF_CONNECTION_NAME");
    setenv("TF_CONNECTION_NAME", POD, 1);
    unsetenv("TF_CONNECTION_NAMESPACE");
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "cuInit without TF_CONNECTION_NAMESPACE");
    setenv("TF_CONNECTION_NAMESPACE", NS, 1);
    setenv("TF_CONTROLLER_URL", "https://127.0.0.1:1/api/connection", 1);
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "cuInit with https");
    setenv("TF_CONTROLLER_URL", "127.0.0.1:1/api/connection", 1);
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "cuInit with a malformed URL");
    setenv("TF_CONTROLLER_URL", "", 1);
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "cuInit with neither variable");
    E2E_CHECK(now_s() - t0 < 1);
    /* Still retryable: with everything set it works. */
    setenv("TF_CONTROLLER_URL", url, 1);
    E2E_CU(cuInit(0));
    int n = 0;
    E2E_CU(cuDeviceGetCount(&n));
    E2E_CHECK(n == 1);
    return 0;
}

static void misconfigured_remote_mode_is_no_device_without_asking(void **state)
{
    (void)state;
    struct ctl c;
    ctl_start(&c, 0, CTL_200, 0);
    assert_int_equal(e2e_run(c_misconfigured, c.url, 30), 0);
    ctl_stop(&c);
    assert_int_equal(atomic_load(&c.sh->requests), 1);
    assert_int_equal(atomic_load(&c.sh->bad), 0);
}

/* A worker that is not listening yet (a hard-mode sidecar still waiting for its pod's region,
 * a restarting worker pod) is waited for when TF_CONNECT_WAIT_MS says so; without it, a
 * TF_REMOTE that nobody serves fails at once, as before. */
struct late {
    char remote[160];
    const char *wait_ms; /* NULL: unset */
    CUresult want;
    double min_s, max_s;
};

static int c_late(void *arg)
{
    const struct late *l = arg;
    unsetenv("TF_CONTROLLER_URL");
    setenv("TF_REMOTE", l->remote, 1);
    if (l->wait_ms)
        setenv("TF_CONNECT_WAIT_MS", l->wait_ms, 1);
    else
        unsetenv("TF_CONNECT_WAIT_MS");
    double t0 = now_s();
    E2E_CHECK_CU(cuInit(0), l->want, "cuInit");
    double took = now_s() - t0;
    if (took < l->min_s || took > l->max_s)
        fprintf(stderr, "cuInit took %.3f s, want %.3f..%.3f\n", took, l->min_s, l->max_s);
    E2E_CHECK(took >= l->min_s && took <= l->max_s);
    if (l->want == CUDA_SUCCESS) {
        int n = -1;
        E2E_CU(cuDeviceGetCount(&n));
        E2E_CHECK(n == 1);
    }
    return 0;
}

static void a_worker_that_starts_after_the_client_is_waited_for(void **state)
{
    (void)state;
    char dir[] = "/tmp/tf-late-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct late l = {.wait_ms = "10000", .want = CUDA_SUCCESS, .min_s = 0.4, .max_s = 9};
    snprintf(l.remote, sizeof(l.remote), "unix://%s/late.sock", dir);
    pid_t kid = e2e_spawn(c_late, &l);
    struct timespec nap = {0, 500 * 1000 * 1000};
    nanosleep(&nap, NULL);
    struct e2e_worker late;
    const char *extra[] = {"--listen", l.remote, NULL};
    e2e_start(&late, 0, extra);
    assert_int_equal(e2e_wait(kid, 30), 0);
    e2e_stop(&late);
    /* Nobody there and no wait asked for: at once. */
    struct late none = {.wait_ms = NULL, .want = CUDA_ERROR_NO_DEVICE, .min_s = 0, .max_s = 1};
    snprintf(none.remote, sizeof(none.remote), "unix://%s/none.sock", dir);
    assert_int_equal(e2e_run(c_late, &none, 30), 0);
    /* A wait that runs out: after about that long. */
    none.wait_ms = "600";
    none.min_s = 0.55;
    none.max_s = 3;
    assert_int_equal(e2e_run(c_late, &none, 30), 0);
    char sock[200];
    snprintf(sock, sizeof(sock), "%s/late.sock", dir);
    unlink(sock);
    rmdir(dir);
}

static int setup(void **state)
{
    (void)state;
    e2e_start(&W, 1, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(&W);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_finds_its_worker_through_the_controller_once_paired),
        cmocka_unit_test(unknown_connection_fails_at_once_with_no_device),
        cmocka_unit_test(never_paired_connection_gives_up_after_the_connect_wait),
        cmocka_unit_test(restarting_controller_is_waited_for),
        cmocka_unit_test(tf_remote_wins_over_the_controller),
        cmocka_unit_test(oversized_answer_fails_at_once),
        cmocka_unit_test(silent_controller_times_out_instead_of_hanging),
        cmocka_unit_test(misconfigured_remote_mode_is_no_device_without_asking),
        cmocka_unit_test(a_worker_that_starts_after_the_client_is_waited_for),
    };
    if (getenv("TF_TEST_FILTER"))
        cmocka_set_test_filter(getenv("TF_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
