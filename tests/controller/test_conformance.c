/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod conformance with upstream TensorFusion through the webhook's AdmissionReview path: every
 * fixture of tests/conformance/pods is admitted as kube-apiserver would send it (the pod a
 * controller creates from the manifest's template, with its owner reference), with the cluster
 * objects the fixture carries (GPUPools, GPUResourceQuotas, ProviderConfigs, WorkloadProfiles)
 * as the webhook's environment. A denial must carry the fixture's message; an admitted pod's
 * JSONPatch is applied (python3-jsonpatch) and the mutated pod, read back as the scheduler
 * extender reads it, must give the fixture's normalised spec, with its warnings among the
 * AdmissionReview warnings. tests/conformance/test_pod_conformance.py checks the same fixtures
 * through `tfctl spec`.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "controller/base64.h"
#include "controller/webhook.h"
#include "harness.h"

/* One fixture's documents by role (borrowed from DOCS). */
struct fx {
    json_object *docs, *pools, *quotas, *providers, *profiles;
    json_object *workload, *expect;
};

static struct fx cur;

static json_object *copy(json_object *o)
{
    json_object *c = NULL;
    if (o)
        json_object_deep_copy(o, &c, NULL);
    return c;
}

static json_object *by_name(json_object *arr, const char *name)
{
    for (size_t i = 0; name && i < json_object_array_length(arr); i++) {
        const char *n = tf_json_str(json_object_array_get_idx(arr, i), "metadata", "name", NULL);
        if (n && !strcmp(n, name))
            return json_object_array_get_idx(arr, i);
    }
    return NULL;
}

static json_object *env_profile(void *arg, const char *ns, const char *name)
{
    return copy(by_name(cur.profiles, name));
}

static json_object *env_namespace(void *arg, const char *name)
{
    json_object *o = jparse("{\"metadata\":{}}");
    json_object_object_add(tf_json_path(o, "metadata", NULL), "name", json_object_new_string(name));
    return o;
}

/* The fixture's pools; without any, the configured default-pool exists. */
static json_object *env_pool(void *arg, const char *name)
{
    if (!json_object_array_length(cur.pools) && !strcmp(name, "default-pool"))
        return jparse("{\"metadata\":{\"name\":\"default-pool\"}}");
    return copy(by_name(cur.pools, name));
}

/* The owner the pod points at: the Deployment's ReplicaSet (with the Deployment's replicas),
 * or the StatefulSet / Job itself. */
static json_object *env_owner(void *arg, const char *ns, const char *kind, const char *name)
{
    const char *wkind = tf_json_str(cur.workload, "kind", NULL);
    if (!strcmp(kind, "ReplicaSet") && !strcmp(wkind, "Deployment")) {
        json_object *rs = jparse("{\"kind\":\"ReplicaSet\",\"metadata\":{\"ownerReferences\":[{"
                                 "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                 "\"controller\":true}]},\"spec\":{}}");
        json_object_object_add(tf_json_path(rs, "metadata", NULL), "name",
                               json_object_new_string(name));
        json_object *ref =
            json_object_array_get_idx(tf_json_path(rs, "metadata", "ownerReferences", NULL), 0);
        json_object_object_add(
            ref, "name",
            json_object_new_string(tf_json_str(cur.workload, "metadata", "name", NULL)));
        json_object *reps = tf_json_path(cur.workload, "spec", "replicas", NULL);
        json_object_object_add(tf_json_path(rs, "spec", NULL), "replicas",
                               reps ? json_object_get(reps) : json_object_new_int(1));
        return rs;
    }
    return strcmp(kind, wkind) == 0 ? copy(cur.workload) : NULL;
}

static int env_count(void *arg, const char *ns, const char *owner)
{
    return 0;
}

static int env_ensure(void *arg, const char *ns, const char *name, json_object *w, bool join,
                      char *err, size_t errlen)
{
    return 0;
}

static json_object *env_list_pools(void *arg)
{
    return copy(cur.pools);
}

static json_object *env_list_quotas(void *arg, const char *ns)
{
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(cur.quotas); i++) {
        json_object *q = json_object_array_get_idx(cur.quotas, i);
        const char *qns = tf_json_str(q, "metadata", "namespace", NULL);
        if (qns && !strcmp(qns, ns))
            json_object_array_add(out, copy(q));
    }
    return out;
}

static json_object *env_list_providers(void *arg)
{
    return copy(cur.providers);
}

static void load(const char *name)
{
    char rel[512];
    snprintf(rel, sizeof(rel), "tests/conformance/pods/%s", name);
    FILE *f = fopen(src_path(rel), "rb");
    if (!f)
        fail_msg("cannot open %s", rel);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char err[256];
    memset(&cur, 0, sizeof(cur));
    if (tf_manifest_parse(buf, n, &cur.docs, err, sizeof(err)))
        fail_msg("%s: %s", name, err);
    cur.pools = json_object_new_array();
    cur.quotas = json_object_new_array();
    cur.providers = json_object_new_array();
    cur.profiles = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(cur.docs); i++) {
        json_object *d = json_object_array_get_idx(cur.docs, i);
        const char *kind = tf_json_str(d, "kind", NULL);
        json_object *to = !kind                               ? NULL
                          : !strcmp(kind, "GPUPool")          ? cur.pools
                          : !strcmp(kind, "GPUResourceQuota") ? cur.quotas
                          : !strcmp(kind, "ProviderConfig")   ? cur.providers
                          : !strcmp(kind, "WorkloadProfile")  ? cur.profiles
                                                              : NULL;
        if (to)
            json_object_array_add(to, json_object_get(d));
        else if (kind && !strcmp(kind, "Expect"))
            cur.expect = d;
        else if (tf_spec_kind_supported(d))
            cur.workload = d;
    }
    if (!cur.workload || !cur.expect)
        fail_msg("%s: needs a workload and a kind: Expect document", name);
}

static void unload(void)
{
    json_object_put(cur.pools);
    json_object_put(cur.quotas);
    json_object_put(cur.providers);
    json_object_put(cur.profiles);
    json_object_put(cur.docs);
    memset(&cur, 0, sizeof(cur));
}

/* The pod kube-apiserver would review for the fixture's workload. */
static json_object *the_pod(const char **ns_out)
{
    json_object *pod = copy(tf_spec_pod_template(cur.workload));
    const char *kind = tf_json_str(cur.workload, "kind", NULL);
    const char *name = tf_json_str(cur.workload, "metadata", "name", NULL);
    const char *ns = tf_json_str(cur.workload, "metadata", "namespace", NULL);
    if (!ns)
        ns = tf_json_str(pod, "metadata", "namespace", NULL);
    *ns_out = ns ? ns : "default";
    if (!tf_json_path(pod, "metadata", NULL))
        json_object_object_add(pod, "metadata", json_object_new_object());
    json_object *meta = tf_json_path(pod, "metadata", NULL);
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    json_object_object_add(meta, "namespace", json_object_new_string(*ns_out));
    if (strcmp(kind, "Pod") != 0) {
        char buf[600];
        bool rs = !strcmp(kind, "Deployment");
        snprintf(buf, sizeof(buf),
                 "[{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"name\":\"%s%s\",\"uid\":\"u\","
                 "\"controller\":true}]",
                 !strcmp(kind, "Job") ? "batch/v1" : "apps/v1", rs ? "ReplicaSet" : kind,
                 name ? name : "w", rs ? "-5d8f9" : "");
        json_object_object_add(meta, "ownerReferences", jparse(buf));
        snprintf(buf, sizeof(buf), "%s-", name ? name : "w");
        json_object_object_add(meta, "generateName", json_object_new_string(buf));
    }
    return pod;
}

/* Every member of WANT equals GOT's, maps compared recursively; a mismatch is reported. */
static void subset(json_object *want, json_object *got, const char *path, const char *fixture)
{
    if (json_object_is_type(want, json_type_object)) {
        if (!json_object_is_type(got, json_type_object))
            fail_msg("%s: %s: %s is not a map", fixture, path, json_object_to_json_string(got));
        json_object_object_foreach(want, k, v)
        {
            char sub[256];
            snprintf(sub, sizeof(sub), "%s.%s", path, k);
            json_object *g = NULL;
            if (!json_object_object_get_ex(got, k, &g))
                fail_msg("%s: %s: missing", fixture, sub);
            subset(v, g, sub, fixture);
        }
        return;
    }
    /* Compare as printed: 20 and 20.0 are the same number to a reader. */
    json_object *a = json_tokener_parse(json_object_to_json_string(want));
    json_object *b = json_tokener_parse(json_object_to_json_string(got));
    bool same = json_object_equal(a, b);
    json_object_put(a);
    json_object_put(b);
    if (!same)
        fail_msg("%s: %s: got %s, want %s", fixture, path, json_object_to_json_string(got),
                 json_object_to_json_string(want));
}

/* Keys the mutated pod cannot show (they describe the manifest or the admission itself). */
static const char *const not_after_admission[] = {
    "name",         "namespace",        "kind", "workloadProfile", "warnings", "migratedContainers",
    "autoMigrated", "injectContainers", "gang",
};

static void check(const char *name, struct tf_webhook *wh)
{
    load(name);
    const char *ns;
    json_object *pod = the_pod(&ns);
    char *body = admission_review(pod, ns, false);
    int status = 0;
    char *out = tf_webhook_handle(wh, body, strlen(body), &status);
    free(body);
    assert_int_equal(status, 200);
    json_object *answer = jparse(out);
    free(out);
    json_object *resp = tf_json_path(answer, "response", NULL);
    bool allowed = json_object_get_boolean(tf_json_path(resp, "allowed", NULL));
    const char *denied = tf_json_str(cur.expect, "denied", NULL);
    if (denied) {
        const char *msg = tf_json_str(resp, "status", "message", NULL);
        if (allowed || !msg || !strstr(msg, denied))
            fail_msg("%s: want a denial with \"%s\", got %s", name, denied,
                     json_object_to_json_string(resp));
        goto done;
    }
    if (!allowed)
        fail_msg("%s: denied: %s", name, tf_json_str(resp, "status", "message", NULL));
    json_object *warnings = tf_json_path(resp, "warnings", NULL);
    json_object *ws = tf_json_path(cur.expect, "warnings", NULL);
    for (size_t i = 0; ws && i < json_object_array_length(ws); i++) {
        const char *w = json_object_get_string(json_object_array_get_idx(ws, i));
        bool found = false;
        for (size_t j = 0; warnings && j < json_object_array_length(warnings); j++)
            found = found || strstr(json_object_get_string(json_object_array_get_idx(warnings, j)),
                                    w) != NULL;
        if (!found)
            fail_msg("%s: warning \"%s\" not among %s", name, w,
                     json_object_to_json_string(warnings));
    }
    char *ops_text = tf_base64_decode(tf_json_str(resp, "patch", NULL), NULL);
    json_object *ops = jparse(ops_text);
    free(ops_text);
    json_object *mutated = py_apply_patch(pod, ops);
    json_object_put(ops);
    if (!mutated)
        fail_msg("%s: the patch does not apply", name);
    /* Read back as the extender does: the pod's own annotations, nothing else. */
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    struct tf_spec s;
    char err[512];
    if (tf_spec_parse(mutated, NULL, &pd, &s, err, sizeof(err)))
        fail_msg("%s: the mutated pod does not parse: %s", name, err);
    json_object *got = tf_spec_to_json(&s);
    json_object *want = copy(tf_json_path(cur.expect, "spec", NULL));
    for (size_t i = 0; i < sizeof(not_after_admission) / sizeof(not_after_admission[0]); i++)
        json_object_object_del(want, not_after_admission[i]);
    json_object *pool = tf_json_path(want, "poolName", NULL);
    if (!pool) /* tfctl leaves it to the controller: the default pool here */
        json_object_object_del(want, "poolName");
    subset(want, got, "spec", name);
    /* Migrated containers lost their native GPU limits (the webhook removes them). */
    json_object *mig = tf_json_path(cur.expect, "spec", "migratedContainers", NULL);
    for (size_t i = 0; mig && i < json_object_array_length(mig); i++) {
        const char *cname = json_object_get_string(json_object_array_get_idx(mig, i));
        json_object *cs = tf_json_path(mutated, "spec", "containers", NULL);
        for (size_t j = 0; j < json_object_array_length(cs); j++) {
            json_object *c = json_object_array_get_idx(cs, j);
            if (strcmp(tf_json_str(c, "name", NULL), cname) != 0)
                continue;
            json_object *lim = tf_json_path(c, "resources", "limits", NULL);
            json_object_object_foreach(lim, k, v)
            {
                (void)v;
                if (strstr(k, "nvidia.com/") || strstr(k, "amd.com/"))
                    fail_msg("%s: container %s keeps its native limit %s", name, cname, k);
            }
        }
    }
    json_object *gang = tf_json_path(cur.expect, "spec", "gang", NULL);
    if (gang) {
        char buf[32];
        const char *keys[2][2] = {{"desiredMembers", TF_ANN_GANG_DESIRED_MEMBERS},
                                  {"requiredMembers", TF_ANN_GANG_REQUIRED_MEMBERS}};
        for (int i = 0; i < 2; i++) {
            snprintf(buf, sizeof(buf), "%d",
                     json_object_get_int(tf_json_path(gang, keys[i][0], NULL)));
            const char *a = tf_json_str(mutated, "metadata", "annotations", keys[i][1], NULL);
            if (!a || strcmp(a, buf) != 0)
                fail_msg("%s: %s is %s, want %s", name, keys[i][1], a ? a : "(none)", buf);
        }
        json_object *g2 = tf_json_path(got, "gang", NULL);
        json_object *w2 = copy(gang);
        json_object_object_del(w2, "desiredMembers");
        json_object_object_del(w2, "requiredMembers");
        subset(w2, g2, "spec.gang", name);
        json_object_put(w2);
    }
    json_object_put(want);
    json_object_put(got);
    tf_spec_free(&s);
    json_object_put(mutated);
done:
    json_object_put(answer);
    json_object_put(pod);
    unload();
}

static void every_fixture_is_admitted_or_denied_as_upstream_through_the_webhook(void **state)
{
    struct tf_webhook_config cfg;
    assert_int_equal(tf_webhook_config_init(&cfg), 0);
    struct tf_webhook_env env = {
        env_profile, env_namespace, env_pool, env_owner,      env_count,       env_ensure,
        NULL,        NULL,          NULL,     env_list_pools, env_list_quotas, env_list_providers,
        NULL};
    struct tf_webhook wh;
    assert_int_equal(tf_webhook_init(&wh, &cfg, &env), 0);
    DIR *d = opendir(src_path("tests/conformance/pods"));
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml")) {
            check(e->d_name, &wh);
            n++;
        }
    }
    closedir(d);
    assert_true(n >= 20);
    tf_webhook_free(&wh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_fixture_is_admitted_or_denied_as_upstream_through_the_webhook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
