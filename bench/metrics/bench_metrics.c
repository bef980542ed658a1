/* SPDX-License-Identifier: Apache-2.0
 *
 * Metrics pipeline costs: line-protocol encoding and parsing per point, SQLite sink
 * throughput in hypervisor-sized batches, and the seed 002 GPU query over a day of rows.
 * Prints `name: value unit` lines.
 */
#include "common/dynbuf.h"
#include "metrics/lineproto.h"
#include "metrics/sink.h"
#include "metrics/sqlquery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void gpu_point(struct tf_lp_point *p, int64_t ts, int i)
{
    static const char *const uuids[] = {"GPU-0a1b2c3d-0000-4000-8000-000000000001",
                                        "GPU-0a1b2c3d-0000-4000-8000-000000000002"};
    tf_lp_point_init(p, "tf_gpu_usage", ts);
    tf_lp_tag(p, "node", "node-1");
    tf_lp_tag(p, "pool", "local");
    tf_lp_tag(p, "uuid", uuids[i & 1]);
    tf_lp_float(p, "compute_percentage", 37.5 + (i % 50));
    tf_lp_float(p, "compute_tflops", 117.0 + i % 7);
    tf_lp_int(p, "memory_bytes", (int64_t)(i % 80) << 30);
    tf_lp_float(p, "memory_percentage", (i % 80) * 1.25);
    tf_lp_float(p, "temperature", 61);
    tf_lp_float(p, "power_usage", 287.5);
}

int main(void)
{
    enum { N = 200000 };
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 256u << 20);
    char err[256];
    struct tf_lp_point p;
    double t0 = now_s();
    for (int i = 0; i < N; i++) {
        gpu_point(&p, 1764698189123 + i, i);
        if (tf_lp_encode(&p, &b, err, sizeof(err)))
            return 1;
    }
    double t1 = now_s();
    printf("lineproto_encode: %.0f ns/point\n", (t1 - t0) * 1e9 / N);
    printf("lineproto_size: %.1f bytes/point\n", (double)b.len / N);
    char *scratch = malloc(TF_LP_MAX_LINE);
    const char *s = b.data;
    t0 = now_s();
    for (int i = 0; i < N; i++) {
        const char *nl = memchr(s, '\n', b.len - (size_t)(s - b.data));
        if (tf_lp_parse(s, (size_t)(nl - s), 0, &p, scratch, TF_LP_MAX_LINE, err, sizeof(err)))
            return 1;
        s = nl + 1;
    }
    t1 = now_s();
    printf("lineproto_parse: %.0f ns/point\n", (t1 - t0) * 1e9 / N);
    free(scratch);
    tf_dynbuf_free(&b);

    char dir[] = "/tmp/tf-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char db[64];
    snprintf(db, sizeof(db), "%s/metrics.db", dir);
    struct tf_metrics_sink *sink;
    if (tf_metrics_sqlite_sink_new(db, NULL, &sink, err, sizeof(err)))
        return 1;
    enum { BATCH = 16, ROUNDS = 2000 };
    struct tf_lp_point batch[BATCH];
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t base = (int64_t)wall.tv_sec * 1000 - (int64_t)ROUNDS * 1000;
    t0 = now_s();
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BATCH; i++)
            gpu_point(&batch[i], base + (int64_t)r * 1000, r * BATCH + i);
        if (tf_metrics_sink_write(sink, batch, BATCH, err, sizeof(err)))
            return 1;
    }
    t1 = now_s();
    printf("sqlite_sink_write: %.0f points/s\n", ROUNDS * BATCH / (t1 - t0));
    printf("sqlite_sink_round: %.2f ms/round of %d points\n", (t1 - t0) * 1e3 / ROUNDS, BATCH);
    tf_metrics_sink_destroy(sink);
    int64_t rows = 0;
    t0 = now_s();
    if (tf_sql_query(db,
                     "SELECT node, uuid, avg(compute_percentage), max(memory_percentage)"
                     " FROM tf_gpu_usage WHERE greptime_timestamp >= now() - '1d'::INTERVAL"
                     " GROUP BY node, uuid ORDER BY 3",
                     NULL, NULL, &rows, err, sizeof(err)))
        return 1;
    t1 = now_s();
    printf("seed_gpu_query_32k_rows: %.1f ms\n", (t1 - t0) * 1e3);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
