/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl cron next "0 3 * * *" --timezone Asia/Shanghai [-n 5] [--after TIME]
 * [--zoneinfo DIR] [-o table|json]`: the next fire times of a 5-field cron schedule in an
 * IANA zone, exactly as the defrag planner and cron scaling rules evaluate it (core/cron.h,
 * daylight-saving rules included). The timezone is required, as in the defrag config; a
 * "TZ=" prefix in the schedule is rejected.
 *
 * Table output: one line per fire time, local time with its offset and zone abbreviation,
 * then UTC. JSON: [{"local": "2024-05-02T03:00:00+08:00", "utc": "2024-05-01T19:00:00Z"}, ...].
 * Exit codes: 0, 2 bad usage or invalid schedule/zone, 1 runtime failure.
 */
#include "cli/cmds.h"
#include "cli/planio.h"

#include "common/err.h"
#include "core/cron.h"
#include "core/timeutil.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "tfctl cron"
#define MAX_COUNT 1000

static void usage(FILE *f)
{
    fprintf(f, "usage: tfctl cron next SCHEDULE --timezone ZONE [-n COUNT] [--after TIME] "
               "[-o table|json]\n"
               "  SCHEDULE            5-field cron expression, e.g. \"0 3 * * *\" (no TZ= prefix)\n"
               "      --timezone ZONE IANA time zone, e.g. UTC or Asia/Shanghai (required)\n"
               "  -n, --count N       how many fire times (default 5, at most 1000)\n"
               "      --after TIME    RFC 3339 start (default now)\n"
               "      --zoneinfo DIR  zone database (default /usr/share/zoneinfo)\n"
               "  -o, --output FMT    table (default) or json\n");
}

int tf_cmd_cron(int argc, char **argv)
{
    static const struct option opts[] = {
        {"timezone", required_argument, NULL, 'z'},
        {"count", required_argument, NULL, 'n'},
        {"after", required_argument, NULL, 'a'},
        {"zoneinfo", required_argument, NULL, 'Z'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc < 2 ||
        (strcmp(argv[1], "next") && strcmp(argv[1], "-h") && strcmp(argv[1], "--help"))) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "next")) {
        usage(stdout);
        return 0;
    }
    const char *zone = NULL, *after_s = NULL, *zdir = NULL, *fmt = "table";
    long count = 5;
    optind = 1;
    int c;
    while ((c = getopt_long(argc - 1, argv + 1, "n:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'z':
            zone = optarg;
            break;
        case 'n': {
            char *end;
            count = strtol(optarg, &end, 10);
            if (*end || count < 1 || count > MAX_COUNT) {
                fprintf(stderr, CMD ": -n: \"%s\": want 1..%d\n", optarg, MAX_COUNT);
                return 2;
            }
            break;
        }
        case 'a':
            after_s = optarg;
            break;
        case 'Z':
            zdir = optarg;
            break;
        case 'o':
            fmt = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if ((argc - 1) - optind != 1) {
        fprintf(stderr, CMD ": expected exactly one SCHEDULE argument (quote it)\n");
        return 2;
    }
    const char *expr = argv[1 + optind];
    if (strcmp(fmt, "table") && strcmp(fmt, "json")) {
        fprintf(stderr, CMD ": -o: \"%s\": want table or json\n", fmt);
        return 2;
    }
    struct tf_cron cron;
    char err[512];
    if (tf_cron_parse(expr, &cron, "schedule", err, sizeof(err))) {
        fprintf(stderr, CMD ": %s\n", err);
        return 2;
    }
    if (!zone) {
        fprintf(stderr,
                CMD ": --timezone is required (an IANA name such as UTC or Asia/Shanghai)\n");
        return 2;
    }
    int64_t t;
    if (after_s) {
        if (tf_planio_time(CMD, "--after", after_s, &t))
            return 2;
    } else {
        t = tf_planio_now();
    }
    struct tf_tz *z;
    if (tf_planio_zone(CMD, zdir, zone, "--timezone", &z))
        return 2;
    json_object *arr = !strcmp(fmt, "json") ? json_object_new_array() : NULL;
    int rc = 0;
    for (long i = 0; i < count; i++) {
        int64_t nx;
        int r = tf_cron_next(&cron, z, t, &nx);
        if (r) {
            if (i == 0) {
                fprintf(stderr, CMD ": \"%s\" does not fire after the given time\n", expr);
                rc = 1;
            }
            break;
        }
        struct tf_tz_period p;
        tf_tz_period_at(z, nx / 1000, &p);
        char local[48], utc[48];
        tf_rfc3339_format_offset(nx, p.utoff, local, sizeof(local));
        tf_rfc3339_format(nx, utc, sizeof(utc));
        if (arr) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "local", json_object_new_string(local));
            json_object_object_add(o, "utc", json_object_new_string(utc));
            json_object_object_add(o, "abbreviation", json_object_new_string(p.abbr));
            json_object_array_add(arr, o);
        } else {
            printf("%-26s %-6s %s\n", local, p.abbr, utc);
        }
        t = nx;
    }
    if (arr) {
        printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(arr);
    }
    tf_tz_destroy(z);
    return rc;
}
