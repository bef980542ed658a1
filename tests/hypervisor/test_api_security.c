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
#include <sys/stat.h>
#include <sys/wait.h>
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

static int setup_default(void **state)
{
    hvt_init(&T, A100);
    hvt_start(&T, NULL); /* no --api-token-file */
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

/* Whether user UID (a fork that drops root) can open PATH with fopen MODE. */
static bool user_can_open(int uid, const char *path, const char *mode)
{
    pid_t p = fork();
    if (p == 0) {
        if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0)
            _exit(2);
        FILE *f = fopen(path, mode);
        _exit(f ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 2)
        fail_msg("cannot switch to user %d", uid);
    return WEXITSTATUS(st) == 0;
}

/* The attack: with no --api-token-file the API answered anyone who could reach it, so any
 * local user could delete or create anyone's workloads. Now it takes a token made at first
 * start in the state directory, readable by the hypervisor's user alone; tfctl reads it. */
static void the_api_is_authenticated_by_default(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"mine\",\"isolation\":\"shared\",\"lease\":true}", NULL,
                              &o),
                     201);
    json_object_put(o);
    T.no_auth = true;
    assert_int_equal(hvt_http(&T, "DELETE", "/api/v1/workloads/mine", NULL, NULL, &o), 401);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"theirs\",\"isolation\":\"shared\"}", NULL, &o),
                     401);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "GET", "/healthz", NULL, NULL, &o), 200); /* public */
    json_object_put(o);
    T.no_auth = false;
    assert_int_equal(hvt_count_workloads(&T), 1);
    char tp[400];
    snprintf(tp, sizeof(tp), "%s/api-token", T.state);
    struct stat st;
    assert_int_equal(stat(tp, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    if (getuid() == 0)
        assert_false(user_can_open(65534, tp, "r"));
    /* tfctl, as the hypervisor's user, uses it */
    char *out = NULL;
    const char *get[] = {"get", "gpus", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, get), 0);
    free(out);
    /* the same token after a restart (running tfctl keep working) */
    char before[200], after[200];
    FILE *f = fopen(tp, "r");
    assert_non_null(fgets(before, sizeof(before), f));
    fclose(f);
    hvt_kill(&T, SIGTERM);
    hvt_start(&T, NULL);
    f = fopen(tp, "r");
    assert_non_null(fgets(after, sizeof(after), f));
    fclose(f);
    assert_string_equal(before, after);
}

/* Whether user UID (a fork that drops root) can rename FROM to TO. */
static bool user_can_rename(int uid, const char *from, const char *to)
{
    pid_t p = fork();
    if (p == 0) {
        if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0)
            _exit(2);
        _exit(rename(from, to) == 0 ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 2)
        fail_msg("cannot switch to user %d", uid);
    return WEXITSTATUS(st) == 0;
}

/* The attacks: limit regions were created world-writable, so any local user could raise any
 * workload's limit; and the workload's own user could raise its own, its region being one file
 * it wrote. Now a soft workload's region is two files: the limits part belongs to the
 * hypervisor (mode 0644, in a directory only the hypervisor writes: the workload can read it,
 * neither write nor replace it), the usage part to the user of the process that asked for the
 * workload (mode 0600: no other user may even read it). */
static void a_region_belongs_to_its_workloads_user_alone(void **state)
{
    if (getuid() != 0) {
        print_message("not root: cannot run processes of other users, skipped\n");
        return;
    }
    /* (the scratch directories are private; /var/lib/tensor-fusion is not) */
    assert_int_equal(chmod(T.dir, 0755), 0);
    assert_int_equal(chmod(T.state, 0755), 0);
    pid_t app = fork();
    if (app == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        pause();
        _exit(0);
    }
    usleep(100 * 1000);
    char body[256];
    snprintf(body, sizeof(body),
             "{\"name\":\"owned\",\"vramLimit\":\"1Gi\",\"computePercentLimit\":\"20\","
             "\"pid\":%d}",
             (int)app);
    json_object *o = NULL;
    int status = hvt_http(&T, "POST", "/api/v1/workloads", body, NULL, &o);
    kill(app, SIGKILL);
    waitpid(app, NULL, 0);
    assert_int_equal(status, 201);
    const char *shm = json_object_get_string(
        json_object_object_get(json_object_object_get(o, "env"), "TF_SHM_PATH"));
    assert_non_null(shm);
    char path[512], usage[600], dir[512];
    snprintf(path, sizeof(path), "%s", shm);
    json_object_put(o);
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    snprintf(usage, sizeof(usage), "%s/rw/shm", dir);
    struct stat st;
    /* The limits part: the hypervisor's. */
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_true(user_can_open(65534, path, "r"));
    assert_false(user_can_open(65534, path, "r+"));
    assert_false(user_can_rename(65534, usage, path)); /* nor replaced by its own file */
    /* The usage part: the workload's user's alone. */
    assert_int_equal(stat(usage, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_true(user_can_open(65534, usage, "r+"));
    assert_false(user_can_open(65533, usage, "r+"));
    assert_false(user_can_open(65533, usage, "r"));
    assert_false(user_can_open(65533, path, "r+"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(silent_connections_never_lock_the_token_holders_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_lease_is_not_expired_while_the_api_is_saturated, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_api_is_authenticated_by_default, setup_default,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_region_belongs_to_its_workloads_user_alone, setup_default,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
