/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tfctl: file and argument helpers shared by `tfctl plan` and `tfctl cron`.
 * Messages go to stderr prefixed with the command name.
 */
#ifndef TF_CLI_PLANIO_H
#define TF_CLI_PLANIO_H

#include "common/dynbuf.h"
#include "core/tz.h"

#include <json-c/json.h>
#include <stdint.h>

#define TF_PLAN_MAX_FILE (64u << 20)

/* Reads PATH ("-" = stdin) into B (initialised here, caller frees). 0 or a TF_E* code with a
 * message printed. */
int tf_planio_read(const char *cmd, const char *path, struct tf_dynbuf *b);
/* Reads and parses a YAML/JSON manifest file into a JSON array of documents (caller puts). */
int tf_planio_manifest(const char *cmd, const char *path, json_object **docs);
/* --now/--after style argument: RFC 3339 or "now". 0 or TF_EINVAL (message printed). */
int tf_planio_time(const char *cmd, const char *opt, const char *s, int64_t *ms);
/* The current time in milliseconds. */
int64_t tf_planio_now(void);
/* Loads zone NAME from DIR (NULL = /usr/share/zoneinfo); message printed on error. */
int tf_planio_zone(const char *cmd, const char *dir, const char *name, const char *key,
                   struct tf_tz **out);

#endif
