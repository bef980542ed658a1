/* SPDX-License-Identifier: Apache-2.0
 *
 * Module image variables (limits/imgvars.h): the module-scope __device__ / __constant__
 * variables of real nvcc output (PTX, and an ELF cubin made by nvcc -cubin -arch=sm_90 from
 * tests/cuda/kernels/vars.cu) and of hand-written PTX that tries to confuse the scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "limits/imgvars.h"

struct names {
    char list[1024];
    int n;
    int stop_after;
};

static int collect(void *arg, const char *name)
{
    struct names *c = arg;
    size_t l = strlen(c->list);
    snprintf(c->list + l, sizeof(c->list) - l, "%s%s", l ? "," : "", name);
    c->n++;
    return c->stop_after && c->n >= c->stop_after ? 42 : 0;
}

static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", getenv("TF_SRCDIR") ? getenv("TF_SRCDIR") : ".", rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static const char *names_of(const void *img, size_t len)
{
    static struct names c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(tf_imgvars_each(img, len, collect, &c), 0);
    return c.list;
}

static void nvcc_ptx_variables_are_found(void **state)
{
    size_t n;
    char *p = slurp("tests/cuda/ptx/vars.ptx", &n);
    assert_string_equal(names_of(p, n), "counter,table,coeffs,lut,hits");
    free(p);
    p = slurp("tests/cuda/ptx/driver.ptx", &n);
    assert_string_equal(names_of(p, n), "launches,table,coeff"); /* not the .extern .shared */
    free(p);
}

static void nvcc_cubin_variables_are_found(void **state)
{
    size_t n;
    char *p = slurp("tests/cuda/ptx/vars.sm90.cubin", &n);
    assert_string_equal(names_of(p, n), "counter,table,coeffs,lut,hits");
    /* truncated anywhere: never a crash, never a name from outside the image */
    for (size_t cut = 0; cut < n; cut += 7)
        (void)names_of(p, cut);
    free(p);
}

static void ptx_that_tries_to_confuse_the_scan(void **state)
{
    static const char ptx[] = "// .global .u32 in_comment;\n"
                              "/* .global .u32 in_block_comment; */\n"
                              ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".file 1 \".global .u32 in_string;\"\n"
                              ".extern .global .align 4 .u32 imported;\n"
                              ".visible .global .align 8 .b8 arr[64] = {1, 2, 3};\n"
                              ".global .u32 a, b;\n"
                              ".visible .entry k(.param .u64 p)\n{\n"
                              "  .reg .b32 %r<2>;\n  ld.global.u32 %r1, [a];\n  .local .u32 l;\n}\n"
                              ".const .f32 c = 1.0;\n";
    assert_string_equal(names_of(ptx, sizeof(ptx) - 1), "arr,a,c");
    /* a NUL ends PTX text; the callback may stop the walk */
    assert_string_equal(names_of(".global .u32 x;\0.global .u32 y;", 31), "x");
    struct names c = {.stop_after = 1};
    assert_int_equal(tf_imgvars_each(ptx, sizeof(ptx) - 1, collect, &c), 42);
    assert_int_equal(c.n, 1);
    assert_string_equal(names_of(NULL, 0), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvcc_ptx_variables_are_found),
        cmocka_unit_test(nvcc_cubin_variables_are_found),
        cmocka_unit_test(ptx_that_tries_to_confuse_the_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
