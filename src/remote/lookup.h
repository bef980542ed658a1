/* SPDX-License-Identifier: Apache-2.0
 *
 * Finding a remote client's tf-worker through the controller (Kubernetes remote mode): the
 * pure half, no I/O. libtf_client asks the controller
 *
 *     GET /api/connection?name=<pod>&namespace=<ns> HTTP/1.0
 *
 * and the controller answers 200 {"workerURL":"tcp://10.1.2.3:8001"}, 503 {"error":"..."}
 * while the pod's connection is not paired with a ready worker, 404 for an unknown
 * connection and 400 for missing parameters. This unit parses the controller's URL, builds
 * the request and reads the answer; src/remote/client/locate.c does the socket work and the
 * waiting. It links only libc (it is part of libtf_client, which is copied alone into
 * application images), so the answer is read by a small strict scanner, not a JSON library.
 *
 * URL: http://HOST[:PORT][/PATH[?QUERY]]. HOST is a name or IPv4 literal of the characters
 * A-Z a-z 0-9 - . _, or an IPv6 literal in brackets ([::1]); PORT 1..65535, default 80; the
 * path (default "/") and query are printable ASCII without spaces or '#'. The scheme is
 * matched in any case; https:// is TF_ENOTSUP (no TLS in the client), any other scheme,
 * user info (user@host), a fragment and anything else malformed are TF_EINVAL.
 *
 * Query values are percent-encoded: every byte outside A-Z a-z 0-9 - . _ ~ becomes %XX, so
 * a value reaches the controller exactly (Kubernetes names, [a-z0-9.-], never need it).
 * Empty values are refused.
 *
 * Answer: status line "HTTP/1.<digit> NNN[ reason]", header lines up to the empty line
 * (CRLF or LF line ends), then the body. Content-Length, when present, must match the body
 * exactly; a Transfer-Encoding other than identity is TF_ENOTSUP; folded header lines,
 * control characters, a missing empty line (truncated headers) and answers over
 * TF_LOOKUP_MAX_ANSWER bytes are TF_EPROTO. The body is accepted as JSON when it is one
 * object (nested values are skipped, up to 16 levels); the string members "workerURL" and
 * "error" are taken, with the escapes \" \\ \/ only: any other escape in them, in a member
 * name, a duplicate of either member or either member not being a string makes the scanner
 * refuse the body instead of guessing. Other members may hold any valid JSON.
 *
 * Every function is pure and thread-safe; messages go to ERR/ERRLEN (or MSG/MSGLEN).
 */
#ifndef TF_REMOTE_LOOKUP_H
#define TF_REMOTE_LOOKUP_H

#include <stddef.h>

#define TF_LOOKUP_MAX_ANSWER 16384 /* bytes of a whole answer, headers included */
#define TF_LOOKUP_MAX_REQUEST 2048 /* bytes of a request */

struct tf_lookup_url {
    char host[256];    /* name or address literal, brackets removed */
    char port[8];      /* decimal, "80" by default */
    char target[1024]; /* path and query as given ("/" when empty) */
    int ipv6;          /* HOST was a bracketed literal */
};

/* Parses S. 0, TF_ENOTSUP (https://) or TF_EINVAL, described in ERR naming S. */
int tf_lookup_url_parse(const char *s, struct tf_lookup_url *u, char *err, size_t errlen);

/* Writes the GET request for connection NAME in namespace NS into OUT (capacity OUTLEN,
 * NUL-terminated): HTTP/1.0, Host:, Accept: application/json, Connection: close. The query
 * parameters name= and namespace= are appended to the URL's own query (with '&' when it
 * has one). Returns its length, or TF_EINVAL (empty value) / TF_ENOSPC (does not fit). */
int tf_lookup_request(const struct tf_lookup_url *u, const char *name, const char *ns, char *out,
                      size_t outlen, char *err, size_t errlen);

struct tf_lookup_reply {
    int status;           /* HTTP status, 100..599 */
    int json;             /* 1: the body is a JSON object the scanner accepted */
    char worker_url[300]; /* the "workerURL" member; "" when absent (or !json) */
    char error[256];      /* the "error" member, non-printable bytes as '?', cut to fit */
    char body[128];       /* the body's start, non-printable bytes as ' ', for messages */
    char json_err[128];   /* !json: why the scanner refused the body ("empty body", ...) */
};

/* Parses a whole answer DATA/LEN (not NUL-terminated; any bytes). 0 when it is a
 * well-formed HTTP answer (whatever its status and whether or not its body is JSON; see
 * R->json), else TF_EPROTO / TF_ENOTSUP described in ERR. */
int tf_lookup_reply_parse(const char *data, size_t len, struct tf_lookup_reply *r, char *err,
                          size_t errlen);

/* What an answer means for the client. 0: status 200 with a "workerURL" that
 * tf_net_addr_parse accepts (and a port other than 0), copied to ADDR (capacity ADDRLEN).
 * TF_EBUSY: 503, the connection is not paired with a worker yet (wait and ask again).
 * Otherwise fail now: TF_ENOENT (404), TF_EINVAL (400), TF_EPROTO (any other status, or a
 * 200 without a usable workerURL). MSG gets one line, "HTTP 404: <the error member>" (the
 * body's start when there is no error member), in every case. */
int tf_lookup_reply_verdict(const struct tf_lookup_reply *r, char *addr, size_t addrlen, char *msg,
                            size_t msglen);

#endif
