/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP sink: line protocol POSTed with libcurl to a GreptimeDB or InfluxDB write endpoint.
 * Unsent lines stay queued across failures, bounded by max_queue (oldest lines dropped).
 * In background mode a thread of the sink sends (see sink.h).
 *
 * Locking (background mode): `mu` guards the queue, the counters and `front`; the sender
 * POSTs a copy of the queue's head without holding it, then removes what it sent unless
 * writers dropped those lines meanwhile (`front` counts every byte ever removed from the
 * head, so the sender knows how much of its copy is still queued).
 */
#include "metrics/sink.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH_MAX (1u << 20)
#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 30000

struct http_sink {
    struct tf_metrics_sink base;
    CURL *curl;
    struct curl_slist *headers;
    char *url;
    long timeout_ms;
    struct tf_dynbuf queue; /* complete lines only */
    struct tf_dynbuf reply; /* bounded server answer, for error messages */
    /* Background mode. */
    bool background, thread_started, stop, kick, failing;
    bool full_warned; /* "queue full" logged since the last delivery */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t front; /* bytes removed from the queue's head, ever */
    uint64_t sent;  /* points delivered */
    uint64_t lines; /* complete lines queued */
};

static size_t on_reply(char *p, size_t size, size_t nmemb, void *arg)
{
    struct http_sink *h = arg;
    size_t n = size * nmemb;
    (void)tf_dynbuf_add(&h->reply, p, n < 1024 - h->reply.len ? n : 1024 - h->reply.len);
    return n;
}

static uint64_t count_lines(const char *p, size_t n)
{
    uint64_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += p[i] == '\n';
    return lines;
}

/* Removes N bytes (whole lines) from the queue's head. */
static void consume(struct http_sink *h, size_t n)
{
    h->lines -= count_lines(h->queue.data, n);
    tf_dynbuf_consume(&h->queue, n);
    h->front += n;
}

/* Drops whole lines from the front until LEN more bytes fit; returns lines dropped. */
static uint64_t make_room(struct http_sink *h, size_t len)
{
    uint64_t dropped = 0;
    while (h->queue.len && h->queue.len + len > h->queue.max) {
        const char *nl = memchr(h->queue.data, '\n', h->queue.len);
        consume(h, nl ? (size_t)(nl - h->queue.data) + 1 : h->queue.len);
        dropped++;
    }
    return dropped;
}

static void lock(struct http_sink *h)
{
    if (h->background)
        pthread_mutex_lock(&h->mu);
}

static void unlock(struct http_sink *h)
{
    if (h->background)
        pthread_mutex_unlock(&h->mu);
}

static int http_write(struct tf_metrics_sink *s, const struct tf_lp_point *pts, size_t n, char *err,
                      size_t errlen)
{
    struct http_sink *h = (struct http_sink *)s;
    struct tf_dynbuf line;
    tf_dynbuf_init(&line, TF_LP_MAX_LINE + 1);
    int first_bad = 0;
    uint64_t dropped_old = 0;
    char perr[256];
    for (size_t i = 0; i < n; i++) {
        tf_dynbuf_reset(&line);
        int rc = tf_lp_encode(&pts[i], &line, perr, sizeof(perr));
        lock(h);
        if (rc) {
            s->points_dropped++;
            if (!first_bad) {
                first_bad = rc;
                tf_errf(err, errlen, "point %zu: %s", i, perr);
            }
        } else {
            uint64_t d = make_room(h, line.len);
            s->points_dropped += d;
            dropped_old += d;
            if (tf_dynbuf_add(&h->queue, line.data, line.len)) {
                s->points_dropped++;
            } else {
                s->points_written++;
                h->lines++;
            }
        }
        unlock(h);
    }
    tf_dynbuf_free(&line);
    lock(h);
    bool warn = dropped_old && !h->full_warned;
    h->full_warned = h->full_warned || dropped_old;
    unlock(h);
    if (warn)
        tf_log(TF_LOG_WARN, "metrics",
               "%s: queue full (%zu bytes): dropping the oldest lines until the server takes "
               "them (counted in the sink's dropped points)",
               h->url, h->queue.max);
    return first_bad;
}

/* POSTs BODY[0..LEN). 0 (delivered), TF_EPROTO (refused: 4xx) or TF_EIO (retry), ERR set. */
static int post(struct http_sink *h, const char *body, size_t len, char *err, size_t errlen)
{
    tf_dynbuf_reset(&h->reply);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode cc = curl_easy_perform(h->curl);
    if (cc != CURLE_OK) {
        tf_errf(err, errlen, "metrics POST %s: %s", h->url, curl_easy_strerror(cc));
        return TF_EIO;
    }
    long status = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return 0;
    tf_errf(err, errlen, "metrics POST %s: HTTP %ld: %.200s", h->url, status,
            tf_dynbuf_str(&h->reply));
    return status >= 400 && status < 500 ? TF_EPROTO : TF_EIO;
}

static int http_flush_sync(struct http_sink *h, char *err, size_t errlen)
{
    struct tf_metrics_sink *s = &h->base;
    if (h->queue.len == 0)
        return 0;
    char perr[400];
    int rc = post(h, h->queue.data, h->queue.len, perr, sizeof(perr));
    if (rc == 0) {
        h->sent += h->lines;
        consume(h, h->queue.len);
        h->full_warned = false;
        return 0;
    }
    if (rc == TF_EPROTO) {
        /* The server refused the data itself: retrying the same bytes cannot succeed. */
        uint64_t lines = h->lines;
        s->points_dropped += lines;
        tf_errf(err, errlen, "%s (%llu lines dropped)", perr, (unsigned long long)lines);
        consume(h, h->queue.len);
        return TF_EPROTO;
    }
    tf_errf(err, errlen, "%s (%zu bytes kept for retry)", perr, h->queue.len);
    return TF_EIO;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One background send of the queue's head (at most BATCH_MAX, whole lines). Called without
 * the lock; returns 0 (delivered or refused: go on) or TF_EIO (retry later). */
static int send_head(struct http_sink *h)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->queue.len;
    if (n > BATCH_MAX) {
        const char *nl = NULL;
        for (size_t i = BATCH_MAX; i > 0 && !nl; i--)
            if (h->queue.data[i - 1] == '\n')
                nl = h->queue.data + i - 1;
        n = nl ? (size_t)(nl - h->queue.data) + 1 : n;
    }
    char *copy = n ? malloc(n) : NULL;
    if (copy)
        memcpy(copy, h->queue.data, n);
    uint64_t start = h->front;
    pthread_mutex_unlock(&h->mu);
    if (!copy)
        return n ? TF_EIO : 0;
    char err[400];
    int rc = post(h, copy, n, err, sizeof(err));
    uint64_t lines = count_lines(copy, n);
    pthread_mutex_lock(&h->mu);
    /* What of the copy is still at the head (writers may have dropped some of it). */
    uint64_t end = start + n;
    size_t still = h->front < end ? (size_t)(end - h->front) : 0;
    size_t skip = n - still;
    uint64_t lines_still = count_lines(copy + skip, still);
    bool was_failing = h->failing;
    if (rc == 0) {
        h->sent += lines_still;
        consume(h, still);
        h->failing = false;
        h->full_warned = false;
    } else if (rc == TF_EPROTO) {
        h->base.points_dropped += lines_still;
        consume(h, still);
        h->failing = false;
    } else {
        h->failing = true;
    }
    size_t queued = h->queue.len;
    pthread_mutex_unlock(&h->mu);
    free(copy);
    if (rc == TF_EPROTO)
        tf_log(TF_LOG_ERROR, "metrics", "%s (%llu lines dropped)", err, (unsigned long long)lines);
    else if (rc && !was_failing)
        tf_log(TF_LOG_WARN, "metrics", "%s; %zu bytes queued, retrying (1 s doubling to 30 s)", err,
               queued);
    else if (rc == 0 && was_failing)
        tf_log(TF_LOG_INFO, "metrics", "%s reachable again: queued lines delivered", h->url);
    return rc == TF_EIO ? TF_EIO : 0;
}

static void *sender(void *arg)
{
    struct http_sink *h = arg;
    int64_t backoff = RETRY_MIN_MS, next_try = 0;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        bool work = h->queue.len > 0 && mono_ms() >= next_try;
        if (!work) {
            if (h->stop)
                break;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            int64_t wait = h->queue.len ? next_try - mono_ms() : 1000;
            wait = wait < 1 ? 1 : wait > 1000 ? 1000 : wait;
            until.tv_nsec += (long)(wait % 1000) * 1000000L;
            until.tv_sec += wait / 1000 + until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            if (!h->kick)
                pthread_cond_timedwait(&h->cv, &h->mu, &until);
            h->kick = false;
            continue;
        }
        bool stopping = h->stop;
        pthread_mutex_unlock(&h->mu);
        int rc = send_head(h);
        pthread_mutex_lock(&h->mu);
        if (rc) {
            if (stopping)
                break; /* the last attempt failed: what is queued is lost with the sink */
            next_try = mono_ms() + backoff;
            backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : backoff * 2;
        } else {
            backoff = RETRY_MIN_MS;
            next_try = 0;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static int http_flush(struct tf_metrics_sink *s, char *err, size_t errlen)
{
    struct http_sink *h = (struct http_sink *)s;
    if (!h->background)
        return http_flush_sync(h, err, errlen);
    pthread_mutex_lock(&h->mu);
    h->kick = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static void http_stats(struct tf_metrics_sink *s, struct tf_metrics_sink_stats *out)
{
    struct http_sink *h = (struct http_sink *)s;
    lock(h);
    *out = (struct tf_metrics_sink_stats){.written = s->points_written,
                                          .dropped = s->points_dropped,
                                          .sent = h->sent,
                                          .queued = h->queue.len,
                                          .failing = h->failing};
    unlock(h);
}

static void http_destroy(struct tf_metrics_sink *s)
{
    struct http_sink *h = (struct http_sink *)s;
    if (h->thread_started) {
        pthread_mutex_lock(&h->mu);
        h->stop = true;
        h->kick = true;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
        if (h->queue.len)
            tf_log(TF_LOG_WARN, "metrics", "%s: %llu lines not delivered at exit", h->url,
                   (unsigned long long)h->lines);
    }
    if (h->background) {
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
    }
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

static const struct tf_metrics_sink_ops http_ops = {"http", http_write, http_flush, http_destroy,
                                                    http_stats};

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
    if (opts && opts->background) {
        h->background = true;
        pthread_mutex_init(&h->mu, NULL);
        pthread_cond_init(&h->cv, NULL);
    }
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
    if (h->background) {
        if (pthread_create(&h->thread, NULL, sender, h) != 0) {
            http_destroy(&h->base);
            tf_errf(err, errlen, "metrics http sink: cannot start its sender thread");
            return TF_ENOMEM;
        }
        h->thread_started = true;
    }
    *out = &h->base;
    return 0;
}
