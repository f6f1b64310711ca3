/*
 * region METHOD N: the empty measured region of a self-monitoring process with N (1..4)
 * counters in one group (instructions:u, branches:u, cycles:u and instructions:u again, in that order: the emulated
 * models count no branch-misses and AMD has no ref-cycles),
 * the Linux counterpart of baremark's empty harness region per counter window:
 *   ioctl  PERF_EVENT_IOC_ENABLE then PERF_EVENT_IOC_DISABLE on the group (PERF_IOC_FLAG_GROUP)
 *          around nothing, the counts read afterwards with read(2) of each event: what each
 *          counter saw of the window (the user side after enable returned, up to disable);
 *   mmap   the group stays enabled; the window is each counter read before and after nothing
 *          by the documented mmap seqlock reader (counter 0 first): a counter's difference is
 *          the reads that happen inside its window.
 *
 * It prints one line (medians of REPS windows):
 *   result program=region method=M counters=N count_0=.. [count_1=.. ...] tsc=..
 * where count_K is what counter K saw of the empty window and tsc the TSC ticks (lfence;
 * rdtsc) around the whole window (under -icount shift=0: every instruction, kernel included).
 */
#include "common.h" /* first: it defines _GNU_SOURCE */

#include <sys/mman.h>

#define REPS 101
#define MAX_N 4

static const uint64_t configs[MAX_N] = {PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
                                        PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS};
static int fds[MAX_N];
static struct perf_event_mmap_page *pages[MAX_N];

static uint64_t read_mmap(struct perf_event_mmap_page *page)
{
    uint32_t seq, index;
    uint64_t count;
    do {
        seq = page->lock;
        __asm__ volatile("" ::: "memory");
        index = page->index;
        count = page->offset;
        if (page->cap_user_rdpmc && index) {
            int64_t pmc = (int64_t)rdpmc(index - 1);
            unsigned shift = 64 - page->pmc_width;
            count += (uint64_t)((pmc << shift) >> shift);
        }
        __asm__ volatile("" ::: "memory");
    } while (page->lock != seq);
    return count;
}

static uint64_t read_fd(int fd)
{
    uint64_t v = 0;
    if (read(fd, &v, sizeof(v)) != sizeof(v)) {
        printf("error program=region: read: %s\n", strerror(errno));
        exit(1);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    int use_mmap = !strcmp(name, "mmap");
    if ((!use_mmap && strcmp(name, "ioctl")) || n < 1 || n > MAX_N) {
        printf("error program=region: usage: region ioctl|mmap 1..%d (got `%s` `%s`)\n", MAX_N,
               name, argc > 2 ? argv[2] : "");
        return 2;
    }
    for (int k = 0; k < n; k++) {
        struct perf_event_attr attr;
        instructions_u(&attr);
        attr.config = configs[k];
        attr.disabled = k == 0; /* the group starts with its leader */
        fds[k] = perf_event_open(&attr, 0, -1, k == 0 ? -1 : fds[0], 0);
        if (fds[k] < 0) {
            printf("error program=region method=%s counters=%d: perf_event_open #%d: %s\n", name,
                   n, k, strerror(errno));
            return 1;
        }
        if (use_mmap) {
            pages[k] = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fds[k], 0);
            if (pages[k] == MAP_FAILED) {
                printf("error program=region method=mmap: mmap: %s\n", strerror(errno));
                return 1;
            }
        }
    }
    static uint64_t counts[MAX_N][REPS], ticks[REPS];
    if (use_mmap) {
        ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
        if (!pages[0]->cap_user_rdpmc || pages[0]->index == 0) {
            printf("error program=region method=mmap: no user RDPMC\n");
            return 1;
        }
    }
    for (int r = 0; r < REPS; r++) {
        uint64_t before[MAX_N], after[MAX_N];
        if (use_mmap) {
            uint64_t t0 = tsc();
            for (int k = 0; k < n; k++)
                before[k] = read_mmap(pages[k]);
            for (int k = 0; k < n; k++)
                after[k] = read_mmap(pages[k]);
            ticks[r] = tsc() - t0;
            for (int k = 0; k < n; k++)
                counts[k][r] = after[k] - before[k];
        } else {
            ioctl(fds[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
            uint64_t t0 = tsc();
            ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
            ioctl(fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
            ticks[r] = tsc() - t0;
            for (int k = 0; k < n; k++)
                counts[k][r] = read_fd(fds[k]);
        }
    }
    printf("result program=region method=%s counters=%d", name, n);
    for (int k = 0; k < n; k++) {
        qsort(counts[k], REPS, sizeof(uint64_t), cmp_u64);
        printf(" count_%d=%llu", k, (unsigned long long)counts[k][REPS / 2]);
    }
    qsort(ticks, REPS, sizeof(uint64_t), cmp_u64);
    printf(" tsc=%llu\n", (unsigned long long)ticks[REPS / 2]);
    return 0;
}
