/*
 * The known loop the Linux guest's programs measure, shared by loop.c (which runs it alone,
 * libc-free, for `perf stat`) and the self-monitoring programs (which call it as a function).
 *
 * KNOWN_LOOP_BODY is 1 + 1,000,000 x 10 instructions: a `mov` of the count, then 1,000,000
 * iterations of 8 ALU instructions, a `dec` and a taken-or-not `jnz` (1,000,000 branches).
 * It is written in assembly so that no compiler changes the count; it uses only registers
 * the System V ABI lets a function clobber (eax, ecx, edx, esi, edi, r8d-r11d).
 */
#ifndef KNOWN_LOOP_H
#define KNOWN_LOOP_H

#define KNOWN_LOOP_ITERATIONS 1000000
#define KNOWN_LOOP_INSTRUCTIONS_PER_ITERATION 10

#define KNOWN_LOOP_BODY                                                                        \
    "    mov $1000000, %ecx\n"                                                                 \
    "1:  add $1, %eax\n"                                                                       \
    "    add $1, %edx\n"                                                                       \
    "    xor %esi, %esi\n"                                                                     \
    "    add %eax, %edi\n"                                                                     \
    "    add $1, %r8d\n"                                                                       \
    "    add $1, %r9d\n"                                                                       \
    "    xor %r10d, %r10d\n"                                                                   \
    "    add %r8d, %r11d\n"                                                                    \
    "    dec %ecx\n"                                                                           \
    "    jnz 1b\n"

#endif
