/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: AdmissionReview v1 decoding (tf_admission_decode) must never crash or
 * leak on what arrives at the webhook, and a decoded request must encode a response.
 */
#include "controller/admission.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_admission_req r;
    char err[256];
    if (tf_admission_decode((const char *)data, size, &r, err, sizeof(err)) == 0) {
        if (!r.uid || !r.operation || !r.kind)
            abort();
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
