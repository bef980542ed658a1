/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the remote-GPU wire decoders on arbitrary bytes. The input is read as a
 * stream of frames, as tf-worker and libtf_client read a connection: every header is checked
 * both ways (as a client request and as a worker frame), and every payload goes through the
 * request split (tail rules, reserved fields), the BATCH record iterator (each record through
 * the request split again), the LAUNCH tail split, and the reply decoders with structured
 * tails (HELLO device records, MODULE_LOAD function records, function replies). Decoders must
 * never read outside the input and must agree with each other on what they accept.
 */
#include "remote/codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void request(uint16_t op, const uint8_t *p, size_t len, int depth)
{
    const uint8_t *tail;
    size_t tl;
    const char *why;
    if (tf_proto_req_split(op, p, len, &tail, &tl, &why) != 0)
        return;
    const struct tf_proto_op_info *info = tf_proto_op(op);
    if (!info || tail != p + info->req_size || tl != len - info->req_size)
        abort();
    if (op == TF_OP_LAUNCH) {
        struct tf_msg_launch_req m;
        tf_msg_launch_req_get(p, &m);
        const uint8_t *attrs, *params;
        size_t plen;
        if (tf_proto_launch_tail(&m, tail, tl, &attrs, &params, &plen) == 0) {
            if (params + plen != tail + tl || plen > TF_PROTO_MAX_PARAM_BYTES)
                abort();
            for (uint32_t i = 0; i < m.nattrs; i++) {
                struct tf_msg_launch_attr a;
                tf_msg_launch_attr_get(attrs + (size_t)i * TF_PROTO_SIZE_launch_attr, &a);
            }
        }
    } else if (op == TF_OP_BATCH && depth == 0) {
        struct tf_proto_batch_iter it;
        uint16_t rop;
        const uint8_t *body;
        size_t blen;
        tf_proto_batch_begin(&it, tail, tl);
        while (tf_proto_batch_next(&it, &rop, &body, &blen, &why) == 1) {
            if (tf_proto_op(rop)->kind != TF_PROTO_KIND_ASYNC || rop == TF_OP_BATCH)
                abort();
            request(rop, body, blen, 1);
        }
    }
}

static void reply(uint16_t op, const uint8_t *p, size_t len)
{
    const struct tf_proto_op_info *info = tf_proto_op(op);
    if (!info || info->kind != TF_PROTO_KIND_SYNC || len < info->rep_size)
        return;
    const uint8_t *tail = p + info->rep_size;
    size_t tl = len - info->rep_size;
    if (op == TF_OP_HELLO) {
        struct tf_msg_hello_rep m;
        tf_msg_hello_rep_get(p, &m);
        struct tf_proto_dev_iter it;
        struct tf_proto_dev d;
        if (tf_proto_hello_rep_begin(&m, tail, tl, &it) == 0) {
            uint32_t n = 0;
            while (tf_proto_dev_next(&it, &d) == 1) {
                if (++n > m.ndev || d.info.nattrs > TF_PROTO_MAX_DEV_ATTRS)
                    abort();
                for (uint32_t a = 0; a < d.info.nattrs; a++) {
                    struct tf_msg_attr_val av;
                    tf_msg_attr_val_get(d.attrs + (size_t)a * TF_PROTO_SIZE_attr_val, &av);
                }
            }
        }
    } else if (op == TF_OP_MODULE_LOAD) {
        struct tf_msg_module_load_rep m;
        tf_msg_module_load_rep_get(p, &m);
        const uint8_t *log;
        struct tf_proto_funcs_iter it;
        struct tf_proto_func f;
        if (tf_proto_module_load_rep_begin(&m, tail, tl, &log, &it) == 0) {
            while (tf_proto_funcs_next(&it, &f) == 1) {
                uint32_t end = 0;
                for (uint32_t i = 0; i < f.info.nparams; i++) {
                    struct tf_msg_param_info pi;
                    tf_msg_param_info_get(f.params + (size_t)i * TF_PROTO_SIZE_param_info, &pi);
                    if (pi.offset < end || pi.offset + (uint64_t)pi.size > f.info.params_size)
                        abort();
                    end = pi.offset + pi.size;
                }
            }
        }
    } else if (op == TF_OP_MODULE_GET_FUNC || op == TF_OP_KERNEL_GET_FUNC) {
        struct tf_proto_func f;
        size_t used;
        if (tf_proto_func_decode(tail, tl, &f, &used) == 0 && used > tl)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (size - off >= TF_PROTO_HDR_SIZE) {
        struct tf_msg_frame_hdr h;
        tf_msg_frame_hdr_get(data + off, &h);
        off += TF_PROTO_HDR_SIZE;
        const char *why;
        int as_request = tf_proto_hdr_check(&h, 0, &why);
        int as_worker = tf_proto_hdr_check(&h, 1, &why);
        /* A frame is never both a valid request and a valid worker frame. */
        if (as_request == 0 && as_worker == 0)
            abort();
        size_t len = h.length < size - off ? h.length : size - off;
        const uint8_t *p = data + off;
        request(h.opcode, p, len, 0);
        if (h.flags & TF_PROTO_F_REPLY)
            reply(h.opcode, p, len);
        else if (h.opcode == TF_OP_DATA && len >= TF_PROTO_SIZE_data_ev) {
            struct tf_msg_data_ev ev;
            tf_msg_data_ev_get(p, &ev);
        }
        off += len;
    }
    return 0;
}
