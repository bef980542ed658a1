/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX engine of the simulated GPU: loads the PTX text that `nvcc -ptx` emits, decodes it
 * once per module, and executes kernel launches on the CPU with CUDA semantics.
 *
 * This header is the contract between the engine (src/sim/ptx/) and the simulated driver
 * (src/sim/, libcuda.so.1). The driver owns contexts, memory, streams and the device thread;
 * the engine owns parsing, decoding and execution.
 *
 * Memory model. Device pointers are host virtual addresses (identity mapping): a CUdeviceptr
 * handed to a kernel is dereferenced directly. Every global/generic access is checked against
 * the launch's tf_ptx_memview before it happens; an access outside every valid range stops
 * the launch with TF_PTX_ILLEGAL_ADDRESS (the driver maps it to CUDA_ERROR_ILLEGAL_ADDRESS).
 * .shared and .local live in engine-owned buffers; .param is the launch's packed buffer;
 * .global/.const module variables live in device memory the driver allocates (see
 * tf_ptx_module_var_* below).
 *
 * Threads. A module is immutable after tf_ptx_module_load; any number of threads may run
 * launches of the same module concurrently (each launch uses its own scratch state).
 * Nothing here does I/O, logs, or touches global mutable state.
 */
#ifndef TF_SIM_PTX_H
#define TF_SIM_PTX_H

#include <stddef.h>
#include <stdint.h>

/* Engine status codes (0 = success). The driver converts them to CUresult in one place. */
enum tf_ptx_status {
    TF_PTX_OK = 0,
    TF_PTX_INVALID_PTX,             /* load: syntax error or unsupported instruction/directive */
    TF_PTX_NOT_FOUND,               /* no such kernel or variable */
    TF_PTX_INVALID_VALUE,           /* bad launch geometry, params size mismatch */
    TF_PTX_LAUNCH_OUT_OF_RESOURCES, /* too many threads per block, too much shared memory */
    TF_PTX_ILLEGAL_ADDRESS,         /* kernel touched memory outside every valid range */
    TF_PTX_MISALIGNED_ADDRESS,      /* access not aligned to its size */
    TF_PTX_TRAP,                    /* trap / brkpt executed */
    TF_PTX_LAUNCH_TIMEOUT,          /* exceeded tf_ptx_launch.max_instructions */
    TF_PTX_NO_MEMORY,               /* host allocation for scratch state failed */
    TF_PTX_ASSERT,                  /* a device-side assert() failed (__assertfail) */
};

/* Message for a status ("illegal address", ...). */
const char *tf_ptx_status_str(enum tf_ptx_status st);

struct tf_ptx_module;
struct tf_ptx_kernel;

/* Parses and decodes PTX text TEXT[0..LEN) (need not be NUL-terminated). On success *OUT is a
 * new module (free with tf_ptx_module_destroy). On failure returns TF_PTX_INVALID_PTX and
 * writes "line N: <problem>" to ERR, naming an unsupported instruction or directive exactly
 * ("line 42: unsupported instruction 'tex.2d.v4.f32.f32'"). */
enum tf_ptx_status tf_ptx_module_load(const char *text, size_t len, struct tf_ptx_module **out,
                                      char *err, size_t errlen);
/* Frees MOD and everything it owns (NULL is fine). Kernel pointers die with it. */
void tf_ptx_module_destroy(struct tf_ptx_module *mod);

/* Kernels (.entry functions) of MOD. */
size_t tf_ptx_module_kernel_count(const struct tf_ptx_module *mod);
const struct tf_ptx_kernel *tf_ptx_module_kernel_at(const struct tf_ptx_module *mod, size_t i);
const struct tf_ptx_kernel *tf_ptx_module_kernel(const struct tf_ptx_module *mod, const char *name);

/* Module-scope .global / .const variables. The driver allocates SIZE bytes of device memory
 * for each (alignment ALIGN), copies INIT (INIT_LEN bytes, may be 0: zero-fill the rest) into
 * it, and must call tf_ptx_module_var_bind with the address before the first launch. */
struct tf_ptx_var {
    const char *name;
    uint64_t size;
    uint32_t align;
    int is_const;   /* .const space (read-only to kernels) */
    int is_managed; /* .attribute(.managed): a __managed__ variable */
    const uint8_t *init;
    uint64_t init_len;
};
size_t tf_ptx_module_var_count(const struct tf_ptx_module *mod);
const struct tf_ptx_var *tf_ptx_module_var_at(const struct tf_ptx_module *mod, size_t i);
/* Index of variable NAME, or -1. */
long tf_ptx_module_var_find(const struct tf_ptx_module *mod, const char *name);
/* Binds variable I to device address ADDR. Not thread-safe against concurrent launches of
 * MOD: the driver binds every variable right after loading, before any launch. */
void tf_ptx_module_var_bind(struct tf_ptx_module *mod, size_t i, uint64_t addr);

/* Kernel metadata, for cuFuncGetParamInfo / cuFuncGetAttribute / launch checks. */
struct tf_ptx_kernel_info {
    const char *name;
    uint32_t nparams;
    uint32_t params_size;   /* total bytes of the packed param buffer */
    uint32_t static_shared; /* bytes of .shared declared in the kernel/module */
    uint32_t local_bytes;   /* bytes of .local per thread */
    uint32_t num_regs;      /* registers declared (reported as NUM_REGS) */
    uint32_t max_threads;   /* .maxntid product, or 0 when not declared */
    uint32_t reqntid[3];    /* .reqntid, or zeros */
};
void tf_ptx_kernel_get_info(const struct tf_ptx_kernel *k, struct tf_ptx_kernel_info *info);
/* Offset and size of parameter I (0 <= I < nparams) in the packed buffer; returns
 * TF_PTX_INVALID_VALUE when I is out of range. Offsets follow PTX .param alignment rules. */
enum tf_ptx_status tf_ptx_kernel_param(const struct tf_ptx_kernel *k, uint32_t i, uint32_t *offset,
                                       uint32_t *size);

/* Valid device memory for one launch: sorted, non-overlapping [base, base+size) ranges of the
 * context's allocations (device, host-mapped, module variables). The engine may keep a
 * last-hit cache; it never stores the pointer beyond the launch. */
struct tf_ptx_range {
    uint64_t base;
    uint64_t size;
    int read_only; /* .const variables */
};
struct tf_ptx_memview {
    const struct tf_ptx_range *ranges;
    size_t count;
};

/* Values the driver supplies for special registers. */
struct tf_ptx_env {
    uint32_t sm_count; /* %nsmid */
    uint32_t device_index;
    uint64_t (*globaltimer_ns)(void *arg); /* %globaltimer; NULL: CLOCK_REALTIME ns */
    void *globaltimer_arg;
};

struct tf_ptx_launch {
    const struct tf_ptx_kernel *kernel;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t dynamic_shared; /* bytes of extern .shared */
    const void *params;      /* packed buffer of params_size bytes (driver builds it from
                                kernelParams using tf_ptx_kernel_param offsets) */
    size_t params_size;
    const struct tf_ptx_memview *mem;
    const struct tf_ptx_env *env;
    uint64_t max_instructions; /* 0 = unlimited; else stop with TF_PTX_LAUNCH_TIMEOUT */
    /* Added after the first contract (zero keeps the old meaning): the kernel's opted-in
     * dynamic shared limit (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES). 0: static +
     * dynamic must fit TF_PTX_MAX_SHARED_PER_BLOCK; else dynamic_shared <= it and static +
     * dynamic <= TF_PTX_MAX_SHARED_OPTIN. */
    uint32_t max_dynamic_shared;
};

/* Limits a launch must respect (the driver reports the same values as device attributes). */
#define TF_PTX_MAX_THREADS_PER_BLOCK 1024
#define TF_PTX_MAX_SHARED_PER_BLOCK (48u * 1024u)
#define TF_PTX_MAX_SHARED_OPTIN (228u * 1024u)

/* Executes the whole grid synchronously on the calling thread. Returns TF_PTX_OK or the first
 * fault; on a fault, ERR gets a description ("illegal address 0x... in kernel k at line N:
 * st.global.u32, block (3,0,0) thread (17,0,0)"). Memory writes done before a fault stay done,
 * as on hardware. Statistics (instructions executed) are added to *INSNS when non-NULL:
 * thread-instructions, each executed instruction counting its active lanes; max_instructions
 * bounds the same count. Warps run one after another on this thread, so a kernel that spins
 * on %globaltimer for N ns in each of W warps takes about W*N ns. */
enum tf_ptx_status tf_ptx_launch_run(const struct tf_ptx_launch *l, uint64_t *insns, char *err,
                                     size_t errlen);

#endif
