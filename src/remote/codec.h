/* SPDX-License-Identifier: Apache-2.0
 *
 * Codec for the remote-GPU wire protocol (include/tf/protocol.h): explicit little-endian
 * serialisation of every layout, frame-header checks, per-opcode tail rules and the decoders
 * of the structured tails (batch records, device records, function records, launch tails).
 * Private to src/remote.
 *
 * For every layout NAME in TF_PROTO_LAYOUTS this header generates
 *   struct tf_msg_NAME                host-order copy of the fields (never sent as is)
 *   tf_msg_NAME_put(p, m)             writes TF_PROTO_SIZE_NAME bytes at P
 *   tf_msg_NAME_get(p, m)             reads TF_PROTO_SIZE_NAME bytes at P
 *   tf_msg_NAME_rsvd_zero(p)          1 when the reserved fields at P are all zero
 * Callers guarantee the byte counts; the checked decoders below verify lengths first.
 *
 * Everything here is pure (no I/O, no allocation, no globals) and thread-safe. Decoders never
 * read outside [p, p+len) whatever the input; they return 0 or TF_EPROTO.
 */
#ifndef TF_REMOTE_CODEC_H
#define TF_REMOTE_CODEC_H

#include "tf/protocol.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Little-endian primitives. */
static inline void tf__put_1(uint8_t *p, uint8_t v)
{
    p[0] = v;
}
static inline void tf__put_2(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void tf__put_4(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void tf__put_8(uint8_t *p, uint64_t v)
{
    tf__put_4(p, (uint32_t)v);
    tf__put_4(p + 4, (uint32_t)(v >> 32));
}
static inline uint8_t tf__get_1(const uint8_t *p)
{
    return p[0];
}
static inline uint16_t tf__get_2(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}
static inline uint32_t tf__get_4(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tf__get_8(const uint8_t *p)
{
    return (uint64_t)tf__get_4(p) | (uint64_t)tf__get_4(p + 4) << 32;
}

#define TF__UINT_1 uint8_t
#define TF__UINT_2 uint16_t
#define TF__UINT_4 uint32_t
#define TF__UINT_8 uint64_t

/* Generated structs and put/get functions. */
#define TF__MSG_FIELD_S(M, off, size, name) TF__UINT_##size name;
#define TF__MSG_FIELD_B(M, off, size, name) uint8_t name[size];
#define TF__MSG_PUT_S(M, off, size, name) tf__put_##size(p + (off), m->name);
#define TF__MSG_PUT_B(M, off, size, name) memcpy(p + (off), m->name, (size));
#define TF__MSG_GET_S(M, off, size, name) m->name = tf__get_##size(p + (off));
#define TF__MSG_GET_B(M, off, size, name) memcpy(m->name, p + (off), (size));
#define TF__MSG_RSVD_S(M, off, size, name) | (uint64_t)tf__get_##size(p + (off))
#define TF__MSG_RSVD_NONE(M, off, size, name)
#define TF__MSG_DEFINE(name, size)                                                                 \
    struct tf_msg_##name {                                                                         \
        TF_PROTO_L_##name(TF__MSG_FIELD_S, TF__MSG_FIELD_B, TF__MSG_FIELD_S, name)                 \
    };                                                                                             \
    static inline void tf_msg_##name##_put(uint8_t *p, const struct tf_msg_##name *m)              \
    {                                                                                              \
        TF_PROTO_L_##name(TF__MSG_PUT_S, TF__MSG_PUT_B, TF__MSG_PUT_S, name)                       \
    }                                                                                              \
    static inline void tf_msg_##name##_get(const uint8_t *p, struct tf_msg_##name *m)              \
    {                                                                                              \
        TF_PROTO_L_##name(TF__MSG_GET_S, TF__MSG_GET_B, TF__MSG_GET_S, name)                       \
    }                                                                                              \
    /* 1 when every reserved field of the encoded layout at P is zero. */                          \
    static inline int tf_msg_##name##_rsvd_zero(const uint8_t *p)                                  \
    {                                                                                              \
        (void)p;                                                                                   \
        return (0 TF_PROTO_L_##name(TF__MSG_RSVD_NONE, TF__MSG_RSVD_NONE, TF__MSG_RSVD_S,          \
                                    name)) == 0;                                                   \
    }
TF_PROTO_LAYOUTS(TF__MSG_DEFINE)
#undef TF__MSG_DEFINE

/* Static facts about one opcode. */
struct tf_proto_op_info {
    const char *name;  /* "LAUNCH" */
    uint16_t code;     /* TF_OP_LAUNCH */
    int kind;          /* TF_PROTO_KIND_* */
    uint32_t req_size; /* fixed part of the request payload */
    uint32_t rep_size; /* fixed part of the reply payload (SYNC only) */
    uint32_t tail_min; /* request tail bounds (bytes after the fixed part) */
    uint32_t tail_max;
};

/* Info for OPCODE, or NULL for an unknown opcode. */
const struct tf_proto_op_info *tf_proto_op(uint16_t opcode);
/* "LAUNCH", or "?" for an unknown opcode. */
const char *tf_proto_op_name(uint16_t opcode);

/* Writes a frame header at P (TF_PROTO_HDR_SIZE bytes). */
void tf_proto_hdr_put(uint8_t *p, uint16_t opcode, uint32_t flags, uint32_t length,
                      uint64_t req_id);

/* Checks a decoded header: magic, version, a known opcode, only known flags, REPLY set
 * exactly for SYNC replies when FROM_WORKER (else never), and length <= MAX_PAYLOAD.
 * Requests (FROM_WORKER == 0) must be SYNC or ASYNC; worker frames replies or EVENTs.
 * A version mismatch returns TF_ESTATE (so the caller can answer with its own version);
 * anything else malformed TF_EPROTO. WHY (may be NULL) gets a static description. */
int tf_proto_hdr_check(const struct tf_msg_frame_hdr *h, int from_worker, const char **why);

/* Splits a request payload of opcode OP into its fixed part and tail and checks the tail
 * bounds of the opcode (and of the fixed fields that size the tail, e.g. LAUNCH's nattrs).
 * Returns 0 or TF_EPROTO. */
int tf_proto_req_split(uint16_t op, const uint8_t *payload, size_t len, const uint8_t **tail,
                       size_t *tail_len, const char **why);

/* BATCH payload iteration. */
struct tf_proto_batch_iter {
    const uint8_t *p;
    size_t left;
};
void tf_proto_batch_begin(struct tf_proto_batch_iter *it, const uint8_t *payload, size_t len);
/* Next record: 1 with *OP, *BODY, *LEN set, 0 at the end, TF_EPROTO on a malformed record
 * (truncated, rsvd non-zero, opcode not an ASYNC one, nested BATCH). Record bodies are then
 * checked with tf_proto_req_split like standalone payloads. */
int tf_proto_batch_next(struct tf_proto_batch_iter *it, uint16_t *op, const uint8_t **body,
                        size_t *len, const char **why);

/* LAUNCH tail: NATTRS launch_attr then the parameter bytes. */
int tf_proto_launch_tail(const struct tf_msg_launch_req *m, const uint8_t *tail, size_t len,
                         const uint8_t **attrs, const uint8_t **params, size_t *params_len);

/* CALL / CALL_ASYNC tail: exactly NARGS u64 arguments (at most TF_PROTO_MAX_CALL_ARGS). */
int tf_proto_call_tail(const struct tf_msg_call_req *m, size_t len);
/* CALL reply: *OUTS gets the NOUTS u64 outputs after the fixed part; the reply must hold
 * exactly them. */
int tf_proto_call_rep(const uint8_t *p, size_t len, struct tf_msg_call_rep *m,
                      const uint8_t **outs);

/* A function record (func_info + name + params + attrs) decoded in place. */
struct tf_proto_func {
    struct tf_msg_func_info info;
    const uint8_t *name;   /* info.name_len bytes, not NUL-terminated */
    const uint8_t *params; /* info.nparams param_info */
    const uint8_t *attrs;  /* info.nattrs attr_val */
};
/* Decodes one record at P (LEN bytes available); *USED gets its size. Checks name length
 * (1..MAX_NAME), counts against the MAX_* limits, that params lie inside params_size, are
 * in increasing offset order and do not overlap. */
int tf_proto_func_decode(const uint8_t *p, size_t len, struct tf_proto_func *f, size_t *used);
/* Byte size of a function record with these counts (for encoders). */
size_t tf_proto_func_size(uint32_t name_len, uint32_t nparams, uint32_t nattrs);

/* HELLO reply tail: NDEV device records with their attributes. */
struct tf_proto_dev {
    struct tf_msg_dev_info info;
    const uint8_t *attrs; /* info.nattrs attr_val */
};
struct tf_proto_dev_iter {
    const uint8_t *p;
    size_t left;
    uint32_t remaining;
};
/* Checks the reply's counts and prepares iteration over its devices. */
int tf_proto_hello_rep_begin(const struct tf_msg_hello_rep *m, const uint8_t *tail, size_t len,
                             struct tf_proto_dev_iter *it);
/* 1 with *D set, 0 after the last device (and the tail fully consumed), or TF_EPROTO. */
int tf_proto_dev_next(struct tf_proto_dev_iter *it, struct tf_proto_dev *d);

/* MODULE_LOAD reply tail: the log, then NFUNCS function records. */
struct tf_proto_funcs_iter {
    const uint8_t *p;
    size_t left;
    uint32_t remaining;
};
int tf_proto_module_load_rep_begin(const struct tf_msg_module_load_rep *m, const uint8_t *tail,
                                   size_t len, const uint8_t **log, struct tf_proto_funcs_iter *it);
int tf_proto_funcs_next(struct tf_proto_funcs_iter *it, struct tf_proto_func *f);

#endif
