/* SPDX-License-Identifier: Apache-2.0
 *
 * Module image variables (see imgvars.h): a PTX tokenizer that tracks brace depth and
 * comments, and an ELF64 symbol-table walk.
 */
#include "limits/imgvars.h"

#include <stdint.h>
#include <string.h>

#define MAX_NAMES 4096

/* ---- PTX text ------------------------------------------------------------------------------ */

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.';
}

/* One PTX statement at depth 0, from P (after whitespace) up to ';' or '{' (exclusive):
 * calls FN for its name when it declares .global or .const storage. */
static int ptx_statement(const char *p, const char *end, int (*fn)(void *, const char *), void *arg,
                         int *count)
{
    int is_var = 0, is_extern = 0;
    const char *name = NULL;
    size_t nlen = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
            p++;
        if (p >= end)
            break;
        if (!ident_char(*p)) {
            if (*p == '[' || *p == '=' || *p == '<' || *p == ',')
                break; /* the name came before */
            p++;
            continue;
        }
        const char *t = p;
        while (p < end && ident_char(*p))
            p++;
        size_t tl = (size_t)(p - t);
        if (tl == 7 && !memcmp(t, ".global", 7))
            is_var = 1;
        else if (tl == 6 && !memcmp(t, ".const", 6))
            is_var = 1;
        else if (tl == 7 && !memcmp(t, ".extern", 7))
            is_extern = 1;
        else if (*t != '.' && !(*t >= '0' && *t <= '9')) {
            name = t;
            nlen = tl;
        }
    }
    if (!is_var || is_extern || !name || nlen >= TF_IMGVARS_NAME_MAX || *count >= MAX_NAMES)
        return 0;
    char buf[TF_IMGVARS_NAME_MAX];
    memcpy(buf, name, nlen);
    buf[nlen] = '\0';
    (*count)++;
    return fn(arg, buf);
}

static int ptx_each(const char *s, size_t len, int (*fn)(void *, const char *), void *arg)
{
    const char *end = memchr(s, '\0', len);
    if (!end)
        end = s + len;
    int depth = 0, count = 0;
    const char *stmt = s;
    for (const char *p = s; p < end;) {
        if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
            if (depth == 0)
                stmt = p;
            continue;
        }
        if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            p = q + 1 < end ? q + 2 : end;
            if (depth == 0)
                stmt = p;
            continue;
        }
        if (*p == '"') { /* strings (e.g. in .file) */
            p++;
            while (p < end && *p != '"' && *p != '\n')
                p++;
            if (p < end)
                p++;
            continue;
        }
        if (*p == '{') {
            if (depth == 0) {
                /* an initialiser list "= {1, 2}" is part of the statement */
                const char *q = p;
                while (q > stmt &&
                       (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n' || q[-1] == '\r'))
                    q--;
                if (q > stmt && q[-1] == '=') {
                    int d = 0;
                    while (p < end) {
                        d += *p == '{';
                        d -= *p == '}';
                        p++;
                        if (d == 0)
                            break;
                    }
                    continue;
                }
                int rc = ptx_statement(stmt, p, fn, arg, &count);
                if (rc)
                    return rc;
            }
            depth++;
            p++;
            continue;
        }
        if (*p == '}') {
            if (depth > 0)
                depth--;
            p++;
            if (depth == 0)
                stmt = p;
            continue;
        }
        if (*p == ';' && depth == 0) {
            int rc = ptx_statement(stmt, p, fn, arg, &count);
            if (rc)
                return rc;
            stmt = ++p;
            continue;
        }
        p++;
    }
    return 0;
}

/* ---- ELF64 cubins -------------------------------------------------------------------------- */

static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Section header I's fields, or 0 when it lies outside the image. */
static int shdr(const uint8_t *b, size_t len, uint64_t shoff, uint16_t shentsize, size_t i,
                uint32_t *name, uint32_t *type, uint64_t *off, uint64_t *size, uint32_t *link,
                uint64_t *entsize)
{
    uint64_t o = shoff + (uint64_t)i * shentsize;
    if (shentsize < 64 || o > len || len - o < 64)
        return 0;
    const uint8_t *h = b + o;
    *name = (uint32_t)rd(h, 4);
    *type = (uint32_t)rd(h + 4, 4);
    *off = rd(h + 24, 8);
    *size = rd(h + 32, 8);
    *link = (uint32_t)rd(h + 40, 4);
    *entsize = rd(h + 56, 8);
    return *off <= len && *size <= len - *off;
}

/* The NUL-terminated string at OFF of the string table [TOFF, TOFF+TSIZE), or NULL. */
static const char *str_at(const uint8_t *b, uint64_t toff, uint64_t tsize, uint64_t off)
{
    if (off >= tsize)
        return NULL;
    const char *s = (const char *)b + toff + off;
    return memchr(s, '\0', (size_t)(tsize - off)) ? s : NULL;
}

static int backed_section(const char *n)
{
    if (!strncmp(n, ".nv.global", 10))
        return 1;
    return !strncmp(n, ".nv.constant", 12) && strncmp(n, ".nv.constant0", 13) != 0;
}

static int elf_each(const uint8_t *b, size_t len, int (*fn)(void *, const char *), void *arg)
{
    if (len < 64 || b[4] != 2 /* ELFCLASS64 */ || b[5] != 1 /* little endian */)
        return 0;
    uint64_t shoff = rd(b + 40, 8);
    uint16_t shentsize = (uint16_t)rd(b + 58, 2), shnum = (uint16_t)rd(b + 60, 2),
             shstrndx = (uint16_t)rd(b + 62, 2);
    uint32_t nm, ty, lk;
    uint64_t so, ss, es;
    if (shstrndx >= shnum ||
        !shdr(b, len, shoff, shentsize, shstrndx, &nm, &ty, &so, &ss, &lk, &es))
        return 0;
    const uint64_t str_off = so, str_size = ss;
    int count = 0;
    for (size_t i = 0; i < shnum; i++) {
        if (!shdr(b, len, shoff, shentsize, i, &nm, &ty, &so, &ss, &lk, &es) || ty != 2 /* SYMTAB */
            || es < 24)
            continue;
        uint32_t nm2, ty2, lk2;
        uint64_t to, ts, es2;
        if (lk >= shnum || !shdr(b, len, shoff, shentsize, lk, &nm2, &ty2, &to, &ts, &lk2, &es2))
            continue;
        for (uint64_t k = 1; k < ss / es; k++) {
            const uint8_t *sym = b + so + k * es;
            uint32_t sname = (uint32_t)rd(sym, 4);
            uint8_t info = sym[4];
            uint16_t shndx = (uint16_t)rd(sym + 6, 2);
            if ((info & 0xf) != 1 /* STT_OBJECT */ || shndx == 0 || shndx >= shnum)
                continue;
            uint32_t snm, sty, slk;
            uint64_t sof, ssz, ses;
            if (!shdr(b, len, shoff, shentsize, shndx, &snm, &sty, &sof, &ssz, &slk, &ses))
                continue;
            const char *secname = str_at(b, str_off, str_size, snm);
            const char *name = str_at(b, to, ts, sname);
            if (!secname || !name || !*name || !backed_section(secname) ||
                strlen(name) >= TF_IMGVARS_NAME_MAX || count >= MAX_NAMES)
                continue;
            count++;
            int rc = fn(arg, name);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int tf_imgvars_each(const void *img, size_t len, int (*fn)(void *arg, const char *name), void *arg)
{
    const uint8_t *b = img;
    if (!img || !len)
        return 0;
    if (len >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
        return elf_each(b, len, fn, arg);
    return ptx_each(img, len, fn, arg);
}

struct sum {
    int64_t (*size)(void *arg, const char *name);
    void *arg;
    int64_t total;
};

static int add_size(void *arg, const char *name)
{
    struct sum *s = arg;
    int64_t n = s->size(s->arg, name);
    if (n > 0 && n <= INT64_MAX - s->total)
        s->total += n;
    return 0;
}

int64_t tf_imgvars_bytes(const void *img, size_t len, int64_t (*size)(void *arg, const char *name),
                         void *arg)
{
    struct sum s = {size, arg, 0};
    (void)tf_imgvars_each(img, len, add_size, &s);
    return s.total;
}
