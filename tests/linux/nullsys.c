/*
 * nullsys: the null system call on Linux, getppid(2), with four counters configured and
 * enabled (instructions:u, branches:u, cycles:u, instructions:u again (the emulated models count no branch-misses), as baremark's figure is taken
 * with four): a loop of ITER calls in assembly (`mov $SYS_getppid, %eax; syscall; dec; jnz`),
 * counted by instructions:u (read(2) before and after) and timed with lfence; rdtsc around it.
 *
 * It prints one line (medians of REPS loops):
 *   result program=nullsys user_per_call=.. tsc_per_call=..
 * where user_per_call is the user-mode instructions per iteration minus the loop's dec and jnz
 * (so `mov` + `syscall`, what baremark's task-seen figure counts), and tsc_per_call the TSC
 * ticks per iteration minus the same two: under -icount shift=0 the whole round trip in
 * instructions, kernel included.
 */
#include "common.h" /* first: it defines _GNU_SOURCE */

#define ITER 1000
#define REPS 11

static void getppid_loop(uint64_t n)
{
    __asm__ volatile("1: mov %[nr], %%eax\n\t"
                     "syscall\n\t"
                     "dec %[n]\n\t"
                     "jnz 1b"
                     : [n] "+r"(n)
                     : [nr] "i"(SYS_getppid)
                     : "rax", "rcx", "r11", "memory");
}

int main(void)
{
    static const uint64_t configs[4] = {PERF_COUNT_HW_INSTRUCTIONS,
                                        PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
                                        PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS};
    int fds[4];
    for (int k = 0; k < 4; k++) {
        struct perf_event_attr attr;
        instructions_u(&attr);
        attr.config = configs[k];
        attr.disabled = k == 0;
        fds[k] = perf_event_open(&attr, 0, -1, k == 0 ? -1 : fds[0], 0);
        if (fds[k] < 0) {
            printf("error program=nullsys: perf_event_open #%d: %s\n", k, strerror(errno));
            return 1;
        }
    }
    ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    uint64_t user[REPS], ticks[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t a = 0, b = 0;
        if (read(fds[0], &a, sizeof(a)) != sizeof(a)) {
            printf("error program=nullsys: read: %s\n", strerror(errno));
            return 1;
        }
        getppid_loop(ITER);
        if (read(fds[0], &b, sizeof(b)) != sizeof(b)) {
            printf("error program=nullsys: read: %s\n", strerror(errno));
            return 1;
        }
        user[r] = b - a;
        uint64_t t0 = tsc();
        getppid_loop(ITER);
        ticks[r] = tsc() - t0;
    }
    qsort(user, REPS, sizeof(uint64_t), cmp_u64);
    qsort(ticks, REPS, sizeof(uint64_t), cmp_u64);
    printf("result program=nullsys calls=%d user_per_call=%llu tsc_per_call=%llu\n", ITER,
           (unsigned long long)(user[REPS / 2] / ITER - 2),
           (unsigned long long)(ticks[REPS / 2] / ITER - 2));
    return 0;
}
