/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX parser: module directives, variable declarations with initialisers, function
 * headers (.entry/.func with .param lists and performance directives) and bodies (scopes,
 * .reg declarations, labels, guarded instructions and their operands). It only knows syntax;
 * every construct goes to the decoder's builders (decode.h) in source order. Debug
 * directives (.loc, .file, .section) and .pragma are skipped.
 */
#include "sim/ptx/decode.h"
#include "sim/ptx/lex.h"

#include "common/strutil.h"

#include <stdlib.h>
#include <string.h>

#define MAX_INIT_DEPTH 8
#define MAX_LIST 256

struct ps {
    struct tf__lexer lx;
    struct tf__tok t;
    struct tf__dctx *dc;
    struct tf__arena *ar;
    char *err;
    size_t errlen;
};

static int next(struct ps *ps)
{
    return tf__lex_next(&ps->lx, &ps->t);
}

static int perr(struct ps *ps, const char *fmt, const char *arg)
{
    char msg[160];
    tf_errf(msg, sizeof(msg), fmt, arg);
    tf_errf(ps->err, ps->errlen, "line %u: %s", ps->t.line, msg);
    return -1;
}

static const char *tokstr(struct ps *ps)
{
    static const char *const names[] = {"end of input", "identifier", "directive",
                                        "integer",      "float",      "double",
                                        "number",       "string",     "punctuation"};
    (void)ps;
    return names[ps->t.kind];
}

/* The current token's text as a short quoted form for messages. */
static int unexpected(struct ps *ps, const char *wanted)
{
    char tok[48];
    size_t n = ps->t.len < sizeof(tok) - 1 ? ps->t.len : sizeof(tok) - 1;
    if (ps->t.kind == TK_EOF) {
        tf_errf(ps->err, ps->errlen, "line %u: expected %s, got end of input", ps->t.line, wanted);
    } else {
        memcpy(tok, ps->t.s, n);
        tok[n] = 0;
        tf_errf(ps->err, ps->errlen, "line %u: expected %s, got %s '%s'", ps->t.line, wanted,
                tokstr(ps), tok);
    }
    return -1;
}

static int is_punct(struct ps *ps, char c)
{
    return ps->t.kind == TK_PUNCT && ps->t.c == c;
}

static int expect_punct(struct ps *ps, char c)
{
    char w[4] = {'\'', c, '\'', 0};
    if (!is_punct(ps, c))
        return unexpected(ps, w);
    return next(ps);
}

static char *tokdup(struct ps *ps)
{
    char *s = tf__arena_strndup(ps->ar, ps->t.s, ps->t.len);
    if (!s)
        perr(ps, "%s", "out of memory");
    return s;
}

static int expect_int(struct ps *ps, uint64_t *v)
{
    if (ps->t.kind != TK_INT)
        return unexpected(ps, "an integer");
    *v = ps->t.u;
    return next(ps);
}

/* ---- variable declarations ---- */

static int space_of(const struct tf__tok *t)
{
    if (tf__tok_is(t, ".global"))
        return MOD_GLOBAL;
    if (tf__tok_is(t, ".const"))
        return MOD_CONST;
    if (tf__tok_is(t, ".shared"))
        return MOD_SHARED;
    if (tf__tok_is(t, ".local"))
        return MOD_LOCAL;
    if (tf__tok_is(t, ".param"))
        return MOD_PARAM;
    return MOD_NONE;
}

static int dir_type(const struct tf__tok *t)
{
    char buf[16];
    if (t->kind != TK_DIR || t->len < 2 || t->len > sizeof(buf))
        return TY_NONE;
    memcpy(buf, t->s + 1, t->len - 1);
    buf[t->len - 1] = 0;
    return tf__ty_parse(buf);
}

/* Byte buffer for an initialiser, bounded by the declared size when known. */
struct initbuf {
    uint8_t *data;
    uint64_t len, cap, limit;
};

static int init_put(struct ps *ps, struct initbuf *b, const void *src, unsigned n)
{
    if (b->limit && b->len + n > b->limit)
        return perr(ps, "%s", "initializer larger than the variable");
    if (b->len + n > (64u << 20))
        return perr(ps, "%s", "initializer too large");
    if (b->len + n > b->cap) {
        uint64_t nc = b->cap ? b->cap * 2 : 64;
        while (nc < b->len + n)
            nc *= 2;
        uint8_t *nd = realloc(b->data, nc);
        if (!nd)
            return perr(ps, "%s", "out of memory");
        b->data = nd;
        b->cap = nc;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* One scalar initialiser element of type TY, little-endian. */
static int init_scalar(struct ps *ps, struct initbuf *b, int ty)
{
    int neg = 0;
    if (is_punct(ps, '-')) {
        neg = 1;
        if (next(ps))
            return -1;
    }
    unsigned bits = tf__ty_bits(ty);
    uint8_t bytes[8];
    uint64_t v = 0;
    if (ps->t.kind == TK_INT || ps->t.kind == TK_F32 || ps->t.kind == TK_F64 ||
        ps->t.kind == TK_DEC) {
        int k = ps->t.kind;
        if (ty == TY_F32) {
            float f;
            if (k == TK_F32) {
                v = ps->t.u;
                memcpy(&f, &(uint32_t){(uint32_t)v}, 4);
            } else if (k == TK_F64) {
                double d;
                memcpy(&d, &ps->t.u, 8);
                f = (float)d;
            } else if (k == TK_DEC) {
                f = (float)ps->t.d;
            } else {
                f = (float)ps->t.u;
            }
            if (neg)
                f = -f;
            uint32_t u;
            memcpy(&u, &f, 4);
            v = u;
        } else if (ty == TY_F64) {
            double d;
            if (k == TK_F64)
                memcpy(&d, &ps->t.u, 8);
            else if (k == TK_F32) {
                float f;
                memcpy(&f, &(uint32_t){(uint32_t)ps->t.u}, 4);
                d = f;
            } else if (k == TK_DEC)
                d = ps->t.d;
            else
                d = (double)ps->t.u;
            if (neg)
                d = -d;
            memcpy(&v, &d, 8);
        } else {
            if (k == TK_DEC)
                return perr(ps, "%s", "floating-point initializer for an integer variable");
            v = ps->t.u;
            if (neg)
                v = (uint64_t)0 - v;
        }
    } else if (ps->t.kind == TK_IDENT) {
        char name[64];
        size_t n = ps->t.len < sizeof(name) - 1 ? ps->t.len : sizeof(name) - 1;
        memcpy(name, ps->t.s, n);
        name[n] = 0;
        return perr(ps, "unsupported initializer: address of '%s'", name);
    } else {
        return unexpected(ps, "an initializer value");
    }
    if (bits == 0 || bits > 64)
        return perr(ps, "%s", "unsupported initializer type");
    for (unsigned i = 0; i < bits / 8; i++)
        bytes[i] = (uint8_t)(v >> (8 * i));
    if (init_put(ps, b, bytes, bits / 8))
        return -1;
    return next(ps);
}

static int init_list(struct ps *ps, struct initbuf *b, int ty, int depth)
{
    if (depth > MAX_INIT_DEPTH)
        return perr(ps, "%s", "initializer nested too deeply");
    if (!is_punct(ps, '{'))
        return init_scalar(ps, b, ty);
    if (next(ps))
        return -1;
    if (is_punct(ps, '}'))
        return next(ps);
    for (;;) {
        if (init_list(ps, b, ty, depth + 1))
            return -1;
        if (is_punct(ps, ',')) {
            if (next(ps))
                return -1;
            continue;
        }
        return expect_punct(ps, '}');
    }
}

/* Parses the rest of a declaration after its state-space directive (current token). In a
 * parameter list (PARAMLIST), stops before ',' / ')' and allows .ptr attributes. OUT gets the
 * (last) declaration for parameter lists; otherwise each name goes to tf__d_var. */
static int parse_var(struct ps *ps, int space, int is_extern, int paramlist,
                     struct tf__vardecl *out)
{
    struct tf__vardecl v;
    memset(&v, 0, sizeof(v));
    v.line = ps->t.line;
    v.space = space;
    v.is_extern = is_extern;
    v.vec = 1;
    if (next(ps))
        return -1;
    for (;;) {
        if (ps->t.kind != TK_DIR)
            break;
        if (tf__tok_is(&ps->t, ".align")) {
            uint64_t a = 0;
            uint32_t line = ps->t.line;
            if (next(ps) || expect_int(ps, &a))
                return -1;
            if (a == 0 || (a & (a - 1)) || a > 4096) {
                ps->t.line = line;
                return perr(ps, "%s", "bad .align value");
            }
            v.align = (uint32_t)a;
        } else if (tf__tok_is(&ps->t, ".v2") || tf__tok_is(&ps->t, ".v4") ||
                   tf__tok_is(&ps->t, ".v8")) {
            v.vec = (unsigned)(ps->t.s[2] - '0');
            if (next(ps))
                return -1;
        } else if (tf__tok_is(&ps->t, ".ptr") && paramlist) {
            if (next(ps))
                return -1;
            if (ps->t.kind == TK_DIR && space_of(&ps->t) != MOD_NONE && next(ps))
                return -1;
            if (tf__tok_is(&ps->t, ".align")) {
                uint64_t a = 0;
                if (next(ps) || expect_int(ps, &a))
                    return -1;
            }
        } else if (tf__tok_is(&ps->t, ".attribute")) {
            /* .attribute(.managed): a __managed__ variable (the driver decides where it
             * lives); the engine sees plain global memory */
            if (next(ps) || expect_punct(ps, '('))
                return -1;
            if (ps->t.kind != TK_DIR)
                return unexpected(ps, "an attribute");
            if (!tf__tok_is(&ps->t, ".managed"))
                return perr(ps, "%s", "unsupported variable attribute");
            v.managed = 1;
            if (next(ps) || expect_punct(ps, ')'))
                return -1;
        } else if (dir_type(&ps->t) != TY_NONE) {
            v.ty = dir_type(&ps->t);
            if (next(ps))
                return -1;
        } else {
            char d[48];
            size_t n = ps->t.len < sizeof(d) - 1 ? ps->t.len : sizeof(d) - 1;
            memcpy(d, ps->t.s, n);
            d[n] = 0;
            return perr(ps, "unsupported directive '%s' in declaration", d);
        }
    }
    if (v.ty == TY_NONE)
        return unexpected(ps, "a type");
    for (;;) {
        if (ps->t.kind != TK_IDENT)
            return unexpected(ps, "a variable name");
        struct tf__vardecl one = v;
        one.line = ps->t.line;
        one.name = tokdup(ps);
        if (!one.name || next(ps))
            return -1;
        one.count = 1;
        while (is_punct(ps, '[')) {
            if (next(ps))
                return -1;
            if (is_punct(ps, ']')) {
                one.unsized = 1;
            } else {
                uint64_t n = 0;
                if (expect_int(ps, &n))
                    return -1;
                if (n == 0 || one.count > (UINT64_C(1) << 40) / n)
                    return perr(ps, "%s", "bad array size");
                one.count *= n;
            }
            if (expect_punct(ps, ']'))
                return -1;
        }
        struct initbuf ib = {0};
        if (is_punct(ps, '=')) {
            if (paramlist)
                return perr(ps, "%s", "initializer on a parameter");
            unsigned esz = tf__ty_bits(one.ty) / 8 * one.vec;
            ib.limit = one.unsized ? 0 : one.count * esz;
            if (next(ps) || init_list(ps, &ib, one.ty, 0)) {
                free(ib.data);
                return -1;
            }
            if (ib.len) {
                uint8_t *copy = tf__arena_alloc(ps->ar, ib.len);
                if (!copy) {
                    free(ib.data);
                    return perr(ps, "%s", "out of memory");
                }
                memcpy(copy, ib.data, ib.len);
                one.init = copy;
                one.init_len = ib.len;
                if (one.unsized) {
                    if (esz == 0 || ib.len % esz)
                        return perr(ps, "%s", "initializer does not fill whole elements");
                    one.count = ib.len / esz;
                    one.unsized = 0;
                }
            }
            free(ib.data);
        }
        if (paramlist) {
            *out = one;
            return 0;
        }
        if (tf__d_var(ps->dc, &one))
            return -1;
        if (is_punct(ps, ',')) {
            if (next(ps))
                return -1;
            continue;
        }
        return expect_punct(ps, ';');
    }
}

/* ---- functions ---- */

static int parse_params(struct ps *ps, struct tf__vardecl **out, uint32_t *n)
{
    if (expect_punct(ps, '('))
        return -1;
    struct tf__vardecl *arr = NULL;
    uint32_t cnt = 0, cap = 0;
    while (!is_punct(ps, ')')) {
        if (ps->t.kind != TK_DIR || !tf__tok_is(&ps->t, ".param")) {
            if (tf__tok_is(&ps->t, ".reg"))
                return perr(ps, "%s", "unsupported .reg function parameter");
            return unexpected(ps, "'.param'");
        }
        if (cnt == cap) {
            uint32_t nc = cap ? cap * 2 : 8;
            if (nc > 4096)
                return perr(ps, "%s", "too many parameters");
            struct tf__vardecl *na = tf__arena_alloc(ps->ar, nc * sizeof(*na));
            if (!na)
                return perr(ps, "%s", "out of memory");
            if (cnt)
                memcpy(na, arr, cnt * sizeof(*na));
            arr = na;
            cap = nc;
        }
        if (parse_var(ps, MOD_PARAM, 0, 1, &arr[cnt]))
            return -1;
        cnt++;
        if (is_punct(ps, ',')) {
            if (next(ps))
                return -1;
        } else if (!is_punct(ps, ')')) {
            return unexpected(ps, "',' or ')'");
        }
    }
    *out = arr;
    *n = cnt;
    return next(ps);
}

static int parse_dims(struct ps *ps, uint32_t d[3])
{
    d[0] = d[1] = d[2] = 1;
    for (int i = 0; i < 3; i++) {
        uint64_t v = 0;
        if (expect_int(ps, &v))
            return -1;
        if (v == 0 || v > 1024 * 1024)
            return perr(ps, "%s", "bad thread count");
        d[i] = (uint32_t)v;
        if (!is_punct(ps, ','))
            break;
        if (next(ps))
            return -1;
    }
    return 0;
}

static int parse_body(struct ps *ps);

static int parse_func(struct ps *ps, int is_entry, int is_extern)
{
    struct tf__funcdecl f;
    memset(&f, 0, sizeof(f));
    f.line = ps->t.line;
    f.is_entry = is_entry;
    f.is_extern = is_extern;
    if (next(ps))
        return -1;
    if (!is_entry && is_punct(ps, '(')) {
        if (parse_params(ps, &f.rets, &f.nrets))
            return -1;
    }
    if (ps->t.kind != TK_IDENT)
        return unexpected(ps, "a function name");
    f.name = tokdup(ps);
    if (!f.name || next(ps))
        return -1;
    if (is_punct(ps, '(')) {
        if (parse_params(ps, &f.params, &f.nparams))
            return -1;
    } else if (is_entry) {
        return unexpected(ps, "'('");
    }
    for (;;) {
        if (ps->t.kind != TK_DIR)
            break;
        if (tf__tok_is(&ps->t, ".maxntid")) {
            if (next(ps) || parse_dims(ps, f.maxntid))
                return -1;
        } else if (tf__tok_is(&ps->t, ".reqntid")) {
            if (next(ps) || parse_dims(ps, f.reqntid))
                return -1;
        } else if (tf__tok_is(&ps->t, ".reqnctapercluster")) {
            uint32_t d[3];
            if (next(ps) || parse_dims(ps, d))
                return -1;
        } else if (tf__tok_is(&ps->t, ".minnctapersm") || tf__tok_is(&ps->t, ".maxnctapersm") ||
                   tf__tok_is(&ps->t, ".maxnreg") || tf__tok_is(&ps->t, ".maxclusterrank")) {
            uint64_t v = 0;
            if (next(ps) || expect_int(ps, &v))
                return -1;
        } else if (tf__tok_is(&ps->t, ".noreturn") || tf__tok_is(&ps->t, ".explicitcluster") ||
                   tf__tok_is(&ps->t, ".blocksareclusters")) {
            if (next(ps))
                return -1;
        } else if (tf__tok_is(&ps->t, ".pragma")) {
            if (next(ps))
                return -1;
            while (ps->t.kind == TK_STR || is_punct(ps, ','))
                if (next(ps))
                    return -1;
            if (expect_punct(ps, ';'))
                return -1;
        } else {
            char d[48];
            size_t n = ps->t.len < sizeof(d) - 1 ? ps->t.len : sizeof(d) - 1;
            memcpy(d, ps->t.s, n);
            d[n] = 0;
            return perr(ps, "unsupported directive '%s'", d);
        }
    }
    if (is_punct(ps, ';')) {
        if (tf__d_func_begin(ps->dc, &f))
            return -1;
        return next(ps);
    }
    if (!is_punct(ps, '{'))
        return unexpected(ps, "'{' or ';'");
    f.has_body = 1;
    if (tf__d_func_begin(ps->dc, &f) || next(ps))
        return -1;
    return parse_body(ps);
}

/* ---- instructions ---- */

static int parse_operand(struct ps *ps, struct tf__pop *op, int depth);

static int parse_seq(struct ps *ps, struct tf__pop *op, char close, int depth)
{
    struct tf__pop tmp[MAX_LIST];
    uint32_t n = 0;
    if (next(ps))
        return -1;
    while (!is_punct(ps, close)) {
        if (n == MAX_LIST)
            return perr(ps, "%s", "operand list too long");
        if (parse_operand(ps, &tmp[n], depth + 1))
            return -1;
        n++;
        if (is_punct(ps, ',')) {
            if (next(ps))
                return -1;
        } else if (!is_punct(ps, close)) {
            char w[16];
            tf_errf(w, sizeof(w), "',' or '%c'", close);
            return unexpected(ps, w);
        }
    }
    op->n = n;
    if (n) {
        op->elems = tf__arena_alloc(ps->ar, n * sizeof(*tmp));
        if (!op->elems)
            return perr(ps, "%s", "out of memory");
        memcpy(op->elems, tmp, n * sizeof(*tmp));
    }
    return next(ps);
}

static int parse_offset(struct ps *ps, int64_t *off)
{
    while (is_punct(ps, '+') || is_punct(ps, '-')) {
        int neg = is_punct(ps, '-');
        if (next(ps))
            return -1;
        if (is_punct(ps, '-')) {
            neg = !neg;
            if (next(ps))
                return -1;
        }
        uint64_t v = 0;
        if (expect_int(ps, &v))
            return -1;
        if (v > (UINT64_C(1) << 62))
            return perr(ps, "%s", "address offset out of range");
        *off += neg ? -(int64_t)v : (int64_t)v;
    }
    return 0;
}

static int parse_operand(struct ps *ps, struct tf__pop *op, int depth)
{
    memset(op, 0, sizeof(*op));
    if (depth > 2)
        return perr(ps, "%s", "operand nested too deeply");
    if (is_punct(ps, '[')) {
        op->kind = PK_ADDR;
        if (next(ps))
            return -1;
        if (ps->t.kind == TK_IDENT) {
            op->name = tokdup(ps);
            if (!op->name || next(ps) || parse_offset(ps, &op->imm))
                return -1;
        } else if (ps->t.kind == TK_INT) {
            if (ps->t.u > (UINT64_C(1) << 62))
                return perr(ps, "%s", "address out of range");
            op->imm = (int64_t)ps->t.u;
            if (next(ps) || parse_offset(ps, &op->imm))
                return -1;
        } else {
            return unexpected(ps, "an address");
        }
        return expect_punct(ps, ']');
    }
    if (is_punct(ps, '{')) {
        op->kind = PK_VEC;
        return parse_seq(ps, op, '}', depth);
    }
    if (is_punct(ps, '(')) {
        op->kind = PK_LIST;
        return parse_seq(ps, op, ')', depth);
    }
    if (is_punct(ps, '!')) {
        if (next(ps))
            return -1;
        if (ps->t.kind != TK_IDENT)
            return unexpected(ps, "a predicate");
        op->kind = PK_REG;
        op->neg = 1;
        op->name = tokdup(ps);
        return op->name ? next(ps) : -1;
    }
    int neg = 0;
    if (is_punct(ps, '-')) {
        neg = 1;
        if (next(ps))
            return -1;
    }
    switch (ps->t.kind) {
    case TK_INT:
        op->kind = PK_IMM;
        op->imm = (int64_t)ps->t.u;
        if (neg)
            op->imm = (int64_t)((uint64_t)0 - ps->t.u);
        return next(ps);
    case TK_F32:
        op->kind = PK_F32;
        op->imm = (int64_t)(ps->t.u ^ (neg ? 0x80000000u : 0));
        return next(ps);
    case TK_F64:
        op->kind = PK_F64;
        op->imm = (int64_t)(ps->t.u ^ (neg ? 0x8000000000000000ull : 0));
        return next(ps);
    case TK_DEC:
        op->kind = PK_DEC;
        op->dval = neg ? -ps->t.d : ps->t.d;
        return next(ps);
    case TK_IDENT:
        if (neg)
            return unexpected(ps, "a number after '-'");
        if (tf__tok_is(&ps->t, "_")) {
            op->kind = PK_SINK;
            return next(ps);
        }
        op->kind = PK_REG;
        op->name = tokdup(ps);
        if (!op->name || next(ps))
            return -1;
        if (is_punct(ps, '|')) {
            if (next(ps))
                return -1;
            if (ps->t.kind != TK_IDENT)
                return unexpected(ps, "a predicate after '|'");
            op->name2 = tokdup(ps);
            if (!op->name2 || next(ps))
                return -1;
        }
        return parse_offset(ps, &op->imm);
    default:
        return unexpected(ps, "an operand");
    }
}

static int split_opcode(struct ps *ps, struct tf__pinsn *pi)
{
    size_t n = strlen(pi->opcode);
    if (n >= sizeof(pi->modbuf))
        return perr(ps, "%s", "opcode too long");
    memcpy(pi->modbuf, pi->opcode, n + 1);
    char *dot = strchr(pi->modbuf, '.');
    size_t bl = dot ? (size_t)(dot - pi->modbuf) : n;
    if (bl >= sizeof(pi->base))
        return perr(ps, "unsupported instruction '%s'", pi->opcode);
    memcpy(pi->base, pi->modbuf, bl);
    pi->base[bl] = 0;
    pi->nmods = 0;
    while (dot) {
        *dot = 0;
        char *m = dot + 1;
        dot = strchr(m, '.');
        if (*m == 0 || pi->nmods == TF__MAX_MODS)
            return perr(ps, "unsupported instruction '%s'", pi->opcode);
        pi->mods[pi->nmods++] = m;
    }
    return 0;
}

static int parse_insn(struct ps *ps)
{
    struct tf__pinsn pi;
    memset(&pi, 0, sizeof(pi));
    pi.line = ps->t.line;
    if (is_punct(ps, '@')) {
        if (next(ps))
            return -1;
        if (is_punct(ps, '!')) {
            pi.gneg = 1;
            if (next(ps))
                return -1;
        }
        if (ps->t.kind != TK_IDENT)
            return unexpected(ps, "a predicate after '@'");
        pi.guard = tokdup(ps);
        if (!pi.guard || next(ps))
            return -1;
    }
    if (ps->t.kind != TK_IDENT)
        return unexpected(ps, "an instruction");
    pi.line = ps->t.line;
    pi.opcode = tokdup(ps);
    if (!pi.opcode || split_opcode(ps, &pi))
        return -1;
    /* refuse unknown instructions before their operands, whatever syntax those use */
    if (!tf__known_opcode(pi.base))
        return perr(ps, "unsupported instruction '%s'", pi.opcode);
    if (next(ps))
        return -1;
    while (!is_punct(ps, ';')) {
        if (pi.nops == TF__MAX_OPS)
            return perr(ps, "%s", "too many operands");
        if (parse_operand(ps, &pi.ops[pi.nops], 0))
            return -1;
        pi.nops++;
        if (is_punct(ps, ',')) {
            if (next(ps))
                return -1;
        } else if (!is_punct(ps, ';')) {
            return unexpected(ps, "',' or ';'");
        }
    }
    if (tf__d_insn(ps->dc, &pi))
        return -1;
    return next(ps);
}

static int skip_pragma(struct ps *ps)
{
    if (next(ps))
        return -1;
    while (ps->t.kind == TK_STR || is_punct(ps, ','))
        if (next(ps))
            return -1;
    return expect_punct(ps, ';');
}

/* ".reg .b32 a, b<4>;" or, as inline asm in CUDA's headers writes it, ".reg.b32 a;" (the type
 * joined to the directive: the lexer keeps it one token). */
static int parse_reg(struct ps *ps)
{
    int ty = TY_NONE;
    if (ps->t.len > 5 && !memcmp(ps->t.s, ".reg.", 5)) {
        struct tf__tok suffix = ps->t;
        suffix.s += 4;
        suffix.len -= 4;
        if ((ty = dir_type(&suffix)) == TY_NONE)
            return perr(ps, "%s", "unsupported register declaration");
    } else {
        if (next(ps))
            return -1;
        if (ps->t.kind == TK_DIR &&
            (tf__tok_is(&ps->t, ".v2") || tf__tok_is(&ps->t, ".v4") || tf__tok_is(&ps->t, ".v8")))
            return perr(ps, "%s", "unsupported vector register declaration");
        ty = dir_type(&ps->t);
        if (ty == TY_NONE)
            return unexpected(ps, "a register type");
    }
    if (next(ps))
        return -1;
    for (;;) {
        if (ps->t.kind != TK_IDENT)
            return unexpected(ps, "a register name");
        uint32_t line = ps->t.line;
        char *name = tokdup(ps);
        if (!name || next(ps))
            return -1;
        int64_t count = -1;
        if (is_punct(ps, '<')) {
            uint64_t n = 0;
            if (next(ps) || expect_int(ps, &n) || expect_punct(ps, '>'))
                return -1;
            if (n > TF__MAX_SLOTS)
                return perr(ps, "%s", "too many registers");
            count = (int64_t)n;
        }
        if (tf__d_reg(ps->dc, line, ty, name, count))
            return -1;
        if (is_punct(ps, ',')) {
            if (next(ps))
                return -1;
            continue;
        }
        return expect_punct(ps, ';');
    }
}

static int parse_body(struct ps *ps)
{
    int depth = 0;
    for (;;) {
        struct tf__tok *t = &ps->t;
        if (t->kind == TK_EOF)
            return unexpected(ps, "'}'");
        if (is_punct(ps, '{')) {
            if (depth >= 64)
                return perr(ps, "%s", "scopes nested too deeply");
            depth++;
            if (tf__d_scope(ps->dc, t->line, 1) || next(ps))
                return -1;
            continue;
        }
        if (is_punct(ps, '}')) {
            uint32_t line = t->line;
            if (depth == 0) {
                if (tf__d_func_end(ps->dc, line))
                    return -1;
                return next(ps);
            }
            depth--;
            if (tf__d_scope(ps->dc, line, 0) || next(ps))
                return -1;
            continue;
        }
        if (t->kind == TK_DIR) {
            if (tf__tok_is(t, ".reg") || (t->len > 5 && !memcmp(t->s, ".reg.", 5))) {
                if (parse_reg(ps))
                    return -1;
            } else if (space_of(t) != MOD_NONE) {
                if (parse_var(ps, space_of(t), 0, 0, NULL))
                    return -1;
            } else if (tf__tok_is(t, ".loc") || tf__tok_is(t, ".file")) {
                tf__lex_skip_line(&ps->lx);
                if (next(ps))
                    return -1;
            } else if (tf__tok_is(t, ".pragma")) {
                if (skip_pragma(ps))
                    return -1;
            } else {
                char d[48];
                size_t n = t->len < sizeof(d) - 1 ? t->len : sizeof(d) - 1;
                memcpy(d, t->s, n);
                d[n] = 0;
                return perr(ps, "unsupported directive '%s'", d);
            }
            continue;
        }
        if (t->kind == TK_IDENT) {
            /* label? */
            struct tf__lexer save = ps->lx;
            struct tf__tok tok = *t;
            if (next(ps))
                return -1;
            if (is_punct(ps, ':')) {
                char *name = tf__arena_strndup(ps->ar, tok.s, tok.len);
                if (!name)
                    return perr(ps, "%s", "out of memory");
                if (tf__d_label(ps->dc, tok.line, name) || next(ps))
                    return -1;
                continue;
            }
            ps->lx = save;
            ps->t = tok;
        }
        if (t->kind == TK_IDENT || is_punct(ps, '@')) {
            if (parse_insn(ps))
                return -1;
            continue;
        }
        return unexpected(ps, "a statement");
    }
}

/* .section NAME { ... }: DWARF data, skipped with its braces balanced. */
static int skip_section(struct ps *ps)
{
    if (next(ps))
        return -1;
    while (!is_punct(ps, '{')) {
        if (ps->t.kind == TK_EOF)
            return unexpected(ps, "'{'");
        if (next(ps))
            return -1;
    }
    int depth = 0;
    for (;;) {
        if (ps->t.kind == TK_EOF)
            return unexpected(ps, "'}'");
        if (is_punct(ps, '{'))
            depth++;
        if (is_punct(ps, '}') && --depth == 0)
            return next(ps);
        if (next(ps))
            return -1;
    }
}

static int parse_module(struct ps *ps)
{
    int seen_version = 0;
    if (next(ps))
        return -1;
    for (;;) {
        struct tf__tok *t = &ps->t;
        if (t->kind == TK_EOF)
            break;
        if (t->kind != TK_DIR)
            return unexpected(ps, "a directive");
        if (tf__tok_is(t, ".version")) {
            if (next(ps))
                return -1;
            if (t->kind != TK_DEC && t->kind != TK_INT)
                return unexpected(ps, "a version number");
            seen_version = 1;
            if (next(ps))
                return -1;
        } else if (tf__tok_is(t, ".target")) {
            if (next(ps))
                return -1;
            for (;;) {
                if (t->kind != TK_IDENT)
                    return unexpected(ps, "a target");
                if (next(ps))
                    return -1;
                if (!is_punct(ps, ','))
                    break;
                if (next(ps))
                    return -1;
            }
        } else if (tf__tok_is(t, ".address_size")) {
            uint64_t v = 0;
            uint32_t line = t->line;
            if (next(ps) || expect_int(ps, &v))
                return -1;
            if (v != 64) {
                ps->t.line = line;
                return perr(ps, "%s", "unsupported .address_size (only 64)");
            }
        } else if (tf__tok_is(t, ".file") || tf__tok_is(t, ".loc")) {
            tf__lex_skip_line(&ps->lx);
            if (next(ps))
                return -1;
        } else if (tf__tok_is(t, ".section")) {
            if (skip_section(ps))
                return -1;
        } else if (tf__tok_is(t, ".pragma")) {
            if (skip_pragma(ps))
                return -1;
        } else {
            int is_extern = 0;
            while (tf__tok_is(t, ".visible") || tf__tok_is(t, ".extern") ||
                   tf__tok_is(t, ".weak") || tf__tok_is(t, ".common")) {
                if (tf__tok_is(t, ".extern"))
                    is_extern = 1;
                if (next(ps))
                    return -1;
            }
            if (tf__tok_is(t, ".entry") || tf__tok_is(t, ".func")) {
                if (!seen_version)
                    return perr(ps, "%s", "missing .version before the first function");
                if (parse_func(ps, tf__tok_is(t, ".entry"), is_extern))
                    return -1;
            } else if (t->kind == TK_DIR && space_of(t) != MOD_NONE && space_of(t) != MOD_PARAM) {
                if (parse_var(ps, space_of(t), is_extern, 0, NULL))
                    return -1;
            } else {
                char d[48];
                size_t n = t->len < sizeof(d) - 1 ? t->len : sizeof(d) - 1;
                memcpy(d, t->s, n);
                d[n] = 0;
                return t->kind == TK_DIR ? perr(ps, "unsupported directive '%s'", d)
                                         : unexpected(ps, "a directive");
            }
        }
    }
    if (!seen_version)
        return perr(ps, "%s", "missing .version directive");
    return 0;
}

int tf__parse(struct tf_ptx_module *mod, const char *text, size_t len, char *err, size_t errlen)
{
    struct ps ps;
    memset(&ps, 0, sizeof(ps));
    ps.err = err;
    ps.errlen = errlen;
    tf__lex_init(&ps.lx, text, len, err, errlen);
    ps.dc = tf__dctx_new(mod, err, errlen);
    if (!ps.dc) {
        tf_errf(err, errlen, "out of memory");
        return -1;
    }
    ps.ar = tf__d_arena(ps.dc);
    int rc = parse_module(&ps);
    if (rc == 0)
        rc = tf__d_finish(ps.dc);
    tf__dctx_free(ps.dc);
    return rc;
}
