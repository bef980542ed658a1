/* SPDX-License-Identifier: Apache-2.0
 *
 * Metric sinks: where metric points go. Three kinds:
 *   sqlite:PATH   embedded SQLite database, one table per measurement (schema.h), queried by
 *                 `tfctl query` (sqlquery.h). The default in local mode.
 *   file:PATH     line protocol appended to PATH, rotated by size (PATH.1 .. PATH.N).
 *   http(s)://... line protocol POSTed to a GreptimeDB / InfluxDB write endpoint, e.g.
 *                 http://greptime:4000/v1/influxdb/api/v2/write?db=public&precision=ms
 *                 or http://influx:8086/write?db=tf&precision=ms
 *
 * Usage: tf_metrics_sink_write() a batch of points, then tf_metrics_sink_flush(). The file and
 * SQLite sinks commit in write (flush is a no-op beyond fsync-free durability); the HTTP sink
 * queues in write and sends in flush. A failed send keeps the lines queued (bounded by
 * max_queue bytes; past that the oldest lines are dropped and counted), except a 4xx answer
 * (the server rejected the data itself), which drops that batch with an error.
 *
 * Background HTTP sink (tf_metrics_http_opts.background): write only encodes and queues, and
 * a sender thread of the sink POSTs the queue (batches of whole lines up to 1 MiB), so the
 * caller never waits on the network. flush wakes the sender and returns 0. While the server
 * is unreachable or answers 5xx the batch is retried, 1 s doubling to 30 s; nothing queued is
 * lost unless the queue bound is reached (oldest lines dropped, counted). The outage and the
 * recovery are logged once each. destroy makes one last attempt (bounded by timeout_ms).
 *
 * A sink is used by one thread at a time (callers serialise); different sinks are
 * independent; a background sink's own thread is synchronised internally, and its counters
 * are read with tf_metrics_sink_stats. The caller owns the sink: tf_metrics_sink_destroy
 * (accepts NULL).
 */
#ifndef TF_METRICS_SINK_H
#define TF_METRICS_SINK_H

#include "metrics/lineproto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tf_metrics_sink;
struct tf_metrics_sink_stats;

struct tf_metrics_sink_ops {
    const char *kind;
    int (*write)(struct tf_metrics_sink *s, const struct tf_lp_point *pts, size_t n, char *err,
                 size_t errlen);
    int (*flush)(struct tf_metrics_sink *s, char *err, size_t errlen);
    void (*destroy)(struct tf_metrics_sink *s);
    void (*stats)(struct tf_metrics_sink *s, struct tf_metrics_sink_stats *out); /* optional */
};

/* Embedded as the first member of each implementation's state. */
struct tf_metrics_sink {
    const struct tf_metrics_sink_ops *ops;
    uint64_t points_written; /* accepted by write */
    uint64_t points_dropped; /* lost (queue overflow, rejected batch, invalid point) */
};

struct tf_metrics_file_opts {
    int64_t max_bytes; /* rotate when the file would grow past this (0: 100 MiB) */
    int keep;          /* rotated files kept (0: 10) */
};

struct tf_metrics_http_opts {
    const char *auth_header; /* e.g. "Authorization: token user:pass"; NULL for none (copied) */
    long timeout_ms;         /* whole request (0: 5000) */
    size_t max_queue;        /* bytes of unsent lines kept across failures (0: 8 MiB) */
    bool background;         /* send from the sink's own thread (see above) */
};

struct tf_metrics_sink_stats {
    uint64_t written; /* points accepted */
    uint64_t dropped; /* points lost */
    uint64_t sent;    /* points delivered (HTTP sinks; others: = written) */
    size_t queued;    /* bytes waiting to be sent */
    bool failing;     /* the last send failed (HTTP sinks) */
};

struct tf_metrics_sqlite_opts {
    int64_t retention_ms; /* rows older than this are pruned (0: 30 days; < 0: keep all) */
};

/* Constructors: 0 and *OUT, or a negative TF_E* with ERR set. OPTS may be NULL (defaults). */
int tf_metrics_file_sink_new(const char *path, const struct tf_metrics_file_opts *opts,
                             struct tf_metrics_sink **out, char *err, size_t errlen);
int tf_metrics_http_sink_new(const char *url, const struct tf_metrics_http_opts *opts,
                             struct tf_metrics_sink **out, char *err, size_t errlen);
int tf_metrics_sqlite_sink_new(const char *path, const struct tf_metrics_sqlite_opts *opts,
                               struct tf_metrics_sink **out, char *err, size_t errlen);

/* Opens a sink from its URI form (see the top of this file) with default options. */
int tf_metrics_sink_open(const char *uri, struct tf_metrics_sink **out, char *err, size_t errlen);
/* The same for daemons: an HTTP sink sends from its own thread (background, above). */
int tf_metrics_sink_open_async(const char *uri, struct tf_metrics_sink **out, char *err,
                               size_t errlen);

/* Writes N points. Invalid points are skipped and counted as dropped (the first one's problem
 * is reported with TF_EINVAL after the others are written). */
int tf_metrics_sink_write(struct tf_metrics_sink *s, const struct tf_lp_point *pts, size_t n,
                          char *err, size_t errlen);
int tf_metrics_sink_flush(struct tf_metrics_sink *s, char *err, size_t errlen);
/* The sink's counters (thread-safe for background sinks). */
void tf_metrics_sink_stats(struct tf_metrics_sink *s, struct tf_metrics_sink_stats *out);
/* Appends ST to B in the Prometheus text format, as tf_metrics_points_total{result=written|
 * sent|dropped} and tf_metrics_queue_bytes (the /metrics of every component with a sink). */
void tf_metrics_sink_stats_prom(const struct tf_metrics_sink_stats *st, struct tf_dynbuf *b);
void tf_metrics_sink_destroy(struct tf_metrics_sink *s);

#endif
