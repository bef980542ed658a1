/* SPDX-License-Identifier: Apache-2.0
 *
 * Locating module images (image.h: tf_image_locate; fatbin.h: tf_fatbin_size): which kind an
 * image is and how many bytes it spans, from its headers alone. Nothing here decompresses, so
 * libtfimageloc, this file alone, is what a library that only needs an image's extent links
 * (the remote client, which takes no shared libraries besides libc).
 */
#include "fatbin/fatbin.h"
#include "fatbin/image.h"
#include "fatbin/le.h"

#include <string.h>

int tf_fatbin_size(const void *buf, size_t len, uint64_t *size, char *err, size_t errlen)
{
    const uint8_t *p = buf;
    if (!p || len < TF_FATBIN_HEADER_SIZE)
        return tf__fatbin_fail(err, errlen, "fatbin: %zu bytes, shorter than its 16-byte header",
                               len);
    if (le32(p) != TF_FATBIN_MAGIC)
        return tf__fatbin_fail(err, errlen, "fatbin: bad magic 0x%08x", (unsigned)le32(p));
    uint16_t hsize = le16(p + 6);
    uint64_t body = le64(p + 8);
    if (hsize < TF_FATBIN_HEADER_SIZE || hsize > 4096)
        return tf__fatbin_fail(err, errlen, "fatbin: header size %u out of range", (unsigned)hsize);
    if (body > TF_FATBIN_MAX_SIZE)
        return tf__fatbin_fail(err, errlen,
                               "fatbin: %llu bytes of entries, over the %llu-byte limit",
                               (unsigned long long)body, (unsigned long long)TF_FATBIN_MAX_SIZE);
    *size = hsize + body;
    return 0;
}

int tf__elf_size(const uint8_t *p, size_t len, size_t *size, char *err, size_t errlen)
{
    if (len && len < 64)
        return tf__fatbin_fail(err, errlen, "ELF: %zu bytes, shorter than its header", len);
    if (p[4] != 2 || p[5] != 1)
        return tf__fatbin_fail(err, errlen, "ELF: class %u / data %u, not 64-bit little-endian",
                               p[4], p[5]);
    uint64_t shoff = le64(p + 0x28);
    unsigned shentsize = le16(p + 0x3a), shnum = le16(p + 0x3c);
    if (shnum && shentsize != ELF_SHDR)
        return tf__fatbin_fail(err, errlen, "ELF: section header size %u", shentsize);
    uint64_t end = sat_add(shoff, (uint64_t)shnum * ELF_SHDR);
    uint64_t cap = len ? len : TF_IMAGE_MAX;
    if (end > cap)
        return tf__fatbin_fail(err, errlen, "ELF: section table ends at %llu, past %llu bytes",
                               (unsigned long long)end, (unsigned long long)cap);
    uint64_t total = end > 64 ? end : 64;
    uint64_t phoff = le64(p + 0x20);
    unsigned phentsize = le16(p + 0x36), phnum = le16(p + 0x38);
    uint64_t phend = sat_add(phoff, (uint64_t)phnum * phentsize);
    if (phnum && phend > cap)
        return tf__fatbin_fail(err, errlen, "ELF: program headers end at %llu, past %llu bytes",
                               (unsigned long long)phend, (unsigned long long)cap);
    if (phnum && phend > total)
        total = phend;
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *sh = p + shoff + (uint64_t)i * ELF_SHDR;
        uint32_t type = le32(sh + 4);
        uint64_t off = le64(sh + 0x18), sz = le64(sh + 0x20);
        if (type == 8 /* SHT_NOBITS */)
            continue;
        uint64_t e = sat_add(off, sz);
        if (e > cap)
            return tf__fatbin_fail(err, errlen, "ELF: section %u ends at %llu, past %llu bytes", i,
                                   (unsigned long long)e, (unsigned long long)cap);
        if (e > total)
            total = e;
    }
    *size = (size_t)total;
    return 0;
}

int tf_image_locate(const void *image, size_t len, struct tf_image *out, char *err, size_t errlen)
{
    const uint8_t *p = image;
    if (!p)
        return tf__fatbin_fail(err, errlen, "no image");
    size_t have = len ? len : strnlen(image, 4);
    uint32_t magic = have >= 4 ? le32(p) : 0;
    if (magic == TF_FATBIN_WRAPPER_MAGIC) {
        /* Its pointer is only meaningful in the process that built it: not in a file. */
        if (len)
            return tf__fatbin_fail(err, errlen, "a fatbin wrapper record is not a loadable file");
        memcpy(&p, p + 8, sizeof(p));
        if (!p)
            return tf__fatbin_fail(err, errlen, "fatbin wrapper record without a fatbin");
        len = 0; /* the container lives elsewhere in the process */
        magic = le32(p);
        if (magic != TF_FATBIN_MAGIC)
            return tf__fatbin_fail(err, errlen, "fatbin wrapper record points to magic 0x%08x",
                                   (unsigned)magic);
    }
    out->start = p;
    if (magic == TF_FATBIN_MAGIC) {
        uint64_t total;
        int rc = tf_fatbin_size(p, len ? len : TF_FATBIN_HEADER_SIZE, &total, err, errlen);
        if (rc)
            return rc;
        if ((len && total > len) || total > TF_IMAGE_MAX)
            return tf__fatbin_fail(err, errlen, "fatbin declares %llu bytes, %zu present",
                                   (unsigned long long)total, len ? len : (size_t)TF_IMAGE_MAX);
        out->kind = TF_IMAGE_FATBIN;
        out->size = (size_t)total;
        return 0;
    }
    if (magic == 0x464c457fu) { /* "\177ELF" */
        out->kind = TF_IMAGE_ELF;
        return tf__elf_size(p, len, &out->size, err, errlen);
    }
    out->kind = TF_IMAGE_PTX;
    out->size = strnlen(image, len ? len : TF_IMAGE_MAX);
    return 0;
}
