/* SPDX-License-Identifier: Apache-2.0
 *
 * Module images: locating their bytes and sizing their module-scope variables (image.h).
 * ELF fields are read with explicit little-endian loads after bounds checks; the PTX scan is a
 * single pass that only looks at module-scope statements (function bodies are skipped by
 * brace depth) and never stores more than a short statement head.
 */
#include "fatbin/image.h"

#include "common/err.h"
#include "fatbin/le.h"
#include "fatbin/fatbin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ELF --------------------------------------------------------------------------------- */

/* Sizes of .nv.global, .nv.global.init and .nv.constant3 (checked by tf__elf_size). */
static int elf_globals(const uint8_t *p, size_t size, uint64_t *bytes, char *err, size_t errlen)
{
    uint64_t shoff = le64(p + 0x28);
    unsigned shnum = le16(p + 0x3c), shstrndx = le16(p + 0x3e);
    *bytes = 0;
    if (!shnum)
        return 0;
    if (shstrndx >= shnum)
        return tf__fatbin_fail(err, errlen, "ELF: section name table %u of %u", shstrndx, shnum);
    const uint8_t *strsh = p + shoff + (uint64_t)shstrndx * ELF_SHDR;
    uint64_t stroff = le64(strsh + 0x18), strsz = le64(strsh + 0x20);
    if (stroff > size || strsz > size - stroff)
        return tf__fatbin_fail(err, errlen, "ELF: section name table leaves the image");
    static const char *const names[] = {".nv.global", ".nv.global.init", ".nv.constant3"};
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *sh = p + shoff + (uint64_t)i * ELF_SHDR;
        uint32_t name = le32(sh);
        if (name >= strsz)
            continue;
        const char *s = (const char *)p + stroff + name;
        size_t room = (size_t)(strsz - name);
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
            size_t n = strlen(names[k]);
            if (room > n && memcmp(s, names[k], n + 1) == 0)
                *bytes = sat_add(*bytes, le64(sh + 0x20));
        }
    }
    return 0;
}

/* ---- PTX --------------------------------------------------------------------------------- */

static uint64_t ptx_type_size(const char *t, size_t n)
{
    static const struct {
        const char *name;
        unsigned size;
    } types[] = {{"b8", 1},  {"u8", 1},   {"s8", 1},  {"b16", 2}, {"u16", 2},  {"s16", 2},
                 {"f16", 2}, {"bf16", 2}, {"b32", 4}, {"u32", 4}, {"s32", 4},  {"f32", 4},
                 {"b64", 8}, {"u64", 8},  {"s64", 8}, {"f64", 8}, {"b128", 16}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strlen(types[i].name) == n && memcmp(types[i].name, t, n) == 0)
            return types[i].size;
    return 0;
}

/* Bytes defined by one module-scope statement HEAD (its text before any initializer, at most
 * sizeof(head) - 1 characters); ELEMS: the top-level elements of its initializer, if any. */
static uint64_t ptx_statement(const char *head, uint64_t elems)
{
    const char *p = head;
    int seen_space = 0;
    uint64_t elem = 0, vec = 1;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p != '.')
            break;
        const char *w = ++p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '[' && *p != '(')
            p++;
        size_t n = (size_t)(p - w);
        if (n == 6 && memcmp(w, "extern", 6) == 0)
            return 0; /* a declaration of another module's variable */
        if ((n == 7 && memcmp(w, "visible", 7) == 0) || (n == 4 && memcmp(w, "weak", 4) == 0) ||
            (n == 6 && memcmp(w, "common", 6) == 0))
            continue;
        if ((n == 6 && memcmp(w, "global", 6) == 0) || (n == 5 && memcmp(w, "const", 5) == 0)) {
            if (*p == '[') /* .const[bank] */
                while (*p && *p != ']')
                    p++;
            if (*p == ']')
                p++;
            seen_space = 1;
            continue;
        }
        if (!seen_space)
            return 0;
        if (n == 5 && memcmp(w, "align", 5) == 0) {
            while (*p == ' ' || *p == '\t')
                p++;
            while (*p >= '0' && *p <= '9')
                p++;
            continue;
        }
        if (n > 9 && memcmp(w, "attribute", 9) == 0) {
            while (*p && *p != ')')
                p++;
            if (*p)
                p++;
            continue;
        }
        if (n == 2 && w[0] == 'v' && (w[1] == '2' || w[1] == '4' || w[1] == '8')) {
            vec = (uint64_t)(w[1] - '0');
            continue;
        }
        elem = ptx_type_size(w, n);
        break;
    }
    if (!seen_space || !elem)
        return 0;
    /* declarators: name[dim]... separated by commas (without an initializer) */
    uint64_t total = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
            p++;
        if (!*p || *p == '=')
            break;
        while (*p && *p != '[' && *p != ',' && *p != '=' && *p != ' ' && *p != '\t' && *p != '\n')
            p++; /* the name */
        uint64_t count = 1;
        int first = 1;
        for (;;) {
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != '[')
                break;
            p++;
            uint64_t d = 0;
            int digits = 0;
            while (*p >= '0' && *p <= '9') {
                d = d > SAT / 10 ? SAT : d * 10 + (uint64_t)(*p - '0');
                p++;
                digits = 1;
            }
            if (!digits && first)
                d = elems; /* name[] = {...} */
            count = sat_mul(count, d);
            first = 0;
            while (*p && *p != ']')
                p++;
            if (*p)
                p++;
        }
        total = sat_add(total, sat_mul(sat_mul(elem, vec), count));
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ',')
            break;
    }
    return total;
}

/* True when the statement head H (HL bytes) is a directive that ends at its line. */
static int starts_directive(const char *h, size_t hl)
{
    static const char *const line_directives[] = {".version", ".target", ".address_size", ".file",
                                                  ".loc"};
    size_t i = 0;
    while (i < hl && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
        i++;
    for (size_t k = 0; k < sizeof(line_directives) / sizeof(line_directives[0]); k++) {
        size_t n = strlen(line_directives[k]);
        if (hl - i > n && memcmp(h + i, line_directives[k], n) == 0 &&
            (h[i + n] == ' ' || h[i + n] == '\t'))
            return 1;
    }
    return 0;
}

uint64_t tf_ptx_globals(const char *t, size_t len)
{
    char head[256];
    size_t hl = 0;
    int depth = 0;      /* function body nesting */
    int init = 0;       /* initializer brace nesting of the current statement */
    int has_init = 0;   /* '=' seen in the current statement */
    uint64_t elems = 0; /* top-level initializer elements */
    int elem_open = 0;  /* a top-level element has started */
    uint64_t total = 0;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (c == '/' && i + 1 < len && t[i + 1] == '/') {
            while (i < len && t[i] != '\n')
                i++;
            c = '\n';
        } else if (c == '/' && i + 1 < len && t[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(t[i] == '*' && t[i + 1] == '/'))
                i++;
            i++;
            c = ' ';
        } else if (c == '"') { /* a string (.file names): its ';', '{' and '//' are text */
            size_t k = i + 1;
            while (k < len && t[k] != '"' && t[k] != '\n')
                k++;
            i = k < len && t[k] == '"' ? k : k - 1; /* an unterminated one ends at its line */
            c = ' ';
        }
        if (depth > 0) {
            depth += c == '{' ? 1 : c == '}' ? -1 : 0;
            continue;
        }
        if (c == '{') {
            if (has_init) {
                if (++init == 2)
                    elem_open = 1;
            } else {
                depth = 1; /* a function body: its statement is not a variable */
                hl = 0;
                has_init = 0;
            }
            continue;
        }
        if (c == '}' && init > 0) {
            init--;
            continue;
        }
        if (c == ';') {
            if (init == 0) {
                head[hl] = 0;
                if (has_init && elem_open)
                    elems++;
                total = sat_add(total, ptx_statement(head, elems));
                hl = 0;
                has_init = 0;
                elems = 0;
                elem_open = 0;
            }
            continue;
        }
        if (has_init) {
            if (init == 1 && c == ',') {
                if (elem_open)
                    elems++;
                elem_open = 0;
            } else if (init == 1 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                elem_open = 1;
            }
            continue;
        }
        if (c == '\n' && starts_directive(head, hl)) {
            hl = 0; /* .version, .target, ... end at the line, without ';' */
            continue;
        }
        if (c == '=')
            has_init = 1;
        if (hl + 1 < sizeof(head))
            head[hl++] = c == '=' ? '=' : c;
    }
    return total;
}

/* ---- images ------------------------------------------------------------------------------ */

int tf_image_globals(const struct tf_image *im, uint64_t *bytes, char *err, size_t errlen)
{
    *bytes = 0;
    if (im->kind == TF_IMAGE_PTX) {
        *bytes = tf_ptx_globals((const char *)im->start, im->size);
        return 0;
    }
    if (im->kind == TF_IMAGE_ELF) {
        size_t size;
        int rc = tf__elf_size(im->start, im->size, &size, err, errlen);
        return rc ? rc : elf_globals(im->start, size, bytes, err, errlen);
    }
    struct tf_fatbin_iter it;
    struct tf_fatbin_entry e, ptx = {0};
    int rc, have_ptx = 0;
    if ((rc = tf_fatbin_open(&it, im->start, im->size, err, errlen)))
        return rc;
    while ((rc = tf_fatbin_next(&it, &e, err, errlen)) == 1) {
        if (e.kind == TF_FATBIN_PTX && !have_ptx) {
            ptx = e;
            have_ptx = 1;
        }
        if (e.kind != TF_FATBIN_ELF)
            continue;
        char *img = NULL;
        size_t n;
        const uint8_t *elf = e.data;
        if (e.flags & (TF_FATBIN_F_LZ4 | TF_FATBIN_F_ZSTD | TF_FATBIN_F_OLD_COMPRESSION)) {
            if ((rc = tf_fatbin_unpack(&e, &img, &n, err, errlen)))
                return rc;
            elf = (const uint8_t *)img;
        } else {
            n = e.data_len;
        }
        struct tf_image sub = {TF_IMAGE_ELF, elf, n};
        rc = n >= 4 && le32(elf) == 0x464c457fu
                 ? tf_image_globals(&sub, bytes, err, errlen)
                 : tf__fatbin_fail(err, errlen, "fatbin: sm_%u is not ELF", e.arch);
        free(img);
        return rc;
    }
    if (rc < 0 || !have_ptx)
        return rc;
    char *text;
    size_t n;
    if ((rc = tf_fatbin_unpack(&ptx, &text, &n, err, errlen)))
        return rc;
    *bytes = tf_ptx_globals(text, n);
    free(text);
    return 0;
}

int tf_image_vars_bytes(const void *image, size_t len, uint64_t *bytes, char *err, size_t errlen)
{
    struct tf_image im;
    *bytes = 0;
    int rc = tf_image_locate(image, len, &im, err, errlen);
    return rc ? rc : tf_image_globals(&im, bytes, err, errlen);
}
