/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX tokenizer (see lex.h).
 */
#include "sim/ptx/lex.h"

#include "common/strutil.h"

#include <stdlib.h>
#include <string.h>

void tf__lex_init(struct tf__lexer *lx, const char *text, size_t len, char *err, size_t errlen)
{
    lx->p = text;
    lx->end = text + len;
    lx->line = 1;
    lx->err = err;
    lx->errlen = errlen;
}

int tf__tok_is(const struct tf__tok *t, const char *s)
{
    size_t n = strlen(s);
    return t->len == n && memcmp(t->s, s, n) == 0;
}

void tf__lex_skip_line(struct tf__lexer *lx)
{
    while (lx->p < lx->end && *lx->p != '\n')
        lx->p++;
}

static int is_id0(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}

static int is_idc(int c)
{
    return is_id0(c) || (c >= '0' && c <= '9');
}

static int lex_err(struct tf__lexer *lx, const char *what)
{
    tf_errf(lx->err, lx->errlen, "line %u: %s", lx->line, what);
    return -1;
}

/* Skips whitespace and comments; returns -1 on an unterminated block comment. */
static int skip_space(struct tf__lexer *lx)
{
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (c == '\n') {
            lx->line++;
            lx->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->p++;
        } else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '/') {
            tf__lex_skip_line(lx);
        } else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '*') {
            uint32_t start = lx->line;
            lx->p += 2;
            for (;;) {
                if (lx->p + 1 >= lx->end) {
                    lx->line = start;
                    return lex_err(lx, "unterminated comment");
                }
                if (lx->p[0] == '*' && lx->p[1] == '/') {
                    lx->p += 2;
                    break;
                }
                if (*lx->p == '\n')
                    lx->line++;
                lx->p++;
            }
        } else {
            break;
        }
    }
    return 0;
}

/* Identifier characters after the first: letters, digits, _ $ %, '.' (opcode modifiers,
 * special register components) and "::" inside modifiers (".L2::cache_hint"). */
static const char *scan_ident(const char *p, const char *end)
{
    while (p < end) {
        if (is_idc((unsigned char)*p) || *p == '.') {
            p++;
        } else if (*p == ':' && p + 2 < end && p[1] == ':' && is_idc((unsigned char)p[2])) {
            p += 2;
        } else {
            break;
        }
    }
    return p;
}

static int lex_number(struct tf__lexer *lx, struct tf__tok *t)
{
    const char *p = lx->p, *end = lx->end;
    if (p + 1 < end && p[0] == '0' && (p[1] == 'f' || p[1] == 'F' || p[1] == 'd' || p[1] == 'D')) {
        int nd = (p[1] == 'f' || p[1] == 'F') ? 8 : 16;
        uint64_t v = 0;
        const char *q = p + 2;
        int i = 0;
        for (; i < nd && q < end && tf_hexval((unsigned char)*q) >= 0; i++, q++)
            v = v << 4 | (uint64_t)tf_hexval((unsigned char)*q);
        if (i != nd || (q < end && is_idc((unsigned char)*q)))
            return lex_err(lx, "malformed floating-point literal");
        t->kind = nd == 8 ? TK_F32 : TK_F64;
        t->u = v;
        t->len = (size_t)(q - p);
        lx->p = q;
        return 0;
    }
    if (p + 1 < end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'b' || p[1] == 'B')) {
        int base = (p[1] == 'x' || p[1] == 'X') ? 16 : 2;
        const char *q = p + 2;
        uint64_t v = 0;
        int nd = 0;
        for (; q < end; q++) {
            int h = tf_hexval((unsigned char)*q);
            if (h < 0 || h >= base)
                break;
            if (v >> (base == 16 ? 60 : 63))
                return lex_err(lx, "integer literal out of range");
            v = v * (uint64_t)base + (uint64_t)h;
            nd++;
        }
        if (q < end && (*q == 'U' || *q == 'u'))
            q++;
        if (nd == 0 || (q < end && is_idc((unsigned char)*q)))
            return lex_err(lx, "malformed integer literal");
        t->kind = TK_INT;
        t->u = v;
        t->len = (size_t)(q - p);
        lx->p = q;
        return 0;
    }
    /* decimal integer, octal integer or decimal floating literal */
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9')
        q++;
    int is_float = 0;
    if (q < end && *q == '.') {
        is_float = 1;
        q++;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        const char *r = q + 1;
        if (r < end && (*r == '+' || *r == '-'))
            r++;
        if (r < end && *r >= '0' && *r <= '9') {
            is_float = 1;
            q = r;
            while (q < end && *q >= '0' && *q <= '9')
                q++;
        }
    }
    if (is_float) {
        char buf[64];
        size_t n = (size_t)(q - p);
        if (n >= sizeof(buf) || (q < end && is_idc((unsigned char)*q)))
            return lex_err(lx, "malformed floating-point literal");
        memcpy(buf, p, n);
        buf[n] = 0;
        t->kind = TK_DEC;
        t->d = strtod(buf, NULL);
        t->len = n;
        lx->p = q;
        return 0;
    }
    uint64_t v = 0;
    int octal = p[0] == '0' && q - p > 1;
    for (const char *r = p; r < q; r++) {
        unsigned dgt = (unsigned)(*r - '0');
        unsigned base = octal ? 8 : 10;
        if (octal && dgt > 7)
            return lex_err(lx, "malformed octal literal");
        if (v > (UINT64_MAX - dgt) / base)
            return lex_err(lx, "integer literal out of range");
        v = v * base + dgt;
    }
    if (q < end && (*q == 'U' || *q == 'u'))
        q++;
    if (q < end && is_idc((unsigned char)*q))
        return lex_err(lx, "malformed integer literal");
    t->kind = TK_INT;
    t->u = v;
    t->len = (size_t)(q - p);
    lx->p = q;
    return 0;
}

int tf__lex_next(struct tf__lexer *lx, struct tf__tok *t)
{
    memset(t, 0, sizeof(*t));
    if (skip_space(lx))
        return -1;
    t->line = lx->line;
    t->s = lx->p;
    if (lx->p >= lx->end) {
        t->kind = TK_EOF;
        return 0;
    }
    unsigned char c = (unsigned char)*lx->p;
    if (c == '.' && lx->p + 1 < lx->end && is_id0((unsigned char)lx->p[1])) {
        const char *q = scan_ident(lx->p + 1, lx->end);
        t->kind = TK_DIR;
        t->len = (size_t)(q - lx->p);
        lx->p = q;
        return 0;
    }
    if (is_id0(c)) {
        const char *q = scan_ident(lx->p + 1, lx->end);
        t->kind = TK_IDENT;
        t->len = (size_t)(q - lx->p);
        lx->p = q;
        return 0;
    }
    if (c >= '0' && c <= '9')
        return lex_number(lx, t);
    if (c == '"') {
        const char *q = lx->p + 1;
        while (q < lx->end && *q != '"' && *q != '\n') {
            if (*q == '\\' && q + 1 < lx->end && q[1] != '\n')
                q++;
            q++;
        }
        if (q >= lx->end || *q != '"')
            return lex_err(lx, "unterminated string");
        t->kind = TK_STR;
        t->s = lx->p + 1;
        t->len = (size_t)(q - lx->p - 1);
        lx->p = q + 1;
        return 0;
    }
    if (strchr(",;:{}[]()<>+-!|=@*", c) && c != 0) {
        t->kind = TK_PUNCT;
        t->c = (char)c;
        t->len = 1;
        lx->p++;
        return 0;
    }
    tf_errf(lx->err, lx->errlen, "line %u: unexpected character 0x%02x", lx->line, c);
    return -1;
}
