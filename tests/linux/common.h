/*
 * Helpers shared by the Linux guest's self-monitoring programs (selfmon.c, overflow.c).
 *
 * Every program prints its results as one line per measurement:
 *   result program=NAME method=METHOD key=value key=value ...
 * (docs/linux-guest.md lists the keys), and `error program=NAME ...: reason` when a step
 * fails, so that a reader of the serial log never takes a missing value for a zero.
 */
#ifndef COMMON_H
#define COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "known_loop.h"

/*
 * known_loop(): the known loop as a function, 1 + 10,000,000 + 1 (ret) = 10,000,002
 * instructions; empty_fn(): just the ret, 1 instruction. A region that calls either through
 * the same call site differs by exactly 10,000,001 instructions, whatever the compiler does
 * around the call: that difference is what the programs report as `loop_net`.
 */
__asm__(".text\n"
        ".globl known_loop\n"
        ".type known_loop, @function\n"
        "known_loop:\n" KNOWN_LOOP_BODY "    ret\n"
        ".size known_loop, .-known_loop\n"
        ".globl empty_fn\n"
        ".type empty_fn, @function\n"
        "empty_fn:\n"
        "    ret\n"
        ".size empty_fn, .-empty_fn\n");
void known_loop(void);
void empty_fn(void);
#define KNOWN_LOOP_NET 10000001ULL

/* Called through a volatile pointer so the call site is the same for both functions. */
__attribute__((unused)) static void (*volatile region_fn)(void);

/*
 * The TSC, after earlier instructions have completed (lfence). Under QEMU's `-icount
 * shift=0` the TSC advances one tick per instruction executed, user and kernel alike, so a
 * TSC difference there counts every instruction of the region, interrupts included.
 */
static inline uint64_t tsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rdpmc(uint32_t counter)
{
    uint32_t lo, hi;
    __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter) : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
                           unsigned long flags)
{
    return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* instructions:u of this process on any CPU, created disabled; the caller sets the rest. */
static void instructions_u(struct perf_event_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->size = sizeof(*attr);
    attr->type = PERF_TYPE_HARDWARE;
    attr->config = PERF_COUNT_HW_INSTRUCTIONS;
    attr->exclude_kernel = 1;
    attr->exclude_hv = 1;
    attr->disabled = 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts `v` in place and prints ` NAME_min=.. NAME_median=.. NAME_max=..`. */
__attribute__((unused)) static void print_stats(const char *name, uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    printf(" %s_min=%llu %s_median=%llu %s_max=%llu", name, (unsigned long long)v[0], name,
           (unsigned long long)v[n / 2], name, (unsigned long long)v[n - 1]);
}

#endif
