/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX decoder's private state, shared by its parts: decode.c (the context, scoped names,
 * register slots and operands), decode_types.c (types, modifiers, opcode names) and
 * decode_decl.c (variable, register, label and function declarations, instructions, and
 * finishing a module). Not a public interface: decode.h is.
 */
#ifndef TF_SIM_PTX_DECODE_INT_H
#define TF_SIM_PTX_DECODE_INT_H

#include "sim/ptx/decode.h"

#include <stddef.h>
#include <stdint.h>

#define NBUCKET 1024

enum symk { SYM_REG, SYM_REGRANGE, SYM_PRED, SYM_PREDRANGE, SYM_VAR, SYM_FUNC };

struct sym {
    const char *name;
    int next; /* previous head of this bucket */
    uint32_t bucket;
    uint8_t kind, bits;
    uint32_t a, count;
};

/* A variable as the decoder sees it. */
struct dvar {
    const char *name;
    int space; /* MOD_GLOBAL / MOD_CONST / MOD_SHARED / MOD_LOCAL / MOD_PARAM / TF__SP_FPARAM */
    uint64_t size;
    uint32_t align;
    uint32_t modvar; /* global/const: module variable index */
    uint64_t offset; /* shared window / frame local / frame param / launch buffer offset */
    int own_shared;  /* .shared inside an entry: offset is relative to the entry's region */
    int extern_shared;
};

struct fixup {
    uint32_t pc, line;
    const char *name;
};

struct cfix { /* const slot whose value gets module_shared added at finish */
    uint32_t func, cidx;
};

struct vec {
    void *data;
    uint32_t n, cap;
};

#define VEC_AT(v, T, i) (((T *)(v).data)[i])

struct scope {
    uint32_t nsyms;
    uint32_t param_ptr;
};

struct tf__dctx {
    struct tf_ptx_module *mod;
    char *err;
    size_t errlen;
    int buckets[NBUCKET];
    struct vec syms;    /* struct sym */
    struct vec dvars;   /* struct dvar */
    struct vec code;    /* struct tf__insn */
    struct vec funcs;   /* struct tf__func */
    struct vec mvars;   /* struct tf_ptx_var */
    struct vec mspace;  /* int per module var */
    struct vec relocs;  /* struct tf__reloc */
    struct vec cfixes;  /* struct cfix */
    struct vec callfix; /* struct fixup: call insns by callee name */
    uint32_t module_shared, extern_align;
    /* the function being decoded */
    int in_func;
    uint32_t fidx;
    struct tf__func *fn; /* VEC_AT(funcs) entry: re-fetched after pushes */
    struct vec consts, specials, labels, lfix, scopes;
    int lbuckets[NBUCKET]; /* label name hash -> index in labels, chained through lnext */
    struct vec lnext;
    struct vec ctags; /* per const: 0 plain (deduplicated) or 1 */
    uint32_t nslots, npreds, local_size, param_ptr, param_peak;
    uint32_t own_shared;
    uint32_t sink, psink;
    uint32_t cur_line;
    uint32_t nregs_declared;
    struct vec callees;
};

/* Appends the SZ-byte ITEM to V; -1 when out of memory. */
int tf__vec_push(struct vec *v, const void *item, size_t sz);
/* FNV-1a of S. */
uint32_t tf__hash_str(const char *s);
/* Records "out of memory" in the context's error; -1. */
int tf__d_oom(struct tf__dctx *dc);

/* Scoped names: added under the innermost scope, found innermost first, dropped with it. */
int tf__sym_add(struct tf__dctx *dc, const char *name, int kind, uint32_t a, uint32_t count,
                unsigned bits);
struct sym *tf__sym_find(struct tf__dctx *dc, const char *name);
int tf__sym_in_scope(struct tf__dctx *dc, const char *name, uint32_t mark);
int tf__in_scoped_range(struct tf__dctx *dc, const char *name, uint32_t mark);
void tf__sym_pop_to(struct tf__dctx *dc, uint32_t n);
uint32_t tf__scope_mark(struct tf__dctx *dc);

/* N fresh register slots of the function being decoded, the first at *FIRST. */
int tf__new_slots(struct tf__dctx *dc, uint32_t n, uint32_t *first);
struct dvar *tf__dvar_at(struct tf__dctx *dc, uint32_t i);

#endif
