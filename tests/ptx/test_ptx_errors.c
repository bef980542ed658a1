/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX engine refuses what it cannot run, and says why: unsupported instructions and
 * directives name themselves and their line, malformed PTX gives the line of the problem,
 * bad launch geometry and resources are refused with the driver's codes, and faults at run
 * time (misaligned and read-only accesses, window overruns, trap, runaway kernels, barrier
 * deadlocks) stop the launch with a message naming the kernel, instruction and thread.
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

#define DIM(x) ((struct ptxt_dim){(x), 1, 1})
#define HDR ".version 8.0\n.target sm_80\n.address_size 64\n"

/* Loads TEXT expecting failure; returns the message. */
static const char *load_fails(const char *text)
{
    static char err[512];
    struct tf_ptx_module *m = (struct tf_ptx_module *)1;
    err[0] = 0;
    enum tf_ptx_status st = tf_ptx_module_load(text, strlen(text), &m, err, sizeof(err));
    if (st == TF_PTX_OK)
        fail_msg("loaded, expected a refusal:\n%s", text);
    assert_int_equal(st, TF_PTX_INVALID_PTX);
    assert_null(m);
    assert_true(err[0] != 0);
    return err;
}

static void expect_msg(const char *text, const char *want)
{
    const char *err = load_fails(text);
    if (!strstr(err, want))
        fail_msg("message '%s' lacks '%s'", err, want);
}

/* A kernel body wrapped into a module: registers declared on lines 5-10, BODY from line 11. */
static char *kernel(const char *body)
{
    static char buf[8192];
    snprintf(buf, sizeof(buf),
             HDR ".visible .entry k(.param .u64 k_p0)\n{\n"    /* lines 4, 5 */
                 "\t.reg .pred %%p<4>;\n\t.reg .b32 %%r<8>;\n" /* lines 6, 7 */
                 "\t.reg .f32 %%f<8>;\n\t.reg .b64 %%rd<8>;\n" /* lines 8, 9 */
                 "\t.reg .b16 %%rs<4>;\n"                      /* line 10 */
                 "%s\n\tret;\n}\n",
             body);
    return buf;
}

static void unsupported_instructions_are_refused_naming_instruction_and_line(void **state)
{
    (void)state;
    static const struct {
        const char *body, *msg;
    } cases[] = {
        {"\tmov.u32 %r1, 1;\n\ttex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];",
         "line 12: unsupported instruction 'tex.2d.v4.f32.f32'"},
        {"\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2}, "
         "{%r3}, {%f1,%f2,%f3,%f4};",
         "line 11: unsupported instruction 'mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32'"},
        {"\tcp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 16;",
         "line 11: unsupported instruction 'cp.async.bulk.global.shared::cta.bulk_group'"},
        {"\twgmma.fence.sync.aligned;",
         "line 11: unsupported instruction 'wgmma.fence.sync.aligned'"},
        {"\tex2.approx.f16 %rs1, %rs2;", "line 11: unsupported instruction 'ex2.approx.f16'"},
        {"\tadd.rn.u32 %r1, %r2, %r3;", "line 11: unsupported instruction 'add.rn.u32'"},
        {"\tld.global.b128 %rd1, [%rd2];", "line 11: unsupported instruction 'ld.global.b128'"},
        {"\tbrx.idx %r1, tbl;", "line 11: unsupported instruction 'brx.idx'"},
        {"\tsuld.b.2d.v4.b32.trap {%r1,%r2,%r3,%r4}, [s, {%r1, %r2}];",
         "line 11: unsupported instruction 'suld.b.2d.v4.b32.trap'"},
        {"\n\n\tshfl.sync.bfly.b64 %rd1, %rd2, 1, 31, -1;",
         "line 13: unsupported instruction 'shfl.sync.bfly.b64'"},
        {"\tmov.u32 %r1, %clock;\n\tadd.u32 %r2, %clock, 1;",
         "line 12: special register '%clock' is only supported in mov"},
        {"\tcall %rd1, (%r1);", "line 11: unsupported: indirect call through '%rd1'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_msg(kernel(cases[i].body), cases[i].msg);
}

static void unsupported_directives_and_calls_are_refused(void **state)
{
    (void)state;
    expect_msg(HDR ".global .texref tex0;\n", "line 4: unsupported directive '.texref'");
    expect_msg(HDR ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n\t.surfref s;\n\tret;\n}\n",
               "line 7: unsupported directive '.surfref'");
    expect_msg(".version 8.0\n.target sm_80\n.address_size 32\n",
               "line 3: unsupported .address_size");
    /* Device malloc is not served; vprintf is (device printf), only with its own signature. */
    expect_msg(HDR ".extern .func (.param .b64 func_retval0) malloc(.param .b64 p0);\n"
                   ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n"
                   "\t{\n\t.param .b64 param0;\n\t.param .b64 retval0;\n"
                   "\tcall.uni (retval0), malloc, (param0);\n\t}\n\tret;\n}\n",
               "line 11: call to undefined function 'malloc'");
    expect_msg(HDR ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0);\n"
                   ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n"
                   "\t{\n\t.param .b64 param0;\n\t.param .b32 retval0;\n"
                   "\tcall.uni (retval0), vprintf, (param0);\n\t}\n\tret;\n}\n",
               "line 11: call to undefined function 'vprintf'");
    expect_msg(HDR ".global .align 8 .u64 ptr = generic(other);\n", "line 4:");
    expect_msg(HDR ".global .u32 g;\n.extern .global .u32 h;\n",
               "line 5: unsupported: .extern variable 'h'");
    expect_msg(HDR ".func f(.reg .b32 x)\n{\n\tret;\n}\n",
               "line 4: unsupported .reg function parameter");
}

static void malformed_ptx_is_refused_with_its_line(void **state)
{
    (void)state;
    static const struct {
        const char *body, *msg;
    } cases[] = {
        {"\tmov.u32 %r1, 1\n\tmov.u32 %r2, 2;", "line 12: expected ',' or ';'"},
        {"\tmov.u32 %r9, 1;", "line 11: destination '%r9' of 'mov.u32' is not a register"},
        {"\tadd.u32 %r1, %q1, 2;", "line 11: unknown register '%q1'"},
        {"\n\tbra $L_nowhere;", "line 12: unknown label '$L_nowhere'"},
        {"$L1:\n\tmov.u32 %r1, 1;\n$L1:", "line 13: duplicate label '$L1'"},
        {"\tadd.u32 %r1, %r2;", "line 11: wrong number of operands for 'add.u32'"},
        {"\tadd.u32 %r1, %r2, 0x;", "line 11: malformed integer literal"},
        {"\tmov.f32 %f1, 0f3F80;", "line 11: malformed floating-point literal"},
        {"\t/* never closed\n\tret;", "line 11: unterminated comment"},
        {"\tmov.u32 %r1, %p1;", "line 11: predicate '%p1' used as a value in 'mov.u32'"},
        {"\t@%r1 bra $L2;\n$L2:", "line 11: '%r1' is not a predicate"},
        {"\tld.global.v4.f32 {%f1, %f2}, [%rd1];", "line 11: 'ld.global.v4.f32' needs a vector"},
        {"\t.reg .b32 %r1;", "line 11: duplicate declaration of '%r1'"},
        /* ".reg.b32 x;" (the type joined, as in cuda_fp16.h's inline asm) declares too */
        {"\t.reg.b32 %r1;", "line 11: duplicate declaration of '%r1'"},
        {"\t.reg.v2.b32 %w;", "line 11: unsupported register declaration"},
        {"\tst.shared.u32 [gvar], %r1;", "line 11: unknown symbol 'gvar'"},
        {"\tmov.u32 %r1, 99999999999999999999;", "line 11: integer literal out of range"},
        {"\tmov.u32 %r1, \"str\";", "line 11: expected an operand"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_msg(kernel(cases[i].body), cases[i].msg);
    expect_msg(".target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n",
               "line 3: missing .version before the first function");
    expect_msg(HDR ".visible .entry k()\n{\n\tret;\n", "line 7: expected '}', got end of input");
    expect_msg(HDR "garbage\n", "line 4: expected a directive");
    expect_msg(HDR ".visible .entry k()\n{\n\tret;\n}\n.visible .entry k()\n{\n\tret;\n}\n",
               "line 8: duplicate definition of 'k'");
    expect_msg("\x01", "line 1: unexpected character 0x01");
    expect_msg("", "missing .version");
}

/* Loads TEXT, launches kernel "k" with params PARAMS (size N) and the given memory. */
static enum tf_ptx_status run_text(const char *text, struct tf_ptx_launch *l, const void *params,
                                   size_t n, const struct tf_ptx_range *r, size_t nr, char *err,
                                   size_t errlen, uint64_t *insns)
{
    struct tf_ptx_module *m = ptxt_load_text(text);
    struct tf_ptx_memview mv = {r, nr};
    l->kernel = ptxt_kernel(m, "k");
    l->params = params;
    l->params_size = n;
    l->mem = &mv;
    enum tf_ptx_status st = tf_ptx_launch_run(l, insns, err, errlen);
    tf_ptx_module_destroy(m);
    return st;
}

static void launch_geometry_and_resources_are_checked(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("reduce");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "reduce_sum");
    int in[4] = {1, 2, 3, 4}, n = 4;
    unsigned long long out = 0, *po = &out;
    int *pi = in;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(in, sizeof(in)), PTXT_RANGE(&out, 8)};
    struct ptxt_arg args[] = {PTXT_ARG(pi), PTXT_ARG(n), PTXT_ARG(po)};
    char err[256];
    static const struct {
        struct ptxt_dim grid, block;
        uint32_t dyn;
        enum tf_ptx_status st;
        const char *msg;
    } cases[] = {
        {{1, 1, 1}, {1025, 1, 1}, 0, TF_PTX_LAUNCH_OUT_OF_RESOURCES, "exceeds the limits"},
        {{1, 1, 1}, {32, 32, 2}, 0, TF_PTX_LAUNCH_OUT_OF_RESOURCES, "exceeds the limits"},
        {{1, 1, 1}, {1, 1, 65}, 0, TF_PTX_LAUNCH_OUT_OF_RESOURCES, "exceeds the limits"},
        {{0, 1, 1}, {32, 1, 1}, 0, TF_PTX_INVALID_VALUE, "zero grid or block dimension"},
        {{1, 1, 1}, {32, 0, 1}, 0, TF_PTX_INVALID_VALUE, "zero grid or block dimension"},
        {{1, 65536, 1}, {32, 1, 1}, 0, TF_PTX_INVALID_VALUE, "grid dimension too large"},
        {{1, 1, 1},
         {64, 1, 1},
         48 * 1024 + 1,
         TF_PTX_LAUNCH_OUT_OF_RESOURCES,
         "bytes of shared memory exceed the limit of 49152"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum tf_ptx_status st = ptxt_launch(k, cases[i].grid, cases[i].block, cases[i].dyn, args, 3,
                                            bufs, 2, 0, NULL, err, sizeof(err));
        assert_int_equal(st, cases[i].st);
        if (!strstr(err, cases[i].msg))
            fail_msg("case %zu: message '%s' lacks '%s'", i, err, cases[i].msg);
    }
    /* exactly 48 KiB of dynamic shared memory fits */
    out = 0;
    assert_int_equal(
        ptxt_launch(k, DIM(1), DIM(64), 48 * 1024, args, 3, bufs, 2, 0, NULL, err, sizeof(err)),
        TF_PTX_OK);
    assert_int_equal(out, 10);

    /* the opt-in limit (cuFuncSetAttribute) raises it up to TF_PTX_MAX_SHARED_OPTIN */
    struct tf_ptx_kernel_info info;
    tf_ptx_kernel_get_info(k, &info);
    uint8_t params[24];
    for (uint32_t i = 0; i < 3; i++) {
        uint32_t off, sz;
        tf_ptx_kernel_param(k, i, &off, &sz);
        memcpy(params + off, args[i].p, sz);
    }
    struct tf_ptx_memview mv = {bufs, 2};
    if (bufs[0].base > bufs[1].base) {
        struct tf_ptx_range t = bufs[0];
        bufs[0] = bufs[1];
        bufs[1] = t;
    }
    struct tf_ptx_launch l = {.kernel = k,
                              .grid = {1, 1, 1},
                              .block = {64, 1, 1},
                              .dynamic_shared = 100 * 1024,
                              .params = params,
                              .params_size = info.params_size,
                              .mem = &mv,
                              .max_dynamic_shared = 128 * 1024};
    out = 0;
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_OK);
    assert_int_equal(out, 10);
    l.dynamic_shared = 130 * 1024;
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_LAUNCH_OUT_OF_RESOURCES);
    l.max_dynamic_shared = 300 * 1024;
    l.dynamic_shared = TF_PTX_MAX_SHARED_OPTIN + 1;
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_LAUNCH_OUT_OF_RESOURCES);
    /* parameter buffer of the wrong size */
    l.dynamic_shared = 256;
    l.params_size = info.params_size - 4;
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_INVALID_VALUE);
    assert_non_null(strstr(err, "takes 24 bytes of parameters, got 20"));
    l.params_size = info.params_size;
    l.params = NULL;
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_INVALID_VALUE);
    l.kernel = NULL;
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_INVALID_VALUE);
    assert_int_equal(tf_ptx_launch_run(NULL, NULL, err, sizeof(err)), TF_PTX_INVALID_VALUE);
    tf_ptx_module_destroy(m);
}

static void launch_bounds_directives_are_enforced(void **state)
{
    (void)state;
    const char *text =
        HDR ".visible .entry k()\n.maxntid 128, 1, 1\n.minnctapersm 2\n{\n\tret;\n}\n"
            ".visible .entry k2()\n.reqntid 16, 8, 1\n{\n\tret;\n}\n";
    struct tf_ptx_module *m = ptxt_load_text(text);
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "k"), *k2 = ptxt_kernel(m, "k2");
    struct tf_ptx_kernel_info info;
    tf_ptx_kernel_get_info(k, &info);
    assert_int_equal(info.max_threads, 128);
    tf_ptx_kernel_get_info(k2, &info);
    assert_int_equal(info.reqntid[0], 16);
    assert_int_equal(info.reqntid[1], 8);
    assert_int_equal(info.reqntid[2], 1);
    char err[256];
    assert_int_equal(
        ptxt_launch(k, DIM(1), DIM(128), 0, NULL, 0, NULL, 0, 0, NULL, err, sizeof(err)),
        TF_PTX_OK);
    assert_int_equal(
        ptxt_launch(k, DIM(1), DIM(129), 0, NULL, 0, NULL, 0, 0, NULL, err, sizeof(err)),
        TF_PTX_LAUNCH_OUT_OF_RESOURCES);
    assert_non_null(strstr(err, ".maxntid 128"));
    assert_int_equal(ptxt_launch(k2, DIM(1), ((struct ptxt_dim){16, 8, 1}), 0, NULL, 0, NULL, 0, 0,
                                 NULL, err, sizeof(err)),
                     TF_PTX_OK);
    assert_int_equal(
        ptxt_launch(k2, DIM(1), DIM(128), 0, NULL, 0, NULL, 0, 0, NULL, err, sizeof(err)),
        TF_PTX_INVALID_VALUE);
    assert_non_null(strstr(err, ".reqntid 16,8,1"));
    tf_ptx_module_destroy(m);
}

static const char spin_ptx[] = HDR ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n"
                                   "\tmov.u32 %r1, 0;\n$L_top:\n\tadd.u32 %r1, %r1, 1;\n"
                                   "\tbra.uni $L_top;\n}\n";

static void runaway_kernel_stops_at_max_instructions(void **state)
{
    (void)state;
    struct tf_ptx_launch l = {.grid = {2, 1, 1}, .block = {64, 1, 1}, .max_instructions = 100000};
    char err[256];
    uint64_t insns = 0;
    assert_int_equal(run_text(spin_ptx, &l, NULL, 0, NULL, 0, err, sizeof(err), &insns),
                     TF_PTX_LAUNCH_TIMEOUT);
    assert_true(insns > 100000 && insns < 100000 + 64);
    if (!strstr(err, "exceeded max_instructions (100000)") || !strstr(err, "kernel k") ||
        !strstr(err, "add.u32") || !strstr(err, "block (0,0,0)"))
        fail_msg("unexpected message: %s", err);
}

static void runtime_faults_stop_the_launch_with_a_message(void **state)
{
    (void)state;
    _Alignas(16) uint32_t buf[16] = {0};
    struct tf_ptx_range r = {(uint64_t)(uintptr_t)buf, sizeof(buf), 0};
    uint64_t p = (uint64_t)(uintptr_t)buf;
    char err[512];
    static const struct {
        const char *body;
        int read_only;
        enum tf_ptx_status st;
        const char *msg;
    } cases[] = {
        /* misaligned: 4-byte load from buf+2 */
        {"\tld.param.u64 %rd1, [k_p0];\n\tld.global.u32 %r1, [%rd1+2];", 0,
         TF_PTX_MISALIGNED_ADDRESS, "misaligned address"},
        /* vector alignment is the whole vector's */
        {"\tld.param.u64 %rd1, [k_p0];\n\tld.global.v4.u32 {%r1,%r2,%r3,%r4}, [%rd1+8];", 0,
         TF_PTX_MISALIGNED_ADDRESS, "ld.global.v4.u32"},
        /* a store to read-only (.const) memory */
        {"\tld.param.u64 %rd1, [k_p0];\n\tst.global.u32 [%rd1], %r1;", 1, TF_PTX_ILLEGAL_ADDRESS,
         "write to read-only memory"},
        /* past the end of the only range */
        {"\tld.param.u64 %rd1, [k_p0];\n\tld.global.u32 %r1, [%rd1+64];", 0, TF_PTX_ILLEGAL_ADDRESS,
         "illegal address"},
        /* null */
        {"\tmov.u64 %rd1, 0;\n\tld.u32 %r1, [%rd1];", 0, TF_PTX_ILLEGAL_ADDRESS,
         "illegal address 0x0 in kernel k at line 12: ld.u32"},
        /* the shared window is only as big as the kernel's .shared */
        {"\tmov.u32 %r1, 4096;\n\tld.shared.u32 %r2, [%r1];", 0, TF_PTX_ILLEGAL_ADDRESS,
         ".shared window"},
        {"\tmov.u64 %rd1, 64;\n\tst.local.u32 [%rd1], %r1;", 0, TF_PTX_ILLEGAL_ADDRESS,
         ".local window"},
        {"\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %tid.y;\n\tsetp.eq.u32 %p1, %r1, 5;\n"
         "\tsetp.eq.and.u32 %p2, %r2, 1, %p1;\n\t@%p2 trap;",
         0, TF_PTX_TRAP, "trap in kernel k at line 15: trap, block (0,0,0) thread (5,1,0)"},
        /* warp 1 (tid.y 2) waits at barrier 1, warp 0 at barrier 0 */
        {"\tmov.u32 %r1, %tid.y;\n\tsetp.eq.u32 %p1, %r1, 2;\n\t@%p1 bra $L_a;\n"
         "\tbar.sync 0;\n\tbra.uni $L_b;\n$L_a:\n\tbar.sync 1;\n$L_b:",
         0, TF_PTX_LAUNCH_TIMEOUT, "barrier deadlock"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r.read_only = cases[i].read_only;
        struct tf_ptx_launch l = {.grid = {1, 1, 1}, .block = {16, 3, 1}};
        enum tf_ptx_status st =
            run_text(kernel(cases[i].body), &l, &p, 8, &r, 1, err, sizeof(err), NULL);
        if (st != cases[i].st || !strstr(err, cases[i].msg))
            fail_msg("case %zu: status %s, message '%s', want %s '%s'", i, tf_ptx_status_str(st),
                     err, tf_ptx_status_str(cases[i].st), cases[i].msg);
    }
}

/* Device printf with a format or arguments outside the memory the kernel may read prints
 * nothing and returns -1 (a GPU would print garbage), as do %n and a * width; the launch goes
 * on. A good call returns the length it printed. */
static void printf_with_bad_arguments_returns_minus_one(void **state)
{
    (void)state;
    static const char text[] =
        HDR ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);\n"
            ".visible .entry k(.param .u64 fmt, .param .u64 args, .param .u64 out)\n{\n"
            "\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<4>;\n"
            "\tld.param.u64 %rd1, [fmt];\n\tld.param.u64 %rd2, [args];\n"
            "\tld.param.u64 %rd3, [out];\n"
            "\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n"
            "\t.param .b64 param1;\n\tst.param.b64 [param1+0], %rd2;\n"
            "\t.param .b32 retval0;\n\tcall.uni (retval0), vprintf, (param0, param1);\n"
            "\tld.param.b32 %r1, [retval0+0];\n\t}\n"
            "\tst.global.u32 [%rd3], %r1;\n\tret;\n}\n";
    struct tf_ptx_module *m = ptxt_load_text(text);
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "k");
    static char good[] = "%d|%s\n", pct_n[] = "%d%n\n", star[] = "%*d\n", word[] = "ok";
    uint64_t args[2];
    int32_t out = 0;
    struct {
        const char *fmt;
        uint64_t a0, a1;
        int32_t want;
    } cases[] = {
        {good, 7, (uint64_t)(uintptr_t)word, 5},   /* "7|ok\n" */
        {good, 7, 0x10, -1},                       /* %s outside memory */
        {(const char *)(uintptr_t)0x10, 0, 0, -1}, /* the format itself */
        {pct_n, 1, 0, -1},
        {star, 3, 4, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        args[0] = cases[i].a0;
        args[1] = cases[i].a1;
        uint64_t fa = (uint64_t)(uintptr_t)cases[i].fmt, aa = (uint64_t)(uintptr_t)args,
                 oa = (uint64_t)(uintptr_t)&out;
        struct tf_ptx_range bufs[] = {
            PTXT_RANGE(good, sizeof(good)), PTXT_RANGE(pct_n, sizeof(pct_n)),
            PTXT_RANGE(star, sizeof(star)), PTXT_RANGE(word, sizeof(word)),
            PTXT_RANGE(args, sizeof(args)), PTXT_RANGE(&out, sizeof(out))};
        struct ptxt_arg a[] = {PTXT_ARG(fa), PTXT_ARG(aa), PTXT_ARG(oa)};
        out = 12345;
        ptxt_launch_ok(k, (struct ptxt_dim){1, 1, 1}, (struct ptxt_dim){1, 1, 1}, 0, a, 3, bufs, 6);
        if (out != cases[i].want)
            fail_msg("case %zu: vprintf returned %d, expected %d", i, out, cases[i].want);
    }
    tf_ptx_module_destroy(m);
}

static void status_strings_name_each_status(void **state)
{
    (void)state;
    assert_string_equal(tf_ptx_status_str(TF_PTX_OK), "ok");
    assert_string_equal(tf_ptx_status_str(TF_PTX_INVALID_PTX), "invalid PTX");
    assert_string_equal(tf_ptx_status_str(TF_PTX_ILLEGAL_ADDRESS), "illegal address");
    assert_string_equal(tf_ptx_status_str(TF_PTX_LAUNCH_TIMEOUT), "launch timeout");
    assert_string_equal(tf_ptx_status_str(TF_PTX_ASSERT), "device-side assertion failed");
    assert_string_equal(tf_ptx_status_str((enum tf_ptx_status)99), "unknown status");
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unsupported_instructions_are_refused_naming_instruction_and_line),
        cmocka_unit_test(unsupported_directives_and_calls_are_refused),
        cmocka_unit_test(malformed_ptx_is_refused_with_its_line),
        cmocka_unit_test(launch_geometry_and_resources_are_checked),
        cmocka_unit_test(launch_bounds_directives_are_enforced),
        cmocka_unit_test(runaway_kernel_stops_at_max_instructions),
        cmocka_unit_test(runtime_faults_stop_the_launch_with_a_message),
        cmocka_unit_test(printf_with_bad_arguments_returns_minus_one),
        cmocka_unit_test(status_strings_name_each_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
