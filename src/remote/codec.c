/* SPDX-License-Identifier: Apache-2.0
 *
 * Remote-GPU protocol codec: opcode table, header checks, tail rules and the decoders of the
 * structured tails. Pure functions over byte ranges; see codec.h.
 */
#include "remote/codec.h"

#include "common/err.h"

#define WHY(s)                                                                                     \
    do {                                                                                           \
        if (why)                                                                                   \
            *why = (s);                                                                            \
        return TF_EPROTO;                                                                          \
    } while (0)

static const struct tf_proto_op_info op_table[] = {
#define OP_INFO(name, code, kind, req, rep, tmin, tmax)                                            \
    {#name, code,           TF_PROTO_KIND_##kind, TF_PROTO_SIZE_##req, TF_PROTO_SIZE_##rep,        \
     tmin,  TF_PROTO_##tmax},
    TF_PROTO_OPS(OP_INFO)
#undef OP_INFO
};

enum {
#define OP_IDX(name, code, kind, req, rep, tmin, tmax) OPIDX_##name,
    TF_PROTO_OPS(OP_IDX)
#undef OP_IDX
};

/* The empty layout has no reserved fields. */
static inline int tf_msg_none_rsvd_zero(const uint8_t *p)
{
    (void)p;
    return 1;
}

const struct tf_proto_op_info *tf_proto_op(uint16_t opcode)
{
    switch (opcode) {
#define OP_CASE(name, code, kind, req, rep, tmin, tmax)                                            \
    case code:                                                                                     \
        return &op_table[OPIDX_##name];
        TF_PROTO_OPS(OP_CASE)
#undef OP_CASE
    default:
        return NULL;
    }
}

const char *tf_proto_op_name(uint16_t opcode)
{
    const struct tf_proto_op_info *op = tf_proto_op(opcode);
    return op ? op->name : "?";
}

void tf_proto_hdr_put(uint8_t *p, uint16_t opcode, uint32_t flags, uint32_t length, uint64_t req_id)
{
    struct tf_msg_frame_hdr h = {
        .magic = TF_PROTO_MAGIC,
        .version = TF_PROTO_VERSION,
        .opcode = opcode,
        .flags = flags,
        .length = length,
        .req_id = req_id,
    };
    tf_msg_frame_hdr_put(p, &h);
}

int tf_proto_hdr_check(const struct tf_msg_frame_hdr *h, int from_worker, const char **why)
{
    if (h->magic != TF_PROTO_MAGIC)
        WHY("bad magic");
    if (h->version != TF_PROTO_VERSION) {
        if (why)
            *why = "unsupported protocol version";
        return TF_ESTATE;
    }
    const struct tf_proto_op_info *op = tf_proto_op(h->opcode);
    if (!op)
        WHY("unknown opcode");
    if (h->flags & ~TF_PROTO_F_MASK)
        WHY("unknown flag bits");
    if (h->length > TF_PROTO_MAX_PAYLOAD)
        WHY("payload longer than the maximum frame");
    int reply = (h->flags & TF_PROTO_F_REPLY) != 0;
    if (from_worker) {
        if (reply && op->kind != TF_PROTO_KIND_SYNC)
            WHY("reply to an opcode that has none");
        if (!reply && op->kind != TF_PROTO_KIND_EVENT)
            WHY("request opcode sent by the worker");
        if (reply != (h->req_id != 0))
            WHY("request id does not match the frame kind");
    } else {
        if (reply)
            WHY("reply flag on a request");
        if (op->kind == TF_PROTO_KIND_EVENT)
            WHY("event opcode sent by the client");
        if ((op->kind == TF_PROTO_KIND_SYNC) != (h->req_id != 0))
            WHY("request id does not match the opcode kind");
    }
    return 0;
}

int tf_proto_req_split(uint16_t opcode, const uint8_t *payload, size_t len, const uint8_t **tail,
                       size_t *tail_len, const char **why)
{
    const struct tf_proto_op_info *op = tf_proto_op(opcode);
    if (!op)
        WHY("unknown opcode");
    if (len < op->req_size)
        WHY("payload shorter than the message");
    size_t tl = len - op->req_size;
    if (tl < op->tail_min || tl > op->tail_max)
        WHY("message tail out of bounds");
    int rsvd_ok = 1;
    switch (opcode) {
#define RSVD_CASE(name, code, kind, req, rep, tmin, tmax)                                          \
    case code:                                                                                     \
        rsvd_ok = tf_msg_##req##_rsvd_zero(payload);                                               \
        break;
        TF_PROTO_OPS(RSVD_CASE)
#undef RSVD_CASE
    default:
        break;
    }
    if (!rsvd_ok)
        WHY("reserved field is not zero");
    *tail = payload + op->req_size;
    *tail_len = tl;
    return 0;
}

void tf_proto_batch_begin(struct tf_proto_batch_iter *it, const uint8_t *payload, size_t len)
{
    it->p = payload;
    it->left = len;
}

int tf_proto_batch_next(struct tf_proto_batch_iter *it, uint16_t *op, const uint8_t **body,
                        size_t *len, const char **why)
{
    if (it->left == 0)
        return 0;
    if (it->left < TF_PROTO_SIZE_batch_rec)
        WHY("truncated batch record header");
    struct tf_msg_batch_rec r;
    tf_msg_batch_rec_get(it->p, &r);
    if (!tf_msg_batch_rec_rsvd_zero(it->p))
        WHY("reserved field is not zero");
    if (r.body_len > it->left - TF_PROTO_SIZE_batch_rec)
        WHY("batch record longer than the batch");
    const struct tf_proto_op_info *info = tf_proto_op(r.opcode);
    if (!info || info->kind != TF_PROTO_KIND_ASYNC || r.opcode == TF_OP_BATCH)
        WHY("batch record opcode is not an asynchronous request");
    *op = r.opcode;
    *body = it->p + TF_PROTO_SIZE_batch_rec;
    *len = r.body_len;
    it->p += TF_PROTO_SIZE_batch_rec + r.body_len;
    it->left -= TF_PROTO_SIZE_batch_rec + r.body_len;
    return 1;
}

int tf_proto_launch_tail(const struct tf_msg_launch_req *m, const uint8_t *tail, size_t len,
                         const uint8_t **attrs, const uint8_t **params, size_t *params_len)
{
    const char **why = NULL;
    if (m->nattrs > TF_PROTO_MAX_LAUNCH_ATTRS)
        WHY("too many launch attributes");
    size_t abytes = (size_t)m->nattrs * TF_PROTO_SIZE_launch_attr;
    if (abytes > len)
        WHY("launch attributes truncated");
    if (len - abytes > TF_PROTO_MAX_PARAM_BYTES)
        WHY("kernel parameters too large");
    *attrs = tail;
    *params = tail + abytes;
    *params_len = len - abytes;
    return 0;
}

int tf_proto_call_tail(const struct tf_msg_call_req *m, size_t len)
{
    return m->nargs <= TF_PROTO_MAX_CALL_ARGS && len == (size_t)m->nargs * 8u ? 0 : TF_EPROTO;
}

int tf_proto_call_rep(const uint8_t *p, size_t len, struct tf_msg_call_rep *m, const uint8_t **outs)
{
    if (len < TF_PROTO_SIZE_call_rep)
        return TF_EPROTO;
    tf_msg_call_rep_get(p, m);
    if (m->nouts > TF_PROTO_MAX_CALL_ARGS || len != TF_PROTO_SIZE_call_rep + (size_t)m->nouts * 8u)
        return TF_EPROTO;
    *outs = p + TF_PROTO_SIZE_call_rep;
    return 0;
}

size_t tf_proto_func_size(uint32_t name_len, uint32_t nparams, uint32_t nattrs)
{
    return TF_PROTO_SIZE_func_info + (size_t)name_len + (size_t)nparams * TF_PROTO_SIZE_param_info +
           (size_t)nattrs * TF_PROTO_SIZE_attr_val;
}

int tf_proto_func_decode(const uint8_t *p, size_t len, struct tf_proto_func *f, size_t *used)
{
    const char **why = NULL;
    if (len < TF_PROTO_SIZE_func_info)
        WHY("truncated function record");
    tf_msg_func_info_get(p, &f->info);
    const struct tf_msg_func_info *in = &f->info;
    if (in->name_len == 0 || in->name_len > TF_PROTO_MAX_NAME)
        WHY("function name length out of range");
    if (in->nparams > TF_PROTO_MAX_PARAMS || in->nattrs > TF_PROTO_MAX_FUNC_ATTRS)
        WHY("function record counts out of range");
    if (in->params_size > TF_PROTO_MAX_PARAM_BYTES)
        WHY("function parameter buffer too large");
    size_t need = tf_proto_func_size(in->name_len, in->nparams, in->nattrs);
    if (need > len)
        WHY("truncated function record");
    f->name = p + TF_PROTO_SIZE_func_info;
    f->params = f->name + in->name_len;
    f->attrs = f->params + (size_t)in->nparams * TF_PROTO_SIZE_param_info;
    uint64_t end = 0;
    for (uint32_t i = 0; i < in->nparams; i++) {
        struct tf_msg_param_info pi;
        tf_msg_param_info_get(f->params + (size_t)i * TF_PROTO_SIZE_param_info, &pi);
        uint64_t stop = (uint64_t)pi.offset + pi.size;
        if (pi.size == 0 || pi.offset < end || stop > in->params_size)
            WHY("kernel parameter layout out of order or out of bounds");
        end = stop;
    }
    *used = need;
    return 0;
}

int tf_proto_hello_rep_begin(const struct tf_msg_hello_rep *m, const uint8_t *tail, size_t len,
                             struct tf_proto_dev_iter *it)
{
    const char **why = NULL;
    if (m->ndev > TF_PROTO_MAX_DEVICES)
        WHY("too many devices");
    it->p = tail;
    it->left = len;
    it->remaining = m->ndev;
    return 0;
}

int tf_proto_dev_next(struct tf_proto_dev_iter *it, struct tf_proto_dev *d)
{
    const char **why = NULL;
    if (it->remaining == 0) {
        if (it->left != 0)
            WHY("bytes after the last device record");
        return 0;
    }
    if (it->left < TF_PROTO_SIZE_dev_info)
        WHY("truncated device record");
    tf_msg_dev_info_get(it->p, &d->info);
    if (d->info.nattrs > TF_PROTO_MAX_DEV_ATTRS)
        WHY("too many device attributes");
    size_t need = TF_PROTO_SIZE_dev_info + (size_t)d->info.nattrs * TF_PROTO_SIZE_attr_val;
    if (need > it->left)
        WHY("truncated device record");
    d->attrs = it->p + TF_PROTO_SIZE_dev_info;
    it->p += need;
    it->left -= need;
    it->remaining--;
    return 1;
}

int tf_proto_module_load_rep_begin(const struct tf_msg_module_load_rep *m, const uint8_t *tail,
                                   size_t len, const uint8_t **log, struct tf_proto_funcs_iter *it)
{
    const char **why = NULL;
    if (m->log_len > TF_PROTO_MAX_LOG || m->log_len > len)
        WHY("module log length out of range");
    if (m->nfuncs > TF_PROTO_MAX_FUNCS)
        WHY("too many functions");
    *log = tail;
    it->p = tail + m->log_len;
    it->left = len - m->log_len;
    it->remaining = m->nfuncs;
    return 0;
}

int tf_proto_funcs_next(struct tf_proto_funcs_iter *it, struct tf_proto_func *f)
{
    const char **why = NULL;
    if (it->remaining == 0) {
        if (it->left != 0)
            WHY("bytes after the last function record");
        return 0;
    }
    size_t used;
    int rc = tf_proto_func_decode(it->p, it->left, f, &used);
    if (rc)
        return rc;
    it->p += used;
    it->left -= used;
    it->remaining--;
    return 1;
}
