/* SPDX-License-Identifier: Apache-2.0
 *
 * The cuGetProcAddress table of a library acting as libcuda.so.1 (the simulated driver, the
 * remote client), as generated into its procs.def by src/exptab/gen_procs.py: one entry per
 * ABI version of every driver function the toolkit knows. Deliberately free of cuda.h, so a
 * table can be built in a translation unit that declares the entry points only by address.
 * Lookup: procaddr.h.
 */
#ifndef TF_EXPTAB_PROCTAB_H
#define TF_EXPTAB_PROCTAB_H

struct tf_proc {
    const char *name; /* base name: "cuMemAlloc" */
    int version;      /* CUDA version that introduced this ABI: 3020 */
    int per_thread;   /* the _ptds / _ptsz variant */
    void *fn;         /* the implementation, or the not-supported stub */
    int implemented;  /* 0: fn is the stub */
};

/* What a not-supported stub returns (CUDA_ERROR_NOT_SUPPORTED), logging at warn, once per
 * stub (*LOGGED), that LIB ("the simulated GPU", "the remote client") does not implement
 * NAME's ABI of CUDA VERSION. */
int tf_procaddr_unsupported(const char *lib, const char *name, int version, int *logged);

#endif
