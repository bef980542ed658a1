/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: PTX module load (tf_ptx_module_load) on arbitrary text must never crash,
 * leak or hang, must explain every refusal, and whatever loads must run: each kernel is
 * launched on a small grid with a bounded instruction budget, its pointer parameters aimed at
 * a scratch buffer, and must finish or fail with a status and a message.
 */
#include "sim/ptx/ptx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t scratch[512];

static void run_kernel(const struct tf_ptx_kernel *k)
{
    struct tf_ptx_kernel_info info;
    tf_ptx_kernel_get_info(k, &info);
    if (info.params_size > 4096)
        return;
    memset(scratch, 0, sizeof(scratch));
    uint8_t params[4096];
    memset(params, 0, sizeof(params));
    uint64_t base = (uint64_t)(uintptr_t)scratch;
    for (uint32_t i = 0; i < info.nparams; i++) {
        uint32_t off, sz;
        if (tf_ptx_kernel_param(k, i, &off, &sz) != TF_PTX_OK)
            abort();
        if (off + sz > info.params_size)
            abort();
        if (sz == 8)
            memcpy(params + off, &base, 8);
        else if (sz == 4)
            memcpy(params + off, &(uint32_t){16}, 4);
    }
    struct tf_ptx_range r = {base, sizeof(scratch), 0};
    struct tf_ptx_memview mv = {&r, 1};
    struct tf_ptx_env env = {.sm_count = 2};
    uint32_t bx = 48, by = 1, bz = 1;
    if (info.reqntid[0]) {
        bx = info.reqntid[0];
        by = info.reqntid[1];
        bz = info.reqntid[2];
    }
    struct tf_ptx_launch l = {.kernel = k,
                              .grid = {2, 1, 1},
                              .block = {bx, by, bz},
                              .dynamic_shared = 256,
                              .params = params,
                              .params_size = info.params_size,
                              .mem = &mv,
                              .env = &env,
                              .max_instructions = 20000};
    char err[256] = "";
    uint64_t insns = 0;
    enum tf_ptx_status st = tf_ptx_launch_run(&l, &insns, err, sizeof(err));
    if (st != TF_PTX_OK && !err[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_ptx_module *m = NULL;
    char err[256] = "";
    enum tf_ptx_status st = tf_ptx_module_load((const char *)data, size, &m, err, sizeof(err));
    if (st != TF_PTX_OK) {
        if (m || !err[0])
            abort();
        return 0;
    }
    if (!m)
        abort();
    /* variables: check the metadata, bind them all to the scratch buffer */
    for (size_t i = 0; i < tf_ptx_module_var_count(m); i++) {
        const struct tf_ptx_var *v = tf_ptx_module_var_at(m, i);
        if (!v || !v->name || v->init_len > v->size)
            abort();
        if (tf_ptx_module_var_find(m, v->name) < 0)
            abort();
        tf_ptx_module_var_bind(m, i, (uint64_t)(uintptr_t)scratch);
    }
    size_t nk = tf_ptx_module_kernel_count(m);
    for (size_t i = 0; i < nk && i < 4; i++)
        run_kernel(tf_ptx_module_kernel_at(m, i));
    tf_ptx_module_destroy(m);
    return 0;
}
