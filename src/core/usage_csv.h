/* SPDX-License-Identifier: Apache-2.0
 *
 * Usage samples from CSV, the shape `tfctl query -o csv` prints for tf_worker_usage:
 *
 *   greptime_timestamp,compute_tflops,memory_bytes
 *   2024-05-01T07:00:00.000Z,5.25,3221225472
 *   1714546860000,5.5,3221225472
 *
 * The first line names the columns (any order, extra columns ignored): a time column
 * (greptime_timestamp, timestamp, ts or time: milliseconds since the epoch or RFC 3339) and
 * at least one of compute_tflops (TFLOPS, a decimal) and memory_bytes (bytes, an integer or a
 * Kubernetes quantity such as 3Gi). Empty cells mean "not reported". Fields may be quoted
 * ("..." with "" for a quote). Lines are LF or CRLF; blank lines are skipped. Every bad cell is
 * an error naming its line and column; input size and row count are bounded.
 *
 * Pure; thread-safe.
 */
#ifndef TF_CORE_USAGE_CSV_H
#define TF_CORE_USAGE_CSV_H

#include "core/autoscale.h"

#include <stddef.h>

#define TF_USAGE_CSV_MAX_ROWS 1000000

/* Parses BUF[0..LEN). 0 and *OUT / *N (caller frees *OUT; NULL when N is 0), or TF_EPARSE /
 * TF_EINVAL / TF_ERANGE / TF_ENOMEM with ERR set. */
int tf_usage_csv_parse(const char *buf, size_t len, struct tf_usage_sample **out, size_t *n,
                       char *err, size_t errlen);

#endif
