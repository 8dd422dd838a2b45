/*
 * bench_core.c — the cost of relo's reservation path.
 *
 * 1. Pairs: relo_reserve immediately followed by relo_release, over mixed
 *    sizes from 64 B to 64 MiB (heavy-tailed, fixed seed), on the simulated
 *    backend (no bytes, so only relo's bookkeeping is timed), beside glibc
 *    malloc/free of the same sizes. Median ns per pair and the ratio
 *    relo / malloc. Target: <= 100 ns per pair. Beside them, in the
 *    same rounds, what the pair's two calls spend on the device lock
 *    alone: two uncontended acquire + release pairs of relo's lock
 *    (src/base/lock.h), and its share of the pair. Allocators that take no lock
 *    (a VMA virtual block, OffsetAllocator) do not pay it. Back to back,
 *    each acquire waits for the release just before it to drain, so where
 *    the lock releases by store this is more than a real call pays, whose
 *    store drains while relo works (docs/architecture.md, "The lock").
 * 2. Scaling: the same pairs with 1,000,000 allocations live versus 1,000
 *    live, in CPU time, the two devices alternating round by round, for
 *    the packed placement (the default) and the adaptive placement. Target: the
 *    median of each round's ratio <= 1.2.
 *
 * Options: bench_core [runs] [pairs per run]   (defaults 15, 200000)
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "base/lock.h"
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

static relo_device *make_device(relo_placement placement, relo_stream **stream)
{
    relo_host_desc hd = {0}; /* capacity unlimited, max page 1 GiB */
    relo_backend *be = NULL;
    relo_device *dev = NULL;
    relo_device_desc dd = {0};
    dd.placement = placement;
    if (relo_backend_sim_create(&hd, &be) != RELO_OK || relo_device_create(&dd, be, &dev) != RELO_OK ||
        relo_stream_create(dev, NULL, stream) != RELO_OK) {
        fprintf(stderr, "cannot create a sim device\n");
        exit(1);
    }
    return dev;
}

/* ns per reserve+release pair over sizes[0..n), wall or CPU time. */
static double relo_pairs_timed(relo_device *dev, relo_stream *s, const uint64_t *sizes, size_t n, bool cpu)
{
    uint64_t t0 = cpu ? bench_cpu_ns() : bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        relo_handle h;
        relo_status st = relo_reserve(s, sizes[i], &h);
        if (st != RELO_OK) {
            fprintf(stderr, "reserve(%llu): %s\n", (unsigned long long)sizes[i], relo_status_name(st));
            exit(1);
        }
        relo_release(dev, h);
    }
    return (double)((cpu ? bench_cpu_ns() : bench_now_ns()) - t0) / (double)n;
}

static double relo_pairs(relo_device *dev, relo_stream *s, const uint64_t *sizes, size_t n)
{
    return relo_pairs_timed(dev, s, sizes, n, false);
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

/* ns per n rounds of what a reserve+release pair does with the device
 * lock: two uncontended acquire + release pairs, back to back. */
static double lock_pairs(relo_lock *lock, size_t n)
{
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        relo__lock_acquire(lock);
        relo__lock_release(lock);
        relo__lock_acquire(lock);
        relo__lock_release(lock);
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

/* Part 2 for one placement: pairs on a device with 1,000 live and one with
 * 1,000,000 live, alternating round by round so drift hits both alike,
 * in CPU time; few, many and ratio hold runs samples each. */
static void scaling(relo_placement placement, const char *name, const uint64_t *sizes, size_t pairs, int runs,
                    double *few, double *many, double *ratio)
{
    const size_t small_live = 1000, big_live = 1000000;
    relo_stream *s1, *s2;
    relo_device *d1 = make_device(placement, &s1), *d2 = make_device(placement, &s2);
    uint64_t t0 = bench_now_ns();
    relo_handle *h1 = populate(d1, s1, small_live);
    relo_handle *h2 = populate(d2, s2, big_live);
    relo_stats st;
    relo_device_stats(d2, &st);
    printf("\nreserve+release pair with allocations live, %s placement, CPU time\n", name);
    printf(
        "  (populated 1,000 + 1,000,000 live in %.2f s; the 1M-live device holds %llu pages, %.1f GiB "
        "simulated)\n",
        (double)(bench_now_ns() - t0) * 1e-9, (unsigned long long)st.pages,
        (double)st.bytes_reserved / (double)(1u << 30));
    relo_pairs_timed(d1, s1, sizes, pairs, true); /* warm-up */
    relo_pairs_timed(d2, s2, sizes, pairs, true);
    for (int r = 0; r < runs; r++) {
        few[r] = relo_pairs_timed(d1, s1, sizes, pairs, true);
        many[r] = relo_pairs_timed(d2, s2, sizes, pairs, true);
        ratio[r] = many[r] / few[r];
    }
    bench_print("1,000 live", "ns", bench_summarize(few, runs));
    bench_print("1,000,000 live", "ns", bench_summarize(many, runs));
    bench_summary r = bench_summarize(ratio, runs);
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]   (target <= 1.2)\n", "ratio 1,000,000 live / 1,000 live",
           r.median, r.p10, r.p90);
    depopulate(d1, h1, small_live);
    depopulate(d2, h2, big_live);
    relo_stream_destroy(s1);
    relo_stream_destroy(s2);
    relo_device_destroy(d1);
    relo_device_destroy(d2);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 15;
    size_t pairs = argc > 2 ? (size_t)atol(argv[2]) : 200000;
    if (runs < 3) runs = 3;
    uint64_t *sizes = make_sizes(pairs, 12345);
    double *a = malloc((size_t)runs * sizeof *a), *b = malloc((size_t)runs * sizeof *b);
    double *c = malloc((size_t)runs * sizeof *c);
    relo_lock lock;
    if (!a || !b || !c || !relo__lock_init(&lock)) return 1;

    double mean = 0;
    for (size_t i = 0; i < pairs; i++) mean += (double)sizes[i];
    printf("bench_core: %zu pairs per run, %d runs; sizes 64 B .. 64 MiB heavy-tailed, mean %.0f B\n", pairs,
           runs, mean / (double)pairs);

    /* 1. reserve+release pairs vs malloc/free. */
    relo_stream *s;
    relo_device *dev = make_device(RELO_PLACEMENT_DEFAULT, &s);
    relo_pairs(dev, s, sizes, pairs); /* warm-up: pools grown, pages held */
    malloc_pairs(sizes, pairs);
    lock_pairs(&lock, pairs);
    for (int r = 0; r < runs; r++) {
        a[r] = relo_pairs(dev, s, sizes, pairs);
        b[r] = malloc_pairs(sizes, pairs);
        c[r] = lock_pairs(&lock, pairs);
    }
    bench_summary relo_s = bench_summarize(a, runs), malloc_s = bench_summarize(b, runs);
    bench_summary lock_s = bench_summarize(c, runs);
    printf("\nreserve+release pair, sim backend, nothing else live\n");
    bench_print("relo_reserve + relo_release", "ns", relo_s);
    bench_print("glibc malloc + free (same sizes)", "ns", malloc_s);
    bench_print("device lock alone (2 acquire + release)", "ns", lock_s);
    bench_ratio("ratio relo / malloc (medians)", relo_s.median / malloc_s.median, "none; context");
    bench_ratio("share of the pair that is the lock (medians)", lock_s.median / relo_s.median,
                "none; context");
    printf("  %-44s %.1f ns   (target <= 100 ns)\n", "relo pair, median", relo_s.median);
    relo_stream_destroy(s);
    relo_device_destroy(dev);

    /* 2. the same pairs with 1,000 and with 1,000,000 allocations live. */
    double *ratio = malloc((size_t)runs * sizeof *ratio);
    if (!ratio) return 1;
    scaling(RELO_PLACEMENT_PACKED, "packed (the default)", sizes, pairs, runs, a, b, ratio);
    scaling(RELO_PLACEMENT_ADAPTIVE, "adaptive", sizes, pairs, runs, a, b, ratio);
    free(ratio);
    free(sizes);
    free(a);
    free(b);
    free(c);
    relo__lock_destroy(&lock);
    return 0;
}
