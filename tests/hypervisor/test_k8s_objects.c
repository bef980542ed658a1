/* SPDX-License-Identifier: Apache-2.0
 *
 * The node agent's objects without an API server: GPU object names and status as the
 * controller reads them, and the limit region each kind of pod gets (percent and TFLOPS
 * limits, several GPUs, pods that need none, annotations that cannot give one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "hypervisor/k8s_objects.h"
#include "hypervisor/nvml.h"

#define GiB (INT64_C(1) << 30)
#define A100 "GPU-aaaaaaaa-1111-2222-3333-444444444444"
#define L4 "GPU-bbbbbbbb-1111-2222-3333-444444444444"

static const struct tf_hv_device devs[] = {
    {.uuid = A100,
     .index = 0,
     .name = "NVIDIA A100-SXM4-80GB",
     .model = "A100-80GB",
     .vendor = "NVIDIA",
     .tflops_milli = 312000,
     .vram_bytes = 80 * GiB,
     .present = true},
    {.uuid = L4,
     .index = 1,
     .name = "NVIDIA L4",
     .model = "L4",
     .vendor = "NVIDIA",
     .tflops_milli = 121000,
     .vram_bytes = 24 * GiB,
     .present = true},
    {.uuid = "GPU-cccccccc-1111-2222-3333-444444444444",
     .index = 2,
     .name = "Mystery GPU",
     .model = "",
     .vendor = "",
     .present = true},
    {.uuid = "GPU-dddddddd-1111-2222-3333-444444444444",
     .index = 3,
     .name = "NVIDIA L4",
     .model = "L4",
     .tflops_milli = 121000,
     .vram_bytes = 24 * GiB,
     .present = false},
};
#define NDEV ((int)(sizeof(devs) / sizeof(devs[0])))

static json_object *parse(const char *s)
{
    json_object *o = json_tokener_parse(s);
    if (!o)
        fail_msg("bad test JSON: %s", s);
    return o;
}

/* A pod the webhook took over and the extender bound to NODE with GPU_IDS; ANNS is extra
 * annotation members ("\"k\": \"v\", ..." or ""). */
static json_object *pod(const char *node, const char *gpu_ids, const char *anns)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train\","
             "\"namespace\":\"ml\",\"uid\":\"u-1\",\"labels\":{\"tensor-fusion.ai/enabled\":"
             "\"true\",\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{%s%s%s%s%s}},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]},"
             "\"status\":{\"phase\":\"Running\"}}",
             gpu_ids ? "\"tensor-fusion.ai/gpu-ids\":\"" : "", gpu_ids ? gpu_ids : "",
             gpu_ids ? "\"" : "", gpu_ids && *anns ? "," : "", anns, node);
    return parse(buf);
}

static int plan(json_object *p, struct tf_hv_k8s_pod *out, char *err, size_t errlen)
{
    int rc = tf_hv_k8s_pod_plan(p, "n1", devs, NDEV, out, err, errlen);
    json_object_put(p);
    return rc;
}

static void gpu_objects_are_named_after_the_lowercased_uuid(void **state)
{
    char b[256];
    assert_true(tf_hv_k8s_gpu_name("GPU-AbCd0123-1111-2222-3333-444444444444", b, sizeof(b)));
    assert_string_equal(b, "gpu-abcd0123-1111-2222-3333-444444444444");
    assert_true(tf_hv_k8s_gpu_name("MIG-GPU-ab.3", b, sizeof(b)));
    assert_string_equal(b, "mig-gpu-ab.3");
    assert_false(tf_hv_k8s_gpu_name("", b, sizeof(b)));
    assert_false(tf_hv_k8s_gpu_name("GPU-a/b", b, sizeof(b)));
    assert_false(tf_hv_k8s_gpu_name("GPU-", b, sizeof(b))); /* must end alphanumeric */
    assert_false(tf_hv_k8s_gpu_name("GPU-abcdef", b, 6));   /* does not fit */
}

static void gpu_status_carries_what_the_extender_reads(void **state)
{
    json_object *st = tf_hv_k8s_gpu_status(&devs[1], "n1");
    json_object *want = parse("{\"uuid\":\"" L4 "\",\"gpuModel\":\"L4\",\"vendor\":\"NVIDIA\","
                              "\"index\":1,\"phase\":\"Running\",\"capacity\":{\"tflops\":\"121\","
                              "\"vram\":\"24Gi\"},\"nodeSelector\":{\"kubernetes.io/hostname\":"
                              "\"n1\"}}");
    assert_true(json_object_equal(st, want));
    json_object_put(st);
    /* Upstream's board name for the A100 (its node agent writes it; users' gpu-model names it) */
    st = tf_hv_k8s_gpu_status(&devs[0], "n1");
    assert_string_equal(json_object_get_string(json_object_object_get(st, "gpuModel")),
                        "A100_SXM_80G");
    json_object_put(st);
    /* An unknown model is reported by its NVML name (the extender tries that mapping). */
    st = tf_hv_k8s_gpu_status(&devs[2], "n1");
    assert_string_equal(json_object_get_string(json_object_object_get(st, "gpuModel")),
                        "Mystery GPU");
    assert_null(json_object_object_get(st, "vendor"));
    json_object_put(st);
    json_object *l = tf_hv_k8s_gpu_labels("n1", "pool-a");
    assert_string_equal(
        json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
        "{\"tensor-fusion.ai/node\":\"n1\",\"tensor-fusion.ai/gpupool\":\"pool-a\"}");
    json_object_put(l);
    json_object_put(want);
}

static void a_patch_is_needed_only_when_an_owned_member_differs(void **state)
{
    json_object *want = parse("{\"phase\":\"Running\",\"capacity\":{\"tflops\":\"121\"}}");
    json_object *same = parse("{\"phase\":\"Running\",\"capacity\":{\"tflops\":\"121\","
                              "\"extra\":1},\"available\":{\"tflops\":\"10\"}}");
    json_object *other = parse("{\"phase\":\"Unknown\",\"capacity\":{\"tflops\":\"121\"}}");
    json_object *nested = parse("{\"phase\":\"Running\",\"capacity\":{\"tflops\":\"120\"}}");
    json_object *missing = parse("{\"phase\":\"Running\"}");
    assert_false(tf_hv_k8s_differs(same, want)); /* the reconciler's members do not count */
    assert_true(tf_hv_k8s_differs(other, want));
    assert_true(tf_hv_k8s_differs(nested, want));
    assert_true(tf_hv_k8s_differs(missing, want));
    assert_true(tf_hv_k8s_differs(NULL, want));
    json_object_put(want);
    json_object_put(same);
    json_object_put(other);
    json_object_put(nested);
    json_object_put(missing);
}

static void a_soft_pod_gets_its_percent_and_vram_limits(void **state)
{
    struct tf_hv_k8s_pod p;
    char err[512];
    assert_int_equal(plan(pod("n1", A100,
                              "\"tensor-fusion.ai/isolation\":\"soft\","
                              "\"tensor-fusion.ai/compute-percent-limit\":\"30\","
                              "\"tensor-fusion.ai/vram-limit\":\"2Gi\","
                              "\"tensor-fusion.ai/workload\":\"train-wl\""),
                          &p, err, sizeof(err)),
                     1);
    assert_string_equal(p.key, "ml/train");
    assert_string_equal(p.uid, "u-1");
    assert_string_equal(p.workload, "train-wl");
    assert_string_equal(p.cfg.name, "ml/train");
    assert_int_equal(p.ngpu, 1);
    assert_int_equal(p.cfg.ndev, 1);
    assert_string_equal(p.uuids[0], A100);
    char u[64];
    tf_shm_uuid_format(p.cfg.dev[0].uuid, u, sizeof(u));
    assert_string_equal(u, "GPU-aaaaaaaa-1111-2222-3333-444444444444");
    assert_int_equal(p.cfg.dev[0].flags,
                     TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT);
    assert_int_equal(p.cfg.dev[0].compute_limit_bp, 3000);
    assert_int_equal(p.cfg.dev[0].vram_limit, 2 * GiB);
    assert_int_equal(p.cfg.dev[0].mem_total, 80 * GiB);
    assert_int_equal(tf_shm_check_config(&p.cfg, err, sizeof(err)), 0);
}

/* The usage part of POD_SPEC's region (its securityContext and containers): OUT. */
static void perms_of(const char *spec, struct tf_shm_perms *out)
{
    char buf[2048];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"p\"},\"spec\":%s}", spec);
    json_object *p = parse(buf);
    tf_hv_k8s_pod_perms(p, out);
    json_object_put(p);
}

#define MOUNTS "\"volumeMounts\":[{\"name\":\"tf-shm\",\"mountPath\":\"/run/tensor-fusion/pod\"}]"

/* Kubernetes does not apply fsGroup to hostPath volumes, and the node agent does not know which
 * user a container runs as unless the pod says: the usage part goes to the user (and group)
 * the pod's spec gives every container that mounts the region; the webhook gives every such pod
 * the region group, which makes it 0660 root:region group when the user is not known. Never
 * world-writable: a node user outside the pod cannot raise the pod's bucket or hide its use.
 * The limits part is the agent's in every case. */
static void the_usage_part_belongs_to_the_pods_user(void **state)
{
    struct tf_shm_perms p;
    perms_of("{\"containers\":[{\"name\":\"app\"," MOUNTS "}]}", &p);
    assert_int_equal(p.lmode, 0644);
    assert_int_equal(p.umode, 0600); /* root's: the image's default user is not known */
    assert_int_equal(p.uid, -1);
    assert_int_equal(p.gid, -1);
    /* As the webhook mutates it: the region group. */
    perms_of("{\"securityContext\":{\"supplementalGroups\":[5,60515]},\"containers\":[{"
             "\"name\":\"app\"," MOUNTS "}]}",
             &p);
    assert_int_equal(p.umode, 0660);
    assert_int_equal(p.uid, -1);
    assert_int_equal(p.gid, TF_SHM_POD_GROUP);
    perms_of("{\"securityContext\":{\"runAsUser\":1000},\"containers\":[{\"name\":\"app\"," MOUNTS
             "},{\"name\":\"sidecar\",\"securityContext\":{\"runAsUser\":7}}]}",
             &p);
    assert_int_equal(p.umode, 0600);
    assert_int_equal(p.uid, 1000);
    assert_int_equal(p.gid, -1);
    perms_of("{\"securityContext\":{\"runAsUser\":1000,\"fsGroup\":2000},\"containers\":[{"
             "\"name\":\"app\"," MOUNTS "}]}",
             &p);
    assert_int_equal(p.umode, 0660);
    assert_int_equal(p.uid, 1000);
    assert_int_equal(p.gid, 2000);
    /* Two users of the region: the app's, and the worker's image default (unknown). */
    perms_of("{\"containers\":[{\"name\":\"app\",\"securityContext\":{\"runAsUser\":1000}," MOUNTS
             "},{\"name\":\"tf-worker\"," MOUNTS "}]}",
             &p);
    assert_int_equal(p.umode, 0600);
    assert_int_equal(p.uid, -1);
    /* ... and with the webhook's group. */
    perms_of("{\"securityContext\":{\"supplementalGroups\":[60515]},\"containers\":[{"
             "\"name\":\"app\",\"securityContext\":{\"runAsUser\":1000}," MOUNTS
             "},{\"name\":\"tf-worker\"," MOUNTS "}]}",
             &p);
    assert_int_equal(p.umode, 0660);
    assert_int_equal(p.uid, -1);
    assert_int_equal(p.gid, TF_SHM_POD_GROUP);
    /* Different users sharing a group. */
    perms_of("{\"securityContext\":{\"runAsGroup\":3000},\"containers\":[{\"name\":\"a\","
             "\"securityContext\":{\"runAsUser\":1000}," MOUNTS "},{\"name\":\"b\","
             "\"securityContext\":{\"runAsUser\":1001}," MOUNTS "}]}",
             &p);
    assert_int_equal(p.umode, 0660);
    assert_int_equal(p.uid, -1);
    assert_int_equal(p.gid, 3000);
    /* Garbage ids are unknown ids. */
    perms_of("{\"securityContext\":{\"runAsUser\":\"root\",\"fsGroup\":-4},\"containers\":[{"
             "\"name\":\"app\"," MOUNTS "}]}",
             &p);
    assert_int_equal(p.umode, 0600);
    assert_int_equal(p.uid, -1);
}

static void tflops_limits_convert_per_gpu_in_gpu_ids_order(void **state)
{
    struct tf_hv_k8s_pod p;
    char err[512];
    /* 60.5 TFLOPS: 19.39 % of an A100 (312), 50 % of an L4 (121). No VRAM limit: not
     * enforced. No isolation annotation: soft by default. Default workload: the pod. */
    assert_int_equal(plan(pod("n1", L4 ", " A100, "\"tensor-fusion.ai/tflops-limit\":\"60.5\""), &p,
                          err, sizeof(err)),
                     1);
    assert_int_equal(p.ngpu, 2);
    assert_string_equal(p.uuids[0], L4);
    assert_string_equal(p.uuids[1], A100);
    assert_string_equal(p.workload, "train");
    assert_int_equal(p.cfg.dev[0].compute_limit_bp, 5000);
    assert_int_equal(p.cfg.dev[1].compute_limit_bp, 1939);
    assert_int_equal(p.cfg.dev[0].flags, TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT);
    assert_int_equal(p.cfg.dev[0].mem_total, 24 * GiB);
    /* Only a VRAM limit: compute is not capped. */
    assert_int_equal(
        plan(pod("n1", A100, "\"tensor-fusion.ai/vram-limit\":\"512Mi\""), &p, err, sizeof(err)),
        1);
    assert_int_equal(p.cfg.dev[0].flags, TF_SHM_DEV_PRESENT | TF_SHM_DEV_VRAM_LIMIT);
    assert_int_equal(p.cfg.dev[0].vram_limit, 512 << 20);
    /* A request alone caps nothing (no limit is derived from it, as upstream). */
    assert_int_equal(plan(pod("n1", A100, "\"tensor-fusion.ai/compute-percent-request\":\"25\""),
                          &p, err, sizeof(err)),
                     1);
    assert_int_equal(p.cfg.dev[0].flags, TF_SHM_DEV_PRESENT);
}

/* Hard isolation and remote workers: the pod's tf-worker enforces the limits, reading them
 * from the region (tf-worker --limits-region), so those pods get one like soft pods. */
static void hard_pods_and_remote_workers_get_a_region_for_their_tf_worker(void **state)
{
    struct tf_hv_k8s_pod p;
    char err[512];
    assert_int_equal(plan(pod("n1", A100,
                              "\"tensor-fusion.ai/isolation\":\"hard\",\"tensor-fusion.ai/"
                              "vram-limit\":\"1Gi\",\"tensor-fusion.ai/compute-percent-limit\":"
                              "\"30\""),
                          &p, err, sizeof(err)),
                     1);
    assert_int_equal(p.cfg.dev[0].vram_limit, 1 << 30);
    assert_int_equal(p.cfg.dev[0].compute_limit_bp, 3000);
    json_object *worker = pod("n1", A100, "\"tensor-fusion.ai/vram-limit\":\"2Gi\"");
    json_object_object_add(
        json_object_object_get(json_object_object_get(worker, "metadata"), "labels"),
        "tensor-fusion.ai/component", json_object_new_string("worker"));
    assert_int_equal(plan(worker, &p, err, sizeof(err)), 1);
    assert_int_equal(p.cfg.dev[0].vram_limit, (uint64_t)2 << 30);
    assert_string_equal(p.key, "ml/train");
}

static void pods_that_need_no_region_get_none(void **state)
{
    struct tf_hv_k8s_pod p;
    char err[512];
    const char *lim = "\"tensor-fusion.ai/vram-limit\":\"1Gi\"";
    assert_int_equal(plan(pod("n2", A100, lim), &p, err, sizeof(err)), 0); /* another node */
    assert_int_equal(plan(pod("n1", NULL, lim), &p, err, sizeof(err)), 0); /* not bound yet */
    assert_int_equal(
        plan(pod("n1", A100, "\"tensor-fusion.ai/isolation\":\"shared\""), &p, err, sizeof(err)),
        0);
    assert_int_equal(plan(pod("n1", A100,
                              "\"tensor-fusion.ai/is-local-gpu\":\"false\",\"tensor-fusion.ai/"
                              "vram-limit\":\"1Gi\""),
                          &p, err, sizeof(err)),
                     0);
    json_object *done = pod("n1", A100, lim);
    json_object_object_add(json_object_object_get(done, "status"), "phase",
                           json_object_new_string("Succeeded"));
    assert_int_equal(plan(done, &p, err, sizeof(err)), 0);
    json_object *failed = pod("n1", A100, lim);
    json_object_object_add(json_object_object_get(failed, "status"), "phase",
                           json_object_new_string("Failed"));
    assert_int_equal(plan(failed, &p, err, sizeof(err)), 0);
    /* Pods of other components (the hypervisor's own, ...) get none. */
    json_object *other = pod("n1", A100, lim);
    json_object_object_add(
        json_object_object_get(json_object_object_get(other, "metadata"), "labels"),
        "tensor-fusion.ai/component", json_object_new_string("hypervisor"));
    assert_int_equal(plan(other, &p, err, sizeof(err)), 0);
    /* Terminating pods keep their region while their containers stop. */
    json_object *term = pod("n1", A100, lim);
    json_object_object_add(json_object_object_get(term, "metadata"), "deletionTimestamp",
                           json_object_new_string("2025-01-01T00:00:00Z"));
    assert_int_equal(plan(term, &p, err, sizeof(err)), 1);
}

static void pods_that_cannot_have_a_region_say_why(void **state)
{
    struct tf_hv_k8s_pod p;
    char err[512];
    const char *lim = "\"tensor-fusion.ai/vram-limit\":\"1Gi\"";
    assert_int_equal(
        plan(pod("n1", "GPU-ffffffff-1111-2222-3333-444444444444", lim), &p, err, sizeof(err)),
        TF_EINVAL);
    assert_non_null(strstr(err, "is not a GPU of node n1"));
    /* Absent devices do not count. */
    assert_int_equal(
        plan(pod("n1", "GPU-dddddddd-1111-2222-3333-444444444444", lim), &p, err, sizeof(err)),
        TF_EINVAL);
    assert_int_equal(plan(pod("n1", A100 "," A100, lim), &p, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "listed twice"));
    assert_int_equal(plan(pod("n1", " , ", lim), &p, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "names no GPU"));
    assert_int_equal(plan(pod("n1", "GPU-cccccccc-1111-2222-3333-444444444444",
                              "\"tensor-fusion.ai/tflops-limit\":\"10\""),
                          &p, err, sizeof(err)),
                     TF_EINVAL);
    assert_non_null(strstr(err, "no known TFLOPS"));
    /* The spec's own message, naming the key. */
    int rc = plan(pod("n1", A100, "\"tensor-fusion.ai/vram-limit\":\"4Gb\""), &p, err, sizeof(err));
    assert_true(rc < 0);
    assert_non_null(strstr(err, "tensor-fusion.ai/vram-limit"));
    assert_string_equal(p.key, "ml/train");
    char many[2048] = "";
    for (int i = 0; i < 17; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sGPU-%08x", i ? "," : "", i);
    assert_int_equal(plan(pod("n1", many, lim), &p, err, sizeof(err)), TF_ERANGE);
    json_object *bad = pod("n1", A100, lim);
    json_object_object_add(json_object_object_get(bad, "metadata"), "name",
                           json_object_new_string(".."));
    assert_int_equal(plan(bad, &p, err, sizeof(err)), TF_EINVAL);
}

static int want(json_object *p, struct tf_hv_k8s_part_want *out, char *err, size_t errlen)
{
    int rc = tf_hv_k8s_part_want(p, "n1", devs, NDEV, out, err, errlen);
    json_object_put(p);
    return rc;
}

#define PART                                                                                       \
    "\"tensor-fusion.ai/isolation\":\"partitioned\",\"tensor-fusion.ai/tflops-request\":\"10\","

static void a_partitioned_pod_wants_its_template_on_each_gpu(void **state)
{
    struct tf_hv_k8s_part_want w;
    char err[256];
    assert_int_equal(want(pod("n1", A100, PART "\"tensor-fusion.ai/partition\":\"3g.40gb\""), &w,
                          err, sizeof(err)),
                     1);
    assert_string_equal(w.key, "ml/train");
    assert_string_equal(w.uid, "u-1");
    assert_string_equal(w.tpl, "3g.40gb");
    assert_int_equal(w.ngpu, 1);
    assert_string_equal(w.gpus[0].uuid, A100);
    assert_int_equal(w.gpus[0].index, 0);
    assert_int_equal(w.gpus[0].slices, 3);
    assert_int_equal(w.gpus[0].vram, 40 * GiB);
}

static void pods_without_a_partition_want_none_and_bad_ones_say_why(void **state)
{
    struct tf_hv_k8s_part_want w;
    char err[256];
    /* Not yet scheduled with a template, bound elsewhere, soft, or finished: none. */
    assert_int_equal(want(pod("n1", A100, PART "\"x\":\"y\""), &w, err, sizeof(err)), 0);
    assert_int_equal(want(pod("n2", A100, PART "\"tensor-fusion.ai/partition\":\"3g.40gb\""), &w,
                          err, sizeof(err)),
                     0);
    assert_int_equal(want(pod("n1", A100,
                              "\"tensor-fusion.ai/tflops-request\":\"10\","
                              "\"tensor-fusion.ai/partition\":\"3g.40gb\""),
                          &w, err, sizeof(err)),
                     0);
    /* A template the GPU's model does not have, a GPU of another node or model. */
    assert_int_equal(want(pod("n1", A100, PART "\"tensor-fusion.ai/partition\":\"3g.20gb\""), &w,
                          err, sizeof(err)),
                     TF_EINVAL);
    assert_non_null(strstr(err, "not a partition template of its model"));
    assert_int_equal(want(pod("n1", L4, PART "\"tensor-fusion.ai/partition\":\"1g.10gb\""), &w, err,
                          sizeof(err)),
                     TF_EINVAL);
    assert_non_null(strstr(err, L4));
    assert_int_equal(want(pod("n1", "GPU-nope", PART "\"tensor-fusion.ai/partition\":\"1g.10gb\""),
                          &w, err, sizeof(err)),
                     TF_EINVAL);
    assert_non_null(strstr(err, "not a GPU of this node"));
}

static void the_gpu_instance_profile_matches_slices_and_memory(void **state)
{
    nvmlGpuInstanceProfileInfo_t p[NVML_GPU_INSTANCE_PROFILE_COUNT];
    memset(p, 0, sizeof(p));
    /* An H100 80GB as NVML reports it: memory a little under the nominal size. */
    p[NVML_GPU_INSTANCE_PROFILE_1_SLICE] =
        (nvmlGpuInstanceProfileInfo_t){.id = 0, .sliceCount = 1, .memorySizeMB = 9856};
    p[NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2] =
        (nvmlGpuInstanceProfileInfo_t){.id = 9, .sliceCount = 1, .memorySizeMB = 19968};
    p[NVML_GPU_INSTANCE_PROFILE_3_SLICE] =
        (nvmlGpuInstanceProfileInfo_t){.id = 2, .sliceCount = 3, .memorySizeMB = 40192};
    int n = NVML_GPU_INSTANCE_PROFILE_COUNT;
    assert_int_equal(tf_hv_mig_pick(p, n, 1, 10 * GiB), NVML_GPU_INSTANCE_PROFILE_1_SLICE);
    assert_int_equal(tf_hv_mig_pick(p, n, 1, 20 * GiB), NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2);
    assert_int_equal(tf_hv_mig_pick(p, n, 3, 40 * GiB), NVML_GPU_INSTANCE_PROFILE_3_SLICE);
    assert_int_equal(tf_hv_mig_pick(p, n, 2, 20 * GiB), -1); /* no such profile */
    assert_int_equal(tf_hv_mig_pick(p, n, 3, 80 * GiB), -1); /* memory too far off */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_objects_are_named_after_the_lowercased_uuid),
        cmocka_unit_test(gpu_status_carries_what_the_extender_reads),
        cmocka_unit_test(a_patch_is_needed_only_when_an_owned_member_differs),
        cmocka_unit_test(a_soft_pod_gets_its_percent_and_vram_limits),
        cmocka_unit_test(the_usage_part_belongs_to_the_pods_user),
        cmocka_unit_test(tflops_limits_convert_per_gpu_in_gpu_ids_order),
        cmocka_unit_test(pods_that_need_no_region_get_none),
        cmocka_unit_test(hard_pods_and_remote_workers_get_a_region_for_their_tf_worker),
        cmocka_unit_test(pods_that_cannot_have_a_region_say_why),
        cmocka_unit_test(a_partitioned_pod_wants_its_template_on_each_gpu),
        cmocka_unit_test(pods_without_a_partition_want_none_and_bad_ones_say_why),
        cmocka_unit_test(the_gpu_instance_profile_matches_slices_and_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
