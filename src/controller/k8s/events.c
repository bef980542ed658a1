/* SPDX-License-Identifier: Apache-2.0
 *
 * Events (see client.h): core/v1 Events written now (tf_k8s_event) or queued to a recorder's
 * thread (tf_k8s_record), and the API's timestamps.
 */
#include "controller/k8s/client.h"

#include "common/err.h"
#include "common/log.h"
#include "common/yamljson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tf_k8s_time_now(char *buf, size_t len, bool micro)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    if (micro)
        snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
    else
        snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int tf_k8s_time_parse(const char *s, long long *usec)
{
    struct tm tm = {0};
    int y, mo, d, h, mi, sec, used = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6)
        return TF_EPARSE;
    long frac = 0;
    const char *p = s + used;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 6)
                frac = frac * 10 + (*p - '0');
        for (; digits < 6; digits++)
            frac *= 10;
    }
    if (strcmp(p, "Z") != 0)
        return TF_EPARSE;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    *usec = (long long)timegm(&tm) * 1000000LL + frac;
    return 0;
}

int tf_k8s_event(struct tf_k8s_client *c, json_object *involved, const char *type,
                 const char *reason, const char *message, const char *component)
{
    const char *ns = tf_json_str(involved, "metadata", "namespace", NULL);
    const char *name = tf_json_str(involved, "metadata", "name", NULL);
    if (!name)
        return TF_EINVAL;
    if (!ns || !*ns)
        ns = "default";
    char ts[40], err[256];
    tf_k8s_time_now(ts, sizeof(ts), false);
    json_object *ev = json_object_new_object();
    json_object *meta = json_object_new_object();
    char gen[300];
    snprintf(gen, sizeof(gen), "%.250s.", name);
    json_object_object_add(meta, "generateName", json_object_new_string(gen));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(ev, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(ev, "kind", json_object_new_string("Event"));
    json_object_object_add(ev, "metadata", meta);
    json_object *inv = json_object_new_object();
    static const char *const keys[] = {"kind", "apiVersion"};
    for (int i = 0; i < 2; i++) {
        const char *v = tf_json_str(involved, keys[i], NULL);
        if (v)
            json_object_object_add(inv, keys[i], json_object_new_string(v));
    }
    static const char *const mkeys[] = {"name", "namespace", "uid", "resourceVersion"};
    for (int i = 0; i < 4; i++) {
        const char *v = tf_json_str(involved, "metadata", mkeys[i], NULL);
        if (v)
            json_object_object_add(inv, mkeys[i], json_object_new_string(v));
    }
    json_object_object_add(ev, "involvedObject", inv);
    json_object_object_add(ev, "type", json_object_new_string(type));
    json_object_object_add(ev, "reason", json_object_new_string(reason));
    json_object_object_add(ev, "message", json_object_new_string(message));
    json_object *src = json_object_new_object();
    json_object_object_add(src, "component",
                           json_object_new_string(component ? component : "tf-controller"));
    json_object_object_add(ev, "source", src);
    json_object_object_add(ev, "firstTimestamp", json_object_new_string(ts));
    json_object_object_add(ev, "lastTimestamp", json_object_new_string(ts));
    json_object_object_add(ev, "count", json_object_new_int(1));
    int rc = tf_k8s_create(c, &tf_k8s_events, ns, ev, NULL, err, sizeof(err));
    if (rc)
        tf_log(TF_LOG_WARN, "k8s", "event not recorded reason=%s err=%s", reason, err);
    json_object_put(ev);
    return rc;
}
