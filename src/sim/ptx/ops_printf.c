/* SPDX-License-Identifier: Apache-2.0
 *
 * Device printf and assert. printf: `call (ret), vprintf, (fmt, args)` to the `.extern .func
 * vprintf` that nvcc declares for printf in a kernel. The driver's vprintf is bound when the module
 * loads (tf__d_finish); this formats each calling lane's arguments as CUDA does (the argument
 * buffer packs each value at its natural alignment: int, unsigned and char as 4 bytes, long,
 * long long, size_t, pointers and doubles, floats promoted, as 8) and writes the line to the
 * process's stdout, lanes in order, one write per lane. The result is the number of
 * characters printed, or -1 for a format CUDA does not take (%n, a `*` width) or arguments
 * outside the memory the kernel may read (then nothing is printed and the launch goes on, as
 * on a GPU the output would be garbage, not a fault).
 */
#include "sim/ptx/internal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define FMT_MAX 4096 /* bytes of a format string (or a %s argument) read */

/* The NUL-terminated string at generic address A into BUF (at most CAP - 1 bytes); false when
 * it is not readable memory. */
static bool read_str(const struct tf__warp *w, uint64_t a, char *buf, size_t cap)
{
    for (size_t i = 0; i + 1 < cap; i++) {
        const char *p = tf__probe(w, a + i, 1);
        if (!p)
            return false;
        if (!(buf[i] = *p))
            return true;
    }
    buf[cap - 1] = '\0';
    return true;
}

/* Appends to OUT (capacity CAP, *LEN used) what snprintf makes of SPEC and one value. */
__attribute__((format(printf, 4, 5))) static void put(char *out, size_t cap, size_t *len,
                                                      const char *spec, ...)
{
    va_list ap;
    va_start(ap, spec);
    int n = *len < cap ? vsnprintf(out + *len, cap - *len, spec, ap) : 0;
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* Formats FMT with the argument buffer at generic address ARGS into OUT; the length, or -1. */
static int format(const struct tf__warp *w, const char *fmt, uint64_t args, char *out, size_t cap)
{
    size_t len = 0, off = 0;
    out[0] = '\0';
    for (const char *p = fmt; *p;) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            if (len + n >= cap)
                n = cap - 1 - len;
            memcpy(out + len, p, n);
            len += n;
            out[len] = '\0';
            p += q ? (size_t)(q - p) : strlen(p);
            if (!q || len + 1 >= cap)
                break;
            continue;
        }
        /* %[flags][width][.precision][length]conversion */
        char spec[32];
        size_t k = 0;
        spec[k++] = *p++;
        while (*p && strchr("-+ #0", *p) && k < 8)
            spec[k++] = *p++;
        while (*p >= '0' && *p <= '9' && k < 16)
            spec[k++] = *p++;
        if (*p == '.') {
            spec[k++] = *p++;
            while (*p >= '0' && *p <= '9' && k < 24)
                spec[k++] = *p++;
        }
        if (*p == '*')
            return -1;
        int wide = 0; /* 8-byte integer */
        while (*p && strchr("hlLqjzt", *p)) {
            wide |= *p == 'l' || *p == 'L' || *p == 'q' || *p == 'j' || *p == 'z' || *p == 't';
            p++;
        }
        char conv = *p ? *p++ : '\0';
        if (conv == '%') {
            put(out, cap, &len, "%%");
            continue;
        }
        int size = strchr("fFeEgGaAsp", conv) ? 8 : wide ? 8 : 4;
        if (!conv || !strchr("diouxXcfFeEgGaAsp", conv))
            return -1;
        off = (off + (size_t)size - 1) & ~(size_t)(size - 1);
        const uint8_t *v = tf__probe(w, args + off, (uint32_t)size);
        if (!v)
            return -1;
        off += (size_t)size;
        uint64_t u = 0;
        memcpy(&u, v, (size_t)size);
        if (strchr("fFeEgGaA", conv)) {
            double d;
            memcpy(&d, &u, 8);
            spec[k++] = conv;
            spec[k] = '\0';
            put(out, cap, &len, spec, d);
        } else if (conv == 's') {
            char s[FMT_MAX];
            if (!u)
                snprintf(s, sizeof(s), "(null)");
            else if (!read_str(w, u, s, sizeof(s)))
                return -1;
            spec[k++] = 's';
            spec[k] = '\0';
            put(out, cap, &len, spec, s);
        } else if (conv == 'p') {
            spec[k++] = 'p';
            spec[k] = '\0';
            put(out, cap, &len, spec, (void *)(uintptr_t)u);
        } else if (conv == 'c') {
            spec[k++] = 'c';
            spec[k] = '\0';
            put(out, cap, &len, spec, (int)(unsigned char)u);
        } else {
            bool sgn = conv == 'd' || conv == 'i';
            spec[k++] = 'l';
            spec[k++] = 'l';
            spec[k++] = conv;
            spec[k] = '\0';
            if (sgn)
                put(out, cap, &len, spec, size == 8 ? (long long)u : (long long)(int32_t)u);
            else
                put(out, cap, &len, spec,
                    size == 8 ? (unsigned long long)u : (unsigned long long)(uint32_t)u);
        }
    }
    return (int)len;
}

int tf__op_vprintf(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    const struct tf__call *c = in->aux;
    TF__FOR_LANES(m, {
        const uint8_t *prm = w->prm + (size_t)l * w->prm_stride;
        uint64_t fa, aa;
        memcpy(&fa, prm + c->arg_off[0], 8);
        memcpy(&aa, prm + c->arg_off[1], 8);
        char fmt[FMT_MAX], out[FMT_MAX * 2];
        int n = fa && read_str(w, fa, fmt, sizeof(fmt)) ? format(w, fmt, aa, out, sizeof(out)) : -1;
        if (n > 0)
            fwrite(out, 1, (size_t)n, stdout);
        if (c->nrets) {
            int32_t r = n;
            memcpy(w->prm + (size_t)l * w->prm_stride + c->ret_off[0], &r, 4);
        }
    });
    return TF__GO;
}

/* __assertfail(message, file, line, function, char size), what assert() in a kernel calls when
 * its condition is false: each failing thread's line on stderr as the GPU prints it, then the
 * launch stops with TF_PTX_ASSERT (CUDA_ERROR_ASSERT, sticky, as on a GPU). */
int tf__op_assertfail(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    const struct tf__call *c = in->aux;
    const struct tf_ptx_launch *lp = w->run->l;
    TF__FOR_LANES(m, {
        const uint8_t *prm = w->prm + (size_t)l * w->prm_stride;
        uint64_t ma, fa, fna;
        uint32_t line;
        memcpy(&ma, prm + c->arg_off[0], 8);
        memcpy(&fa, prm + c->arg_off[1], 8);
        memcpy(&line, prm + c->arg_off[2], 4);
        memcpy(&fna, prm + c->arg_off[3], 8);
        char msg[512], file[512], fn[512];
        if (!read_str(w, ma, msg, sizeof(msg)))
            snprintf(msg, sizeof(msg), "?");
        if (!read_str(w, fa, file, sizeof(file)))
            snprintf(file, sizeof(file), "?");
        if (!read_str(w, fna, fn, sizeof(fn)))
            snprintf(fn, sizeof(fn), "?");
        uint32_t lin = w->tid0 + (uint32_t)l, bx = lp->block[0], by = lp->block[1];
        fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
                file, line, fn, w->run->ctaid[0], w->run->ctaid[1], w->run->ctaid[2], lin % bx,
                (lin / bx) % by, lin / (bx * by), msg);
    });
    return tf__fault(w, in, __builtin_ctz(m), TF_PTX_ASSERT, 0, "device-side assertion failed");
}
