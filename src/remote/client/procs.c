/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so's cuGetProcAddress table (src/exptab/proctab.h), from procs.def: every ABI
 * version of every driver function the toolkit knows, pointing at this library's entry point
 * or at a stub that logs the function's name once (warn) and returns
 * CUDA_ERROR_NOT_SUPPORTED: a call the client cannot forward fails visibly, never pretends.
 * Regenerate procs.def with src/exptab/gen_procs.py after adding or removing an entry point
 * (tests/remote/test_procs checks that the table and the exports agree).
 *
 * This file sees the entry points only as addresses: it does not include cuda.h, whose
 * prototypes are checked where each entry point is defined.
 */
#include "exptab/proctab.h"

#include <stddef.h>

#define LIB "the remote GPU client (libtf_client)"

/* Declared with default visibility, as defined: a hidden reference would hide the export. */
#define P(base, version, per_thread, sym) __attribute__((visibility("default"))) void sym(void);
#define U(base, version, per_thread)                                                               \
    static int stub_##base##_##version##_##per_thread(void)                                        \
    {                                                                                              \
        static int logged;                                                                         \
        return tf_procaddr_unsupported(LIB, #base, version, &logged);                              \
    }
#include "remote/client/procs.def"
#undef P
#undef U

#define P(base, version, per_thread, sym) {#base, version, per_thread, (void *)sym, 1},
#define U(base, version, per_thread)                                                               \
    {#base, version, per_thread, (void *)stub_##base##_##version##_##per_thread, 0},
const struct tf_proc tfc_procs[] = {
#include "remote/client/procs.def"
    {NULL, 0, 0, NULL, 0},
};
#undef P
#undef U
