/*
 * baremark.h: the harness ABI for payloads written in freestanding C (no libc).
 *
 * The same contract as the Rust SDK (payloads/sdk): syscall numbers and semantics from
 * docs/syscall-abi.md, the counter page from kernel/src/task/user_page.rs (layout version 1),
 * the benchmark loop from docs/harness.md. Build with gcc as a static, non-PIE ELF64 linked at
 * 0x400000 and with -mgeneral-regs-only (see the Makefile): the kernel does not enable SSE for
 * ring 3.
 */
#ifndef BAREMARK_H
#define BAREMARK_H

#include <stddef.h>
#include <stdint.h>

/* Syscall numbers (docs/syscall-abi.md). */
enum {
	BM_NR_EXIT = 0,
	BM_NR_WRITE = 1,
	BM_NR_COUNTERS_CONFIGURE = 2,
	BM_NR_COUNTERS_START = 3,
	BM_NR_COUNTERS_STOP = 4,
	BM_NR_COUNTERS_RESET = 5,
	BM_NR_COUNTERS_READ = 6,
	BM_NR_REPORT = 10,
	BM_NR_USER_PAGE = 12,
	BM_NR_BENCH_PLAN = 14,
	BM_NR_BENCH_BEGIN = 15,
	BM_NR_BENCH_GROUP = 16,
	BM_NR_BENCH_SAMPLES = 17,
	BM_NR_BENCH_END = 18,
	BM_NR_COUNTERS_NOTIFY = 20,
	BM_NR_COUNTERS_THRESHOLD = 21,
	BM_NR_NOTIFY_RETURN = 22,
	BM_NR_COUNTERS_READ_SCALED = 23,
	BM_NR_SYSTEM_CONFIGURE = 24,
	BM_NR_SYSTEM_READ = 25,
	BM_NR_THREAD_START = 26,
	BM_NR_THREAD_JOIN = 27,
	BM_NR_CPUS = 28,
};

/* counters_configure flag: more GP events than GP counters take turns (time-multiplexed). */
enum { BM_CONFIGURE_MULTIPLEX = 1 };

/* Negative results are errors. */
enum {
	BM_EINVAL = -1,
	BM_EFAULT = -2,
	BM_ENOSYS = -3,
	BM_ENOENT = -4,
	BM_EBUSY = -5,
	BM_ENOSPC = -6,
	BM_EABORTED = -7,
	BM_ECOUNTERS = -8,
	BM_ENOMEM = -9,
	BM_ELIMIT = -10,
	BM_ENODEV = -11,
	BM_EPERM = -12,
};

/* The counter page (kernel/src/task/user_page.rs). */
enum {
	BM_PAGE_MAGIC = 0x43564d42, /* "BMVC" little-endian */
	BM_PAGE_VERSION = 1,
	BM_PAGE_MAGIC_OFFSET = 0,
	BM_PAGE_VERSION_OFFSET = 4,
	BM_PAGE_SEQ_OFFSET = 8,
	BM_PAGE_NR_SLOTS_OFFSET = 24,
	BM_PAGE_TSC_OFFSET = 32,
	BM_PAGE_SLOTS_OFFSET = 64,
	BM_PAGE_SLOT_SIZE = 32,
	BM_PAGE_MAX_SLOTS = 16,
	BM_PAGE_INTERRUPTS_OFFSET = 576,
	BM_SLOT_INDEX = 0,
	BM_SLOT_WIDTH = 4,
	BM_SLOT_BASE = 8,
	BM_SLOT_START = 16,
};

/* Harness limits: repetitions per kind, words per sample (TSC, interrupts, 16 slots). */
enum { BM_MAX_REPS = 1000, BM_MAX_STRIDE = 2 + BM_PAGE_MAX_SLOTS };

/* bench_samples kinds and the plan's overhead modes (docs/harness.md). */
enum { BM_KIND_REGION = 0, BM_KIND_EMPTY = 1, BM_KIND_REGION2X = 2 };
enum { BM_OVERHEAD_NONE = 0, BM_OVERHEAD_EMPTY = 1, BM_OVERHEAD_DIFF = 2 };

/* SYSCALL clobbers RCX and R11; "memory" because the kernel reads and writes our buffers. */
static inline int64_t bm_syscall3(uint64_t nr, uint64_t a, uint64_t b, uint64_t c)
{
	int64_t ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* counters_configure: `n` event words (docs/syscall-abi.md); the new generation or an error. */
static inline int64_t bm_counters_configure(const uint64_t *events, uint64_t n)
{
	return bm_syscall3(BM_NR_COUNTERS_CONFIGURE, (uint64_t)events, n, 0);
}

/* System mode: `n` events on the whole machine (n = 0: given back); the generation or an error. */
static inline int64_t bm_system_configure(const uint64_t *events, uint64_t n)
{
	return bm_syscall3(BM_NR_SYSTEM_CONFIGURE, (uint64_t)events, n, 0);
}

/* buf = {generation, tsc, n, counts[n]}; `len` in bytes. Returns n, or BM_ENOENT without them. */
static inline int64_t bm_system_read(uint64_t *buf, uint64_t len)
{
	return bm_syscall3(BM_NR_SYSTEM_READ, (uint64_t)buf, len, 0);
}

/* system_read flag: the per-CPU form. */
#define BM_SYSTEM_READ_PER_CPU 1ull

/* buf = {generation, tsc, n, m, total[n], m x {cpu, flags, counts[n]}} (flags bit 0: the CPU
 * did not answer, its counts are its last read's); `len` in bytes. Returns n, or BM_ENOENT. */
static inline int64_t bm_system_read_cpus(uint64_t *buf, uint64_t len)
{
	return bm_syscall3(BM_NR_SYSTEM_READ, (uint64_t)buf, len, BM_SYSTEM_READ_PER_CPU);
}

/* The same, time-multiplexed when there are more GP events than GP counters. */
static inline int64_t bm_counters_configure_multiplexed(const uint64_t *events, uint64_t n)
{
	return bm_syscall3(BM_NR_COUNTERS_CONFIGURE, (uint64_t)events, n, BM_CONFIGURE_MULTIPLEX);
}

/*
 * counters_read_scaled: buf = {generation, enabled, n, [raw, enabled, running] x n}; `len` in
 * bytes. Returns n or an error. The estimate of event i is raw * enabled / running.
 */
static inline int64_t bm_counters_read_scaled(uint64_t *buf, uint64_t len)
{
	return bm_syscall3(BM_NR_COUNTERS_READ_SCALED, (uint64_t)buf, len, 0);
}

/*
 * Overflow notification (docs/syscall-abi.md, "Overflow notification"). A handler gets the
 * slot, its 64-bit count at the threshold, the interrupted RIP and the periods it stands for,
 * runs with the task's counters stopped, and returns normally: baremark.c's entry
 * (bm_notify_entry) then calls notify_return, which restores every register of the
 * interrupted code. Without SSE (-mgeneral-regs-only) the handler touches no vector register.
 */
typedef void (*bm_notify_handler)(uint64_t slot, uint64_t count, uint64_t rip, uint64_t periods);
void bm_notify_entry(void);

/* Registers `handler` (NULL: removes it and every threshold that notifies). */
static inline int64_t bm_notify_set_handler(bm_notify_handler handler)
{
	return bm_syscall3(BM_NR_COUNTERS_NOTIFY, handler ? (uint64_t)bm_notify_entry : 0,
			   (uint64_t)handler, 0);
}

/* Notifies the handler every `period` events of slot `slot`, from now (0: no more). */
static inline int64_t bm_notify_threshold(uint64_t slot, uint64_t period)
{
	return bm_syscall3(BM_NR_COUNTERS_THRESHOLD, slot, period, 0);
}

static inline __attribute__((noreturn)) void bm_exit(int64_t code)
{
	bm_syscall3(BM_NR_EXIT, (uint64_t)code, 0, 0);
	for (;;) /* exit never returns */
		__asm__ volatile("pause");
}

/* Threads (docs/syscall-abi.md "Threads"): `fn(arg)` on CPU `cpu` in this task's memory. */
typedef int64_t (*bm_thread_fn)(uint64_t arg);

/* The thread's first code: RDI = the function, RSI = its argument; its result is the exit code. */
static __attribute__((noreturn, used)) void bm_thread_trampoline(bm_thread_fn fn, uint64_t arg)
{
	bm_exit(fn(arg));
}

/* thread_start: the thread's id (for bm_thread_join), or an error (negative). */
static inline int64_t bm_thread_start(uint64_t cpu, bm_thread_fn fn, uint64_t arg)
{
	int64_t ret;
	register uint64_t r10 __asm__("r10") = arg;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((uint64_t)BM_NR_THREAD_START), "D"(cpu),
			   "S"((uint64_t)(uintptr_t)bm_thread_trampoline), "d"((uint64_t)(uintptr_t)fn),
			   "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* thread_join: the thread's exit code, BM_EABORTED (-7) or BM_ENOENT (-4). */
static inline int64_t bm_thread_join(uint64_t id)
{
	return bm_syscall3(BM_NR_THREAD_JOIN, id, 0, 0);
}

/* cpus: buf receives {current, n, entries[n]} (entry: CPU index in bits 0-31, core type
 * CPUID.1AH:EAX[31:24] in bits 32-39); returns n, or BM_ENOSPC (-6) if len is too small. */
static inline int64_t bm_cpus(uint64_t *buf, uint64_t len)
{
	return bm_syscall3(BM_NR_CPUS, (uint64_t)(uintptr_t)buf, len, 0);
}

static inline size_t bm_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* Text to the console (task_output records). */
static inline int64_t bm_write(const char *text)
{
	return bm_syscall3(BM_NR_WRITE, (uintptr_t)text, bm_strlen(text), 0);
}

/* key=value lines (a report record; at most 1024 bytes). */
static inline int64_t bm_report(const char *lines)
{
	return bm_syscall3(BM_NR_REPORT, (uintptr_t)lines, bm_strlen(lines), 0);
}

/* The counter page's address (0x7fff_c000_0000). */
static inline uint64_t bm_user_page(void)
{
	return (uint64_t)bm_syscall3(BM_NR_USER_PAGE, 0, 0, 0);
}

/* {version, warmup, reps, overhead, groups} into plan[5]. */
static inline int64_t bm_bench_plan(uint64_t plan[5])
{
	return bm_syscall3(BM_NR_BENCH_PLAN, (uintptr_t)plan, 5 * sizeof(uint64_t), 0);
}

static inline int64_t bm_bench_begin(const char *name, uint64_t iterations)
{
	return bm_syscall3(BM_NR_BENCH_BEGIN, (uintptr_t)name, bm_strlen(name), iterations);
}

/* Configures counter group g; returns its number of counter slots. */
static inline int64_t bm_bench_group(uint64_t g)
{
	return bm_syscall3(BM_NR_BENCH_GROUP, g, 0, 0);
}

/* reps rows of (2 + slots) u64: TSC delta, interrupts, one delta per slot. */
static inline int64_t bm_bench_samples(const uint64_t *rows, uint64_t reps, uint64_t kind)
{
	return bm_syscall3(BM_NR_BENCH_SAMPLES, (uintptr_t)rows, reps, kind);
}

static inline int64_t bm_bench_end(void)
{
	return bm_syscall3(BM_NR_BENCH_END, 0, 0, 0);
}

/* Counter-page reads. Volatile: the kernel rewrites the page between our loads. */
static inline uint32_t bm_load32(uint64_t page, size_t off)
{
	return *(const volatile uint32_t *)(uintptr_t)(page + off);
}

static inline uint64_t bm_load64(uint64_t page, size_t off)
{
	return *(const volatile uint64_t *)(uintptr_t)(page + off);
}

static inline uint64_t bm_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* The kernel emulates RDPMC when CR4.PCE is clear, so this works on every backend. */
static inline uint64_t bm_rdpmc(uint32_t index)
{
	uint32_t lo, hi;
	__asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index));
	return ((uint64_t)hi << 32) | lo;
}

/* Events between two raw readings of a width-bit counter (the kernel's vcounter::widen). */
static inline uint64_t bm_widen(uint64_t prev, uint64_t now, uint32_t width)
{
	if (width == 0)
		return 0;
	unsigned shift = 64 - (width > 64 ? 64 : width);
	return ((now << shift) - (prev << shift)) >> shift;
}

/* A slot's value: base, plus the events since the kernel's last update while index != 0. */
static inline uint64_t bm_slot_value(uint64_t page, size_t slot, int is_tsc)
{
	uint32_t index = bm_load32(page, slot + BM_SLOT_INDEX);
	uint64_t base = bm_load64(page, slot + BM_SLOT_BASE);
	if (index == 0)
		return base;
	uint32_t width = bm_load32(page, slot + BM_SLOT_WIDTH);
	uint64_t start = bm_load64(page, slot + BM_SLOT_START);
	uint64_t raw = is_tsc ? bm_rdtsc() : bm_rdpmc(index - 1);
	return base + bm_widen(start, raw, width);
}

/*
 * One consistent snapshot (seqlock read): out[0] the virtual TSC, out[1] the interrupts taken,
 * out[2..] the counter slots. len must be 2 + nr_slots, else BM_EINVAL.
 */
static inline __attribute__((always_inline)) int64_t bm_snapshot(uint64_t page, uint64_t *out,
								    size_t len)
{
	for (;;) {
		uint64_t seq = bm_load64(page, BM_PAGE_SEQ_OFFSET);
		if (seq & 1) { /* only an observer on another CPU can see an update in progress */
			__asm__ volatile("pause");
			continue;
		}
		__asm__ volatile("" ::: "memory");
		uint32_t n = bm_load32(page, BM_PAGE_NR_SLOTS_OFFSET);
		if (n > BM_PAGE_MAX_SLOTS || len != n + 2)
			return BM_EINVAL;
		out[0] = bm_slot_value(page, BM_PAGE_TSC_OFFSET, 1);
		out[1] = bm_load64(page, BM_PAGE_INTERRUPTS_OFFSET);
		for (uint32_t i = 0; i < n; i++)
			out[2 + i] =
				bm_slot_value(page, BM_PAGE_SLOTS_OFFSET + i * BM_PAGE_SLOT_SIZE, 0);
		__asm__ volatile("" ::: "memory");
		if (bm_load64(page, BM_PAGE_SEQ_OFFSET) == seq)
			return 0;
	}
}

/* The measured code: n iterations; arg is the benchmark's own (e.g. a pointer). */
typedef void (*bm_body)(uint64_t n, uint64_t arg);

struct bm_bench {
	const char *name;    /* 1-64 bytes of [A-Za-z0-9_.-] */
	uint64_t iterations; /* per measured region, >= 1 */
	bm_body body;
	uint64_t arg;
};

/* The empty region: a function that is only `ret` (baremark.c). */
void bm_empty_body(uint64_t n, uint64_t arg);

/*
 * Runs the benchmark as the kernel's plan says and hands every sample to the kernel, which
 * reports the statistics (baremark::bench::run of the Rust SDK). 0, or the first error.
 */
int64_t bm_bench_run(const struct bm_bench *b);

/* The payload's entry: _start (baremark.c) exits with its return value. */
int64_t bm_main(void);

#endif
