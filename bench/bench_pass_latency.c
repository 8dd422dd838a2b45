/*
 * bench_pass_latency.c — how long another thread's calls wait while a
 * relocation pass waits for a slow device.
 *
 * The backend is the host backend wrapped (bench_backend.h) so that
 * wait_device and wait_copies each sleep 100 ms, as a device busy with
 * long kernels would, and counted: every reclaim's device waits
 * (wait_device + wait_copies calls) are printed.
 *
 * Each round builds, on a fresh device, one allocation A of the relocating
 * stream that its placement moves at relo_reclaim, and an allocation B of the
 * same stream that does not move, then times relo_reclaim of that stream:
 * plan, 100 ms device wait, copy, 100 ms copy wait, commit. The scene per
 * placement:
 *
 *   packed (the default) a 4 MiB block, released, leaves a page in which
 *                        A (2 MiB) is then alone, half full; a 4.25 MiB
 *                        block, released, leaves a page in which B
 *                        (2.25 MiB) then stands with 2 MiB free: the
 *                        reclaim packs A into B's page and gives A's back;
 *   adaptive             A (1 MiB) on the arena's first page, then B
 *                        (9.5 MiB) grows the arena: A's page is outdated
 *                        and the reclaim moves A next to B.
 *
 * Meanwhile a second thread calls relo in a loop and times every single
 * call, by kind (bench_calls.h). Three scenarios:
 *
 *   other stream  the second thread works on another stream of the same
 *                 device, holding 64 allocations: resolve, pin and unpin
 *                 them, and reserve 4 KiB and release it, as a runtime's
 *                 other stream does (the target: no call over 1 ms during
 *                 the pass);
 *   same stream   the second thread resolves, pins and unpins B through
 *                 the relocating stream. This goes beyond relo.h's "a
 *                 stream is used by one thread at a time" (which is why
 *                 it reserves nothing there); it shows that the pass holds
 *                 no lock of the stream's;
 *   slow free     the first, with a backend whose free also sleeps 20 ms,
 *                 as releasing a large buffer does on some drivers (PoCL
 *                 unmaps host memory): it shows whether giving the
 *                 emptied page back happens on the path other threads
 *                 wait on.
 *
 * Each round has 5 ms of idle time before and after the pass, so calls
 * outside any pass are measured in the same run as a baseline: on a loaded
 * 2-core machine the scheduler alone can stretch a call past 1 ms. Printed
 * per scenario and placement, the default first, the placements' rounds
 * interleaved: device waits and time per reclaim, the longest call of each
 * round inside the pass and outside (median and spread over rounds), and
 * per kind of call the longest, the longest that blocked and the 99th
 * percentile while the pass ran. A slow call counts as blocked when its
 * thread switched voluntarily (it slept: on relo's lock, or on whatever
 * relo waited for); otherwise it was preempted. Each round checks A's bytes
 * after the move.
 *
 * Usage: bench_pass_latency [rounds]   (default 9, after one warm-up round)
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

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)
#define WAIT_NS (100 * 1000000L)
#define IDLE_NS (5 * 1000000L)
#define FREE_NS (20 * 1000000L)
#define MAX_ROUNDS 64
#define OTHER_HANDLES 64
#define A_MAX (2 * MIB)

static void must(relo_status s, const char *what)
{
    if (s != RELO_OK) {
        fprintf(stderr, "bench_pass_latency: %s: %s\n", what, relo_status_name(s));
        exit(1);
    }
}

/* ------------------------------------------------------------------------ */
/* The second thread                                                        */
/* ------------------------------------------------------------------------ */

typedef struct caller {
    relo_device *dev;
    relo_stream *stream; /* the stream it calls through */
    const relo_handle *handles;
    int handle_count;
    bool reserves; /* also reserves 4 KiB and releases it */
    atomic_bool stop;
    atomic_bool in_pass; /* the relocating thread is inside relo_reclaim */
    bench_lat in[BENCH_CALL_COUNT], out[BENCH_CALL_COUNT];
    uint64_t errors;
    uint64_t waits; /* device waits its own calls made */
} caller;

static relo_status call_one(caller *c, bench_call k, relo_handle h, relo_handle *tmp)
{
    relo_binding b;
    switch (k) {
    case BENCH_RESOLVE: return relo_resolve(c->stream, h, &b);
    case BENCH_PIN: return relo_pin(c->stream, h, &b);
    case BENCH_UNPIN: return relo_unpin(c->dev, h);
    case BENCH_RESERVE: return relo_reserve(c->stream, 4 * KIB, tmp);
    case BENCH_RELEASE: return relo_release(c->dev, *tmp);
    default: return RELO_ERR_INVALID_ARGUMENT;
    }
}

static void *caller_loop(void *arg)
{
    caller *c = arg;
    int i = 0, kinds = c->reserves ? 5 : 3;
    long v0 = bench_voluntary_switches();
    uint64_t waits0 = bench_thread_waits();
    for (uint32_t n = 1; !atomic_load(&c->stop); n++) {
        relo_handle h = c->handles[i], tmp = {0};
        i = i + 1 == c->handle_count ? 0 : i + 1;
        for (int k = 0; k < kinds; k++) {
            bool during = atomic_load(&c->in_pass);
            uint64_t t0 = bench_now_ns();
            relo_status st = call_one(c, (bench_call)k, h, &tmp);
            uint64_t t1 = bench_now_ns();
            during |= atomic_load(&c->in_pass);
            if (st != RELO_OK) c->errors++;
            /* getrusage costs more than a resolve: it is read once per
             * batch, and after a slow call. A slow call counts as blocked
             * when the thread switched voluntarily anywhere in its batch
             * so far, which errs towards blaming relo. */
            bool blocked = false;
            if (t1 - t0 > BENCH_SLOW_NS) {
                long v = bench_voluntary_switches();
                blocked = v != v0;
                v0 = v;
            }
            bench_lat_add(during ? &c->in[k] : &c->out[k], t1 - t0, blocked);
        }
        if (n % 32 == 0) v0 = bench_voluntary_switches();
    }
    c->waits = bench_thread_waits() - waits0;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* One round                                                                */
/* ------------------------------------------------------------------------ */

typedef enum scenario { OTHER_STREAM, SAME_STREAM, SLOW_FREE, SCENARIO_COUNT } scenario;

static const char *const scenario_names[SCENARIO_COUNT] = {
    "another stream (resolve, pin, unpin, reserve 4 KiB, release)",
    "the relocating stream, an allocation that does not move (resolve, pin, unpin)",
    "another stream, and giving a page back takes 20 ms",
};

typedef struct result {
    double in_max_ms[MAX_ROUNDS], in_blocked_ms[MAX_ROUNDS], out_max_ms[MAX_ROUNDS], pass_ms[MAX_ROUNDS],
        waits[MAX_ROUNDS], other_waits[MAX_ROUNDS], other_moved[MAX_ROUNDS];
    int rounds;
    bench_lat in[BENCH_CALL_COUNT], out[BENCH_CALL_COUNT];
    uint64_t moved, errors;
} result;

static void fill(unsigned char *p, uint64_t n, unsigned key)
{
    for (uint64_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 131u + key);
}

/* Builds the placement's scene on stream s: A (written with pattern, its
 * size in *a_size) moves at reclaim, B does not. */
static void build_scene(relo_device *dev, relo_stream *s, relo_placement placement,
                        const unsigned char *pattern, relo_handle *a, uint64_t *a_size, relo_handle *b)
{
    if (placement == RELO_PLACEMENT_ADAPTIVE) {
        *a_size = MIB;
        must(relo_reserve(s, MIB, a), "reserve A");
        must(relo_write(dev, *a, 0, pattern, MIB), "write");
        must(relo_reserve(s, 19 * MIB / 2, b), "reserve B");
        return;
    }
    const uint64_t size = A_MAX;
    relo_handle w1, w2;
    must(relo_reserve(s, 2 * size, &w1), "reserve");
    must(relo_reserve(s, 2 * size + size / 8, &w2), "reserve");
    must(relo_release(dev, w1), "release");
    *a_size = size;
    must(relo_reserve(s, size, a), "reserve A");
    must(relo_write(dev, *a, 0, pattern, size), "write");
    must(relo_release(dev, w2), "release");
    must(relo_reserve(s, size + size / 8, b), "reserve B");
}

static void lat_kinds_max(const bench_lat *kinds, uint64_t *max, uint64_t *max_blocked)
{
    *max = *max_blocked = 0;
    for (int k = 0; k < BENCH_CALL_COUNT; k++) {
        if (kinds[k].max_ns > *max) *max = kinds[k].max_ns;
        if (kinds[k].max_blocked_ns > *max_blocked) *max_blocked = kinds[k].max_blocked_ns;
    }
}

static void run_round(scenario sc, relo_placement placement, bool record, result *res, unsigned char *pattern,
                      unsigned char *back)
{
    relo_host_desc hd;
    memset(&hd, 0, sizeof hd);
    hd.alignment = 256;
    hd.max_page_size = 256 * MIB;
    static bench_wrap wrap;
    relo_backend *host = NULL, *backend = NULL;
    relo_device *dev = NULL;
    must(relo_backend_host_create(&hd, &host), "host backend");
    must(bench_wrap_create(&wrap, host, WAIT_NS, sc == SLOW_FREE ? FREE_NS : 0, &backend), "wrap");
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    must(relo_device_create(&dd, backend, &dev), "device");
    relo_stream *other = NULL, *s = NULL;
    must(relo_stream_create(dev, NULL, &other), "stream");
    relo_handle others[OTHER_HANDLES];
    for (int i = 0; i < OTHER_HANDLES; i++) must(relo_reserve(other, 4 * KIB, &others[i]), "reserve");
    must(relo_stream_create(dev, NULL, &s), "stream");
    relo_handle a, b;
    uint64_t a_size;
    fill(pattern, A_MAX, (unsigned)res->rounds * 7u + (unsigned)placement);
    build_scene(dev, s, placement, pattern, &a, &a_size, &b);
    relo_stats st, ost;
    must(relo_stream_stats(s, &st), "stats");
    must(relo_stream_stats(other, &ost), "stats");
    uint64_t moved_before = st.allocations_moved, other_moved_before = ost.allocations_moved;

    static caller c;
    memset(&c, 0, sizeof c);
    c.dev = dev;
    c.stream = sc == SAME_STREAM ? s : other;
    c.handles = sc == SAME_STREAM ? &b : others;
    c.handle_count = sc == SAME_STREAM ? 1 : OTHER_HANDLES;
    c.reserves = sc != SAME_STREAM;
    pthread_t t;
    if (pthread_create(&t, NULL, caller_loop, &c) != 0) exit(1);
    bench_sleep_ns(IDLE_NS);
    atomic_store(&c.in_pass, true);
    uint64_t waits_before = bench_thread_waits();
    uint64_t t0 = bench_now_ns();
    must(relo_reclaim(s), "reclaim");
    uint64_t t1 = bench_now_ns();
    uint64_t waits = bench_thread_waits() - waits_before;
    atomic_store(&c.in_pass, false);
    bench_sleep_ns(IDLE_NS);
    atomic_store(&c.stop, true);
    pthread_join(t, NULL);

    must(relo_stream_stats(s, &st), "stats");
    must(relo_stream_stats(other, &ost), "stats");
    must(relo_read(dev, a, 0, back, a_size), "read");
    if (st.allocations_moved != moved_before + 1 || memcmp(back, pattern, (size_t)a_size) != 0) {
        fprintf(stderr, "bench_pass_latency: %s: A did not move intact (%llu moved)\n",
                relo_placement_name(placement), (unsigned long long)(st.allocations_moved - moved_before));
        exit(1);
    }
    must(relo_release(dev, a), "release");
    must(relo_release(dev, b), "release");
    must(relo_stream_destroy(s), "stream destroy");
    for (int i = 0; i < OTHER_HANDLES; i++) must(relo_release(dev, others[i]), "release");
    must(relo_stream_destroy(other), "stream destroy");
    must(relo_device_destroy(dev), "device destroy");
    if (!record) return;
    int r = res->rounds++;
    uint64_t in_max, in_blocked, out_max, out_blocked;
    lat_kinds_max(c.in, &in_max, &in_blocked);
    lat_kinds_max(c.out, &out_max, &out_blocked);
    res->in_max_ms[r] = (double)in_max * 1e-6;
    res->in_blocked_ms[r] = (double)in_blocked * 1e-6;
    res->out_max_ms[r] = (double)out_max * 1e-6;
    res->pass_ms[r] = (double)(t1 - t0) * 1e-6;
    res->waits[r] = (double)waits;
    res->other_waits[r] = (double)c.waits;
    res->other_moved[r] = (double)(ost.allocations_moved - other_moved_before);
    res->moved++;
    res->errors += c.errors;
    for (int k = 0; k < BENCH_CALL_COUNT; k++) {
        bench_lat_merge(&res->in[k], &c.in[k]);
        bench_lat_merge(&res->out[k], &c.out[k]);
    }
}

static void report(relo_placement placement, result *r)
{
    printf("  %s%s, %d rounds:\n", relo_placement_name(placement),
           placement == RELO_PLACEMENT_PACKED ? " (the default)" : "", r->rounds);
    bench_summary w = bench_summarize(r->waits, r->rounds);
    bench_print("device waits per reclaim", "", w);
    bench_print("device waits by the second thread, per round", "",
                bench_summarize(r->other_waits, r->rounds));
    bench_print("allocations moved on the other stream", "", bench_summarize(r->other_moved, r->rounds));
    bench_print("relo_reclaim (one pass: 2 x 100 ms waits)", "ms", bench_summarize(r->pass_ms, r->rounds));
    bench_summary in = bench_summarize(r->in_max_ms, r->rounds),
                  out = bench_summarize(r->out_max_ms, r->rounds);
    bench_print("longest call during the pass, per round", "ms", in);
    bench_print("longest blocked call during the pass", "ms", bench_summarize(r->in_blocked_ms, r->rounds));
    bench_print("longest call outside passes, per round", "ms", out);
    bench_ratio("longest during / longest outside (medians)", out.median > 0 ? in.median / out.median : 0,
                "~1: the pass adds no wait");
    printf("    calls while the pass ran, per kind:\n");
    bench_lat_print_kinds("      ", r->in);
    uint64_t max = 0, max_blocked = 0, calls = 0;
    for (int k = 0; k < BENCH_CALL_COUNT; k++) {
        if (r->in[k].max_ns > max) max = r->in[k].max_ns;
        if (r->in[k].max_blocked_ns > max_blocked) max_blocked = r->in[k].max_blocked_ns;
        calls += r->out[k].calls;
    }
    printf("    calls outside passes: %llu (per kind, longest:", (unsigned long long)calls);
    for (int k = 0; k < BENCH_CALL_COUNT; k++)
        if (r->out[k].calls)
            printf(" %s %.3f ms", bench_call_name((bench_call)k), (double)r->out[k].max_ns * 1e-6);
    printf(")\n");
    printf("    A moved intact: %llu of %d rounds; failed calls: %llu\n", (unsigned long long)r->moved,
           r->rounds, (unsigned long long)r->errors);
    printf(
        "    target, <= 2 device waits per reclaim: %s; no call over 1 ms during the pass: %s; no call that "
        "blocked over 1 ms: %s\n",
        w.max <= 2 ? "met" : "missed", max <= 1000000u ? "met" : "missed",
        max_blocked <= 1000000u ? "met" : "missed");
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    if (rounds < 3) rounds = 3;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    static const relo_placement placements[2] = {RELO_PLACEMENT_PACKED, RELO_PLACEMENT_ADAPTIVE};
    static result res[SCENARIO_COUNT][2];
    unsigned char *pattern = malloc(A_MAX), *back = malloc(A_MAX);
    if (!pattern || !back) return 1;
    printf(
        "bench_pass_latency: wait_device and wait_copies sleep 100 ms each; %d rounds per scenario and "
        "placement\n",
        rounds);
    uint64_t errors = 0;
    for (int sc = 0; sc < SCENARIO_COUNT; sc++) {
        /* Round -1 warms up; the placements alternate round by round. */
        for (int r = -1; r < rounds; r++)
            for (int p = 0; p < 2; p++)
                run_round((scenario)sc, placements[p], r >= 0, &res[sc][p], pattern, back);
        printf("\n%s:\n", scenario_names[sc]);
        for (int p = 0; p < 2; p++) {
            report(placements[p], &res[sc][p]);
            errors += res[sc][p].errors;
        }
    }
    free(pattern);
    free(back);
    return errors ? 1 : 0;
}
