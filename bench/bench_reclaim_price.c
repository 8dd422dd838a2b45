/*
 * bench_reclaim_price.c — what one relo_reclaim costs a runtime with two
 * streams, when the device is busy with long kernels.
 *
 * The backend is the host backend wrapped (bench_backend.h) so that
 * wait_device and wait_copies each sleep 100 ms, and counted: on a GPU
 * each of those waits drains the device, every queue idling until its
 * work is done, so the number of waits per reclaim is the price a runtime
 * pays for it.
 *
 * The scene, built afresh each round on a fresh device: stream 1 holds
 * 200 allocations of 256 KiB and then 100 of 3 to 7 MiB (fixed sizes,
 * multiples of 64 KiB), each filled with a pattern of its own, and every
 * other one is released. Then relo_reclaim(stream 1), while a second
 * thread loops on stream 2 the way a runtime's other stream does: resolve
 * its own allocation, pin and unpin it, write and read 64 bytes of it,
 * reserve 4 KiB and release that. Every call of that thread is timed
 * alone and classed by kind (bench_calls.h), as made during the reclaim
 * or outside it: each round has 5 ms before and after the reclaim in
 * which the thread already runs, the baseline of the same run.
 *
 * Printed per placement, the default (packed) first and then adaptive, the rounds
 * of the two interleaved: passes (the device's relocations counter),
 * device waits (wait_device + wait_copies calls), the reclaim's time
 * (median and spread, and its ratio to the 200 ms of one pass's two waits),
 * allocations and bytes moved, whether every kept allocation's bytes are
 * intact (each is read back and compared), and the other thread's calls
 * per kind: longest, longest that blocked, p99, during the reclaims and
 * outside them. Targets: at most 2 device waits per reclaim (one pass);
 * no call of the other thread over 1 ms during the reclaim.
 *
 * Usage: bench_reclaim_price [rounds]   (default 5 per placement, after one
 * warm-up round each)
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_backend.h"
#include "bench_calls.h"
#include "relo.h"
#include "relo_backend.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define SMALL 200
#define LARGE 100
#define TOTAL (SMALL + LARGE)
#define WAIT_NS (100 * 1000000L)
#define IDLE_NS (5 * 1000000L)
#define OWN_BYTES (64 * KIB)
#define MAX_ROUNDS 32

static void must(relo_status s, const char *what)
{
    if (s != RELO_OK) {
        fprintf(stderr, "bench_reclaim_price: %s: %s\n", what, relo_status_name(s));
        exit(1);
    }
}

/* ------------------------------------------------------------------------ */
/* The scene                                                                */
/* ------------------------------------------------------------------------ */

static uint64_t scene_size(int i)
{
    if (i < SMALL) return 256 * KIB;
    uint64_t seed = UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)i;
    return 3 * MIB + bench_rand(&seed) % 65 * 64 * KIB; /* 3 to 7 MiB */
}

/* Allocation i's bytes: a word pattern of its own. */
static void pattern(uint64_t *words, uint64_t bytes, int i)
{
    uint64_t key = (uint64_t)(i + 1) * UINT64_C(0xD1B54A32D192ED03);
    for (uint64_t k = 0; k < bytes / 8; k++) words[k] = key ^ (k * UINT64_C(0x9E3779B97F4A7C15));
}

typedef struct scene {
    bench_wrap wrap;
    relo_device *dev;
    relo_stream *s1, *s2;
    relo_handle h[TOTAL];
    uint64_t size[TOTAL];
} scene;

static void scene_open(scene *sc, relo_placement placement, uint64_t *buf)
{
    relo_host_desc hd;
    memset(&hd, 0, sizeof hd);
    hd.alignment = 256;
    hd.max_page_size = 256 * MIB;
    relo_backend *host = NULL, *b = NULL;
    must(relo_backend_host_create(&hd, &host), "host backend");
    /* No sleeps while the scene is built: the packed placement's packing
     * before new pages would only make the setup slow. */
    must(bench_wrap_create(&sc->wrap, host, 0, 0, &b), "wrap");
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    must(relo_device_create(&dd, b, &sc->dev), "device");
    must(relo_stream_create(sc->dev, NULL, &sc->s1), "stream 1");
    must(relo_stream_create(sc->dev, NULL, &sc->s2), "stream 2");
    for (int i = 0; i < TOTAL; i++) {
        sc->size[i] = scene_size(i);
        must(relo_reserve(sc->s1, sc->size[i], &sc->h[i]), "reserve");
        pattern(buf, sc->size[i], i);
        must(relo_write(sc->dev, sc->h[i], 0, buf, sc->size[i]), "write");
    }
    for (int i = 1; i < TOTAL; i += 2) must(relo_release(sc->dev, sc->h[i]), "release");
}

/* Kept allocations whose bytes read back as written. */
static int scene_intact(scene *sc, uint64_t *want, uint64_t *got)
{
    int ok = 0;
    for (int i = 0; i < TOTAL; i += 2) {
        pattern(want, sc->size[i], i);
        must(relo_read(sc->dev, sc->h[i], 0, got, sc->size[i]), "read");
        ok += memcmp(want, got, (size_t)sc->size[i]) == 0;
    }
    return ok;
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < TOTAL; i += 2) must(relo_release(sc->dev, sc->h[i]), "release");
    must(relo_stream_destroy(sc->s1), "stream destroy");
    must(relo_stream_destroy(sc->s2), "stream destroy");
    must(relo_device_destroy(sc->dev), "device destroy");
}

/* ------------------------------------------------------------------------ */
/* The other stream's thread                                                */
/* ------------------------------------------------------------------------ */

typedef struct other {
    relo_device *dev;
    relo_stream *s;
    relo_handle own;
    atomic_bool stop;
    atomic_bool in_reclaim;
    bench_lat in[BENCH_CALL_COUNT], out[BENCH_CALL_COUNT];
    uint64_t failures;
    uint64_t waits; /* device waits its own calls made */
} other;

static relo_status one_call(other *o, bench_call k, relo_handle *tmp, unsigned char *bytes)
{
    relo_binding b;
    switch (k) {
    case BENCH_RESOLVE: return relo_resolve(o->s, o->own, &b);
    case BENCH_PIN: return relo_pin(o->s, o->own, &b);
    case BENCH_UNPIN: return relo_unpin(o->dev, o->own);
    case BENCH_WRITE: return relo_write(o->dev, o->own, 0, bytes, 64);
    case BENCH_READ: return relo_read(o->dev, o->own, 0, bytes, 64);
    case BENCH_RESERVE: return relo_reserve(o->s, 4 * KIB, tmp);
    case BENCH_RELEASE: return relo_release(o->dev, *tmp);
    default: return RELO_ERR_INVALID_ARGUMENT;
    }
}

static void *other_loop(void *arg)
{
    other *o = arg;
    /* The order a launch path and its temporaries take. */
    static const bench_call order[] = {BENCH_RESOLVE, BENCH_PIN,     BENCH_UNPIN,  BENCH_WRITE,
                                       BENCH_READ,    BENCH_RESERVE, BENCH_RELEASE};
    unsigned char bytes[64];
    long v0 = bench_voluntary_switches();
    uint64_t waits0 = bench_thread_waits();
    for (uint32_t n = 1; !atomic_load(&o->stop); n++) {
        relo_handle tmp = {0};
        memset(bytes, (int)(n & 0xFF), sizeof bytes);
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
            bench_call k = order[i];
            bool during = atomic_load(&o->in_reclaim);
            uint64_t t0 = bench_now_ns();
            relo_status st = one_call(o, k, &tmp, bytes);
            uint64_t t1 = bench_now_ns();
            during |= atomic_load(&o->in_reclaim);
            if (st != RELO_OK) o->failures++;
            if (k == BENCH_READ && bytes[63] != (unsigned char)(n & 0xFF)) o->failures++;
            bool blocked = false;
            if (t1 - t0 > BENCH_SLOW_NS) {
                long v = bench_voluntary_switches();
                blocked = v != v0;
                v0 = v;
            }
            bench_lat_add(during ? &o->in[k] : &o->out[k], t1 - t0, blocked);
        }
        if (n % 32 == 0) v0 = bench_voluntary_switches();
    }
    o->waits = bench_thread_waits() - waits0;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Rounds                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct placement_result {
    relo_placement placement;
    double reclaim_ms[MAX_ROUNDS], waits[MAX_ROUNDS], passes[MAX_ROUNDS], moved[MAX_ROUNDS],
        mib_moved[MAX_ROUNDS], in_max_ms[MAX_ROUNDS], out_max_ms[MAX_ROUNDS], other_waits[MAX_ROUNDS];
    int rounds, intact, kept;
    bench_lat in[BENCH_CALL_COUNT], out[BENCH_CALL_COUNT];
    uint64_t failures;
} placement_result;

static uint64_t lat_max(const bench_lat *kinds)
{
    uint64_t m = 0;
    for (int k = 0; k < BENCH_CALL_COUNT; k++)
        if (kinds[k].max_ns > m) m = kinds[k].max_ns;
    return m;
}

static void round_once(placement_result *r, bool record, uint64_t *buf, uint64_t *buf2)
{
    static scene sc;
    memset(&sc, 0, sizeof sc);
    scene_open(&sc, r->placement, buf);
    static other o;
    memset(&o, 0, sizeof o);
    o.dev = sc.dev;
    o.s = sc.s2;
    must(relo_reserve(sc.s2, OWN_BYTES, &o.own), "own reserve");

    relo_stats before, after;
    must(relo_device_stats(sc.dev, &before), "stats");
    sc.wrap.wait_ns = WAIT_NS; /* read by the pass, which starts after this */
    pthread_t t;
    if (pthread_create(&t, NULL, other_loop, &o) != 0) exit(1);
    bench_sleep_ns(IDLE_NS);
    atomic_store(&o.in_reclaim, true);
    uint64_t waits0 = bench_thread_waits();
    uint64_t t0 = bench_now_ns();
    must(relo_reclaim(sc.s1), "reclaim");
    uint64_t t1 = bench_now_ns();
    uint64_t waits = bench_thread_waits() - waits0;
    atomic_store(&o.in_reclaim, false);
    bench_sleep_ns(IDLE_NS);
    atomic_store(&o.stop, true);
    pthread_join(t, NULL);
    must(relo_device_stats(sc.dev, &after), "stats");
    int intact = scene_intact(&sc, buf, buf2);
    must(relo_release(sc.dev, o.own), "own release");
    scene_close(&sc);
    if (intact != TOTAL / 2) {
        fprintf(stderr, "bench_reclaim_price: %s: %d of %d allocations intact\n",
                relo_placement_name(r->placement), intact, TOTAL / 2);
        exit(1);
    }
    if (!record) return;
    int i = r->rounds++;
    r->reclaim_ms[i] = (double)(t1 - t0) * 1e-6;
    r->waits[i] = (double)waits;
    r->other_waits[i] = (double)o.waits;
    r->passes[i] = (double)(after.relocations - before.relocations);
    r->moved[i] = (double)(after.allocations_moved - before.allocations_moved);
    r->mib_moved[i] = (double)(after.bytes_moved - before.bytes_moved) / (double)MIB;
    r->in_max_ms[i] = (double)lat_max(o.in) * 1e-6;
    r->out_max_ms[i] = (double)lat_max(o.out) * 1e-6;
    r->intact += intact;
    r->kept += TOTAL / 2;
    r->failures += o.failures;
    for (int k = 0; k < BENCH_CALL_COUNT; k++) {
        bench_lat_merge(&r->in[k], &o.in[k]);
        bench_lat_merge(&r->out[k], &o.out[k]);
    }
}

static void report(placement_result *r)
{
    printf("\n%s%s, %d rounds:\n", relo_placement_name(r->placement),
           r->placement == RELO_PLACEMENT_PACKED ? " (the default)" : "", r->rounds);
    bench_summary w = bench_summarize(r->waits, r->rounds);
    bench_print("passes per reclaim", "", bench_summarize(r->passes, r->rounds));
    bench_print("device waits per reclaim", "", w);
    bench_print("device waits by the other stream's calls", "", bench_summarize(r->other_waits, r->rounds));
    bench_summary t = bench_summarize(r->reclaim_ms, r->rounds);
    bench_print("relo_reclaim", "ms", t);
    bench_ratio("reclaim / one pass's two waits (200 ms)", t.median / 200.0, "~1: one pass, no more");
    bench_print("allocations moved per reclaim", "", bench_summarize(r->moved, r->rounds));
    bench_print("MiB moved per reclaim", "MiB", bench_summarize(r->mib_moved, r->rounds));
    printf("  bytes intact: %d of %d kept allocations, read back after each reclaim\n", r->intact, r->kept);
    bench_summary in = bench_summarize(r->in_max_ms, r->rounds),
                  out = bench_summarize(r->out_max_ms, r->rounds);
    bench_print("other stream: longest call during the reclaim", "ms", in);
    bench_print("other stream: longest call outside it", "ms", out);
    printf("  other stream's calls during the reclaims:\n");
    bench_lat_print_kinds("    ", r->in);
    printf("  other stream's calls outside the reclaims (baseline, same rounds):\n");
    bench_lat_print_kinds("    ", r->out);
    uint64_t over = 0, over_blocked = 0, max_blocked = 0;
    for (int k = 0; k < BENCH_CALL_COUNT; k++) {
        over += r->in[k].over_1ms;
        over_blocked += r->in[k].over_1ms_blocked;
        if (r->in[k].max_blocked_ns > max_blocked) max_blocked = r->in[k].max_blocked_ns;
    }
    printf("  target, <= 2 device waits per reclaim: %s (most %.0f)\n", w.max <= 2 ? "met" : "missed", w.max);
    printf(
        "  target, no other-stream call over 1 ms during the reclaim: %s (%llu over 1 ms, %llu of them "
        "blocked, longest that blocked %.3f ms); failed calls: %llu\n",
        over == 0           ? "met"
        : over_blocked == 0 ? "met for every call that blocked; preempted ones exceeded it"
                            : "missed",
        (unsigned long long)over, (unsigned long long)over_blocked, (double)max_blocked * 1e-6,
        (unsigned long long)r->failures);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 3) rounds = 3;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    uint64_t *buf = malloc(8 * MIB), *buf2 = malloc(8 * MIB);
    if (!buf || !buf2) return 1;
    static placement_result res[2];
    res[0].placement = RELO_PLACEMENT_PACKED;
    res[1].placement = RELO_PLACEMENT_ADAPTIVE;
    printf(
        "bench_reclaim_price: wait_device and wait_copies sleep 100 ms each; stream 1 holds %d x 256 KiB and "
        "%d x 3-7 MiB, every other one released; %d rounds per placement after a warm-up\n",
        SMALL, LARGE, rounds);
    /* Round -1 warms up; the placements alternate round by round, the
     * default first. */
    for (int r = -1; r < rounds; r++)
        for (int p = 0; p < 2; p++) round_once(&res[p], r >= 0, buf, buf2);
    for (int p = 0; p < 2; p++) report(&res[p]);
    bench_summary d = bench_summarize(res[0].reclaim_ms, res[0].rounds),
                  s = bench_summarize(res[1].reclaim_ms, res[1].rounds);
    printf("\n");
    bench_ratio("reclaim time, packed / adaptive", d.median / s.median,
                "~1: the default pays what adaptive pays");
    free(buf);
    free(buf2);
    return res[0].failures || res[1].failures ? 1 : 0;
}
