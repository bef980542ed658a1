/* SPDX-License-Identifier: Apache-2.0
 *
 * RFC 6902 JSON Patch generation, as the webhook answers kube-apiserver: the webhook edits a
 * copy of the pod, then tf_jsonpatch_diff turns the difference into operations that the API
 * server applies to the pod it sent.
 *
 * Rules (chosen so the patch applies to the original and never depends on a path that may
 * not exist): keys absent from A are added with their whole value (so a pod without
 * annotations gets one "add /metadata/annotations" of the full map, never an add below a
 * missing parent); keys absent from B are removed; arrays of equal length are diffed per
 * index; an array that only grew at its end gets "add /i" operations for the new elements;
 * anything else is replaced whole. Pointer segments escape "~" as "~0" and "/" as "~1"
 * (tensor-fusion.ai/gpu-ids -> tensor-fusion.ai~1gpu-ids). Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_JSONPATCH_H
#define TF_CONTROLLER_JSONPATCH_H

#include <json-c/json.h>
#include <stddef.h>

/* Appends to OPS (a JSON array) the operations that turn A into B. PREFIX is the pointer of
 * A and B inside the document ("" for the root). Values in OPS are shared with B (json-c
 * references, not copies): do not modify B while OPS is in use, and do not use OPS from
 * another thread than B's. Cost O(size of A + B).
 * Returns 0 or TF_ENOMEM / TF_ERANGE (pointer longer than 4 KiB). */
int tf_jsonpatch_diff(json_object *a, json_object *b, const char *prefix, json_object *ops);

/* Escapes one reference token into BUF (capacity LEN). Returns the length, or -1 if it did
 * not fit. */
int tf_jsonpatch_escape(const char *token, char *buf, size_t len);

#endif
