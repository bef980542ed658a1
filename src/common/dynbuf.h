/* SPDX-License-Identifier: Apache-2.0
 *
 * Bounded dynamic byte buffers (curl's dynbuf idea): every buffer that grows with outside
 * input has a hard maximum, so a hostile peer or a runaway producer gets TF_ERANGE instead of
 * exhausting memory. The content is always NUL-terminated (the NUL is not counted in len).
 *
 * A struct tf_dynbuf is embedded by its owner: tf_dynbuf_init / tf_dynbuf_free. Not
 * thread-safe: one owner at a time.
 */
#ifndef TF_COMMON_DYNBUF_H
#define TF_COMMON_DYNBUF_H

#include <stddef.h>

struct tf_dynbuf {
    char *data; /* owned; NULL until the first append */
    size_t len; /* bytes used, excluding the terminating NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* hard limit on len */
};

void tf_dynbuf_init(struct tf_dynbuf *b, size_t max);
/* Frees the storage; the buffer can be reused after tf_dynbuf_init. Accepts NULL. */
void tf_dynbuf_free(struct tf_dynbuf *b);
/* Empties the buffer, keeping its storage. */
void tf_dynbuf_reset(struct tf_dynbuf *b);
/* Makes room for N more bytes (appends up to them do not allocate); TF_ERANGE, TF_ENOMEM. */
int tf_dynbuf_reserve(struct tf_dynbuf *b, size_t n);
/* Appends N bytes; TF_ERANGE when len would exceed max (nothing appended), TF_ENOMEM. */
int tf_dynbuf_add(struct tf_dynbuf *b, const void *p, size_t n);
int tf_dynbuf_addc(struct tf_dynbuf *b, char c);
int tf_dynbuf_adds(struct tf_dynbuf *b, const char *s);
int tf_dynbuf_addf(struct tf_dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the N bytes of S as a JSON string literal, quotes included, escaped as json-c
 * writes with JSON_C_TO_STRING_NOSLASHESCAPE: \" \\ \b \f \n \r \t, other bytes below 0x20 as
 * \u00XX, everything else (UTF-8 included) as is. */
int tf_dynbuf_add_json_str(struct tf_dynbuf *b, const char *s, size_t n);
/* How many of the N bytes at S, from the start, JSON writes as they are (no '"', '\\' or byte
 * below 0x20): N when S needs no escaping; otherwise the offset of the first byte that does.
 * Eight bytes per step. */
size_t tf_json_plain_len(const char *s, size_t n);
/* The length of the N bytes of S escaped as tf_dynbuf_add_json_str escapes them (quotes not
 * counted), and the escaped bytes written at DST (that many; no NUL); returns their end. */
size_t tf_json_escaped_len(const char *s, size_t n);
char *tf_json_escape(char *dst, const char *s, size_t n);
/* Growing arrays: returns ARR (entries of ELEM bytes, *CAP of them) reallocated to hold at
 * least NEED entries, the capacity doubled from FIRST (at least 1), or ARR itself when it
 * already does; NULL (ARR and *CAP unchanged) when out of memory or the size would overflow.
 *     struct x *p = tf_grow(s->v, &s->cap, s->n + 1, sizeof(*p), 16);
 *     if (!p)
 *         return TF_ENOMEM;
 *     s->v = p; */
void *tf_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first);

/* Drops the first N bytes (N > len empties it). */
void tf_dynbuf_consume(struct tf_dynbuf *b, size_t n);
/* Shrinks len to N (N <= len). */
void tf_dynbuf_truncate(struct tf_dynbuf *b, size_t n);
/* The content ("" when empty; never NULL). Valid until the next modifying call. */
const char *tf_dynbuf_str(const struct tf_dynbuf *b);

#endif
