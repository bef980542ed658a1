/* SPDX-License-Identifier: Apache-2.0
 *
 * Hard isolation: spawning and stopping a workload's tf-worker (see worker.h).
 */
#include "hypervisor/worker.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/paths.h"
#include "hypervisor/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* OUT = DIR SUFFIX; true when it fits and PROBE (appended to it) passes access(MODE). */
static bool try_path(char *out, size_t len, const char *dir, const char *suffix, const char *probe,
                     int mode)
{
    int n = snprintf(out, len, "%s%s", dir, suffix);
    if (n < 0 || (size_t)n >= len)
        return false;
    char full[1200];
    n = snprintf(full, sizeof(full), "%s%s", out, probe);
    return n > 0 && (size_t)n < sizeof(full) && access(full, mode) == 0;
}

int tf_hv_worker_find(const struct tf_hv *hv, char *worker, char *client_dir, char *err,
                      size_t errlen)
{
    char w[512] = "", c[512] = "";
    const char *e = getenv("TF_WORKER_BIN");
    const char *dir = hv->cfg.lib_dir;
    bool have_w = (e && *e && try_path(w, sizeof(w), e, "", "", X_OK)) ||
                  try_path(w, sizeof(w), dir, "/tf-worker", "", X_OK) ||
                  try_path(w, sizeof(w), dir, "/../remote/worker/tf-worker", "", X_OK);
    e = getenv("TF_CLIENT_DIR");
    bool have_c =
        (e && *e && try_path(c, sizeof(c), e, "", "/libcuda.so.1", R_OK)) ||
        try_path(c, sizeof(c), dir, "/../lib/tensor-fusion/client", "/libcuda.so.1", R_OK) ||
        try_path(c, sizeof(c), dir, "/../remote/client", "/libcuda.so.1", R_OK);
    if (!have_w || !have_c) {
        tf_errf(err, errlen,
                "isolation hard needs %s%s%s, which %s not in this build (looked next to the "
                "hypervisor in %s and in the build tree)",
                have_w ? "" : "tf-worker", !have_w && !have_c ? " and " : "",
                have_c ? "" : "the remote client libcuda.so.1", !have_w && !have_c ? "are" : "is",
                dir);
        return TF_ENOTSUP;
    }
    if (worker)
        tf_strlcpy(worker, w, 512);
    if (client_dir)
        tf_strlcpy(client_dir, c, 512);
    return 0;
}

static void worker_dir(const struct tf_hv *hv, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/workers/%s", hv->cfg.state_dir, name);
}

static int write_token(const char *path, char *err, size_t errlen)
{
    unsigned char raw[32];
    int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rfd < 0 || read(rfd, raw, sizeof(raw)) != (ssize_t)sizeof(raw)) {
        if (rfd >= 0)
            close(rfd);
        tf_errf(err, errlen, "cannot read /dev/urandom for the worker token");
        return TF_EIO;
    }
    close(rfd);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, hex, 64) != 64) {
        if (fd >= 0)
            close(fd);
        tf_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return TF_EIO;
    }
    close(fd);
    return 0;
}

/* Device ordinal (NVML index) of UUID, or -1. */
static int ordinal_of(struct tf_hv *hv, const char *uuid)
{
    int ord = -1;
    pthread_mutex_lock(&hv->mu);
    for (int i = 0; i < hv->ndev; i++)
        if (!strcmp(hv->uuids[i], uuid))
            ord = i;
    pthread_mutex_unlock(&hv->mu);
    return ord;
}

int tf_hv_worker_start(struct tf_hv *hv, const struct tf_hv_workload *w, json_object *env,
                       char *err, size_t errlen)
{
    char bin[512], client[512], dir[600], token[700], ready[700], log[700];
    int rc = tf_hv_worker_find(hv, bin, client, err, errlen);
    if (rc)
        return rc;
    worker_dir(hv, w->req.name, dir, sizeof(dir));
    if ((rc = tf_hv_mkdirs(dir, 0700, err, errlen)))
        return rc;
    snprintf(token, sizeof(token), "%s/token", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    snprintf(log, sizeof(log), "%s/worker.log", dir);
    unlink(ready);
    if ((rc = write_token(token, err, errlen)))
        return rc;
    /* One limit for all its GPUs (they were placed with the same per-GPU request). */
    char devices[TF_HV_MAX_GPUS * 4] = "", vram[32], pct[32];
    for (int i = 0; i < w->nalloc; i++) {
        int ord = ordinal_of(hv, w->alloc[i].uuid);
        if (ord < 0) {
            tf_errf(err, errlen, "GPU %s is not present", w->alloc[i].uuid);
            return TF_ENOENT;
        }
        size_t len = strlen(devices);
        snprintf(devices + len, sizeof(devices) - len, "%s%d", i ? "," : "", ord);
    }
    snprintf(vram, sizeof(vram), "%lld", (long long)w->alloc[0].vram_limit);
    snprintf(pct, sizeof(pct), "%d.%02d", w->alloc[0].compute_limit_bp / 100,
             w->alloc[0].compute_limit_bp % 100);
    int pfd[2];
    if (pipe(pfd) != 0) {
        tf_errf(err, errlen, "pipe: %s", strerror(errno));
        return TF_EIO;
    }
    pid_t mid = fork();
    if (mid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        tf_errf(err, errlen, "fork: %s", strerror(errno));
        return TF_EIO;
    }
    if (mid == 0) {
        close(pfd[0]);
        setsid();
        pid_t gc = fork();
        if (gc != 0) {
            int32_t v = (int32_t)gc;
            ssize_t n = write(pfd[1], &v, sizeof(v));
            _exit(n == (ssize_t)sizeof(v) ? 0 : 1);
        }
        close(pfd[1]);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int nul = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (nul >= 0)
            dup2(nul, 0);
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
        unsetenv("CUDA_VISIBLE_DEVICES");
        char listen[96];
        snprintf(listen, sizeof(listen), "tcp://%s:0", hv->cfg.worker_host);
        /* One worker per hard workload: its clients are one tenant (pinned staging is safe). */
        execl(bin, "tf-worker", "--listen", listen, "--token-file", token, "--vram-limit", vram,
              "--compute-percent", pct, "--device", devices, "--ready-file", ready,
              "--pinned-staging", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    int32_t wpid = 0;
    ssize_t got = read(pfd[0], &wpid, sizeof(wpid));
    close(pfd[0]);
    int st;
    waitpid(mid, &st, 0);
    if (got != (ssize_t)sizeof(wpid) || wpid <= 0) {
        tf_errf(err, errlen, "could not start %s", bin);
        return TF_EIO;
    }
    char addr[128] = "";
    for (int i = 0; i < 200 && !addr[0]; i++) { /* up to 10 s */
        FILE *f = fopen(ready, "r");
        if (f) {
            if (!fgets(addr, sizeof(addr), f))
                addr[0] = '\0';
            fclose(f);
            addr[strcspn(addr, "\r\n")] = '\0';
        }
        if (!addr[0]) {
            if (!tf_hv_proc_alive(wpid, -1))
                break;
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (!addr[0]) {
        kill(wpid, SIGKILL);
        tf_errf(err, errlen, "tf-worker did not come up; see %s", log);
        return TF_EIO;
    }
    if ((rc = tf_hv_state_set_runtime(hv->state, w->req.name, w->shm_path, (int)wpid, addr, err,
                                      errlen))) {
        kill(wpid, SIGTERM);
        return rc;
    }
    json_object_object_add(env, "TF_REMOTE", json_object_new_string(addr));
    if (w->req.lease) {
        /* A client on another machine cannot read our token file: hand it the token. */
        char hex[80] = "";
        FILE *tf = fopen(token, "r");
        if (tf) {
            if (!fgets(hex, sizeof(hex), tf))
                hex[0] = '\0';
            fclose(tf);
        }
        json_object_object_add(env, "TF_TOKEN", json_object_new_string(hex));
    } else {
        json_object_object_add(env, "TF_TOKEN_FILE", json_object_new_string(token));
    }
    json_object_object_add(env, "LD_LIBRARY_PATH", json_object_new_string(client));
    tf_log(TF_LOG_INFO, "worker", "workload %s: tf-worker pid %d at %s devices=%s", w->req.name,
           (int)wpid, addr, devices);
    return 0;
}

/* True when PID runs the tf-worker binary (a reused PID is left alone). */
static bool is_worker(int pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *base = strrchr(buf, '/');
    return strcmp(base ? base + 1 : buf, "tf-worker") == 0;
}

void tf_hv_worker_stop(struct tf_hv *hv, const struct tf_hv_workload *w)
{
    if (w->worker_pid > 0 && is_worker(w->worker_pid)) {
        kill(w->worker_pid, SIGTERM);
        for (int i = 0; i < 100 && tf_hv_proc_alive(w->worker_pid, -1); i++) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (tf_hv_proc_alive(w->worker_pid, -1))
            kill(w->worker_pid, SIGKILL);
    }
    char dir[600], p[700];
    worker_dir(hv, w->req.name, dir, sizeof(dir));
    static const char *const files[] = {"token", "ready", "worker.log"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}
