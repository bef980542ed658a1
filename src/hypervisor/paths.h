/* SPDX-License-Identifier: Apache-2.0
 *
 * Where local mode keeps its files, shared by tf-hypervisor and tfctl so both find the same
 * hypervisor without configuration. The state directory is, in order: $TF_STATE_DIR;
 * /var/lib/tensor-fusion for root; $XDG_STATE_HOME/tensor-fusion; ~/.local/state/tensor-fusion.
 * Inside it:
 *   state.db          the state store (state.h)
 *   metrics.db        the default SQLite metrics sink (`tfctl query`)
 *   hypervisor.lock   flock'ed by the running hypervisor (one per state directory)
 *   hypervisor.addr   "127.0.0.1:PORT" of its HTTP API, written once it listens
 *   hypervisor.log    its log when tfctl started it
 *   api-token         the API's bearer token when no --api-token-file is given: made at
 *                     first start (random), mode 0600, so only the hypervisor's user (and
 *                     root) may use the API; tfctl reads it
 *   shm/              per-workload limit regions
 * Thread-safe.
 */
#ifndef TF_HYPERVISOR_PATHS_H
#define TF_HYPERVISOR_PATHS_H

#include <stddef.h>

/* Writes the state directory into BUF. Returns 0 or TF_ERANGE / TF_ENOENT (no HOME). */
int tf_hv_state_dir(char *buf, size_t len);

/* mkdir -p DIR with MODE. Returns 0 or TF_EIO (ERR says which component failed). */
int tf_hv_mkdirs(const char *dir, int mode, char *err, size_t errlen);

/* The API token file of STATE_DIR into BUF. */
#define TF_HV_API_TOKEN_FILE "api-token"

/* The longest API token the hypervisor and tfctl take (a longer one is refused by both, never
 * cut: a cut token would fail every request with 401). */
#define TF_HV_TOKEN_MAX 512

/* Reads a token (first line, 16 to LEN - 1 characters) from PATH into TOK (capacity LEN).
 * 0, TF_ENOENT, TF_EPERM (not readable by this user) or TF_EINVAL, with ERR. */
int tf_hv_token_read(const char *path, char *tok, size_t len, char *err, size_t errlen);

/* The hypervisor's side: reuses the token in PATH when it is a private file of this user
 * (mode without group/other bits), else writes a new random one there (mode 0600, atomically).
 * 0 or TF_EIO, with ERR. */
int tf_hv_token_ensure(const char *path, char *tok, size_t len, char *err, size_t errlen);

#endif
