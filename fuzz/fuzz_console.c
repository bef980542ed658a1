/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the console API (src/console). Input: a request line "SUB RANGE STEP"
 * (fields separated by tabs; "-" for an absent argument), a newline, then the JSON answer a
 * metrics store gives to every query (in the cluster that answer comes from GreptimeDB over
 * the network), e.g. {"names": [...], "rows": [[...], ...]}. Checks that a parsed request only
 * ever holds names and UUIDs that cannot leave a SQL literal, stays in its bounds, and that
 * every view survives any answer shape.
 */
#include "console/console.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *answer;

static int store(void *arg, const char *sql, json_object **doc, json_object **names,
                 json_object **rows, char *err, size_t errlen)
{
    *doc = json_tokener_parse(answer);
    if (!*doc) {
        strcpy(err, "bad answer");
        return -1;
    }
    *names = json_object_object_get(*doc, "names");
    *rows = json_object_object_get(*doc, "rows");
    return 0;
}

static json_object *inventory(void *arg)
{
    return json_tokener_parse(
        "{\"mode\":\"local\",\"gpus\":[{\"uuid\":\"GPU-a\",\"node\":\"n\",\"pool\":\"p\","
        "\"tflops\":100,\"vramBytes\":1000,\"allocatedTflops\":10}],\"workloads\":[{\"name\":"
        "\"w\",\"namespace\":\"default\",\"gpus\":[\"GPU-a\",7,null],\"tflopsRequest\":5}]}");
}

static void check_name(const char *s, size_t cap)
{
    if (strnlen(s, cap) >= cap)
        abort();
    for (; *s; s++)
        if (*s == '\'' || *s == '\\' || *s == '"' || *s == ' ' || *s == ';' || *s == '/')
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *nl = strchr(buf, '\n');
    answer = nl ? nl + 1 : "{}";
    if (nl)
        *nl = '\0';
    char *f[3] = {buf, NULL, NULL};
    for (int i = 1; i < 3 && f[i - 1]; i++) {
        char *t = strchr(f[i - 1], '\t');
        if (t) {
            *t = '\0';
            f[i] = t + 1;
        }
    }
    for (int i = 1; i < 3; i++)
        if (f[i] && !strcmp(f[i], "-"))
            f[i] = NULL;
    struct tf_con_req r;
    char err[256];
    if (tf_con_req_parse(f[0], f[1], f[2], &r, err, sizeof(err)) == 0) {
        check_name(r.uuid, sizeof(r.uuid));
        check_name(r.ns, sizeof(r.ns));
        check_name(r.name, sizeof(r.name));
        if (r.range_s < TF_CON_MIN_RANGE_S || r.range_s > TF_CON_MAX_RANGE_S || r.step_s < 1)
            abort();
        struct tf_con_provider p = {.inventory = inventory};
        p.store.query = store;
        json_object *out = NULL;
        int st = tf_con_api(&p, "GET", f[0], f[1], f[2], &out);
        if (!out || (st != 200 && st != 404))
            abort();
        json_object_put(out);
    }
    free(buf);
    return 0;
}
