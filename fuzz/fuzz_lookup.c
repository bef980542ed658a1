/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: libtf_client's controller lookup parsers (src/remote/lookup.h) on
 * arbitrary bytes. The whole input is read as the controller's answer (HTTP status line,
 * headers, JSON body) and judged; its first line, as a NUL-terminated string, is parsed as
 * TF_CONTROLLER_URL and, when accepted, a request is built from it with the rest of the input
 * as the connection's name. Checks what the parsers promise: a verdict of 0 comes only from a
 * 200 whose workerURL tf_net_addr_parse accepts, accepted URLs have a host, a port 1..65535
 * and a path starting with '/', and requests are one head ending in an empty line.
 */
#include "common/err.h"
#include "remote/lookup.h"
#include "remote/net.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void answer(const uint8_t *data, size_t size)
{
    struct tf_lookup_reply r;
    char err[256], addr[300], msg[400];
    if (tf_lookup_reply_parse((const char *)data, size, &r, err, sizeof(err)) != 0)
        return;
    if (r.status < 100 || r.status > 599 || strlen(r.body) >= sizeof(r.body))
        abort();
    if (!r.json && (r.worker_url[0] || r.error[0]))
        abort();
    int rc = tf_lookup_reply_verdict(&r, addr, sizeof(addr), msg, sizeof(msg));
    if (rc == 0) {
        struct tf_net_addr a;
        if (r.status != 200 || strcmp(addr, r.worker_url) != 0 ||
            tf_net_addr_parse(addr, &a, err, sizeof(err)) != 0)
            abort();
    } else if (addr[0] || (rc == TF_EBUSY) != (r.status == 503)) {
        abort();
    }
    if (!msg[0])
        abort();
}

static void url(const uint8_t *data, size_t size)
{
    size_t n = 0;
    while (n < size && n < 2047 && data[n] != '\n')
        n++;
    char s[2048];
    memcpy(s, data, n);
    s[n] = 0;
    struct tf_lookup_url u;
    char err[256];
    if (tf_lookup_url_parse(s, &u, err, sizeof(err)) != 0)
        return;
    long port = strtol(u.port, NULL, 10);
    if (!u.host[0] || port < 1 || port > 65535 || u.target[0] != '/')
        abort();
    /* The rest of the input (NUL-cut) as the pod's name. */
    char name[512];
    size_t rest = size > n + 1 ? size - n - 1 : 0;
    if (rest >= sizeof(name))
        rest = sizeof(name) - 1;
    memcpy(name, data + size - rest, rest);
    name[rest] = 0;
    char req[TF_LOOKUP_MAX_REQUEST];
    int len =
        tf_lookup_request(&u, name[0] ? name : "pod", "ns", req, sizeof(req), err, sizeof(err));
    if (len < 0)
        return;
    if ((size_t)len != strlen(req) || len < 4 || memcmp(req, "GET /", 5) != 0 ||
        strcmp(req + len - 4, "\r\n\r\n") != 0 || strstr(req, "\r\n\r\n") != req + len - 4)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    answer(data, size);
    url(data, size);
    return 0;
}
