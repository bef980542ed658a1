/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: loads a real nvcc-made fatbin or cubin from fuzz/corpus/fatbin/ (the fuzzer's
 * seeds, shared by the fatbin, image and simulated-driver tests) into an 8-byte aligned
 * buffer the caller frees. Needs cmocka and TF_SRCDIR.
 */
#ifndef TF_TESTS_FATBIN_SEEDS_H
#define TF_TESTS_FATBIN_SEEDS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct blob {
    uint8_t *p;
    size_t n;
};

static inline struct blob seed_load(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/fuzz/corpus/fatbin/%s", getenv("TF_SRCDIR"), name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct blob b = {aligned_alloc(8, 1 << 16), 0};
    assert_non_null(b.p);
    b.n = fread(b.p, 1, 1 << 16, f);
    fclose(f);
    assert_true(b.n > 64 && b.n < (1 << 16));
    return b;
}

#endif
