/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tfctl: talking to the local hypervisor's HTTP API. The hypervisor is found
 * through <state dir>/hypervisor.addr (paths.h); tf_cli_hv_connect starts one (detached, its
 * log in <state dir>/hypervisor.log) when none answers and AUTOSTART is set. tfctl looks for
 * the tf-hypervisor binary in $TF_HYPERVISOR_BIN, next to itself, then in
 * ../hypervisor/ (the build tree), then on PATH.
 * Not thread-safe (one tfctl thread uses it).
 */
#ifndef TF_CLI_HVCLIENT_H
#define TF_CLI_HVCLIENT_H

#include "hypervisor/paths.h"
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct tf_cli_hv {
    char base[160]; /* "http://127.0.0.1:PORT" */
    char state_dir[512];
    char auth[TF_HV_TOKEN_MAX + 32]; /* "Authorization: Bearer ..." header, or "" */
};

/* Finds (or starts) the hypervisor. Returns 0, or TF_ENOENT (none running and AUTOSTART
 * false), TF_EIO / TF_ETIMEDOUT with ERR set. */
int tf_cli_hv_connect(struct tf_cli_hv *hv, bool autostart, char *err, size_t errlen);

/* Targets the hypervisor at HOSTPORT (another machine's, for --remote) with the API token in
 * $TF_REMOTE_API_TOKEN or the file $TF_REMOTE_API_TOKEN_FILE (if any), checking /healthz.
 * 0, or TF_EIO / TF_EINVAL with ERR set. */
int tf_cli_hv_remote(struct tf_cli_hv *hv, const char *hostport, char *err, size_t errlen);

/* The directory of the remote client library (libcuda.so.1 of libtf_client.so) for this
 * tfctl: $TF_CLIENT_DIR, else ../remote/client or ../lib/tensor-fusion/client next to tfctl.
 * 0 or TF_ENOENT. */
int tf_cli_client_dir(char *out, size_t len);

/* METHOD PATH with optional JSON BODY. Returns the HTTP status (0: no answer, ERR set) and
 * the parsed JSON answer in *OUT (caller owns; NULL if the answer is not JSON). */
int tf_cli_hv_call(struct tf_cli_hv *hv, const char *method, const char *path, json_object *body,
                   json_object **out, char *err, size_t errlen);

/* GET PATH returning raw text in *OUT (malloc'ed). HTTP status or 0. */
int tf_cli_hv_get_text(struct tf_cli_hv *hv, const char *path, char **out, char *err,
                       size_t errlen);

#endif
