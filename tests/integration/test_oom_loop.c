/*
 * test_oom_loop.c — host-memory exhaustion, at every point.
 *
 * Each scenario (device and streams, mixed reservations across pools,
 * growth, relocation, reclaim, capture) runs with relo__testing_hostmem_fail_at(N,
 * sticky) for N = 1, 2, 3, ... until it completes without meeting an
 * injected failure. Every call must either succeed or come back with a
 * clean RELO_ERR_HOST_MEMORY; after the first such failure the scenario
 * stops and the test checks that no live allocation was lost (its pattern
 * reads back), that relo_device_check passes, that releases and graph
 * destruction still work while every host allocation fails, and that the
 * device tears down completely. Under the AddressSanitizer build
 * LeakSanitizer then proves nothing leaked across all the runs.
 *
 * Relocation is part of every scenario but the EXCLUSIVE one (a layout that
 * never moves anything): after every step that moved an allocation, with
 * or without injection, every live allocation's pattern is read back, and
 * the run without injection must move at least a set number of
 * allocations, so the failures injected into relocation's planning and
 * commit are really met.
 *
 * Each case prints the range of N it went through and what moved.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/hostmem.h"
#include "relo.h"
#include "relo_backend.h"
#include "testing/testing.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

enum { MAX_ALLOCS = 64, MAX_GRAPHS = 4, STREAMS = 2 };

/* Allocations each scenario's clean run moves at least (the scenarios are
 * fixed: today they move 8, 2 and 5). */
enum { MIXED_MOVES = 6, PRESSURE_MOVES = 2, LADDER_MOVES = 5 };

typedef struct alloc {
    relo_handle handle;
    uint64_t size;
    uint32_t refs;
    uint8_t seed;
} alloc;

typedef struct world {
    relo_backend *backend; /* ours until the device takes it */
    relo_device *device;
    relo_stream *streams[STREAMS];
    int recording; /* stream index recording, -1 none */
    int prepared;  /* stream index prepared, -1 none */
    int modes[STREAMS];
    alloc allocs[MAX_ALLOCS];
    int nallocs;
    relo_graph *graphs[MAX_GRAPHS];
    int ngraphs;
    bool oom;               /* an injected failure came back */
    bool broken;            /* an unexpected status came back */
    const char *where;      /* the step that stopped the scenario */
    uint64_t moved;         /* allocations the device moved so far */
    uint64_t moves_checked; /* steps after which a move was verified */
} world;

/* ---- patterns: head, middle and tail windows of each allocation -------- */

static uint8_t pat(uint8_t seed, uint64_t off)
{
    return (uint8_t)(seed ^ (off * 131u) ^ (off >> 9));
}

static int wins(uint64_t size, uint64_t off[3], uint64_t len[3])
{
    uint64_t w = 4096;
    if (size == 0) return 0;
    if (size <= 3 * w) {
        off[0] = 0;
        len[0] = size;
        return 1;
    }
    off[0] = 0;
    off[1] = size / 2;
    off[2] = size - w;
    len[0] = len[1] = len[2] = w;
    return 3;
}

static relo_status put_pattern(world *w, alloc *a)
{
    static uint8_t buf[3 * 4096];
    uint64_t off[3], len[3];
    int n = wins(a->size, off, len);
    for (int i = 0; i < n; i++) {
        for (uint64_t j = 0; j < len[i]; j++) buf[j] = pat(a->seed, off[i] + j);
        relo_status s = relo_write(w->device, a->handle, off[i], buf, len[i]);
        if (s != RELO_OK) return s;
    }
    return RELO_OK;
}

static void verify_patterns(world *w)
{
    static uint8_t buf[3 * 4096];
    for (int k = 0; k < w->nallocs; k++) {
        alloc *a = &w->allocs[k];
        uint64_t off[3], len[3];
        int n = wins(a->size, off, len);
        for (int i = 0; i < n; i++) {
            expect_ok(relo_read(w->device, a->handle, off[i], buf, len[i]));
            for (uint64_t j = 0; j < len[i]; j++) {
                if (buf[j] != pat(a->seed, off[i] + j)) {
                    fprintf(stderr, "allocation %d (size %llu) lost byte %llu after '%s'\n", k,
                            (unsigned long long)a->size, (unsigned long long)(off[i] + j),
                            w->where ? w->where : "-");
                    expect_eq(buf[j], pat(a->seed, off[i] + j));
                    break;
                }
            }
        }
    }
}

/* ---- steps ------------------------------------------------------------- */

/* After any step: if the device moved allocations since the last look,
 * every live allocation must still hold its pattern. Reading stats and
 * bytes allocates no host memory, so this runs under injection too. */
static void check_moves(world *w, const char *what)
{
    if (!w->device) return;
    relo_stats st;
    expect_ok(relo_device_stats(w->device, &st));
    if (st.allocations_moved == w->moved) return;
    w->moved = st.allocations_moved;
    w->moves_checked++;
    const char *where = w->where;
    w->where = what;
    verify_patterns(w);
    w->where = where;
}

/* Runs one call; stops the scenario (returns false) on an injected failure
 * or on a status other than want. */
static bool step_(world *w, relo_status s, relo_status want, const char *what)
{
    check_moves(w, what);
    if (s == want) return true;
    w->where = what;
    if (s == RELO_ERR_HOST_MEMORY) {
        w->oom = true;
    } else {
        fprintf(stderr, "step '%s' gave %s, expected %s (or RELO_ERR_HOST_MEMORY)\n", what,
                relo_status_name(s), relo_status_name(want));
        w->broken = true;
    }
    return false;
}

#define STEP(w, call)                                    \
    do {                                                 \
        if (!step_((w), (call), RELO_OK, #call)) return; \
    } while (0)
#define STEP_IS(w, call, want)                          \
    do {                                                \
        if (!step_((w), (call), (want), #call)) return; \
    } while (0)

static bool reserve_(world *w, int stream, uint64_t size, const char *what)
{
    relo_handle h = {0};
    if (!step_(w, relo_reserve(w->streams[stream], size, &h), RELO_OK, what)) return false;
    if (w->nallocs == MAX_ALLOCS) {
        fprintf(stderr, "scenario holds too many allocations\n");
        w->broken = true;
        return false;
    }
    alloc *a = &w->allocs[w->nallocs++];
    a->handle = h;
    a->size = size;
    a->refs = 1;
    a->seed = (uint8_t)(w->nallocs * 37 + 11);
    return step_(w, put_pattern(w, a), RELO_OK, what);
}

#define RESERVE(w, stream, size)                                        \
    do {                                                                \
        if (!reserve_((w), (stream), (size), "reserve " #size)) return; \
    } while (0)

/* Releases allocation k completely (release never allocates). */
static void drop(world *w, int k)
{
    alloc *a = &w->allocs[k];
    while (a->refs) {
        expect_ok(relo_release(w->device, a->handle));
        a->refs--;
    }
    *a = w->allocs[--w->nallocs];
}

static bool begin_device(world *w, const relo_host_desc *hd, const relo_device_desc *dd)
{
    if (!step_(w, relo_backend_host_create(hd, &w->backend), RELO_OK, "backend create")) return false;
    /* The adaptive placement unless the case asks for another: its arena growth
     * is what the cases count moves on. */
    relo_device_desc desc = {0};
    if (dd) desc = *dd;
    if (desc.placement == RELO_PLACEMENT_DEFAULT) desc.placement = RELO_PLACEMENT_ADAPTIVE;
    if (!step_(w, relo_device_create(&desc, w->backend, &w->device), RELO_OK, "device create")) return false;
    w->backend = NULL;
    for (int i = 0; i < STREAMS; i++)
        if (!step_(w, relo_stream_create(w->device, NULL, &w->streams[i]), RELO_OK, "stream create"))
            return false;
    return true;
}

/* ---- scenarios --------------------------------------------------------- */

/* Mixed sizes over both streams, every pool, growth, relocation, capture. */
static void scenario_mixed(world *w)
{
    relo_host_desc hd = {0};
    hd.alignment = 32;
    hd.max_page_size = 32 * MIB;
    if (!begin_device(w, &hd, NULL)) return;

    RESERVE(w, 0, 0);
    RESERVE(w, 0, 100);
    RESERVE(w, 1, 4096);
    RESERVE(w, 0, 64 * KIB);
    RESERVE(w, 1, 1 * MIB);
    RESERVE(w, 0, 1 * MIB + 512);
    RESERVE(w, 0, 3 * MIB); /* grows to 4 MiB pages */
    STEP(w, relo_retain(w->device, w->allocs[1].handle));
    w->allocs[1].refs++;

    STEP(w, relo_mode_push(w->streams[0], RELO_MODE_PERSISTENT));
    w->modes[0]++;
    RESERVE(w, 0, 1 * KIB);
    RESERVE(w, 0, 100 * KIB);
    STEP(w, relo_mode_push(w->streams[0], RELO_MODE_DEDICATED));
    w->modes[0]++;
    RESERVE(w, 0, 5 * MIB);
    STEP(w, relo_mode_pop(w->streams[0]));
    w->modes[0]--;
    STEP(w, relo_mode_pop(w->streams[0]));
    w->modes[0]--;

    RESERVE(w, 0, 10 * MIB); /* grows to 11 MiB pages: 4 MiB pages outdated */
    RESERVE(w, 1, 6 * MIB);
    RESERVE(w, 1, 12 * MIB);
    for (int i = 0; i < 6; i++) RESERVE(w, i & 1, 300 + 1000 * (uint64_t)i);
    drop(w, 4);
    STEP(w, relo_reclaim(w->streams[0])); /* EXPLICIT relocation */
    RESERVE(w, 0, 2 * MIB);

    relo_stats st;
    STEP(w, relo_device_stats(w->device, &st));
    STEP(w, relo_stream_stats(w->streams[1], &st));
    FILE *f = tmpfile();
    if (f) {
        relo_status s = relo_device_report_json(w->device, f);
        fclose(f);
        STEP(w, s);
    }

    /* Capture: prepare relocates with reason CAPTURE; the recording may
     * only use room it holds; the graph guards what it resolved. */
    RESERVE(w, 1, 14 * MIB); /* 15 MiB pages: 11 MiB pages outdated */
    STEP(w, relo_capture_prepare(w->streams[0]));
    w->prepared = 0;
    STEP(w, relo_capture_begin(w->streams[0]));
    w->prepared = -1;
    w->recording = 0;
    relo_binding b;
    STEP(w, relo_resolve(w->streams[0], w->allocs[2].handle, &b));
    STEP(w, relo_resolve(w->streams[0], w->allocs[5].handle, &b));
    RESERVE(w, 0, 200); /* room the small pool holds */
    STEP_IS(w, relo_reclaim(w->streams[1]), RELO_ERR_RECORDING);
    RESERVE(w, 1, 3 * MIB); /* another stream may add pages */
    relo_graph *g = NULL;
    STEP(w, relo_capture_end(w->streams[0], &g));
    w->recording = -1;
    w->graphs[w->ngraphs++] = g;
    RESERVE(w, 0, 16 * MIB); /* 17 MiB pages */
    STEP(w, relo_reclaim(w->streams[1]));
    relo_graph_destroy(w->graphs[--w->ngraphs]);
    STEP(w, relo_reclaim(w->streams[0]));
    STEP(w, relo__testing_relocate(w->streams[0], RELO_REASON_ARENA_FULL));
    RESERVE(w, 1, 1);
}

/* Capacity pressure: relocation triggered by a reservation. */
static void scenario_pressure(world *w)
{
    relo_host_desc hd = {0};
    hd.alignment = 32;
    hd.max_page_size = 64 * MIB;
    hd.capacity = 48 * MIB;
    if (!begin_device(w, &hd, NULL)) return;
    RESERVE(w, 0, 1 * MIB);
    RESERVE(w, 0, 512 * KIB);
    RESERVE(w, 1, 1 * MIB);
    RESERVE(w, 0, 10 * MIB); /* 11 MiB pages; 2 MiB pages outdated */
    RESERVE(w, 1, 10 * MIB);
    RESERVE(w, 0, 1 * MIB); /* pressure: relocation before it */
    RESERVE(w, 1, 2 * MIB);
    RESERVE(w, 0, 4 * MIB);
    drop(w, 0);
    STEP(w, relo_reclaim(w->streams[1]));
    RESERVE(w, 0, 1 * MIB);
}

/* A ladder of growths, then ARENA_FULL and reclaim. */
static void scenario_ladder(world *w)
{
    relo_host_desc hd = {0};
    hd.alignment = 256;
    hd.max_page_size = 1024 * MIB;
    if (!begin_device(w, &hd, NULL)) return;
    /* Each request just above the current page makes a new pool. */
    for (uint64_t k = 0; k < 6; k++) {
        uint64_t size = 1 * MIB + 1 + k * MIB;
        RESERVE(w, 0, size);
        if (w->nallocs > 8) drop(w, 1);
    }
    STEP(w, relo__testing_relocate(w->streams[0], RELO_REASON_ARENA_FULL));
    STEP(w, relo_reclaim(w->streams[0]));
}

/* The EXCLUSIVE layout. */
static void scenario_exclusive(world *w)
{
    relo_host_desc hd = {0};
    hd.alignment = 10;
    hd.max_page_size = 16 * MIB;
    relo_device_desc dd = {0};
    dd.placement = RELO_PLACEMENT_EXCLUSIVE;
    if (!begin_device(w, &hd, &dd)) return;
    for (uint64_t i = 1; i <= 8; i++) RESERVE(w, (int)(i & 1), 1000 * i * i);
    drop(w, 3);
    drop(w, 0);
    RESERVE(w, 0, 4000);
    RESERVE(w, 1, 5 * MIB);
    STEP(w, relo_reclaim(w->streams[0]));
    RESERVE(w, 1, 40 * KIB);
}

/* ---- the loop ---------------------------------------------------------- */

/* Checks and tears down what a scenario left. */
static void finish(world *w)
{
    /* Checks run without injection: they may allocate. */
    relo__testing_hostmem_fail_at(0, 0);
    if (w->backend) {
        relo_backend_destroy(w->backend);
        w->backend = NULL;
    }
    if (!w->device) return;
    expect_ok(relo_device_check(w->device));
    verify_patterns(w);
    relo_stats st;
    expect_ok(relo_device_stats(w->device, &st));
    expect_eq(st.allocations, w->nallocs);

    /* Releasing, destroying graphs and reading stats never allocate. */
    relo__testing_hostmem_fail_at(1, 1);
    expect_ok(relo_device_stats(w->device, &st));
    if (w->recording >= 0) {
        relo_graph *g = NULL;
        relo__testing_hostmem_fail_at(0, 0);
        relo_status s = relo_capture_end(w->streams[w->recording], &g);
        expect_ok(s);
        if (s == RELO_OK && w->ngraphs < MAX_GRAPHS) w->graphs[w->ngraphs++] = g;
        relo__testing_hostmem_fail_at(1, 1);
    }
    while (w->nallocs) drop(w, w->nallocs - 1);
    while (w->ngraphs) relo_graph_destroy(w->graphs[--w->ngraphs]);
    relo__testing_hostmem_fail_at(0, 0);

    if (w->prepared >= 0) {
        relo_graph *g = NULL;
        expect_ok(relo_capture_begin(w->streams[w->prepared]));
        expect_ok(relo_capture_end(w->streams[w->prepared], &g));
        relo_graph_destroy(g);
    }
    for (int i = 0; i < STREAMS; i++)
        while (w->modes[i]-- > 0) expect_ok(relo_mode_pop(w->streams[i]));
    expect_ok(relo_device_check(w->device));
    expect_ok(relo_device_stats(w->device, &st));
    expect_eq(st.allocations, 0);
    for (int i = 0; i < STREAMS; i++)
        if (w->streams[i]) expect_ok(relo_stream_destroy(w->streams[i]));
    expect_ok(relo_device_destroy(w->device));
}

typedef void (*scenario_fn)(world *);

/*
 * Runs fn once without injection to count its host allocations C, then with
 * the N-th allocation failing (and, when sticky, every one after it) for
 * N = 1 .. C + 1. A run whose injected failure fired must stop with
 * RELO_ERR_HOST_MEMORY or complete (relo handled it: "swallowed"); a run
 * where it did not fire must complete.
 */
static void oom_loop(const char *name, scenario_fn fn, int sticky, uint64_t min_moved)
{
    world w;
    memset(&w, 0, sizeof w);
    w.recording = w.prepared = -1;
    uint64_t before = relo__testing_hostmem_calls();
    fn(&w);
    uint64_t clean = relo__testing_hostmem_calls() - before;
    expect_true(!w.oom && !w.broken);
    /* The clean run relocates as the scenario means it to (zero for the
     * layout that never moves). */
    uint64_t clean_moved = w.moved;
    if (min_moved)
        expect_ge(clean_moved, min_moved);
    else
        expect_eq(clean_moved, 0);
    finish(&w);

    uint64_t stopped = 0, swallowed = 0, n = 1, bad = 0, moved_runs = 0, checks = 0;
    for (; n <= clean + 1; n++) {
        memset(&w, 0, sizeof w);
        w.recording = w.prepared = -1;
        int failed_before = check_failures_;
        before = relo__testing_hostmem_calls();
        relo__testing_hostmem_fail_at(n, sticky);
        fn(&w);
        uint64_t made = relo__testing_hostmem_calls() - before;
        relo__testing_hostmem_fail_at(0, 0);
        bool fired = made >= n;
        if (w.oom && !fired) {
            fprintf(stderr, "%s: RELO_ERR_HOST_MEMORY without an injected failure\n", name);
            w.broken = true;
        }
        if (fired) {
            if (w.oom)
                stopped++;
            else if (!w.broken)
                swallowed++;
        }
        moved_runs += w.moved > 0;
        checks += w.moves_checked;
        finish(&w);
        if (w.broken || check_failures_ != failed_before) {
            fprintf(stderr, "%s: failed with injection at host allocation %llu (%s), step '%s'\n", name,
                    (unsigned long long)n, sticky ? "sticky" : "once", w.where ? w.where : "-");
            check_failures_ += w.broken;
            if (++bad > 3) break;
        }
        if (!fired) break;
    }
    expect_eq(bad, 0);
    printf(
        "%s (%s): %llu host allocations and %llu allocations moved in a clean run; N = 1..%llu "
        "injected: %llu stopped with RELO_ERR_HOST_MEMORY, %llu absorbed by relo and completed; "
        "%llu runs moved allocations, bytes verified after %llu moving steps\n",
        name, sticky ? "sticky" : "once", (unsigned long long)clean, (unsigned long long)clean_moved,
        (unsigned long long)(n - 1), (unsigned long long)stopped, (unsigned long long)swallowed,
        (unsigned long long)moved_runs, (unsigned long long)checks);
}

/* The last argument: allocations the clean run must move at least (0: the
 * scenario's layout never moves, and must not). */
CHECK_TEST(mixed)
{
    oom_loop("mixed", scenario_mixed, 1, MIXED_MOVES);
}
CHECK_TEST(pressure)
{
    oom_loop("pressure", scenario_pressure, 1, PRESSURE_MOVES);
}
CHECK_TEST(ladder)
{
    oom_loop("ladder", scenario_ladder, 1, LADDER_MOVES);
}
CHECK_TEST(exclusive)
{
    oom_loop("exclusive", scenario_exclusive, 1, 0);
}
/* Non-sticky: only the N-th allocation fails; later calls must work again. */
CHECK_TEST(mixed_once)
{
    oom_loop("mixed", scenario_mixed, 0, MIXED_MOVES);
}
CHECK_TEST(pressure_once)
{
    oom_loop("pressure", scenario_pressure, 0, PRESSURE_MOVES);
}

CHECK_MAIN()
