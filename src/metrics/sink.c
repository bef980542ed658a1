/* SPDX-License-Identifier: Apache-2.0
 *
 * Sink dispatch and the URI form (see sink.h).
 */
#include "metrics/sink.h"

#include "common/err.h"
#include "common/strutil.h"

#include <string.h>

static int open_uri(const char *uri, bool background, struct tf_metrics_sink **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (!uri || !*uri) {
        tf_errf(err, errlen, "metrics sink: empty URI");
        return TF_EINVAL;
    }
    if (!strncmp(uri, "sqlite:", 7))
        return tf_metrics_sqlite_sink_new(uri + 7, NULL, out, err, errlen);
    if (!strncmp(uri, "file:", 5))
        return tf_metrics_file_sink_new(uri + 5, NULL, out, err, errlen);
    if (!strncmp(uri, "http://", 7) || !strncmp(uri, "https://", 8))
        return tf_metrics_http_sink_new(
            uri, &(struct tf_metrics_http_opts){.background = background}, out, err, errlen);
    tf_errf(err, errlen,
            "metrics sink \"%s\": expected sqlite:PATH, file:PATH or an http(s):// write URL", uri);
    return TF_EINVAL;
}

int tf_metrics_sink_open(const char *uri, struct tf_metrics_sink **out, char *err, size_t errlen)
{
    return open_uri(uri, false, out, err, errlen);
}

int tf_metrics_sink_open_async(const char *uri, struct tf_metrics_sink **out, char *err,
                               size_t errlen)
{
    return open_uri(uri, true, out, err, errlen);
}

int tf_metrics_sink_write(struct tf_metrics_sink *s, const struct tf_lp_point *pts, size_t n,
                          char *err, size_t errlen)
{
    return s->ops->write(s, pts, n, err, errlen);
}

int tf_metrics_sink_flush(struct tf_metrics_sink *s, char *err, size_t errlen)
{
    return s->ops->flush ? s->ops->flush(s, err, errlen) : 0;
}

void tf_metrics_sink_stats(struct tf_metrics_sink *s, struct tf_metrics_sink_stats *out)
{
    if (s->ops->stats) {
        s->ops->stats(s, out);
        return;
    }
    *out = (struct tf_metrics_sink_stats){
        .written = s->points_written, .dropped = s->points_dropped, .sent = s->points_written};
}

void tf_metrics_sink_stats_prom(const struct tf_metrics_sink_stats *st, struct tf_dynbuf *b)
{
    tf_dynbuf_addf(b,
                   "# HELP tf_metrics_points_total metric points by fate (dropped: lost to a "
                   "full queue or refused by the database)\n"
                   "# TYPE tf_metrics_points_total counter\n"
                   "tf_metrics_points_total{result=\"written\"} %llu\n"
                   "tf_metrics_points_total{result=\"sent\"} %llu\n"
                   "tf_metrics_points_total{result=\"dropped\"} %llu\n"
                   "# HELP tf_metrics_queue_bytes metric lines waiting for the database\n"
                   "# TYPE tf_metrics_queue_bytes gauge\ntf_metrics_queue_bytes %zu\n",
                   (unsigned long long)st->written, (unsigned long long)st->sent,
                   (unsigned long long)st->dropped, st->queued);
}

void tf_metrics_sink_destroy(struct tf_metrics_sink *s)
{
    if (s)
        s->ops->destroy(s);
}
