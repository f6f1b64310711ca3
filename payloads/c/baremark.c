/*
 * baremark.c: entry point, the empty body and the benchmark loop of docs/harness.md, for C
 * payloads. Mirrors baremark_sdk::bench::run (payloads/sdk/src/bench.rs).
 */
#include "baremark.h"

/*
 * The kernel enters with RSP = 0x7fff_8000_0000 (16-byte aligned) and every other register 0;
 * the call leaves RSP 8 mod 16 at bm_main's entry, as the SysV ABI wants.
 */
/*
 * The overflow handler's entry (bm_notify_set_handler): the kernel enters with the handler's
 * arguments in RDI, RSI, RDX, RCX, the handler in R8 and RSP 16-byte aligned.
 */
__asm__(".pushsection .text.bm_notify_entry, \"ax\", @progbits\n"
	".global bm_notify_entry\n"
	".type bm_notify_entry, @function\n"
	"bm_notify_entry:\n"
	"    call *%r8\n"
	"    mov $22, %eax\n" /* BM_NR_NOTIFY_RETURN */
	"    syscall\n"
	"    ud2\n"
	".popsection\n");

__asm__(".pushsection .text._start, \"ax\", @progbits\n"
	".global _start\n"
	".type _start, @function\n"
	"_start:\n"
	"    xor %ebp, %ebp\n"
	"    call bm_main\n"
	"    mov %rax, %rdi\n"
	"    xor %eax, %eax\n" /* BM_NR_EXIT */
	"    syscall\n"
	"    ud2\n"
	".size _start, . - _start\n"
	".popsection\n");

/* Only `ret`: called through the same path as the body, so region - empty is the body alone. */
__asm__(".pushsection .text.bm_empty_body, \"ax\", @progbits\n"
	".global bm_empty_body\n"
	".type bm_empty_body, @function\n"
	"bm_empty_body:\n"
	"    ret\n"
	".size bm_empty_body, . - bm_empty_body\n"
	".popsection\n");

/* GCC may call these even in freestanding code (struct copies, zeroing). */
void *memset(void *d, int c, size_t n)
{
	unsigned char *p = d;
	while (n--)
		*p++ = (unsigned char)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *p = d;
	const unsigned char *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *p = d;
	const unsigned char *q = s;
	if (p < q) {
		while (n--)
			*p++ = *q++;
	} else {
		while (n--)
			p[n] = q[n];
	}
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *p = a, *q = b;
	for (; n; n--, p++, q++)
		if (*p != *q)
			return *p - *q;
	return 0;
}

/* The samples of one kind; static because there is no allocator. */
static uint64_t samples[BM_MAX_REPS * BM_MAX_STRIDE];

/*
 * warmup + reps repetitions of body(n, arg) back to back, deltas of the measured ones into out.
 * Not inlined or cloned: every kind must run this same code, so that the empty region measures
 * exactly the path around the body.
 */
static __attribute__((noinline, noclone)) int64_t
bm_repeat(uint64_t page, bm_body body, uint64_t n, uint64_t arg, uint64_t warmup, uint64_t reps,
	  size_t stride, uint64_t *out)
{
	uint64_t before[BM_MAX_STRIDE], after[BM_MAX_STRIDE];
	for (uint64_t r = 0; r < warmup + reps; r++) {
		int64_t e = bm_snapshot(page, before, stride);
		if (e)
			return e;
		body(n, arg);
		e = bm_snapshot(page, after, stride);
		if (e)
			return e;
		if (r >= warmup) {
			uint64_t *row = out + (r - warmup) * stride;
			for (size_t i = 0; i < stride; i++)
				row[i] = after[i] - before[i];
		}
	}
	return 0;
}

int64_t bm_bench_run(const struct bm_bench *b)
{
	uint64_t page = bm_user_page();
	if ((int64_t)page <= 0 || bm_load32(page, BM_PAGE_MAGIC_OFFSET) != BM_PAGE_MAGIC ||
	    bm_load32(page, BM_PAGE_VERSION_OFFSET) != BM_PAGE_VERSION)
		return BM_ENOENT;

	uint64_t plan[5];
	int64_t e = bm_bench_plan(plan);
	if (e < 0)
		return e;
	uint64_t warmup = plan[1], reps = plan[2], overhead = plan[3], groups = plan[4];
	if (plan[0] != 1 || reps == 0 || reps > BM_MAX_REPS || overhead > BM_OVERHEAD_DIFF ||
	    groups == 0 || b->iterations == 0)
		return BM_EINVAL;

	/* The kinds each overhead mode measures, in the kernel's order. */
	static const uint64_t kinds[3][2] = {
		[BM_OVERHEAD_NONE] = {BM_KIND_REGION},
		[BM_OVERHEAD_EMPTY] = {BM_KIND_REGION, BM_KIND_EMPTY},
		[BM_OVERHEAD_DIFF] = {BM_KIND_REGION, BM_KIND_REGION2X},
	};
	size_t nkinds = overhead == BM_OVERHEAD_NONE ? 1 : 2;

	e = bm_bench_begin(b->name, b->iterations);
	if (e < 0)
		return e;
	for (uint64_t g = 0; g < groups; g++) {
		int64_t slots = bm_bench_group(g);
		if (slots < 0)
			return slots;
		size_t stride = 2 + (size_t)slots;
		if (stride > BM_MAX_STRIDE)
			return BM_EINVAL;
		for (size_t k = 0; k < nkinds; k++) {
			uint64_t kind = kinds[overhead][k];
			bm_body body = kind == BM_KIND_EMPTY ? bm_empty_body : b->body;
			uint64_t n = kind == BM_KIND_REGION2X ? 2 * b->iterations : b->iterations;
			e = bm_repeat(page, body, n, b->arg, warmup, reps, stride, samples);
			if (e < 0)
				return e;
			e = bm_bench_samples(samples, reps, kind);
			if (e < 0)
				return e;
		}
	}
	e = bm_bench_end();
	return e < 0 ? e : 0;
}
