/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-hypervisor's web console, end to end with the real binary (GPUs from the fake NVML
 * device file): the pages are public and carry no data, their JSON API needs the API token and
 * only reads, the overview lists the GPUs and workloads with their limits and the history
 * the hypervisor wrote to its metrics database, and a refused allocation shows up with its
 * reason. The pages themselves are driven in Chromium by tests/console/browser.mjs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvtest.h"

#define A100                                                                                       \
    "NVIDIA A100-SXM4-80GB|GPU-a1000000-0000-4000-8000-000000000001|85899345920|40|1073741824\n"
#define L4 "NVIDIA L4|GPU-14000000-0000-4000-8000-000000000002|24152899584|0|0\n"
#define A100_UUID "GPU-a1000000-0000-4000-8000-000000000001"

static struct hvt T;

static int setup(void **state)
{
    hvt_init(&T, A100 L4);
    const char *args[] = {"--metrics-interval", "200", NULL};
    hvt_start(&T, args);
    return 0;
}

static int teardown(void **state)
{
    hvt_cleanup(&T);
    return 0;
}

struct raw {
    long status;
    char headers[4096];
    size_t hlen;
    char *body;
    size_t blen;
};

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    struct raw *r = arg;
    size_t len = sz * n;
    if (r->hlen + len < sizeof(r->headers)) {
        memcpy(r->headers + r->hlen, p, len);
        r->hlen += len;
        r->headers[r->hlen] = '\0';
    }
    return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    struct raw *r = arg;
    r->body = realloc(r->body, r->blen + sz * n + 1);
    memcpy(r->body + r->blen, p, sz * n);
    r->blen += sz * n;
    r->body[r->blen] = '\0';
    return sz * n;
}

/* METHOD PATH without any token (a browser loading a page), with an optional header. */
static void fetch(const char *method, const char *path, const char *header, struct raw *r)
{
    memset(r, 0, sizeof(*r));
    char url[300];
    snprintf(url, sizeof(url), "%s%s", T.base, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static char *token(void)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/api-token", T.state);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char tok[200];
    assert_non_null(fgets(tok, sizeof(tok), f));
    fclose(f);
    tok[strcspn(tok, "\r\n")] = '\0';
    return tok;
}

static void console_pages_are_public_and_hold_no_data_or_secret(void **state)
{
    struct raw r;
    fetch("GET", "/", NULL, &r);
    assert_int_equal(r.status, 302);
    assert_non_null(strcasestr(r.headers, "Location: /console/"));
    free(r.body);
    fetch("GET", "/console/", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strcasestr(r.headers, "Content-Type: text/html"));
    assert_non_null(strcasestr(r.headers, "Content-Security-Policy: default-src 'none'"));
    assert_non_null(strcasestr(r.headers, "X-Frame-Options: DENY"));
    assert_non_null(strstr(r.body, "<script src=\"app.js\""));
    assert_null(strstr(r.body, token()));
    assert_null(strstr(r.body, A100_UUID));
    char *etag = strcasestr(r.headers, "ETag: ");
    assert_non_null(etag);
    char inm[120];
    snprintf(inm, sizeof(inm), "If-None-Match: %.*s", (int)strcspn(etag + 6, "\r\n"), etag + 6);
    free(r.body);
    fetch("GET", "/console/", inm, &r);
    assert_int_equal(r.status, 304);
    free(r.body);
    fetch("GET", "/console/vendor/uPlot.iife.min.js", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strcasestr(r.headers, "Content-Type: text/javascript"));
    free(r.body);
    fetch("HEAD", "/console/app.js", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.blen, 0);
    free(r.body);
    fetch("POST", "/console/", NULL, &r);
    assert_int_equal(r.status, 405);
    free(r.body);
    fetch("GET", "/console/../state.db", NULL, &r);
    assert_int_equal(r.status, 404);
    free(r.body);
}

static void the_console_api_needs_the_token_and_only_reads(void **state)
{
    struct raw r;
    fetch("GET", "/api/v1/console/overview", NULL, &r);
    assert_int_equal(r.status, 401);
    free(r.body);
    fetch("GET", "/api/v1/console/overview", "Authorization: Bearer wrong", &r);
    assert_int_equal(r.status, 401);
    free(r.body);
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/console/overview", NULL, NULL, &o), 200);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/console/overview", "{}", NULL, &o), 405);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/console/overview?range=1y", NULL, NULL, &o), 400);
    assert_non_null(strstr(json_object_get_string(json_object_object_get(o, "error")), "range"));
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/console/gpus/x'y", NULL, NULL, &o), 400);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/console/secrets", NULL, NULL, &o), 404);
    json_object_put(o);
}

static json_object *find(json_object *arr, const char *key, const char *val)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *v = json_object_get_string(json_object_object_get(e, key));
        if (v && !strcmp(v, val))
            return e;
    }
    return NULL;
}

static bool has_history(struct hvt *t, void *arg)
{
    json_object *o = NULL;
    bool ok = false;
    if (hvt_http(t, "GET", "/api/v1/console/overview?range=15m", NULL, NULL, &o) == 200) {
        json_object *w = find(json_object_object_get(o, "workloads"), "name", "a");
        json_object *u = w ? json_object_object_get(w, "usage") : NULL;
        ok = u && json_object_get_int(json_object_object_get(u, "samples")) >= 2;
    }
    json_object_put(o);
    return ok;
}

static void overview_lists_gpus_and_workloads_with_limits_and_history(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"a\",\"isolation\":\"shared\",\"gpuModel\":\"A100\"}",
                              NULL, &o),
                     201);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"b\",\"isolation\":\"shared\",\"gpuModel\":\"L4\"}", NULL,
                              &o),
                     201);
    json_object_put(o);
    assert_true(hvt_wait(has_history, &T, NULL, 15000));
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/console/overview?range=15m", NULL, NULL, &o),
                     200);
    json_object *gpus = json_object_object_get(o, "gpus");
    assert_int_equal(json_object_array_length(gpus), 2);
    json_object *a100 = find(gpus, "uuid", A100_UUID);
    assert_non_null(a100);
    assert_string_equal(json_object_get_string(json_object_object_get(a100, "model")), "A100-80GB");
    assert_int_equal(json_object_get_int(json_object_object_get(a100, "tflops")), 312);
    json_object *held = json_object_object_get(a100, "workloads");
    assert_int_equal(json_object_array_length(held), 1);
    assert_string_equal(
        json_object_get_string(json_object_object_get(json_object_array_get_idx(held, 0), "name")),
        "a");
    /* The fake GPU reports 40 % utilisation: the history says so. */
    json_object *u = json_object_object_get(a100, "usage");
    assert_int_equal(json_object_get_int(json_object_object_get(u, "computeAvgPercent")), 40);
    json_object *wl = json_object_object_get(o, "workloads");
    json_object *a = find(wl, "name", "a"), *b = find(wl, "name", "b");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(json_object_get_int(json_object_object_get(a, "tflopsLimit")), 312);
    assert_int_equal(json_object_get_int64(json_object_object_get(a, "vramLimitBytes")),
                     INT64_C(85899345920));
    assert_true(json_object_get_boolean(json_object_object_get(b, "active")));
    json_object *tot = json_object_object_get(o, "totals");
    assert_int_equal(json_object_get_int(json_object_object_get(tot, "workloads")), 2);
    assert_int_equal(json_object_get_int(json_object_object_get(tot, "nodes")), 1);
    assert_int_equal(json_object_array_length(json_object_object_get(o, "warnings")), 0);
    json_object_put(o);

    /* The GPU's page: a series with points, the workload's page: its request over time. */
    assert_int_equal(
        hvt_http(&T, "GET", "/api/v1/console/gpus/" A100_UUID "?range=15m", NULL, NULL, &o), 200);
    json_object *c = json_object_object_get(json_object_object_get(o, "series"), "computePercent");
    int points = 0;
    for (size_t i = 0; i < json_object_array_length(c); i++)
        points += json_object_array_get_idx(c, i) != NULL;
    assert_true(points >= 1);
    json_object_put(o);
    assert_int_equal(
        hvt_http(&T, "GET", "/api/v1/console/workloads/default/a?range=15m", NULL, NULL, &o), 200);
    json_object *req = json_object_object_get(json_object_object_get(o, "series"), "tflopsRequest");
    points = 0;
    for (size_t i = 0; i < json_object_array_length(req); i++) {
        json_object *v = json_object_array_get_idx(req, i);
        if (v) {
            points++;
            assert_int_equal(json_object_get_int(v), 312);
        }
    }
    assert_true(points >= 1);
    json_object_put(o);
}

static bool refusal_listed(struct hvt *t, void *arg)
{
    json_object *o = NULL;
    bool ok = false;
    if (hvt_http(t, "GET", "/api/v1/console/events?range=1h", NULL, NULL, &o) == 200) {
        json_object *e = find(json_object_object_get(o, "events"), "reason", "AllocationRefused");
        const char *m = e ? json_object_get_string(json_object_object_get(e, "message")) : NULL;
        ok = m && strstr(m, "insufficient VRAM") && strstr(m, "need 4Ti") &&
             !strcmp(json_object_get_string(json_object_object_get(e, "object")), "huge");
    }
    json_object_put(o);
    return ok;
}

static bool release_listed(struct hvt *t, void *arg)
{
    json_object *o = NULL;
    bool ok = false;
    if (hvt_http(t, "GET", "/api/v1/console/events?range=1h", NULL, NULL, &o) == 200)
        ok = find(json_object_object_get(o, "events"), "reason", "WorkloadReleased") != NULL;
    json_object_put(o);
    return ok;
}

static void a_refused_allocation_is_listed_with_its_reason(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"huge\",\"vramLimit\":\"4Ti\"}", NULL, &o),
                     422);
    json_object_put(o);
    assert_true(hvt_wait(refusal_listed, &T, NULL, 10000));
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"brief\",\"isolation\":\"shared\"}", NULL, &o),
                     201);
    json_object_put(o);
    assert_int_equal(hvt_http(&T, "DELETE", "/api/v1/workloads/brief", NULL, NULL, &o), 200);
    json_object_put(o);
    assert_true(hvt_wait(release_listed, &T, NULL, 10000));
}

static void without_metrics_the_console_says_why(void **state)
{
    hvt_kill(&T, SIGTERM);
    const char *args[] = {"--metrics-sink", "none", NULL};
    hvt_start(&T, args);
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/console/overview", NULL, NULL, &o), 200);
    json_object *w = json_object_object_get(o, "warnings");
    assert_int_equal(json_object_array_length(w), 1);
    assert_non_null(
        strstr(json_object_get_string(json_object_array_get_idx(w, 0)), "metrics are off"));
    assert_int_equal(json_object_array_length(json_object_object_get(o, "gpus")), 2);
    json_object_put(o);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(console_pages_are_public_and_hold_no_data_or_secret, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_console_api_needs_the_token_and_only_reads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(overview_lists_gpus_and_workloads_with_limits_and_history,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_refused_allocation_is_listed_with_its_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(without_metrics_the_console_says_why, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
