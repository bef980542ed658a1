/* SPDX-License-Identifier: Apache-2.0
 *
 * dlsym entry of libtf_limiter.so (x86-64). glibc's dlsym finds "the caller" from its return
 * address, which RTLD_NEXT depends on; so the routing decision is made in C
 * (tf__dlsym_tail), and the lookups that must keep the caller's identity are TAIL jumps into
 * the real dlsym -- it returns straight to our caller, exactly as if we were not here.
 * Everything else continues in tf__dlsym_c (also by a tail jump).
 */
    .text
    .globl dlsym
    .type dlsym, @function
dlsym:
    .cfi_startproc
    endbr64
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp                /* 16-byte alignment for the call */
    .cfi_adjust_cfa_offset 8
    call tf__dlsym_tail
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    test %rax, %rax
    jz 1f
    jmp *%rax                   /* the real dlsym, on behalf of our caller */
1:
    jmp tf__dlsym_c
    .cfi_endproc
    .size dlsym, .-dlsym

    .section .note.GNU-stack, "", @progbits
