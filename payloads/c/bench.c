/*
 * imul-latency: a dependent chain of 4 64-bit multiplies per iteration, the latency of an
 * integer multiply, measured under the baremark harness from C.
 */
#include "baremark.h"

#define IMULS 4
/* Literals, because the report below is built from them with STR(). */
#define INSTRUCTIONS_PER_ITERATION 6
_Static_assert(INSTRUCTIONS_PER_ITERATION == IMULS + 2, "the imuls, dec and jnz");
#define ITERATIONS 1000

/*
 * Naked, so the function is the loop and `ret` and nothing else: under -icount shift=0,
 * region - empty is then exactly ITERATIONS * INSTRUCTIONS_PER_ITERATION. Aligned by the
 * attribute, not by a .p2align inside, whose padding nops would run. Every imul waits for the
 * previous one's RAX; RSI (arg) is the multiplier.
 */
#define UNUSED __attribute__((unused))
__attribute__((naked, noinline, aligned(64))) static void imul_chain(UNUSED uint64_t n,
								     UNUSED uint64_t arg)
{
	__asm__("1:  imul %rsi, %rax\n"
		"    imul %rsi, %rax\n"
		"    imul %rsi, %rax\n"
		"    imul %rsi, %rax\n"
		"    dec %rdi\n"
		"    jnz 1b\n"
		"    ret\n");
}

#define STR_(x) #x
#define STR(x) STR_(x)

int64_t bm_main(void)
{
	/* The expected shape, once: the report record the tests and people compare with. */
	bm_report("bench=imul-latency\n"
		  "iterations=" STR(ITERATIONS) "\n"
		  "imuls_per_iteration=" STR(IMULS) "\n"
		  "instructions_per_iteration=" STR(INSTRUCTIONS_PER_ITERATION) "\n"
		  "expect=latency: about 3 cycles per imul, 12 per iteration on current cores; "
		  "under icount exactly " STR(INSTRUCTIONS_PER_ITERATION) " per iteration");
	struct bm_bench b = {
		.name = "imul-latency",
		.iterations = ITERATIONS,
		.body = imul_chain,
		.arg = 3,
	};
	int64_t e = bm_bench_run(&b);
	if (e < 0) {
		bm_report("error=bm_bench_run failed (see the harness_error record)");
		return 1;
	}
	return 0;
}
