/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX decoder's types, instruction modifiers and opcode names (decode_int.h).
 */
#include "sim/ptx/decode_int.h"

#include "common/strutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- types ---- */

static const struct {
    const char *name;
    uint8_t bits;
} ty_info[TY_COUNT] = {
    [TY_B8] = {"b8", 8},          [TY_B16] = {"b16", 16},       [TY_B32] = {"b32", 32},
    [TY_B64] = {"b64", 64},       [TY_B128] = {"b128", 128},    [TY_U8] = {"u8", 8},
    [TY_U16] = {"u16", 16},       [TY_U32] = {"u32", 32},       [TY_U64] = {"u64", 64},
    [TY_S8] = {"s8", 8},          [TY_S16] = {"s16", 16},       [TY_S32] = {"s32", 32},
    [TY_S64] = {"s64", 64},       [TY_F16] = {"f16", 16},       [TY_F16X2] = {"f16x2", 32},
    [TY_BF16] = {"bf16", 16},     [TY_BF16X2] = {"bf16x2", 32}, [TY_F32] = {"f32", 32},
    [TY_F64] = {"f64", 64},       [TY_PRED] = {"pred", 1},      [TY_E4M3X2] = {"e4m3x2", 16},
    [TY_E5M2X2] = {"e5m2x2", 16},
};

unsigned tf__ty_bits(int ty)
{
    return (ty > 0 && ty < TY_COUNT) ? ty_info[ty].bits : 0;
}

int tf__ty_is_signed(int ty)
{
    return ty == TY_S8 || ty == TY_S16 || ty == TY_S32 || ty == TY_S64;
}

int tf__ty_is_float(int ty)
{
    return ty == TY_F16 || ty == TY_BF16 || ty == TY_F32 || ty == TY_F64;
}

int tf__ty_is_int(int ty)
{
    return (ty >= TY_B8 && ty <= TY_B64) || (ty >= TY_U8 && ty <= TY_S64);
}

int tf__ty_parse(const char *s)
{
    for (int i = 1; i < TY_COUNT; i++)
        if (ty_info[i].name && strcmp(ty_info[i].name, s) == 0)
            return i;
    return TY_NONE;
}

/* ---- modifiers ---- */

static const struct {
    const char *name;
    int mod;
} mod_names[] = {
    {"global", MOD_GLOBAL},
    {"shared", MOD_SHARED},
    {"local", MOD_LOCAL},
    {"param", MOD_PARAM},
    {"const", MOD_CONST},
    {"v2", MOD_V2},
    {"v4", MOD_V4},
    {"to", MOD_TO},
    {"nc", MOD_NC},
    {"ca", MOD_IGNORED_MEM},
    {"cg", MOD_IGNORED_MEM},
    {"cs", MOD_IGNORED_MEM},
    {"lu", MOD_IGNORED_MEM},
    {"cv", MOD_IGNORED_MEM},
    {"wb", MOD_IGNORED_MEM},
    {"wt", MOD_IGNORED_MEM},
    {"volatile", MOD_IGNORED_MEM},
    {"relaxed", MOD_IGNORED_MEM},
    {"acquire", MOD_IGNORED_MEM},
    {"release", MOD_IGNORED_MEM},
    {"acq_rel", MOD_IGNORED_MEM},
    {"weak", MOD_IGNORED_MEM},
    {"sc", MOD_IGNORED_MEM},
    {"sys", MOD_IGNORED_MEM},
    {"gpu", MOD_IGNORED_MEM},
    {"gl", MOD_IGNORED_MEM}, /* membar.gl */
    {"cta", MOD_IGNORED_MEM},
    {"cluster", MOD_IGNORED_MEM},
    {"L2::cache_hint", MOD_CACHE_HINT},
    {"lo", MOD_LO},
    {"hi", MOD_HI},
    {"wide", MOD_WIDE},
    {"sat", MOD_SAT},
    {"ftz", MOD_FTZ},
    {"approx", MOD_APPROX},
    {"full", MOD_FULL},
    {"cc", MOD_CC},
    {"rn", MOD_RN},
    {"rz", MOD_RZ},
    {"rm", MOD_RM},
    {"rp", MOD_RP},
    {"rni", MOD_RNI},
    {"rzi", MOD_RZI},
    {"rmi", MOD_RMI},
    {"rpi", MOD_RPI},
    {"relu", MOD_RELU},
    {"NaN", MOD_NAN},
    {"xorsign", MOD_XORSIGN},
    {"abs", MOD_ABS},
    {"shiftamt", MOD_SHIFTAMT},
    {"satfinite", MOD_SATFINITE},
    {"noftz", MOD_NOFTZ},
    {"eq", MOD_EQ},
    {"ne", MOD_NE},
    {"lt", MOD_LT},
    {"le", MOD_LE},
    {"gt", MOD_GT},
    {"ge", MOD_GE},
    {"ls", MOD_LS},
    {"hs", MOD_HS},
    {"equ", MOD_EQU},
    {"neu", MOD_NEU},
    {"ltu", MOD_LTU},
    {"leu", MOD_LEU},
    {"gtu", MOD_GTU},
    {"geu", MOD_GEU},
    {"num", MOD_NUM},
    {"nan", MOD_ISNAN},
    {"and", MOD_AND},
    {"or", MOD_OR},
    {"xor", MOD_XOR},
    {"add", MOD_ADD},
    {"min", MOD_MIN},
    {"max", MOD_MAX},
    {"exch", MOD_EXCH},
    {"cas", MOD_CAS},
    {"inc", MOD_INC},
    {"dec", MOD_DEC},
    {"uni", MOD_UNI},
    {"sync", MOD_SYNC},
    {"aligned", MOD_ALIGNED},
    {"arrive", MOD_ARRIVE},
    {"red", MOD_RED},
    {"popc", MOD_POPC},
    {"warp", MOD_WARP},
    {"up", MOD_UP},
    {"down", MOD_DOWN},
    {"bfly", MOD_BFLY},
    {"idx", MOD_IDX},
    {"all", MOD_ALL},
    {"any", MOD_ANY},
    {"ballot", MOD_BALLOT},
    {"l", MOD_L},
    {"r", MOD_R},
    {"wrap", MOD_WRAP},
    {"clamp", MOD_CLAMP},
    {"f4e", MOD_F4E},
    {"b4e", MOD_B4E},
    {"rc8", MOD_RC8},
    {"ecl", MOD_ECL},
    {"ecr", MOD_ECR},
    {"rc16", MOD_RC16},
    {"finite", MOD_FINITE},
    {"infinite", MOD_INFINITE},
    {"number", MOD_NUMBER},
    {"notanumber", MOD_NOTANUMBER},
    {"normal", MOD_NORMAL},
    {"subnormal", MOD_SUBNORMAL},
};

static int mod_lookup(const char *s)
{
    for (size_t i = 0; i < sizeof(mod_names) / sizeof(mod_names[0]); i++)
        if (strcmp(mod_names[i].name, s) == 0)
            return mod_names[i].mod;
    if ((strncmp(s, "L1::", 4) == 0 || strncmp(s, "L2::", 4) == 0) && s[4])
        return MOD_IGNORED_MEM;
    return MOD_NONE;
}

int tf__mods(struct tf__dctx *dc, const struct tf__pinsn *pi, const int *allowed,
             struct tf__mods *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < pi->nmods; i++) {
        int ty = tf__ty_parse(pi->mods[i]);
        if (ty != TY_NONE) {
            if (out->nt == 4)
                return tf__unsupported(dc, pi);
            out->t[out->nt++] = (uint8_t)ty;
            continue;
        }
        int m = mod_lookup(pi->mods[i]);
        int ok = 0;
        for (const int *a = allowed; m != MOD_NONE && *a != MOD_NONE; a++)
            if (*a == m)
                ok = 1;
        /* a repeat is an error, except of the qualifiers the engine ignores (a memory order
         * and a scope together: atom.relaxed.gpu, ld.acquire.sys) */
        if (!ok || (tf__has(out, m) && m != MOD_IGNORED_MEM))
            return tf__unsupported(dc, pi);
        out->set[m / 64] |= 1ull << (m % 64);
    }
    return 0;
}

int tf__known_opcode(const char *base)
{
    /* clang-format off */
    static const char *const known[] = {
        "mov", "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "min", "max",
        "abs", "neg", "and", "or", "xor", "not", "cnot", "shl", "shr", "popc", "clz", "brev",
        "bfind", "bfe", "bfi", "prmt", "lop3", "shf", "dp4a", "dp2a", "setp", "set", "selp",
        "slct", "addc", "subc", "madc", "fma", "rcp", "sqrt", "rsqrt", "sin", "cos", "ex2", "lg2",
        "tanh", "copysign", "testp", "cvt", "ld", "ldu", "st", "atom", "red", "cvta", "isspacep",
        "prefetch", "prefetchu", "bra", "ret", "exit", "trap", "brkpt", "call", "bar", "barrier",
        "membar", "fence", "nanosleep", "shfl", "vote", "activemask", "match", "redux", "elect",
        "cp", "griddepcontrol",
    };
    /* clang-format on */
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(known[i], base) == 0)
            return 1;
    return 0;
}

int tf__opcount(struct tf__dctx *dc, const struct tf__pinsn *pi, uint32_t lo, uint32_t hi)
{
    if (pi->nops < lo || pi->nops > hi)
        return tf__derr(dc, pi->line, "wrong number of operands for '%s'", pi->opcode);
    return 0;
}
