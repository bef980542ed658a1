/* SPDX-License-Identifier: Apache-2.0
 *
 * cp.async (src/sim/ptx/ops_async.c): the copy of cp-size bytes from global to shared memory
 * with src-size bytes read and the rest zeros, ignore-src, the group and wait forms, and what
 * is refused or faults (a misaligned source, a .cg copy of fewer than 16 bytes, bulk copies).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ptxtest.h"

#define HDR ".version 8.0\n.target sm_80\n.address_size 64\n"

/* A kernel copying 16 bytes at SRC (+ SOFF) into shared memory with the copy instruction
 * COPY, then the 16 shared bytes to OUT. */
static struct tf_ptx_module *kernel(const char *copy)
{
    char text[2048];
    snprintf(text, sizeof(text),
             HDR ".visible .entry k(.param .u64 src, .param .u64 out, .param .u32 n,\n"
                 "    .param .u32 ign)\n{\n"
                 "\t.reg .pred %%p<2>;\n\t.reg .b32 %%r<8>;\n\t.reg .b64 %%rd<8>;\n"
                 "\t.shared .align 16 .b8 sh[16];\n"
                 "\tld.param.u64 %%rd1, [src];\n\tld.param.u64 %%rd2, [out];\n"
                 "\tld.param.u32 %%r1, [n];\n\tld.param.u32 %%r2, [ign];\n"
                 "\tsetp.ne.u32 %%p1, %%r2, 0;\n\tmov.u32 %%r3, sh;\n"
                 "%s\n\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n\tcp.async.wait_all;\n"
                 "\tld.shared.v4.u32 {%%r4, %%r5, %%r6, %%r7}, [sh];\n"
                 "\tst.global.v4.u32 [%%rd2], {%%r4, %%r5, %%r6, %%r7};\n\tret;\n}\n",
             copy);
    return ptxt_load_text(text);
}

static enum tf_ptx_status run(struct tf_ptx_module *m, const uint8_t *src, uint32_t n, uint32_t ign,
                              uint8_t out[16])
{
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "k");
    uint64_t s = (uint64_t)(uintptr_t)src, o = (uint64_t)(uintptr_t)out;
    struct ptxt_arg args[] = {PTXT_ARG(s), PTXT_ARG(o), PTXT_ARG(n), PTXT_ARG(ign)};
    struct tf_ptx_range bufs[] = {PTXT_RANGE(src, 32), PTXT_RANGE(out, 16)};
    char err[256];
    memset(out, 0xee, 16);
    return ptxt_launch(k, (struct ptxt_dim){1, 1, 1}, (struct ptxt_dim){1, 1, 1}, 0, args, 4, bufs,
                       2, 0, NULL, err, sizeof(err));
}

static void copies_src_size_bytes_and_zeros_the_rest(void **state)
{
    (void)state;
    _Alignas(16) uint8_t src[32], out[16], want[16];
    for (int i = 0; i < 32; i++)
        src[i] = (uint8_t)(i + 1);
    struct tf_ptx_module *all = kernel("\tcp.async.cg.shared.global [%r3], [%rd1], 16;");
    assert_int_equal(run(all, src, 0, 0, out), TF_PTX_OK);
    assert_memory_equal(out, src, 16);
    tf_ptx_module_destroy(all);
    struct tf_ptx_module *part =
        kernel("\tcp.async.ca.shared.global.L2::128B [%r3], [%rd1+16], 16, %r1;");
    for (uint32_t n = 0; n <= 16; n += 5) {
        memset(want, 0, 16);
        memcpy(want, src + 16, n);
        assert_int_equal(run(part, src, n, 0, out), TF_PTX_OK);
        assert_memory_equal(out, want, 16);
    }
    tf_ptx_module_destroy(part);
    struct tf_ptx_module *ign = kernel("\tcp.async.ca.shared::cta.global [%r3], [%rd1], 16, %p1;");
    memset(want, 0, 16);
    assert_int_equal(run(ign, src, 0, 1, out), TF_PTX_OK);
    assert_memory_equal(out, want, 16);
    assert_int_equal(run(ign, src, 0, 0, out), TF_PTX_OK);
    assert_memory_equal(out, src, 16);
    tf_ptx_module_destroy(ign);
    /* a source not aligned to the copy's size faults, as on a GPU */
    struct tf_ptx_module *mis = kernel("\tcp.async.ca.shared.global [%r3], [%rd1+4], 8;");
    assert_int_equal(run(mis, src, 0, 0, out), TF_PTX_MISALIGNED_ADDRESS);
    tf_ptx_module_destroy(mis);
}

static void forms_the_engine_does_not_do_are_refused(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "\tcp.async.cg.shared.global [%r3], [%rd1], 8;",
        "\tcp.async.ca.shared.global [%r3], [%rd1], 12;",
        "\tcp.async.bulk.shared::cluster.global [%r3], [%rd1], 16, [%r3];",
        "\tcp.async.mbarrier.arrive.b64 [%rd1];",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char text[2048];
        snprintf(text, sizeof(text),
                 HDR ".visible .entry k(.param .u64 src)\n{\n\t.reg .b32 %%r<4>;\n"
                     "\t.reg .b64 %%rd<2>;\n\tld.param.u64 %%rd1, [src];\n\tmov.u32 %%r3, 0;\n"
                     "%s\n\tret;\n}\n",
                 bodies[i]);
        struct tf_ptx_module *m = NULL;
        char err[256] = "";
        if (tf_ptx_module_load(text, strlen(text), &m, err, sizeof(err)) == TF_PTX_OK)
            fail_msg("'%s' was accepted", bodies[i]);
        if (!strstr(err, "cp.async"))
            fail_msg("'%s': %s", bodies[i], err);
    }
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copies_src_size_bytes_and_zeros_the_rest),
        cmocka_unit_test(forms_the_engine_does_not_do_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
