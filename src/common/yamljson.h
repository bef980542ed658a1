/* SPDX-License-Identifier: Apache-2.0
 *
 * YAML documents to json-c trees, so every manifest (YAML or JSON, Kubernetes objects, cluster
 * descriptions) is handled by one code path over json_object.
 *
 * Scalars become JSON strings, except: plain (unquoted) scalars that YAML 1.2 core schema reads
 * as null (~, null, empty), booleans (true/false, any case) and numbers become JSON null /
 * boolean / int64 / double. Quoted scalars always stay strings ('10' stays "10"), which is what
 * Kubernetes does with annotation values. Anchors/aliases are resolved by copy (bounded, to stop
 * "billion laughs" inputs); merge keys (<<) are not supported and are kept as a plain key.
 * Input size and nesting depth are bounded (see tf_yaml_limits).
 *
 * Pure (no I/O beyond the caller's buffer) and thread-safe.
 */
#ifndef TF_COMMON_YAMLJSON_H
#define TF_COMMON_YAMLJSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses every document of the YAML stream BUF[0..LEN) into a new JSON array of documents
 * (empty documents are skipped). On success returns 0 and *OUT (caller owns: json_object_put).
 * On error returns TF_EPARSE / TF_ERANGE / TF_ENOMEM, writes "line L column C: problem" to ERR
 * and leaves *OUT NULL. */
int tf_yaml_to_json(const char *buf, size_t len, json_object **out, char *err, size_t errlen);

/* Reads a manifest that may be JSON or YAML: same output as tf_yaml_to_json (a JSON array of
 * documents); a JSON array at top level is taken as a list of documents, and a Kubernetes
 * "List" kind ({"kind":"List","items":[...]}) is flattened into its items. */
int tf_manifest_parse(const char *buf, size_t len, json_object **out, char *err, size_t errlen);

/* Lookups on json-c trees by a NULL-terminated list of object keys (keys may contain '.' and
 * '/', as annotation keys do): tf_json_path(pod, "metadata", "annotations", NULL).
 * Returns the object or NULL when any step is absent or not an object. Borrowed reference. */
json_object *tf_json_path(json_object *obj, ...) __attribute__((sentinel));
/* The string at the path, or NULL when absent or not a JSON string. Borrowed. */
const char *tf_json_str(json_object *obj, ...) __attribute__((sentinel));
/* Whether the value at the path is JSON true: json-c's json_object_get_boolean reads any
 * non-empty string (a quoted "false") and any non-zero number as true, this does not. */
bool tf_json_true(json_object *obj, ...) __attribute__((sentinel));
/* The array at the path, or NULL when absent or not an array (json_object_array_length and
 * friends must not see another type). Borrowed. */
json_object *tf_json_array(json_object *obj, ...) __attribute__((sentinel));

#endif
