/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod indexes: how a partitioned pod's containers find their MIG device through the kubelet's
 * device plugin API, whose Allocate request names devices, never the pod (upstream
 * TensorFusion's scheme, same names and encoding).
 *
 * At admission the webhook gives the pod an index I in 1..TF_PODIDX_MAX, written as the
 * annotation tensor-fusion.ai/index: "<I>", and asks for it as an extended resource on each
 * GPU container: tensor-fusion.ai/index_<k>: <n> with
 *     k = (I - 1) / TF_PODIDX_MOD   (one lower-case hex digit, 0..f)
 *     n = (I - 1) % TF_PODIDX_MOD + 1   (1..TF_PODIDX_MOD)
 * Every GPU node's hypervisor runs one device plugin per k advertising
 * tensor-fusion.ai/index_<k> as TF_PODIDX_DEVICES counting devices ("<k>-<j>", j from 1); the
 * kubelet hands a container n of them, so Allocate knows I = n + k * TF_PODIDX_MOD from its
 * resource and the number of device IDs, and looks up the pod of this node holding I.
 *
 * TF_PODIDX_DEVICES = MOD * (MOD + 1) / 2 (36, upstream's capacity): enough for one container
 * of each of the MOD indexes of a bucket at once.
 *
 * The allocator (tf_podidx_alloc) keeps indexes unique among the cluster's live pods: the
 * ones held by pods that exist and have not finished (rebuilt from their annotations, so a
 * restarted controller loses nothing) plus the ones it handed out recently for pods that do
 * not show up in the cache yet (admission runs before the pod is stored). Pure logic, no I/O;
 * a tf_podidx_alloc is not thread-safe (callers lock).
 */
#ifndef TF_CORE_PODINDEX_H
#define TF_CORE_PODINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_PODIDX_ANNOTATION "tensor-fusion.ai/index"
#define TF_PODIDX_RESOURCE_PREFIX "tensor-fusion.ai/index_"
#define TF_PODIDX_MOD 8
#define TF_PODIDX_KEYS 16
#define TF_PODIDX_MAX (TF_PODIDX_MOD * TF_PODIDX_KEYS) /* 128 */
#define TF_PODIDX_DEVICES (TF_PODIDX_MOD * (TF_PODIDX_MOD + 1) / 2)
/* How long an index handed out at admission stays reserved without its pod in the cache. */
#define TF_PODIDX_RESERVE_MS (120 * 1000)

/* Index I (1..TF_PODIDX_MAX) -> bucket *K and count *N. TF_ERANGE when out of range. */
int tf_podidx_encode(int index, int *k, int *n);
/* Bucket K (0..KEYS-1) and count N (1..MOD) -> the index, or TF_ERANGE. */
int tf_podidx_decode(int k, int n);
/* "tensor-fusion.ai/index_<k>" into BUF (LEN >= 32). TF_ERANGE when K is out of range. */
int tf_podidx_resource(int k, char *buf, size_t len);
/* K of resource name NAME ("tensor-fusion.ai/index_<one hex digit>"), or -1. */
int tf_podidx_parse_resource(const char *name);
/* The index an annotation value names ("1".."128", decimal, nothing else), or -1. */
int tf_podidx_parse_annotation(const char *value);
/* Device J (1..TF_PODIDX_DEVICES) of bucket K: "<k>-<j>" (decimal, as upstream) into BUF. */
int tf_podidx_device_id(int k, int j, char *buf, size_t len);
/* Whether ID is one of bucket K's device IDs. */
bool tf_podidx_is_device(int k, const char *id);

struct tf_podidx_alloc {
    int64_t reserved_until[TF_PODIDX_MAX + 1]; /* per index, ms; 0 = not reserved */
    bool live[TF_PODIDX_MAX + 1];              /* held by a live pod (last tf_podidx_live) */
    int cursor;                                /* the last index handed out */
};

void tf_podidx_init(struct tf_podidx_alloc *a);
/* Replaces the live set with LIVE[0..N) (indexes of existing pods that have not finished;
 * out-of-range values ignored). A reservation whose pod is now seen is dropped: the pod
 * holds it from then on, until it finishes. */
void tf_podidx_live(struct tf_podidx_alloc *a, const int *live, size_t n);
/* Hands out the next free index after the last one (round robin, so a just-freed index is
 * reused last) and reserves it until NOW_MS + TF_PODIDX_RESERVE_MS. TF_ENOSPC when all
 * TF_PODIDX_MAX are taken. */
int tf_podidx_take(struct tf_podidx_alloc *a, int64_t now_ms);
/* How many indexes are taken at NOW_MS. */
int tf_podidx_used(const struct tf_podidx_alloc *a, int64_t now_ms);

#endif
