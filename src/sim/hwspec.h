/* SPDX-License-Identifier: Apache-2.0
 *
 * Hardware facts of the simulated GPU models that the core model table (core/gpu_models.h)
 * does not carry: compute capability, clocks, memory bus, cache and per-SM limits, PCI ids,
 * power. Values are the vendors' published figures for each product (boost clocks, SXM
 * variants where a family has several). The table is static and read-only: every function is
 * pure and thread-safe; returned pointers live for the whole program.
 */
#ifndef TF_SIM_HWSPEC_H
#define TF_SIM_HWSPEC_H

#include <stdint.h>

struct tf_sim_hwspec {
    const char *model;      /* canonical name in core/gpu_models.h ("H100") */
    int cc_major, cc_minor; /* compute capability */
    int smem_per_sm;        /* shared memory per multiprocessor, bytes */
    int smem_optin;         /* max shared memory per block with opt-in, bytes */
    int threads_per_sm;     /* max resident threads per multiprocessor */
    int blocks_per_sm;      /* max resident blocks per multiprocessor */
    int regs_per_sm;        /* 32-bit registers per multiprocessor */
    int clock_mhz;          /* max SM (boost) clock */
    int mem_clock_mhz;      /* max memory clock (as CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) */
    int bus_width;          /* global memory bus width, bits */
    int l2_bytes;           /* L2 cache size */
    int pci_device_id;      /* PCI device id (vendor 0x10DE) */
    int power_w;            /* board power limit, watts */
    int geforce;            /* 1 for GeForce boards (brand, no ECC) */
};

/* Facts for canonical model name MODEL (case-insensitive), or NULL when the model is not a
 * CUDA GPU the simulator can present (e.g. AMD or Ascend parts of the model table). */
const struct tf_sim_hwspec *tf_sim_hwspec_find(const char *model);

#endif
