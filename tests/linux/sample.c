/*
 * sample [PERIOD]: sampling the known loop as `perf record -c PERIOD -e instructions:u` does in
 * the kernel: an instructions:u event with sample_period PERIOD (default 10007) and perf
 * record's sample_type (IP, TID, TIME, PERIOD), writing into a 128-page ring buffer (perf's
 * default 512 KiB) that nobody drains while the loop runs (the loop's 999 samples fit). perf's
 * own user-space work (reading the buffer, writing perf.data) is not in the figure.
 *
 * It prints one line:
 *   result program=sample period=P samples=N in_loop=L lost=X tsc=.. base_tsc=..
 *          sample_tsc=..
 * where tsc and base_tsc are the TSC ticks (lfence; rdtsc) from before the enabling ioctl to
 * after the disabling one around the known loop, sampled and counted by a non-sampling event;
 * samples the PERF_RECORD_SAMPLE records in the buffer, in_loop those whose IP lies in the
 * known loop (sample attribution), lost the PERF_RECORD_LOST records' count; sample_tsc
 * (tsc - base_tsc) / samples: the whole cost of one sample (PMI, the record written, return).
 */
#include "common.h" /* first: it defines _GNU_SOURCE */

#include <sys/mman.h>

#define PAGES 128

static __attribute__((noinline)) uint64_t region(int fd)
{
    region_fn = known_loop;
    uint64_t t0 = tsc();
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    region_fn();
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    return tsc() - t0;
}

int main(int argc, char **argv)
{
    uint64_t period = argc > 1 ? strtoull(argv[1], NULL, 0) : 10007;
    if (period == 0) {
        printf("error program=sample: the period must be above 0\n");
        return 2;
    }
    struct perf_event_attr attr;
    instructions_u(&attr);
    int base = perf_event_open(&attr, 0, -1, -1, 0);
    if (base < 0) {
        printf("error program=sample: perf_event_open (counting): %s\n", strerror(errno));
        return 1;
    }
    uint64_t base_tsc = region(base);
    close(base);

    instructions_u(&attr);
    attr.sample_period = period;
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
    int fd = perf_event_open(&attr, 0, -1, -1, 0);
    if (fd < 0) {
        printf("error program=sample: perf_event_open (sampling): %s\n", strerror(errno));
        return 1;
    }
    size_t page_size = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (PAGES + 1) * page_size;
    struct perf_event_mmap_page *meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (meta == MAP_FAILED) {
        printf("error program=sample: mmap: %s\n", strerror(errno));
        return 1;
    }
    uint64_t ticks = region(fd);

    /* Walk the records: header, then for a sample ip, pid/tid, time, period. */
    uint64_t head = meta->data_head;
    __sync_synchronize();
    const unsigned char *data = (const unsigned char *)meta + page_size;
    uint64_t size = PAGES * page_size, samples = 0, in_loop = 0, lost = 0;
    uintptr_t lo = (uintptr_t)known_loop, hi = (uintptr_t)empty_fn;
    for (uint64_t off = 0; off < head && head <= size;) {
        const struct perf_event_header *h = (const void *)(data + off);
        if (h->size == 0)
            break;
        if (h->type == PERF_RECORD_SAMPLE) {
            uint64_t ip;
            memcpy(&ip, h + 1, sizeof(ip));
            samples++;
            in_loop += ip >= lo && ip < hi;
        } else if (h->type == PERF_RECORD_LOST) {
            uint64_t v[2];
            memcpy(v, h + 1, sizeof(v));
            lost += v[1];
        }
        off += h->size;
    }
    if (head > size) {
        printf("error program=sample: the ring buffer wrapped (%llu bytes)\n",
               (unsigned long long)head);
        return 1;
    }
    printf("result program=sample period=%llu samples=%llu in_loop=%llu lost=%llu tsc=%llu "
           "base_tsc=%llu",
           (unsigned long long)period, (unsigned long long)samples, (unsigned long long)in_loop,
           (unsigned long long)lost, (unsigned long long)ticks, (unsigned long long)base_tsc);
    if (samples > 0)
        printf(" sample_tsc=%llu", (unsigned long long)((ticks - base_tsc) / samples));
    printf("\n");
    return 0;
}
