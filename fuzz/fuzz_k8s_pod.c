/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the node agent's reading of a Pod from the API server (watch events are
 * outside input): the input is the pod's JSON, planned against a fixed node of two GPUs. The
 * plan must never crash or leak; a region it asks for must pass the shm configuration check
 * and name only the node's GPUs; partitions it asks for name only the node's GPUs with a
 * template of their model. The GPU object name is derived from the input's first line.
 */
#include "hypervisor/k8s_objects.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct tf_hv_device devs[] = {
    {.uuid = "GPU-aaaaaaaa-1111-2222-3333-444444444444",
     .index = 0,
     .name = "NVIDIA A100-SXM4-80GB",
     .model = "A100-80GB",
     .tflops_milli = 312000,
     .vram_bytes = INT64_C(80) << 30,
     .present = true},
    {.uuid = "GPU-bbbbbbbb-1111-2222-3333-444444444444",
     .index = 1,
     .name = "Unknown GPU",
     .vram_bytes = INT64_C(16) << 30,
     .present = true},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char name[256], line[300];
    size_t n = strcspn(text, "\n");
    if (n < sizeof(line)) {
        memcpy(line, text, n);
        line[n] = '\0';
        if (tf_hv_k8s_gpu_name(line, name, sizeof(name)) && strlen(name) != n)
            abort();
    }
    json_object *pod = json_tokener_parse(text);
    free(text);
    if (!pod)
        return 0;
    static struct tf_hv_k8s_pod plan;
    char err[512];
    int rc = tf_hv_k8s_pod_plan(pod, "n1", devs, 2, &plan, err, sizeof(err));
    if (rc == 1) {
        if (tf_shm_check_config(&plan.cfg, err, sizeof(err)) != 0 ||
            plan.cfg.ndev != (uint32_t)plan.ngpu || plan.ngpu < 1)
            abort();
        for (int i = 0; i < plan.ngpu; i++)
            if (strcmp(plan.uuids[i], devs[0].uuid) && strcmp(plan.uuids[i], devs[1].uuid))
                abort();
    }
    static struct tf_hv_k8s_part_want want;
    rc = tf_hv_k8s_part_want(pod, "n1", devs, 2, &want, err, sizeof(err));
    if (rc == 1) {
        if (want.ngpu < 1 || !want.tpl[0])
            abort();
        for (int i = 0; i < want.ngpu; i++)
            if (strcmp(want.gpus[i].uuid, devs[0].uuid) || want.gpus[i].slices < 1 ||
                want.gpus[i].slices > 7 || want.gpus[i].vram <= 0 ||
                want.gpus[i].vram > devs[0].vram_bytes)
                abort(); /* only the A100 has partitions */
    }
    json_object_put(pod);
    return 0;
}
