/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl console [--no-token]`: the local hypervisor's web console (docs/console.md) as a link
 * to open in a browser. The link carries the API token in its fragment (#token=...), which a
 * browser never sends to a server; the page keeps it for its tab only and takes it out of the
 * address bar. --no-token prints the bare address (the page then asks for the token).
 */
#include "cli/cmds.h"

#include "cli/hvclient.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* S percent-encoded but for RFC 3986's unreserved characters. */
static void put_encoded(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c))
            putchar(c);
        else
            printf("%%%02X", c);
    }
}

int tf_cmd_console(int argc, char **argv)
{
    bool with_token = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-token")) {
            with_token = false;
        } else {
            fprintf(stderr, "usage: tfctl console [--no-token]\n");
            return 2;
        }
    }
    struct tf_cli_hv hv;
    char err[512];
    if (tf_cli_hv_connect(&hv, false, err, sizeof(err))) {
        fprintf(stderr, "tfctl console: %s\n", err);
        return 1;
    }
    char *page = NULL;
    int st = tf_cli_hv_get_text(&hv, "/console/", &page, err, sizeof(err));
    free(page);
    if (st != 200) {
        fprintf(stderr,
                "tfctl console: %s/console/ answered %d%s%s (a hypervisor without the "
                "console?)\n",
                hv.base, st, st ? "" : ": ", st ? "" : err);
        return 1;
    }
    /* A hypervisor listening on every address is reached on this machine through loopback. */
    const char *host = hv.base + strlen("http://");
    if (!strncmp(host, "0.0.0.0:", 8))
        printf("http://127.0.0.1%s/console/", host + 7);
    else
        printf("%s/console/", hv.base);
    const char *bearer = "Authorization: Bearer ";
    if (with_token && !strncmp(hv.auth, bearer, strlen(bearer))) {
        printf("#token=");
        put_encoded(hv.auth + strlen(bearer));
    }
    putchar('\n');
    return 0;
}
