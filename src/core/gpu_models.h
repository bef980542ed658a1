/* SPDX-License-Identifier: Apache-2.0
 *
 * The GPU model table: FP16 dense TFLOPS (TensorFusion's compute unit), VRAM and SM count per
 * model, the vendor list of seed 001, and compute-percent <-> TFLOPS conversion.
 *
 * Users name models the way seed 001 does ("A100", "H100", "L4", "L40s": case-insensitive);
 * a family name matches every memory variant (A100 -> A100-40GB and A100-80GB). NVML names
 * ("NVIDIA A100-SXM4-80GB", "Tesla T4") map to an entry with tf_gpu_model_from_nvml.
 * The table is static and read-only: every function is pure and thread-safe; returned
 * pointers live for the whole program.
 */
#ifndef TF_CORE_GPU_MODELS_H
#define TF_CORE_GPU_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tf_gpu_model {
    const char *name;      /* canonical name, e.g. "A100-80GB" */
    const char *family;    /* what users write in tensor-fusion.ai/gpu-model, e.g. "A100" */
    const char *variant;   /* NVML token that tells this variant apart ("PCIE"), or NULL */
    const char *vendor;    /* one of tf_vendors */
    const char *nvml_name; /* the name NVML reports; the simulated GPU reports the same */
    int64_t tflops_milli;  /* FP16 dense TFLOPS x 1000 */
    int64_t vram_bytes;
    int sm_count;
};

/* Number of entries and the entry at I (0 <= I < count). */
size_t tf_gpu_model_count(void);
const struct tf_gpu_model *tf_gpu_model_at(size_t i);

/* The entry NAME names (case, spaces, '-' and '_' ignored): its canonical name, upstream
 * TensorFusion's model name ("A100_SXM_80G", "H100_SXM"), its NVML name ("NVIDIA A100-SXM4-80GB")
 * or its family; for a family, the first (smallest VRAM) variant. NULL when unknown. */
const struct tf_gpu_model *tf_gpu_model_find(const char *name);

/* Upstream TensorFusion's name for a board of model M (NULL if M is): the name its GPU info
 * list gives the board whose NVML name is NVML_NAME (may be NULL), else M's default board
 * ("H100_SXM", "A100_SXM_80G"), else M's canonical name, which for the other models is the
 * upstream one ("L4", "T4", "H200"). What GPU objects' status.gpuModel holds, as upstream
 * writes it; every such name resolves back to M with tf_gpu_model_find. */
const char *tf_gpu_model_upstream_name(const struct tf_gpu_model *m, const char *nvml_name);

/* True when a GPU of model GPU satisfies a request for REQUESTED: its family, or a name that
 * tf_gpu_model_find resolves to GPU exactly. */
bool tf_gpu_model_matches(const struct tf_gpu_model *gpu, const char *requested);

/* Maps an NVML device name to a table entry; MEM_BYTES (0 if unknown) picks among memory
 * variants. NULL when no family token of the table occurs in NAME. */
const struct tf_gpu_model *tf_gpu_model_from_nvml(const char *name, int64_t mem_bytes);

/* Compute percent (basis points) of a GPU with TFLOPS_MILLI capacity, as milli-TFLOPS
 * (rounded down), and back (rounded to nearest basis point). */
int64_t tf_percent_to_tflops(int32_t bp, int64_t tflops_milli);
int32_t tf_tflops_to_percent(int64_t milli, int64_t tflops_milli);

/* The 13 vendors of seed 001, canonical spelling. */
extern const char *const tf_vendors[13];
/* Canonical spelling of vendor S among the 13 (case-insensitive; upstream's "MooreThreads" is
 * "MThreads"), or NULL. */
const char *tf_vendor_canonical(const char *s);
/* Like tf_vendor_canonical, also knowing upstream TensorFusion's other vendors (PPU, Biren,
 * THead, KunlunXin, Horizon, Moore, Example, Apple). NULL for a name nobody knows. */
const char *tf_vendor_known(const char *s);
/* True when soft isolation can be enforced on VENDOR's GPUs: our limiter interposes the CUDA
 * driver API, so NVIDIA and the CUDA-compatible PPU; also a vendor nobody knows (upstream lets
 * those through) or none. False for every other known vendor. */
bool tf_vendor_soft_isolation(const char *vendor);

#endif
