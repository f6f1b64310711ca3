/* Random loads for checking tests/src/cachesim.rs against cachegrind
 * (tests/tests/cachesim_cachegrind.rs): a buffer of LINES 64-byte lines (LINES a power of two),
 * aligned to 4 MiB so that its lines fall in the same cache sets as the simulator's; then WARM
 * loads and MEASURED loads of the first word of line `(x >> 33) % LINES`, x a 64-bit LCG from
 * SEED (`cachesim::lcg_lines` draws the same). The LCG state stays in a register, so the only
 * memory accesses on the two loops' lines are those loads, and cachegrind counts each line's
 * loads and misses apart. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define A 6364136223846793005ULL
#define C 1442695040888963407ULL

__attribute__((noinline)) uint64_t loads(const uint64_t *buf, uint64_t lines, uint64_t seed,
                                         uint64_t warm, uint64_t measured, uint64_t *sum) {
    uint64_t x = seed, s = 0, mask = lines - 1;
    for (uint64_t i = 0; i < warm; i++) {
        x = x * A + C;
        s += buf[((x >> 33) & mask) * 8]; /* WARM */
    }
    for (uint64_t i = 0; i < measured; i++) {
        x = x * A + C;
        s += buf[((x >> 33) & mask) * 8]; /* MEASURED */
    }
    *sum = s;
    return x;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: loads LINES SEED WARM MEASURED\n");
        return 2;
    }
    uint64_t lines = strtoull(argv[1], 0, 10), seed = strtoull(argv[2], 0, 10);
    uint64_t warm = strtoull(argv[3], 0, 10), measured = strtoull(argv[4], 0, 10);
    if (lines == 0 || (lines & (lines - 1)) != 0) {
        fprintf(stderr, "loads: LINES must be a power of two\n");
        return 2;
    }
    uint64_t bytes = ((lines * 64 + (1 << 22) - 1) >> 22) << 22;
    uint64_t *buf = aligned_alloc(1 << 22, bytes);
    if (!buf) {
        fprintf(stderr, "loads: no memory\n");
        return 1;
    }
    for (uint64_t i = 0; i < lines * 8; i++)
        buf[i] = i;
    uint64_t sum = 0;
    loads(buf, lines, seed, warm, measured, &sum);
    printf("base=%llu sum=%llu\n", (unsigned long long)(uintptr_t)buf, (unsigned long long)sum);
    return 0;
}
