/* SPDX-License-Identifier: Apache-2.0
 *
 * Descriptors of the forwarded driver calls, generated from calls.def (see calls.h).
 */
#include "remote/calls.h"

#define DESC(i, t) TF_PP_ARG(DESC, i, t)
#define DESC_VOID(i, T, n, k) {TF_CALL_A_VOID, 0, 0, 0, "void"},
#define DESC_IN(i, T, n, k) {TF_CALL_A_IN, sizeof(T), ((T)-1 < (T)1), 0, #n},
#define DESC_DEV(i, T, n, k) {TF_CALL_A_DEV, sizeof(T), 1, 0, #n},
#define DESC_OUT(i, T, n, k) {TF_CALL_A_OUT, sizeof(T), ((T)-1 < (T)1), 0, #n},
#define DESC_OUTN(i, T, n, k) {TF_CALL_A_OUTN, sizeof(T), ((T)-1 < (T)1), 0, #n},
#define DESC_OUTF(i, T, n, k) {TF_CALL_A_OUTF, sizeof(T), 1, 0, #n},
#define DESC_H(i, T, n, k) {TF_CALL_A_H, sizeof(T), 0, TF_CALL_H_##k, #n},
#define DESC_NEW(i, T, n, k) {TF_CALL_A_NEW, sizeof(T), 0, TF_CALL_H_##k, #n},
#define DESC_DEL(i, T, n, k) {TF_CALL_A_DEL, sizeof(T), 0, TF_CALL_H_##k, #n},

/* Counts: + 1 for each argument of the counted kinds. */
#define NARG(i, t) TF_PP_ARG(NARG, i, t)
#define NARG_VOID(i, T, n, k)
#define NARG_IN(i, T, n, k) +1
#define NARG_DEV(i, T, n, k) +1
#define NARG_OUT(i, T, n, k) +1
#define NARG_OUTN(i, T, n, k) +1
#define NARG_OUTF(i, T, n, k) +1
#define NARG_H(i, T, n, k) +1
#define NARG_NEW(i, T, n, k) +1
#define NARG_DEL(i, T, n, k) +1
#define NWIRE(i, t) TF_PP_ARG(NWIRE, i, t)
#define NWIRE_VOID(i, T, n, k)
#define NWIRE_IN(i, T, n, k) +1
#define NWIRE_DEV(i, T, n, k) +1
#define NWIRE_OUT(i, T, n, k)
#define NWIRE_OUTN(i, T, n, k)
#define NWIRE_OUTF(i, T, n, k)
#define NWIRE_H(i, T, n, k) +1
#define NWIRE_NEW(i, T, n, k) +1
#define NWIRE_DEL(i, T, n, k) +1
#define NOUT(i, t) TF_PP_ARG(NOUT, i, t)
#define NOUT_VOID(i, T, n, k)
#define NOUT_IN(i, T, n, k)
#define NOUT_DEV(i, T, n, k)
#define NOUT_OUT(i, T, n, k) +1
#define NOUT_OUTN(i, T, n, k) +1
#define NOUT_OUTF(i, T, n, k) +1
#define NOUT_H(i, T, n, k)
#define NOUT_NEW(i, T, n, k)
#define NOUT_DEL(i, T, n, k)

#define KIND_SYNC 1
#define KIND_ASYNC 0

#define C(code, sym, kind, ctx, waits, client, worker, fallback, args)                             \
    static const struct tf_call_arg args_##sym[] = {TF_PP_EACH(DESC, TF_PP_UNPAREN args)};
#include "remote/calls.def"
#undef C

const struct tf_call_desc tf_calls[TF_CALL_COUNT] = {
#define C(code, sym, kind, ctx, waits, client, worker, fallback, args)                             \
    {code,                                                                                         \
     #sym,                                                                                         \
     KIND_##kind,                                                                                  \
     TF_CALL_CTX_##ctx,                                                                            \
     waits,                                                                                        \
     fallback,                                                                                     \
     0 TF_PP_EACH(NARG, TF_PP_UNPAREN args),                                                       \
     0 TF_PP_EACH(NWIRE, TF_PP_UNPAREN args),                                                      \
     0 TF_PP_EACH(NOUT, TF_PP_UNPAREN args),                                                       \
     args_##sym},
#include "remote/calls.def"
#undef C
};

const struct tf_call_desc *tf_call_by_code(uint32_t code)
{
    switch (code) {
#define C(c, sym, kind, ctx, waits, client, worker, fallback, args)                                \
    case c:                                                                                        \
        return &tf_calls[TF_CALL_IDX_##sym];
#include "remote/calls.def"
#undef C
    default:
        return NULL;
    }
}

int tf_call_in_fits(const struct tf_call_arg *a, uint64_t v)
{
    if (a->size >= 8)
        return 1;
    unsigned bits = 8u * a->size;
    if (a->is_signed) {
        int64_t s = (int64_t)v, lim = (int64_t)1 << (bits - 1);
        return s >= -lim && s < lim;
    }
    return v < ((uint64_t)1 << bits);
}
