/* SPDX-License-Identifier: Apache-2.0
 *
 * The fatbin parser (src/fatbin) on real containers nvcc 13 made from
 * tests/cuda/kernels/vecadd.cu (fuzz/corpus/fatbin/, also the fuzzer's seeds): the default
 * build (cubin sm_75 + Zstandard-compressed PTX compute_75), uncompressed, LZ4, several
 * architectures, arch-specific sm_90a, SASS only, -G, LTO IR; and on containers damaged in the
 * ways a hostile or truncated image would be.
 */
#include "common/err.h"
#include "fatbin/fatbin.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "seeds.h"

static int entries(const struct blob *b, struct tf_fatbin_entry *out, int max)
{
    struct tf_fatbin_iter it;
    char err[256];
    assert_int_equal(tf_fatbin_open(&it, b->p, b->n, err, sizeof(err)), 0);
    int n = 0, rc;
    while ((rc = tf_fatbin_next(&it, &out[n < max ? n : max - 1], err, sizeof(err))) == 1)
        n++;
    assert_int_equal(rc, 0);
    return n;
}

/* The PTX chosen for compute capability CC, unpacked. */
static char *ptx_for(const struct blob *b, unsigned cc, struct tf_fatbin_entry *e)
{
    char err[256], archs[256];
    assert_int_equal(tf_fatbin_pick_ptx(b->p, b->n, cc, e, archs, sizeof(archs), err, sizeof(err)),
                     0);
    char *text;
    size_t len;
    assert_int_equal(tf_fatbin_unpack(e, &text, &len, err, sizeof(err)), 0);
    assert_int_equal(strlen(text), len);
    return text;
}

static void nvcc_default_build_holds_a_cubin_and_compressed_ptx(void **state)
{
    struct blob b = seed_load("default_zstd.fatbin");
    uint64_t size;
    char err[256];
    assert_int_equal(tf_fatbin_size(b.p, b.n, &size, err, sizeof(err)), 0);
    assert_true(size <= b.n);
    struct tf_fatbin_entry e[8];
    assert_int_equal(entries(&b, e, 8), 2);
    assert_int_equal(e[0].kind, TF_FATBIN_ELF);
    assert_int_equal(e[0].arch, 75);
    assert_int_equal(e[1].kind, TF_FATBIN_PTX);
    assert_int_equal(e[1].arch, 75);
    assert_int_equal(e[1].ptx_major, 9);
    assert_int_equal(e[1].ptx_minor, 0);
    assert_true(e[1].flags & TF_FATBIN_F_ZSTD);
    assert_true(e[1].data_len < e[1].raw_len);
    struct tf_fatbin_entry pick;
    char *ptx = ptx_for(&b, 89, &pick);
    assert_int_equal(pick.arch, 75);
    assert_non_null(strstr(ptx, ".target sm_75"));
    assert_non_null(strstr(ptx, ".entry vecadd("));
    assert_non_null(strstr(ptx, ".entry saxpy("));
    free(ptx);
    free(b.p);
}

static void compressed_and_plain_ptx_unpack_to_the_same_text(void **state)
{
    static const char *const names[] = {"lz4.fatbin", "all_compressed.fatbin",
                                        "default_zstd.fatbin"};
    struct blob plain = seed_load("nocompress.fatbin");
    struct tf_fatbin_entry e;
    char *want = ptx_for(&plain, 80, &e);
    assert_false(e.flags & (TF_FATBIN_F_LZ4 | TF_FATBIN_F_ZSTD));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct blob b = seed_load(names[i]);
        char *got = ptx_for(&b, 80, &e);
        assert_true(e.flags & (TF_FATBIN_F_LZ4 | TF_FATBIN_F_ZSTD));
        assert_string_equal(got, want);
        free(got);
        free(b.p);
    }
    free(want);
    free(plain.p);
}

static void the_highest_ptx_not_above_the_device_is_chosen(void **state)
{
    struct blob b = seed_load("multi_arch.fatbin"); /* compute_80, sm_90 (cubin), compute_75 */
    static const unsigned cc[] = {75, 80, 86, 89, 90, 120};
    static const unsigned want[] = {75, 80, 80, 80, 80, 80};
    for (size_t i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
        struct tf_fatbin_entry e;
        char *ptx = ptx_for(&b, cc[i], &e);
        assert_int_equal(e.arch, want[i]);
        char target[32];
        snprintf(target, sizeof(target), ".target sm_%u", want[i]);
        assert_non_null(strstr(ptx, target));
        free(ptx);
    }
    struct tf_fatbin_entry e;
    char archs[256], err[256];
    assert_int_equal(tf_fatbin_pick_ptx(b.p, b.n, 70, &e, archs, sizeof(archs), err, sizeof(err)),
                     TF_ENOENT);
    assert_string_equal(archs, "compute_80, sm_90, compute_75");
    free(b.p);
}

static void arch_specific_ptx_runs_only_on_its_own_architecture(void **state)
{
    struct blob b = seed_load("sm90a.fatbin"); /* compute_90, sm_90a (cubin), compute_90a */
    struct tf_fatbin_entry all[8];
    assert_int_equal(entries(&b, all, 8), 3);
    int specific = 0;
    for (int i = 0; i < 3; i++)
        if (all[i].kind == TF_FATBIN_PTX && (all[i].flags & TF_FATBIN_F_ARCH_SPECIFIC)) {
            specific = 1;
            assert_true(tf_fatbin_ptx_fits(&all[i], 90));
            assert_false(tf_fatbin_ptx_fits(&all[i], 100));
            assert_false(tf_fatbin_ptx_fits(&all[i], 89));
        }
    assert_true(specific);
    struct tf_fatbin_entry e;
    char *ptx = ptx_for(&b, 100, &e); /* a later device takes the portable PTX */
    assert_false(e.flags & TF_FATBIN_F_ARCH_SPECIFIC);
    assert_int_equal(e.arch, 90);
    free(ptx);
    char archs[256], err[256];
    assert_int_equal(tf_fatbin_pick_ptx(b.p, b.n, 89, &e, archs, sizeof(archs), err, sizeof(err)),
                     TF_ENOENT);
    assert_string_equal(archs, "compute_90, sm_90a, compute_90a");
    free(b.p);
}

static void sass_only_and_lto_images_have_no_ptx_and_name_their_architectures(void **state)
{
    char archs[256], err[256];
    struct tf_fatbin_entry e;
    struct blob b = seed_load("sass_only.fatbin");
    assert_int_equal(tf_fatbin_pick_ptx(b.p, b.n, 89, &e, archs, sizeof(archs), err, sizeof(err)),
                     TF_ENOENT);
    assert_string_equal(archs, "sm_80");
    assert_int_equal(
        tf_fatbin_pick_ptx(b.p, b.n, TF_FATBIN_ANY_DEVICE, &e, NULL, 0, err, sizeof(err)),
        TF_ENOENT);
    free(b.p);
    b = seed_load("lto_rdc.fatbin");
    assert_int_equal(tf_fatbin_pick_ptx(b.p, b.n, 89, &e, archs, sizeof(archs), err, sizeof(err)),
                     TF_ENOENT);
    assert_string_equal(archs, "lto_80");
    free(b.p);
}

static void debug_builds_with_file_names_and_options_parse(void **state)
{
    struct blob b = seed_load("debug_g.fatbin");
    struct tf_fatbin_entry all[8];
    assert_int_equal(entries(&b, all, 8), 2);
    assert_true(all[1].flags & TF_FATBIN_F_DEBUG);
    struct tf_fatbin_entry e;
    char *ptx = ptx_for(&b, 75, &e);
    assert_non_null(strstr(ptx, ".entry vecadd("));
    free(ptx);
    free(b.p);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

/* Offset of the PTX entry of default_zstd.fatbin (the second). */
static size_t ptx_entry(const struct blob *b)
{
    size_t first = 16;
    uint32_t hsize = (uint32_t)b->p[first + 4] | (uint32_t)b->p[first + 5] << 8;
    uint32_t padded = (uint32_t)b->p[first + 8] | (uint32_t)b->p[first + 9] << 8;
    return first + hsize + padded;
}

static int pick(const struct blob *b, char *err)
{
    struct tf_fatbin_entry e;
    int rc = tf_fatbin_pick_ptx(b->p, b->n, 89, &e, NULL, 0, err, 256);
    if (rc)
        return rc;
    char *text;
    size_t len;
    rc = tf_fatbin_unpack(&e, &text, &len, err, 256);
    if (!rc)
        free(text);
    return rc;
}

static void damaged_containers_are_refused_with_a_reason(void **state)
{
    struct blob good = seed_load("default_zstd.fatbin");
    struct blob b = {malloc(good.n), good.n};
    char err[256];
    size_t pe = ptx_entry(&good);
    assert_int_equal(good.p[pe], TF_FATBIN_PTX);

    /* not a container */
    memcpy(b.p, good.p, b.n);
    b.p[0] ^= 1;
    assert_int_equal(pick(&b, err), TF_EPARSE);
    assert_non_null(strstr(err, "magic"));
    /* a container longer than the bytes present */
    assert_int_equal(pick(&(struct blob){good.p, 200}, err), TF_EPARSE);
    assert_non_null(strstr(err, "declares"));
    assert_int_equal(pick(&(struct blob){good.p, 10}, err), TF_EPARSE);
    /* an entry whose payload leaves the container */
    memcpy(b.p, good.p, b.n);
    put32(b.p + pe + 8, 0x7fffffff);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    assert_non_null(strstr(err, "leaves the container"));
    /* an entry header under 64 bytes */
    memcpy(b.p, good.p, b.n);
    put32(b.p + pe + 4, 8);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    /* an unknown entry version */
    memcpy(b.p, good.p, b.n);
    b.p[pe + 2] = 0x99;
    assert_int_equal(pick(&b, err), TF_EPARSE);
    /* a compressed size over the payload */
    memcpy(b.p, good.p, b.n);
    put32(b.p + pe + 16, 0x100000);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    /* an absurd or zero uncompressed size */
    memcpy(b.p, good.p, b.n);
    put32(b.p + pe + 56, 0);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    put32(b.p + pe + 60, 1);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    /* a declared size smaller than the real text */
    memcpy(b.p, good.p, b.n);
    put32(b.p + pe + 56, 100);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    /* corrupt compressed bytes */
    memcpy(b.p, good.p, b.n);
    uint32_t hsize = (uint32_t)b.p[pe + 4] | (uint32_t)b.p[pe + 5] << 8;
    memset(b.p + pe + hsize, 0xAB, 8);
    assert_int_equal(pick(&b, err), TF_EPARSE);
    assert_non_null(strstr(err, "Zstandard"));
    /* an older compression scheme */
    memcpy(b.p, good.p, b.n);
    b.p[pe + 41] |= 0x10; /* flag 0x1000 */
    assert_int_equal(pick(&b, err), TF_ENOTSUP);
    /* every truncation of a real container fails cleanly or parses what is there */
    for (size_t n = 0; n < good.n; n++) {
        struct blob t = {malloc(n ? n : 1), n};
        memcpy(t.p, good.p, n);
        int rc = pick(&t, err);
        assert_true(rc == 0 || rc == TF_EPARSE);
        free(t.p);
    }
    free(b.p);
    free(good.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvcc_default_build_holds_a_cubin_and_compressed_ptx),
        cmocka_unit_test(compressed_and_plain_ptx_unpack_to_the_same_text),
        cmocka_unit_test(the_highest_ptx_not_above_the_device_is_chosen),
        cmocka_unit_test(arch_specific_ptx_runs_only_on_its_own_architecture),
        cmocka_unit_test(sass_only_and_lto_images_have_no_ptx_and_name_their_architectures),
        cmocka_unit_test(debug_builds_with_file_names_and_options_parse),
        cmocka_unit_test(damaged_containers_are_refused_with_a_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
