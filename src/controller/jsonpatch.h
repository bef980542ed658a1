/* SPDX-License-Identifier: Apache-2.0
 *
 * RFC 6902 JSON Patch generation, as the webhook answers kube-apiserver: the webhook edits a
 * copy of the pod, then tf_jsonpatch_diff turns the difference into operations (JSON text)
 * that the API server applies to the pod it sent.
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

#include "common/dynbuf.h"

#include <json-c/json.h>
#include <stddef.h>

/* Appends to OUT the operations that turn A into B, as the text of a JSON array ("[]" when
 * A equals B); *NOPS (may be NULL) gets their count. The text is written directly, without
 * a json-c tree of operations: a review's patch costs no more than its bytes. Cost O(size of
 * A + B). Returns 0 or TF_ENOMEM / TF_ERANGE (a pointer longer than 4 KiB, or OUT's
 * maximum reached; OUT then holds a partial array). */
int tf_jsonpatch_diff(json_object *a, json_object *b, struct tf_dynbuf *out, size_t *nops);

/* Escapes one reference token into BUF (capacity LEN). Returns the length, or -1 if it did
 * not fit. */
int tf_jsonpatch_escape(const char *token, char *buf, size_t len);

#endif
