/*
 * bench.h — timing and summary helpers shared by relo's benchmarks.
 *
 * A benchmark never reports a single time: it runs a warm-up, then repeats
 * the measurement, and prints the median with its spread (minimum, 10th
 * and 90th percentile, maximum), next to a baseline measured in the same
 * process, as a ratio of medians.
 */
#ifndef RELO_BENCH_H
#define RELO_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process (every thread), for ratios that other
 * processes on a shared machine should not skew the way they skew wall
 * time. */
static inline uint64_t bench_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: fixed seeds give the same workload on every run. */
static inline uint64_t bench_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* Uniform in [0, 1). */
static inline double bench_unit(uint64_t *s)
{
    return (double)(bench_rand(s) >> 11) * 0x1.0p-53;
}

typedef struct bench_summary {
    double median, min, p10, p90, max;
    int n;
} bench_summary;

static int bench_cmp_(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_pick_(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    double f = pos - lo;
    return sorted[lo] * (1 - f) + sorted[hi] * f;
}

/* Summarises n samples (sorted in place). */
static inline bench_summary bench_summarize(double *v, int n)
{
    bench_summary s;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_);
    s.n = n;
    s.min = v[0];
    s.max = v[n - 1];
    s.median = bench_pick_(v, n, 0.5);
    s.p10 = bench_pick_(v, n, 0.1);
    s.p90 = bench_pick_(v, n, 0.9);
    return s;
}

static inline void bench_print(const char *what, const char *unit, bench_summary s)
{
    printf("  %-44s median %10.2f %-5s  [min %.2f, p10 %.2f, p90 %.2f, max %.2f; %d runs]\n", what, s.median,
           unit, s.min, s.p10, s.p90, s.max, s.n);
}

static inline void bench_ratio(const char *what, double ratio, const char *target)
{
    printf("  %-44s %.3f   (target %s)\n", what, ratio, target);
}

#endif /* RELO_BENCH_H */
