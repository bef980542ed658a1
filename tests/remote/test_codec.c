/* SPDX-License-Identifier: Apache-2.0
 *
 * Wire codec: what a worker and a client accept and reject, byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "remote/codec.h"

static void fields_are_little_endian_at_their_documented_offsets(void **state)
{
    uint8_t p[TF_PROTO_SIZE_launch_req];
    struct tf_msg_launch_req m = {.ctx = 0x0102030405060708ull,
                                  .func = 0x1112131415161718ull,
                                  .stream = 2,
                                  .grid_x = 0xa1a2a3a4u,
                                  .block_z = 7,
                                  .shmem = 0x10000,
                                  .nattrs = 3};
    tf_msg_launch_req_put(p, &m);
    assert_int_equal(p[0], 0x08); /* ctx low byte first */
    assert_int_equal(p[7], 0x01);
    assert_int_equal(p[8], 0x18);
    assert_int_equal(p[16], 2);
    assert_int_equal(p[24], 0xa4);
    assert_int_equal(p[27], 0xa1);
    assert_int_equal(p[44], 7);
    assert_int_equal(p[50], 1); /* shmem 0x10000 at offset 48 */
    assert_int_equal(p[52], 3);
    struct tf_msg_launch_req back;
    tf_msg_launch_req_get(p, &back);
    assert_memory_equal(&back, &m, sizeof(m));
}

static void every_layout_round_trips(void **state)
{
    uint8_t buf[512], again[512];
    for (int seed = 1; seed < 4; seed++) {
#define RT(name, size)                                                                             \
    {                                                                                              \
        for (size_t i = 0; i < (size); i++)                                                        \
            buf[i] = (uint8_t)(i * 31 + seed);                                                     \
        struct tf_msg_##name m;                                                                    \
        tf_msg_##name##_get(buf, &m);                                                              \
        tf_msg_##name##_put(again, &m);                                                            \
        assert_memory_equal(buf, again, (size));                                                   \
    }
        TF_PROTO_LAYOUTS(RT)
#undef RT
    }
}

static struct tf_msg_frame_hdr hdr(uint16_t op, uint32_t flags, uint32_t len, uint64_t id)
{
    uint8_t p[TF_PROTO_HDR_SIZE];
    tf_proto_hdr_put(p, op, flags, len, id);
    struct tf_msg_frame_hdr h;
    tf_msg_frame_hdr_get(p, &h);
    return h;
}

static void worker_accepts_only_well_formed_request_headers(void **state)
{
    const char *why;
    struct tf_msg_frame_hdr h = hdr(TF_OP_MEM_ALLOC, 0, 16, 9);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), 0);
    h.magic ^= 1;
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    assert_string_equal(why, "bad magic");
    h = hdr(TF_OP_MEM_ALLOC, 0, 16, 9);
    h.version = TF_PROTO_VERSION + 1;
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_ESTATE);
    h = hdr(0x7777, 0, 0, 9);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    h = hdr(TF_OP_MEM_ALLOC, 0x4, 16, 9);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    h = hdr(TF_OP_MEM_ALLOC, 0, TF_PROTO_MAX_PAYLOAD + 1, 9);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    /* SYNC requests carry a request id, ASYNC ones none; events never come from a client. */
    h = hdr(TF_OP_MEM_ALLOC, 0, 16, 0);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    h = hdr(TF_OP_BATCH, 0, 16, 5);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    h = hdr(TF_OP_DATA, 0, 16, 0);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
    h = hdr(TF_OP_MEM_ALLOC, TF_PROTO_F_REPLY, 16, 5);
    assert_int_equal(tf_proto_hdr_check(&h, 0, &why), TF_EPROTO);
}

static void client_accepts_only_replies_and_events_from_the_worker(void **state)
{
    const char *why;
    struct tf_msg_frame_hdr h = hdr(TF_OP_MEM_ALLOC, TF_PROTO_F_REPLY, 24, 3);
    assert_int_equal(tf_proto_hdr_check(&h, 1, &why), 0);
    h = hdr(TF_OP_DATA, 0, 16, 0);
    assert_int_equal(tf_proto_hdr_check(&h, 1, &why), 0);
    h = hdr(TF_OP_MEM_ALLOC, 0, 16, 3); /* a request sent to the client */
    assert_int_equal(tf_proto_hdr_check(&h, 1, &why), TF_EPROTO);
    h = hdr(TF_OP_LAUNCH, TF_PROTO_F_REPLY, 4, 3); /* a reply to an async opcode */
    assert_int_equal(tf_proto_hdr_check(&h, 1, &why), TF_EPROTO);
    h = hdr(TF_OP_KEEPALIVE, 0, 0, 8);
    assert_int_equal(tf_proto_hdr_check(&h, 1, &why), TF_EPROTO);
}

static void tails_and_reserved_fields_are_enforced(void **state)
{
    const uint8_t *tail;
    size_t tl;
    const char *why;
    uint8_t p[64] = {0};
    assert_int_equal(tf_proto_req_split(TF_OP_MEM_ALLOC, p, 16, &tail, &tl, &why), 0);
    assert_int_equal(tl, 0);
    assert_int_equal(tf_proto_req_split(TF_OP_MEM_ALLOC, p, 15, &tail, &tl, &why), TF_EPROTO);
    assert_int_equal(tf_proto_req_split(TF_OP_MEM_ALLOC, p, 17, &tail, &tl, &why), TF_EPROTO);
    /* HELLO needs a token; MODULE_GET_FUNC a name. */
    assert_int_equal(tf_proto_req_split(TF_OP_HELLO, p, 16, &tail, &tl, &why), TF_EPROTO);
    assert_int_equal(tf_proto_req_split(TF_OP_HELLO, p, 20, &tail, &tl, &why), 0);
    assert_ptr_equal(tail, p + 16);
    assert_int_equal(tl, 4);
    assert_int_equal(tf_proto_req_split(TF_OP_MODULE_GET_FUNC, p, 24, &tail, &tl, &why), TF_EPROTO);
    /* A non-zero reserved field makes the request malformed. */
    p[28] = 1; /* mem_pitch_req.rsvd */
    assert_int_equal(tf_proto_req_split(TF_OP_MEM_ALLOC_PITCH, p, 32, &tail, &tl, &why), TF_EPROTO);
    assert_string_equal(why, "reserved field is not zero");
}

static size_t rec(uint8_t *p, uint16_t op, uint16_t rsvd, uint32_t len)
{
    struct tf_msg_batch_rec r = {.opcode = op, .rsvd = rsvd, .body_len = len};
    tf_msg_batch_rec_put(p, &r);
    memset(p + 8, 0, len);
    return 8 + len;
}

static void batches_hold_only_async_records_that_fit(void **state)
{
    uint8_t b[256];
    size_t n = 0;
    n += rec(b + n, TF_OP_MEM_FREE, 0, 16);
    n += rec(b + n, TF_OP_CALL_ASYNC, 0, 32);
    struct tf_proto_batch_iter it;
    uint16_t op;
    const uint8_t *body;
    size_t len;
    const char *why;
    tf_proto_batch_begin(&it, b, n);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), 1);
    assert_int_equal(op, TF_OP_MEM_FREE);
    assert_int_equal(len, 16);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), 1);
    assert_int_equal(op, TF_OP_CALL_ASYNC);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), 0);
    /* Truncated body, truncated header, nested batch, sync opcode, reserved bits. */
    tf_proto_batch_begin(&it, b, n - 1);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), 1);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), TF_EPROTO);
    tf_proto_batch_begin(&it, b, 5);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), TF_EPROTO);
    uint16_t bad[] = {TF_OP_BATCH, TF_OP_MEM_ALLOC, TF_OP_DATA, 0x7777};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t k = rec(b, bad[i], 0, 0);
        tf_proto_batch_begin(&it, b, k);
        assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), TF_EPROTO);
    }
    size_t k = rec(b, TF_OP_MEM_FREE, 1, 16);
    tf_proto_batch_begin(&it, b, k);
    assert_int_equal(tf_proto_batch_next(&it, &op, &body, &len, &why), TF_EPROTO);
}

static size_t put_func(uint8_t *p, uint64_t id, const char *name, const uint32_t *params,
                       uint32_t nparams, uint32_t psize, uint32_t nattrs)
{
    struct tf_msg_func_info fi = {.func = id,
                                  .nparams = nparams,
                                  .name_len = (uint32_t)strlen(name),
                                  .nattrs = nattrs,
                                  .params_size = psize};
    tf_msg_func_info_put(p, &fi);
    size_t o = TF_PROTO_SIZE_func_info;
    memcpy(p + o, name, strlen(name));
    o += strlen(name);
    for (uint32_t i = 0; i < nparams; i++, o += 8) {
        struct tf_msg_param_info pi = {.offset = params[2 * i], .size = params[2 * i + 1]};
        tf_msg_param_info_put(p + o, &pi);
    }
    for (uint32_t i = 0; i < nattrs; i++, o += 8) {
        struct tf_msg_attr_val av = {.status = 0, .value = i * 10};
        tf_msg_attr_val_put(p + o, &av);
    }
    return o;
}

static void function_records_must_describe_a_sane_parameter_layout(void **state)
{
    uint8_t b[512];
    uint32_t ok[] = {0, 8, 8, 8, 16, 4, 24, 8}; /* sgemm-like: ptr ptr int ptr */
    size_t n = put_func(b, 77, "sgemm_tiled", ok, 4, 32, 3);
    struct tf_proto_func f;
    size_t used;
    assert_int_equal(tf_proto_func_decode(b, n, &f, &used), 0);
    assert_int_equal(used, n);
    assert_int_equal(f.info.func, 77);
    assert_memory_equal(f.name, "sgemm_tiled", 11);
    assert_int_equal(tf_proto_func_decode(b, n - 1, &f, &used), TF_EPROTO);
    uint32_t overlap[] = {0, 8, 4, 8};
    n = put_func(b, 1, "k", overlap, 2, 16, 0);
    assert_int_equal(tf_proto_func_decode(b, n, &f, &used), TF_EPROTO);
    uint32_t outside[] = {0, 8, 8, 16};
    n = put_func(b, 1, "k", outside, 2, 16, 0);
    assert_int_equal(tf_proto_func_decode(b, n, &f, &used), TF_EPROTO);
    uint32_t zero[] = {0, 0};
    n = put_func(b, 1, "k", zero, 1, 16, 0);
    assert_int_equal(tf_proto_func_decode(b, n, &f, &used), TF_EPROTO);
    n = put_func(b, 1, "", ok, 0, 0, 0);
    assert_int_equal(tf_proto_func_decode(b, n, &f, &used), TF_EPROTO);
}

static void hello_reply_device_records_are_counted_exactly(void **state)
{
    uint8_t b[2 * (TF_PROTO_SIZE_dev_info + 16) + 8];
    size_t n = 0;
    for (int d = 0; d < 2; d++) {
        struct tf_msg_dev_info di = {.total_mem = 1u << 30, .nattrs = 2};
        memcpy(di.name, "Sim", 3);
        tf_msg_dev_info_put(b + n, &di);
        n += TF_PROTO_SIZE_dev_info;
        memset(b + n, 0, 16);
        n += 16;
    }
    struct tf_msg_hello_rep rep = {.ndev = 2};
    struct tf_proto_dev_iter it;
    struct tf_proto_dev d;
    assert_int_equal(tf_proto_hello_rep_begin(&rep, b, n, &it), 0);
    assert_int_equal(tf_proto_dev_next(&it, &d), 1);
    assert_int_equal(d.info.total_mem, 1u << 30);
    assert_int_equal(tf_proto_dev_next(&it, &d), 1);
    assert_int_equal(tf_proto_dev_next(&it, &d), 0);
    /* One byte too many or too few. */
    assert_int_equal(tf_proto_hello_rep_begin(&rep, b, n + 1, &it), 0);
    tf_proto_dev_next(&it, &d);
    tf_proto_dev_next(&it, &d);
    assert_int_equal(tf_proto_dev_next(&it, &d), TF_EPROTO);
    assert_int_equal(tf_proto_hello_rep_begin(&rep, b, n - 1, &it), 0);
    tf_proto_dev_next(&it, &d);
    assert_int_equal(tf_proto_dev_next(&it, &d), TF_EPROTO);
    rep.ndev = TF_PROTO_MAX_DEVICES + 1;
    assert_int_equal(tf_proto_hello_rep_begin(&rep, b, n, &it), TF_EPROTO);
}

static void launch_tails_split_attributes_from_parameters(void **state)
{
    uint8_t tail[64] = {0};
    struct tf_msg_launch_req m = {.nattrs = 2};
    const uint8_t *attrs, *params;
    size_t plen;
    assert_int_equal(tf_proto_launch_tail(&m, tail, 40, &attrs, &params, &plen), 0);
    assert_ptr_equal(attrs, tail);
    assert_ptr_equal(params, tail + 32);
    assert_int_equal(plen, 8);
    assert_int_equal(tf_proto_launch_tail(&m, tail, 31, &attrs, &params, &plen), TF_EPROTO);
    m.nattrs = TF_PROTO_MAX_LAUNCH_ATTRS + 1;
    assert_int_equal(tf_proto_launch_tail(&m, tail, 64, &attrs, &params, &plen), TF_EPROTO);
}

static void call_requests_and_replies_carry_exactly_their_arguments(void **state)
{
    struct tf_msg_call_req m = {.call = 20, .nargs = 2};
    assert_int_equal(tf_proto_call_tail(&m, 16), 0);
    assert_int_equal(tf_proto_call_tail(&m, 15), TF_EPROTO);
    assert_int_equal(tf_proto_call_tail(&m, 24), TF_EPROTO);
    m.nargs = TF_PROTO_MAX_CALL_ARGS + 1;
    assert_int_equal(tf_proto_call_tail(&m, 8u * m.nargs), TF_EPROTO);
    uint8_t rep[TF_PROTO_SIZE_call_rep + 16];
    struct tf_msg_call_rep r = {.status = 0, .nouts = 2};
    tf_msg_call_rep_put(rep, &r);
    struct tf_msg_call_rep got;
    const uint8_t *outs;
    assert_int_equal(tf_proto_call_rep(rep, sizeof(rep), &got, &outs), 0);
    assert_ptr_equal(outs, rep + TF_PROTO_SIZE_call_rep);
    assert_int_equal(tf_proto_call_rep(rep, sizeof(rep) - 1, &got, &outs), TF_EPROTO);
    r.nouts = 0xffffffffu;
    tf_msg_call_rep_put(rep, &r);
    assert_int_equal(tf_proto_call_rep(rep, sizeof(rep), &got, &outs), TF_EPROTO);
    assert_int_equal(tf_proto_call_rep(rep, 3, &got, &outs), TF_EPROTO);
}

static void opcode_names_come_from_the_one_list(void **state)
{
    assert_string_equal(tf_proto_op_name(TF_OP_LAUNCH), "LAUNCH");
    assert_string_equal(tf_proto_op_name(TF_OP_CALL_ASYNC), "CALL_ASYNC");
    assert_string_equal(tf_proto_op_name(0x7777), "?");
    assert_int_equal(tf_proto_op(TF_OP_MEM_ALLOC)->rep_size, TF_PROTO_SIZE_mem_alloc_rep);
    assert_int_equal(tf_proto_op(TF_OP_LAUNCH)->kind, TF_PROTO_KIND_ASYNC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fields_are_little_endian_at_their_documented_offsets),
        cmocka_unit_test(every_layout_round_trips),
        cmocka_unit_test(worker_accepts_only_well_formed_request_headers),
        cmocka_unit_test(client_accepts_only_replies_and_events_from_the_worker),
        cmocka_unit_test(tails_and_reserved_fields_are_enforced),
        cmocka_unit_test(batches_hold_only_async_records_that_fit),
        cmocka_unit_test(function_records_must_describe_a_sane_parameter_layout),
        cmocka_unit_test(hello_reply_device_records_are_counted_exactly),
        cmocka_unit_test(launch_tails_split_attributes_from_parameters),
        cmocka_unit_test(call_requests_and_replies_carry_exactly_their_arguments),
        cmocka_unit_test(opcode_names_come_from_the_one_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
