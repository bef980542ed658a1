/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl run [options] -- CMD ARGS...`: local mode. Starts the hypervisor if none runs,
 * allocates a vGPU for CMD, runs CMD with the workload's environment (its GPUs, and the limiter
 * or remote client for the isolation mode), streams its output (CMD inherits the terminal),
 * returns its exit status and releases the allocation when it exits. If tfctl itself dies,
 * the hypervisor releases the allocation once CMD and tfctl are both gone (PID liveness).
 */
#include "cli/cmds.h"

#include "cli/hvclient.h"
#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "hypervisor/workload.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tfctl run [--tflops-limit T | --compute-percent P] [--tflops-request T]\n"
            "                 [--compute-percent-request P] [--vram-limit Q] [--vram-request Q]\n"
            "                 [--isolation soft|shared|hard|remote] [--remote HOST:PORT]\n"
            "                 [--gpu-count N] [--gpu-model M] [--qos low|medium|high|critical]\n"
            "                 [--name NAME] [--namespace NS] [-f pod.yaml] -- CMD [ARGS...]\n"
            "Limits are per GPU. TFLOPS and VRAM take Kubernetes quantities (\"10\", \"0.5\",\n"
            "\"4Gi\", \"512Mi\"); a missing request equals the limit.\n");
}

/* Reads the first workload of manifest PATH (a Pod, Deployment, ... with the seed 001
 * annotations) through the core workload model into R. Later flags override it. Returns 0 or 2
 * (message printed). */
static int from_manifest(struct tf_hv_request *r, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tfctl run: -f %s: %s\n", path, strerror(errno));
        return 2;
    }
    char *buf = malloc(4 << 20);
    size_t n = buf ? fread(buf, 1, (4 << 20) - 1, f) : 0;
    fclose(f);
    if (!buf)
        return 2;
    json_object *docs = NULL;
    char err[512] = "";
    int code = 2;
    struct tf_spec spec;
    tf_spec_init(&spec);
    if (tf_manifest_parse(buf, n, &docs, err, sizeof(err))) {
        fprintf(stderr, "tfctl run: -f %s: %s\n", path, err);
        goto out;
    }
    if (json_object_array_length(docs) == 0) {
        fprintf(stderr, "tfctl run: -f %s: no document\n", path);
        goto out;
    }
    if (tf_spec_parse_object(json_object_array_get_idx(docs, 0), NULL, NULL, &spec, err,
                             sizeof(err))) {
        fprintf(stderr, "tfctl run: -f %s: %s\n", path, err);
        goto out;
    }
    for (size_t i = 0; i < spec.nwarnings; i++)
        fprintf(stderr, "tfctl run: -f %s: warning: %s\n", path, spec.warnings[i]);
    if (!spec.enabled)
        fprintf(stderr,
                "tfctl run: -f %s: warning: the manifest does not set the label "
                "tensor-fusion.ai/enabled: \"true\"; using its annotations anyway\n",
                path);
    if (spec.name && tf_hv_valid_name(spec.name))
        tf_strlcpy(r->name, spec.name, sizeof(r->name));
    if (spec.ns)
        tf_strlcpy(r->ns, spec.ns, sizeof(r->ns));
    switch (spec.isolation) {
    case TF_ISOLATION_SHARED:
        r->isolation = TF_HV_SHARED;
        break;
    case TF_ISOLATION_HARD:
        r->isolation = TF_HV_HARD;
        break;
    case TF_ISOLATION_PARTITIONED:
        fprintf(stderr,
                "tfctl run: -f %s: isolation partitioned is not available in local "
                "mode\n",
                path);
        goto out;
    default:
        r->isolation = TF_HV_SOFT;
    }
    if (spec.whole_gpu)
        r->isolation = TF_HV_SHARED;
    if (spec.enabled && !spec.is_local_gpu && !r->remote[0])
        r->isolation = TF_HV_REMOTE; /* needs --remote HOST:PORT */
    if (spec.qos != TF_QOS_UNSET && tf_qos_name(spec.qos))
        tf_strlcpy(r->qos, tf_qos_name(spec.qos), sizeof(r->qos));
    if (spec.gpu_count)
        r->gpu_count = spec.gpu_count;
    if (spec.gpu_model)
        tf_strlcpy(r->gpu_model, spec.gpu_model, sizeof(r->gpu_model));
    if (!spec.whole_gpu) {
        if (spec.requests.tflops_set)
            r->tflops_request = spec.requests.tflops_milli;
        if (spec.limits.tflops_set)
            r->tflops_limit = spec.limits.tflops_milli;
        if (spec.requests.percent_set)
            r->percent_request = spec.requests.percent_bp;
        if (spec.limits.percent_set)
            r->percent_limit = spec.limits.percent_bp;
        if (spec.requests.vram_set)
            r->vram_request = spec.requests.vram_bytes;
        if (spec.limits.vram_set)
            r->vram_limit = spec.limits.vram_bytes;
    }
    code = 0;
out:
    tf_spec_free(&spec);
    json_object_put(docs);
    free(buf);
    return code;
}

/* Parses one option value into R; returns 0 or 2 (message printed). */
static int set_opt(struct tf_hv_request *r, const char *opt, const char *v)
{
    char err[256] = "";
    int rc = 0;
    int32_t bp;
    if (!strcmp(opt, "--tflops-limit")) {
        rc = tf_quantity_milli(v, &r->tflops_limit, opt, err, sizeof(err));
    } else if (!strcmp(opt, "--tflops-request")) {
        rc = tf_quantity_milli(v, &r->tflops_request, opt, err, sizeof(err));
    } else if (!strcmp(opt, "--compute-percent") || !strcmp(opt, "--compute-percent-limit")) {
        rc = tf_percent_parse(v, &bp, opt, err, sizeof(err));
        r->percent_limit = bp;
    } else if (!strcmp(opt, "--compute-percent-request")) {
        rc = tf_percent_parse(v, &bp, opt, err, sizeof(err));
        r->percent_request = bp;
    } else if (!strcmp(opt, "--vram-limit")) {
        rc = tf_quantity_bytes(v, &r->vram_limit, opt, err, sizeof(err));
    } else if (!strcmp(opt, "--vram-request")) {
        rc = tf_quantity_bytes(v, &r->vram_request, opt, err, sizeof(err));
    } else if (!strcmp(opt, "--isolation")) {
        if (tf_hv_isolation_parse(v, &r->isolation)) {
            snprintf(err, sizeof(err), "--isolation: \"%s\" is not soft, shared, hard or remote",
                     v);
            rc = TF_EINVAL;
        }
    } else if (!strcmp(opt, "--gpu-count")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 128) {
            snprintf(err, sizeof(err), "--gpu-count: \"%s\" is not 1..128", v);
            rc = TF_EINVAL;
        }
        r->gpu_count = (int)n;
    } else if (!strcmp(opt, "--gpu-model")) {
        rc = tf_strlcpy(r->gpu_model, v, sizeof(r->gpu_model)) ? 0 : TF_ERANGE;
    } else if (!strcmp(opt, "--qos")) {
        rc = tf_strlcpy(r->qos, v, sizeof(r->qos)) ? 0 : TF_ERANGE;
    } else if (!strcmp(opt, "--name")) {
        rc = tf_strlcpy(r->name, v, sizeof(r->name)) ? 0 : TF_ERANGE;
    } else if (!strcmp(opt, "--namespace")) {
        rc = tf_strlcpy(r->ns, v, sizeof(r->ns)) ? 0 : TF_ERANGE;
    } else if (!strcmp(opt, "--remote")) {
        rc = tf_strlcpy(r->remote, v, sizeof(r->remote)) ? 0 : TF_ERANGE;
        r->isolation = TF_HV_REMOTE;
    } else {
        fprintf(stderr, "tfctl run: unknown option %s\n", opt);
        usage(stderr);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "tfctl run: %s\n", err[0] ? err : "value too long");
        return 2;
    }
    return 0;
}

static void print_allocation(json_object *w)
{
    json_object *allocs = json_object_object_get(w, "allocations");
    for (size_t i = 0; i < json_object_array_length(allocs); i++) {
        json_object *a = json_object_array_get_idx(allocs, i);
        fprintf(stderr,
                "tfctl run: workload %s on GPU %s: compute limit %s%% (%s TFLOPS), VRAM limit "
                "%s, isolation %s\n",
                json_object_get_string(json_object_object_get(w, "name")),
                json_object_get_string(json_object_object_get(a, "uuid")),
                json_object_get_string(json_object_object_get(a, "computeLimitPercent")),
                json_object_get_string(json_object_object_get(a, "tflopsLimit")),
                json_object_get_string(json_object_object_get(a, "vramLimit")),
                json_object_get_string(json_object_object_get(w, "isolation")));
    }
}

int tf_cmd_run(int argc, char **argv)
{
    struct tf_hv_request r;
    memset(&r, 0, sizeof(r));
    int i = 1;
    bool quiet = false;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
            quiet = true;
            continue;
        }
        if (argv[i][0] != '-')
            break; /* CMD without "--" */
        if (i + 1 >= argc) {
            fprintf(stderr, "tfctl run: %s needs a value\n", argv[i]);
            return 2;
        }
        int rc = !strcmp(argv[i], "-f") ? from_manifest(&r, argv[i + 1])
                                        : set_opt(&r, argv[i], argv[i + 1]);
        if (rc)
            return rc;
        i++;
    }
    if (i >= argc) {
        fprintf(stderr, "tfctl run: missing the command to run (after --)\n");
        usage(stderr);
        return 2;
    }
    char **cmd = argv + i;
    if (!r.name[0])
        snprintf(r.name, sizeof(r.name), "run-%d", (int)getpid());
    char err[512] = "";
    r.pid = (int)getpid();
    if (tf_hv_request_normalize(&r, err, sizeof(err))) {
        fprintf(stderr, "tfctl run: %s\n", err);
        return 2;
    }
    struct tf_cli_hv hv;
    if (tf_cli_hv_connect(&hv, true, err, sizeof(err))) {
        fprintf(stderr, "tfctl run: %s\n", err);
        return 1;
    }
    json_object *body = tf_hv_request_to_json(&r), *resp = NULL;
    int st = tf_cli_hv_call(&hv, "POST", "/api/v1/workloads", body, &resp, err, sizeof(err));
    json_object_put(body);
    if (st != 201) {
        const char *msg =
            resp ? json_object_get_string(json_object_object_get(resp, "error")) : err;
        fprintf(stderr, "tfctl run: %s\n", msg && *msg ? msg : "hypervisor error");
        json_object *reasons = resp ? json_object_object_get(resp, "reasons") : NULL;
        for (size_t k = 0; reasons && k < json_object_array_length(reasons); k++)
            fprintf(stderr, "  %s\n",
                    json_object_get_string(json_object_array_get_idx(reasons, k)));
        json_object_put(resp);
        return st == 400 ? 2 : 1;
    }
    if (!quiet)
        print_allocation(resp);
    json_object *env = json_object_object_get(resp, "env");

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    pid_t pid = fork();
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        json_object_object_foreach(env, k, v)
        {
            /* Library paths are prefixes: the app keeps its own after ours. */
            const char *old = getenv(k);
            const char *val = json_object_get_string(v);
            if ((!strcmp(k, "LD_LIBRARY_PATH") || !strcmp(k, "LD_PRELOAD")) && old && *old) {
                size_t len = strlen(val) + strlen(old) + 2;
                char *both = malloc(len);
                if (both) {
                    snprintf(both, len, "%s%c%s", val, k[3] == 'L' ? ':' : ' ', old);
                    setenv(k, both, 1);
                    free(both);
                    continue;
                }
            }
            setenv(k, val, 1);
        }
        execvp(cmd[0], cmd);
        fprintf(stderr, "tfctl run: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    int code = 1;
    if (pid < 0) {
        fprintf(stderr, "tfctl run: fork: %s\n", strerror(errno));
    } else {
        child_pid = pid;
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/workloads/%s/processes", r.name);
        json_object *pb = json_object_new_object(), *pr = NULL;
        json_object_object_add(pb, "pid", json_object_new_int((int)pid));
        (void)tf_cli_hv_call(&hv, "POST", path, pb, &pr, err, sizeof(err));
        json_object_put(pb);
        json_object_put(pr);
        int wst;
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
            ;
        code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    }
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/workloads/%s", r.name);
    json_object *dr = NULL;
    int ds = tf_cli_hv_call(&hv, "DELETE", path, NULL, &dr, err, sizeof(err));
    if (ds != 200 && ds != 404)
        fprintf(stderr, "tfctl run: releasing %s: HTTP %d %s\n", r.name, ds, err);
    json_object_put(dr);
    json_object_put(resp);
    return code;
}
