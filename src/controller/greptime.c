/* SPDX-License-Identifier: Apache-2.0
 *
 * GreptimeDB SQL over HTTP with libcurl (see greptime.h).
 */
#include "controller/greptime.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "controller/greptime_codec.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tf_greptime {
    char *endpoint; /* {url}/v1/sql?db={db} */
    long timeout_ms;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct tf_greptime *tf_greptime_new(const char *url, const char *db, int timeout_ms)
{
    if (!url || !*url)
        return NULL;
    pthread_once(&curl_once, curl_init_once);
    struct tf_greptime *g = calloc(1, sizeof(*g));
    char *edb = curl_easy_escape(NULL, db && *db ? db : "public", 0);
    size_t ul = strlen(url);
    while (ul && url[ul - 1] == '/')
        ul--;
    if (g && edb && asprintf(&g->endpoint, "%.*s/v1/sql?db=%s", (int)ul, url, edb) < 0)
        g->endpoint = NULL;
    curl_free(edb);
    if (!g || !g->endpoint) {
        tf_greptime_destroy(g);
        return NULL;
    }
    g->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    return g;
}

void tf_greptime_destroy(struct tf_greptime *g)
{
    if (!g)
        return;
    free(g->endpoint);
    free(g);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    size_t n = size * nmemb;
    return tf_dynbuf_add(arg, p, n) ? 0 : n; /* 0 aborts the transfer: too large */
}

/* POSTs SQL; 0 with the answer in BODY and the HTTP status in *STATUS, or TF_ENOMEM / TF_ERANGE
 * / TF_EIO (transport) with ERR set. */
static int post_sql(struct tf_greptime *g, const char *sql, struct tf_dynbuf *body, long *status,
                    char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    char *esql = h ? curl_easy_escape(h, sql, 0) : NULL;
    char *form = NULL;
    if (!h || !esql || asprintf(&form, "sql=%s", esql) < 0) {
        curl_free(esql);
        if (h)
            curl_easy_cleanup(h);
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    curl_free(esql);
    struct curl_slist *hdr =
        curl_slist_append(NULL, "Content-Type: application/x-www-form-urlencoded");
    curl_easy_setopt(h, CURLOPT_URL, g->endpoint);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, g->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    CURLcode cc = curl_easy_perform(h);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    free(form);
    if (cc == CURLE_WRITE_ERROR) {
        tf_errf(err, errlen, "GreptimeDB answer larger than %u bytes", TF_GREPTIME_BODY_MAX);
        return TF_ERANGE;
    }
    if (cc != CURLE_OK) {
        tf_errf(err, errlen, "GreptimeDB query failed: %s", curl_easy_strerror(cc));
        return TF_EIO;
    }
    return 0;
}

/* A parser's result RC for an answer of HTTP STATUS: error answers carry GreptimeDB's message
 * whatever the status, so the parser runs first. */
static int judge(int rc, long status, const struct tf_dynbuf *body, char *err, size_t errlen)
{
    if (rc == 0 && (status < 200 || status >= 300)) {
        tf_errf(err, errlen, "GreptimeDB answered HTTP %ld", status);
        return TF_EIO;
    }
    if (rc && rc != TF_EIO && (status < 200 || status >= 300)) {
        tf_errf(err, errlen, "GreptimeDB answered HTTP %ld: %.200s", status, tf_dynbuf_str(body));
        return TF_EIO;
    }
    return rc;
}

int tf_greptime_usage(struct tf_greptime *g, const char *ns, const char *name, int64_t from_ms,
                      int64_t to_ms, struct tf_usage_sample **out, size_t *n, char *err,
                      size_t errlen)
{
    *out = NULL;
    *n = 0;
    char sql[TF_GREPTIME_SQL_MAX];
    int rc = tf_greptime_usage_sql(ns, name, from_ms, to_ms, sql, sizeof(sql));
    if (rc) {
        tf_errf(err, errlen, "workload %s/%s: not a Kubernetes name", ns ? ns : "",
                name ? name : "");
        return rc;
    }
    struct tf_dynbuf body;
    tf_dynbuf_init(&body, TF_GREPTIME_BODY_MAX);
    long status;
    rc = post_sql(g, sql, &body, &status, err, errlen);
    if (rc == 0) {
        rc = judge(tf_greptime_usage_parse(tf_dynbuf_str(&body), body.len, out, n, err, errlen),
                   status, &body, err, errlen);
        if (rc) {
            free(*out);
            *out = NULL;
            *n = 0;
        }
    }
    tf_dynbuf_free(&body);
    return rc;
}

int tf_greptime_query(struct tf_greptime *g, const char *sql, json_object **doc,
                      json_object **names, json_object **rows, char *err, size_t errlen)
{
    *doc = *names = *rows = NULL;
    struct tf_dynbuf body;
    tf_dynbuf_init(&body, TF_GREPTIME_BODY_MAX);
    long status;
    int rc = post_sql(g, sql, &body, &status, err, errlen);
    if (rc == 0) {
        rc = judge(tf_greptime_records_parse(tf_dynbuf_str(&body), body.len, doc, names, rows, err,
                                             errlen),
                   status, &body, err, errlen);
        if (rc) {
            json_object_put(*doc);
            *doc = *names = *rows = NULL;
        }
    }
    tf_dynbuf_free(&body);
    return rc;
}
