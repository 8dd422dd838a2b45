/*
 * test_random_reloc.c — random relocation across two streams, with graph
 * captures in between: reserve (now and then a size large enough to grow
 * the arena's pages), release, rewrite patterns, reclaim, and captures
 * (prepare, begin, resolves and reservations on the recording stream, some
 * of them refused with PAGE_UPDATE_FORBIDDEN, end, graph destroyed a while
 * later).
 *
 * Checked: after every relocation (and every reclaim or refused
 * reservation, which clean up) every live allocation holds its pattern and
 * relo_device_check passes, also inside every relocation pass on the host
 * backend (the streams' finishes call it while the pass waits for the
 * device; at least once a run); each run moves at least a set number of
 * allocations, so a library that stopped relocating fails here instead of
 * passing with nothing to check; nothing moves while a stream records;
 * allocations a live graph resolved keep their place; a doomed recording
 * ends with PAGE_UPDATE_FORBIDDEN and no graph; per-stream counts match
 * the shadow model.
 *
 * It also measures the longest single relo_reserve / relo_reclaim /
 * relo_capture_prepare call and prints "longest pause: X us", once on the
 * host backend (bytes really copied) and once on the sim backend (relo's
 * own bookkeeping only).
 *
 * RELO_SEED=n reproduces a run; RELO_TRACE=1 prints every operation.
 */
#include "check.h"
#include "fixture.h"
#include "shadow.h"

enum { TOUCHED_MAX = 32, GRAPHS_MAX = 4 };

/* A sealed graph and the allocations it resolved while recording. */
typedef struct live_graph {
    relo_graph *graph;
    int ops_left;
    int n;
    relo_handle h[TOUCHED_MAX];
    relo_binding b[TOUCHED_MAX];
} live_graph;

typedef struct pause {
    uint64_t ns;
    const char *call;
    uint64_t size;
    int op;
    uint64_t moved; /* bytes the call relocated */
} pause;

/* Records a call that began at t0; moved_before is the device's
 * bytes_moved before it (read outside the timed span). */
static void timed(pause *worst, pause *sum_reserve, uint64_t t0, const char *call, uint64_t size, int op,
                  relo_device *d, uint64_t moved_before)
{
    uint64_t ns = fx_now_ns() - t0;
    if (ns > worst->ns) {
        worst->ns = ns;
        worst->call = call;
        worst->size = size;
        worst->op = op;
        worst->moved = fx_dev_stats(d).bytes_moved - moved_before;
    }
    if (call[0] == 'r' && call[5] == 'r') { /* relo_reserve */
        sum_reserve->ns += ns;
        sum_reserve->op++;
    }
}

/* Sizes stay modest (the host backend fills every fresh and freed page, so
 * bytes set this test's time) but span the small pool and many arena page
 * sizes. */
static uint64_t random_size(uint64_t *rng, double progress)
{
    uint64_t u = fx_rand(rng) % 100;
    if (u < 40) return fx_range(rng, 0, 64 * KiB);
    if (u < 75) return fx_range(rng, 64 * KiB, 1 * MiB);
    if (u < 95) return fx_range(rng, 1 * MiB, 3 * MiB);
    /* Large: the top ramps up so the arena grows through many sizes. */
    uint64_t top = 4 * MiB + (uint64_t)(progress * (double)(28 * MiB));
    return fx_range(rng, top / 2, top);
}

/* Whether every allocation a live graph resolved is still where it was. */
static void check_guards(const live_graph *g, int n_graphs, const shadow *m, relo_stream *s)
{
    for (int k = 0; k < n_graphs; k++) {
        for (int i = 0; i < g[k].n; i++) {
            bool live = false;
            for (size_t j = 0; j < m->n && !live; j++) live = m->a[j].h.id == g[k].h[i].id;
            if (!live) continue;
            relo_binding now;
            expect_ok(relo_resolve(s, g[k].h[i], &now));
            expect_true(fx_same_place(now, g[k].b[i]));
        }
    }
}

/* ops random operations from seed, on the host backend or (sim) the
 * simulated one; the run must move at least min_moved allocations. */
static void run(uint64_t seed, int ops, bool sim, relo_placement placement, uint64_t min_moved)
{
    uint64_t rng = seed;
    printf("  seed %llu%s\n", (unsigned long long)seed, sim ? " (sim backend: no bytes)" : "");
    relo_host_desc hd = fx_host();
    hd.capacity = 256 * MiB;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    fx f;
    if (sim) {
        require_ok(fx_open_sim(&f, &hd, &dd));
        require_ok(relo_stream_create(f.dev, NULL, &f.s2));
    } else {
        require_ok(fx_open2(&f, &hd, &dd));
    }
    relo_stream *s[2] = {f.s, f.s2};
    /* The checks would count in the pauses the sim case measures. */
    fx_pass_checks in_pass = {0};
    if (!sim) {
        fx_check_in_passes(&in_pass, f.dev, f.s);
        fx_check_in_passes(&in_pass, f.dev, f.s2);
    }
    shadow m = {0};
    m.no_bytes = sim;
    live_graph graphs[GRAPHS_MAX];
    int n_graphs = 0;
    int rec = -1;    /* the recording stream, or -1 */
    int rec_ops = 0; /* operations left in this recording */
    bool doomed = false;
    live_graph cur; /* what the recording resolved */
    pause worst = {0, "none", 0, -1, 0}, reserves = {0, "relo_reserve", 0, 0, 0};
    int n_forbidden = 0, n_captures = 0, n_doomed = 0, n_oom = 0, n_verified = 0;
    bool trace = getenv("RELO_TRACE") != NULL;
    relo_stats dev = fx_dev_stats(f.dev);

    for (int op = 0; op < ops; op++) {
        int failures = check_failures_;
        bool was_recording = rec >= 0; /* prepare may move; a recording may not */
        uint64_t r = fx_rand(&rng) % 100;
        if (r < 45 && m.bytes[0] + m.bytes[1] > 110 * MiB) r = 50;
        bool cleaned = false; /* a reclaim or a refused reservation cleaned up */
        if (r >= 45 && r < 65 && m.n == 0) r = 0;

        if (r < 45) {
            int si = (int)(fx_rand(&rng) % 2);
            if (rec >= 0 && fx_rand(&rng) % 2) si = rec; /* lean on the recording stream */
            uint64_t size = random_size(&rng, (double)op / ops);
            relo_handle h = {0};
            uint64_t t0 = fx_now_ns();
            relo_status st = relo_reserve(s[si], size, &h);
            timed(&worst, &reserves, t0, "relo_reserve", size, op, f.dev, dev.bytes_moved);
            if (trace)
                fprintf(stderr, "%d: reserve s%d %llu -> %s %#llx\n", op, si, (unsigned long long)size,
                        relo_status_name(st), (unsigned long long)h.id);
            if (st == RELO_OK) {
                shadow_add(&m, f.dev, h, size, si);
            } else if (st == RELO_ERR_PAGE_UPDATE_FORBIDDEN) {
                expect_eq(si, rec);
                doomed = true;
                n_forbidden++;
            } else if (st == RELO_ERR_OUT_OF_MEMORY) {
                n_oom++;
                cleaned = true;
            } else {
                expect_ok(st);
            }
        } else if (r < 65) {
            size_t i = shadow_pick(&m, &rng);
            if (trace) fprintf(stderr, "%d: release %#llx\n", op, (unsigned long long)m.a[i].h.id);
            shadow_release(&m, f.dev, i);
        } else if (r < 75) {
            if (m.n) shadow_rewrite(&m, f.dev, shadow_pick(&m, &rng));
        } else if (r < 80) {
            int si = (int)(fx_rand(&rng) % 2);
            uint64_t t0 = fx_now_ns();
            relo_status st = relo_reclaim(s[si]);
            timed(&worst, &reserves, t0, "relo_reclaim", 0, op, f.dev, dev.bytes_moved);
            if (trace) fprintf(stderr, "%d: reclaim s%d -> %s\n", op, si, relo_status_name(st));
            expect_status(st, rec >= 0 ? RELO_ERR_RECORDING : RELO_OK);
            cleaned = true;
        } else if (r < 85 && rec < 0 && n_graphs < GRAPHS_MAX) {
            int si = (int)(fx_rand(&rng) % 2);
            uint64_t t0 = fx_now_ns();
            expect_ok(relo_capture_prepare(s[si]));
            timed(&worst, &reserves, t0, "relo_capture_prepare", 0, op, f.dev, dev.bytes_moved);
            expect_ok(relo_capture_begin(s[si]));
            if (trace) fprintf(stderr, "%d: capture on s%d\n", op, si);
            rec = si;
            rec_ops = (int)fx_range(&rng, 3, 30);
            doomed = false;
            memset(&cur, 0, sizeof cur);
            n_captures++;
        } else if (r < 95 && rec >= 0 && m.n) {
            /* The recording resolves a handle of either stream. */
            size_t i = shadow_pick(&m, &rng);
            relo_binding b;
            expect_ok(relo_resolve(s[rec], m.a[i].h, &b));
            if (cur.n < TOUCHED_MAX) {
                cur.h[cur.n] = m.a[i].h;
                cur.b[cur.n] = b;
                cur.n++;
            }
        } else {
            shadow_check_stale(&m, s[op % 2], f.dev, &rng);
        }

        /* The recording ends after its operations; graphs die after theirs. */
        if (rec >= 0 && --rec_ops <= 0) {
            relo_graph *g = (relo_graph *)&cur;
            relo_status st = relo_capture_end(s[rec], &g);
            if (trace) fprintf(stderr, "%d: end capture on s%d -> %s\n", op, rec, relo_status_name(st));
            if (doomed) {
                expect_status(st, RELO_ERR_PAGE_UPDATE_FORBIDDEN);
                expect_true(g == NULL);
                n_doomed++;
            } else {
                expect_ok(st);
                expect_true(g != NULL);
                cur.graph = g;
                cur.ops_left = (int)fx_range(&rng, 1, 200);
                graphs[n_graphs++] = cur;
            }
            rec = -1;
        }
        for (int k = 0; k < n_graphs; k++) {
            if (--graphs[k].ops_left > 0) continue;
            relo_graph_destroy(graphs[k].graph);
            graphs[k--] = graphs[--n_graphs];
        }

        relo_stats now = fx_dev_stats(f.dev);
        for (int si = 0; si < 2; si++) {
            relo_stats st = fx_stats(s[si]);
            expect_eq(st.allocations, m.count[si]);
            expect_eq(st.bytes_in_use, m.bytes[si]);
        }
        bool moved = now.allocations_moved != dev.allocations_moved ||
                     now.relocations_abandoned != dev.relocations_abandoned ||
                     now.bytes_leaked != dev.bytes_leaked;
        if (moved && was_recording) {
            fprintf(stderr, "relocation while stream %d records\n", rec);
            expect_true(!moved);
        }
        if (moved || cleaned) {
            expect_eq(shadow_verify(&m, f.dev), 0);
            expect_ok(relo_device_check(f.dev));
            /* Resolve on a stream that is not recording: resolving on the
             * recording one would touch (and later guard) more pages. */
            check_guards(graphs, n_graphs, &m, s[rec == 0 ? 1 : 0]);
            n_verified++;
        }
        dev = now;
        if (op % 100 == 99) {
            expect_ok(relo_device_check(f.dev));
            if (rec < 0) {
                check_guards(graphs, n_graphs, &m, s[0]);
                shadow_check_layout(&m, s[0]);
                shadow_check_all_stale(&m, s[1]);
            }
        }
        if (check_failures_ != failures) {
            fprintf(stderr, "first failure at operation %d (kind %llu), seed %llu\n", op,
                    (unsigned long long)r, (unsigned long long)seed);
            shadow_free(&m);
            return;
        }
    }

    if (rec >= 0) {
        relo_graph *g = NULL;
        relo_status st = relo_capture_end(s[rec], &g);
        expect_status(st, doomed ? RELO_ERR_PAGE_UPDATE_FORBIDDEN : RELO_OK);
        relo_graph_destroy(g);
    }
    for (int k = 0; k < n_graphs; k++) relo_graph_destroy(graphs[k].graph);
    expect_eq(shadow_verify(&m, f.dev), 0);
    relo_stats end = fx_dev_stats(f.dev);
    /* Relocation really ran: without it every check above has nothing to
     * catch. */
    expect_ge(end.allocations_moved, min_moved);
    expect_ge(end.relocations, 3);
    printf(
        "  %d ops: %d captures (%d doomed, %d reservations forbidden), %d refused by the device, "
        "%llu relocations moving %llu allocations (%llu MiB; at least %llu wanted), %llu abandoned, "
        "%d verifications\n",
        ops, n_captures, n_doomed, n_forbidden, n_oom, (unsigned long long)end.relocations,
        (unsigned long long)end.allocations_moved, (unsigned long long)(end.bytes_moved / MiB),
        (unsigned long long)min_moved, (unsigned long long)end.relocations_abandoned, n_verified);
    printf(
        "  longest pause: %llu us (%s, size %llu, operation %d, %llu MiB relocated); "
        "mean relo_reserve %.1f us\n",
        (unsigned long long)(worst.ns / 1000), worst.call, (unsigned long long)worst.size, worst.op,
        (unsigned long long)(worst.moved / MiB),
        reserves.op ? (double)reserves.ns / reserves.op / 1000.0 : 0.0);

    if (!sim) fx_expect_pass_checks(&in_pass, 1);
    while (m.n) shadow_release(&m, f.dev, m.n - 1);
    expect_ok(relo_reclaim_device(f.dev));
    relo_stats st = fx_dev_stats(f.dev);
    expect_eq(st.allocations, 0);
    expect_eq(st.pages, 0);
    shadow_free(&m);
    fx_close(&f);
}

/* The minimum moves of each case sit well under what 18 seeds gave (at
 * least 168, 227 and 126 allocations moved), far above the zero a library
 * that does not relocate gives. */
CHECK_TEST(random_reloc_two_streams_with_captures)
{
    run(check_seed(), 2000, false, RELO_PLACEMENT_ADAPTIVE, 80);
}

/* The same sequence on the sim backend, which holds no bytes: on the host
 * backend the pauses are dominated by the backend filling fresh and freed
 * buffers (memset) and by page faults; here they are relo's own work. */
CHECK_TEST(random_reloc_pauses_without_bytes)
{
    run(check_seed(), 3000, true, RELO_PLACEMENT_ADAPTIVE, 100);
}

/* The packed placement compacts current pages too; captures and guards must
 * hold it back exactly as they hold back relocation. */
CHECK_TEST(random_reloc_packed_placement)
{
    run(check_seed() ^ 0x5DEECE66Du, 1000, false, RELO_PLACEMENT_PACKED, 70);
}

CHECK_MAIN()
