/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header (src/sim/ptx/ only): the interface between the parser (parse.c, syntax) and
 * the decoder (decode.c, meaning). The parser walks the text once and calls these builders in
 * source order; the decoder resolves names in scopes, lays out variables and parameters,
 * allocates register slots, and turns each instruction into a struct tf__insn through the
 * family decoders in ops_*.c. tf__d_finish resolves calls and labels, computes reconvergence
 * points and stack needs. Every builder returns 0 or -1 with "line N: ..." in the error
 * buffer given to tf__dctx_new.
 */
#ifndef TF_SIM_PTX_DECODE_H
#define TF_SIM_PTX_DECODE_H

#include "sim/ptx/internal.h"

struct tf__vardecl {
    uint32_t line;
    int space; /* MOD_GLOBAL, MOD_CONST, MOD_SHARED, MOD_LOCAL, MOD_PARAM */
    int is_extern;
    uint32_t align; /* 0: natural */
    int ty;
    unsigned vec; /* 1, 2, 4 */
    const char *name;
    uint64_t count; /* elements (product of array dimensions); 1 for a scalar */
    int unsized;    /* name[] */
    int managed;    /* .attribute(.managed) */
    const uint8_t *init;
    uint64_t init_len;
};

struct tf__funcdecl {
    uint32_t line;
    const char *name;
    int is_entry;
    int is_extern;
    int has_body;
    uint32_t nparams, nrets;
    struct tf__vardecl *params, *rets;
    uint32_t maxntid[3], reqntid[3];
};

struct tf__dctx *tf__dctx_new(struct tf_ptx_module *mod, char *err, size_t errlen);
void tf__dctx_free(struct tf__dctx *dc);

/* Module-scope or (between func_begin and func_end) function-scope variable. */
int tf__d_var(struct tf__dctx *dc, const struct tf__vardecl *v);
/* Function declaration; with a body, the statements follow until tf__d_func_end. */
int tf__d_func_begin(struct tf__dctx *dc, const struct tf__funcdecl *f);
int tf__d_func_end(struct tf__dctx *dc, uint32_t line);
/* .reg TY NAME (COUNT < 0) or NAME<COUNT>. */
int tf__d_reg(struct tf__dctx *dc, uint32_t line, int ty, const char *name, int64_t count);
int tf__d_label(struct tf__dctx *dc, uint32_t line, const char *name);
int tf__d_scope(struct tf__dctx *dc, uint32_t line, int open);
int tf__d_insn(struct tf__dctx *dc, struct tf__pinsn *pi);
int tf__d_finish(struct tf__dctx *dc);
struct tf__arena *tf__d_arena(struct tf__dctx *dc);

/* parse.c: parses TEXT into MOD through the builders. */
int tf__parse(struct tf_ptx_module *mod, const char *text, size_t len, char *err, size_t errlen);

#endif
