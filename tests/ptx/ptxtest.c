/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers for the PTX engine tests (see ptxtest.h).
 */
#include "ptxtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int g_argc;
static char **g_argv;
static const char *g_suffix = "";

void ptxt_init(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--sm90") == 0)
            g_suffix = ".sm90";
}

const char *ptxt_arch(void)
{
    return *g_suffix ? "sm_90" : "sm_80";
}

const char *ptxt_path(const char *name)
{
    char suffix[128];
    snprintf(suffix, sizeof(suffix), "/%s%s.ptx", name, g_suffix);
    size_t sl = strlen(suffix);
    for (int i = 1; i < g_argc; i++) {
        size_t n = strlen(g_argv[i]);
        if (n >= sl && strcmp(g_argv[i] + n - sl, suffix) == 0)
            return g_argv[i];
    }
    fail_msg("no %s.ptx among the test arguments", name);
    return NULL;
}

char *ptxt_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = (size_t)n;
    return buf;
}

struct tf_ptx_module *ptxt_load_text(const char *text)
{
    struct tf_ptx_module *m = NULL;
    char err[256] = "";
    enum tf_ptx_status st = tf_ptx_module_load(text, strlen(text), &m, err, sizeof(err));
    if (st != TF_PTX_OK)
        fail_msg("load failed (%s): %s", tf_ptx_status_str(st), err);
    return m;
}

struct tf_ptx_module *ptxt_load(const char *name)
{
    char *text = ptxt_read(ptxt_path(name), NULL);
    struct tf_ptx_module *m = ptxt_load_text(text);
    free(text);
    return m;
}

const struct tf_ptx_kernel *ptxt_kernel(const struct tf_ptx_module *m, const char *name)
{
    const struct tf_ptx_kernel *k = tf_ptx_module_kernel(m, name);
    if (!k)
        fail_msg("no kernel %s", name);
    return k;
}

static int cmp_range(const void *a, const void *b)
{
    const struct tf_ptx_range *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

enum tf_ptx_status ptxt_launch(const struct tf_ptx_kernel *k, struct ptxt_dim grid,
                               struct ptxt_dim block, uint32_t dyn_shared,
                               const struct ptxt_arg *args, size_t nargs,
                               const struct tf_ptx_range *bufs, size_t nbufs, uint64_t max_insns,
                               uint64_t *insns, char *err, size_t errlen)
{
    struct tf_ptx_kernel_info info;
    tf_ptx_kernel_get_info(k, &info);
    assert_int_equal(info.nparams, nargs);
    uint8_t *params = calloc(1, info.params_size + 1);
    assert_non_null(params);
    for (uint32_t i = 0; i < nargs; i++) {
        uint32_t off, size;
        assert_int_equal(tf_ptx_kernel_param(k, i, &off, &size), TF_PTX_OK);
        if (size != args[i].size)
            fail_msg("%s param %u: size %u, test passes %zu", info.name, i, size, args[i].size);
        memcpy(params + off, args[i].p, size);
    }
    struct tf_ptx_range *r = calloc(nbufs + 1, sizeof(*r));
    assert_non_null(r);
    if (nbufs)
        memcpy(r, bufs, nbufs * sizeof(*r));
    qsort(r, nbufs, sizeof(*r), cmp_range);
    struct tf_ptx_memview mv = {r, nbufs};
    struct tf_ptx_env env = {.sm_count = 4};
    struct tf_ptx_launch l = {.kernel = k,
                              .grid = {grid.x, grid.y, grid.z},
                              .block = {block.x, block.y, block.z},
                              .dynamic_shared = dyn_shared,
                              .params = params,
                              .params_size = info.params_size,
                              .mem = &mv,
                              .env = &env,
                              .max_instructions = max_insns};
    enum tf_ptx_status st = tf_ptx_launch_run(&l, insns, err, errlen);
    free(r);
    free(params);
    return st;
}

void ptxt_launch_ok(const struct tf_ptx_kernel *k, struct ptxt_dim grid, struct ptxt_dim block,
                    uint32_t dyn_shared, const struct ptxt_arg *args, size_t nargs,
                    const struct tf_ptx_range *bufs, size_t nbufs)
{
    char err[512] = "";
    enum tf_ptx_status st = ptxt_launch(k, grid, block, dyn_shared, args, nargs, bufs, nbufs,
                                        UINT64_C(4000000000), NULL, err, sizeof(err));
    if (st != TF_PTX_OK)
        fail_msg("launch failed (%s): %s", tf_ptx_status_str(st), err);
}

uint32_t ptxt_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

float ptxt_randf(uint32_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)(ptxt_rand(s) >> 8) / (float)(1u << 24);
}
