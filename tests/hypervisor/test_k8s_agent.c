/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-hypervisor --kubernetes against the in-memory API server (tests/controller/fakeapi.py):
 * GPU objects follow the devices (created through injected API failures, a vanished device
 * and a stale object go Unknown, the controller's status members survive); bound soft pods
 * get limit regions with their limits (live changes, finished and deleted pods lose them,
 * pods that need none get none) and tf_worker_usage rows; a hypervisor killed with SIGKILL
 * adopts the regions of live pods with their VRAM accounting, replaces the one of a pod
 * recreated under the same name and removes those of pods deleted meanwhile.
 * Run with the argument "sim" (tests/hypervisor/meson.build does, on the simulated GPU): a
 * real CUDA program under the limiter, pointed at a pod's region, is held to its VRAM limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../controller/harness.h"
#include "common/yamljson.h"
#include "hvtest.h"
#include "limits/proc.h"
#include "limits/shm.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)
#define NODE "n1"
#define A100 "GPU-aaaaaaaa-1111-2222-3333-444444444444"
#define L4 "GPU-bbbbbbbb-1111-2222-3333-444444444444"
#define A100_LINE "NVIDIA A100-SXM4-80GB|" A100 "|85899345920|0|0\n"
#define L4_LINE "NVIDIA L4|" L4 "|24159191040|0|0\n"
#define WAIT_MS 20000

static struct fake_api F;
static struct hvt T;
static char shm_root[400];

/* ---- API helpers --------------------------------------------------------------------------- */

static json_object *api_get(const struct tf_k8s_resource *res, const char *ns, const char *name)
{
    json_object *o = NULL;
    char err[256];
    return tf_k8s_get(F.client, res, ns, name, &o, err, sizeof(err)) == 0 ? o : NULL;
}

static void api_create(const struct tf_k8s_resource *res, const char *ns, const char *json)
{
    json_object *o = jparse(json);
    char err[256];
    if (tf_k8s_create(F.client, res, ns, o, NULL, err, sizeof(err)))
        fail_msg("create %s: %s", json, err);
    json_object_put(o);
}

static void api_patch(const struct tf_k8s_resource *res, const char *ns, const char *name,
                      const char *sub, const char *json)
{
    json_object *o = jparse(json);
    char err[256];
    if (tf_k8s_merge_patch(F.client, res, ns, name, sub, o, NULL, err, sizeof(err)))
        fail_msg("patch %s %s: %s", name, json, err);
    json_object_put(o);
}

static void api_delete(const struct tf_k8s_resource *res, const char *ns, const char *name)
{
    char err[256];
    if (tf_k8s_delete(F.client, res, ns, name, err, sizeof(err)))
        fail_msg("delete %s: %s", name, err);
}

static char *pod_uid(const char *name)
{
    json_object *p = api_get(&tf_k8s_pods, "ml", name);
    assert_non_null(p);
    char *uid = strdup(tf_json_str(p, "metadata", "uid", NULL));
    json_object_put(p);
    return uid;
}

/* A pod as the webhook leaves it (soft unless ANNS says otherwise), bound to NODE_NAME (NULL:
 * not bound) with GPU_IDS (NULL: none yet). ANNS: extra annotation members. */
static void create_pod(const char *name, const char *node_name, const char *gpu_ids,
                       const char *anns)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"tensor-fusion.ai/enabled\":\"true\",\"tensor-fusion.ai/component\":"
             "\"client\"},\"annotations\":{\"tensor-fusion.ai/gpupool\":\"pool-a\"%s%s%s%s%s}},"
             "\"spec\":{%s%s%s\"schedulerName\":\"tensor-fusion-scheduler\",\"securityContext\":"
             "{\"supplementalGroups\":[60515]},\"containers\":"
             "[{\"name\":\"app\",\"image\":\"x\"}]}}",
             name, gpu_ids ? ",\"tensor-fusion.ai/gpu-ids\":\"" : "", gpu_ids ? gpu_ids : "",
             gpu_ids ? "\"" : "", *anns ? "," : "", anns, node_name ? "\"nodeName\":\"" : "",
             node_name ? node_name : "", node_name ? "\"," : "");
    api_create(&tf_k8s_pods, "ml", buf);
}

#define SOFT_2GI                                                                                   \
    "\"tensor-fusion.ai/isolation\":\"soft\",\"tensor-fusion.ai/vram-limit\":\"2Gi\","             \
    "\"tensor-fusion.ai/vram-request\":\"2Gi\""

/* ---- hypervisor and regions ---------------------------------------------------------------- */

/* Starts the hypervisor as the node agent, with the extra options MORE (up to 4, NULL-ended). */
static void start_hv_with(const char *const *more)
{
    const char *extra[16] = {"--kubernetes", "--node-name", NODE,     "--server", F.server,
                             "--shm-root",   shm_root,      "--pool", "pool-a"};
    for (int i = 0; more && more[i] && i < 4; i++)
        extra[9 + i] = more[i];
    hvt_start(&T, extra);
}

static void start_hv(void)
{
    start_hv_with(NULL);
}

static void region_path(const char *pod, char *buf, size_t len)
{
    snprintf(buf, len, "%s/ml/%s/shm", shm_root, pod);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool region_exists(struct hvt *t, void *pod)
{
    char p[600];
    region_path(pod, p, sizeof(p));
    return exists(p);
}

static bool region_gone(struct hvt *t, void *pod)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/ml/%s", shm_root, (const char *)pod);
    return !exists(p); /* the file and its directory */
}

static void open_region(const char *pod, struct tf_shm_map *m)
{
    char p[600], err[256];
    assert_true(hvt_wait(region_exists, &T, (void *)pod, WAIT_MS));
    region_path(pod, p, sizeof(p));
    if (tf_shm_open(p, TF_SHM_ENGINE, m, err, sizeof(err)))
        fail_msg("open %s: %s", p, err);
}

static struct tf_shm_config region_config(struct tf_shm_map *m)
{
    struct tf_shm_config c;
    assert_int_equal(tf_shm_read_config(&m->r, &c), 0);
    return c;
}

struct vram_want {
    struct tf_shm_map *m;
    unsigned dev;
    uint64_t limit;
};

static bool vram_limit_is(struct hvt *t, void *arg)
{
    struct vram_want *w = arg;
    struct tf_shm_config c;
    return tf_shm_read_config(&w->m->r, &c) == 0 && c.dev[w->dev].vram_limit == w->limit;
}

static bool heartbeat_by(struct hvt *t, void *arg)
{
    struct tf_shm_map *m = arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return atomic_load(&m->r.lim->hdr.writer_pid) == (uint32_t)t->pid &&
           atomic_load(&m->r.lim->hdr.heartbeat_ns) != 0 && !tf_shm_heartbeat_stale(&m->r, now);
}

static char *read_text(const char *path)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return strdup(buf);
}

static char *region_uid(const char *pod)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/ml/%s/pod-uid", shm_root, pod);
    return read_text(p);
}

/* ---- GPU objects ----------------------------------------------------------------------------- */

static const char *gpu_phase_of(json_object *g)
{
    const char *p = g ? tf_json_str(g, "status", "phase", NULL) : NULL;
    return p ? p : "";
}

struct phase_want {
    const char *name, *phase;
};

static bool gpu_phase_is(struct hvt *t, void *arg)
{
    struct phase_want *w = arg;
    json_object *g = api_get(&tf_k8s_gpus, NULL, w->name);
    bool ok = g && strcmp(gpu_phase_of(g), w->phase) == 0;
    json_object_put(g);
    return ok;
}

static bool gpu_published(struct hvt *t, void *name)
{
    json_object *g = api_get(&tf_k8s_gpus, NULL, name);
    bool ok = g && tf_json_str(g, "status", "capacity", "vram", NULL);
    json_object_put(g);
    return ok;
}

static void expect_gpu(const char *name, const char *status_json)
{
    assert_true(hvt_wait(gpu_published, &T, (void *)name, WAIT_MS));
    json_object *g = api_get(&tf_k8s_gpus, NULL, name);
    json_object *want = jparse(status_json);
    json_object *st = tf_json_path(g, "status", NULL);
    json_object_object_foreach(want, k, v)
    {
        json_object *have = json_object_object_get(st, k);
        if (!json_object_equal(have, v))
            fail_msg("GPU %s status.%s: %s, want %s", name, k,
                     have ? json_object_to_json_string(have) : "(absent)",
                     json_object_to_json_string(v));
    }
    assert_string_equal(tf_json_str(g, "metadata", "labels", "tensor-fusion.ai/node", NULL), NODE);
    assert_string_equal(tf_json_str(g, "metadata", "labels", "tensor-fusion.ai/gpupool", NULL),
                        "pool-a");
    json_object_put(want);
    json_object_put(g);
}

/* ---- setup ----------------------------------------------------------------------------------- */

static int setup(void **state)
{
    hvt_init(&T, A100_LINE L4_LINE);
    snprintf(shm_root, sizeof(shm_root), "%s/shm-root", T.dir);
    if (fake_start(&F, NULL))
        fail_msg("the fake API server did not start");
    api_create(&tf_k8s_namespaces, NULL,
               "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ml\"}}");
    return 0;
}

static int teardown(void **state)
{
    hvt_cleanup(&T);
    fake_stop(&F);
    return 0;
}

/* ---- fake NVML ------------------------------------------------------------------------------- */

static void gpu_objects_follow_the_devices_and_keep_the_controllers_fields(void **state)
{
    /* Left over from an earlier device set of this node, and a GPU of another node. */
    const char *old[] = {"gpu-old", NODE, "gpu-other", "n2"};
    for (int i = 0; i < 4; i += 2) {
        char buf[512];
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"GPU\",\"metadata\":"
                 "{\"name\":\"%s\",\"labels\":{\"tensor-fusion.ai/node\":\"%s\"}}}",
                 old[i], old[i + 1]);
        api_create(&tf_k8s_gpus, NULL, buf);
        snprintf(buf, sizeof(buf),
                 "{\"status\":{\"phase\":\"Running\",\"uuid\":\"GPU-%s\",\"gpuModel\":"
                 "\"T4\",\"message\":\"\",\"nodeSelector\":{\"kubernetes.io/hostname\":"
                 "\"%s\"},\"capacity\":{\"tflops\":\"65\",\"vram\":\"15Gi\"},"
                 "\"available\":{\"tflops\":\"65\",\"vram\":\"15Gi\"}}}",
                 old[i], old[i + 1]);
        api_patch(&tf_k8s_gpus, NULL, old[i], "status", buf);
    }
    fake_control(&F, "fail", "{\"status\":500,\"count\":5}"); /* retried */
    start_hv();
    const char *a100 = "gpu-aaaaaaaa-1111-2222-3333-444444444444";
    const char *l4 = "gpu-bbbbbbbb-1111-2222-3333-444444444444";
    expect_gpu(a100,
               "{\"uuid\":\"" A100 "\",\"gpuModel\":\"A100_SXM_80G\",\"vendor\":\"NVIDIA\","
               "\"index\":0,\"phase\":\"Running\",\"capacity\":{\"tflops\":\"312\","
               "\"vram\":\"80Gi\"},\"nodeSelector\":{\"kubernetes.io/hostname\":\"" NODE "\"}}");
    expect_gpu(l4, "{\"uuid\":\"" L4 "\",\"gpuModel\":\"L4\",\"index\":1,\"phase\":\"Running\","
                   "\"capacity\":{\"tflops\":\"121\",\"vram\":\"23040Mi\"}}");
    struct phase_want stale = {"gpu-old", "Unknown"};
    assert_true(hvt_wait(gpu_phase_is, &T, &stale, WAIT_MS));
    json_object *other = api_get(&tf_k8s_gpus, NULL, "gpu-other");
    assert_string_equal(gpu_phase_of(other), "Running"); /* not ours */
    json_object_put(other);

    /* The controller's reconciler writes its members next to ours. */
    api_patch(&tf_k8s_gpus, NULL, a100, "status",
              "{\"status\":{\"available\":{\"tflops\":\"100\",\"vram\":\"10Gi\"}}}");
    /* The L4 disappears, then comes back. */
    hvt_set_devices(&T, A100_LINE);
    struct phase_want gone = {l4, "Unknown"}, back = {l4, "Running"};
    assert_true(hvt_wait(gpu_phase_is, &T, &gone, WAIT_MS));
    hvt_set_devices(&T, A100_LINE L4_LINE);
    assert_true(hvt_wait(gpu_phase_is, &T, &back, WAIT_MS));
    json_object *g = api_get(&tf_k8s_gpus, NULL, a100);
    assert_string_equal(tf_json_str(g, "status", "available", "vram", NULL), "10Gi");
    assert_string_equal(gpu_phase_of(g), "Running");
    json_object_put(g);
}

struct row_want {
    const char *db, *sql;
};

static bool has_rows(struct hvt *t, void *arg)
{
    struct row_want *w = arg;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = false;
    if (sqlite3_open_v2(w->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        if (sqlite3_prepare_v2(db, w->sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            ok = sqlite3_column_int(st, 0) > 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

static void a_bound_soft_pod_gets_a_region_with_its_limits_until_it_goes(void **state)
{
    start_hv();
    create_pod("train", NULL, NULL,
               SOFT_2GI ",\"tensor-fusion.ai/compute-percent-limit\":\"30\","
                        "\"tensor-fusion.ai/compute-percent-request\":\"30\","
                        "\"tensor-fusion.ai/workload\":\"train-wl\"");
    create_pod("whole", NODE, A100, "\"tensor-fusion.ai/isolation\":\"shared\"");
    create_pod("elsewhere", "n2", A100, SOFT_2GI);
    create_pod("pair", NODE, L4 "," A100,
               "\"tensor-fusion.ai/tflops-limit\":\"60.5\",\"tensor-fusion.ai/vram-limit\":"
               "\"1Gi\"");
    /* The extender's bind: annotations, then the binding. */
    char *uid = pod_uid("train"), err[256];
    api_patch(&tf_k8s_pods, "ml", "train", NULL,
              "{\"metadata\":{\"annotations\":{\"tensor-fusion.ai/gpu-ids\":\"" A100 "\"}}}");
    assert_int_equal(tf_k8s_bind(F.client, "ml", "train", uid, NODE, NULL, err, sizeof(err)), 0);

    struct tf_shm_map m = {0}, pm = {0};
    open_region("train", &m);
    struct tf_shm_config c = region_config(&m);
    assert_string_equal(c.name, "ml/train");
    assert_int_equal(c.ndev, 1);
    char u[64];
    tf_shm_uuid_format(c.dev[0].uuid, u, sizeof(u));
    assert_string_equal(u, A100);
    assert_int_equal(c.dev[0].flags,
                     TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT);
    assert_int_equal(c.dev[0].compute_limit_bp, 3000);
    assert_int_equal(c.dev[0].vram_limit, 2 * GiB);
    assert_int_equal(c.dev[0].mem_total, 80 * GiB);
    assert_true(hvt_wait(heartbeat_by, &T, &m, WAIT_MS)); /* the limit engine runs it */
    /* The uid is recorded (atomically) just after the region goes live. */
    char *ruid = region_uid("train");
    for (int i = 0; i < WAIT_MS / 10 && !*ruid; i++) {
        free(ruid);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        ruid = region_uid("train");
    }
    assert_string_equal(ruid, uid);
    free(ruid);
    /* Its files: the limits part the agent's (0644), the usage part root's and the region
     * group's (the webhook gives the pod that group), writable by nobody else on the node. */
    char lpath[512], upath[600];
    struct stat st;
    region_path("train", lpath, sizeof(lpath));
    assert_true(tf_shm_usage_path(lpath, upath, sizeof(upath)));
    assert_int_equal(stat(lpath, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(stat(upath, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0660);
    if (geteuid() == 0)
        assert_int_equal(st.st_gid, TF_SHM_POD_GROUP);

    /* Two GPUs, TFLOPS converted per GPU; pods that need no region get none. */
    open_region("pair", &pm);
    c = region_config(&pm);
    assert_int_equal(c.ndev, 2);
    assert_int_equal(c.dev[0].compute_limit_bp, 5000); /* 60.5 of the L4's 121 */
    assert_int_equal(c.dev[1].compute_limit_bp, 1939); /* 60.5 of the A100's 312 */
    assert_true(region_gone(&T, "whole"));
    assert_true(region_gone(&T, "elsewhere"));

    /* Limits change live in the same region. */
    uint64_t instance = m.r.lim->hdr.instance;
    api_patch(&tf_k8s_pods, "ml", "train", NULL,
              "{\"metadata\":{\"annotations\":{\"tensor-fusion.ai/vram-limit\":\"4Gi\","
              "\"tensor-fusion.ai/vram-request\":\"4Gi\"}}}");
    struct vram_want four = {&m, 0, 4 * GiB};
    assert_true(hvt_wait(vram_limit_is, &T, &four, WAIT_MS));
    char p[600];
    struct tf_shm_map again = {0};
    region_path("train", p, sizeof(p));
    assert_int_equal(tf_shm_open(p, TF_SHM_ENGINE, &again, err, sizeof(err)), 0);
    assert_true(again.r.lim->hdr.instance == instance);
    tf_shm_unmap(&again);

    /* Usage rows carry the pod's names. */
    char db[400];
    snprintf(db, sizeof(db), "%s/metrics.db", T.state);
    struct row_want rows = {db, "SELECT count(*) FROM tf_worker_usage WHERE worker = 'train' AND "
                                "namespace = 'ml' AND workload = 'train-wl' AND uuid = '" A100
                                "' AND node = '" NODE "' AND pool = 'pool-a'"};
    assert_true(hvt_wait(has_rows, &T, &rows, WAIT_MS));

    /* Finished, then deleted: the regions go. */
    api_patch(&tf_k8s_pods, "ml", "pair", "status", "{\"status\":{\"phase\":\"Succeeded\"}}");
    assert_true(hvt_wait(region_gone, &T, "pair", WAIT_MS));
    api_delete(&tf_k8s_pods, "ml", "train");
    assert_true(hvt_wait(region_gone, &T, "train", WAIT_MS));
    tf_shm_unmap(&m);
    tf_shm_unmap(&pm);
    free(uid);
}

struct label_want {
    const char *gpu, *pool;
};

static bool pool_label_is(struct hvt *t, void *arg)
{
    struct label_want *w = arg;
    json_object *g = api_get(&tf_k8s_gpus, NULL, w->gpu);
    const char *p = tf_json_str(g, "metadata", "labels", "tensor-fusion.ai/gpupool", NULL);
    bool ok = p && strcmp(p, w->pool) == 0;
    json_object_put(g);
    return ok;
}

/* Pools by selector: tf-controller owns the gpupool label. --pool only seeds it on creation;
 * the hypervisor keeps the controller's value through its rounds and tags its metric lines
 * with it. */
static void the_controllers_pool_label_is_kept_and_tags_the_metrics(void **state)
{
    start_hv();
    const char *gpus[] = {"gpu-aaaaaaaa-1111-2222-3333-444444444444",
                          "gpu-bbbbbbbb-1111-2222-3333-444444444444"};
    for (int i = 0; i < 2; i++) {
        assert_true(hvt_wait(gpu_published, &T, (void *)gpus[i], WAIT_MS));
        struct label_want seeded = {gpus[i], "pool-a"};
        assert_true(pool_label_is(&T, &seeded));
        api_patch(&tf_k8s_gpus, NULL, gpus[i], NULL,
                  "{\"metadata\":{\"labels\":{\"tensor-fusion.ai/gpupool\":\"pool-b\"}}}");
    }
    /* Two publishing rounds: the L4 goes and comes back. */
    hvt_set_devices(&T, A100_LINE);
    struct phase_want gone = {gpus[1], "Unknown"}, back = {gpus[1], "Running"};
    assert_true(hvt_wait(gpu_phase_is, &T, &gone, WAIT_MS));
    hvt_set_devices(&T, A100_LINE L4_LINE);
    assert_true(hvt_wait(gpu_phase_is, &T, &back, WAIT_MS));
    for (int i = 0; i < 2; i++) {
        struct label_want kept = {gpus[i], "pool-b"};
        assert_true(pool_label_is(&T, &kept));
    }
    char db[400];
    snprintf(db, sizeof(db), "%s/metrics.db", T.state);
    struct row_want rows = {db, "SELECT count(*) FROM tf_gpu_usage WHERE node = '" NODE
                                "' AND pool = 'pool-b'"};
    assert_true(hvt_wait(has_rows, &T, &rows, WAIT_MS));
}

static void a_restarted_hypervisor_adopts_live_regions_and_drops_the_others(void **state)
{
    start_hv();
    create_pod("keep", NODE, A100, SOFT_2GI);
    create_pod("gone", NODE, A100, SOFT_2GI);
    create_pod("again", NODE, A100, SOFT_2GI);
    struct tf_shm_map keep = {0}, old = {0}, fresh = {0};
    open_region("keep", &keep);
    open_region("again", &old);
    assert_true(hvt_wait(region_exists, &T, "gone", WAIT_MS));
    /* This process plays a running app of "keep" holding 1 GiB. */
    uint64_t owner = tf_proc_self_owner();
    int slot = tf_shm_pid_claim(&keep.r, owner, tf_proc_pidns(0));
    assert_true(slot >= 0);
    assert_int_equal(tf_shm_vram_reserve(&keep.r, 0, slot, GiB), 0);
    uint64_t instance = keep.r.lim->hdr.instance;

    hvt_kill(&T, SIGKILL);
    /* Meanwhile: one pod deleted, one recreated under the same name, one resized, and the
     * directory of a pod this API server never knew. */
    api_delete(&tf_k8s_pods, "ml", "gone");
    api_delete(&tf_k8s_pods, "ml", "again");
    create_pod("again", NODE, A100,
               "\"tensor-fusion.ai/vram-limit\":\"3Gi\",\"tensor-fusion.ai/vram-request\":\"3Gi\"");
    api_patch(&tf_k8s_pods, "ml", "keep", NULL,
              "{\"metadata\":{\"annotations\":{\"tensor-fusion.ai/vram-limit\":\"6Gi\","
              "\"tensor-fusion.ai/vram-request\":\"6Gi\"}}}");
    char ghost[600];
    snprintf(ghost, sizeof(ghost), "%s/ml/ghost", shm_root);
    assert_int_equal(mkdir(ghost, 0755), 0);
    strncat(ghost, "/shm", sizeof(ghost) - strlen(ghost) - 1);
    FILE *f = fopen(ghost, "w");
    assert_non_null(f);
    fclose(f);
    start_hv();

    /* "keep": the same region, its VRAM accounting intact, the new limit applied. */
    assert_true(hvt_wait(heartbeat_by, &T, &keep, WAIT_MS));
    struct vram_want six = {&keep, 0, 6 * GiB};
    assert_true(hvt_wait(vram_limit_is, &T, &six, WAIT_MS));
    assert_true(keep.r.lim->hdr.instance == instance);
    assert_int_equal(atomic_load(&keep.r.use->dev[0].vram_used), (int64_t)GiB);
    char p[600], err[256];
    region_path("keep", p, sizeof(p));
    assert_int_equal(tf_shm_open(p, TF_SHM_ENGINE, &fresh, err, sizeof(err)), 0);
    assert_true(fresh.r.lim->hdr.instance == instance); /* still the file at the path */
    tf_shm_unmap(&fresh);
    /* "gone" and the ghost: removed. "again": a new region for the new pod. */
    assert_true(hvt_wait(region_gone, &T, "gone", WAIT_MS));
    assert_true(hvt_wait(region_gone, &T, "ghost", WAIT_MS));
    char *uid = pod_uid("again");
    bool replaced = false;
    for (int i = 0; i < WAIT_MS / 20 && !replaced; i++) {
        char *ruid = region_uid("again");
        replaced = strcmp(ruid, uid) == 0;
        free(ruid);
        if (!replaced)
            usleep(20000);
    }
    assert_true(replaced);
    open_region("again", &fresh);
    assert_true(fresh.r.lim->hdr.instance != old.r.lim->hdr.instance);
    assert_int_equal(region_config(&fresh).dev[0].vram_limit, 3 * GiB);
    assert_int_equal(atomic_load(&fresh.r.use->dev[0].vram_used), 0);
    free(uid);
    tf_shm_pid_release(&keep.r, slot, owner);
    tf_shm_unmap(&keep);
    tf_shm_unmap(&old);
    tf_shm_unmap(&fresh);
}

/* ---- simulated GPU -----------------------------------------------------------------------------
 */

static int setup_sim(void **state)
{
    setup(state);
    char nvml[600], shm[400];
    snprintf(nvml, sizeof(nvml), "%s/libnvidia-ml.so.1", getenv("TF_SIM_LIBDIR"));
    snprintf(shm, sizeof(shm), "%s/sim-", T.dir);
    setenv("TF_NVML_LIBRARY", nvml, 1);
    setenv("LD_LIBRARY_PATH", getenv("TF_SIM_LIBDIR"), 1);
    setenv("TF_SIM_DEVICES", "A100-80GB", 1);
    setenv("TF_SIM_SHM_PREFIX", shm, 1);
    return 0;
}

#define HARD_TOKEN "k8s-agent-hard-7c1e"

/* A shell command gpu_burn runs as its child once its VRAM is allocated (NULL: none). */
static const char *burn_spawn;

/* Runs gpu_burn allocating MIB MiB: under the limiter with TF_SHM_PATH=REGION or, with
 * REMOTE set, on libtf_client talking to the tf-worker at REMOTE. Returns its exit status and
 * its output in *OUT (malloc'ed). */
static int burn_on(const char *region, const char *remote, const char *mib, const char *name,
                   char **out)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/%s.log", T.dir, name);
    /* The child's environment is built here: this process runs threads (the fake API server),
     * so the child may only exec after fork, never allocate. */
    char set[4][1200];
    int nset = remote ? 3 : 2;
    if (remote) {
        snprintf(set[0], sizeof(set[0]), "LD_LIBRARY_PATH=%s", getenv("TF_CLIENT_DIR"));
        snprintf(set[1], sizeof(set[1]), "TF_REMOTE=%s", remote);
        snprintf(set[2], sizeof(set[2]), "TF_TOKEN=%s", HARD_TOKEN);
    } else {
        snprintf(set[0], sizeof(set[0]), "LD_PRELOAD=%s", getenv("TF_LIMITER_LIB"));
        snprintf(set[1], sizeof(set[1]), "TF_SHM_PATH=%s", region);
        if (burn_spawn)
            snprintf(set[nset++], sizeof(set[0]), "GPU_BURN_SPAWN=%s", burn_spawn);
    }
    extern char **environ;
    size_t n_env = 0;
    while (environ[n_env])
        n_env++;
    char **envp = calloc(n_env + 5, sizeof(*envp));
    assert_non_null(envp);
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        bool replaced = false;
        for (int j = 0; j < nset; j++)
            replaced |= strncmp(environ[i], set[j], strcspn(set[j], "=") + 1) == 0;
        if (!replaced)
            envp[k++] = environ[i];
    }
    for (int j = 0; j < nset; j++)
        envp[k++] = set[j];
    char *argv[] = {"gpu_burn", getenv("TF_TIMER_PTX"), "1", (char *)mib,
                    "1000",     (char *)name,           NULL};
    const char *bin = getenv("TF_GPU_BURN");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execve(bin, argv, envp);
        _exit(127);
    }
    free(envp);
    int st = 0;
    for (int i = 0; i < 6000 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(10000);
    if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("gpu_burn %s did not finish in 60 s", name);
    }
    FILE *f = fopen(log, "r");
    char buf[8192];
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    *out = strdup(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int burn(const char *region, const char *mib, const char *name, char **out)
{
    return burn_on(region, NULL, mib, name, out);
}

static bool vram_released(struct hvt *t, void *arg)
{
    struct tf_shm_map *m = arg;
    return atomic_load(&m->r.use->dev[0].vram_used) == 0;
}

/* Waits for the simulated device's GPU object and returns its UUID, checking what the
 * controller reads of it. */
static void sim_gpu_uuid(char *uuid, size_t len)
{
    json_object *list = NULL;
    for (int i = 0; i < WAIT_MS / 50; i++) {
        json_object *out = NULL;
        char err[256];
        if (tf_k8s_request(F.client, "GET", "/apis/tensor-fusion.ai/v1/gpus", NULL, NULL, &out,
                           NULL, err, sizeof(err)) == 0 &&
            json_object_array_length(json_object_object_get(out, "items")) == 1 &&
            tf_json_str(json_object_array_get_idx(json_object_object_get(out, "items"), 0),
                        "status", "uuid", NULL)) {
            list = out;
            break;
        }
        json_object_put(out);
        usleep(50000);
    }
    assert_non_null(list);
    json_object *g = json_object_array_get_idx(json_object_object_get(list, "items"), 0);
    snprintf(uuid, len, "%s", tf_json_str(g, "status", "uuid", NULL));
    assert_string_equal(tf_json_str(g, "status", "gpuModel", NULL), "A100_SXM_80G");
    assert_string_equal(tf_json_str(g, "status", "capacity", "tflops", NULL), "312");
    assert_string_equal(tf_json_str(g, "status", "capacity", "vram", NULL), "80Gi");
    json_object_put(list);
}

static void a_pod_on_the_simulated_gpu_is_held_to_its_vram_limit(void **state)
{
    start_hv();
    char uuid[80];
    sim_gpu_uuid(uuid, sizeof(uuid));

    create_pod("burn", NODE, uuid,
               SOFT_2GI ",\"tensor-fusion.ai/compute-percent-limit\":\"50\","
                        "\"tensor-fusion.ai/compute-percent-request\":\"50\"");
    struct tf_shm_map m = {0};
    open_region("burn", &m);
    assert_true(hvt_wait(heartbeat_by, &T, &m, WAIT_MS));
    char region[600], *out = NULL;
    region_path("burn", region, sizeof(region));
    int rc = burn(region, "3072", "big", &out);
    if (rc != 3 || !strstr(out, "big vram_refused mib=3072 total_mib=2048 "
                                "error=CUDA_ERROR_OUT_OF_MEMORY"))
        fail_msg("over the limit: exit %d:\n%s", rc, out);
    free(out);
    rc = burn(region, "1024", "fits", &out);
    if (rc != 0 || !strstr(out, "fits vram_total_mib=2048 vram_alloc_mib=1024") ||
        !strstr(out, "fits kernels="))
        fail_msg("within the limit: exit %d:\n%s", rc, out);
    printf("pod under the limiter: %s", strstr(out, "fits kernels="));
    free(out);
    assert_true(hvt_wait(vram_released, &T, &m, WAIT_MS)); /* nothing leaks after the app */
    api_delete(&tf_k8s_pods, "ml", "burn");
    assert_true(hvt_wait(region_gone, &T, "burn", WAIT_MS));
    tf_shm_unmap(&m);
}

/* The attack on a pod's VRAM limit that the limiter cannot see: the pod's app, under the
 * limiter, starts a child that drops LD_PRELOAD and allocates past the pod's limit. The node
 * agent's escape check (NVML per process, the child counted as the pod's: it descends from a
 * process holding one of the region's PID slots) kills the child, not the app. */
static void a_pods_child_without_the_limiter_is_caught_and_killed(void **state)
{
    const char *more[] = {"--vram-escape", "kill", "--vram-escape-slack", "0", NULL};
    start_hv_with(more);
    char uuid[80];
    sim_gpu_uuid(uuid, sizeof(uuid));
    create_pod("sly", NODE, uuid, SOFT_2GI);
    struct tf_shm_map m = {0};
    open_region("sly", &m);
    assert_true(hvt_wait(heartbeat_by, &T, &m, WAIT_MS));
    char region[600], spawn[1200], *out = NULL;
    region_path("sly", region, sizeof(region));
    snprintf(spawn, sizeof(spawn), "env -u LD_PRELOAD %s %s 20 1800 1000 child",
             getenv("TF_GPU_BURN"), getenv("TF_TIMER_PTX"));
    burn_spawn = spawn;
    int rc = burn(region, "512", "app", &out);
    burn_spawn = NULL;
    /* the child got its 1.8 GiB (nothing in the data path stops it), then was killed long
     * before its 20 s (SIGKILL: the shell reports 137); the app, under the limiter, ran on */
    if (rc != 0 || !strstr(out, "child vram_total_mib=") || strstr(out, "child kernels=") ||
        (!strstr(out, "app spawned exit=137 ") && !strstr(out, "signal=9\n")) ||
        !strstr(out, "app kernels="))
        fail_msg("exit %d:\n%s", rc, out);
    free(out);
    char log[400];
    snprintf(log, sizeof(log), "%s/hypervisor-test.log", T.dir);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "workload ml/sly escaped its VRAM limit"));
    assert_non_null(strstr(buf, "not under the limiter"));
    api_delete(&tf_k8s_pods, "ml", "sly");
    assert_true(hvt_wait(region_gone, &T, "sly", WAIT_MS));
    tf_shm_unmap(&m);
}

/* Hard isolation end to end: the node agent writes the hard pod's region and runs its compute
 * controller, the pod's tf-worker (as the webhook starts the sidecar: --limits-region)
 * enforces both limits for the app on libtf_client, and a changed vram-limit annotation
 * reaches the running worker. */
static void a_hard_pods_tf_worker_enforces_the_pods_region_live(void **state)
{
    start_hv();
    char uuid[80];
    sim_gpu_uuid(uuid, sizeof(uuid));
    create_pod("hard", NODE, uuid,
               "\"tensor-fusion.ai/isolation\":\"hard\",\"tensor-fusion.ai/vram-limit\":\"2Gi\","
               "\"tensor-fusion.ai/vram-request\":\"2Gi\",\"tensor-fusion.ai/"
               "compute-percent-limit\":\"50\",\"tensor-fusion.ai/compute-percent-request\":"
               "\"50\"");
    struct tf_shm_map m = {0};
    open_region("hard", &m);
    assert_true(hvt_wait(heartbeat_by, &T, &m, WAIT_MS));
    char region[600], token[600], ready[600], sock[700];
    region_path("hard", region, sizeof(region));
    snprintf(token, sizeof(token), "%s/hard.token", T.dir);
    snprintf(ready, sizeof(ready), "%s/hard.ready", T.dir);
    snprintf(sock, sizeof(sock), "unix://%s/hard.sock", T.dir);
    FILE *f = fopen(token, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", HARD_TOKEN);
    fclose(f);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        char log[600];
        snprintf(log, sizeof(log), "%s/hard-worker.log", T.dir);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(getenv("TF_WORKER"), "tf-worker", "--listen", sock, "--token-file", token,
              "--ready-file", ready, "--limits-region", region, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; !exists(ready); i++) {
        int st;
        if (i > WAIT_MS / 10 || waitpid(w, &st, WNOHANG) == w) {
            char log[600], *text;
            snprintf(log, sizeof(log), "%s/hard-worker.log", T.dir);
            text = read_text(log);
            fail_msg("tf-worker --limits-region did not come up: %s", text);
        }
        usleep(10000);
    }
    char *out = NULL;
    int rc = burn_on(NULL, sock, "3072", "hard-big", &out);
    if (rc != 3 || !strstr(out, "hard-big vram_refused mib=3072 total_mib=2048 "
                                "error=CUDA_ERROR_OUT_OF_MEMORY"))
        fail_msg("over the pod's limit: exit %d:\n%s", rc, out);
    free(out);
    /* The autoscaler (or a user) raises the limit: no restart of anything. */
    api_patch(&tf_k8s_pods, "ml", "hard", NULL,
              "{\"metadata\":{\"annotations\":{\"tensor-fusion.ai/vram-limit\":\"4Gi\","
              "\"tensor-fusion.ai/vram-request\":\"4Gi\"}}}");
    struct vram_want four = {&m, 0, 4 * GiB};
    assert_true(hvt_wait(vram_limit_is, &T, &four, WAIT_MS));
    rc = burn_on(NULL, sock, "3072", "hard-fits", &out);
    if (rc != 0 || !strstr(out, "hard-fits vram_total_mib=4096 vram_alloc_mib=3072") ||
        !strstr(out, "hard-fits kernels="))
        fail_msg("within the raised limit: exit %d:\n%s", rc, out);
    printf("hard pod through its tf-worker: %s", strstr(out, "hard-fits kernels="));
    /* The node agent's controller feeds the worker's bucket: the pod gets its 50 %, not the
     * whole GPU (alone it reaches over 90 % here). The lower bound only catches a starved
     * pod: on a machine busy with other work the simulated GPU itself delivers less (the
     * limiter's accuracy is bench_limiter_accuracy's, not a unit test's). */
    double share = atof(strstr(out, "share_pct=") + strlen("share_pct="));
    if (share < 5 || share > 70)
        fail_msg("hard pod's compute share %.1f %% at a 50 %% limit:\n%s", share, out);
    free(out);
    assert_true(hvt_wait(vram_released, &T, &m, WAIT_MS)); /* the worker freed the client's */
    kill(w, SIGTERM);
    int st = 0;
    waitpid(w, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    api_delete(&tf_k8s_pods, "ml", "hard");
    assert_true(hvt_wait(region_gone, &T, "hard", WAIT_MS));
    tf_shm_unmap(&m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest fake[] = {
        cmocka_unit_test_setup_teardown(the_controllers_pool_label_is_kept_and_tags_the_metrics,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            gpu_objects_follow_the_devices_and_keep_the_controllers_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_bound_soft_pod_gets_a_region_with_its_limits_until_it_goes, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_restarted_hypervisor_adopts_live_regions_and_drops_the_others, setup, teardown),
    };
    const struct CMUnitTest sim[] = {
        cmocka_unit_test_setup_teardown(a_pod_on_the_simulated_gpu_is_held_to_its_vram_limit,
                                        setup_sim, teardown),
        cmocka_unit_test_setup_teardown(a_pods_child_without_the_limiter_is_caught_and_killed,
                                        setup_sim, teardown),
        cmocka_unit_test_setup_teardown(a_hard_pods_tf_worker_enforces_the_pods_region_live,
                                        setup_sim, teardown),
    };
    if (argc > 1 && strcmp(argv[1], "sim") == 0)
        return cmocka_run_group_tests_name("k8s_agent_sim", sim, NULL, NULL);
    return cmocka_run_group_tests_name("k8s_agent", fake, NULL, NULL);
}
