/*
 * selfmon METHOD: a process counting its own user-mode instructions (instructions:u) with
 * perf_event_open(2), read by one of three methods:
 *   read   read(2) of the event's file descriptor (a system call per read);
 *   mmap   the event's mmap'd user page with the seqlock loop perf_event.h documents
 *          (lock, index, offset, pmc_width, then RDPMC of index - 1, retried when `lock`
 *          changed); the way perf's own self-monitoring readers do it;
 *   rdpmc  a minimal read: RDPMC of the counter the page named once after enabling, no
 *          seqlock, no offset (valid only while the event stays on that counter: one process
 *          on an idle machine).
 *
 * It prints one line:
 *   result program=selfmon method=M loop_net_min=.. loop_net_max=.. empty_count_median=..
 *          loop_tsc_net_median=.. read_instructions_{min,median,max}=..
 *          read_tsc_{min,median,max}=.. [index=.. pmc_width=.. cap_user_rdpmc=..]
 * where
 *   loop_net        counted instructions of a region calling the known loop minus those of
 *                   the same region calling an empty function (REPS pairs): exactly
 *                   10,000,001 on a PMU that counts exactly (common.h);
 *   empty_count     counted instructions of the empty region: one read's own cost as the
 *                   counter sees it, plus the call;
 *   loop_tsc_net    the same difference in TSC ticks (lfence; rdtsc around the region):
 *                   includes kernel time (timer interrupts) spent during the loop;
 *   read_instructions  the counter's difference between two back-to-back reads
 *                   (SAMPLES of them): the user-mode instructions of one read;
 *   read_tsc        TSC ticks around one read (SAMPLES): its whole cost, kernel included,
 *                   plus one lfence; rdtsc. Under -icount shift=0 one tick is one instruction.
 */
#include "common.h" /* first: it defines _GNU_SOURCE */

#include <sys/mman.h>

#define REPS 5
#define SAMPLES 1001

enum method { M_READ, M_MMAP, M_RDPMC };
static enum method method;
static int fd = -1;
static struct perf_event_mmap_page *page;
static uint32_t counter; /* RDPMC's ECX for the minimal method */

static uint64_t read_mmap(void)
{
    uint32_t seq, index;
    uint64_t count;
    do {
        seq = page->lock;
        __asm__ volatile("" ::: "memory");
        index = page->index;
        count = page->offset;
        if (page->cap_user_rdpmc && index) {
            /* sign-extend the counter's pmc_width bits */
            int64_t pmc = (int64_t)rdpmc(index - 1);
            unsigned shift = 64 - page->pmc_width;
            count += (uint64_t)((pmc << shift) >> shift);
        }
        __asm__ volatile("" ::: "memory");
    } while (page->lock != seq);
    return count;
}

static inline uint64_t read_count(void)
{
    uint64_t v = 0;
    switch (method) {
    case M_READ:
        if (read(fd, &v, sizeof(v)) != sizeof(v)) {
            printf("error program=selfmon method=read: read: %s\n", strerror(errno));
            exit(1);
        }
        return v;
    case M_MMAP:
        return read_mmap();
    case M_RDPMC:
        return rdpmc(counter);
    }
    return 0;
}

/* The counted instructions (and TSC ticks, in *ticks) of one call of `fn` between reads. */
static __attribute__((noinline)) uint64_t region(void (*fn)(void), uint64_t *ticks)
{
    region_fn = fn;
    uint64_t t0 = tsc();
    uint64_t a = read_count();
    region_fn();
    uint64_t b = read_count();
    *ticks = tsc() - t0;
    return b - a;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (!strcmp(name, "read"))
        method = M_READ;
    else if (!strcmp(name, "mmap"))
        method = M_MMAP;
    else if (!strcmp(name, "rdpmc"))
        method = M_RDPMC;
    else {
        printf("error program=selfmon: usage: selfmon read|mmap|rdpmc (got `%s`)\n", name);
        return 2;
    }

    struct perf_event_attr attr;
    instructions_u(&attr);
    fd = perf_event_open(&attr, 0, -1, -1, 0);
    if (fd < 0) {
        printf("error program=selfmon method=%s: perf_event_open: %s\n", name, strerror(errno));
        return 1;
    }
    if (method != M_READ) {
        page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
        if (page == MAP_FAILED) {
            printf("error program=selfmon method=%s: mmap: %s\n", name, strerror(errno));
            return 1;
        }
    }
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        printf("error program=selfmon method=%s: enable: %s\n", name, strerror(errno));
        return 1;
    }
    if (method != M_READ) {
        if (!page->cap_user_rdpmc || page->index == 0) {
            printf("error program=selfmon method=%s: no user RDPMC (cap_user_rdpmc=%u "
                   "index=%u)\n",
                   name, (unsigned)page->cap_user_rdpmc, page->index);
            return 1;
        }
        counter = page->index - 1;
    }

    uint64_t net[REPS], empty[REPS], tsc_net[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t loop_ticks, empty_ticks;
        uint64_t loop = region(known_loop, &loop_ticks);
        empty[r] = region(empty_fn, &empty_ticks);
        net[r] = loop - empty[r];
        tsc_net[r] = loop_ticks - empty_ticks;
    }

    static uint64_t insns[SAMPLES], ticks[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
        uint64_t a = read_count();
        uint64_t b = read_count();
        insns[i] = b - a;
        uint64_t t0 = tsc();
        (void)read_count();
        ticks[i] = tsc() - t0;
    }

    printf("result program=selfmon method=%s", name);
    qsort(net, REPS, sizeof(net[0]), cmp_u64);
    printf(" loop_net_min=%llu loop_net_max=%llu", (unsigned long long)net[0],
           (unsigned long long)net[REPS - 1]);
    qsort(empty, REPS, sizeof(empty[0]), cmp_u64);
    printf(" empty_count_median=%llu", (unsigned long long)empty[REPS / 2]);
    qsort(tsc_net, REPS, sizeof(tsc_net[0]), cmp_u64);
    printf(" loop_tsc_net_median=%llu", (unsigned long long)tsc_net[REPS / 2]);
    print_stats("read_instructions", insns, SAMPLES);
    print_stats("read_tsc", ticks, SAMPLES);
    if (page)
        printf(" index=%u pmc_width=%u cap_user_rdpmc=%u", page->index,
               (unsigned)page->pmc_width, (unsigned)page->cap_user_rdpmc);
    printf("\n");
    return 0;
}
