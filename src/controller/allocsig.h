/* SPDX-License-Identifier: Apache-2.0
 *
 * Allocation signatures: proof that a pod's GPU allocation was made by this controller.
 *
 * The scheduler extender records a placement on the pod as annotations (tensor-fusion.ai/
 * gpu-ids, container-gpus, gpu-ids-<container>, and partition for a partitioned pod: the
 * template it holds, which the user may have asked for with that same key) and, next to them,
 * tensor-fusion.ai/allocation-signature: "v1:" + hex HMAC-SHA256, under a key only the
 * controller holds (the Secret tensor-fusion-allocation-key in its namespace), of
 *
 *   "tf-allocation-v1" NUL namespace NUL name NUL metadata.uid NUL node NUL
 *   then, for every allocation annotation present, in byte order of the keys: key NUL value NUL
 *
 * The extender's state rebuild and the reconcilers (GPU booking, worker pairing) count an
 * allocation only when its signature verifies for the pod as it is now (its uid, its
 * spec.nodeName, its allocation annotations). A pod that brings its own gpu-ids — admitted
 * while the webhook was bypassed, or from before the webhook's guard — or copies another
 * pod's annotations (other uid) books nothing and is never paired. Pure and thread-safe
 * (the key is read-only after tf_allocsig_init).
 */
#ifndef TF_CONTROLLER_ALLOCSIG_H
#define TF_CONTROLLER_ALLOCSIG_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define TF_ANN_ALLOCATION_SIGNATURE "tensor-fusion.ai/allocation-signature"
/* The Secret (controller namespace) and its data key holding the key, base64 as usual. */
#define TF_ALLOCSIG_SECRET "tensor-fusion-allocation-key"
#define TF_ALLOCSIG_SECRET_KEY "key"
#define TF_ALLOCSIG_KEY_MIN 16
#define TF_ALLOCSIG_KEY_MAX 64
/* "v1:" + 64 hex digits + NUL */
#define TF_ALLOCSIG_LEN 68

struct tf_allocsig {
    unsigned char key[TF_ALLOCSIG_KEY_MAX];
    size_t keylen;
};

/* Copies KEY[0..LEN) (TF_ALLOCSIG_KEY_MIN..TF_ALLOCSIG_KEY_MAX bytes). 0 or TF_EINVAL. */
int tf_allocsig_init(struct tf_allocsig *s, const void *key, size_t len);

/* True when K is one of the annotations a signature covers (gpu-ids, container-gpus,
 * gpu-ids-<container>, partition). */
bool tf_allocsig_covers(const char *k);

/* Signs the allocation of pod NS/NAME (uid UID) on NODE recorded by ANNS (an object of
 * annotation -> string; keys it does not cover are ignored). OUT receives the annotation's
 * value. 0, TF_EINVAL (a missing argument) or TF_ENOMEM. */
int tf_allocsig_sign(const struct tf_allocsig *s, const char *ns, const char *name, const char *uid,
                     const char *node, json_object *anns, char out[TF_ALLOCSIG_LEN]);

/* Whether POD's allocation (spec.nodeName and its covered annotations, as they are now)
 * carries a valid signature. S NULL: signatures are not checked (tools that load a cluster
 * from files) and every pod passes. */
bool tf_allocsig_verify(const struct tf_allocsig *s, json_object *pod);

#endif
