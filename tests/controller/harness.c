/* SPDX-License-Identifier: Apache-2.0
 *
 * Test harness for the controller suites (see harness.h).
 */
#include "harness.h"

#include "common/yamljson.h"

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *src_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("TF_SRCDIR");
    snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
    return buf;
}

int fake_start_script(struct fake_api *f, const char *script_rel, const char *extra_args)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/tf-fakeapi-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char portfile[300], script[4096];
    snprintf(portfile, sizeof(portfile), "%s/port", f->dir);
    snprintf(script, sizeof(script), "%s", src_path(script_rel));
    f->pid = fork();
    if (f->pid == 0) {
        char cmd[8192];
        const char *py = getenv("TF_PYTHON");
        snprintf(cmd, sizeof(cmd), "exec '%s' '%s' --port 0 --port-file '%s' %s >/dev/null",
                 py ? py : "python3", script, portfile, extra_args ? extra_args : "");
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && !f->port; i++) {
        FILE *pf = fopen(portfile, "r");
        if (pf) {
            if (fscanf(pf, "%d", &f->port) != 1)
                f->port = 0;
            fclose(pf);
        }
        if (!f->port) {
            int st;
            if (waitpid(f->pid, &st, WNOHANG) == f->pid) {
                fprintf(stderr, "fake API server exited (python3 missing?)\n");
                f->pid = 0;
                return -1;
            }
            usleep(25000);
        }
    }
    if (!f->port) {
        fake_stop(f);
        return -1;
    }
    snprintf(f->server, sizeof(f->server), "http://127.0.0.1:%d", f->port);
    return 0;
}

int fake_start(struct fake_api *f, const char *extra_args)
{
    if (fake_start_script(f, "tests/controller/fakeapi.py", extra_args))
        return -1;
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    cfg.server = f->server;
    cfg.backoff_base_ms = 5;
    cfg.backoff_max_ms = 50;
    cfg.max_attempts = 4;
    cfg.timeout_ms = 10000;
    f->client = tf_k8s_client_new(&cfg);
    return f->client ? 0 : -1;
}

void fake_stop(struct fake_api *f)
{
    tf_k8s_client_destroy(f->client);
    f->client = NULL;
    if (f->pid > 0) {
        kill(f->pid, SIGTERM);
        waitpid(f->pid, NULL, 0);
        f->pid = 0;
    }
    if (f->dir[0]) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", f->dir);
        f->dir[0] = '\0';
    }
}

void fake_control(struct fake_api *f, const char *what, const char *body)
{
    char path[256], err[256];
    snprintf(path, sizeof(path), "/_fake/%s", what);
    if (tf_k8s_request(f->client, "POST", path, "application/json", body ? body : "{}", NULL, NULL,
                       err, sizeof(err)) != 0) {
        fprintf(stderr, "fake control %s failed: %s\n", what, err);
        abort();
    }
}

int fake_count_requests(struct fake_api *f, const char *needle)
{
    json_object *out = NULL;
    char err[256];
    if (tf_k8s_request(f->client, "GET", "/_fake/requests", NULL, NULL, &out, NULL, err,
                       sizeof(err)) != 0)
        abort();
    json_object *arr = NULL;
    json_object_object_get_ex(out, "requests", &arr);
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        if (strstr(json_object_get_string(json_object_array_get_idx(arr, i)), needle))
            n++;
    json_object_put(out);
    return n;
}

json_object *jparse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    if (!o) {
        fprintf(stderr, "bad test JSON: %s\n", text);
        abort();
    }
    return o;
}

json_object *py_apply_patch(json_object *doc, json_object *ops)
{
    char dir[] = "/tmp/tf-jsonpatch-XXXXXX";
    if (!mkdtemp(dir))
        return NULL;
    char a[128], b[128], out[128], cmd[1024];
    snprintf(a, sizeof(a), "%s/doc.json", dir);
    snprintf(b, sizeof(b), "%s/ops.json", dir);
    snprintf(out, sizeof(out), "%s/out.json", dir);
    json_object_to_file_ext(a, doc, JSON_C_TO_STRING_PLAIN);
    json_object_to_file_ext(b, ops, JSON_C_TO_STRING_PLAIN);
    const char *py = getenv("TF_PYTHON");
    snprintf(cmd, sizeof(cmd),
             "'%s' -c 'import json,sys,jsonpatch; d=json.load(open(sys.argv[1])); "
             "p=json.load(open(sys.argv[2])); json.dump(jsonpatch.apply_patch(d,p),"
             "open(sys.argv[3],\"w\"))' %s %s %s",
             py ? py : "python3", a, b, out);
    json_object *res = NULL;
    if (system(cmd) == 0)
        res = json_object_from_file(out);
    unlink(a);
    unlink(b);
    unlink(out);
    rmdir(dir);
    return res;
}

char *admission_review(json_object *pod, const char *ns, bool dry_run)
{
    json_object *rev = jparse("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                              "\"AdmissionReview\",\"request\":{\"uid\":\"uid-1\",\"kind\":{"
                              "\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{"
                              "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
                              "\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"rs\"}}}");
    json_object *r = tf_json_path(rev, "request", NULL);
    json_object_object_add(r, "namespace", json_object_new_string(ns));
    json_object_object_add(r, "object", json_object_get(pod));
    json_object_object_add(r, "dryRun", json_object_new_boolean(dry_run));
    char *s = strdup(json_object_to_json_string_ext(rev, JSON_C_TO_STRING_PLAIN));
    json_object_put(rev);
    return s;
}
