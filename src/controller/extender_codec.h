/* SPDX-License-Identifier: Apache-2.0
 *
 * kube-scheduler extender wire types (k8s.io/kube-scheduler/extender/v1), JSON with the Go
 * field names (PascalCase, no json tags upstream):
 *   ExtenderArgs          {"Pod": Pod, "Nodes": NodeList | null, "NodeNames": [string] | null}
 *                         (nodeCacheCapable: true -> NodeNames; false -> Nodes)
 *   ExtenderFilterResult  {"Nodes"|"NodeNames", "FailedNodes": {node: reason},
 *                          "FailedAndUnresolvableNodes": {node: reason}, "Error": string}
 *   HostPriorityList      [{"Host": string, "Score": int}]   (scores 0..10)
 *   ExtenderBindingArgs   {"PodName", "PodNamespace", "PodUID", "Node"}
 *   ExtenderBindingResult {"Error": string}
 * Decoders reject anything else with a message naming the field. Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_EXTENDER_CODEC_H
#define TF_CONTROLLER_EXTENDER_CODEC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define TF_EXT_MAX_NODES 100000

struct tf_ext_args {
    json_object *root;       /* owned */
    json_object *pod;        /* borrowed from ROOT */
    const char **node_names; /* N_NODES names, borrowed from ROOT (array owned) */
    json_object **nodes;     /* when the scheduler sent a NodeList: the Node objects */
    size_t n_nodes;
    bool node_list; /* true when the scheduler sent Nodes (not nodeCacheCapable) */
};

int tf_ext_decode_args(const char *body, size_t len, struct tf_ext_args *args, char *err,
                       size_t errlen);
void tf_ext_args_free(struct tf_ext_args *args);

/* Filter result for ARGS: node I passes when REASONS[I] is NULL, else it fails with that
 * reason (in FailedAndUnresolvableNodes when UNRESOLVABLE[I], which may be NULL, says so:
 * preemption cannot help). ERROR (may be NULL) is the scheduler-visible error. New string. */
char *tf_ext_encode_filter(const struct tf_ext_args *args, const char *const *reasons,
                           const bool *unresolvable, const char *error);
/* HostPriorityList for the N_NODES nodes of ARGS; scores are clamped to 0..10. */
char *tf_ext_encode_priorities(const struct tf_ext_args *args, const int *scores);

struct tf_ext_binding {
    json_object *root;                                     /* owned */
    const char *pod_name, *pod_namespace, *pod_uid, *node; /* borrowed */
};

int tf_ext_decode_binding(const char *body, size_t len, struct tf_ext_binding *b, char *err,
                          size_t errlen);
void tf_ext_binding_free(struct tf_ext_binding *b);
/* ExtenderBindingResult; ERROR NULL or "" = success. */
char *tf_ext_encode_binding_result(const char *error);

#endif
