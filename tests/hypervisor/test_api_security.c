/* SPDX-License-Identifier: Apache-2.0
 *
 * Attacks on tf-hypervisor's HTTP API by peers without its token, against the real binary
 * (fake NVML): silent or dribbling connections that used to fill all 64 connection slots,
 * and the leases of remote workloads that then expired because their heartbeats could not
 * get in.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hvtest.h"

#define A100                                                                                       \
    "NVIDIA A100-SXM4-80GB|GPU-a1000000-0000-4000-8000-000000000001|85899345920|40|1073741824\n"
#define TOKEN "0123456789abcdef0123456789abcdef"

static struct hvt T;

static int setup(void **state)
{
    hvt_init(&T, A100);
    char tokfile[400];
    snprintf(tokfile, sizeof(tokfile), "%s/api.token", T.dir);
    FILE *f = fopen(tokfile, "w");
    assert_non_null(f);
    fputs(TOKEN "\n", f);
    fclose(f);
    const char *extra[] = {"--api-token-file", tokfile, "--lease-timeout", "1000", NULL};
    hvt_start(&T, extra);
    snprintf(T.auth, sizeof(T.auth), "Authorization: Bearer " TOKEN);
    return 0;
}

static int teardown(void **state)
{
    hvt_cleanup(&T);
    return 0;
}

/* A TCP connection to the API that sends nothing, or one byte of a request. */
static int squat(bool dribble)
{
    int port = atoi(strrchr(T.base, ':') + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    if (dribble)
        (void)!send(fd, "G", 1, MSG_NOSIGNAL);
    return fd;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void silent_connections_never_lock_the_token_holders_out(void **state)
{
    int fds[100];
    for (int i = 0; i < 100; i++)
        fds[i] = squat(i % 2);
    double t0 = now_s();
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads", NULL, NULL, &o), 200);
    json_object_put(o);
    assert_true(now_s() - t0 < 3.0);
    /* and the squatters are gone within the handshake deadline */
    usleep(2600 * 1000);
    char b;
    int open_ = 0;
    for (int i = 0; i < 100; i++) {
        if (fds[i] >= 0 && recv(fds[i], &b, 1, MSG_DONTWAIT) < 0)
            open_++;
        if (fds[i] >= 0)
            close(fds[i]);
    }
    assert_int_equal(open_, 0);
}

static bool gone(struct hvt *t, void *arg)
{
    return hvt_count_workloads(t) == 0;
}

/* The attack: keep the API saturated so a remote client's heartbeats cannot get in; its
 * lease used to run out and its workload was released. Now a lease runs out only a full
 * lease period after the API last had to turn a connection away. */
static void a_lease_is_not_expired_while_the_api_is_saturated(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"remote\",\"isolation\":\"shared\",\"lease\":true}", NULL,
                              &o),
                     201);
    json_object_put(o);
    /* 3 s of flooding (three lease periods), no heartbeat from anyone */
    double t0 = now_s();
    int fds[400], n = 0;
    while (now_s() - t0 < 3.0 && n < 400) {
        fds[n] = squat(false);
        if (fds[n] >= 0)
            n++;
        usleep(10000);
    }
    assert_int_equal(hvt_count_workloads(&T), 1);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    /* The flood over, an unrenewed lease runs out as before. */
    assert_true(hvt_wait(gone, &T, NULL, 6000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(silent_connections_never_lock_the_token_holders_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_lease_is_not_expired_while_the_api_is_saturated, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
