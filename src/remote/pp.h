/* SPDX-License-Identifier: Apache-2.0
 *
 * Preprocessor helpers for the forwarded-call list (calls.def): iterate a macro over the
 * arguments of a parenthesised list, with each argument's position. Private to src/remote.
 *
 *   TF_PP_EACH(M, a, b, c)   expands to M(0, a) M(1, b) M(2, c)
 *
 * Lists of 1..10 arguments. An argument written as a tuple "(KIND, TYPE, NAME, SUB)" is taken
 * apart by TF_PP_ARG(OP, i, tuple), which expands to OP##_##KIND(i, TYPE, NAME, SUB), so one
 * pass over a parameter list can do something different for each kind of parameter.
 */
#ifndef TF_REMOTE_PP_H
#define TF_REMOTE_PP_H

#define TF_PP_CAT(a, b) TF_PP_CAT_(a, b)
#define TF_PP_CAT_(a, b) a##b
#define TF_PP_NARG(...) TF_PP_NARG_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TF_PP_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, N, ...) N
#define TF_PP_UNPAREN(...) __VA_ARGS__

#define TF_PP_EACH(M, ...) TF_PP_CAT(TF_PP_EACH_, TF_PP_NARG(__VA_ARGS__))(M, __VA_ARGS__)
#define TF_PP_EACH_1(M, a) M(0, a)
#define TF_PP_EACH_2(M, a, b) M(0, a) M(1, b)
#define TF_PP_EACH_3(M, a, b, c) M(0, a) M(1, b) M(2, c)
#define TF_PP_EACH_4(M, a, b, c, d) M(0, a) M(1, b) M(2, c) M(3, d)
#define TF_PP_EACH_5(M, a, b, c, d, e) TF_PP_EACH_4(M, a, b, c, d) M(4, e)
#define TF_PP_EACH_6(M, a, b, c, d, e, f) TF_PP_EACH_5(M, a, b, c, d, e) M(5, f)
#define TF_PP_EACH_7(M, a, b, c, d, e, f, g) TF_PP_EACH_6(M, a, b, c, d, e, f) M(6, g)
#define TF_PP_EACH_8(M, a, b, c, d, e, f, g, h) TF_PP_EACH_7(M, a, b, c, d, e, f, g) M(7, h)
#define TF_PP_EACH_9(M, a, b, c, d, e, f, g, h, i) TF_PP_EACH_8(M, a, b, c, d, e, f, g, h) M(8, i)
#define TF_PP_EACH_10(M, a, b, c, d, e, f, g, h, i, j)                                             \
    TF_PP_EACH_9(M, a, b, c, d, e, f, g, h, i) M(9, j)

/* OP##_##KIND(i, TYPE, NAME, SUB) for the tuple (KIND, TYPE, NAME, SUB). */
#define TF_PP_ARG(OP, i, t) TF_PP_ARG_(OP, i, TF_PP_UNPAREN t)
#define TF_PP_ARG_(OP, i, ...) TF_PP_ARG__(OP, i, __VA_ARGS__)
#define TF_PP_ARG__(OP, i, kind, type, name, sub) OP##_##kind(i, type, name, sub)

#endif
