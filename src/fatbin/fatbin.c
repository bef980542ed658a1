/* SPDX-License-Identifier: Apache-2.0
 *
 * Fatbin container parser, PTX choice and decompression (layout in fatbin.h). Every field is
 * read with explicit little-endian loads from inside the buffer; sizes are checked before any
 * pointer arithmetic so that no value in the input can move a read outside [buf, buf + len).
 */
#include "fatbin/fatbin.h"

#include "common/err.h"
#include "fatbin/le.h"

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define ENTRY_MIN_HEADER 64u
#define ENTRY_VERSION 0x0101u

int tf_fatbin_open(struct tf_fatbin_iter *it, const void *buf, size_t len, char *err, size_t errlen)
{
    uint64_t size;
    int rc = tf_fatbin_size(buf, len, &size, err, errlen);
    if (rc)
        return rc;
    if (size > len)
        return tf__fatbin_fail(err, errlen, "fatbin: declares %llu bytes, %zu present",
                               (unsigned long long)size, len);
    it->buf = buf;
    it->off = le16((const uint8_t *)buf + 6);
    it->end = (size_t)size;
    return 0;
}

int tf_fatbin_next(struct tf_fatbin_iter *it, struct tf_fatbin_entry *e, char *err, size_t errlen)
{
    if (it->off >= it->end)
        return 0;
    size_t room = it->end - it->off;
    const uint8_t *h = it->buf + it->off;
    if (room < ENTRY_MIN_HEADER)
        return tf__fatbin_fail(err, errlen,
                               "fatbin: entry at offset %zu: %zu bytes left, header needs 64",
                               it->off, room);
    unsigned version = le16(h + 2);
    uint32_t hsize = le32(h + 4);
    uint64_t padded = le64(h + 8);
    if (version != ENTRY_VERSION)
        return tf__fatbin_fail(err, errlen,
                               "fatbin: entry at offset %zu: unknown entry version 0x%x", it->off,
                               version);
    if (hsize < ENTRY_MIN_HEADER || hsize > room)
        return tf__fatbin_fail(err, errlen,
                               "fatbin: entry at offset %zu: header size %u out of range", it->off,
                               (unsigned)hsize);
    if (padded > room - hsize)
        return tf__fatbin_fail(err, errlen,
                               "fatbin: entry at offset %zu: payload of %llu bytes leaves the "
                               "container (%zu left)",
                               it->off, (unsigned long long)padded, room - hsize);
    uint32_t csize = le32(h + 16);
    uint32_t ver = le32(h + 24);
    memset(e, 0, sizeof(*e));
    e->kind = le16(h);
    e->arch = le32(h + 28);
    e->flags = le64(h + 40);
    e->ptx_major = ver >> 16;
    e->ptx_minor = ver & 0xffff;
    e->data = h + hsize;
    if (e->flags & (TF_FATBIN_F_LZ4 | TF_FATBIN_F_ZSTD)) {
        if (csize > padded)
            return tf__fatbin_fail(err, errlen,
                                   "fatbin: entry at offset %zu: compressed size %u over its "
                                   "payload of %llu bytes",
                                   it->off, (unsigned)csize, (unsigned long long)padded);
        e->data_len = csize;
        e->raw_len = le64(h + 56);
    } else {
        e->data_len = (size_t)padded;
        e->raw_len = padded;
    }
    it->off += hsize + (size_t)padded;
    return 1;
}

int tf_fatbin_ptx_fits(const struct tf_fatbin_entry *e, unsigned cc)
{
    if (e->kind != TF_FATBIN_PTX || e->arch == 0)
        return 0;
    if (cc == TF_FATBIN_ANY_DEVICE)
        return 1;
    if (e->arch > cc)
        return 0;
    if (e->flags & TF_FATBIN_F_ARCH_SPECIFIC)
        return e->arch == cc;
    if (e->flags & TF_FATBIN_F_FAMILY_SPECIFIC)
        return e->arch / 10 == cc / 10;
    return 1;
}

void tf_fatbin_entry_name(const struct tf_fatbin_entry *e, char *buf, size_t len)
{
    const char *pre = e->kind == TF_FATBIN_PTX     ? "compute_"
                      : e->kind == TF_FATBIN_ELF   ? "sm_"
                      : e->kind == TF_FATBIN_LTOIR ? "lto_"
                                                   : "kind";
    const char *suf = e->flags & TF_FATBIN_F_ARCH_SPECIFIC     ? "a"
                      : e->flags & TF_FATBIN_F_FAMILY_SPECIFIC ? "f"
                                                               : "";
    if (e->kind == TF_FATBIN_PTX || e->kind == TF_FATBIN_ELF || e->kind == TF_FATBIN_LTOIR)
        snprintf(buf, len, "%s%u%s", pre, e->arch, suf);
    else
        snprintf(buf, len, "kind%u_%u%s", e->kind, e->arch, suf);
}

static void append(char *buf, size_t len, const char *s)
{
    size_t used = strnlen(buf, len);
    if (used + 1 < len)
        snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s);
}

/* Better of two fitting PTX entries: higher architecture, then higher ISA version. */
static int better(const struct tf_fatbin_entry *a, const struct tf_fatbin_entry *b)
{
    if (a->arch != b->arch)
        return a->arch > b->arch;
    if (a->ptx_major != b->ptx_major)
        return a->ptx_major > b->ptx_major;
    return a->ptx_minor > b->ptx_minor;
}

int tf_fatbin_pick_ptx(const void *buf, size_t len, unsigned cc, struct tf_fatbin_entry *best,
                       char *archs, size_t archs_len, char *err, size_t errlen)
{
    struct tf_fatbin_iter it;
    struct tf_fatbin_entry e;
    int found = 0, rc;
    if (archs && archs_len)
        archs[0] = 0;
    if ((rc = tf_fatbin_open(&it, buf, len, err, errlen)))
        return rc;
    while ((rc = tf_fatbin_next(&it, &e, err, errlen)) == 1) {
        if (archs && archs_len) {
            char name[48];
            tf_fatbin_entry_name(&e, name, sizeof(name));
            append(archs, archs_len, name);
        }
        if (tf_fatbin_ptx_fits(&e, cc) && (!found || better(&e, best))) {
            *best = e;
            found = 1;
        }
    }
    if (rc < 0)
        return rc;
    return found ? 0 : TF_ENOENT;
}

/* Drops the NULs PTX payloads are padded (or terminated) with. */
static size_t trim(const char *p, size_t n)
{
    while (n && p[n - 1] == 0)
        n--;
    return n;
}

int tf_fatbin_unpack(const struct tf_fatbin_entry *e, char **out, size_t *out_len, char *err,
                     size_t errlen)
{
    char *buf = NULL;
    size_t n;
    if (e->flags & TF_FATBIN_F_OLD_COMPRESSION) {
        if (err && errlen)
            snprintf(err, errlen, "fatbin: compression of %s%u (flags 0x%llx) not supported",
                     e->kind == TF_FATBIN_PTX ? "compute_" : "sm_", e->arch,
                     (unsigned long long)e->flags);
        return TF_ENOTSUP;
    }
    if (e->flags & (TF_FATBIN_F_LZ4 | TF_FATBIN_F_ZSTD)) {
        if (e->raw_len == 0 || e->raw_len > TF_FATBIN_MAX_UNPACKED)
            return tf__fatbin_fail(
                err, errlen, "fatbin: uncompressed size %llu out of range (1..%llu)",
                (unsigned long long)e->raw_len, (unsigned long long)TF_FATBIN_MAX_UNPACKED);
        if (!(buf = malloc((size_t)e->raw_len + 1)))
            return TF_ENOMEM;
        if (e->flags & TF_FATBIN_F_ZSTD) {
            size_t r = ZSTD_decompress(buf, (size_t)e->raw_len, e->data, e->data_len);
            if (ZSTD_isError(r)) {
                free(buf);
                return tf__fatbin_fail(err, errlen, "fatbin: Zstandard payload of %s%u: %s",
                                       e->kind == TF_FATBIN_PTX ? "compute_" : "sm_", e->arch,
                                       ZSTD_getErrorName(r));
            }
            n = r;
        } else {
            if (e->data_len > (size_t)LZ4_MAX_INPUT_SIZE) {
                free(buf);
                return tf__fatbin_fail(err, errlen, "fatbin: LZ4 payload of %zu bytes too large",
                                       e->data_len);
            }
            int r =
                LZ4_decompress_safe((const char *)e->data, buf, (int)e->data_len, (int)e->raw_len);
            if (r < 0) {
                free(buf);
                return tf__fatbin_fail(err, errlen, "fatbin: LZ4 payload of %s%u is corrupt",
                                       e->kind == TF_FATBIN_PTX ? "compute_" : "sm_", e->arch);
            }
            n = (size_t)r;
        }
    } else {
        if (e->data_len > TF_FATBIN_MAX_UNPACKED)
            return tf__fatbin_fail(err, errlen,
                                   "fatbin: image of %zu bytes over the %llu-byte limit",
                                   e->data_len, (unsigned long long)TF_FATBIN_MAX_UNPACKED);
        if (!(buf = malloc(e->data_len + 1)))
            return TF_ENOMEM;
        memcpy(buf, e->data, e->data_len);
        n = e->data_len;
    }
    if (e->kind == TF_FATBIN_PTX)
        n = trim(buf, n);
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return 0;
}
