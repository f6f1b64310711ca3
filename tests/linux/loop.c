/*
 * loop: the known loop (known_loop.h) as a whole program without libc, for
 * `perf stat -e instructions:u,branches:u /bin/loop`.
 *
 * From its first user instruction to its last it executes exactly
 *   1 (mov of the count) + 1,000,000 x 10 (the loop) + 3 (mov, xor, syscall of exit)
 *   = 10,000,004 instructions, of which 1,000,000 (jnz) + 1 (syscall) = 1,000,001 branches,
 * which is what a PMU that counts exactly reports through perf (the kernel's own
 * instructions are excluded by `:u`). It prints nothing: the count is perf's.
 *
 * Built with `gcc -static -nostdlib -O2`: no C runtime runs before _start.
 */
#include "known_loop.h"

__asm__(".text\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n" KNOWN_LOOP_BODY "    mov $60, %eax\n" /* exit(0) */
        "    xor %edi, %edi\n"
        "    syscall\n");
