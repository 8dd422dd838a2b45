/*
 * test_cache_limit.c — relo_device_desc.cache_limit and
 * relo_trim (include/relo.h): empty pages held beyond the live bytes plus
 * the limit go back at the next relo_reserve and in relo_trim, never in
 * relo_release; empty pages within it stay cached and serve later
 * reservations without a new backend buffer; nothing live moves or loses a
 * byte. Every case runs under the packed and the adaptive placement.
 *
 * Setup shared by the cases: a device on the host backend (real bytes, so
 * a lost byte shows) and COUNT allocations of SIZE bytes, which both
 * placements carve from shared pages (the adaptive placement's small pool,
 * the packed placement's fine pool); each holds its own pattern.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"

#define COUNT 256
#define SIZE (48 * KiB)
#define KEEP 8 /* allocations 0 .. KEEP-1 stay live */

typedef struct scene {
    fx f;
    relo_handle h[COUNT];
    relo_binding at[KEEP];
} scene;

/* Opens a device of the placement with the limit, fills COUNT
 * allocations, and releases all but the first KEEP. */
static bool scene_open(scene *sc, relo_placement placement, uint64_t limit)
{
    memset(sc, 0, sizeof *sc);
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    dd.cache_limit = limit;
    if (fx_open(&sc->f, NULL, &dd) != RELO_OK) return false;
    for (int i = 0; i < COUNT; i++) {
        sc->h[i] = fx_reserve(sc->f.s, SIZE);
        if (!sc->h[i].id || fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE) != RELO_OK)
            return false;
    }
    for (int i = KEEP; i < COUNT; i++) {
        expect_ok(relo_release(sc->f.dev, sc->h[i]));
        sc->h[i].id = 0;
    }
    for (int i = 0; i < KEEP; i++) sc->at[i] = fx_bind(sc->f.s, sc->h[i]);
    return true;
}

/* The live allocations are where they were, with every byte. */
static bool scene_untouched(scene *sc)
{
    for (int i = 0; i < KEEP; i++) {
        if (!fx_same_place(sc->at[i], fx_bind(sc->f.s, sc->h[i]))) return false;
        if (!fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE)) return false;
    }
    return true;
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->h[i].id) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    fx_close(&sc->f);
}

static const relo_placement placements[] = {RELO_PLACEMENT_ADAPTIVE, RELO_PLACEMENT_PACKED};

/* Bytes held beyond the live ones. */
static uint64_t excess(relo_device *d)
{
    relo_stats s = fx_dev_stats(d);
    return s.bytes_reserved - s.bytes_in_use;
}

CHECK_TEST(release_never_gives_pages_back)
{
    for (int p = 0; p < 2; p++) {
        scene sc;
        /* Threshold 1: nothing cached is wanted, yet releases keep it all. */
        relo_device_desc dd;
        memset(&dd, 0, sizeof dd);
        dd.placement = placements[p];
        dd.cache_limit = 1;
        require_ok(fx_open(&sc.f, NULL, &dd));
        relo_handle h[COUNT];
        for (int i = 0; i < COUNT; i++) h[i] = fx_reserve(sc.f.s, SIZE);
        relo_host_counts before = fx_counts(&sc.f);
        uint64_t reserved = fx_dev_stats(sc.f.dev).bytes_reserved;
        for (int i = 0; i < COUNT; i++) expect_ok(relo_release(sc.f.dev, h[i]));
        expect_eq(fx_counts(&sc.f).frees, before.frees);
        expect_eq(fx_dev_stats(sc.f.dev).bytes_reserved, reserved);
        expect_ok(relo_device_check(sc.f.dev));
        memset(sc.h, 0, sizeof sc.h);
        scene_close(&sc);
    }
}

CHECK_TEST(held_bytes_go_back_at_the_next_reserve)
{
    for (int p = 0; p < 2; p++) {
        scene sc;
        uint64_t limit = 1 * MiB;
        require_true(scene_open(&sc, placements[p], limit));
        relo_host_counts before = fx_counts(&sc.f);
        require_true(excess(sc.f.dev) > limit); /* the releases left empty pages */
        sc.h[KEEP] = fx_reserve(sc.f.s, SIZE);
        expect_ok(fx_write_pattern(sc.f.dev, sc.h[KEEP], KEEP + 1, SIZE));
        expect_gt(fx_counts(&sc.f).frees, before.frees);
        /* Either the excess is within the limit, or what is left of
         * it is room on pages that still hold an allocation: a trim to 0
         * finds no empty page to give back. */
        uint64_t left = excess(sc.f.dev), released = 0;
        expect_ok(relo_trim(sc.f.dev, 0, &released));
        expect_true(left <= limit || released == 0);
        expect_lt(left, limit + 8 * MiB); /* the adaptive placement's 8 MiB page, partly live */
        expect_true(scene_untouched(&sc));
        expect_true(fx_check_pattern(sc.f.dev, sc.h[KEEP], KEEP + 1, SIZE));
        expect_ok(relo_device_check(sc.f.dev));
        scene_close(&sc);
    }
}

CHECK_TEST(trim_gives_back_what_the_cache_limit_kept)
{
    for (int p = 0; p < 2; p++) {
        scene sc;
        require_true(scene_open(&sc, placements[p], RELO_CACHE_LIMIT_NEVER));
        sc.h[KEEP] = fx_reserve(sc.f.s, SIZE); /* NEVER: a reserve keeps every empty page */
        relo_host_counts before = fx_counts(&sc.f);
        uint64_t held = fx_dev_stats(sc.f.dev).bytes_reserved;
        uint64_t released = 0;
        expect_ok(relo_trim(sc.f.dev, 0, &released));
        expect_gt(released, 0);
        expect_gt(fx_counts(&sc.f).frees, before.frees);
        expect_eq(fx_dev_stats(sc.f.dev).bytes_reserved, held - released);
        expect_eq(fx_counts(&sc.f).bytes_held, held - released);
        /* Nothing empty is left: a second trim has nothing to give. */
        expect_ok(relo_trim(sc.f.dev, 0, &released));
        expect_eq(released, 0);
        expect_true(scene_untouched(&sc));
        expect_ok(relo_device_check(sc.f.dev));
        scene_close(&sc);
    }
}

CHECK_TEST(trim_keeps_what_it_is_asked_to)
{
    for (int p = 0; p < 2; p++) {
        scene sc;
        require_true(scene_open(&sc, placements[p], RELO_CACHE_LIMIT_NEVER));
        uint64_t held = fx_dev_stats(sc.f.dev).bytes_reserved, released = 0;
        expect_ok(relo_trim(sc.f.dev, RELO_CACHE_LIMIT_NEVER, &released));
        expect_eq(released, 0);
        expect_ok(relo_trim(sc.f.dev, held, &released));
        expect_eq(released, 0);
        expect_eq(fx_dev_stats(sc.f.dev).bytes_reserved, held);
        expect_status(relo_trim(NULL, 0, NULL), RELO_ERR_INVALID_ARGUMENT);
        scene_close(&sc);
    }
}

CHECK_TEST(cached_pages_serve_without_a_backend_allocation)
{
    for (int p = 0; p < 2; p++) {
        scene sc;
        /* Everything that emptied fits in the limit. */
        require_true(scene_open(&sc, placements[p], 256 * MiB));
        relo_host_counts before = fx_counts(&sc.f);
        for (int i = KEEP; i < COUNT; i++) {
            sc.h[i] = fx_reserve(sc.f.s, SIZE);
            expect_ok(fx_write_pattern(sc.f.dev, sc.h[i], (uint64_t)i + 1, SIZE));
        }
        expect_eq(fx_counts(&sc.f).allocs, before.allocs);
        expect_eq(fx_counts(&sc.f).frees, before.frees);
        for (int i = 0; i < COUNT; i++)
            expect_true(fx_check_pattern(sc.f.dev, sc.h[i], (uint64_t)i + 1, SIZE));
        expect_true(scene_untouched(&sc));
        expect_ok(relo_device_check(sc.f.dev));
        scene_close(&sc);
    }
}

CHECK_TEST(refused_page_takes_back_cached_pages)
{
    for (int p = 0; p < 2; p++) {
        /* A device that holds 16 MiB: the pages another stream keeps
         * cached must go back before a request that needs a page of its
         * own. */
        relo_host_desc hd = fx_host();
        hd.capacity = 16 * MiB;
        relo_device_desc dd;
        memset(&dd, 0, sizeof dd);
        dd.placement = placements[p];
        dd.cache_limit = RELO_CACHE_LIMIT_NEVER;
        fx f;
        require_ok(fx_open2(&f, &hd, &dd));
        relo_handle h[64];
        for (int i = 0; i < 64; i++) h[i] = fx_reserve(f.s2, 96 * KiB);
        for (int i = 0; i < 64; i++) expect_ok(relo_release(f.dev, h[i]));
        relo_handle big = fx_reserve(f.s, 12 * MiB);
        expect_ne(big.id, 0);
        if (big.id) expect_ok(relo_release(f.dev, big));
        expect_ok(relo_device_check(f.dev));
        fx_close(&f);
    }
}

/* Packing before a new page: without a limit it gives back the
 * pages it empties; with one, it keeps them (within it) for what comes
 * next, and the bytes it moved are intact. Returns the backend frees the
 * packing cost, or UINT64_MAX when the scene did not pack. */
static uint64_t packing_frees(uint64_t limit)
{
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.cache_limit = limit;
    fx f;
    if (fx_open(&f, NULL, &dd) != RELO_OK) return UINT64_MAX;
    /* Packing that no request waits on copies at most 1/64 of the bytes
     * reserved so far: one large reservation first earns it 1 MiB (in a
     * dedicated buffer, so the packed layout's pools never see it). */
    expect_ok(relo_mode_push(f.s, RELO_MODE_DEDICATED));
    relo_handle earn = fx_reserve(f.s, 64 * MiB);
    if (earn.id) expect_ok(relo_release(f.dev, earn));
    expect_ok(relo_mode_pop(f.s));
    enum { N = 256 };
    relo_handle h[N];
    for (int i = 0; i < N; i++) {
        h[i] = fx_reserve(f.s, 16 * KiB);
        expect_ok(fx_write_pattern(f.dev, h[i], (uint64_t)i + 1, 16 * KiB));
    }
    /* Every page keeps one allocation in four: sparse, and worth packing. */
    for (int i = 0; i < N; i++)
        if (i % 4) expect_ok(relo_release(f.dev, h[i]));
    relo_host_counts before = fx_counts(&f);
    uint64_t moved = fx_dev_stats(f.dev).bytes_moved;
    relo_handle big = fx_reserve(f.s, 512 * KiB); /* fits no free slice: a new page, packing first */
    uint64_t frees = fx_counts(&f).frees - before.frees;
    if (fx_dev_stats(f.dev).bytes_moved == moved) frees = UINT64_MAX;
    for (int i = 0; i < N; i += 4) {
        expect_true(fx_check_pattern(f.dev, h[i], (uint64_t)i + 1, 16 * KiB));
        expect_ok(relo_release(f.dev, h[i]));
    }
    expect_ok(relo_device_check(f.dev));
    if (big.id) expect_ok(relo_release(f.dev, big));
    fx_close(&f);
    return frees;
}

CHECK_TEST(packing_keeps_what_it_empties_within_the_cache_limit)
{
    uint64_t without = packing_frees(RELO_CACHE_LIMIT_NEVER);
    uint64_t with = packing_frees(256 * MiB);
    require_true(without != UINT64_MAX && with != UINT64_MAX); /* both packed */
    expect_gt(without, 0);
    expect_eq(with, 0);
}

CHECK_TEST(default_cache_limit_is_reported)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_device_desc got;
    expect_ok(relo_device_desc_get(f.dev, &got));
    expect_eq(got.cache_limit, RELO_CACHE_LIMIT_DEFAULT);
    expect_eq(RELO_CACHE_LIMIT_DEFAULT, RELO_CACHE_LIMIT_PROPORTIONAL);
    fx_close(&f);
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.cache_limit = 3 * MiB;
    require_ok(fx_open(&f, NULL, &dd));
    expect_ok(relo_device_desc_get(f.dev, &got));
    expect_eq(got.cache_limit, 3 * MiB);
    fx_close(&f);
}

CHECK_MAIN()
