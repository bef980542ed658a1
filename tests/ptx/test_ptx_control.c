/* SPDX-License-Identifier: Apache-2.0
 *
 * Control flow and memory windows the nvcc kernels exercise only partly, in hand-written PTX:
 * generic pointers into .shared and .local (cvta both ways, isspacep), named barriers with
 * thread counts and bar.arrive (producer/consumer warps), a guarded call taken by some lanes
 * only, lanes that exit early while the rest of the block meets at a barrier, unbounded
 * recursion stopped as a stack overflow, a nested divergent loop whose lanes reconverge, and
 * red (reductions without a result, which nvcc does not emit) on shared, generic and global
 * addresses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptxtest.h"

#define HDR ".version 8.0\n.target sm_80\n.address_size 64\n"

/* Runs kernel "k" of TEXT over BLOCK threads (one block) with out[] as its only parameter. */
static enum tf_ptx_status run1(const char *text, uint32_t block, uint32_t *out, size_t n, char *err,
                               size_t errlen)
{
    struct tf_ptx_module *m = ptxt_load_text(text);
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "k");
    struct tf_ptx_range r = PTXT_RANGE(out, n * 4);
    struct ptxt_arg args[] = {PTXT_ARG(out)};
    enum tf_ptx_status st =
        ptxt_launch(k, (struct ptxt_dim){1, 1, 1}, (struct ptxt_dim){block, 1, 1}, 0, args, 1, &r,
                    1, 1u << 26, NULL, err, errlen);
    tf_ptx_module_destroy(m);
    return st;
}

static void run1_ok(const char *text, uint32_t block, uint32_t *out, size_t n)
{
    char err[512];
    enum tf_ptx_status st = run1(text, block, out, n, err, sizeof(err));
    if (st != TF_PTX_OK)
        fail_msg("%s: %s", tf_ptx_status_str(st), err);
}

/* out[t*4 + 0..3]: value read back through a generic pointer to shared, to local,
 * isspacep.shared and isspacep.local of those pointers */
static const char generic_ptx[] =
    HDR ".visible .entry k(.param .u64 k_out)\n{\n"
        "\t.local .align 8 .b8 depot[16];\n\t.shared .align 4 .b8 sbuf[256];\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n"
        "\tmov.u32 %r1, %tid.x;\n"
        "\tmov.u32 %r2, sbuf;\n\tshl.b32 %r3, %r1, 2;\n\tadd.u32 %r4, %r2, %r3;\n"
        "\tmul.lo.u32 %r5, %r1, 3;\n\tst.shared.u32 [%r4], %r5;\n"
        "\tbar.sync 0;\n"
        /* read the neighbour's shared word through a generic pointer */
        "\txor.b32 %r6, %r1, 1;\n\tshl.b32 %r6, %r6, 2;\n\tadd.u32 %r6, %r2, %r6;\n"
        "\tcvt.u64.u32 %rd1, %r6;\n\tcvta.shared.u64 %rd2, %rd1;\n\tld.u32 %r7, [%rd2];\n"
        /* a generic pointer to this thread's .local, written generically, read as .local */
        "\tmov.u64 %rd3, depot;\n\tcvta.local.u64 %rd4, %rd3;\n\tadd.u32 %r8, %r1, 1000;\n"
        "\tst.u32 [%rd4+4], %r8;\n\tld.local.u32 %r9, [depot+4];\n"
        "\tcvta.to.local.u64 %rd5, %rd4;\n\tld.local.u32 %r10, [%rd5+4];\n"
        "\tadd.u32 %r9, %r9, %r10;\n"
        "\tisspacep.shared %p1, %rd2;\n\tisspacep.local %p2, %rd4;\n"
        "\tisspacep.global %p3, %rd4;\n"
        "\tselp.u32 %r11, 1, 0, %p1;\n\tselp.u32 %r12, 1, 0, %p2;\n\tselp.u32 %r13, 1, 0, %p3;\n"
        "\tshl.b32 %r12, %r12, 1;\n\tshl.b32 %r13, %r13, 2;\n\tor.b32 %r11, %r11, %r12;\n"
        "\tor.b32 %r11, %r11, %r13;\n"
        "\tcvta.to.shared.u64 %rd6, %rd2;\n\tcvt.u32.u64 %r14, %rd6;\n\tsub.u32 %r14, %r14, %r6;\n"
        "\tld.param.u64 %rd7, [k_out];\n\tcvta.to.global.u64 %rd7, %rd7;\n"
        "\tmul.wide.u32 %rd8, %r1, 16;\n\tadd.s64 %rd9, %rd7, %rd8;\n"
        "\tst.global.v4.u32 [%rd9], {%r7, %r9, %r11, %r14};\n"
        "\tret;\n}\n";

static void generic_pointers_reach_shared_and_local_windows(void **state)
{
    (void)state;
    enum { T = 40 };
    uint32_t out[T * 4];
    memset(out, 0xee, sizeof(out));
    run1_ok(generic_ptx, T, out, T * 4);
    for (uint32_t t = 0; t < T; t++) {
        assert_int_equal(out[t * 4], (t ^ 1) < T ? (t ^ 1) * 3 : 0);
        assert_int_equal(out[t * 4 + 1], 2 * (t + 1000));
        assert_int_equal(out[t * 4 + 2], 3); /* shared yes, local yes, global no */
        assert_int_equal(out[t * 4 + 3], 0); /* cvta.to.shared undoes cvta.shared */
    }
}

/* Warps 0-1 produce into shared and bar.arrive on barrier 1 (count 128); warps 2-3 wait on
 * bar.sync 1, 128 and consume. Then everyone meets at bar.red.popc. */
static const char named_ptx[] =
    HDR ".visible .entry k(.param .u64 k_out)\n{\n"
        "\t.shared .align 4 .b8 buf[256];\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<8>;\n"
        "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, buf;\n"
        "\tsetp.ge.u32 %p1, %r1, 64;\n\t@%p1 bra $L_consumer;\n"
        "\tshl.b32 %r3, %r1, 2;\n\tadd.u32 %r3, %r2, %r3;\n\tadd.u32 %r4, %r1, 7;\n"
        "\tst.shared.u32 [%r3], %r4;\n\tbar.arrive 1, 128;\n\tmov.u32 %r6, 0;\n"
        "\tbra.uni $L_join;\n"
        "$L_consumer:\n\tbar.sync 1, 128;\n\tsub.u32 %r5, %r1, 64;\n\tshl.b32 %r5, %r5, 2;\n"
        "\tadd.u32 %r5, %r2, %r5;\n\tld.shared.u32 %r6, [%r5];\n"
        "$L_join:\n"
        "\tsetp.ne.u32 %p2, %r6, 0;\n\tbar.red.popc.u32 %r7, 0, %p2;\n"
        "\tbar.red.or.pred %p3, 0, %p1;\n\tselp.u32 %r8, 1000, 0, %p3;\n\tadd.u32 %r7, %r7, %r8;\n"
        "\tld.param.u64 %rd1, [k_out];\n\tmul.wide.u32 %rd2, %r1, 8;\n\tadd.s64 %rd3, %rd1, %rd2;\n"
        "\tst.global.v2.u32 [%rd3], {%r6, %r7};\n\tret;\n}\n";

static void named_barriers_with_counts_order_producers_and_consumers(void **state)
{
    (void)state;
    uint32_t out[128 * 2];
    run1_ok(named_ptx, 128, out, 256);
    for (uint32_t t = 0; t < 128; t++) {
        assert_int_equal(out[t * 2], t < 64 ? 0 : (t - 64) + 7);
        assert_int_equal(out[t * 2 + 1], 64 + 1000); /* 64 consumers saw data; some were >= 64 */
    }
}

/* Odd lanes call f (guarded call), which itself diverges; even lanes skip it. Lanes >= 40
 * exit before a barrier the others still meet. */
static const char call_ptx[] =
    HDR ".func (.param .b32 ret0) f(.param .b32 x)\n{\n"
        "\t.reg .pred %p<2>;\n\t.reg .b32 %r<6>;\n"
        "\tld.param.b32 %r1, [x];\n\tand.b32 %r2, %r1, 2;\n\tsetp.eq.u32 %p1, %r2, 0;\n"
        "\tmov.u32 %r3, 100;\n\t@%p1 bra $L_f1;\n\tmul.lo.u32 %r3, %r1, 5;\n"
        "\tst.param.b32 [ret0], %r3;\n\tret;\n"
        "$L_f1:\n\tadd.u32 %r3, %r3, %r1;\n\tst.param.b32 [ret0], %r3;\n\tret;\n}\n"
        ".visible .entry k(.param .u64 k_out)\n{\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n"
        "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r4, 0;\n"
        "\tsetp.ge.u32 %p3, %r1, 40;\n\t@%p3 exit;\n"
        "\tand.b32 %r2, %r1, 1;\n\tsetp.eq.u32 %p1, %r2, 1;\n"
        "\t{\n\t.param .b32 a0;\n\t.param .b32 r0;\n\tst.param.b32 [a0], %r1;\n"
        "\t@%p1 call (r0), f, (a0);\n\t@%p1 ld.param.b32 %r4, [r0];\n\t}\n"
        "\tbar.sync 0;\n\tactivemask.b32 %r5;\n"
        "\tld.param.u64 %rd1, [k_out];\n\tmul.wide.u32 %rd2, %r1, 8;\n\tadd.s64 %rd3, %rd1, %rd2;\n"
        "\tst.global.v2.u32 [%rd3], {%r4, %r5};\n\tret;\n}\n";

static void guarded_call_and_early_exit_keep_the_other_lanes_right(void **state)
{
    (void)state;
    uint32_t out[64 * 2];
    memset(out, 0xee, sizeof(out));
    run1_ok(call_ptx, 64, out, 128);
    for (uint32_t t = 0; t < 64; t++) {
        if (t >= 40) {
            assert_int_equal(out[t * 2], 0xeeeeeeeeu); /* exited: wrote nothing */
            continue;
        }
        uint32_t want = (t & 1) ? ((t & 2) ? t * 5 : 100 + t) : 0;
        assert_int_equal(out[t * 2], want);
        /* after the barrier, the warp's live lanes are together again */
        assert_int_equal(out[t * 2 + 1], t < 32 ? 0xffffffffu : 0xffu);
    }
}

static const char recurse_ptx[] =
    HDR ".func (.param .b32 ret0) f(.param .b32 x)\n{\n"
        "\t.local .align 4 .b8 depot[64];\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<2>;\n"
        "\tld.param.b32 %r1, [x];\n\tmov.u64 %rd1, depot;\n\tst.local.u32 [%rd1], %r1;\n"
        "\tadd.u32 %r2, %r1, 1;\n"
        "\t{\n\t.param .b32 a0;\n\t.param .b32 r0;\n\tst.param.b32 [a0], %r2;\n"
        "\tcall (r0), f, (a0);\n\tld.param.b32 %r3, [r0];\n\t}\n"
        "\tst.param.b32 [ret0], %r3;\n\tret;\n}\n"
        ".visible .entry k(.param .u64 k_out)\n{\n\t.reg .b32 %r<4>;\n"
        "\t{\n\t.param .b32 a0;\n\t.param .b32 r0;\n\tst.param.b32 [a0], 0;\n"
        "\tcall (r0), f, (a0);\n\t}\n\tret;\n}\n";

static void unbounded_recursion_faults_as_a_stack_overflow(void **state)
{
    (void)state;
    uint32_t out[4];
    char err[512];
    enum tf_ptx_status st = run1(recurse_ptx, 32, out, 4, err, sizeof(err));
    assert_int_equal(st, TF_PTX_ILLEGAL_ADDRESS);
    if (!strstr(err, "stack overflow") || !strstr(err, "call"))
        fail_msg("unexpected message: %s", err);
}

/* Nested loops with per-lane trip counts (outer: lane % 5, inner: lane % 3) and a break:
 * every lane's sum is exact and the warp reconverges for the final ballot. */
static const char loops_ptx[] = HDR
    ".visible .entry k(.param .u64 k_out)\n{\n"
    "\t.reg .pred %p<6>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<4>;\n"
    "\tmov.u32 %r1, %tid.x;\n\trem.u32 %r2, %r1, 5;\n\trem.u32 %r3, %r1, 3;\n"
    "\tmov.u32 %r4, 0;\n\tmov.u32 %r5, 0;\n"
    "$L_outer:\n\tsetp.ge.u32 %p1, %r4, %r2;\n\t@%p1 bra $L_done;\n\tmov.u32 %r6, 0;\n"
    "$L_inner:\n\tsetp.ge.u32 %p2, %r6, %r3;\n\t@%p2 bra $L_next;\n"
    "\tadd.u32 %r5, %r5, %r6;\n\tadd.u32 %r5, %r5, 10;\n"
    "\tsetp.gt.u32 %p3, %r5, 60;\n\t@%p3 bra $L_done;\n"
    "\tadd.u32 %r6, %r6, 1;\n\tbra.uni $L_inner;\n"
    "$L_next:\n\tadd.u32 %r4, %r4, 1;\n\tbra.uni $L_outer;\n"
    "$L_done:\n\tactivemask.b32 %r7;\n\tsetp.gt.u32 %p4, %r5, 20;\n"
    "\tvote.sync.ballot.b32 %r8, %p4, -1;\n"
    "\tld.param.u64 %rd1, [k_out];\n\tmul.wide.u32 %rd2, %r1, 12;\n\tadd.s64 %rd3, %rd1, %rd2;\n"
    "\tst.global.u32 [%rd3], %r5;\n\tst.global.u32 [%rd3+4], %r7;\n"
    "\tst.global.u32 [%rd3+8], %r8;\n\tret;\n}\n";

static void nested_divergent_loops_with_break_reconverge(void **state)
{
    (void)state;
    uint32_t out[32 * 3], want[32];
    run1_ok(loops_ptx, 32, out, 96);
    uint32_t ball = 0;
    for (uint32_t t = 0; t < 32; t++) {
        uint32_t s = 0;
        for (uint32_t i = 0; i < t % 5; i++) {
            int brk = 0;
            for (uint32_t j = 0; j < t % 3; j++) {
                s += j + 10;
                if (s > 60) {
                    brk = 1;
                    break;
                }
            }
            if (brk)
                break;
        }
        want[t] = s;
        ball |= (uint32_t)(s > 20) << t;
    }
    for (uint32_t t = 0; t < 32; t++) {
        assert_int_equal(out[t * 3], want[t]);
        assert_int_equal(out[t * 3 + 1], 0xffffffffu);
        assert_int_equal(out[t * 3 + 2], ball);
    }
}

/* Every thread t of a 100-thread block (a partial last warp) reduces v = 7t - 100,
 * u = 3t + 5 and w = t * 0x100000001 + 5 into shared words (one of them through a generic
 * pointer) and into out[0..5]; thread 0 then copies the shared results to out[8..15]. */
static const char red_ptx[] =
    HDR ".visible .entry k(.param .u64 k_out)\n{\n"
        "\t.shared .align 8 .b8 s[32];\n"
        "\t.reg .pred %p<2>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n"
        "\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_init;\n"
        "\tmov.u32 %r10, 0;\n\tmov.u32 %r11, -1;\n\tmov.u32 %r12, -2147483648;\n"
        "\tst.shared.u32 [s], %r10;\n\tst.shared.u32 [s+4], %r11;\n"
        "\tst.shared.u32 [s+8], %r12;\n\tst.shared.u32 [s+12], %r10;\n"
        "\tmov.u64 %rd10, 0;\n\tst.shared.u64 [s+16], %rd10;\n\tst.shared.u64 [s+24], %rd10;\n"
        "$L_init:\n\tbar.sync 0;\n"
        "\tmul.lo.s32 %r2, %r1, 7;\n\tsub.s32 %r2, %r2, 100;\n"
        "\tmad.lo.u32 %r3, %r1, 3, 5;\n"
        "\trem.u32 %r4, %r1, 29;\n\tshl.b32 %r4, 1, %r4;\n"
        "\tcvt.u64.u32 %rd1, %r1;\n\tmul.lo.u64 %rd1, %rd1, 4294967297;\n"
        "\tadd.u64 %rd1, %rd1, 5;\n"
        "\tred.shared.add.u32 [s], %r2;\n\tred.shared.min.u32 [s+4], %r3;\n"
        "\tred.shared.max.s32 [s+8], %r2;\n"
        "\tmov.u64 %rd2, s;\n\tcvta.shared.u64 %rd2, %rd2;\n\tred.or.b32 [%rd2+12], %r4;\n"
        "\tred.shared.max.u64 [s+16], %rd1;\n\tred.shared.add.u64 [s+24], %rd1;\n"
        "\tld.param.u64 %rd3, [k_out];\n\tcvta.to.global.u64 %rd3, %rd3;\n"
        "\tred.global.add.u32 [%rd3], %r2;\n\tred.global.min.s32 [%rd3+4], %r2;\n"
        "\tred.global.max.u32 [%rd3+8], %r3;\n\tred.global.min.u64 [%rd3+16], %rd1;\n"
        "\tbar.sync 0;\n\t@%p1 bra $L_end;\n"
        "\tld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [s];\n"
        "\tst.global.v4.u32 [%rd3+32], {%r5, %r6, %r7, %r8};\n"
        "\tld.shared.v2.u64 {%rd4, %rd5}, [s+16];\n\tst.global.v2.u64 [%rd3+48], {%rd4, %rd5};\n"
        "$L_end:\n\tret;\n}\n";

static void red_reduces_on_shared_generic_and_global_addresses(void **state)
{
    (void)state;
    enum { T = 100 };
    uint64_t buf[8]; /* 8-byte aligned view of out[16] */
    uint32_t *out = (uint32_t *)buf;
    memset(buf, 0, sizeof(buf));
    out[1] = 0x7fffffff;   /* global min s32 */
    buf[2] = ~UINT64_C(0); /* global min u64 at out[4..5] */
    run1_ok(red_ptx, T, out, 16);
    uint32_t sum = 0, orv = 0;
    uint64_t wmax = 0, wsum = 0;
    for (uint32_t t = 0; t < T; t++) {
        sum += 7 * t - 100;
        orv |= 1u << (t % 29);
        uint64_t w = (uint64_t)t * 0x100000001ull + 5;
        wmax = w > wmax ? w : wmax;
        wsum += w;
    }
    assert_int_equal(out[0], sum);
    assert_int_equal((int32_t)out[1], -100);
    assert_int_equal(out[2], 3 * (T - 1) + 5);
    assert_int_equal(buf[2], 5);
    assert_int_equal(out[8], sum);
    assert_int_equal(out[9], 5);
    assert_int_equal((int32_t)out[10], 7 * (T - 1) - 100);
    assert_int_equal(out[11], orv);
    assert_int_equal(buf[6], wmax);
    assert_int_equal(buf[7], wsum);
}

/* Programmatic dependent launch (sm_90): griddepcontrol.wait and .launch_dependents run (the
 * kernels a grid depends on are complete when it starts here); another form is refused. */
static void grid_dependency_control_runs(void **state)
{
    (void)state;
    static const char text[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                               ".visible .entry k(.param .u64 k_out)\n{\n"
                               "\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n"
                               "\tgriddepcontrol.wait;\n\tld.param.u64 %rd1, [k_out];\n"
                               "\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd2, %r1, 4;\n"
                               "\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;\n"
                               "\tgriddepcontrol.launch_dependents;\n\tret;\n}\n";
    uint32_t out[32] = {0};
    run1_ok(text, 32, out, 32);
    for (uint32_t i = 0; i < 32; i++)
        assert_int_equal(out[i], i);
    static const char bad[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry k()\n{\n\tgriddepcontrol.go;\n\tret;\n}\n";
    struct tf_ptx_module *m = NULL;
    char err[256] = "";
    assert_int_not_equal(tf_ptx_module_load(bad, strlen(bad), &m, err, sizeof(err)), TF_PTX_OK);
    assert_non_null(strstr(err, "unsupported instruction 'griddepcontrol.go'"));
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generic_pointers_reach_shared_and_local_windows),
        cmocka_unit_test(named_barriers_with_counts_order_producers_and_consumers),
        cmocka_unit_test(guarded_call_and_early_exit_keep_the_other_lanes_right),
        cmocka_unit_test(unbounded_recursion_faults_as_a_stack_overflow),
        cmocka_unit_test(nested_divergent_loops_with_break_reconverge),
        cmocka_unit_test(red_reduces_on_shared_generic_and_global_addresses),
        cmocka_unit_test(grid_dependency_control_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
