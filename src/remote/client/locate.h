/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client in Kubernetes remote mode: asks the controller (TF_CONTROLLER_URL) which
 * tf-worker serves this pod's connection, waiting while the controller says "not paired yet"
 * or cannot be reached. One HTTP/1.0 GET per attempt over a plain TCP socket (libc only:
 * getaddrinfo, connect, send, recv); parsing is remote/lookup.h's. Private to the client.
 *
 * Waiting. A 503 answer, and any failure to get a whole answer (name not resolved, connection
 * refused or unreachable, connection closed early, no complete answer in time: the controller
 * may be restarting) is retried after 100 ms, doubling to at most 2 s between attempts, until
 * WAIT_MS have passed since the first attempt; the first retry is logged once at info. Each
 * attempt (connect, send, receive) is bounded by the time left, but at least 1 s and at most
 * 10 s, so the whole lookup ends within about WAIT_MS + 1 s. Any other answer (404, 400,
 * another status, a malformed or oversized answer, a 200 without a usable workerURL) fails
 * at once. Thread-safe (no state); blocks the caller for the whole wait.
 */
#ifndef TF_REMOTE_CLIENT_LOCATE_H
#define TF_REMOTE_CLIENT_LOCATE_H

#include <stddef.h>

/* Asks the controller at URL for the worker of connection NAME in namespace NS, waiting up to
 * WAIT_MS (>= 0) as described above. 0: ADDR (capacity ADDRLEN) holds the worker's address
 * (tf_net_addr_parse syntax). Else a negative TF_E* code (TF_ETIMEDOUT when the wait ran out)
 * and ERR says why, naming URL and the controller's last answer; the caller logs it. */
int tfc_locate(const char *url, const char *name, const char *ns, int wait_ms, char *addr,
               size_t addrlen, char *err, size_t errlen);

#endif
