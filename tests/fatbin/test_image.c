/* SPDX-License-Identifier: Apache-2.0
 *
 * Module images (src/fatbin/image.h): locating PTX text, cubins, fatbin containers and
 * wrapper records, and sizing their module-scope variables -- what the limiter charges for a
 * loaded module (the soft limiter, tf-worker). Fixtures are nvcc 13 builds of
 * tests/cudart/symbols.cu (296 bytes of __device__ / __constant__ variables) and of
 * tests/cuda/kernels/vars.cu (76 bytes; its PTX is tests/cuda/ptx/vars.ptx) in
 * fuzz/corpus/fatbin/, plus PTX written here, some of it made to confuse the scan.
 */
#include "common/err.h"
#include "fatbin/fatbin.h"
#include "fatbin/image.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "seeds.h"

#define SYMBOLS_GLOBALS 296 /* 4+4+4+8+256 (.global) + 16 (.const) + 4 (flag_value) */

static uint64_t globals_of(const void *p, size_t len, enum tf_image_kind want_kind)
{
    struct tf_image im;
    char err[256];
    assert_int_equal(tf_image_locate(p, len, &im, err, sizeof(err)), 0);
    assert_int_equal(im.kind, want_kind);
    uint64_t bytes = 0;
    assert_int_equal(tf_image_globals(&im, &bytes, err, sizeof(err)), 0);
    return bytes;
}

static void every_form_of_one_program_declares_the_same_globals(void **state)
{
    struct blob fat = seed_load("globals_default.fatbin");  /* cubin sm_75 + compressed PTX */
    struct blob ptx = seed_load("globals_ptx_only.fatbin"); /* compressed PTX only */
    struct blob elf = seed_load("globals_sm80.cubin");
    assert_int_equal(globals_of(fat.p, fat.n, TF_IMAGE_FATBIN), SYMBOLS_GLOBALS);
    assert_int_equal(globals_of(fat.p, 0, TF_IMAGE_FATBIN), SYMBOLS_GLOBALS); /* pointer only */
    assert_int_equal(globals_of(ptx.p, ptx.n, TF_IMAGE_FATBIN), SYMBOLS_GLOBALS);
    assert_int_equal(globals_of(elf.p, elf.n, TF_IMAGE_ELF), SYMBOLS_GLOBALS);
    assert_int_equal(globals_of(elf.p, 0, TF_IMAGE_ELF), SYMBOLS_GLOBALS);
    /* the runtime's registration record around the container */
    struct {
        uint32_t magic, version;
        const void *data, *name;
    } wrapper = {TF_FATBIN_WRAPPER_MAGIC, 1, fat.p, NULL};
    assert_int_equal(globals_of(&wrapper, 0, TF_IMAGE_FATBIN), SYMBOLS_GLOBALS);
    /* the PTX inside, as text */
    struct tf_fatbin_entry e;
    char err[256], *text;
    size_t n;
    assert_int_equal(tf_fatbin_pick_ptx(ptx.p, ptx.n, 80, &e, NULL, 0, err, sizeof(err)), 0);
    assert_int_equal(tf_fatbin_unpack(&e, &text, &n, err, sizeof(err)), 0);
    assert_int_equal(globals_of(text, 0, TF_IMAGE_PTX), SYMBOLS_GLOBALS);
    free(text);
    free(fat.p);
    free(ptx.p);
    free(elf.p);
}

static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", getenv("TF_SRCDIR"), rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    return buf;
}

static void nvcc_ptx_and_cubin_of_one_source_declare_the_same_globals(void **state)
{
    size_t n;
    char *ptx = slurp("tests/cuda/ptx/vars.ptx", &n);
    assert_int_equal(globals_of(ptx, n, TF_IMAGE_PTX), 76); /* 4 + 16 + 16 + 32 + 8 */
    free(ptx);
    struct blob elf = seed_load("vars.sm90.cubin");
    assert_int_equal(globals_of(elf.p, elf.n, TF_IMAGE_ELF), 76);
    /* cut anywhere: refused or located inside what is there, never read past it (ASan) */
    for (size_t cut = 1; cut < elf.n; cut += 7) {
        struct tf_image im;
        char err[256];
        uint64_t bytes;
        if (tf_image_locate(elf.p, cut, &im, err, sizeof(err)) == 0) {
            assert_true(im.size <= cut);
            (void)tf_image_globals(&im, &bytes, err, sizeof(err));
        }
    }
    free(elf.p);
    /* the extern dynamic shared array takes no device memory */
    ptx = slurp("tests/cuda/ptx/driver.ptx", &n);
    assert_int_equal(globals_of(ptx, n, TF_IMAGE_PTX), 36);
    free(ptx);
}

static void ptx_declarations_are_sized_by_type_vector_and_dimensions(void **state)
{
    static const struct {
        const char *ptx;
        uint64_t bytes;
    } cases[] = {
        {".version 9.0\n.target sm_80\n.address_size 64\n.global .align 4 .u32 a;\n", 4},
        {".global .align 8 .v2 .f64 v[3];\n", 48},
        {".visible .global .align 1 .b8 big[64][1024];\n", 65536},
        {".const .align 4 .b8 c[16];\n.global .f16 h;\n", 18},
        {".global .align 4 .u32 u[] = {1, 2, 3, 4, 5};\n", 20},
        {".global .align 4 .u32 m[][2] = {{1, 2}, {3, 4}, {5, 6}};\n", 24},
        {".global .u8 x = 7;\n.global .b64 y;\n", 9},
        {".extern .global .align 4 .u32 elsewhere;\n", 0},
        {".shared .align 4 .b8 s[4096];\n", 0},
        {".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<5>;\n.global .u32 in_body;\n}\n"
         ".global .u32 after;\n",
         4},
        {"// .global .u32 commented;\n/* .global .u32 also[100]; */ .global .u16 real;\n", 2},
        {".global .u32 a, b, c;\n", 12},
        {".global .texref t;\n.global .u32 ok;\n", 4},
        {".version 8.0\n.file 1 \".global .u32 in_string[9];\"\n.global .u32 a;\n", 4},
        {"// .global .u32 in_comment;\n"
         "/* .global .u32 in_block_comment; */\n"
         ".version 8.0\n.target sm_80\n.address_size 64\n"
         ".file 1 \".global .u32 in_string;\"\n"
         ".extern .global .align 4 .u32 imported;\n"
         ".visible .global .align 8 .b8 arr[64] = {1, 2, 3};\n"
         ".global .u32 a, b;\n"
         ".visible .entry k(.param .u64 p)\n{\n"
         "  .reg .b32 %r<2>;\n  ld.global.u32 %r1, [a];\n  .local .u32 l;\n}\n"
         ".const .f32 c = 1.0;\n",
         76},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t got = tf_ptx_globals(cases[i].ptx, strlen(cases[i].ptx));
        if (got != cases[i].bytes)
            fail_msg("case %zu: %llu bytes, want %llu:\n%s", i, (unsigned long long)got,
                     (unsigned long long)cases[i].bytes, cases[i].ptx);
    }
    /* a NUL ends PTX text of a known length */
    uint64_t bytes = 0;
    char err[256];
    static const char two[] = ".global .u32 x;\0.global .u32 y;\n";
    assert_int_equal(tf_image_vars_bytes(two, sizeof(two) - 1, &bytes, err, sizeof(err)), 0);
    assert_int_equal(bytes, 4);
    /* absurd dimensions saturate instead of wrapping */
    const char *huge = ".global .b64 z[99999999999999999999][99999999999];\n";
    assert_true(tf_ptx_globals(huge, strlen(huge)) >= (UINT64_C(1) << 62));
}

static void damaged_images_are_refused(void **state)
{
    struct blob elf = seed_load("globals_sm80.cubin");
    struct tf_image im;
    char err[256];
    assert_int_equal(tf_image_locate(elf.p, 40, &im, err, sizeof(err)), TF_EPARSE);
    assert_int_equal(tf_image_locate(elf.p, elf.n - 100, &im, err, sizeof(err)), TF_EPARSE);
    assert_non_null(strstr(err, "ELF"));
    elf.p[4] = 1; /* 32-bit */
    assert_int_equal(tf_image_locate(elf.p, elf.n, &im, err, sizeof(err)), TF_EPARSE);
    struct {
        uint32_t magic, version;
        const void *data, *name;
    } wrapper = {TF_FATBIN_WRAPPER_MAGIC, 1, NULL, NULL};
    assert_int_equal(tf_image_locate(&wrapper, 0, &im, err, sizeof(err)), TF_EPARSE);
    wrapper.data = elf.p; /* not a container */
    assert_int_equal(tf_image_locate(&wrapper, 0, &im, err, sizeof(err)), TF_EPARSE);
    wrapper.data = elf.p;
    assert_int_equal(tf_image_locate(&wrapper, sizeof(wrapper), &im, err, sizeof(err)),
                     TF_EPARSE); /* a record read from a file: its pointer means nothing */
    struct blob fat = seed_load("globals_default.fatbin");
    assert_int_equal(tf_image_locate(fat.p, 100, &im, err, sizeof(err)), TF_EPARSE);
    /* short text is PTX */
    assert_int_equal(tf_image_locate("ab", 0, &im, err, sizeof(err)), 0);
    assert_int_equal(im.kind, TF_IMAGE_PTX);
    assert_int_equal(im.size, 2);
    free(elf.p);
    free(fat.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_form_of_one_program_declares_the_same_globals),
        cmocka_unit_test(nvcc_ptx_and_cubin_of_one_source_declare_the_same_globals),
        cmocka_unit_test(ptx_declarations_are_sized_by_type_vector_and_dimensions),
        cmocka_unit_test(damaged_images_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
