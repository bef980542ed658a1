/* SPDX-License-Identifier: Apache-2.0
 *
 * tfctl's client of the local hypervisor (see hvclient.h).
 */
#include "cli/hvclient.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "hypervisor/paths.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static size_t collect(char *p, size_t size, size_t nmemb, void *arg)
{
    return tf_dynbuf_add(arg, p, size * nmemb) ? 0 : size * nmemb;
}

static int request(const char *url, const char *method, const char *body, struct tf_dynbuf *out,
                   long timeout_ms, const char *auth, char *err, size_t errlen)
{
    CURL *c = curl_easy_init();
    if (!c)
        return 0;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth && *auth)
        h = curl_slist_append(h, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    long status = 0;
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    else
        tf_errf(err, errlen, "%s: %s", url, curl_easy_strerror(cc));
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return (int)status;
}

static void curl_once(void);

static bool read_addr(struct tf_cli_hv *hv)
{
    char path[600], addr[128] = "";
    snprintf(path, sizeof(path), "%s/hypervisor.addr", hv->state_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(addr, sizeof(addr), f) != NULL;
    fclose(f);
    addr[strcspn(addr, "\r\n")] = '\0';
    if (!ok || !addr[0])
        return false;
    snprintf(hv->base, sizeof(hv->base), "http://%s", addr);
    return true;
}

static bool healthy(struct tf_cli_hv *hv)
{
    char url[200];
    snprintf(url, sizeof(url), "%s/healthz", hv->base);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 16);
    int st = request(url, "GET", NULL, &b, 2000, hv->auth, NULL, 0);
    tf_dynbuf_free(&b);
    return st == 200;
}

static void find_binary(char *out, size_t len)
{
    const char *e = getenv("TF_HYPERVISOR_BIN");
    if (e && *e) {
        snprintf(out, len, "%s", e);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(out, len, "%s/tf-hypervisor", exe) < (int)len && access(out, X_OK) == 0)
                return;
            if (snprintf(out, len, "%s/../hypervisor/tf-hypervisor", exe) < (int)len &&
                access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, len, "tf-hypervisor");
}

static int spawn(struct tf_cli_hv *hv, char *err, size_t errlen)
{
    char bin[PATH_MAX], log[600];
    find_binary(bin, sizeof(bin));
    if (tf_hv_mkdirs(hv->state_dir, 0755, err, errlen))
        return TF_EIO;
    snprintf(log, sizeof(log), "%s/hypervisor.log", hv->state_dir);
    pid_t pid = fork();
    if (pid < 0) {
        tf_errf(err, errlen, "fork: %s", strerror(errno));
        return TF_EIO;
    }
    if (pid == 0) {
        /* Detach twice so the daemon is not our child (no zombie, survives tfctl). */
        setsid();
        if (fork() != 0)
            _exit(0);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (nul >= 0)
            dup2(nul, 0);
        execlp(bin, bin, "--state-dir", hv->state_dir, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return 0;
}

/* The local hypervisor's API token (paths.h): readable by its own user only. */
static int load_token(struct tf_cli_hv *hv, char *err, size_t errlen)
{
    char path[600], tok[TF_HV_TOKEN_MAX + 1], terr[700];
    snprintf(path, sizeof(path), "%s/" TF_HV_API_TOKEN_FILE, hv->state_dir);
    int rc = tf_hv_token_read(path, tok, sizeof(tok), terr, sizeof(terr));
    if (rc == TF_ENOENT) /* (a hypervisor given its own --api-token-file) */
        return 0;
    if (rc) {
        tf_errf(err, errlen,
                "cannot use the hypervisor of %s: %s (its API takes the token only its user can "
                "read)",
                hv->state_dir, terr);
        return TF_EPERM;
    }
    snprintf(hv->auth, sizeof(hv->auth), "Authorization: Bearer %s", tok);
    return 0;
}

int tf_cli_hv_connect(struct tf_cli_hv *hv, bool autostart, char *err, size_t errlen)
{
    curl_once();
    memset(hv, 0, sizeof(*hv));
    if (tf_hv_state_dir(hv->state_dir, sizeof(hv->state_dir))) {
        tf_errf(err, errlen, "cannot determine the state directory (set TF_STATE_DIR)");
        return TF_ENOENT;
    }
    if (read_addr(hv) && healthy(hv))
        return load_token(hv, err, errlen);
    if (!autostart) {
        tf_errf(err, errlen, "no hypervisor is running for %s (tfctl run starts one)",
                hv->state_dir);
        return TF_ENOENT;
    }
    int rc = spawn(hv, err, errlen);
    if (rc)
        return rc;
    for (int i = 0; i < 300; i++) { /* up to 15 s (slow under sanitizers) */
        if (read_addr(hv) && healthy(hv))
            return load_token(hv, err, errlen);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    tf_errf(err, errlen, "the hypervisor did not come up; see %s/hypervisor.log", hv->state_dir);
    return TF_ETIMEDOUT;
}

int tf_cli_hv_call(struct tf_cli_hv *hv, const char *method, const char *path, json_object *body,
                   json_object **out, char *err, size_t errlen)
{
    *out = NULL;
    char url[400];
    snprintf(url, sizeof(url), "%s%s", hv->base, path);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 16 << 20);
    int st = request(url, method, body ? json_object_to_json_string(body) : NULL, &b, 30000,
                     hv->auth, err, errlen);
    if (st)
        *out = json_tokener_parse(tf_dynbuf_str(&b));
    tf_dynbuf_free(&b);
    return st;
}

int tf_cli_hv_get_text(struct tf_cli_hv *hv, const char *path, char **out, char *err, size_t errlen)
{
    char url[400];
    snprintf(url, sizeof(url), "%s%s", hv->base, path);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 16 << 20);
    int st = request(url, "GET", NULL, &b, 30000, hv->auth, err, errlen);
    *out = strdup(tf_dynbuf_str(&b));
    tf_dynbuf_free(&b);
    return st;
}

static void curl_once(void)
{
    static int done; /* tfctl is single-threaded when it connects */
    if (!done) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        done = 1;
    }
}

int tf_cli_hv_remote(struct tf_cli_hv *hv, const char *hostport, char *err, size_t errlen)
{
    curl_once();
    memset(hv, 0, sizeof(*hv));
    if (!hostport || !strchr(hostport, ':') || strlen(hostport) > 120) {
        tf_errf(err, errlen, "--remote: \"%s\" is not HOST:PORT", hostport ? hostport : "");
        return TF_EINVAL;
    }
    snprintf(hv->base, sizeof(hv->base), "http://%s", hostport);
    char tok[TF_HV_TOKEN_MAX + 1] = "", terr[700];
    const char *t = getenv("TF_REMOTE_API_TOKEN");
    const char *f = getenv("TF_REMOTE_API_TOKEN_FILE");
    if (t && *t) {
        if (!tf_strlcpy(tok, t, sizeof(tok))) {
            tf_errf(err, errlen, "TF_REMOTE_API_TOKEN: longer than %d characters", TF_HV_TOKEN_MAX);
            return TF_EINVAL;
        }
    } else if (f && *f && tf_hv_token_read(f, tok, sizeof(tok), terr, sizeof(terr))) {
        tf_errf(err, errlen, "TF_REMOTE_API_TOKEN_FILE %s", terr);
        return TF_EINVAL;
    }
    if (tok[0])
        snprintf(hv->auth, sizeof(hv->auth), "Authorization: Bearer %s", tok);
    if (!healthy(hv)) {
        tf_errf(err, errlen, "no hypervisor answers at %s", hv->base);
        return TF_EIO;
    }
    return 0;
}

int tf_cli_client_dir(char *out, size_t len)
{
    const char *e = getenv("TF_CLIENT_DIR");
    char probe[PATH_MAX + 32];
    if (e && *e) {
        snprintf(probe, sizeof(probe), "%s/libcuda.so.1", e);
        if (access(probe, R_OK) == 0 && tf_strlcpy(out, e, len))
            return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return TF_ENOENT;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return TF_ENOENT;
    *slash = '\0';
    static const char *const rel[] = {"/../remote/client", "/../lib/tensor-fusion/client"};
    for (size_t i = 0; i < 2; i++) {
        int w = snprintf(probe, sizeof(probe), "%s%s/libcuda.so.1", exe, rel[i]);
        if (w > 0 && (size_t)w < sizeof(probe) && access(probe, R_OK) == 0) {
            w = snprintf(out, len, "%s%s", exe, rel[i]);
            if (w > 0 && (size_t)w < len)
                return 0;
        }
    }
    return TF_ENOENT;
}
