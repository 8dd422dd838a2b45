/*
 * test_pack_budget.c — packing that nothing waits on, and its copy budget
 * (src/policy/steps.c; docs/placement.md, "The copy budget"):
 * - room held past live + the cache limit on pages that still hold
 *   allocations is packed at the next relo_reserve, and the pages it
 *   empties go back, without a refused page or a reclaim asking;
 * - such packing, and packing before a new page the device would lend,
 *   copy at most 1/64 of the bytes reserved so far, over the device's life;
 * - on a device of known capacity that a new page would fill past 3/4,
 *   packing before it is no longer held back by the budget;
 * - a budgeted pack for a page that would fall short of sparing it is
 *   dropped before anything moves.
 * Every live allocation keeps every byte.
 *
 * Setup shared by the first two cases: a device of the packed placement on
 * the host backend (real bytes) with cache limit 1 (no empty page kept). ROUNDS times, COUNT
 * allocations of SIZE are made (each round but the last released whole),
 * then all but every STRIDE-th are released: each page the fine pool
 * carved keeps one allocation, and most of what it holds is free room
 * that no empty page accounts for.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"

#define SIZE (48 * KiB)
#define COUNT 512
#define STRIDE 16
#define BUDGET_DIVISOR 64 /* RELO_PACK_BUDGET_DIVISOR */

typedef struct scene {
    fx f;
    relo_handle h[COUNT];
    uint64_t pages_before; /* pages held once the releases are done */
} scene;

static bool scene_open(scene *sc, int rounds, const relo_host_desc *hd, uint64_t capacity)
{
    memset(sc, 0, sizeof *sc);
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.cache_limit = 1;
    dd.capacity = capacity;
    if (fx_open(&sc->f, hd, &dd) != RELO_OK) return false;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < COUNT; i++) {
            sc->h[i] = fx_reserve(sc->f.s, SIZE);
            if (!sc->h[i].id) return false;
            if (fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE) != RELO_OK) return false;
        }
        for (int i = 0; i < COUNT; i++) {
            if (r == rounds - 1 && i % STRIDE == 0) continue;
            if (relo_release(sc->f.dev, sc->h[i]) != RELO_OK) return false;
            sc->h[i].id = 0;
        }
    }
    /* The pages the releases emptied go back (a trim never moves
     * anything), so that what is left is pages that hold allocations. */
    if (relo_trim(sc->f.dev, 1, NULL) != RELO_OK) return false;
    relo_stats st = fx_dev_stats(sc->f.dev);
    sc->pages_before = st.pages;
    /* The layout the cases rely on: one allocation on each of many
     * pages, mostly free room. */
    return st.pages == COUNT / STRIDE && st.relocations == 0 &&
           st.bytes_reserved - st.bytes_in_use >= 2 * MiB;
}

static bool scene_bytes_intact(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->h[i].id && !fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE)) return false;
    return true;
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->h[i].id) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    fx_close(&sc->f);
}

/* One reservation of SIZE, which free room already held serves; it is
 * released again. */
static void one_reserve(scene *sc)
{
    relo_handle h = fx_reserve(sc->f.s, SIZE);
    expect_true(h.id != 0);
    if (h.id) expect_ok(relo_release(sc->f.dev, h));
}

CHECK_TEST(room_past_the_cache_limit_is_packed_at_the_next_reserve)
{
    scene sc;
    /* Four rounds earn a budget (4 * 24 MiB / 64 = 1.5 MiB) larger than
     * everything that stays live (32 * 48 KiB). */
    require_true(scene_open(&sc, 4, NULL, 0));
    relo_host_counts before = fx_counts(&sc.f);
    one_reserve(&sc);
    relo_stats st = fx_dev_stats(sc.f.dev);
    expect_gt(st.relocations, 0);
    expect_gt(fx_counts(&sc.f).frees, before.frees);
    /* Every page kept one allocation; packed, they fill their pages. */
    expect_le(st.pages * 2, sc.pages_before);
    expect_le(st.bytes_moved, st.bytes_allocated_total / BUDGET_DIVISOR);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(packing_nothing_waits_on_stays_within_the_budget)
{
    scene sc;
    /* One round earns 24 MiB / 64 = 384 KiB: eight of the 31 moves the
     * same packing would make. */
    require_true(scene_open(&sc, 1, NULL, 0));
    for (int i = 0; i < 64; i++) one_reserve(&sc);
    relo_stats st = fx_dev_stats(sc.f.dev);
    expect_gt(st.relocations, 0); /* what the budget allows, it spends */
    expect_le(st.bytes_moved, st.bytes_allocated_total / BUDGET_DIVISOR);
    expect_gt(st.pages * 2, sc.pages_before);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* Requests no hole takes, on a device whose every page keeps one
 * allocation of SIZE: packing before each new page would have to move
 * them. They stay live, so the device fills. */
#define BIG (8 * SIZE)
#define BIGS 12

static void ask_for_new_pages(uint64_t capacity, bool expect_waived)
{
    scene sc;
    require_true(scene_open(&sc, 1, NULL, capacity));
    relo_handle big[BIGS];
    for (int i = 0; i < BIGS; i++) {
        big[i] = fx_reserve(sc.f.s, BIG);
        require_true(big[i].id != 0);
        expect_ok(fx_write_pattern(sc.f.dev, big[i], 1000 + (uint64_t)i, BIG));
    }
    relo_stats st = fx_dev_stats(sc.f.dev);
    if (expect_waived)
        expect_gt(st.bytes_moved, st.bytes_allocated_total / BUDGET_DIVISOR);
    else
        expect_le(st.bytes_moved, st.bytes_allocated_total / BUDGET_DIVISOR);
    expect_true(scene_bytes_intact(&sc));
    for (int i = 0; i < BIGS; i++) {
        expect_true(fx_check_pattern(sc.f.dev, big[i], 1000 + (uint64_t)i, BIG));
        expect_ok(relo_release(sc.f.dev, big[i]));
    }
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(packing_before_a_page_is_budgeted_while_memory_is_plentiful)
{
    ask_for_new_pages(0, false); /* capacity unknown */
}

CHECK_TEST(packing_that_cannot_spare_the_page_moves_nothing)
{
    /* No cache limit, so only packing before a page moves anything. The
     * first SPARSE pages keep their first allocation each, every other
     * page keeps all of its own: no room anywhere but on the sparse pages.
     * Their keepers could gather on one of them within the 384 KiB one
     * round earns, but that gives back a few hundred KiB, and a 5 MiB
     * request needs a page larger than that: packing for it would copy
     * without sparing it, and does not. */
    enum { SPARSE = 4 };
    fx f;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.cache_limit = RELO_CACHE_LIMIT_NEVER;
    require_ok(fx_open(&f, NULL, &dd));
    relo_handle h[COUNT];
    void *buffer[COUNT];
    for (int i = 0; i < COUNT; i++) {
        h[i] = fx_reserve(f.s, SIZE);
        require_true(h[i].id != 0);
        expect_ok(fx_write_pattern(f.dev, h[i], (uint64_t)i + 1, SIZE));
        buffer[i] = fx_bind(f.s, h[i]).buffer;
    }
    int page = 0; /* allocation i's page, from 1, in the order they filled */
    for (int i = 0; i < COUNT; i++) {
        bool first = i == 0 || buffer[i] != buffer[i - 1];
        if (first) page++;
        if (page > SPARSE) break;
        if (first) continue;
        expect_ok(relo_release(f.dev, h[i]));
        h[i].id = 0;
    }
    relo_stats st = fx_dev_stats(f.dev);
    uint64_t held = st.pages;
    require_true(st.bytes_reserved - st.bytes_in_use > 0 && st.bytes_reserved - st.bytes_in_use < 5 * MiB);
    /* Packing that came to nothing waits a few pages before it is tried
     * again (the fill may have left it waiting): ask BIGS times. */
    relo_handle big[BIGS];
    for (int k = 0; k < BIGS; k++) {
        big[k] = fx_reserve(f.s, 5 * MiB);
        require_true(big[k].id != 0);
    }
    st = fx_dev_stats(f.dev);
    expect_eq(st.bytes_moved, 0);
    expect_eq(st.pages, held + BIGS);
    for (int i = 0; i < COUNT; i++)
        if (h[i].id) expect_true(fx_check_pattern(f.dev, h[i], (uint64_t)i + 1, SIZE));
    expect_ok(relo_device_check(f.dev));
    for (int k = 0; k < BIGS; k++) expect_ok(relo_release(f.dev, big[k]));
    for (int i = 0; i < COUNT; i++)
        if (h[i].id) expect_ok(relo_release(f.dev, h[i]));
    fx_close(&f);
}

CHECK_TEST(a_device_filling_up_packs_past_the_budget)
{
    /* Measure what the scene holds, then give the device a capacity (only
     * judged against: the backend lends more) that the requests fill past
     * 3/4 of. */
    scene sc;
    require_true(scene_open(&sc, 1, NULL, 0));
    uint64_t held = fx_dev_stats(sc.f.dev).bytes_reserved;
    scene_close(&sc);
    ask_for_new_pages(held + BIGS * BIG, true);
}

CHECK_MAIN()
