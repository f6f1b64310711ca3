/*
 * intrude: what intrudes into a 10,000,000-instruction region on Linux. Around the known loop
 * (10,000,002 instructions, common.h), and around the same region calling an empty function,
 * it takes: the sum of every count in /proc/interrupts (all CPUs; read before and after the
 * region, outside it), this task's kernel instructions (instructions:k, exclude_user) and its
 * context switches (the context-switches software event), its user instructions
 * (instructions:u) and the TSC ticks (lfence; rdtsc).
 *
 * It prints one line (medians of REPS regions, loop minus empty for every figure):
 *   result program=intrude interrupts=.. kernel_instructions=.. context_switches=..
 *          user_instructions=.. tsc=.. added_ppm=..
 * where added_ppm is (tsc - user_instructions) per million user instructions: the share of
 * the region's wall time (under -icount shift=0, instructions) not spent in the task's code.
 */
#include "common.h" /* first: it defines _GNU_SOURCE */

#include <fcntl.h>

#define REPS 5

static uint64_t interrupts_total(void)
{
    static char buf[65536];
    int f = open("/proc/interrupts", O_RDONLY);
    if (f < 0) {
        printf("error program=intrude: /proc/interrupts: %s\n", strerror(errno));
        exit(1);
    }
    ssize_t len = 0, got;
    while ((got = read(f, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
        len += got;
    close(f);
    buf[len] = 0;
    /* Lines "NAME: count count ... description": sum the numbers right after the colon. */
    uint64_t total = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = strchr(line, ':');
        if (!p)
            continue; /* the CPU header */
        for (p++;;) {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p)
                break;
            total += v;
            p = end;
        }
    }
    return total;
}

static int open_event(uint32_t type, uint64_t config, int user, int group)
{
    struct perf_event_attr attr;
    instructions_u(&attr);
    attr.type = type;
    attr.config = config;
    attr.exclude_user = !user;
    attr.exclude_kernel = user;
    attr.disabled = group < 0;
    int fd = perf_event_open(&attr, 0, -1, group, 0);
    if (fd < 0) {
        printf("error program=intrude: perf_event_open (type %u config %llu): %s\n", type,
               (unsigned long long)config, strerror(errno));
        exit(1);
    }
    return fd;
}

static uint64_t read_fd(int fd)
{
    uint64_t v = 0;
    if (read(fd, &v, sizeof(v)) != sizeof(v)) {
        printf("error program=intrude: read: %s\n", strerror(errno));
        exit(1);
    }
    return v;
}

enum { IRQ, KINS, CS, UINS, TSC, N };
static int fds[3];

static __attribute__((noinline)) void region(void (*fn)(void), uint64_t *v)
{
    region_fn = fn;
    for (int k = 0; k < 3; k++)
        ioctl(fds[k], PERF_EVENT_IOC_RESET, 0);
    uint64_t irq0 = interrupts_total();
    uint64_t t0 = tsc();
    ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    region_fn();
    ioctl(fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    v[TSC] = tsc() - t0;
    v[IRQ] = interrupts_total() - irq0;
    v[KINS] = read_fd(fds[0]);
    v[CS] = read_fd(fds[1]);
    v[UINS] = read_fd(fds[2]);
}

int main(void)
{
    fds[0] = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, -1);
    fds[1] = open_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, fds[0]);
    fds[2] = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1, fds[0]);
    /* context-switches counts in any mode; exclude_user on it would hide none. */
    static uint64_t net[N][REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t loop[N], empty[N];
        region(known_loop, loop);
        region(empty_fn, empty);
        for (int k = 0; k < N; k++)
            net[k][r] = loop[k] - empty[k];
    }
    uint64_t m[N];
    for (int k = 0; k < N; k++) {
        qsort(net[k], REPS, sizeof(uint64_t), cmp_u64);
        m[k] = net[k][REPS / 2];
    }
    printf("result program=intrude interrupts=%lld kernel_instructions=%lld context_switches=%lld "
           "user_instructions=%llu tsc=%llu added_ppm=%lld\n",
           (long long)m[IRQ], (long long)m[KINS], (long long)m[CS], (unsigned long long)m[UINS],
           (unsigned long long)m[TSC],
           m[UINS] ? (long long)(((int64_t)m[TSC] - (int64_t)m[UINS]) * 1000000 / (int64_t)m[UINS])
                   : -1LL);
    return 0;
}
