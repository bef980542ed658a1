/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP sink against a real line-protocol server: Debian's influxdb (1.6) started by the test
 * on 127.0.0.1, written through its /write?precision=ms endpoint (GreptimeDB's
 * /v1/influxdb/api/v2/write takes the same body). Points read back through /query must equal
 * what was written, escaping included; a server that is down keeps the lines queued until it
 * is back; a 4xx answer drops the batch with the server's message. In background mode (the
 * hypervisor's and the controller's sinks) the same holds without the caller ever sending:
 * points written during an outage all arrive once the server is up, a bounded queue keeps
 * the newest lines and counts the others dropped. Skipped (with a SKIP line) when influxd is
 * not installed or cannot start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <json-c/json.h>

#include "common/dynbuf.h"
#include "common/err.h"
#include "metrics/sink.h"

static char dir[256];
static int port;
static pid_t influxd = -1;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static size_t collect(char *p, size_t size, size_t nmemb, void *arg)
{
    return tf_dynbuf_add(arg, p, size * nmemb) ? 0 : size * nmemb;
}

/* GET or POST URL; returns the HTTP status (0 on connection failure) and the body in OUT. */
static long http(const char *url, bool post, struct tf_dynbuf *out)
{
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    if (post)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

static bool start_influxd(void)
{
    char conf[300], cmd[400];
    snprintf(conf, sizeof(conf), "%s/influxdb.conf", dir);
    int meta_port = free_port();
    FILE *f = fopen(conf, "w");
    if (!f)
        return false;
    fprintf(f,
            "reporting-disabled = true\nbind-address = \"127.0.0.1:%d\"\n"
            "[meta]\n  dir = \"%s/meta\"\n"
            "[data]\n  dir = \"%s/data\"\n  wal-dir = \"%s/wal\"\n  query-log-enabled = false\n"
            "[http]\n  bind-address = \"127.0.0.1:%d\"\n  log-enabled = false\n"
            "[monitor]\n  store-enabled = false\n"
            "[continuous_queries]\n  enabled = false\n",
            meta_port, dir, dir, dir, port);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s/influxd.log", dir);
    influxd = fork();
    if (influxd == 0) {
        FILE *log = freopen(cmd, "w", stderr);
        (void)log;
        dup2(2, 1);
        execlp("influxd", "influxd", "run", "-config", conf, (char *)NULL);
        _exit(127);
    }
    if (influxd < 0)
        return false;
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/ping", port);
    for (int i = 0; i < 200; i++) { /* up to 20 s */
        struct tf_dynbuf b;
        tf_dynbuf_init(&b, 1 << 16);
        long st = http(url, false, &b);
        tf_dynbuf_free(&b);
        if (st == 204)
            return true;
        int wst;
        if (waitpid(influxd, &wst, WNOHANG) == influxd) {
            influxd = -1;
            return false;
        }
        usleep(100000);
    }
    return false;
}

static void stop_influxd(void)
{
    if (influxd > 0) {
        kill(influxd, SIGTERM);
        int st;
        for (int i = 0; i < 50 && waitpid(influxd, &st, WNOHANG) == 0; i++)
            usleep(100000);
        kill(influxd, SIGKILL);
        waitpid(influxd, &st, 0);
        influxd = -1;
    }
}

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-test-influx-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    port = free_port();
    return port > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    stop_influxd();
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static bool have_influxd(void)
{
    return system("command -v influxd >/dev/null 2>&1") == 0;
}

static void create_db(void)
{
    char url[160];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/query?q=CREATE%%20DATABASE%%20tf", port);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 16);
    assert_int_equal(http(url, true, &b), 200);
    tf_dynbuf_free(&b);
}

/* Runs an InfluxQL query; returns the "values" array of the first series (owned by *ROOT). */
static json_object *query(const char *q_urlenc, json_object **root)
{
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/query?db=tf&epoch=ms&q=%s", port, q_urlenc);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    assert_int_equal(http(url, false, &b), 200);
    *root = json_tokener_parse(tf_dynbuf_str(&b));
    tf_dynbuf_free(&b);
    assert_non_null(*root);
    json_object *res = json_object_array_get_idx(json_object_object_get(*root, "results"), 0);
    json_object *series = json_object_array_get_idx(json_object_object_get(res, "series"), 0);
    return series ? json_object_object_get(series, "values") : NULL;
}

#define SKIP_WITHOUT_INFLUXD()                                                                     \
    do {                                                                                           \
        if (!have_influxd()) {                                                                     \
            printf("SKIP: influxd not installed (scripts/deps.sh test installs influxdb)\n");      \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static void points_written_read_back_from_influxdb_exactly(void **state)
{
    SKIP_WITHOUT_INFLUXD();
    if (!start_influxd()) {
        printf("SKIP: influxd could not start (log in %s/influxd.log)\n", dir);
        skip();
    }
    create_db();
    char url[160], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write?db=tf&precision=ms", port);
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_sink_open(url, &s, err, sizeof(err)), 0);
    struct tf_lp_point p[2];
    tf_lp_point_init(&p[0], "tf_gpu_usage", 1764698189123);
    tf_lp_tag(&p[0], "node", "node a,b=c");
    tf_lp_tag(&p[0], "uuid", "GPU-1");
    tf_lp_float(&p[0], "compute_percentage", 37.5);
    tf_lp_int(&p[0], "memory_bytes", 1073741824);
    tf_lp_string(&p[0], "note", "say \"hi\" \\o/");
    tf_lp_point_init(&p[1], "tf_gpu_usage", 1764698190123);
    tf_lp_tag(&p[1], "node", "node a,b=c");
    tf_lp_tag(&p[1], "uuid", "GPU-1");
    tf_lp_float(&p[1], "compute_percentage", 0.1);
    tf_lp_int(&p[1], "memory_bytes", 5);
    tf_lp_string(&p[1], "note", "");
    assert_int_equal(tf_metrics_sink_write(s, p, 2, err, sizeof(err)), 0);
    if (tf_metrics_sink_flush(s, err, sizeof(err)))
        fail_msg("flush: %s", err);
    json_object *root;
    json_object *vals = query("SELECT%20compute_percentage%2Cmemory_bytes%2Cnote%2Cnode%20FROM%"
                              "20tf_gpu_usage%20ORDER%20BY%20time",
                              &root);
    assert_non_null(vals);
    assert_int_equal(json_object_array_length(vals), 2);
    json_object *r0 = json_object_array_get_idx(vals, 0), *r1 = json_object_array_get_idx(vals, 1);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(r0, 0)), 1764698189123);
    assert_true(json_object_get_double(json_object_array_get_idx(r0, 1)) == 37.5);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(r0, 2)), 1073741824);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(r0, 3)),
                        "say \"hi\" \\o/");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(r0, 4)), "node a,b=c");
    assert_true(json_object_get_double(json_object_array_get_idx(r1, 1)) == 0.1);
    json_object_put(root);
    tf_metrics_sink_destroy(s);
}

static void lines_queued_while_the_server_is_down_arrive_later(void **state)
{
    SKIP_WITHOUT_INFLUXD();
    char url[160], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write?db=tf&precision=ms", port);
    struct tf_metrics_http_opts o = {.timeout_ms = 2000};
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_http_sink_new(url, &o, &s, err, sizeof(err)), 0);
    struct tf_lp_point p;
    tf_lp_point_init(&p, "tf_worker_usage", 1764698189000);
    tf_lp_tag(&p, "workload", "w1");
    tf_lp_float(&p, "compute_tflops", 12.25);
    assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
    assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), TF_EIO); /* nobody listening */
    assert_non_null(strstr(err, "kept for retry"));
    if (!start_influxd()) {
        printf("SKIP: influxd could not start (log in %s/influxd.log)\n", dir);
        tf_metrics_sink_destroy(s);
        skip();
    }
    create_db();
    p.ts_ms += 1000;
    assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
    if (tf_metrics_sink_flush(s, err, sizeof(err)))
        fail_msg("flush: %s", err);
    json_object *root;
    json_object *vals = query("SELECT%20compute_tflops%20FROM%20tf_worker_usage", &root);
    assert_non_null(vals);
    assert_int_equal(json_object_array_length(vals), 2);
    json_object_put(root);
    assert_int_equal(s->points_dropped, 0);
    tf_metrics_sink_destroy(s);
}

static void a_rejected_batch_is_dropped_with_the_server_message(void **state)
{
    SKIP_WITHOUT_INFLUXD();
    if (!start_influxd()) {
        printf("SKIP: influxd could not start (log in %s/influxd.log)\n", dir);
        skip();
    }
    char url[160], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write?db=missing&precision=ms", port);
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_sink_open(url, &s, err, sizeof(err)), 0);
    struct tf_lp_point p;
    tf_lp_point_init(&p, "tf_gpu_usage", 1);
    tf_lp_float(&p, "compute_percentage", 1);
    assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
    assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "HTTP 404"));
    assert_non_null(strstr(err, "database not found"));
    assert_int_equal(s->points_dropped, 1);
    assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), 0); /* nothing left */
    tf_metrics_sink_destroy(s);
}

static void the_queue_is_bounded_dropping_the_oldest_lines(void **state)
{
    char err[256];
    struct tf_metrics_http_opts o = {.max_queue = 200, .timeout_ms = 500};
    struct tf_metrics_sink *s;
    char url[160];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write", port);
    assert_int_equal(tf_metrics_http_sink_new(url, &o, &s, err, sizeof(err)), 0);
    for (int i = 0; i < 10; i++) {
        struct tf_lp_point p;
        tf_lp_point_init(&p, "tf_gpu_usage", i);
        tf_lp_float(&p, "compute_percentage", 1); /* 39-40 bytes a line */
        assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
    }
    assert_int_equal(s->points_written, 10);
    assert_true(s->points_dropped >= 5);
    tf_metrics_sink_destroy(s);
    assert_int_equal(tf_metrics_sink_open("http:/bad", &s, err, sizeof(err)), TF_EINVAL);
}

/* Waits (up to 30 s) until the background sink S has nothing queued; its stats in *ST. */
static bool drained(struct tf_metrics_sink *s, struct tf_metrics_sink_stats *st)
{
    for (int i = 0; i < 300; i++) {
        tf_metrics_sink_stats(s, st);
        if (st->queued == 0)
            return true;
        usleep(100000);
    }
    return false;
}

static long count_points(const char *measurement)
{
    char q[256];
    snprintf(q, sizeof(q), "SELECT%%20count(v)%%20FROM%%20%s", measurement);
    json_object *root;
    json_object *vals = query(q, &root);
    long n = vals ? (long)json_object_get_int64(
                        json_object_array_get_idx(json_object_array_get_idx(vals, 0), 1))
                  : 0;
    json_object_put(root);
    return n;
}

static void a_background_sink_delivers_everything_written_during_an_outage(void **state)
{
    SKIP_WITHOUT_INFLUXD();
    char url[160], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write?db=tf&precision=ms", port);
    struct tf_metrics_http_opts o = {.timeout_ms = 2000, .background = true};
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_http_sink_new(url, &o, &s, err, sizeof(err)), 0);
    /* Nobody listens: every round is queued and flush still answers at once with 0. */
    for (int i = 0; i < 50; i++) {
        struct tf_lp_point p;
        tf_lp_point_init(&p, "outage", 1764698189000 + i);
        tf_lp_float(&p, "v", i);
        assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
        assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), 0);
    }
    struct tf_metrics_sink_stats st;
    usleep(300000);
    tf_metrics_sink_stats(s, &st);
    assert_true(st.failing);
    assert_int_equal(st.written, 50);
    assert_int_equal(st.sent, 0);
    assert_true(st.queued > 0);
    if (!start_influxd()) {
        printf("SKIP: influxd could not start (log in %s/influxd.log)\n", dir);
        tf_metrics_sink_destroy(s);
        skip();
    }
    create_db();
    assert_true(drained(s, &st));
    assert_int_equal(st.sent, 50);
    assert_int_equal(st.dropped, 0);
    assert_false(st.failing);
    assert_int_equal(count_points("outage"), 50);
    tf_metrics_sink_destroy(s);
}

static void a_full_background_queue_keeps_the_newest_lines_and_counts_the_rest(void **state)
{
    SKIP_WITHOUT_INFLUXD();
    char url[160], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write?db=tf&precision=ms", port);
    /* "bounded v=NN.000000 1764698189NNN\n" lines: room for about ten. */
    struct tf_metrics_http_opts o = {.timeout_ms = 2000, .background = true, .max_queue = 400};
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_http_sink_new(url, &o, &s, err, sizeof(err)), 0);
    for (int i = 0; i < 40; i++) {
        struct tf_lp_point p;
        tf_lp_point_init(&p, "bounded", 1764698189000 + i);
        tf_lp_float(&p, "v", 10 + i);
        assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
    }
    struct tf_metrics_sink_stats st;
    tf_metrics_sink_stats(s, &st);
    assert_int_equal(st.written, 40);
    assert_true(st.dropped >= 25 && st.dropped < 40);
    uint64_t kept = st.written - st.dropped;
    if (!start_influxd()) {
        printf("SKIP: influxd could not start (log in %s/influxd.log)\n", dir);
        tf_metrics_sink_destroy(s);
        skip();
    }
    create_db();
    assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), 0);
    assert_true(drained(s, &st));
    assert_int_equal(st.sent, kept);
    assert_int_equal(count_points("bounded"), (long)kept);
    json_object *root;
    json_object *vals = query("SELECT%20max(v)%20FROM%20bounded", &root);
    assert_non_null(vals);
    assert_true(json_object_get_double(json_object_array_get_idx(
                    json_object_array_get_idx(vals, 0), 1)) == 49.0); /* the newest is kept */
    json_object_put(root);
    tf_metrics_sink_destroy(s);
}

static void a_background_sink_drops_a_refused_batch_and_counts_it(void **state)
{
    SKIP_WITHOUT_INFLUXD();
    if (!start_influxd()) {
        printf("SKIP: influxd could not start (log in %s/influxd.log)\n", dir);
        skip();
    }
    char url[160], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/write?db=missing&precision=ms", port);
    struct tf_metrics_http_opts o = {.timeout_ms = 2000, .background = true};
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_http_sink_new(url, &o, &s, err, sizeof(err)), 0);
    struct tf_lp_point p;
    tf_lp_point_init(&p, "refused", 1);
    tf_lp_float(&p, "v", 1);
    assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
    assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), 0);
    struct tf_metrics_sink_stats st;
    assert_true(drained(s, &st));
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.sent, 0);
    tf_metrics_sink_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(points_written_read_back_from_influxdb_exactly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(lines_queued_while_the_server_is_down_arrive_later, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_rejected_batch_is_dropped_with_the_server_message, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_background_sink_delivers_everything_written_during_an_outage, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_full_background_queue_keeps_the_newest_lines_and_counts_the_rest, setup, teardown),
        cmocka_unit_test_setup_teardown(a_background_sink_drops_a_refused_batch_and_counts_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(the_queue_is_bounded_dropping_the_oldest_lines, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
