/*
 * test_pass_price.c — what a pass costs the runtime, under both placements:
 * a reclaim waits for the device once and for its copies once (one pass),
 * a bound on a pass's bytes splits a reclaim into as few passes as it
 * allows, and while one thread's pass waits for the device, another
 * thread's calls on another stream (reserve, including reservations that
 * would pack before a new page, release, resolve, pin, unpin, read, write)
 * return without waiting for it; and another stream's reservations never
 * pack, or wait for the device for, this stream's room, nor wait while a
 * reclaim frees the pages it emptied.
 *
 * The scene is a runtime's stream after a growing workload: 200
 * allocations of 256 KiB and 100 of 3 to 7 MiB, every other one released.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "fixture.h"
#include "mock_backend.h"

#define SMALL 200
#define LARGE 100
#define TOTAL (SMALL + LARGE)
#define GATE_SECONDS 10

typedef struct scene {
    mock_ctx m;
    fx f;
    relo_handle h[TOTAL];
    uint64_t size[TOTAL];
} scene;

static uint64_t scene_size(int i)
{
    if (i < SMALL) return 256 * KiB;
    /* 3 to 7 MiB, not all multiples of a MiB. */
    return (uint64_t)(3 + (i * 7) % 5) * MiB + (uint64_t)((i * 13) % 7) * 64 * KiB;
}

static bool scene_open(scene *sc, relo_placement placement, uint64_t pass_max_bytes, bool second_stream)
{
    memset(sc, 0, sizeof *sc);
    relo_backend_props props = {256, GiB, 0, 0};
    relo_backend *b = NULL;
    if (mock_backend_create(&sc->m, &props, &b) != RELO_OK) return false;
    relo_device_desc dd = fx_desc(placement);
    dd.pass_max_bytes = pass_max_bytes;
    if (fx_open_backend(&sc->f, b, &dd) != RELO_OK) return false;
    if (second_stream && relo_stream_create(sc->f.dev, NULL, &sc->f.s2) != RELO_OK) return false;
    for (int i = 0; i < TOTAL; i++) {
        sc->size[i] = scene_size(i);
        sc->h[i] = fx_reserve(sc->f.s, sc->size[i]);
        if (!sc->h[i].id || fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sc->size[i]) != RELO_OK)
            return false;
    }
    for (int i = 1; i < TOTAL; i += 2) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    return true;
}

static bool scene_intact(scene *sc)
{
    for (int i = 0; i < TOTAL; i += 2)
        if (!fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sc->size[i])) return false;
    return true;
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < TOTAL; i += 2) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    fx_close(&sc->f);
}

/* A reclaim of the scene moves allocations in one pass: one device wait,
 * one wait for copies; every byte stays. */
static void reclaim_drains_once(relo_placement placement)
{
    scene sc;
    require_true(scene_open(&sc, placement, 0, false));
    uint64_t waits = sc.m.calls[MOCK_WAIT_DEVICE], copies = sc.m.calls[MOCK_WAIT_COPIES];
    relo_stats before = fx_dev_stats(sc.f.dev);
    expect_ok(relo_reclaim(sc.f.s));
    relo_stats after = fx_dev_stats(sc.f.dev);
    expect_gt(after.allocations_moved, before.allocations_moved);
    expect_lt(after.bytes_reserved, before.bytes_reserved);
    expect_eq(after.relocations - before.relocations, 1);
    expect_eq(sc.m.calls[MOCK_WAIT_DEVICE] - waits, 1);
    expect_eq(sc.m.calls[MOCK_WAIT_COPIES] - copies, 1);
    expect_true(scene_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(reclaim_waits_for_the_device_once_packed)
{
    reclaim_drains_once(RELO_PLACEMENT_PACKED);
}
CHECK_TEST(reclaim_waits_for_the_device_once_adaptive)
{
    reclaim_drains_once(RELO_PLACEMENT_ADAPTIVE);
}

/* A second reclaim right after finds nothing worth moving: nothing moves
 * again for nothing. */
CHECK_TEST(reclaim_after_reclaim_moves_nothing)
{
    scene sc;
    require_true(scene_open(&sc, RELO_PLACEMENT_PACKED, 0, false));
    expect_ok(relo_reclaim(sc.f.s));
    relo_stats once = fx_dev_stats(sc.f.dev);
    uint64_t waits = sc.m.calls[MOCK_WAIT_DEVICE];
    expect_ok(relo_reclaim(sc.f.s));
    relo_stats twice = fx_dev_stats(sc.f.dev);
    expect_eq(twice.allocations_moved, once.allocations_moved);
    expect_eq(twice.bytes_reserved, once.bytes_reserved);
    expect_eq(sc.m.calls[MOCK_WAIT_DEVICE], waits);
    expect_true(scene_intact(&sc));
    scene_close(&sc);
}

/* With pass_max_bytes set, a reclaim takes at most as many passes as its
 * bytes need at that bound, plus one. */
CHECK_TEST(bounded_reclaim_takes_as_few_passes_as_its_bytes_need)
{
    const uint64_t bound = 4 * MiB;
    scene sc;
    require_true(scene_open(&sc, RELO_PLACEMENT_PACKED, bound, false));
    uint64_t waits = sc.m.calls[MOCK_WAIT_DEVICE];
    relo_stats before = fx_dev_stats(sc.f.dev);
    expect_ok(relo_reclaim(sc.f.s));
    relo_stats after = fx_dev_stats(sc.f.dev);
    uint64_t moved = after.bytes_moved - before.bytes_moved;
    uint64_t passes = sc.m.calls[MOCK_WAIT_DEVICE] - waits;
    expect_gt(moved, bound); /* the bound matters here */
    expect_gt(passes, 1);
    expect_le(passes, (moved + bound - 1) / bound + 1);
    expect_eq(after.relocations - before.relocations, passes);
    expect_true(scene_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* ------------------------------------------------------------------------ */
/* Another stream's calls while a pass waits                                */
/* ------------------------------------------------------------------------ */

/* The second stream's runtime: every call a launch path and its
 * allocations make, in a loop, counted as it goes. */
typedef struct other {
    relo_device *dev;
    relo_stream *s;
    relo_handle own;
    atomic_int rounds;
    atomic_bool stop;
    int failures;
} other;

static void *other_stream(void *arg)
{
    other *o = arg;
    uint8_t bytes[64];
    memset(bytes, 0x3C, sizeof bytes);
    while (!atomic_load(&o->stop) && atomic_load(&o->rounds) < 1000) {
        relo_binding b;
        relo_handle h;
        /* Sizes that grow past every page the stream holds, so that
         * reservations take new pages and ask to pack before them. */
        uint64_t size = (uint64_t)(atomic_load(&o->rounds) % 64 + 1) * 256 * KiB;
        bool ok = relo_resolve(o->s, o->own, &b) == RELO_OK && relo_pin(o->s, o->own, &b) == RELO_OK &&
                  relo_unpin(o->dev, o->own) == RELO_OK &&
                  relo_write(o->dev, o->own, 0, bytes, sizeof bytes) == RELO_OK &&
                  relo_read(o->dev, o->own, 0, bytes, sizeof bytes) == RELO_OK &&
                  relo_reserve(o->s, size, &h) == RELO_OK && relo_release(o->dev, h) == RELO_OK &&
                  bytes[0] == 0x3C;
        if (!ok) o->failures++;
        atomic_fetch_add(&o->rounds, 1);
    }
    return NULL;
}

/* Lets o's thread run up to GATE_SECONDS for its 1000 rounds, then stops
 * it; returns the rounds it completed. */
static int other_rounds(other *o)
{
    uint64_t until = fx_now_ns() + (uint64_t)GATE_SECONDS * 1000000000u;
    while (atomic_load(&o->rounds) < 1000 && fx_now_ns() < until) {
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
    int rounds = atomic_load(&o->rounds);
    atomic_store(&o->stop, true);
    return rounds;
}

/* While a reclaim on one thread is held at the mock's gate (its pass
 * waiting for the device, or the backend freeing a page it emptied),
 * another thread's calls on another stream go on: its rounds complete
 * before the gate is let go. */
static void other_stream_goes_on(relo_placement placement, mock_op gate)
{
    scene sc;
    require_true(scene_open(&sc, placement, 0, true));
    other o = {sc.f.dev, sc.f.s2, {0}, 0, false, 0};
    o.own = fx_reserve(sc.f.s2, 64 * KiB);
    require_ne(o.own.id, 0);

    fx_reclaimer rc = {sc.f.s, RELO_ERR_CORRUPT};
    pthread_t tr, to;
    require_true(mock_gate_start(&sc.m, gate, fx_reclaim_thread, &rc, &tr, GATE_SECONDS));
    require_true(pthread_create(&to, NULL, other_stream, &o) == 0);
    int rounds = other_rounds(&o); /* while the reclaim still waits at the gate */
    mock_gate_open(&sc.m, gate);
    pthread_join(to, NULL);
    pthread_join(tr, NULL);
    expect_eq(rounds, 1000);
    expect_eq(o.failures, 0);
    expect_ok(rc.st);
    expect_true(scene_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, o.own));
    scene_close(&sc);
}

CHECK_TEST(other_stream_goes_on_while_a_pass_waits_packed)
{
    other_stream_goes_on(RELO_PLACEMENT_PACKED, MOCK_WAIT_DEVICE);
}
CHECK_TEST(other_stream_goes_on_while_a_pass_waits_adaptive)
{
    other_stream_goes_on(RELO_PLACEMENT_ADAPTIVE, MOCK_WAIT_DEVICE);
}

/* Another stream's reservations, on a device that holds the scene's
 * scattered room, pack that stream's own pools only, and only for room that
 * stream holds: they neither move anything nor wait for the device. */
static void other_stream_packs_only_its_own(relo_placement placement)
{
    scene sc;
    require_true(scene_open(&sc, placement, 0, true));
    uint64_t waits = sc.m.calls[MOCK_WAIT_DEVICE];
    uint64_t moved = fx_dev_stats(sc.f.dev).allocations_moved;
    /* The second stream's own allocation, and its churn beside it: small
     * requests on that page, then requests that grow past every page. */
    relo_handle own = fx_reserve(sc.f.s2, 64 * KiB);
    require_ne(own.id, 0);
    for (int round = 0; round < 128; round++) {
        uint64_t size = round < 64 ? 4 * KiB : (uint64_t)(round - 63) * 256 * KiB;
        relo_handle h = fx_reserve(sc.f.s2, size);
        require_ne(h.id, 0);
        expect_ok(relo_release(sc.f.dev, h));
    }
    expect_ok(relo_release(sc.f.dev, own));
    expect_eq(sc.m.calls[MOCK_WAIT_DEVICE], waits);
    expect_eq(fx_dev_stats(sc.f.dev).allocations_moved, moved);
    expect_true(scene_intact(&sc));
    scene_close(&sc);
}

CHECK_TEST(other_stream_packs_only_its_own_packed)
{
    other_stream_packs_only_its_own(RELO_PLACEMENT_PACKED);
}
CHECK_TEST(other_stream_packs_only_its_own_adaptive)
{
    other_stream_packs_only_its_own(RELO_PLACEMENT_ADAPTIVE);
}

/* A reclaim gives back the pages it emptied without the device lock: while
 * the backend's free of one of them is held at the mock's gate (a free
 * that waits for the device, as cudaFree does), another stream reserves,
 * resolves and releases. */
CHECK_TEST(other_stream_goes_on_while_a_reclaim_frees_pages)
{
    other_stream_goes_on(RELO_PLACEMENT_PACKED, MOCK_FREE);
}

CHECK_MAIN()
