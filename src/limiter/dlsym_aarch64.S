/* SPDX-License-Identifier: Apache-2.0
 *
 * dlsym entry of libtf_limiter.so (aarch64); see dlsym_x86_64.S. The link register is
 * restored before the tail branch, so the real dlsym sees our caller as its caller.
 */
    .text
    .globl dlsym
    .type dlsym, %function
dlsym:
    .cfi_startproc
    stp x29, x30, [sp, #-32]!
    .cfi_def_cfa_offset 32
    .cfi_offset 29, -32
    .cfi_offset 30, -24
    mov x29, sp
    stp x0, x1, [sp, #16]
    bl tf__dlsym_tail
    mov x16, x0
    ldp x0, x1, [sp, #16]
    ldp x29, x30, [sp], #32
    .cfi_def_cfa_offset 0
    cbz x16, 1f
    br x16
1:
    b tf__dlsym_c
    .cfi_endproc
    .size dlsym, .-dlsym

    .section .note.GNU-stack, "", %progbits
