/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers for the hypervisor integration tests (see hvtest.h).
 */
#include "hvtest.h"

#include "common/dynbuf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *need_env(const char *k)
{
    const char *v = getenv(k);
    if (!v || !*v)
        fail_msg("%s is not set (run through meson test)", k);
    return v;
}

void hvt_set_devices(struct hvt *t, const char *devlines)
{
    char tmp[320];
    snprintf(tmp, sizeof(tmp), "%s.tmp", t->devfile);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(devlines, f);
    fclose(f);
    assert_int_equal(rename(tmp, t->devfile), 0);
}

void hvt_init(struct hvt *t, const char *devlines)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->dir, sizeof(t->dir), "/tmp/tf-hvtest-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->state, sizeof(t->state), "%s/state", t->dir);
    snprintf(t->devfile, sizeof(t->devfile), "%s/devices", t->dir);
    hvt_set_devices(t, devlines);
    setenv("TF_STATE_DIR", t->state, 1);
    setenv("TF_NVML_LIBRARY", need_env("TF_FAKE_NVML"), 1);
    setenv("TF_FAKE_NVML_FILE", t->devfile, 1);
    setenv("TF_HYPERVISOR_BIN", need_env("TF_HYPERVISOR_BIN"), 1);
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static bool read_addr(struct hvt *t)
{
    char path[400], addr[64] = "";
    snprintf(path, sizeof(path), "%s/hypervisor.addr", t->state);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(addr, sizeof(addr), f) != NULL;
    fclose(f);
    addr[strcspn(addr, "\n")] = '\0';
    if (ok)
        snprintf(t->base, sizeof(t->base), "http://%s", addr);
    return ok && addr[0];
}

static bool is_up(struct hvt *t, void *arg)
{
    if (!read_addr(t))
        return false;
    json_object *o = NULL;
    int st = hvt_http(t, "GET", "/healthz", NULL, NULL, &o);
    bool ours = st == 200 && json_object_get_int(json_object_object_get(o, "pid")) == t->pid;
    json_object_put(o);
    return ours;
}

void hvt_start(struct hvt *t, const char *const *extra)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/hypervisor-test.log", t->dir);
    const char *argv[32] = {
        need_env("TF_HYPERVISOR_BIN"), "--state-dir", t->state, "--metrics-interval", "200",
        "--discovery-interval",        "300"};
    int n = 7;
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    t->pid = pid;
    if (!hvt_wait(is_up, t, NULL, 20000))
        fail_msg("tf-hypervisor did not come up; log in %s", log);
}

void hvt_kill(struct hvt *t, int sig)
{
    if (t->pid <= 0)
        return;
    kill(t->pid, sig);
    int st;
    waitpid(t->pid, &st, 0);
    t->pid = 0;
}

void hvt_cleanup(struct hvt *t)
{
    hvt_kill(t, SIGTERM);
    /* A hypervisor started by tfctl (autostart) is not our child: stop it by its lock pid. */
    char path[400], pid[32] = "";
    snprintf(path, sizeof(path), "%s/hypervisor.lock", t->state);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(pid, sizeof(pid), f) && atoi(pid) > 0 && kill(atoi(pid), 0) == 0) {
            kill(atoi(pid), SIGTERM);
            for (int i = 0; i < 100 && kill(atoi(pid), 0) == 0; i++)
                usleep(20000);
        }
        fclose(f);
    }
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup of %s failed\n", t->dir);
}

static size_t collect(char *p, size_t size, size_t nmemb, void *arg)
{
    return tf_dynbuf_add(arg, p, size * nmemb) ? 0 : size * nmemb;
}

static int raw_http(struct hvt *t, const char *method, const char *path, const char *body,
                    const char *ctype, struct tf_dynbuf *b)
{
    char url[300], hdr[128];
    snprintf(url, sizeof(url), "%s%s", t->base, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype ? ctype : "application/json");
    h = curl_slist_append(h, hdr);
    char own[200] = "";
    if (t->auth[0]) {
        h = curl_slist_append(h, t->auth);
    } else if (!t->no_auth) { /* the local hypervisor's own token, as tfctl reads it */
        char tp[400], tok[160];
        snprintf(tp, sizeof(tp), "%s/api-token", t->state);
        FILE *f = fopen(tp, "r");
        if (f && fgets(tok, sizeof(tok), f)) {
            tok[strcspn(tok, "\r\n")] = '\0';
            snprintf(own, sizeof(own), "Authorization: Bearer %s", tok);
            h = curl_slist_append(h, own);
        }
        if (f)
            fclose(f);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    long st = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return (int)st;
}

int hvt_http(struct hvt *t, const char *method, const char *path, const char *body,
             const char *content_type, json_object **out)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 16 << 20);
    int st = raw_http(t, method, path, body, content_type, &b);
    *out = json_tokener_parse(tf_dynbuf_str(&b));
    tf_dynbuf_free(&b);
    return st;
}

char *hvt_get_text(struct hvt *t, const char *path)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 16 << 20);
    assert_int_equal(raw_http(t, "GET", path, NULL, NULL, &b), 200);
    char *s = strdup(tf_dynbuf_str(&b));
    tf_dynbuf_free(&b);
    return s;
}

static void exec_tfctl(const char *const *argv)
{
    const char *args[64] = {need_env("TF_TFCTL_BIN")};
    int n = 1;
    for (int i = 0; argv[i] && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    execv(args[0], (char *const *)args);
    _exit(127);
}

pid_t hvt_tfctl_bg(struct hvt *t, const char *log, const char *const *argv)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        exec_tfctl(argv);
    }
    return pid;
}

int hvt_tfctl(struct hvt *t, char **out, const char *const *argv)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/tfctl-%d.out", t->dir, (int)getpid());
    pid_t pid = hvt_tfctl_bg(t, log, argv);
    int st;
    waitpid(pid, &st, 0);
    if (out) {
        FILE *f = fopen(log, "r");
        struct tf_dynbuf b;
        tf_dynbuf_init(&b, 16 << 20);
        char buf[4096];
        size_t n;
        while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
            tf_dynbuf_add(&b, buf, n);
        if (f)
            fclose(f);
        *out = strdup(tf_dynbuf_str(&b));
        tf_dynbuf_free(&b);
    }
    unlink(log);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool hvt_wait(bool (*fn)(struct hvt *, void *), struct hvt *t, void *arg, int ms)
{
    for (int waited = 0; waited <= ms; waited += 20) {
        if (fn(t, arg))
            return true;
        usleep(20000);
    }
    return false;
}

int hvt_count_workloads(struct hvt *t)
{
    json_object *o = NULL;
    int st = hvt_http(t, "GET", "/api/v1/workloads", NULL, NULL, &o);
    int n = st == 200 ? (int)json_object_array_length(o) : -1;
    json_object_put(o);
    return n;
}
