/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers for the PTX engine tests (tests/ptx/ only): find the built .ptx files named on the
 * command line, load modules (failing the test with the loader's message), pack kernel
 * parameters at the engine's offsets, and launch with a memview of test-owned buffers.
 * Not thread-safe (the test's argv list is process state).
 */
#ifndef TF_TESTS_PTXTEST_H
#define TF_TESTS_PTXTEST_H

#include "sim/ptx/ptx.h"

#include <stddef.h>
#include <stdint.h>

/* Records the test's arguments: paths of .ptx files, and "--sm90" to pick the sm_90 builds
 * (NAME.sm90.ptx) instead of the sm_80 ones. */
void ptxt_init(int argc, char **argv);
/* "sm_80" or "sm_90": the architecture the test runs. */
const char *ptxt_arch(void);
/* Path of NAME.ptx (or NAME.sm90.ptx) among the arguments; fails if absent. */
const char *ptxt_path(const char *name);
/* Reads a whole file into a malloc'd buffer (NUL-terminated; *LEN without the NUL). */
char *ptxt_read(const char *path, size_t *len);
/* Loads PTX text / a file; fails the test with the loader's message on error. */
struct tf_ptx_module *ptxt_load_text(const char *text);
struct tf_ptx_module *ptxt_load(const char *name);
const struct tf_ptx_kernel *ptxt_kernel(const struct tf_ptx_module *m, const char *name);

/* One kernel argument: its bytes. */
struct ptxt_arg {
    const void *p;
    size_t size;
};
#define PTXT_ARG(x) ((struct ptxt_arg){&(x), sizeof(x)})

/* A launch of K over GRID x BLOCK with the given arguments; BUFS (NBUFS of them, base and
 * size) are the valid memory. Returns the engine status; ERR gets its message. */
struct ptxt_dim {
    uint32_t x, y, z;
};
enum tf_ptx_status ptxt_launch(const struct tf_ptx_kernel *k, struct ptxt_dim grid,
                               struct ptxt_dim block, uint32_t dyn_shared,
                               const struct ptxt_arg *args, size_t nargs,
                               const struct tf_ptx_range *bufs, size_t nbufs, uint64_t max_insns,
                               uint64_t *insns, char *err, size_t errlen);
/* Same, failing the test unless it returns TF_PTX_OK. */
void ptxt_launch_ok(const struct tf_ptx_kernel *k, struct ptxt_dim grid, struct ptxt_dim block,
                    uint32_t dyn_shared, const struct ptxt_arg *args, size_t nargs,
                    const struct tf_ptx_range *bufs, size_t nbufs);
#define PTXT_RANGE(p, n) ((struct tf_ptx_range){(uint64_t)(uintptr_t)(p), (n), 0})

/* Deterministic pseudo-random numbers for test data. */
uint32_t ptxt_rand(uint32_t *state);
float ptxt_randf(uint32_t *state, float lo, float hi);

#endif
