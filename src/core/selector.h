/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes LabelSelector matching (metav1.LabelSelector JSON: matchLabels and
 * matchExpressions with In, NotIn, Exists, DoesNotExist) and NodeSelector matching. Used by the
 * auto-migration scope and by pool node selectors and isolationModeRules (in libtfcore so the
 * cluster model can use it). Pure and thread-safe.
 */
#ifndef TF_CORE_SELECTOR_H
#define TF_CORE_SELECTOR_H

#include <json-c/json.h>
#include <stdbool.h>

/* True when LABELS (an object of strings, may be NULL) satisfies SEL. A NULL selector matches
 * nothing; an empty one ({}) matches everything, as in Kubernetes. An unknown operator never
 * matches. */
bool tf_selector_match(json_object *sel, json_object *labels);

/* True when the node named NODE_NAME with LABELS satisfies the NodeSelector SEL
 * ({nodeSelectorTerms: [...]}, as a GPUPool's nodeManagerConfig.nodeSelector): the terms are
 * ORed, a term's matchExpressions (In, NotIn, Exists, DoesNotExist, Gt, Lt on labels) and
 * matchFields (In, NotIn on metadata.name) ANDed, as kube-scheduler matches them. A NULL
 * selector, no terms or an empty term match nothing; malformed requirements never match. */
bool tf_node_selector_match(json_object *sel, const char *node_name, json_object *labels);

#endif
