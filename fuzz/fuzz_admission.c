/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: AdmissionReview v1 decoding (tf_admission_decode) must never crash or
 * leak on what arrives at the webhook, and a decoded request must encode a response; the
 * system-annotation guard (sysguard.h) and the allocation-signature check (allocsig.h) run
 * on whatever objects it carries.
 */
#include "controller/admission.h"
#include "controller/allocsig.h"
#include "controller/sysguard.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_admission_req r;
    char err[256] = "";
    if (tf_admission_decode((const char *)data, size, &r, err, sizeof(err)) == 0) {
        if (!r.uid || !r.operation || !r.kind)
            abort();
        if (r.object) {
            static const char key[] = "fuzzing-key-fuzzing-key-32-bytes";
            struct tf_allocsig sig;
            if (tf_allocsig_init(&sig, key, 32))
                abort();
            (void)tf_allocsig_verify(&sig, r.object);
            char msg[512];
            if (r.old_object)
                (void)tf_sysguard_update(r.old_object, r.object, msg, sizeof(msg));
            (void)tf_sysguard_reserved(r.object, msg, sizeof(msg));
            json_object *warnings = json_object_new_array();
            tf_sysguard_strip(r.object, warnings);
            json_object_put(warnings);
            /* what the guard leaves carries no system key */
            json_object *a = NULL;
            if (json_object_object_get_ex(r.object, "metadata", &a) &&
                json_object_is_type(a, json_type_object) &&
                json_object_object_get_ex(a, "annotations", &a) &&
                json_object_is_type(a, json_type_object)) {
                json_object_object_foreach(a, k, v)
                {
                    (void)v;
                    if (tf_sysguard_system_annotation(k))
                        abort();
                }
            }
        }
        char *out = tf_admission_encode(r.uid, false, NULL, 400, err, NULL);
        if (!out)
            abort();
        free(out);
        tf_admission_req_free(&r);
    } else if (r.root) {
        abort();
    }
    return 0;
}
