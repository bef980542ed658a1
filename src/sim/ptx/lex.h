/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header (src/sim/ptx/ only): the PTX tokenizer. It turns PTX text into tokens with
 * line numbers: identifiers (opcodes keep their dotted modifiers, "ld.global.f32", and
 * special registers their component, "%tid.x"), directives (".reg"), integer and floating
 * literals (0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX, decimal), strings and punctuation. Comments are
 * skipped. The lexer never reads past TEXT+LEN and needs no NUL terminator.
 */
#ifndef TF_SIM_PTX_LEX_H
#define TF_SIM_PTX_LEX_H

#include <stddef.h>
#include <stdint.h>

enum tf__tk { TK_EOF, TK_IDENT, TK_DIR, TK_INT, TK_F32, TK_F64, TK_DEC, TK_STR, TK_PUNCT };

struct tf__tok {
    int kind;
    const char *s; /* token text (not terminated) */
    size_t len;
    uint32_t line;
    uint64_t u; /* TK_INT value, TK_F32/TK_F64 bits */
    double d;   /* TK_DEC value */
    char c;     /* TK_PUNCT character */
};

struct tf__lexer {
    const char *p, *end;
    uint32_t line;
    char *err;
    size_t errlen;
};

void tf__lex_init(struct tf__lexer *lx, const char *text, size_t len, char *err, size_t errlen);
/* Next token into *T; returns 0, or -1 with "line N: ..." in the error buffer. */
int tf__lex_next(struct tf__lexer *lx, struct tf__tok *t);
/* Skips the rest of the current line (.loc / .file take no semicolon). */
void tf__lex_skip_line(struct tf__lexer *lx);
/* Token equality with a C string. */
int tf__tok_is(const struct tf__tok *t, const char *s);

#endif
