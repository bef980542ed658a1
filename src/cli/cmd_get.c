/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl get gpus|workloads [-o table|json]` and `tfctl top [--once] [--interval MS]`: the
 * local hypervisor's devices and workloads, as tables (default) or its JSON.
 */
#include "cli/cmds.h"

#include "cli/hvclient.h"
#include "core/quantity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *jstr(json_object *o, const char *k)
{
    json_object *v = json_object_object_get(o, k);
    const char *s = v ? json_object_get_string(v) : NULL;
    return s ? s : "";
}

static int64_t jint(json_object *o, const char *k)
{
    return json_object_get_int64(json_object_object_get(o, k));
}

static void gib(int64_t bytes, char *buf, size_t len)
{
    /* Whole tenths of a GiB in integer arithmetic: bounded width, no float formatting. */
    if (bytes >= (INT64_C(1) << 30)) {
        long long tenths = (long long)(bytes / ((INT64_C(1) << 30) / 10));
        snprintf(buf, len, "%lld.%lldGi", tenths / 10, tenths % 10);
    } else {
        snprintf(buf, len, "%lldMi", (long long)(bytes >> 20));
    }
}

static void print_gpus(json_object *arr)
{
    printf("%-3s %-40s %-10s %-17s %-17s %6s %9s %s\n", "IDX", "UUID", "MODEL", "TFLOPS(ALLOC/CAP)",
           "VRAM(ALLOC/CAP)", "UTIL", "MEM-USED", "WORKLOADS");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *d = json_object_array_get_idx(arr, i);
        char tf[40], vr[72], a[32], c[32], used[32];
        snprintf(tf, sizeof(tf), "%s/%s", jstr(d, "allocatedTflops"), jstr(d, "tflops"));
        gib(jint(d, "allocatedVramBytes"), a, sizeof(a));
        gib(jint(d, "vramBytes"), c, sizeof(c));
        snprintf(vr, sizeof(vr), "%s/%s", a, c);
        gib(jint(d, "memoryUsedBytes"), used, sizeof(used));
        char wl[48];
        snprintf(wl, sizeof(wl), "%d%s%s%s", (int)jint(d, "workloads"),
                 *jstr(d, "isolation") ? " (" : "", jstr(d, "isolation"),
                 *jstr(d, "isolation") ? ")" : "");
        printf("%-3d %-40s %-10s %-17s %-17s %5.1f%% %9s %s%s\n", (int)jint(d, "index"),
               jstr(d, "uuid"), *jstr(d, "model") ? jstr(d, "model") : jstr(d, "name"), tf, vr,
               json_object_get_double(json_object_object_get(d, "utilizationPercent")), used, wl,
               json_object_get_boolean(json_object_object_get(d, "present")) ? "" : " ABSENT");
    }
}

static void print_workloads(json_object *arr)
{
    printf("%-20s %-9s %-8s %-4s %-15s %-15s %-8s %s\n", "NAME", "ISOLATION", "QOS", "GPUS",
           "COMPUTE(LIMIT)", "VRAM(REQ/LIM)", "AGE", "PIDS");
    time_t now = time(NULL);
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *w = json_object_array_get_idx(arr, i);
        char comp[40], vram[40], age[32], pids[64] = "";
        if (*jstr(w, "tflopsLimit"))
            snprintf(comp, sizeof(comp), "%s TFLOPS", jstr(w, "tflopsLimit"));
        else
            snprintf(comp, sizeof(comp), "%s%%", jstr(w, "computePercentLimit"));
        if (*jstr(w, "vramLimit"))
            snprintf(vram, sizeof(vram), "%s/%s", jstr(w, "vramRequest"), jstr(w, "vramLimit"));
        else
            snprintf(vram, sizeof(vram), "whole GPU");
        long secs = (long)(now - jint(w, "createdMs") / 1000);
        if (secs < 120)
            snprintf(age, sizeof(age), "%lds", secs);
        else if (secs < 7200)
            snprintf(age, sizeof(age), "%ldm", secs / 60);
        else
            snprintf(age, sizeof(age), "%ldh", secs / 3600);
        json_object *p = json_object_object_get(w, "pids");
        for (size_t k = 0; k < json_object_array_length(p); k++) {
            size_t len = strlen(pids);
            snprintf(pids + len, sizeof(pids) - len, "%s%d", k ? "," : "",
                     json_object_get_int(json_object_array_get_idx(p, k)));
        }
        printf("%-20s %-9s %-8s %-4d %-15s %-15s %-8s %s\n", jstr(w, "name"), jstr(w, "isolation"),
               jstr(w, "qos"), (int)jint(w, "gpuCount"), comp, vram, age, pids);
    }
}

int tf_cmd_get(int argc, char **argv)
{
    const char *what = NULL, *fmt = "table";
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
            fmt = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tfctl get gpus|workloads [-o table|json]\n");
            return 0;
        } else if (!what)
            what = argv[i];
        else {
            fprintf(stderr, "tfctl get: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    bool gpus = what && (!strcmp(what, "gpus") || !strcmp(what, "gpu") || !strcmp(what, "devices"));
    bool wls = what && (!strcmp(what, "workloads") || !strcmp(what, "workload"));
    if (!gpus && !wls) {
        fprintf(stderr, "usage: tfctl get gpus|workloads [-o table|json]\n");
        return 2;
    }
    if (strcmp(fmt, "table") && strcmp(fmt, "json")) {
        fprintf(stderr, "tfctl get: -o %s: expected table or json\n", fmt);
        return 2;
    }
    struct tf_cli_hv hv;
    char err[512];
    if (tf_cli_hv_connect(&hv, false, err, sizeof(err))) {
        fprintf(stderr, "tfctl get: %s\n", err);
        return 1;
    }
    json_object *resp = NULL;
    int st = tf_cli_hv_call(&hv, "GET", gpus ? "/api/v1/devices" : "/api/v1/workloads", NULL, &resp,
                            err, sizeof(err));
    if (st != 200 || !resp) {
        fprintf(stderr, "tfctl get: HTTP %d %s\n", st, err);
        json_object_put(resp);
        return 1;
    }
    if (!strcmp(fmt, "json"))
        printf("%s\n", json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PRETTY));
    else if (gpus)
        print_gpus(resp);
    else
        print_workloads(resp);
    json_object_put(resp);
    return 0;
}

static void print_workers(json_object *arr)
{
    printf("%-22s %-40s %-9s %9s %9s %12s %12s\n", "WORKER", "GPU", "ISOLATION", "COMPUTE", "LIMIT",
           "VRAM-USED", "VRAM-LIMIT");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *w = json_object_array_get_idx(arr, i);
        char used[32], lim[32];
        gib(jint(w, "memoryBytes"), used, sizeof(used));
        gib(jint(w, "vramLimitBytes"), lim, sizeof(lim));
        printf("%-22s %-40s %-9s %8.1f%% %8s%% %12s %12s\n", jstr(w, "worker"), jstr(w, "uuid"),
               jstr(w, "isolation"),
               json_object_get_double(json_object_object_get(w, "computePercent")),
               jstr(w, "computeLimitPercent"), used, lim);
    }
}

int tf_cmd_top(int argc, char **argv)
{
    bool once = false;
    long interval = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--once"))
            once = true;
        else if (!strcmp(argv[i], "--interval") && i + 1 < argc)
            interval = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: tfctl top [--once] [--interval MS]\n");
            return 2;
        }
    }
    if (interval < 100)
        interval = 100;
    struct tf_cli_hv hv;
    char err[512];
    if (tf_cli_hv_connect(&hv, false, err, sizeof(err))) {
        fprintf(stderr, "tfctl top: %s\n", err);
        return 1;
    }
    bool tty = isatty(1);
    for (;;) {
        json_object *gpus = NULL, *workers = NULL;
        int s1 = tf_cli_hv_call(&hv, "GET", "/api/v1/devices", NULL, &gpus, err, sizeof(err));
        int s2 = tf_cli_hv_call(&hv, "GET", "/api/v1/workers", NULL, &workers, err, sizeof(err));
        if (s1 != 200 || s2 != 200 || !gpus || !workers) {
            json_object_put(gpus);
            json_object_put(workers);
            fprintf(stderr, "tfctl top: hypervisor not answering: %s\n", err);
            return 1;
        }
        if (!once && tty)
            printf("\033[H\033[2J");
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char ts[32];
        strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
        printf("tfctl top - %s - %s\n\n", ts, hv.base);
        print_gpus(gpus);
        printf("\n");
        print_workers(workers);
        fflush(stdout);
        json_object_put(gpus);
        json_object_put(workers);
        if (once)
            return 0;
        struct timespec t = {interval / 1000, (interval % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
}
