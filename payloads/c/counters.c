/*
 * counters: the counter syscalls from C (docs/syscall-abi.md): an overflow handler every P
 * instructions, eight events multiplexed on fewer counters, and system mode. Reports what it
 * saw as key=value lines; tests/tests/c_payload.rs runs it on the emulated PMU, where the
 * counts are exact.
 */
#include "baremark.h"

#define USR (1ull << 16)
#define OS (1ull << 17)
#define INSTRUCTIONS_U (0xc0 | USR)
#define P 10007
#define N 25000

static volatile uint64_t seen, first_count, last_count;

/* Runs with the task's counters stopped; notify_return (baremark.c) restores every register. */
static void handler(uint64_t slot, uint64_t count, uint64_t rip, uint64_t periods)
{
	(void)slot;
	(void)rip;
	(void)periods;
	if (seen == 0)
		first_count = count;
	last_count = count;
	seen++;
}

/* n iterations of 4 instructions. */
static __attribute__((noinline)) void spin(uint64_t n)
{
	__asm__ volatile("1: nop\n nop\n dec %0\n jnz 1b" : "+r"(n));
}

/* Appends "key=value\n" at p. */
static char *put(char *p, const char *key, int64_t v)
{
	while (*key)
		*p++ = *key++;
	*p++ = '=';
	uint64_t u = v < 0 ? (uint64_t)-v : (uint64_t)v;
	if (v < 0)
		*p++ = '-';
	char digits[20];
	int n = 0;
	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (n)
		*p++ = digits[--n];
	*p++ = '\n';
	*p = 0;
	return p;
}

int64_t bm_main(void)
{
	static char text[1024];
	char *p = text;
	uint64_t ev = INSTRUCTIONS_U;
	uint64_t buf[3 + 3 * 8];

	/* Overflow notification: counted from the reset, the k-th is at exactly k * P. */
	p = put(p, "configure", bm_counters_configure(&ev, 1));
	p = put(p, "set_handler", bm_notify_set_handler(handler));
	p = put(p, "threshold", bm_notify_threshold(0, P));
	bm_syscall3(BM_NR_COUNTERS_RESET, 0, 0, 0);
	spin(N);
	bm_syscall3(BM_NR_COUNTERS_STOP, 0, 0, 0);
	bm_syscall3(BM_NR_COUNTERS_READ, (uint64_t)buf, sizeof(buf), 0);
	bm_notify_threshold(0, 0);
	bm_syscall3(BM_NR_COUNTERS_START, 0, 0, 0);
	p = put(p, "stopped", (int64_t)buf[3]);
	p = put(p, "notifications", (int64_t)seen);
	p = put(p, "first", (int64_t)first_count);
	p = put(p, "last", (int64_t)last_count);

	/* Eight instructions:u counters multiplexed over the same loop. */
	uint64_t eight[8];
	for (int i = 0; i < 8; i++)
		eight[i] = INSTRUCTIONS_U;
	p = put(p, "mux_configure", bm_counters_configure_multiplexed(eight, 8));
	/* 4M instructions: four turns of the default 1 ms (1M instructions under icount). */
	spin(40 * N);
	int64_t n = bm_counters_read_scaled(buf, sizeof(buf));
	p = put(p, "mux_n", n);
	if (n == 8) {
		/* {generation, enabled, n, [raw, enabled, running] x n} */
		uint64_t raw = buf[3], enabled = buf[4], running = buf[5];
		p = put(p, "mux_raw_0", (int64_t)raw);
		p = put(p, "mux_enabled", (int64_t)enabled);
		p = put(p, "mux_running_0", (int64_t)running);
		p = put(p, "mux_running_7", (int64_t)buf[3 + 3 * 7 + 2]);
	}

	/* System mode: only once the task's own counters are dropped. */
	p = put(p, "system_while_own", bm_system_configure(&ev, 1));
	bm_counters_configure(0, 0);
	int64_t g = bm_system_configure(&ev, 1);
	p = put(p, "system_configure", g);
	p = put(p, "system_read", bm_system_read(buf, sizeof(buf)));
	p = put(p, "system_generation", (int64_t)buf[0]);
	p = put(p, "system_release", bm_system_configure(0, 0));
	bm_report(text);
	return 0;
}
