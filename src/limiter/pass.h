/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to libtf_limiter.so: the entry and pass-through idioms every hook uses.
 *   TF_PASS_IF_NESTED(name, args...)  at the top of a hook: when the limiter cannot or must
 *       not act (re-entered from the real driver, or called during its own initialisation),
 *       call the real function and return its result.
 *   TF_CALL(name, args...)  calls the real function with the re-entrancy depth raised, so
 *       driver-internal calls to exported names pass straight through; a real library
 *       without the function yields CUDA_ERROR_NOT_SUPPORTED.
 */
#ifndef TF_LIMITER_PASS_H
#define TF_LIMITER_PASS_H

#include "limiter/limiter.h"

#define TF_REAL(name)                                                                              \
    (tf__L.real.name ? tf__L.real.name : (__typeof__(tf__L.real.name))tf__real_cuda_sym(#name))

#define TF_PASS_IF_NESTED(name, ...)                                                               \
    do {                                                                                           \
        if (tf__depth || !tf__ready()) {                                                           \
            __typeof__(tf__L.real.name) f_ = TF_REAL(name);                                        \
            return f_ ? f_(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED;                                \
        }                                                                                          \
    } while (0)

#define TF_CALL(rc, name, ...)                                                                     \
    do {                                                                                           \
        if (!tf__L.real.name) {                                                                    \
            (rc) = CUDA_ERROR_NOT_SUPPORTED;                                                       \
            break;                                                                                 \
        }                                                                                          \
        tf__depth++;                                                                               \
        (rc) = tf__L.real.name(__VA_ARGS__);                                                       \
        tf__depth--;                                                                               \
    } while (0)

#endif
