/* SPDX-License-Identifier: Apache-2.0
 *
 * Descriptors of the forwarded driver calls of calls.def, shared by libtf_client, tf-worker
 * and the protocol documentation: for each call its wire code, kind, context rule and the
 * kind of each argument. A CALL (SYNC) or CALL_ASYNC request carries the call's code, the
 * client context and one u64 per wire argument (A_IN, A_DEV, A_H, A_NEW, A_DEL, in argument
 * order); the reply of a CALL carries one u64 per output (A_OUT, A_OUTN, A_OUTF) in argument
 * order. Integers travel sign-extended (signed types) or zero-extended; floats as their bit
 * pattern; handles as the client's ids. Private to src/remote; needs cuda.h.
 *
 * Everything here is constant data: thread-safe.
 */
#ifndef TF_REMOTE_CALLS_H
#define TF_REMOTE_CALLS_H

#include "remote/pp.h"
#include "tf/protocol.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Argument tuples (KIND, TYPE, NAME, SUB) of calls.def. */
#define A_NONE (VOID, void, none_, 0)
#define A_IN(type, name) (IN, type, name, 0)
#define A_DEV(name) (DEV, CUdevice, name, 0)
#define A_OUT(type, name) (OUT, type, name, 0)
#define A_OUTN(type, name) (OUTN, type, name, 0)
#define A_OUTF(name) (OUTF, float, name, 0)
#define A_H(kind, type, name) (H, type, name, kind)
#define A_NEW(kind, type, name) (NEW, type, name, kind)
#define A_DEL(kind, type, name) (DEL, type, name, kind)

#define TF_CALL_MAX_ARGS 10

enum tf_call_arg_kind {
    TF_CALL_A_VOID = 0,
    TF_CALL_A_IN,
    TF_CALL_A_DEV,
    TF_CALL_A_OUT,
    TF_CALL_A_OUTN,
    TF_CALL_A_OUTF,
    TF_CALL_A_H,
    TF_CALL_A_NEW,
    TF_CALL_A_DEL,
};

/* Context rules. */
enum tf_call_ctx { TF_CALL_CTX_NONE = 0, TF_CALL_CTX_CUR, TF_CALL_CTX_OBJ };

struct tf_call_arg {
    uint8_t kind;      /* tf_call_arg_kind */
    uint8_t size;      /* A_IN: bytes of the C type (1, 2, 4, 8) */
    uint8_t is_signed; /* A_IN: the C type is signed */
    uint8_t htype;     /* A_H / A_NEW / A_DEL: TF_PROTO_H_* of the object */
    const char *name;
};

struct tf_call_desc {
    uint32_t code;
    const char *name; /* the exported symbol */
    int sync;         /* 1: CALL (reply), 0: CALL_ASYNC */
    int ctx;          /* tf_call_ctx */
    int waits;
    const char *fallback; /* older symbol with the same ABI, or NULL */
    uint8_t nargs;        /* C arguments */
    uint8_t nwire;        /* u64 sent in the request */
    uint8_t nouts;        /* u64 in the reply */
    const struct tf_call_arg *args;
};

/* Handle kinds of calls.def -> TF_PROTO_H_*. TF_PROTO_H_FUNC stands for "a function or a
 * kernel" in A_H(FUNC, ...). */
#define TF_CALL_H_CTX TF_PROTO_H_CTX
#define TF_CALL_H_STREAM TF_PROTO_H_STREAM
#define TF_CALL_H_EVENT TF_PROTO_H_EVENT
#define TF_CALL_H_FUNC TF_PROTO_H_FUNC
#define TF_CALL_H_KERNEL TF_PROTO_H_KERNEL
#define TF_CALL_H_LIBRARY TF_PROTO_H_LIBRARY
#define TF_CALL_H_MODULE TF_PROTO_H_MODULE
#define TF_CALL_H_POOL TF_PROTO_H_POOL
#define TF_CALL_H_GRAPH TF_PROTO_H_GRAPH
#define TF_CALL_H_GEXEC TF_PROTO_H_GEXEC
#define TF_CALL_H_NODE TF_PROTO_H_NODE
#define TF_CALL_H_0 0

/* Index of each call in tf_calls[]: TF_CALL_IDX_cuStreamQuery, ... */
enum {
#define C(code, sym, kind, ctx, waits, client, worker, fallback, args) TF_CALL_IDX_##sym,
#include "remote/calls.def"
#undef C
    TF_CALL_COUNT
};

/* All calls, in calls.def order. */
extern const struct tf_call_desc tf_calls[TF_CALL_COUNT];

/* The descriptor of wire code CODE, or NULL. */
const struct tf_call_desc *tf_call_by_code(uint32_t code);

/* 1 when V, as received, is a value of the A_IN argument A's C type (sign- or
 * zero-extended to 64 bits as the client sends it). */
int tf_call_in_fits(const struct tf_call_arg *a, uint64_t v);

/* Encoding of an integer or enum of type T for the wire. */
#define TF_CALL_ENC(T, v) (((T)-1 < (T)1) ? (uint64_t)(int64_t)(v) : (uint64_t)(v))
/* Position I's separator in a comma-separated generated list (none before the first). */
#define TF_CALL_SEP(i) TF_PP_CAT(TF_CALL_SEP_, i)
#define TF_CALL_SEP_0
#define TF_CALL_SEP_1 ,
#define TF_CALL_SEP_2 ,
#define TF_CALL_SEP_3 ,
#define TF_CALL_SEP_4 ,
#define TF_CALL_SEP_5 ,
#define TF_CALL_SEP_6 ,
#define TF_CALL_SEP_7 ,
#define TF_CALL_SEP_8 ,
#define TF_CALL_SEP_9 ,

/* The C prototype's parameter list of an argument list: TF_CALL_PARAMS(ARGS). */
#define TF_CALL_PROTO(i, t) TF_PP_ARG(TF_CALL_PROTO, i, t)
#define TF_CALL_PROTO_VOID(i, T, n, k) void
#define TF_CALL_PROTO_IN(i, T, n, k) TF_CALL_SEP(i) T n
#define TF_CALL_PROTO_DEV(i, T, n, k) TF_CALL_SEP(i) T n
#define TF_CALL_PROTO_OUT(i, T, n, k) TF_CALL_SEP(i) T *n
#define TF_CALL_PROTO_OUTN(i, T, n, k) TF_CALL_SEP(i) T *n
#define TF_CALL_PROTO_OUTF(i, T, n, k) TF_CALL_SEP(i) T *n
#define TF_CALL_PROTO_H(i, T, n, k) TF_CALL_SEP(i) T n
#define TF_CALL_PROTO_NEW(i, T, n, k) TF_CALL_SEP(i) T *n
#define TF_CALL_PROTO_DEL(i, T, n, k) TF_CALL_SEP(i) T n
#define TF_CALL_PARAMS(args) TF_PP_EACH(TF_CALL_PROTO, TF_PP_UNPAREN args)

#endif
