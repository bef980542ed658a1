/* SPDX-License-Identifier: Apache-2.0
 *
 * TensorFusion remote-GPU wire protocol, version 2 (public header).
 *
 * A client (libtf_client.so, installed as libcuda.so.1) forwards CUDA driver API calls to a
 * worker (tf-worker) over TCP (TCP_NODELAY) or a unix stream socket. This header is the
 * specification of every byte on that connection; docs/protocol.md explains the semantics.
 *
 * Encoding. Every integer is little-endian, fields are packed with no implicit padding, and
 * every message is serialised field by field (src/remote/codec.h); no C struct is ever copied
 * onto the wire. Signed values (device ordinals, priorities, attribute values) travel as their
 * 32-bit two's complement; float values as their IEEE-754 bit pattern. The layouts below are
 * X-macro tables of (OFFSET, SIZE, FIELD); _Static_asserts at the end of this file pin each
 * field to its offset and each message to its total size, so a table cannot drift.
 *
 * Frames. A connection is a sequence of frames, each a 24-byte header followed by LENGTH
 * payload bytes (LENGTH <= TF_PROTO_MAX_PAYLOAD):
 *
 *   OFFSET SIZE FIELD    DESCRIPTION
 *   0      4    magic    TF_PROTO_MAGIC ("TFRP")
 *   4      2    version  TF_PROTO_VERSION
 *   6      2    opcode   one of TF_PROTO_OPS below
 *   8      4    flags    TF_PROTO_F_REPLY on worker replies; other bits must be 0
 *   12     4    length   payload bytes after the header
 *   16     8    req_id   request id of a SYNC request, echoed by its reply; 0 otherwise
 *
 * Opcode kinds. SYNC requests get exactly one reply frame (same opcode, TF_PROTO_F_REPLY, same
 * req_id) whose payload starts with a u32 CUresult status. ASYNC requests never get a reply;
 * the client coalesces them into one BATCH frame whose payload is a sequence of records
 * (TF_PROTO_BATCH_REC header + body). EVENT frames travel worker -> client unsolicited
 * (req_id 0): keepalives, bulk data, close notices. A worker that meets anything else (bad
 * magic/version/opcode/flags/length, a field out of range, a non-zero reserved field, a
 * handle of the wrong type) closes that connection and only that one.
 *
 * Errors of ASYNC requests (launch failures, bad handles) are remembered by the worker and
 * returned by the next SYNC reply, as CUDA returns them from the next synchronising call.
 *
 * Handles. The client chooses the 64-bit ids of the objects it creates (contexts, modules,
 * libraries, streams, events) so that creation can be asynchronous; the worker assigns the
 * ids of functions/kernels it enumerates at module load and sets TF_PROTO_H_WORKER in them.
 * Each connection has its own id space: an id means nothing on another connection.
 *
 * Nothing here allocates or has state; the header is usable from C and the fuzz targets.
 */
#ifndef TF_PROTOCOL_H
#define TF_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define TF_PROTO_MAGIC 0x50524654u /* bytes 'T' 'F' 'R' 'P' */
#define TF_PROTO_VERSION 2u

#define TF_PROTO_HDR_SIZE 24u
#define TF_PROTO_F_REPLY 0x1u
#define TF_PROTO_F_MASK 0x1u

/* Limits every decoder enforces. */
#define TF_PROTO_MAX_PAYLOAD (2u << 20) /* bytes after a frame header */
#define TF_PROTO_CHUNK (1u << 20)       /* bulk copy chunk (HTOD data, DATA events) */
#define TF_PROTO_MAX_TOKEN 1024u        /* auth token bytes */
#define TF_PROTO_MAX_NAME 4096u         /* function / global names */
#define TF_PROTO_MAX_DEVICES 64u        /* devices one worker exposes */
#define TF_PROTO_MAX_DEV_ATTRS 1024u    /* device attributes per device */
#define TF_PROTO_MAX_FUNC_ATTRS 64u     /* function attributes per function */
#define TF_PROTO_MAX_PARAMS 4096u       /* kernel parameters */
#define TF_PROTO_MAX_PARAM_BYTES 32768u /* packed kernel parameter buffer */
#define TF_PROTO_MAX_LAUNCH_ATTRS 16u   /* cuLaunchKernelEx attributes */
#define TF_PROTO_MAX_FUNCS 65536u       /* functions reported by one module load */
#define TF_PROTO_MAX_BLOB (512u << 20)  /* module image uploaded with BLOB_APPEND */
#define TF_PROTO_MAX_LOG 4096u          /* JIT error log returned by MODULE_LOAD */
#define TF_PROTO_MAX_CLOSE_MSG 512u     /* text of a CLOSE event */
#define TF_PROTO_0 0u                   /* a zero tail bound in TF_PROTO_OPS */
#define TF_PROTO_MAX_LAUNCH_TAIL (TF_PROTO_MAX_LAUNCH_ATTRS * 16u + TF_PROTO_MAX_PARAM_BYTES)
#define TF_PROTO_MAX_CALL_ARGS 10u /* u64 arguments of a CALL */
#define TF_PROTO_MAX_CALL_TAIL (TF_PROTO_MAX_CALL_ARGS * 8u)

/* Handle ids: the top byte is the object type; bits 0..47 a serial number (>= 1). */
#define TF_PROTO_H_CTX 0x01u
#define TF_PROTO_H_MODULE 0x02u
#define TF_PROTO_H_FUNC 0x03u
#define TF_PROTO_H_STREAM 0x04u
#define TF_PROTO_H_EVENT 0x05u
#define TF_PROTO_H_LIBRARY 0x06u
#define TF_PROTO_H_KERNEL 0x07u
#define TF_PROTO_H_POOL 0x08u                 /* CUmemoryPool */
#define TF_PROTO_H_GRAPH 0x09u                /* CUgraph */
#define TF_PROTO_H_GEXEC 0x0au                /* CUgraphExec */
#define TF_PROTO_H_NODE 0x0bu                 /* CUgraphNode */
#define TF_PROTO_H_WORKER (UINT64_C(1) << 48) /* id assigned by the worker */
#define TF_PROTO_H_SERIAL_MASK ((UINT64_C(1) << 48) - 1)
#define TF_PROTO_HANDLE(type, serial) (((uint64_t)(type) << 56) | ((uint64_t)(serial)))
#define TF_PROTO_HANDLE_TYPE(id) ((unsigned)((uint64_t)(id) >> 56))
/* Stream ids with a fixed meaning (as in cuda.h): NULL stream, CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD. */
#define TF_PROTO_STREAM_NULL 0u
#define TF_PROTO_STREAM_LEGACY 1u
#define TF_PROTO_STREAM_PER_THREAD 2u

/* MODULE_LOAD kinds. */
#define TF_PROTO_LOAD_MODULE 0u    /* cuModuleLoadData*: functions are reported */
#define TF_PROTO_LOAD_LIBRARY 1u   /* cuLibraryLoadData: kernels are reported */
#define TF_PROTO_LOAD_BY_DIGEST 1u /* module_load_req.flags: the image held under digest */

/* Close reasons in CLOSE events (the worker closes the connection right after). */
#define TF_PROTO_CLOSE_PROTOCOL 1u /* malformed or hostile frame */
#define TF_PROTO_CLOSE_AUTH 2u     /* token rejected */
#define TF_PROTO_CLOSE_VERSION 3u  /* protocol version not spoken by this worker */
#define TF_PROTO_CLOSE_SHUTDOWN 4u /* worker shutting down */
#define TF_PROTO_CLOSE_BUSY 5u     /* too many clients */

/* Opcode kinds. */
#define TF_PROTO_KIND_SYNC 1
#define TF_PROTO_KIND_ASYNC 2
#define TF_PROTO_KIND_EVENT 3

/* clang-format off */
/* Every opcode: X(NAME, CODE, KIND, REQUEST LAYOUT, REPLY LAYOUT, TAIL MIN, TAIL MAX). The
 * request layout is the fixed part of the payload ("none": empty); TAIL MIN..MAX bound the
 * variable bytes after it (see each layout), written without their TF_PROTO_ prefix (0 is
 * TF_PROTO_0). The reply layout applies to SYNC opcodes only. */
#define TF_PROTO_OPS(X)                                                                          \
    /* connection */                                                                             \
    X(HELLO,             0x0001, SYNC,  hello_req,         hello_rep,       1, MAX_TOKEN)        \
    X(KEEPALIVE,         0x0002, EVENT, none,              none,            0, 0)                \
    X(CLOSE,             0x0003, EVENT, close_ev,          none,            0, MAX_CLOSE_MSG)    \
    X(BATCH,             0x0004, ASYNC, none,              none,            8, MAX_PAYLOAD)      \
    X(FLUSH,             0x0005, SYNC,  none,              status_rep,      0, 0)                \
    X(GOODBYE,           0x0006, ASYNC, none,              none,            0, 0)                \
    /* contexts */                                                                               \
    X(CTX_CREATE,        0x0101, SYNC,  ctx_create_req,    status_rep,      0, 0)                \
    X(CTX_DESTROY,       0x0102, ASYNC, ctx_req,           none,            0, 0)                \
    X(PRIMARY_RETAIN,    0x0104, SYNC,  ctx_create_req,    status_rep,      0, 0)                \
    X(PRIMARY_DROP,      0x0105, ASYNC, primary_drop_req,  none,            0, 0)                \
    /* memory */                                                                                 \
    X(MEM_ALLOC,         0x0201, SYNC,  mem_alloc_req,     mem_alloc_rep,   0, 0)                \
    X(MEM_ALLOC_PITCH,   0x0202, SYNC,  mem_pitch_req,     mem_alloc_rep,   0, 0)                \
    X(MEM_FREE,          0x0203, ASYNC, mem_free_req,      none,            0, 0)                \
    X(MEM_GET_INFO,      0x0204, SYNC,  ctx_req,           mem_info_rep,    0, 0)                \
    X(MEMCPY_HTOD,       0x0205, ASYNC, htod_req,          none,            0, CHUNK)            \
    X(MEMCPY_DTOH,       0x0206, ASYNC, dtoh_req,          none,            0, 0)                \
    X(MEMCPY_DTOD,       0x0207, ASYNC, dtod_req,          none,            0, 0)                \
    X(MEMSET,            0x0208, ASYNC, memset_req,        none,            0, 0)                \
    X(POINTER_ATTR,      0x0209, SYNC,  ptr_attr_req,      ptr_attr_rep,    0, 0)                \
    X(DATA,              0x020a, EVENT, data_ev,           none,            0, CHUNK)            \
    X(DTOH_DONE,         0x020b, EVENT, dtoh_done_ev,      none,            0, 0)                \
    /* modules, libraries, functions */                                                          \
    X(BLOB_APPEND,       0x0301, ASYNC, none,              none,            1, MAX_PAYLOAD)      \
    X(MODULE_LOAD,       0x0302, SYNC,  module_load_req,   module_load_rep, 0, 0)                \
    X(MODULE_UNLOAD,     0x0303, ASYNC, module_req,        none,            0, 0)                \
    X(MODULE_GET_FUNC,   0x0304, SYNC,  get_func_req,      func_rep,        1, MAX_NAME)         \
    X(MODULE_GET_GLOBAL, 0x0305, SYNC,  module_req,        global_rep,      1, MAX_NAME)         \
    X(KERNEL_GET_FUNC,   0x0306, SYNC,  get_func_req,      func_rep,        0, 0)                \
    /* launches */                                                                               \
    X(LAUNCH,            0x0401, ASYNC, launch_req,        none,            0, MAX_LAUNCH_TAIL)  \
    X(GRAPH_KERNEL_NODE, 0x0402, SYNC,  knode_req,         status_rep,      0, MAX_PARAM_BYTES)  \
    /* streams */                                                                                \
    X(STREAM_CREATE,     0x0501, ASYNC, stream_create_req, none,            0, 0)                \
    /* plain driver calls (src/remote/calls.def) */                                              \
    X(CALL,              0x0701, SYNC,  call_req,          call_rep,        0, MAX_CALL_TAIL)    \
    X(CALL_ASYNC,        0x0702, ASYNC, call_req,          none,            0, MAX_CALL_TAIL)

/* Layouts. Each is a list of F(M, OFFSET, SIZE, FIELD) scalars (SIZE 1, 2, 4 or 8),
 * B(M, OFFSET, SIZE, FIELD) byte arrays and R(M, OFFSET, SIZE, FIELD) reserved scalars, which
 * are written as 0 and make a request malformed when they are not; M is passed through for
 * the generators. The comment
 * after each layout describes its variable tail (bytes after the fixed part), if any. */

/* The frame header (the table at the top of this file). */
#define TF_PROTO_L_frame_hdr(F, B, R, M)                                                    \
    F(M,  0, 4, magic)                                                                   \
    F(M,  4, 2, version)                                                                 \
    F(M,  6, 2, opcode)                                                                  \
    F(M,  8, 4, flags)                                                                   \
    F(M, 12, 4, length)                                                                  \
    F(M, 16, 8, req_id)

/* Record header inside a BATCH payload; BODY_LEN bytes of the record's request layout (plus
 * its tail) follow. Records are executed in order; OPCODE must be an ASYNC opcode other
 * than BATCH. */
#define TF_PROTO_L_batch_rec(F, B, R, M)                                                    \
    F(M,  0, 2, opcode)                                                                  \
    R(M,  2, 2, rsvd)                                                                    \
    F(M,  4, 4, body_len)

/* HELLO: the first frame of a connection; anything else before it closes the connection.
 * Tail: the token (1..TF_PROTO_MAX_TOKEN bytes), compared in constant time. */
#define TF_PROTO_L_hello_req(F, B, R, M)                                                    \
    F(M,  0, 4, pid)              /* client process id, for logs */                      \
    R(M,  4, 4, rsvd)                                                                    \
    F(M,  8, 8, features)         /* feature bits; none defined in version 1: 0 */

/* Tail: NDEV device records, each TF_PROTO_L_dev_info followed by NATTRS attr_val. */
#define TF_PROTO_L_hello_rep(F, B, R, M)                                                    \
    F(M,  0, 4, status)           /* CUDA_SUCCESS, else the connection closes */         \
    F(M,  4, 4, version)          /* protocol version of the worker */                   \
    F(M,  8, 4, max_payload)      /* TF_PROTO_MAX_PAYLOAD of the worker */               \
    F(M, 12, 4, ndev)             /* devices the client sees, ordinals 0..ndev-1 */       \
    F(M, 16, 4, driver_version)   /* cuDriverGetVersion of the worker's driver */         \
    R(M, 20, 4, rsvd)                                                                    \
    F(M, 24, 8, features)

#define TF_PROTO_L_dev_info(F, B, R, M)                                                     \
    F(M,  0, 8, total_mem)        /* cuDeviceTotalMem, capped at the VRAM limit */        \
    B(M,  8, 16, uuid)            /* cuDeviceGetUuid */                                  \
    B(M, 24, 256, name)           /* cuDeviceGetName, NUL-padded */                      \
    F(M, 280, 4, nattrs)          /* attr_val records that follow (attribute 0..n-1) */  \
    R(M, 284, 4, rsvd)

/* One cached cuDeviceGetAttribute / cuFuncGetAttribute answer. */
#define TF_PROTO_L_attr_val(F, B, R, M)                                                     \
    F(M,  0, 4, status)           /* CUresult of the query on the worker */              \
    F(M,  4, 4, value)            /* int value (two's complement) */

/* Tail: the reason as text (0..TF_PROTO_MAX_CLOSE_MSG bytes, not NUL-terminated). */
#define TF_PROTO_L_close_ev(F, B, R, M)                                                     \
    F(M,  0, 4, reason)           /* TF_PROTO_CLOSE_* */                                 \
    R(M,  4, 4, rsvd)

#define TF_PROTO_L_status_rep(F, B, R, M)                                                   \
    F(M,  0, 4, status)           /* CUresult */

#define TF_PROTO_L_ctx_req(F, B, R, M)                                                      \
    F(M,  0, 8, ctx)

#define TF_PROTO_L_ctx_create_req(F, B, R, M)                                               \
    F(M,  0, 8, ctx)              /* id the client chose for the new context */          \
    F(M,  8, 4, flags)            /* CU_CTX_* */                                         \
    F(M, 12, 4, device)           /* client device ordinal */

#define TF_PROTO_L_primary_drop_req(F, B, R, M)                                             \
    F(M,  0, 4, device)           /* release the client's primary context of DEVICE */   \
    R(M,  4, 4, rsvd)

#define TF_PROTO_L_mem_alloc_req(F, B, R, M)                                                \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, bytesize)

#define TF_PROTO_L_mem_pitch_req(F, B, R, M)                                                \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, width)                                                                   \
    F(M, 16, 8, height)                                                                  \
    F(M, 24, 4, elemsize)                                                                \
    R(M, 28, 4, rsvd)

#define TF_PROTO_L_mem_alloc_rep(F, B, R, M)                                                \
    F(M,  0, 4, status)                                                                  \
    R(M,  4, 4, rsvd)                                                                    \
    F(M,  8, 8, dptr)                                                                    \
    F(M, 16, 8, pitch)            /* MEM_ALLOC_PITCH only; 0 otherwise */

#define TF_PROTO_L_mem_free_req(F, B, R, M)                                                 \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, dptr)

#define TF_PROTO_L_mem_info_rep(F, B, R, M)                                                 \
    F(M,  0, 4, status)                                                                  \
    R(M,  4, 4, rsvd)                                                                    \
    F(M,  8, 8, free)             /* capped at the VRAM limit minus this worker's use */  \
    F(M, 16, 8, total)            /* capped at the VRAM limit */

/* Tail: the bytes to copy (0..TF_PROTO_CHUNK) to DST. Bulk copies are split into chunks. */
#define TF_PROTO_L_htod_req(F, B, R, M)                                                     \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, stream)                                                                  \
    F(M, 16, 8, dst)

/* The worker answers with DATA events (TAG, increasing OFFSET, at most TF_PROTO_CHUNK bytes
 * each) covering [0, LEN) on success, then one DTOH_DONE event with TAG. */
#define TF_PROTO_L_dtoh_req(F, B, R, M)                                                     \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, stream)                                                                  \
    F(M, 16, 8, src)                                                                     \
    F(M, 24, 8, len)                                                                     \
    F(M, 32, 8, tag)              /* client transfer id, non-zero */

#define TF_PROTO_L_dtod_req(F, B, R, M)                                                     \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, stream)                                                                  \
    F(M, 16, 8, dst)                                                                     \
    F(M, 24, 8, src)                                                                     \
    F(M, 32, 8, len)

#define TF_PROTO_L_memset_req(F, B, R, M)                                                   \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, stream)                                                                  \
    F(M, 16, 8, dst)                                                                     \
    F(M, 24, 8, count)            /* elements */                                         \
    F(M, 32, 4, value)                                                                   \
    F(M, 36, 4, elemsize)         /* 1, 2 or 4 */

#define TF_PROTO_L_ptr_attr_req(F, B, R, M)                                                 \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, ptr)                                                                     \
    F(M, 16, 4, attr)             /* CUpointer_attribute */                              \
    R(M, 20, 4, rsvd)

/* VALUE holds the attribute (ints zero-extended); CONTEXT answers are client context ids,
 * DEVICE_ORDINAL answers client ordinals. */
#define TF_PROTO_L_ptr_attr_rep(F, B, R, M)                                                 \
    F(M,  0, 4, status)                                                                  \
    R(M,  4, 4, rsvd)                                                                    \
    F(M,  8, 8, value)

/* Tail: the bytes at OFFSET of the transfer (0..TF_PROTO_CHUNK). */
#define TF_PROTO_L_data_ev(F, B, R, M)                                                      \
    F(M,  0, 8, tag)                                                                     \
    F(M,  8, 8, offset)

#define TF_PROTO_L_dtoh_done_ev(F, B, R, M)                                                 \
    F(M,  0, 8, tag)                                                                     \
    F(M,  8, 4, status)           /* CUresult of the copy */                             \
    R(M, 12, 4, rsvd)

/* The image is named by its SHA-256 DIGEST. With TF_PROTO_LOAD_BY_DIGEST the worker loads
 * the image it holds under DIGEST, or answers CUDA_ERROR_NOT_FOUND with NEED_IMAGE set and
 * loads nothing. Without it the image is the connection's blob (BLOB_APPEND tails since the
 * last load), consumed by the load whatever its outcome; it must hash to DIGEST
 * (CUDA_ERROR_INVALID_IMAGE otherwise) and is kept under DIGEST for later loads. */
#define TF_PROTO_L_module_load_req(F, B, R, M)                                              \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, module)           /* id for the module or library */                     \
    F(M, 16, 4, kind)             /* TF_PROTO_LOAD_* */                                  \
    F(M, 20, 4, flags)            /* TF_PROTO_LOAD_BY_DIGEST */                          \
    B(M, 24, 32, digest)          /* SHA-256 of the image (without the loader's NUL) */

/* Tail: LOG_LEN bytes of JIT error log, then NFUNCS function records (func_info + name +
 * params + attrs each), the functions (module) or kernels (library) it holds. */
#define TF_PROTO_L_module_load_rep(F, B, R, M)                                              \
    F(M,  0, 4, status)                                                                  \
    F(M,  4, 4, nfuncs)                                                                  \
    F(M,  8, 4, log_len)                                                                 \
    F(M, 12, 4, need_image)       /* BY_DIGEST load of an image the worker does not hold */

/* A function record: this layout, then NAME_LEN name bytes, NPARAMS param_info, NATTRS
 * attr_val (cuFuncGetAttribute for attributes 0..NATTRS-1). */
#define TF_PROTO_L_func_info(F, B, R, M)                                                    \
    F(M,  0, 8, func)             /* worker-assigned id (TF_PROTO_H_WORKER set) */       \
    F(M,  8, 4, nparams)                                                                 \
    F(M, 12, 4, name_len)                                                                \
    F(M, 16, 4, nattrs)                                                                  \
    F(M, 20, 4, params_size)      /* bytes of the packed parameter buffer */

#define TF_PROTO_L_param_info(F, B, R, M)                                                   \
    F(M,  0, 4, offset)           /* cuFuncGetParamInfo */                               \
    F(M,  4, 4, size)

/* MODULE_GET_GLOBAL: tail the name (1..TF_PROTO_MAX_NAME bytes, no NUL); MODULE_UNLOAD: no
 * tail. MODULE may be a module or a library id. */
#define TF_PROTO_L_module_req(F, B, R, M)                                                   \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, module)

/* MODULE_GET_FUNC: OWNER is a module or library id, tail the name; FUNC the id the client
 * chose (a FUNC id for a module, a KERNEL id for a library). KERNEL_GET_FUNC: OWNER is a
 * kernel id, no tail, FUNC a FUNC id for its function in context CTX. */
#define TF_PROTO_L_get_func_req(F, B, R, M)                                                 \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, owner)                                                                   \
    F(M, 16, 8, func)

/* Tail: one function record (absent when STATUS is not CUDA_SUCCESS). */
#define TF_PROTO_L_func_rep(F, B, R, M)                                                     \
    F(M,  0, 4, status)                                                                  \
    R(M,  4, 4, rsvd)

#define TF_PROTO_L_global_rep(F, B, R, M)                                                   \
    F(M,  0, 4, status)                                                                  \
    R(M,  4, 4, rsvd)                                                                    \
    F(M,  8, 8, dptr)                                                                    \
    F(M, 16, 8, size)


/* Tail: NATTRS launch_attr, then the packed parameter buffer (exactly the function's
 * params_size bytes). */
#define TF_PROTO_L_launch_req(F, B, R, M)                                                   \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, func)             /* FUNC or KERNEL id */                                \
    F(M, 16, 8, stream)                                                                  \
    F(M, 24, 4, grid_x)                                                                  \
    F(M, 28, 4, grid_y)                                                                  \
    F(M, 32, 4, grid_z)                                                                  \
    F(M, 36, 4, block_x)                                                                 \
    F(M, 40, 4, block_y)                                                                 \
    F(M, 44, 4, block_z)                                                                 \
    F(M, 48, 4, shmem)                                                                   \
    F(M, 52, 4, nattrs)

/* A kernel node added to graph GRAPH under the id NODE the client chose, without
 * dependencies (they follow as cuGraphAddDependencies calls). Tail: the packed parameter
 * buffer (exactly the function's params_size bytes). */
#define TF_PROTO_L_knode_req(F, B, R, M)                                                    \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, func)             /* FUNC or KERNEL id */                                \
    F(M, 16, 8, graph)                                                                   \
    F(M, 24, 8, node)                                                                    \
    F(M, 32, 4, grid_x)                                                                  \
    F(M, 36, 4, grid_y)                                                                  \
    F(M, 40, 4, grid_z)                                                                  \
    F(M, 44, 4, block_x)                                                                 \
    F(M, 48, 4, block_y)                                                                 \
    F(M, 52, 4, block_z)                                                                 \
    F(M, 56, 4, shmem)                                                                   \
    R(M, 60, 4, rsvd)

/* One CUlaunchAttribute whose value is up to three u32 (ints, enums, cluster dims). */
#define TF_PROTO_L_launch_attr(F, B, R, M)                                                  \
    F(M,  0, 4, id)               /* CUlaunchAttributeID */                              \
    F(M,  4, 4, v0)                                                                      \
    F(M,  8, 4, v1)                                                                      \
    F(M, 12, 4, v2)

/* CALL / CALL_ASYNC: one driver call of src/remote/calls.def. Tail: NARGS u64, the call's
 * wire arguments in order (integers sign- or zero-extended from their C type, device
 * ordinals, object ids); NARGS must be the call's count. */
#define TF_PROTO_L_call_req(F, B, R, M)                                                     \
    F(M,  0, 4, call)             /* the call's code in calls.def */                     \
    F(M,  4, 4, nargs)                                                                   \
    F(M,  8, 8, ctx)              /* client context it runs in, 0: none */

/* Tail: NOUTS u64, the call's outputs in order (floats as their IEEE-754 bits). */
#define TF_PROTO_L_call_rep(F, B, R, M)                                                     \
    F(M,  0, 4, status)                                                                  \
    F(M,  4, 4, nouts)

#define TF_PROTO_L_stream_create_req(F, B, R, M)                                            \
    F(M,  0, 8, ctx)                                                                     \
    F(M,  8, 8, stream)           /* id the client chose */                              \
    F(M, 16, 4, flags)            /* CU_STREAM_* */                                      \
    F(M, 20, 4, priority)








/* Every layout with its total size: X(NAME, SIZE). */
#define TF_PROTO_LAYOUTS(X)                                                              \
    X(frame_hdr, 24)                                                                     \
    X(batch_rec, 8)          X(hello_req, 16)        X(hello_rep, 32)                    \
    X(dev_info, 288)         X(attr_val, 8)          X(close_ev, 8)                      \
    X(status_rep, 4)         X(ctx_req, 8)           X(ctx_create_req, 16)               \
    X(primary_drop_req, 8)   X(mem_alloc_req, 16)    X(mem_pitch_req, 32)                \
    X(mem_alloc_rep, 24)     X(mem_free_req, 16)     X(mem_info_rep, 24)                 \
    X(htod_req, 24)          X(dtoh_req, 40)         X(dtod_req, 40)                     \
    X(memset_req, 40)        X(ptr_attr_req, 24)     X(ptr_attr_rep, 16)                 \
    X(data_ev, 16)           X(dtoh_done_ev, 16)     X(module_load_req, 56)              \
    X(module_load_rep, 16)   X(func_info, 24)        X(param_info, 8)                    \
    X(module_req, 16)        X(get_func_req, 24)     X(func_rep, 8)                      \
    X(global_rep, 24)        X(launch_req, 56)       X(launch_attr, 16)                  \
    X(stream_create_req, 24) X(call_req, 16)         X(call_rep, 8)                      \
    X(knode_req, 64)
/* clang-format on */

enum tf_proto_op {
#define TF__PROTO_OP_ENUM(name, code, kind, req, rep, tmin, tmax) TF_OP_##name = code,
    TF_PROTO_OPS(TF__PROTO_OP_ENUM)
#undef TF__PROTO_OP_ENUM
};

/* Layout-check structs: one unsigned char[SIZE] member per field, so offsetof() of each member
 * is the field's wire offset. They exist for the assertions below and are never used to hold
 * or copy data. */
#define TF__PROTO_CHK_F(M, off, size, name) unsigned char name[size];
#define TF__PROTO_CHK_STRUCT(name, size)                                                           \
    struct tf__proto_chk_##name {                                                                  \
        TF_PROTO_L_##name(TF__PROTO_CHK_F, TF__PROTO_CHK_F, TF__PROTO_CHK_F, name)                 \
    };
TF_PROTO_LAYOUTS(TF__PROTO_CHK_STRUCT)
#undef TF__PROTO_CHK_STRUCT

#define TF__PROTO_CHK_OFF(M, off, size, name)                                                      \
    _Static_assert(offsetof(struct tf__proto_chk_##M, name) == (off),                              \
                   "wire offset of " #M "." #name);
#define TF__PROTO_CHK_SCALAR(M, off, size, name)                                                   \
    TF__PROTO_CHK_OFF(M, off, size, name)                                                          \
    _Static_assert((size) == 1 || (size) == 2 || (size) == 4 || (size) == 8,                       \
                   "scalar size of " #M "." #name);
#define TF__PROTO_CHK_LAYOUT(name, size)                                                           \
    TF_PROTO_L_##name(TF__PROTO_CHK_SCALAR, TF__PROTO_CHK_OFF, TF__PROTO_CHK_SCALAR,               \
                      name) _Static_assert(sizeof(struct tf__proto_chk_##name) == (size),          \
                                           "wire size of " #name);
TF_PROTO_LAYOUTS(TF__PROTO_CHK_LAYOUT)
#undef TF__PROTO_CHK_LAYOUT
#undef TF__PROTO_CHK_SCALAR
#undef TF__PROTO_CHK_OFF
#undef TF__PROTO_CHK_F

/* Sizes of the fixed parts, as constants: TF_PROTO_SIZE_hello_req == 16, ... */
enum {
    TF_PROTO_SIZE_none = 0, /* the empty layout of TF_PROTO_OPS */
#define TF__PROTO_SIZE_ENUM(name, size) TF_PROTO_SIZE_##name = size,
    TF_PROTO_LAYOUTS(TF__PROTO_SIZE_ENUM)
#undef TF__PROTO_SIZE_ENUM
};

_Static_assert(TF_PROTO_SIZE_frame_hdr == TF_PROTO_HDR_SIZE, "frame header");
_Static_assert(TF_PROTO_CHUNK + TF_PROTO_SIZE_htod_req <= TF_PROTO_MAX_PAYLOAD, "htod chunk");
_Static_assert(TF_PROTO_CHUNK + TF_PROTO_SIZE_data_ev <= TF_PROTO_MAX_PAYLOAD, "data chunk");

#endif
