/*
 * overflow METHOD [PERIOD]: counter overflow delivered to a user handler. The process
 * samples its own instructions:u every PERIOD (default 100000) instructions while it runs
 * the known loop (10,000,002 instructions, common.h), and a signal handler counts the
 * overflows. METHOD is how the overflow reaches user space:
 *   sigtrap  the `sigtrap` attribute (Linux 5.13+): a synchronous SIGTRAP with
 *            si_code TRAP_PERF and si_perf_data = the attribute's sig_data;
 *   sigio    the classic way: O_ASYNC on the event's descriptor, F_SETOWN to this process
 *            and F_SETSIG SIGIO, so each overflow's wakeup sends SIGIO (si_code POLL_IN,
 *            si_fd the descriptor).
 *
 * It prints one line:
 *   result program=overflow method=M period=P signals=N bad_signals=B count=C
 *          expected_signals=C/P base_count=.. base_tsc=.. tsc=..
 *          handler_instructions=.. signal_tsc=.. handler_offset_{min,median,max}=..
 * where
 *   count, tsc        instructions:u counted and TSC ticks (lfence; rdtsc) from just before
 *                     the enabling ioctl to just after the disabling one, with sampling;
 *   base_count, base_tsc  the same region counted by an event that does not sample;
 *   signals           handler calls that carried the expected si_code and data; bad_signals
 *                     the others (0 when delivery is right);
 *   expected_signals  count / period, rounded down: every overflow of the region, the
 *                     handlers' own user-mode instructions included (they are counted too);
 *   handler_instructions  (count - base_count) / signals: user-mode instructions one
 *                     delivery adds (handler, the signal trampoline, sigreturn's call);
 *   signal_tsc        (tsc - base_tsc) / signals: the whole cost of one overflow in TSC
 *                     ticks (PMI, signal delivery, handler, sigreturn). Under -icount shift=0
 *                     one tick is one instruction, kernel included;
 *   handler_offset    the count read (read(2)) in the handler modulo the period: the
 *                     instructions from the overflow to that read (skid, the handler's entry,
 *                     libc's read up to its syscall).
 */
#include "common.h" /* first: it defines _GNU_SOURCE (F_SETSIG) */

#include <fcntl.h>
#include <signal.h>

#define SIG_DATA 0xba5eba11ULL
#define MAX_SIGNALS 4096

enum method { M_SIGTRAP, M_SIGIO };
static enum method method;
static volatile int fd = -1;
static volatile uint64_t period;
static volatile unsigned signals, bad_signals;
static uint64_t offsets[MAX_SIGNALS];

/* The kernel's siginfo layout (asm-generic/siginfo.h): for SIGTRAP with TRAP_PERF,
 * si_perf_data is the unsigned long after si_addr; glibc 2.36 does not name it. */
static unsigned long perf_data(const siginfo_t *si)
{
    unsigned long v;
    memcpy(&v, (const char *)&si->si_addr + sizeof(void *), sizeof(v));
    return v;
}

static void handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int good = method == M_SIGTRAP
                   ? sig == SIGTRAP && si->si_code == 6 /* TRAP_PERF */ &&
                         perf_data(si) == SIG_DATA
                   : sig == SIGIO && si->si_code == POLL_IN && si->si_fd == fd;
    uint64_t count;
    if (read(fd, &count, sizeof(count)) == sizeof(count) && signals < MAX_SIGNALS && good)
        offsets[signals] = count % period;
    if (good)
        signals++;
    else
        bad_signals++;
}

/* Counted instructions and TSC ticks of enable, the known loop, disable. */
static __attribute__((noinline)) uint64_t region(int event, uint64_t *ticks)
{
    region_fn = known_loop;
    uint64_t t0 = tsc();
    ioctl(event, PERF_EVENT_IOC_ENABLE, 0);
    region_fn();
    ioctl(event, PERF_EVENT_IOC_DISABLE, 0);
    *ticks = tsc() - t0;
    uint64_t count = 0;
    if (read(event, &count, sizeof(count)) != sizeof(count)) {
        printf("error program=overflow: read: %s\n", strerror(errno));
        exit(1);
    }
    return count;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (!strcmp(name, "sigtrap"))
        method = M_SIGTRAP;
    else if (!strcmp(name, "sigio"))
        method = M_SIGIO;
    else {
        printf("error program=overflow: usage: overflow sigtrap|sigio [PERIOD] (got `%s`)\n",
               name);
        return 2;
    }
    period = argc > 2 ? strtoull(argv[2], NULL, 0) : 100000;
    if (period == 0) {
        printf("error program=overflow method=%s: the period must be above 0\n", name);
        return 2;
    }

    struct perf_event_attr attr;
    instructions_u(&attr);
    int base = perf_event_open(&attr, 0, -1, -1, 0);
    if (base < 0) {
        printf("error program=overflow method=%s: perf_event_open (counting): %s\n", name,
               strerror(errno));
        return 1;
    }
    uint64_t base_tsc;
    uint64_t base_count = region(base, &base_tsc);
    close(base);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(method == M_SIGTRAP ? SIGTRAP : SIGIO, &sa, NULL) != 0) {
        printf("error program=overflow method=%s: sigaction: %s\n", name, strerror(errno));
        return 1;
    }

    instructions_u(&attr);
    attr.sample_period = period;
    if (method == M_SIGTRAP) {
        attr.sigtrap = 1;
        attr.remove_on_exec = 1; /* the kernel requires it with sigtrap */
        attr.sig_data = SIG_DATA;
    } else {
        attr.wakeup_events = 1;
    }
    fd = perf_event_open(&attr, 0, -1, -1, 0);
    if (fd < 0) {
        printf("error program=overflow method=%s: perf_event_open (sampling): %s\n", name,
               strerror(errno));
        return 1;
    }
    if (method == M_SIGIO &&
        (fcntl(fd, F_SETOWN, getpid()) != 0 || fcntl(fd, F_SETSIG, SIGIO) != 0 ||
         fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) != 0)) {
        printf("error program=overflow method=sigio: fcntl: %s\n", strerror(errno));
        return 1;
    }
    uint64_t ticks;
    uint64_t count = region(fd, &ticks);

    printf("result program=overflow method=%s period=%llu signals=%u bad_signals=%u count=%llu "
           "expected_signals=%llu base_count=%llu base_tsc=%llu tsc=%llu",
           name, (unsigned long long)period, signals, bad_signals, (unsigned long long)count,
           (unsigned long long)(count / period), (unsigned long long)base_count,
           (unsigned long long)base_tsc, (unsigned long long)ticks);
    if (signals > 0) {
        printf(" handler_instructions=%llu signal_tsc=%llu",
               (unsigned long long)((count - base_count) / signals),
               (unsigned long long)((ticks - base_tsc) / signals));
        print_stats("handler_offset", offsets, signals < MAX_SIGNALS ? signals : MAX_SIGNALS);
    }
    printf("\n");
    return 0;
}
