/*
 * bench_core.c — the cost of relo's reservation path.
 *
 * 1. Pairs: relo_reserve immediately followed by relo_release, over mixed
 *    sizes from 64 B to 64 MiB (heavy-tailed, fixed seed), on the simulated
 *    backend (no bytes, so only relo's bookkeeping is timed), beside glibc
 *    malloc/free of the same sizes. Median ns per pair and the ratio
 *    relo / malloc. Issue target: <= 100 ns per pair.
 * 2. Scaling: the same pairs with 1,000,000 allocations live versus 1,000
 *    live. Target: ratio <= 1.5.
 *
 * Options: bench_core [runs] [pairs per run]   (defaults 15, 200000)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "relo.h"
#include "relo_backend.h"

#define MIB (UINT64_C(1) << 20)

static void *volatile sink;

/* Heavy-tailed sizes: 64 B · 2^e with e exponential (mean 2.5), capped at
 * 64 MiB, and a uniform fraction of the next doubling. */
static uint64_t *make_sizes(size_t n, uint64_t seed)
{
    uint64_t *v = malloc(n * sizeof *v);
    if (!v) exit(1);
    for (size_t i = 0; i < n; i++) {
        double e = -log(1.0 - bench_unit(&seed)) * 2.5;
        if (e > 20.0) e = 20.0;
        double size = 64.0 * pow(2.0, e);
        v[i] = (uint64_t)size;
        if (v[i] < 64) v[i] = 64;
        if (v[i] > 64 * MIB) v[i] = 64 * MIB;
    }
    return v;
}

static relo_device *make_device(relo_stream **stream)
{
    relo_host_desc hd = {0};       /* capacity unlimited, max page 1 GiB */
    relo_backend *be = NULL;
    relo_device *dev = NULL;
    if (relo_backend_sim_create(&hd, &be) != RELO_OK || relo_device_create(NULL, be, &dev) != RELO_OK ||
        relo_stream_create(dev, NULL, stream) != RELO_OK) {
        fprintf(stderr, "cannot create a sim device\n");
        exit(1);
    }
    return dev;
}

/* ns per reserve+release pair over sizes[0..n). */
static double relo_pairs(relo_device *dev, relo_stream *s, const uint64_t *sizes, size_t n)
{
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        relo_handle h;
        relo_status st = relo_reserve(s, sizes[i], &h);
        if (st != RELO_OK) {
            fprintf(stderr, "reserve(%llu): %s\n", (unsigned long long)sizes[i], relo_status_name(st));
            exit(1);
        }
        relo_release(dev, h);
    }
    return (double)(bench_now_ns() - t0) / (double)n;
}

static double malloc_pairs(const uint64_t *sizes, size_t n)
{
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        void *p = malloc(sizes[i]);
        sink = p;
        free(p);
    }
    return (double)(bench_now_ns() - t0) / (double)n;
}

/* Fills the device with `live` allocations of the same distribution. */
static relo_handle *populate(relo_device *dev, relo_stream *s, size_t live)
{
    uint64_t *sizes = make_sizes(live, 77);
    relo_handle *h = malloc(live * sizeof *h);
    if (!h) exit(1);
    for (size_t i = 0; i < live; i++)
        if (relo_reserve(s, sizes[i], &h[i]) != RELO_OK) {
            fprintf(stderr, "populate: reserve %zu failed\n", i);
            exit(1);
        }
    (void)dev;
    free(sizes);
    return h;
}

static void depopulate(relo_device *dev, relo_handle *h, size_t live)
{
    for (size_t i = 0; i < live; i++) relo_release(dev, h[i]);
    free(h);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 15;
    size_t pairs = argc > 2 ? (size_t)atol(argv[2]) : 200000;
    if (runs < 3) runs = 3;
    uint64_t *sizes = make_sizes(pairs, 12345);
    double *a = malloc((size_t)runs * sizeof *a), *b = malloc((size_t)runs * sizeof *b);
    if (!a || !b) return 1;

    double mean = 0;
    for (size_t i = 0; i < pairs; i++) mean += (double)sizes[i];
    printf("bench_core: %zu pairs per run, %d runs; sizes 64 B .. 64 MiB heavy-tailed, mean %.0f B\n",
           pairs, runs, mean / (double)pairs);

    /* 1. reserve+release pairs vs malloc/free. */
    relo_stream *s;
    relo_device *dev = make_device(&s);
    relo_pairs(dev, s, sizes, pairs);      /* warm-up: pools grown, pages held */
    malloc_pairs(sizes, pairs);
    for (int r = 0; r < runs; r++) {
        a[r] = relo_pairs(dev, s, sizes, pairs);
        b[r] = malloc_pairs(sizes, pairs);
    }
    bench_summary relo_s = bench_summarize(a, runs), malloc_s = bench_summarize(b, runs);
    printf("\nreserve+release pair, sim backend, nothing else live\n");
    bench_print("relo_reserve + relo_release", "ns", relo_s);
    bench_print("glibc malloc + free (same sizes)", "ns", malloc_s);
    bench_ratio("ratio relo / malloc (medians)", relo_s.median / malloc_s.median, "none; context");
    printf("  %-44s %.1f ns   (target <= 100 ns)\n", "relo pair, median", relo_s.median);
    relo_stream_destroy(s);
    relo_device_destroy(dev);

    /* 2. the same pairs with 1,000 and with 1,000,000 allocations live,
     *    alternating between two devices so drift hits both alike. */
    const size_t small_live = 1000, big_live = 1000000;
    relo_stream *s1, *s2;
    relo_device *d1 = make_device(&s1), *d2 = make_device(&s2);
    uint64_t t0 = bench_now_ns();
    relo_handle *h1 = populate(d1, s1, small_live);
    relo_handle *h2 = populate(d2, s2, big_live);
    printf("\npopulated 1,000 + 1,000,000 live allocations in %.2f s\n",
           (double)(bench_now_ns() - t0) * 1e-9);
    relo_stats st;
    relo_device_stats(d2, &st);
    printf("  1M-live device: %llu pages, %.1f GiB reserved (simulated)\n", (unsigned long long)st.pages,
           (double)st.bytes_reserved / (double)(1u << 30));
    relo_pairs(d1, s1, sizes, pairs);
    relo_pairs(d2, s2, sizes, pairs);
    for (int r = 0; r < runs; r++) {
        a[r] = relo_pairs(d1, s1, sizes, pairs);
        b[r] = relo_pairs(d2, s2, sizes, pairs);
    }
    bench_summary few = bench_summarize(a, runs), many = bench_summarize(b, runs);
    printf("\nreserve+release pair with allocations live\n");
    bench_print("1,000 live", "ns", few);
    bench_print("1,000,000 live", "ns", many);
    bench_ratio("ratio 1,000,000 live / 1,000 live (medians)", many.median / few.median, "<= 1.5");
    depopulate(d1, h1, small_live);
    depopulate(d2, h2, big_live);
    relo_stream_destroy(s1);
    relo_stream_destroy(s2);
    relo_device_destroy(d1);
    relo_device_destroy(d2);
    free(sizes);
    free(a);
    free(b);
    return 0;
}
