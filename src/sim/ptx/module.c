/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX engine's public module API (ptx.h): load/destroy, kernel and variable lookup,
 * variable binding, kernel metadata, status strings; and the bump arena modules own their
 * strings and tables in.
 */
#include "sim/ptx/decode.h"

#include "common/strutil.h"

#include <stdlib.h>

struct tf__chunk {
    struct tf__chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *tf__arena_alloc(struct tf__arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct tf__chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 60000 ? n : 65536 - sizeof(*c);
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *tf__arena_strndup(struct tf__arena *a, const char *s, size_t n)
{
    char *d = tf__arena_alloc(a, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

void tf__arena_free(struct tf__arena *a)
{
    struct tf__chunk *c = a->head;
    while (c) {
        struct tf__chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
}

const char *tf_ptx_status_str(enum tf_ptx_status st)
{
    switch (st) {
    case TF_PTX_OK:
        return "ok";
    case TF_PTX_INVALID_PTX:
        return "invalid PTX";
    case TF_PTX_NOT_FOUND:
        return "not found";
    case TF_PTX_INVALID_VALUE:
        return "invalid value";
    case TF_PTX_LAUNCH_OUT_OF_RESOURCES:
        return "launch out of resources";
    case TF_PTX_ILLEGAL_ADDRESS:
        return "illegal address";
    case TF_PTX_MISALIGNED_ADDRESS:
        return "misaligned address";
    case TF_PTX_TRAP:
        return "trap";
    case TF_PTX_LAUNCH_TIMEOUT:
        return "launch timeout";
    case TF_PTX_NO_MEMORY:
        return "out of memory";
    case TF_PTX_ASSERT:
        return "device-side assertion failed";
    }
    return "unknown status";
}

enum tf_ptx_status tf_ptx_module_load(const char *text, size_t len, struct tf_ptx_module **out,
                                      char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!text || !out) {
        tf_errf(err, errlen, "no PTX text");
        return TF_PTX_INVALID_PTX;
    }
    struct tf_ptx_module *mod = calloc(1, sizeof(*mod));
    if (!mod) {
        tf_errf(err, errlen, "out of memory");
        return TF_PTX_NO_MEMORY;
    }
    if (err && errlen)
        err[0] = 0;
    if (tf__parse(mod, text, len, err, errlen)) {
        int nomem = err && strstr(err, "out of memory");
        tf_ptx_module_destroy(mod);
        return nomem ? TF_PTX_NO_MEMORY : TF_PTX_INVALID_PTX;
    }
    *out = mod;
    return TF_PTX_OK;
}

void tf_ptx_module_destroy(struct tf_ptx_module *mod)
{
    if (!mod)
        return;
    tf__arena_free(&mod->arena);
    free(mod);
}

size_t tf_ptx_module_kernel_count(const struct tf_ptx_module *mod)
{
    return mod ? mod->nkernels : 0;
}

const struct tf_ptx_kernel *tf_ptx_module_kernel_at(const struct tf_ptx_module *mod, size_t i)
{
    return mod && i < mod->nkernels ? &mod->kernels[i] : NULL;
}

const struct tf_ptx_kernel *tf_ptx_module_kernel(const struct tf_ptx_module *mod, const char *name)
{
    if (!mod || !name)
        return NULL;
    for (uint32_t i = 0; i < mod->nkernels; i++)
        if (strcmp(mod->funcs[mod->kernels[i].func].name, name) == 0)
            return &mod->kernels[i];
    return NULL;
}

size_t tf_ptx_module_var_count(const struct tf_ptx_module *mod)
{
    return mod ? mod->nvars : 0;
}

const struct tf_ptx_var *tf_ptx_module_var_at(const struct tf_ptx_module *mod, size_t i)
{
    return mod && i < mod->nvars ? &mod->vars[i] : NULL;
}

long tf_ptx_module_var_find(const struct tf_ptx_module *mod, const char *name)
{
    if (!mod || !name)
        return -1;
    for (uint32_t i = 0; i < mod->nvars; i++)
        if (strcmp(mod->vars[i].name, name) == 0)
            return (long)i;
    return -1;
}

void tf_ptx_module_var_bind(struct tf_ptx_module *mod, size_t i, uint64_t addr)
{
    if (!mod || i >= mod->nvars)
        return;
    mod->var_addr[i] = addr;
    mod->var_bound[i] = 1;
    for (uint32_t r = 0; r < mod->nrelocs; r++) {
        const struct tf__reloc *rl = &mod->relocs[r];
        if (rl->var == i)
            mod->funcs[rl->func].consts[rl->cidx].value = addr + (uint64_t)rl->addend;
    }
}

void tf_ptx_kernel_get_info(const struct tf_ptx_kernel *k, struct tf_ptx_kernel_info *info)
{
    memset(info, 0, sizeof(*info));
    if (!k)
        return;
    const struct tf_ptx_module *mod = k->mod;
    const struct tf__func *f = &mod->funcs[k->func];
    info->name = f->name;
    info->nparams = f->nparams;
    info->params_size = f->params_size;
    info->static_shared = mod->module_shared + f->own_shared;
    info->local_bytes = f->stack_need;
    info->num_regs = f->nregs_declared > 255 ? 255 : f->nregs_declared;
    info->max_threads = f->max_threads;
    memcpy(info->reqntid, f->reqntid, sizeof(info->reqntid));
}

enum tf_ptx_status tf_ptx_kernel_param(const struct tf_ptx_kernel *k, uint32_t i, uint32_t *offset,
                                       uint32_t *size)
{
    if (!k)
        return TF_PTX_INVALID_VALUE;
    const struct tf__func *f = &k->mod->funcs[k->func];
    if (i >= f->nparams)
        return TF_PTX_INVALID_VALUE;
    if (offset)
        *offset = f->params[i].offset;
    if (size)
        *size = f->params[i].size;
    return TF_PTX_OK;
}
