/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers for the workload-model tests (see spec_test_util.h).
 */
#include "spec_test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/yamljson.h"

json_object *yaml_doc(const char *yaml)
{
    json_object *docs = NULL;
    char err[256] = "";
    if (tf_manifest_parse(yaml, strlen(yaml), &docs, err, sizeof(err)))
        fail_msg("bad test YAML: %s\n%s", err, yaml);
    if (json_object_array_length(docs) != 1)
        fail_msg("test YAML must hold one document");
    json_object *d = json_object_get(json_object_array_get_idx(docs, 0));
    json_object_put(docs);
    return d;
}

json_object *tf_pod(const char *ann_lines)
{
    char buf[8192];
    size_t n =
        (size_t)snprintf(buf, sizeof(buf),
                         "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n"
                         "  namespace: ns\n  labels:\n    tensor-fusion.ai/enabled: \"true\"\n"
                         "  annotations:\n");
    const char *p = ann_lines;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "    tensor-fusion.ai/%.*s\n", (int)len, p);
        p = e ? e + 1 : NULL;
    }
    if (!ann_lines || !*ann_lines)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "    {}\n");
    snprintf(buf + n, sizeof(buf) - n, "spec:\n  containers:\n    - name: app\n");
    return yaml_doc(buf);
}

void spec_ok(json_object *doc, const struct tf_profile *p, const struct tf_pool_defaults *pool,
             struct tf_spec *s)
{
    char err[512] = "";
    int rc = tf_spec_parse(doc, p, pool, s, err, sizeof(err));
    json_object_put(doc);
    if (rc)
        fail_msg("tf_spec_parse failed (%d): %s", rc, err);
}

int spec_err(json_object *doc, const struct tf_profile *p, const struct tf_pool_defaults *pool,
             char *err)
{
    struct tf_spec s;
    err[0] = 0;
    int rc = tf_spec_parse(doc, p, pool, &s, err, 512);
    json_object_put(doc);
    if (rc == 0)
        fail_msg("tf_spec_parse succeeded, expected an error");
    /* On error the spec is empty: nothing was left allocated. */
    if (s.name || s.warnings || s.containers || s.pool)
        fail_msg("spec not emptied on error");
    tf_spec_free(&s);
    return rc;
}

void object_ok(json_object *doc, const struct tf_profile *p, struct tf_spec *s)
{
    char err[512] = "";
    int rc = tf_spec_parse_object(doc, p, NULL, s, err, sizeof(err));
    json_object_put(doc);
    if (rc)
        fail_msg("tf_spec_parse_object failed (%d): %s", rc, err);
}

int object_err(json_object *doc, const struct tf_profile *p, char *err)
{
    struct tf_spec s;
    err[0] = 0;
    int rc = tf_spec_parse_object(doc, p, NULL, &s, err, 512);
    json_object_put(doc);
    if (rc == 0)
        fail_msg("tf_spec_parse_object succeeded, expected an error");
    tf_spec_free(&s);
    return rc;
}

static int contains_all(const char *hay, va_list ap)
{
    const char *n;
    while ((n = va_arg(ap, const char *)))
        if (!hay || !strstr(hay, n))
            return 0;
    return 1;
}

void assert_contains(const char *hay, ...)
{
    va_list ap;
    va_start(ap, hay);
    int ok = contains_all(hay, ap);
    va_end(ap);
    if (!ok) {
        va_start(ap, hay);
        const char *n;
        char want[512] = "";
        while ((n = va_arg(ap, const char *)))
            snprintf(want + strlen(want), sizeof(want) - strlen(want), "[%s] ", n);
        va_end(ap);
        fail_msg("message \"%s\" lacks %s", hay ? hay : "(null)", want);
    }
}

void assert_warning(const struct tf_spec *s, ...)
{
    for (size_t i = 0; i < s->nwarnings; i++) {
        va_list ap;
        va_start(ap, s);
        int ok = contains_all(s->warnings[i], ap);
        va_end(ap);
        if (ok)
            return;
    }
    va_list ap;
    va_start(ap, s);
    const char *first = va_arg(ap, const char *);
    va_end(ap);
    for (size_t i = 0; i < s->nwarnings; i++)
        print_message("  warning: %s\n", s->warnings[i]);
    fail_msg("no warning mentions \"%s\" (%zu warnings)", first, s->nwarnings);
}

void assert_no_warning(const struct tf_spec *s, const char *needle)
{
    for (size_t i = 0; i < s->nwarnings; i++)
        if (strstr(s->warnings[i], needle))
            fail_msg("unexpected warning: %s", s->warnings[i]);
}
