/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to src/fatbin: little-endian loads, saturating sizes and the error-message helper
 * the container parser (fatbin.c), the image functions (image.c) and locating images
 * (locate.c) share. Callers check bounds first.
 */
#ifndef TF_FATBIN_LE_H
#define TF_FATBIN_LE_H

#include "common/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

static inline uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

#define SAT (UINT64_C(1) << 62) /* sizes saturate here */
#define ELF_SHDR 64u            /* an ELF64 section header */

static inline uint64_t sat_mul(uint64_t a, uint64_t b)
{
    if (a && b > SAT / a)
        return SAT;
    return a * b;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b > SAT || a + b < a ? SAT : a + b;
}

/* Checks the ELF64 header at P (LEN readable bytes, 0: unknown), its section and program
 * header tables and the sections; *SIZE = the bytes they span (locate.c). */
int tf__elf_size(const uint8_t *p, size_t len, size_t *size, char *err, size_t errlen);

/* Writes the message into ERR (when given) and returns TF_EPARSE. */
__attribute__((format(printf, 3, 4))) static inline int tf__fatbin_fail(char *err, size_t errlen,
                                                                        const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return TF_EPARSE;
}

#endif
