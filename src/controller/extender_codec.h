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
 *
 * Hot path: with 5,000 candidate nodes the ExtenderArgs is ~60 KB of node names, and a json-c
 * tree of it costs a string object per name. tf_ext_decode_args first tries a strict scan
 * (RFC 8259 JSON, names without escapes, each top-level key once, Pod parsed by json-c from its
 * own span, NodeNames copied into one buffer and each name ended in place), and leaves every other
 * input (NodeList mode, escapes, duplicate keys, deep nesting, anything json-c may read its own
 * way) to the json-c tree decoder, tf_ext_decode_args_tree, so both give the same result on every
 * input (the fuzzer compares them). Likewise tf_ext_encode_filter writes the NodeNames result as
 * text and falls back to tf_ext_encode_filter_tree (json-c) when a failed node name repeats; the
 * bytes are identical.
 */
#ifndef TF_CONTROLLER_EXTENDER_CODEC_H
#define TF_CONTROLLER_EXTENDER_CODEC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_EXT_MAX_NODES 100000

struct tf_ext_args {
    json_object *root;       /* owned */
    json_object *pod;        /* borrowed from ROOT */
    const char **node_names; /* N_NODES names, borrowed from ROOT (array owned) */
    json_object **nodes;     /* when the scheduler sent a NodeList: the Node objects */
    size_t n_nodes;
    bool node_list;        /* true when the scheduler sent Nodes (not nodeCacheCapable) */
    char *names_buf;       /* owned: the names' bytes when the strict scan decoded them */
    size_t *name_lens;     /* owned, may be NULL: strlen of each name when known */
    uint32_t *name_hashes; /* owned, may be NULL: tf_strmap_hash of each name (core/strmap.h),
                              computed while scanning, for lookups without a second pass */
    bool names_plain;      /* names hold nothing JSON escapes (written as they are) */
    bool names_distinct;   /* set by the caller when it knows no two names are equal (the
                              filter writer then skips its own check) */
    const char *pod_text;  /* the strict scan's: the Pod's bytes in the body (borrowed from
                              it), POD_LEN of them; NULL after the tree decoder */
    size_t pod_len;
    const char *names_text; /* the strict scan's, when it decoded NodeNames: the array's bytes
                               in the body (borrowed), NAMES_TEXT_LEN of them */
    size_t names_text_len;
    bool pod_expected;   /* tf_ext_decode_args_expect: the Pod was the expected bytes (POD and
                            ROOT are NULL: the caller knows what they decode to) */
    bool names_expected; /* likewise NodeNames (NODE_NAMES NULL, N_NODES 0) */
};

int tf_ext_decode_args(const char *body, size_t len, struct tf_ext_args *args, char *err,
                       size_t errlen);
/* What a caller expects a body to hold, from an earlier one: the bytes of its Pod and of its
 * NodeNames array (either may be NULL). kube-scheduler sends /prioritize the same Pod as the
 * /filter before it and, as NodeNames, the nodes that filter let through, in its order: the
 * filter's own NodeNames text. */
struct tf_ext_expect {
    const char *pod, *names;
    size_t pod_len, names_len;
};
/* tf_ext_decode_args, except that a Pod or NodeNames of exactly EX's bytes (when the strict
 * scan reads the body) is compared, not decoded: POD_EXPECTED / NAMES_EXPECTED say so. */
int tf_ext_decode_args_expect(const char *body, size_t len, const struct tf_ext_expect *ex,
                              struct tf_ext_args *args, char *err, size_t errlen);
/* The json-c tree decoder alone (the reference of the strict scan; NodeList mode). */
int tf_ext_decode_args_tree(const char *body, size_t len, struct tf_ext_args *args, char *err,
                            size_t errlen);
void tf_ext_args_free(struct tf_ext_args *args);

/* Filter result for ARGS: node I passes when REASONS[I] is NULL, else it fails with that
 * reason (in FailedAndUnresolvableNodes when UNRESOLVABLE[I], which may be NULL, says so:
 * preemption cannot help). ERROR (may be NULL) is the scheduler-visible error. New string. */
char *tf_ext_encode_filter(const struct tf_ext_args *args, const char *const *reasons,
                           const bool *unresolvable, const char *error);
/* tf_ext_encode_filter, also saying where in the text the NodeNames array is: SPAN[0] its
 * offset (the '['), SPAN[1] its length through the ']' (0, 0 when written by json-c). */
char *tf_ext_encode_filter_span(const struct tf_ext_args *args, const char *const *reasons,
                                const bool *unresolvable, const char *error, size_t span[2]);
/* The same through a json-c tree (the reference of the text writer). */
char *tf_ext_encode_filter_tree(const struct tf_ext_args *args, const char *const *reasons,
                                const bool *unresolvable, const char *error);
/* HostPriorityList for the N_NODES nodes of ARGS; scores are clamped to 0..10 and the nodes
 * scoring 0 left out (kube-scheduler counts a host it was not given as 0). */
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
