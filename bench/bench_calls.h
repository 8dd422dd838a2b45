/*
 * bench_calls.h — how long single relo calls take, per kind of call, for
 * the benchmarks in which a second thread keeps calling while a pass runs.
 *
 * Each call is timed alone and added to a histogram of its kind: buckets
 * 1/8 of a power of two wide (a quantile is read to within 12.5 %), the
 * longest call exactly. A call that took longer than BENCH_SLOW_NS is also
 * classed: blocked when the thread switched voluntarily since the last
 * check (it slept: on relo's lock, or on anything relo waited for),
 * preempted otherwise (the scheduler took the core away; on a loaded
 * machine that alone can stretch a call past a millisecond, and relo
 * cannot help it).
 *
 * Include after defining _GNU_SOURCE, for RUSAGE_THREAD.
 */
#ifndef RELO_BENCH_CALLS_H
#define RELO_BENCH_CALLS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

/* The calls a runtime's launch path and allocations make. */
typedef enum bench_call {
    BENCH_RESOLVE,
    BENCH_PIN,
    BENCH_UNPIN,
    BENCH_RESERVE,
    BENCH_RELEASE,
    BENCH_READ,
    BENCH_WRITE,
    BENCH_CALL_COUNT
} bench_call;

static inline const char *bench_call_name(bench_call c)
{
    static const char *const names[BENCH_CALL_COUNT] = {"resolve", "pin",  "unpin", "reserve",
                                                        "release", "read", "write"};
    return (unsigned)c < BENCH_CALL_COUNT ? names[c] : "?";
}

#define BENCH_LAT_BUCKETS 320
#define BENCH_SLOW_NS 100000u /* calls this long are classed (0.1 ms) */

typedef struct bench_lat {
    uint64_t calls;
    uint64_t max_ns;
    uint64_t max_blocked_ns; /* longest call that blocked */
    uint64_t over_1ms, over_1ms_blocked;
    uint64_t hist[BENCH_LAT_BUCKETS];
} bench_lat;

/* Below 8 ns one bucket per ns; above, 8 buckets per power of two. */
static inline int bench_lat_bucket(uint64_t ns)
{
    if (ns < 8) return (int)ns;
    int e = 63 - __builtin_clzll(ns);
    int b = (e - 3) * 8 + 8 + (int)((ns >> (e - 3)) & 7);
    return b < BENCH_LAT_BUCKETS ? b : BENCH_LAT_BUCKETS - 1;
}

static inline uint64_t bench_lat_bucket_top(int b)
{
    if (b < 8) return (uint64_t)b + 1;
    int e = (b - 8) / 8 + 3;
    return (uint64_t)(8 + b % 8 + 1) << (e - 3);
}

static inline void bench_lat_add(bench_lat *l, uint64_t ns, int blocked)
{
    if (ns > l->max_ns) l->max_ns = ns;
    if (blocked && ns > l->max_blocked_ns) l->max_blocked_ns = ns;
    l->calls++;
    l->over_1ms += ns > 1000000u;
    l->over_1ms_blocked += blocked && ns > 1000000u;
    l->hist[bench_lat_bucket(ns)]++;
}

static inline void bench_lat_merge(bench_lat *into, const bench_lat *l)
{
    if (l->max_ns > into->max_ns) into->max_ns = l->max_ns;
    if (l->max_blocked_ns > into->max_blocked_ns) into->max_blocked_ns = l->max_blocked_ns;
    into->calls += l->calls;
    into->over_1ms += l->over_1ms;
    into->over_1ms_blocked += l->over_1ms_blocked;
    for (int b = 0; b < BENCH_LAT_BUCKETS; b++) into->hist[b] += l->hist[b];
}

/* Upper bound of the bucket that holds quantile q (never above the
 * longest call); 0 without calls. */
static inline uint64_t bench_lat_quantile(const bench_lat *l, double q)
{
    if (l->calls == 0) return 0;
    uint64_t want = (uint64_t)(q * (double)l->calls), seen = 0;
    for (int b = 0; b < BENCH_LAT_BUCKETS; b++) {
        seen += l->hist[b];
        if (seen > want) {
            uint64_t top = bench_lat_bucket_top(b);
            return top < l->max_ns ? top : l->max_ns;
        }
    }
    return l->max_ns;
}

/* Voluntary context switches of the calling thread so far. */
static inline long bench_voluntary_switches(void)
{
    struct rusage ru;
#ifdef RUSAGE_THREAD
    getrusage(RUSAGE_THREAD, &ru);
#else
    getrusage(RUSAGE_SELF, &ru);
#endif
    return ru.ru_nvcsw;
}

/* One line per kind that was called: calls, longest, longest that
 * blocked, p99, and how many took over 1 ms. */
static inline void bench_lat_print_kinds(const char *indent, const bench_lat *kinds)
{
    printf("%s%-8s %9s %12s %12s %10s %10s %9s\n", indent, "call", "calls", "longest ms", "blocked ms",
           "p99 ns", "p99.9 ns", ">1 ms");
    for (int k = 0; k < BENCH_CALL_COUNT; k++) {
        const bench_lat *l = &kinds[k];
        if (!l->calls) continue;
        printf("%s%-8s %9llu %12.3f %12.3f %10.0f %10.0f %9llu\n", indent, bench_call_name((bench_call)k),
               (unsigned long long)l->calls, (double)l->max_ns * 1e-6, (double)l->max_blocked_ns * 1e-6,
               (double)bench_lat_quantile(l, 0.99), (double)bench_lat_quantile(l, 0.999),
               (unsigned long long)l->over_1ms);
    }
}

#endif /* RELO_BENCH_CALLS_H */
