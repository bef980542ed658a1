/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP sink: line protocol POSTed with libcurl to a GreptimeDB or InfluxDB write endpoint.
 * Unsent lines stay queued across failures, bounded by max_queue (oldest lines dropped).
 */
#include "metrics/sink.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct http_sink {
    struct tf_metrics_sink base;
    CURL *curl;
    struct curl_slist *headers;
    char *url;
    long timeout_ms;
    struct tf_dynbuf queue; /* complete lines only */
    struct tf_dynbuf reply; /* bounded server answer, for error messages */
};

static size_t on_reply(char *p, size_t size, size_t nmemb, void *arg)
{
    struct http_sink *h = arg;
    size_t n = size * nmemb;
    (void)tf_dynbuf_add(&h->reply, p, n < 1024 - h->reply.len ? n : 1024 - h->reply.len);
    return n;
}

/* Drops whole lines from the front until LEN more bytes fit; returns lines dropped. */
static uint64_t make_room(struct http_sink *h, size_t len)
{
    uint64_t dropped = 0;
    while (h->queue.len && h->queue.len + len > h->queue.max) {
        const char *nl = memchr(h->queue.data, '\n', h->queue.len);
        size_t cut = nl ? (size_t)(nl - h->queue.data) + 1 : h->queue.len;
        tf_dynbuf_consume(&h->queue, cut);
        dropped++;
    }
    return dropped;
}

static int http_write(struct tf_metrics_sink *s, const struct tf_lp_point *pts, size_t n, char *err,
                      size_t errlen)
{
    struct http_sink *h = (struct http_sink *)s;
    struct tf_dynbuf line;
    tf_dynbuf_init(&line, TF_LP_MAX_LINE + 1);
    int first_bad = 0;
    char perr[256];
    for (size_t i = 0; i < n; i++) {
        tf_dynbuf_reset(&line);
        int rc = tf_lp_encode(&pts[i], &line, perr, sizeof(perr));
        if (rc) {
            s->points_dropped++;
            if (!first_bad) {
                first_bad = rc;
                tf_errf(err, errlen, "point %zu: %s", i, perr);
            }
            continue;
        }
        uint64_t d = make_room(h, line.len);
        if (d) {
            s->points_dropped += d;
            tf_log(TF_LOG_WARN, "metrics", "http sink queue full: dropped %llu old lines",
                   (unsigned long long)d);
        }
        if (tf_dynbuf_add(&h->queue, line.data, line.len)) {
            s->points_dropped++;
            continue;
        }
        s->points_written++;
    }
    tf_dynbuf_free(&line);
    return first_bad;
}

static int http_flush(struct tf_metrics_sink *s, char *err, size_t errlen)
{
    struct http_sink *h = (struct http_sink *)s;
    if (h->queue.len == 0)
        return 0;
    tf_dynbuf_reset(&h->reply);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, h->queue.data);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->queue.len);
    CURLcode cc = curl_easy_perform(h->curl);
    if (cc != CURLE_OK) {
        tf_errf(err, errlen, "metrics POST %s: %s (%zu bytes kept for retry)", h->url,
                curl_easy_strerror(cc), h->queue.len);
        return TF_EIO;
    }
    long status = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        tf_dynbuf_reset(&h->queue);
        return 0;
    }
    if (status >= 400 && status < 500) {
        /* The server refused the data itself: retrying the same bytes cannot succeed. */
        uint64_t lines = 0;
        for (size_t i = 0; i < h->queue.len; i++)
            lines += h->queue.data[i] == '\n';
        s->points_dropped += lines;
        tf_errf(err, errlen, "metrics POST %s: HTTP %ld: %.200s (%llu lines dropped)", h->url,
                status, tf_dynbuf_str(&h->reply), (unsigned long long)lines);
        tf_dynbuf_reset(&h->queue);
        return TF_EPROTO;
    }
    tf_errf(err, errlen, "metrics POST %s: HTTP %ld: %.200s (kept for retry)", h->url, status,
            tf_dynbuf_str(&h->reply));
    return TF_EIO;
}

static void http_destroy(struct tf_metrics_sink *s)
{
    struct http_sink *h = (struct http_sink *)s;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    tf_dynbuf_free(&h->queue);
    tf_dynbuf_free(&h->reply);
    free(h->url);
    free(h);
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static const struct tf_metrics_sink_ops http_ops = {"http", http_write, http_flush, http_destroy};

int tf_metrics_http_sink_new(const char *url, const struct tf_metrics_http_opts *opts,
                             struct tf_metrics_sink **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))) {
        tf_errf(err, errlen, "metrics http sink: \"%s\" is not an http(s) URL", url ? url : "");
        return TF_EINVAL;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
    struct http_sink *h = calloc(1, sizeof(*h));
    if (!h)
        return TF_ENOMEM;
    h->base.ops = &http_ops;
    tf_dynbuf_init(&h->queue, opts && opts->max_queue ? opts->max_queue : 8u << 20);
    tf_dynbuf_init(&h->reply, 1024);
    h->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
    h->url = strdup(url);
    h->curl = curl_easy_init();
    h->headers = curl_slist_append(NULL, "Content-Type: text/plain; charset=utf-8");
    if (h->headers && opts && opts->auth_header)
        h->headers = curl_slist_append(h->headers, opts->auth_header);
    if (!h->url || !h->curl || !h->headers) {
        http_destroy(&h->base);
        return TF_ENOMEM;
    }
    curl_easy_setopt(h->curl, CURLOPT_URL, h->url);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, h->timeout_ms);
    curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms);
    curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_reply);
    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    *out = &h->base;
    return 0;
}
