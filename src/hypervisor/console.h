/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the web console in local mode (docs/console.md). The pages are
 * public (they hold no data and no secret); their JSON API, /api/v1/console/..., sits behind
 * the API token like every /api/ path. The console reads the state store (inventory) and the
 * local metrics database (history, through the GreptimeDB dialect of metrics/sqlquery.h).
 *
 * Events: what the console's "actions" page lists locally (a refused allocation and its
 * reasons, workloads created and released, VRAM escapes) are queued by the thread that sees
 * them (tf_hv_console_event, any thread) and written to the metrics sink as tf_events points
 * by the main loop (tf_hv_console_flush, the sink's one writer), at most 256 waiting.
 *
 * Threads: every function here is thread-safe; tf_hv_console_flush runs where the sink is
 * written.
 */
#ifndef TF_HYPERVISOR_CONSOLE_H
#define TF_HYPERVISOR_CONSOLE_H

#include "hypervisor/hv.h"

#include <json-c/json.h>
#include <microhttpd.h>

/* The console state of HV (event queue, metrics database). NULL on allocation failure: then
 * events are not recorded. tf_hv_console_destroy accepts NULL. */
struct tf_hv_console *tf_hv_console_new(const struct tf_hv *hv);
void tf_hv_console_destroy(struct tf_hv_console *c);

/* Queues an event about workload NS/NAME: TYPE "Normal" or "Warning", REASON a CamelCase
 * word, the message printf-style. */
void tf_hv_console_event(struct tf_hv *hv, const char *type, const char *reason, const char *ns,
                         const char *name, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Writes the queued events to the metrics sink. */
void tf_hv_console_flush(struct tf_hv *hv);

/* The inventory (console.h) of this machine now. */
json_object *tf_hv_console_inventory(struct tf_hv *hv);

/* GET /api/v1/console/SUB: the HTTP status and *OUT. */
int tf_hv_console_api(struct tf_hv *hv, struct MHD_Connection *c, const char *method,
                      const char *sub, json_object **out);

/* Whether URL is one of the console's pages ("/", "/console", "/console/..."). */
bool tf_hv_console_is_page(const char *url);
/* Answers a page request: the embedded asset with the console's headers, 304 when the
 * browser has it, "/" redirected to /console/, 404 / 405 otherwise. */
enum MHD_Result tf_hv_console_page(struct MHD_Connection *c, const char *url, const char *method);

#endif
