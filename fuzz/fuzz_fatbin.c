/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the fatbin container parser and the module-image functions (src/fatbin),
 * on what an application could hand cuModuleLoadData. Walks every entry, names it, picks the
 * PTX for a few compute capabilities and unpacks it (LZ4 / Zstandard included); locates the
 * input as an image of known length (PTX, cubin or container) and sizes its module-scope
 * variables, and scans it as PTX text. Invariants: entries stay inside the input, an unpacked
 * image is NUL-terminated at its length, a located image lies inside the input, errors carry
 * a message. Seeds: nvcc 13 containers and a cubin (fuzz/corpus/fatbin/).
 */
#include "common/err.h"
#include "fatbin/fatbin.h"
#include "fatbin/image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    char err[256], archs[512], name[48];
    struct tf_fatbin_iter it;
    struct tf_fatbin_entry e;
    if (tf_fatbin_open(&it, data, size, err, sizeof(err)) == 0) {
        int rc;
        while ((rc = tf_fatbin_next(&it, &e, err, sizeof(err))) == 1) {
            if (e.data < data || e.data + e.data_len > data + size)
                abort();
            tf_fatbin_entry_name(&e, name, sizeof(name));
            if (!memchr(name, 0, sizeof(name)))
                abort();
        }
        if (rc < 0 && !err[0])
            abort();
    }
    static const unsigned ccs[] = {75, 80, 89, 90, 100, TF_FATBIN_ANY_DEVICE};
    for (size_t i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
        err[0] = 0;
        int rc = tf_fatbin_pick_ptx(data, size, ccs[i], &e, archs, sizeof(archs), err, sizeof(err));
        if (!memchr(archs, 0, sizeof(archs)))
            abort();
        if (rc == TF_EPARSE && !err[0])
            abort();
        if (rc != 0)
            continue;
        char *text;
        size_t len;
        rc = tf_fatbin_unpack(&e, &text, &len, err, sizeof(err));
        if (rc == 0) {
            if (text[len] != 0 || len > TF_FATBIN_MAX_UNPACKED)
                abort();
            free(text);
        } else if (rc != TF_EPARSE && rc != TF_ENOTSUP && rc != TF_ENOMEM) {
            abort();
        }
    }
    struct tf_image im;
    err[0] = 0;
    if (size == 0) /* 0 would mean "known by pointer only" */
        return 0;
    if (tf_image_locate(data, size, &im, err, sizeof(err)) == 0) {
        if (im.start != data || im.size > size)
            abort();
        uint64_t bytes;
        int rc = tf_image_globals(&im, &bytes, err, sizeof(err));
        if (rc != 0 && rc != TF_EPARSE && rc != TF_ENOTSUP && rc != TF_ENOMEM)
            abort();
    } else if (!err[0]) {
        abort();
    }
    (void)tf_ptx_globals((const char *)data, size);
    return 0;
}
