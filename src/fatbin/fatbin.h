/* SPDX-License-Identifier: Apache-2.0
 *
 * Fatbin containers as nvcc embeds them (the .nv_fatbin section, what the CUDA runtime
 * registers and what cuModuleLoadData / cuLibraryLoadData accept): a pure, bounds-checked
 * parser, the choice of the entry a device runs, and the decompression of compressed entries
 * (LZ4 and Zstandard, nvcc 13 compresses PTX by default). No I/O; every read stays inside the
 * [buf, buf + len) the caller names. Thread-safe (no state).
 *
 * The layout (little endian; learnt from nvcc 13's output and public descriptions of it, e.g.
 * the ZLUDA project's; the toolkit's fatbinary_section.h documents only the wrapper):
 *
 * Wrapper (__fatBinC_Wrapper_t, the .nvFatBinSegment record the runtime registers):
 *   OFFSET SIZE DESCRIPTION
 *   0      4    magic 0x466243B1
 *   4      4    version: 1, or 2 = linked with relocatable device code (-rdc)
 *   8      8    pointer to the container below
 *   16     8    version 1: file name (unused); version 2: NULL-terminated array of prelinked
 *               containers
 *
 * Container:
 *   0      4    magic 0xBA55ED50
 *   4      2    version 1
 *   6      2    header size (16)
 *   8      8    bytes of entries that follow the header
 *
 * Entry (one per image; header size >= 64, the rest holds a file name and ptxas options):
 *   0      2    kind: 1 PTX, 2 ELF (cubin, SASS), 8 LTO IR
 *   2      2    entry version 0x0101
 *   4      4    header size
 *   8      8    payload bytes after the header (padded; the next entry starts there)
 *   16     4    compressed payload size, 0 when the payload is not compressed
 *   20     4    (not used here)
 *   24     4    PTX: ISA version, major << 16 | minor
 *   28     4    architecture: 75 for sm_75 / compute_75
 *   32     8    offset and length of the source file name inside the header (0: none)
 *   40     8    flags (TF_FATBIN_F_*)
 *   48     8    (not used here)
 *   56     8    uncompressed payload size of a compressed entry
 */
#ifndef TF_FATBIN_FATBIN_H
#define TF_FATBIN_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#define TF_FATBIN_MAGIC 0xBA55ED50u
#define TF_FATBIN_WRAPPER_MAGIC 0x466243B1u
#define TF_FATBIN_HEADER_SIZE 16u
#define TF_FATBIN_MAX_SIZE (1ull << 30)       /* larger containers are refused */
#define TF_FATBIN_MAX_UNPACKED (256ull << 20) /* larger decompressed images are refused */

enum tf_fatbin_kind {
    TF_FATBIN_PTX = 1,
    TF_FATBIN_ELF = 2,
    TF_FATBIN_LTOIR = 8,
};

enum {
    TF_FATBIN_F_64BIT = 0x1,
    TF_FATBIN_F_DEBUG = 0x2,
    TF_FATBIN_F_LINUX = 0x10,
    TF_FATBIN_F_OLD_COMPRESSION = 0x1000, /* an older compressed format: not supported */
    TF_FATBIN_F_LZ4 = 0x2000,
    TF_FATBIN_F_ZSTD = 0x8000,
    TF_FATBIN_F_ARCH_SPECIFIC = 0x100000,   /* sm_90a: runs only on that exact architecture */
    TF_FATBIN_F_FAMILY_SPECIFIC = 0x200000, /* sm_100f: runs on that major's later minors */
};

/* One image of a container. DATA points into the parsed buffer (not owned). */
struct tf_fatbin_entry {
    unsigned kind;                 /* enum tf_fatbin_kind, or another value nvcc may add */
    unsigned arch;                 /* 75 = sm_75 */
    unsigned ptx_major, ptx_minor; /* PTX entries */
    uint64_t flags;
    const uint8_t *data; /* the stored payload (compressed bytes, or the padded image) */
    size_t data_len;
    uint64_t raw_len; /* uncompressed size of a compressed payload, else data_len */
};

/* Walks the entries of one container. */
struct tf_fatbin_iter {
    const uint8_t *buf;
    size_t off, end;
};

/* Reads the container header at BUF (LEN readable bytes, at least 16 needed) and returns its
 * whole size (header + entries) in *SIZE. TF_EPARSE with a message in ERR when it is not a
 * container or its size is out of bounds (over TF_FATBIN_MAX_SIZE). */
int tf_fatbin_size(const void *buf, size_t len, uint64_t *size, char *err, size_t errlen);

/* Starts walking the container at BUF of LEN bytes (its declared size must fit in LEN). */
int tf_fatbin_open(struct tf_fatbin_iter *it, const void *buf, size_t len, char *err,
                   size_t errlen);

/* The next entry: 1 with *E filled, 0 at the end, TF_EPARSE (message in ERR) for a malformed
 * entry (sizes that leave the container, an unknown entry version, a header under 64 bytes). */
int tf_fatbin_next(struct tf_fatbin_iter *it, struct tf_fatbin_entry *e, char *err, size_t errlen);

/* True when entry E can be JIT-compiled for a device of compute capability CC (major * 10 +
 * minor): a PTX entry for an architecture at or below CC, an arch-specific one (sm_90a) only
 * for exactly its architecture, a family-specific one (sm_100f) only within its major. With
 * CC = TF_FATBIN_ANY_DEVICE any PTX entry fits. */
#define TF_FATBIN_ANY_DEVICE (~0u)
int tf_fatbin_ptx_fits(const struct tf_fatbin_entry *e, unsigned cc);

/* Chooses the PTX entry of the container at BUF (LEN bytes) that a device of compute capability
 * CC runs: among those that fit, the highest architecture (then the highest ISA version).
 * 0 with *BEST filled; TF_ENOENT when none fits (ARCHS then lists what the container holds,
 * e.g. "sm_75 (cubin), compute_75 (PTX)", always NUL-terminated); TF_EPARSE for a malformed
 * container (message in ERR). ARCHS may be NULL. */
int tf_fatbin_pick_ptx(const void *buf, size_t len, unsigned cc, struct tf_fatbin_entry *best,
                       char *archs, size_t archs_len, char *err, size_t errlen);

/* The image of entry E, decompressed if needed, as a malloc'd NUL-terminated buffer (*OUT, the
 * caller frees it) of *OUT_LEN bytes without trailing NULs. TF_EPARSE for a corrupt or
 * oversized compressed payload, TF_ENOTSUP for an unknown compression, TF_ENOMEM. */
int tf_fatbin_unpack(const struct tf_fatbin_entry *e, char **out, size_t *out_len, char *err,
                     size_t errlen);

/* "sm_75" (ELF), "compute_75" (PTX), "lto_80" (LTO IR) with "a" / "f" suffixes. */
void tf_fatbin_entry_name(const struct tf_fatbin_entry *e, char *buf, size_t len);

#endif
