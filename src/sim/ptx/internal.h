/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header of the PTX engine (src/sim/ptx/ only; nothing outside includes it). It holds
 * the decoded form of a module, shared by the load side (lex.c, parse.c, decode*.c, cfg.c and
 * the decoders in ops_*.c) and the run side (exec.c and the handlers in ops_*.c).
 *
 * Decoded code. Every function of a module is decoded once into fixed-size struct tf__insn
 * records in one module-wide array (pcs are indices into it). An instruction names its
 * handler (a function pointer chosen at decode time from opcode, types and modifiers, so no
 * handler switches on a type at run time) and its operands as register *slots*. Immediates,
 * symbol addresses and special registers are slots too: the decoder gives each a slot whose 32
 * lanes are filled when a call frame is created (struct tf__const, struct tf__special), so
 * handlers only ever read slots.
 *
 * Registers. A warp's registers are structure-of-arrays: slot S of the current frame is
 * w->r[S*32 .. S*32+31], one 64-bit value per lane; insn operand fields hold S*32 directly.
 * Every write stores the instruction type's width zero-extended (loads and cvt extend to the
 * destination register's width first). Predicates are lane bit masks, w->p[index].
 */
#ifndef TF_SIM_PTX_INTERNAL_H
#define TF_SIM_PTX_INTERNAL_H

#include "sim/ptx/ptx.h"

#include <stdint.h>
#include <string.h>

#define TF__WARP 32
#define TF__FULL 0xffffffffu
#define TF__NONE 0xffffffffu
#define TF__MAX_OPS 8
#define TF__MAX_CALL_DEPTH 128
#define TF__DEFAULT_STACK 1024u      /* per-thread stack reserve when calls recurse */
#define TF__MAX_LOCAL (512u * 1024u) /* per-thread .local limit (as on hardware) */
#define TF__MAX_SLOTS (1u << 16)     /* per function, bounds hostile .reg counts */
#define TF__SLICE 20000              /* instructions a warp runs before yielding */

/* ---- bump arena (module-owned strings and tables) ---- */
struct tf__chunk;
struct tf__arena {
    struct tf__chunk *head;
};
void *tf__arena_alloc(struct tf__arena *a, size_t n); /* zeroed; NULL on OOM */
char *tf__arena_strndup(struct tf__arena *a, const char *s, size_t n);
void tf__arena_free(struct tf__arena *a);

/* ---- types ---- */
enum tf__ty {
    TY_NONE = 0,
    TY_B8,
    TY_B16,
    TY_B32,
    TY_B64,
    TY_B128,
    TY_U8,
    TY_U16,
    TY_U32,
    TY_U64,
    TY_S8,
    TY_S16,
    TY_S32,
    TY_S64,
    TY_F16,
    TY_F16X2,
    TY_BF16,
    TY_BF16X2,
    TY_F32,
    TY_F64,
    TY_PRED,
    TY_E4M3X2, /* two FP8 values (cvt only) */
    TY_E5M2X2,
    TY_COUNT
};
unsigned tf__ty_bits(int ty); /* 0 for TY_NONE */
int tf__ty_is_signed(int ty);
int tf__ty_is_float(int ty);     /* f16/bf16/f32/f64 (not the x2 forms) */
int tf__ty_is_int(int ty);       /* b/u/s */
int tf__ty_parse(const char *s); /* "u32" -> TY_U32, or TY_NONE */

/* ---- the parsed form of one instruction, handed to the decoders ---- */
enum tf__pk {
    PK_REG,  /* name (a register, special register or, when not declared, a symbol) */
    PK_IMM,  /* integer literal: imm */
    PK_F32,  /* 0fXXXXXXXX: imm holds the bits */
    PK_F64,  /* 0dXXXXXXXXXXXXXXXX: imm holds the bits */
    PK_DEC,  /* decimal floating literal: dval */
    PK_ADDR, /* [name+imm] / [imm] (name may be NULL) */
    PK_VEC,  /* {a, b, ...}: elems */
    PK_LIST, /* (a, b, ...) in call: elems */
    PK_SINK, /* _ */
};
struct tf__pop {
    uint8_t kind;
    uint8_t neg;       /* !%p */
    const char *name;  /* PK_REG, PK_ADDR base; symbol + imm offset in PK_REG too */
    const char *name2; /* second destination after '|' */
    int64_t imm;
    double dval;
    uint32_t n;
    struct tf__pop *elems;
};
#define TF__MAX_MODS 16
struct tf__pinsn {
    uint32_t line;
    const char *opcode; /* as written, arena-owned */
    const char *guard;  /* predicate name or NULL */
    int gneg;
    uint32_t nops;
    struct tf__pop ops[TF__MAX_OPS];
    char base[32]; /* opcode before the first '.' */
    uint32_t nmods;
    const char *mods[TF__MAX_MODS]; /* the rest, split at '.' (pointers into modbuf) */
    char modbuf[160];
};

/* Decoder-private state space of a function's own (per-lane) .param area. */
#define TF__SP_FPARAM (MOD_COUNT + 1)

/* Opcode modifiers as one enum; a decoder says which it accepts. */
enum tf__mod {
    MOD_NONE = 0,
    /* memory spaces and state spaces */
    MOD_GLOBAL,
    MOD_SHARED,
    MOD_LOCAL,
    MOD_PARAM,
    MOD_CONST,
    MOD_GENERIC_NONE,
    MOD_V2,
    MOD_V4,
    MOD_TO,
    MOD_NC,
    /* ignorable memory qualifiers (cache operators, semantics, scopes, hints) */
    MOD_IGNORED_MEM,
    MOD_CACHE_HINT, /* L2::cache_hint: an extra policy operand follows */
    /* arithmetic */
    MOD_LO,
    MOD_HI,
    MOD_WIDE,
    MOD_SAT,
    MOD_FTZ,
    MOD_APPROX,
    MOD_FULL,
    MOD_CC,
    MOD_RN,
    MOD_RZ,
    MOD_RM,
    MOD_RP,
    MOD_RNI,
    MOD_RZI,
    MOD_RMI,
    MOD_RPI,
    MOD_RELU,
    MOD_NAN,
    MOD_XORSIGN,
    MOD_ABS,
    MOD_SHIFTAMT,
    MOD_SATFINITE,
    MOD_NOFTZ,
    /* comparisons (setp/set) */
    MOD_EQ,
    MOD_NE,
    MOD_LT,
    MOD_LE,
    MOD_GT,
    MOD_GE,
    MOD_LS,
    MOD_HS,
    MOD_EQU,
    MOD_NEU,
    MOD_LTU,
    MOD_LEU,
    MOD_GTU,
    MOD_GEU,
    MOD_NUM,
    MOD_ISNAN,
    /* boolean / atomic ops */
    MOD_AND,
    MOD_OR,
    MOD_XOR,
    MOD_ADD,
    MOD_MIN,
    MOD_MAX,
    MOD_EXCH,
    MOD_CAS,
    MOD_INC,
    MOD_DEC,
    /* control */
    MOD_UNI,
    MOD_SYNC,
    MOD_ALIGNED,
    MOD_ARRIVE,
    MOD_RED,
    MOD_POPC,
    MOD_WARP,
    MOD_CTA,
    /* warp ops */
    MOD_UP,
    MOD_DOWN,
    MOD_BFLY,
    MOD_IDX,
    MOD_ALL,
    MOD_ANY,
    MOD_BALLOT,
    /* bit ops */
    MOD_L,
    MOD_R,
    MOD_WRAP,
    MOD_CLAMP,
    MOD_F4E,
    MOD_B4E,
    MOD_RC8,
    MOD_ECL,
    MOD_ECR,
    MOD_RC16,
    /* testp */
    MOD_FINITE,
    MOD_INFINITE,
    MOD_NUMBER,
    MOD_NOTANUMBER,
    MOD_NORMAL,
    MOD_SUBNORMAL,
    MOD_COUNT
};
struct tf__mods {
    uint64_t set[(MOD_COUNT + 63) / 64];
    uint32_t nt;
    uint8_t t[4]; /* type modifiers, in order */
};
static inline int tf__has(const struct tf__mods *m, int mod)
{
    return (int)((m->set[mod / 64] >> (mod % 64)) & 1);
}

/* ---- decoded instructions ---- */
struct tf__warp;
struct tf__insn;
/* Handler: runs IN for the lanes in M (active lanes with the guard applied, never 0).
 * Returns TF__GO or a stop code. */
typedef int (*tf__op_fn)(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
enum { TF__GO = 0, TF__STOP_FAULT, TF__STOP_BARRIER, TF__STOP_DONE, TF__STOP_YIELD };

struct tf__insn {
    tf__op_fn fn;
    const void *aux; /* op-specific (struct tf__call, an RMW function, ...) */
    int64_t imm;     /* address offset or op-specific immediate */
    uint64_t mask;   /* op-specific: destination register width mask, clamp bounds */
    uint64_t mask2;
    uint32_t d[4];       /* destination slot offsets (slot*32) or predicate indices */
    uint32_t a, b, c, e; /* source slot offsets or predicate indices */
    uint32_t target;     /* branch target pc */
    uint32_t ipdom;      /* reconvergence pc of a divergent branch */
    uint32_t guard;      /* predicate index of @p */
    uint32_t line;
    const char *text; /* opcode as written, module-owned */
    uint8_t has_guard, gneg;
    uint8_t nvec, esize; /* memory ops */
    uint8_t sub, flags;  /* op-specific selectors */
    uint8_t w1, w2;      /* op-specific bit widths */
    uint8_t cf;          /* control flow for cfg.c: CF_* */
};
enum { CF_NONE = 0, CF_BRA, CF_END /* exit, trap: the thread leaves */ };

/* Call descriptor (insn aux of call): caller-frame param offsets copied to and from the
 * callee's frame param area. */
struct tf__call {
    uint32_t callee;
    uint32_t nargs, nrets;
    uint32_t *arg_off, *arg_size; /* in the caller's frame param area */
    uint32_t *ret_off, *ret_size;
    const char *callee_name;
};

struct tf__param {
    const char *name;
    uint32_t offset, size, align;
};

/* Values filled into a frame's slots when it is created. */
enum tf__spk {
    SPK_TID_X,
    SPK_TID_Y,
    SPK_TID_Z,
    SPK_NTID_X,
    SPK_NTID_Y,
    SPK_NTID_Z,
    SPK_CTAID_X,
    SPK_CTAID_Y,
    SPK_CTAID_Z,
    SPK_NCTAID_X,
    SPK_NCTAID_Y,
    SPK_NCTAID_Z,
    SPK_LANEID,
    SPK_WARPID,
    SPK_NWARPID,
    SPK_SMID,
    SPK_NSMID,
    SPK_GRIDID,
    SPK_LANEMASK_EQ,
    SPK_LANEMASK_LT,
    SPK_LANEMASK_LE,
    SPK_LANEMASK_GT,
    SPK_LANEMASK_GE,
    SPK_DYN_SMEM,
    SPK_TOTAL_SMEM,
    SPK_LOCAL,       /* arg: offset in the frame's .local area -> local window address */
    SPK_EXTERN_SMEM, /* arg: offset from the launch's dynamic shared base */
    SPK_CLUSTER_ZERO,
    SPK_CLUSTER_ONE /* cluster registers: every CTA is a cluster of one */
};
struct tf__const {
    uint32_t slot;
    uint64_t value;
};
struct tf__special {
    uint32_t slot;
    uint32_t kind;
    uint32_t arg;
};

struct tf__func {
    const char *name;
    int is_entry;
    int defined;
    uint32_t decl_line;
    uint32_t entry_pc, end_pc; /* end_pc: the synthetic EXIT/RET terminal */
    uint32_t nslots, npreds;
    struct tf__const *consts;
    uint32_t nconsts;
    struct tf__special *specials;
    uint32_t nspecials;
    uint32_t local_size; /* this frame's .local bytes */
    uint32_t param_size; /* per-lane frame param bytes (formals, retvals, call scratch) */
    uint32_t nparams, nrets;
    struct tf__param *params, *rets;
    uint32_t params_size; /* entry: packed launch buffer size */
    uint32_t own_shared;  /* entry: bytes of .shared declared inside it */
    uint32_t max_threads, reqntid[3];
    uint32_t nregs_declared;
    uint32_t stack_need; /* local bytes a thread needs: own + deepest callee chain */
    int has_calls;
    uint32_t *callees; /* distinct callee indices */
    uint32_t ncallees;
    uint32_t *vars_used; /* entry: module variables it or its callees reference */
    uint32_t nvars_used;
};

struct tf_ptx_kernel {
    const struct tf_ptx_module *mod;
    uint32_t func;
};

/* A module variable's address goes into const VALUE of function FUNC when bound. */
struct tf__reloc {
    uint32_t func, cidx, var;
    int64_t addend;
};

struct tf_ptx_module {
    struct tf__arena arena;
    struct tf__insn *code;
    uint32_t ncode;
    struct tf__func *funcs;
    uint32_t nfuncs;
    struct tf_ptx_kernel *kernels;
    uint32_t nkernels;
    struct tf_ptx_var *vars;
    uint32_t nvars;
    uint64_t *var_addr;
    uint8_t *var_bound;
    int *var_space; /* per var: MOD_GLOBAL or MOD_CONST */
    struct tf__reloc *relocs;
    uint32_t nrelocs;
    uint32_t module_shared; /* static .shared outside entries (module and .func scope) */
    uint32_t extern_align;  /* max alignment of extern .shared */
};

/* ---- the run side ---- */
struct tf__stkent {
    uint32_t pc, mask, rpc;
};
struct tf__frame {
    uint32_t func;
    uint32_t ret_pc, saved_rpc, stk_base, call_mask;
    uint32_t local_base;
    size_t mem_off; /* frame storage offset in the warp's frame memory */
    const struct tf__insn *call;
};
enum { WS_READY, WS_BARRIER, WS_DONE };

struct tf__run;
struct tf__warp {
    uint64_t *r;  /* current frame's slots */
    uint32_t *p;  /* current frame's predicates */
    uint8_t *prm; /* current frame's param area: lane L at prm + L*prm_stride */
    uint32_t prm_stride;
    uint32_t pc, active, rpc, alive;
    uint32_t cc; /* carry flag per lane */
    uint32_t local_base;
    struct tf__stkent *stk;
    uint32_t nstk, capstk;
    struct tf__frame *frames;
    uint32_t nframes;
    uint8_t *fmem;
    size_t fmem_used, fmem_cap;
    struct tf__run *run;
    uint32_t id, nlanes, tid0;
    int state;
    uint32_t bar_id, bar_mask;
    const struct tf__insn *bar_insn;
};

struct tf__barrier {
    uint32_t arrived;  /* threads */
    uint32_t expected; /* 0: all live threads of the block */
    uint32_t waiting;  /* warps blocked on it */
    uint32_t red_popc, red_and, red_or;
};

struct tf__run {
    const struct tf_ptx_launch *l;
    const struct tf_ptx_module *mod;
    const struct tf__func *kfn;
    uint8_t *shared;
    uint64_t shared_size, dyn_base;
    uint8_t *local;
    uint64_t local_stride, local_total;
    const uint8_t *params;
    uint64_t params_size;
    const struct tf_ptx_range *ranges;
    size_t nranges;
    uint64_t c_base, c_size; /* last-hit cache of a memview range */
    int c_ro;
    uint32_t ctaid[3], block_lin, nthreads, nwarps, live_threads;
    uint64_t insns, max_insns;
    struct tf__barrier bar[16];
    struct tf__warp *warps;
    /* fault */
    int fault;
    uint64_t fault_addr;
    const struct tf__insn *fault_insn;
    uint32_t fault_lane, fault_warp;
    char fault_what[96];
};

/* Records a fault of lane LANE at IN; returns TF__STOP_FAULT. */
int tf__fault(struct tf__warp *w, const struct tf__insn *in, int lane, enum tf_ptx_status st,
              uint64_t addr, const char *what);
/* Slow path of tf__gmem: finds the memview range holding [a, a+size). */
void *tf__gmem_slow(struct tf__warp *w, const struct tf__insn *in, int lane, uint64_t a,
                    uint32_t size, int write);
/* The host bytes of generic address A (SIZE of them, readable, any alignment) or NULL, without
 * a fault: what device printf reads (ops_printf.c). */
const void *tf__probe(const struct tf__warp *w, uint64_t a, uint32_t size);
/* Device printf: a call to the module's .extern vprintf (bound by tf__d_finish). */
int tf__op_vprintf(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
/* Device assert: a call to the module's .extern __assertfail (bound by tf__d_finish). */
int tf__op_assertfail(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
/* Generic address -> host pointer (shared window, local window, kernel params, memview). */
void *tf__generic(struct tf__warp *w, const struct tf__insn *in, int lane, uint64_t a,
                  uint32_t size, int write);
/* Divergence: lanes TAKEN go to TARGET, the rest of the active lanes fall through to
 * FALL; both reconverge at RECONV. */
void tf__diverge(struct tf__warp *w, uint32_t target, uint32_t taken, uint32_t fall,
                 uint32_t reconv);
/* Enters callee frame (call insn IN); returns TF__GO or a fault. */
int tf__call_enter(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
/* Leaves the current callee frame (synthetic RET). */
int tf__call_return(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
uint64_t tf__globaltimer(const struct tf__run *run);
uint64_t tf__clock64(void);

/* Global (or .const) memory: host pointer for [A, A+SIZE) or NULL after recording a fault. */
static inline void *tf__gmem(struct tf__warp *w, const struct tf__insn *in, int lane, uint64_t a,
                             uint32_t size, int write)
{
    struct tf__run *run = w->run;
    if (a & (size - 1)) {
        tf__fault(w, in, lane, TF_PTX_MISALIGNED_ADDRESS, a, NULL);
        return NULL;
    }
    uint64_t off = a - run->c_base;
    if (off < run->c_size && run->c_size - off >= size && !(write && run->c_ro))
        return (void *)(uintptr_t)a;
    return tf__gmem_slow(w, in, lane, a, size, write);
}

/* ---- handler helpers ---- */
#define TF__FOR_LANES(m, ...)                                                                      \
    do {                                                                                           \
        if ((m) == TF__FULL) {                                                                     \
            for (int l = 0; l < TF__WARP; l++) {                                                   \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        } else {                                                                                   \
            for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1) {                                        \
                int l = __builtin_ctz(mm_);                                                        \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        }                                                                                          \
    } while (0)
#define TF__R(off) (w->r + (off))
#define TF__OP(name) static int name(struct tf__warp *w, const struct tf__insn *in, uint32_t m)

static inline float tf__f32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t tf__uf32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline double tf__f64(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static inline uint64_t tf__uf64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
/* Sign-preserving flush of a subnormal f32 / f64 to zero (.ftz). */
static inline float tf__ftz32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0)
        u &= 0x80000000u;
    memcpy(&f, &u, 4);
    return f;
}
static inline double tf__ftz64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    if ((u & 0x7ff0000000000000ull) == 0)
        u &= 0x8000000000000000ull;
    memcpy(&d, &u, 8);
    return d;
}
/* f32 results: a NaN is the canonical 0x7fffffff, as on NVIDIA hardware. */
static inline uint64_t tf__res32(float f)
{
    if (f != f)
        return 0x7fffffffu;
    return tf__uf32(f);
}
static inline uint64_t tf__sext(uint64_t v, unsigned bits)
{
    if (bits >= 64)
        return v;
    unsigned s = 64 - bits;
    return (uint64_t)((int64_t)(v << s) >> s);
}
static inline uint64_t tf__wmask(unsigned bits)
{
    return bits >= 64 ? ~0ull : ((1ull << bits) - 1);
}

/* setp/set (integer and float): a compare yields a lane mask BITS; these apply the
 * .and/.or/.xor of in->sub with predicate in->c (negated when in->flags) and write the result. */
enum { BOOL_NONE, BOOL_AND, BOOL_OR, BOOL_XOR };
static inline int tf__setp_finish(struct tf__warp *w, const struct tf__insn *in, uint32_t m,
                                  uint32_t bits)
{
    uint32_t t = bits & m, f = ~bits & m;
    if (in->sub != BOOL_NONE) {
        uint32_t c = w->p[in->c];
        if (in->flags)
            c = ~c;
        c &= m;
        switch (in->sub) {
        case BOOL_AND:
            t &= c;
            f &= c;
            break;
        case BOOL_OR:
            t |= c;
            f |= c;
            break;
        default:
            t ^= c;
            f ^= c;
            break;
        }
    }
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | t;
    if (in->d[1] != TF__NONE)
        w->p[in->d[1]] = (w->p[in->d[1]] & ~m) | f;
    return TF__GO;
}
/* set: dtype u32/s32 (all ones) or f32 (1.0) */
static inline int tf__set_finish(struct tf__warp *w, const struct tf__insn *in, uint32_t m,
                                 uint32_t bits)
{
    if (in->sub != BOOL_NONE) {
        uint32_t c = w->p[in->c];
        if (in->flags)
            c = ~c;
        switch (in->sub) {
        case BOOL_AND:
            bits &= c;
            break;
        case BOOL_OR:
            bits |= c;
            break;
        default:
            bits ^= c;
            break;
        }
    }
    uint64_t *d = TF__R(in->d[0]);
    uint64_t one = in->mask;
    TF__FOR_LANES(m, d[l] = ((bits >> l) & 1) ? one : 0);
    return TF__GO;
}

/* ---- decoder context (decode*.c) used by the family decoders in ops_*.c ---- */
struct tf__dctx;
/* Sets the load error "line N: ..." and returns -1. */
int tf__derr(struct tf__dctx *dc, uint32_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "line N: unsupported instruction 'OPCODE'", returns -1. */
int tf__unsupported(struct tf__dctx *dc, const struct tf__pinsn *pi);
/* Parses the modifiers of PI; any not in ALLOWED (MOD_NONE-terminated) is unsupported. */
int tf__mods(struct tf__dctx *dc, const struct tf__pinsn *pi, const int *allowed,
             struct tf__mods *out);
/* Operand accessors: each returns 0 and fills the slot offset / predicate index, or -1 with
 * the error set. WIDTH is the instruction type's bits (for immediates). */
int tf__src(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op, int ty,
            uint32_t *slot);
int tf__dst(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
            uint32_t *slot, unsigned *regbits);
int tf__psrc(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
             uint32_t *pidx);
int tf__pdst(struct tf__dctx *dc, const struct tf__pinsn *pi, const char *name, uint32_t *pidx);
int tf__is_pred(struct tf__dctx *dc, const char *name);
/* Index of a dynamic special register (%clock, %clock_hi, %clock64, %globaltimer,
 * %globaltimer_lo, %globaltimer_hi, in that order) or -1. */
int tf__dynamic_special(const char *name);
/* Address operand [base+imm] of a memory op in SPACE (MOD_* or MOD_NONE for generic):
 * fills base slot and offset; may change *space (a .param symbol decides kernel vs frame). */
int tf__addr(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op, int *space,
             uint32_t *slot, int64_t *imm, uint32_t *limit);
/* A scratch slot for '_' destinations. */
uint32_t tf__sink(struct tf__dctx *dc);
/* A const slot holding V. */
int tf__const_slot(struct tf__dctx *dc, uint64_t v, uint32_t *slot);
/* Immediate operand value (must be a literal). */
int tf__imm(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op, int64_t *v);
/* Whether BASE ("ld", "shfl", ...) is an instruction some family decoder handles. */
int tf__known_opcode(const char *base);
int tf__opcount(struct tf__dctx *dc, const struct tf__pinsn *pi, uint32_t lo, uint32_t hi);
/* setp/set: the BOOL_* of the .and/.or/.xor modifiers (-1 when more than one), and the
 * operand at IDX that combines with the compare (none for BOOL_NONE). */
int tf__bool_op(const struct tf__mods *md);
int tf__bool_operand(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int bop,
                     uint32_t idx);
/* setp's operands: the destination predicate (and its |second), the two sources of type TY;
 * returns 1, or -1 (message set). */
int tf__setp_operands(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty);
/* Module/function info for control-flow decoders. */
int tf__in_entry(struct tf__dctx *dc);
uint32_t tf__func_end_pc(struct tf__dctx *dc);
int tf__label_ref(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
                  uint32_t insn_index);
int tf__call_decode(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
void tf__note_barrier(struct tf__dctx *dc);

/* Family decoders: return 1 when PI was decoded into IN, 0 when the opcode is not theirs,
 * -1 on error (message set). */
int tf__decode_int(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
int tf__decode_float(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
int tf__decode_cvt(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
int tf__decode_mem(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
int tf__decode_ctl(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
int tf__decode_warp(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
/* cp.async (ops_async.c), a part of tf__decode_mem; same returns. */
int tf__decode_cp_async(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
/* Parts of tf__decode_int (ops_pred.c), same returns; TY: the instruction's last type. */
int tf__decode_cmp(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty);
int tf__decode_sel(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty);
int tf__decode_mov(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in);
/* Half-precision arithmetic (ops_half.c), a part of tf__decode_float: TY is f16, bf16 or their
 * x2 pairs; same returns. */
int tf__decode_half(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty);
/* Integer decoding helpers (ops_int.c): 0/1/2 for 16/32/64-bit TY, else -1; the operands
 * d, a, b[, c[, e]] of PI into IN with NSRC sources of types TY[] (returns 1, or -1). */
int tf__width_index(int ty);
int tf__int_operands(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                     uint32_t nsrc, const int *ty);

/* Handlers other files reference directly. */
int tf__op_bra(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
int tf__op_exit(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
int tf__op_ret(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
int tf__op_call(struct tf__warp *w, const struct tf__insn *in, uint32_t m);
int tf__op_pnot(struct tf__warp *w, const struct tf__insn *in, uint32_t m);

/* Directed-rounding arithmetic (ops_round.c, built with -frounding-math): the handler for OP
 * ("add", "sub", "mul", "fma", "div", "sqrt", "rcp") on TY (TY_F32/TY_F64); the insn holds the
 * mode (MOD_RZ, MOD_RM or MOD_RP) in w2. MODE arguments below take the same values. */
tf__op_fn tf__round_handler(const char *op, int ty, int ftz, int sat);
double tf__round_i2f(int64_t v, int is_unsigned, int mode, int to_f32);
double tf__round_f64_to_f32(double v, int mode);

/* cfg.c: immediate post-dominators; fills ipdom of each guarded bra in [begin, end). */
int tf__cfg_ipdom(struct tf__insn *code, uint32_t begin, uint32_t end);

/* ops_cvt.c helpers also used by ld/st of f16 values. */
uint16_t tf__f2h(double v, int mode, int bf16);
double tf__h2f(uint16_t h, int bf16);

#endif
