/*
 * test_compaction.c — the packed placement's compaction (docs/placement.md): it
 * keeps every byte, moves a page all or nothing, never touches a guarded
 * page, loses nothing when a pass is abandoned or its outcome is unknown,
 * and makes a workload fit when the device refuses a page. The last cases
 * check the pages a larger request takes: copies of a recent size where
 * the granule would strand a tail, and, under memory pressure only, for
 * such an allocation moved alone; and the pages packing moves runs to,
 * two to a page where the granule would strand a tail of each.
 *
 * Setup shared by the cases: a device of the packed placement on the host backend; 256
 * allocations of 16 KiB fill 64 pages of 64 KiB (a new fine-pool page
 * holds as many copies of its request as fit, and small workloads get
 * small pages); then some of each page's four are released, so every page
 * is sparse and compaction has somewhere to put what it moves.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"
#include "core/device.h"
#include "pass/relocation.h"
#include "core/stream.h"

#define COUNT 256
#define SIZE (16 * KiB)

typedef struct scene {
    fx f;
    relo_handle h[COUNT];
    relo_binding before[COUNT];
    bool kept[COUNT];
} scene;

/* Fills the pages, then keeps allocation i where keep(i) says so. */
static bool scene_open(scene *sc, const relo_host_desc *hd, bool (*keep)(int))
{
    memset(sc, 0, sizeof *sc);
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    relo_host_desc def = fx_host();
    if (fx_open(&sc->f, hd ? hd : &def, &dd) != RELO_OK) return false;
    for (int i = 0; i < COUNT; i++) {
        sc->h[i] = fx_reserve(sc->f.s, SIZE);
        if (!sc->h[i].id || fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE) != RELO_OK)
            return false;
    }
    for (int i = 0; i < COUNT; i++) {
        sc->kept[i] = keep(i);
        if (!sc->kept[i]) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    }
    for (int i = 0; i < COUNT; i++)
        if (sc->kept[i]) sc->before[i] = fx_bind(sc->f.s, sc->h[i]);
    return true;
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->kept[i]) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    fx_close(&sc->f);
}

/* Every kept allocation still holds its pattern. */
static bool scene_bytes_intact(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->kept[i] && !fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE)) return false;
    return true;
}

/* How many kept allocations are no longer where they were. */
static int scene_moved(scene *sc)
{
    int moved = 0;
    for (int i = 0; i < COUNT; i++)
        if (sc->kept[i] && !fx_same_place(sc->before[i], fx_bind(sc->f.s, sc->h[i]))) moved++;
    return moved;
}

static bool keep_half(int i)
{
    return i % 4 < 2;
}
static bool keep_quarter(int i)
{
    return i % 4 == 0;
}

CHECK_TEST(compaction_keeps_bytes_and_gives_pages_back)
{
    scene sc;
    require_true(scene_open(&sc, NULL, keep_half));
    relo_stats before = fx_stats(sc.f.s);
    expect_eq(before.allocations, COUNT / 2);
    expect_eq(before.allocations_moved, 0);

    expect_ok(relo_reclaim(sc.f.s));
    relo_stats after = fx_stats(sc.f.s);
    expect_gt(after.allocations_moved, 0);
    expect_eq(after.allocations_moved, (uint64_t)scene_moved(&sc));
    expect_eq(after.bytes_moved, after.allocations_moved * SIZE);
    expect_lt(after.pages, before.pages);
    expect_lt(after.bytes_reserved, before.bytes_reserved);
    expect_eq(after.bytes_in_use, before.bytes_in_use);
    expect_eq(after.relocations_abandoned, 0);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(compaction_moves_a_page_all_or_nothing)
{
    scene sc;
    require_true(scene_open(&sc, NULL, keep_half));
    expect_ok(relo_reclaim(sc.f.s));
    /* The two kept allocations of each original page moved together or
     * stayed together: a page is emptied whole or not at all. */
    int pages_moved = 0, pages_kept = 0;
    for (int i = 0; i < COUNT; i += 4) {
        bool a = !fx_same_place(sc.before[i], fx_bind(sc.f.s, sc.h[i]));
        bool b = !fx_same_place(sc.before[i + 1], fx_bind(sc.f.s, sc.h[i + 1]));
        expect_eq(a, b);
        if (a && b) pages_moved++;
        if (!a && !b) pages_kept++;
    }
    expect_gt(pages_moved, 0);
    expect_gt(pages_kept, 0); /* the moved ones went somewhere */
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(compaction_never_touches_guarded_pages)
{
    scene sc;
    require_true(scene_open(&sc, NULL, keep_half));
    /* A graph uses the first 8 pages: the allocations resolved while the
     * stream records. */
    relo_graph *g = NULL;
    require_ok(relo_capture_prepare(sc.f.s));
    require_ok(relo_capture_begin(sc.f.s));
    for (int i = 0; i < 32; i++)
        if (sc.kept[i]) (void)fx_bind(sc.f.s, sc.h[i]);
    require_ok(relo_capture_end(sc.f.s, &g));
    require_true(g != NULL);
    expect_eq(fx_stats(sc.f.s).guarded_pages, 8);
    for (int i = 0; i < COUNT; i++)
        if (sc.kept[i]) sc.before[i] = fx_bind(sc.f.s, sc.h[i]);

    expect_ok(relo_reclaim(sc.f.s));
    expect_gt(fx_stats(sc.f.s).allocations_moved, 0);
    for (int i = 0; i < 32; i++)
        if (sc.kept[i]) expect_true(fx_same_place(sc.before[i], fx_bind(sc.f.s, sc.h[i])));
    /* Nothing moved onto a guarded page either: no other allocation shares
     * a buffer with a guarded one except its own page-mates. */
    for (int i = 32; i < COUNT; i++) {
        if (!sc.kept[i]) continue;
        relo_binding b = fx_bind(sc.f.s, sc.h[i]);
        for (int j = 0; j < 32; j += 4) expect_true(b.buffer != sc.before[j].buffer);
    }
    expect_eq(fx_stats(sc.f.s).guarded_pages, 8);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));

    /* Once the graph goes, those pages are ordinary again. */
    relo_graph_destroy(g);
    expect_eq(fx_stats(sc.f.s).guarded_pages, 0);
    expect_ok(relo_reclaim(sc.f.s));
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(abandoned_compaction_loses_nothing)
{
    scene sc;
    require_true(scene_open(&sc, NULL, keep_half));
    relo_stats before = fx_stats(sc.f.s);
    relo_host_desc faults = fx_host();
    faults.refuse_copies = true;
    require_ok(relo_backend_host_set_faults(sc.f.backend, &faults));

    expect_ok(relo_reclaim(sc.f.s));
    relo_stats after = fx_stats(sc.f.s);
    expect_ge(after.relocations_abandoned, 1);
    expect_eq(after.allocations_moved, 0);
    expect_eq(scene_moved(&sc), 0);
    expect_eq(after.pages, before.pages);
    expect_eq(after.bytes_reserved, before.bytes_reserved);
    expect_eq(after.bytes_leaked, 0);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));

    /* With copies back, the same reclaim moves. */
    faults.refuse_copies = false;
    require_ok(relo_backend_host_set_faults(sc.f.backend, &faults));
    expect_ok(relo_reclaim(sc.f.s));
    expect_gt(fx_stats(sc.f.s).allocations_moved, 0);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(compaction_with_unknown_copy_outcome_leaks_and_keeps_bytes)
{
    scene sc;
    require_true(scene_open(&sc, NULL, keep_half));
    relo_host_desc faults = fx_host();
    faults.fail_wait_copies = true;
    require_ok(relo_backend_host_set_faults(sc.f.backend, &faults));

    expect_ok(relo_reclaim(sc.f.s));
    relo_stats after = fx_stats(sc.f.s);
    expect_ge(after.relocations_abandoned, 1);
    expect_eq(after.allocations_moved, 0);
    expect_gt(after.bytes_leaked, 0);
    expect_eq(scene_moved(&sc), 0); /* every handle still at its source */
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* Fills a capacity-limited device with pages a quarter used, then asks
 * for more than any hole holds: the device refuses a new page, and only
 * packing what is live makes room. */
static relo_status reserve_after_fragmenting(uint64_t *moved)
{
    scene sc;
    relo_host_desc hd = fx_host();
    hd.capacity = 4 * MiB; /* the 64 pages of 64 KiB */
    if (!scene_open(&sc, &hd, keep_quarter)) {
        check_fail_(__FILE__, __LINE__, "scene_open");
        return RELO_ERR_INVALID_ARGUMENT;
    }
    relo_device_desc got;
    expect_ok(relo_device_desc_get(sc.f.dev, &got));
    expect_eq(got.capacity, 4 * MiB);
    relo_handle big = {0};
    relo_status st = relo_reserve(sc.f.s, 1 * MiB, &big);
    *moved = fx_stats(sc.f.s).allocations_moved;
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    if (st == RELO_OK) expect_ok(relo_release(sc.f.dev, big));
    scene_close(&sc);
    return st;
}

CHECK_TEST(refused_page_is_made_by_compaction)
{
    uint64_t moved = 0;
    expect_ok(reserve_after_fragmenting(&moved));
    expect_gt(moved, 0);
}

CHECK_TEST(refused_page_without_relocation_stays_refused)
{
    /* The same scene with relocation off: nothing can move, the device is
     * full, the reservation fails. This is what compaction buys. */
    scene sc;
    relo_host_desc hd = fx_host();
    hd.capacity = 4 * MiB;
    memset(&sc, 0, sizeof sc);
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.relocation = RELO_RELOCATION_OFF;
    require_ok(fx_open(&sc.f, &hd, &dd));
    for (int i = 0; i < COUNT; i++) {
        sc.h[i] = fx_reserve(sc.f.s, SIZE);
        require_ne(sc.h[i].id, 0);
    }
    for (int i = 0; i < COUNT; i++) {
        sc.kept[i] = keep_quarter(i);
        if (!sc.kept[i]) expect_ok(relo_release(sc.f.dev, sc.h[i]));
    }
    relo_handle big = {0};
    expect_status(relo_reserve(sc.f.s, 1 * MiB, &big), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(refused_page_empties_fine_pages_into_the_large_pools_room)
{
    /* One 1.5 MiB allocation on a 2 MiB large-pool page (512 KiB free) and
     * four fine pages of 64 KiB, each holding one 48 KiB allocation: no
     * fine page has room for another's, so only the large pool's room can
     * take them. The device is full; a 100 KiB request needs a new page. */
    fx f;
    relo_host_desc hd = fx_host();
    hd.capacity = 2 * MiB + 4 * 64 * KiB;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    require_ok(fx_open(&f, &hd, &dd));
    relo_handle large = fx_reserve(f.s, 1536 * KiB), fine[4];
    require_ne(large.id, 0);
    for (int i = 0; i < 4; i++) {
        fine[i] = fx_reserve(f.s, 48 * KiB);
        require_ne(fine[i].id, 0);
        require_ok(fx_write_pattern(f.dev, fine[i], (uint64_t)i + 1, 48 * KiB));
    }
    relo_stats st = fx_stats(f.s);
    require_eq(st.pages, 5);
    require_eq(st.bytes_reserved, hd.capacity);
    relo_binding big = fx_bind(f.s, large);

    relo_handle ask = {0};
    expect_ok(relo_reserve(f.s, 100 * KiB, &ask));
    st = fx_stats(f.s);
    expect_ge(st.allocations_moved, 2);
    expect_eq(st.relocations_abandoned, 0);
    int spilled = 0;
    for (int i = 0; i < 4; i++) {
        expect_true(fx_check_pattern(f.dev, fine[i], (uint64_t)i + 1, 48 * KiB));
        spilled += fx_bind(f.s, fine[i]).buffer == big.buffer;
    }
    expect_eq((uint64_t)spilled, st.allocations_moved);
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_release(f.dev, ask));
    for (int i = 0; i < 4; i++) expect_ok(relo_release(f.dev, fine[i]));
    expect_ok(relo_release(f.dev, large));
    fx_close(&f);
}

/* A larger request gets a page of its own, in 2 MiB granules. When a size
 * among the last four distinct ones to get such a page comes again and the
 * granule strands more than 1/64 of it, its page holds up to four copies,
 * the count that strands the least per byte: 12.5 MiB takes 14 MiB alone,
 * then 50 MiB for four, even with other sizes in between. A size seen once,
 * or one the granule strands little of, is not bet on. */
CHECK_TEST(repeated_large_size_gets_a_page_of_copies)
{
    fx f;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    relo_host_desc hd = fx_host();
    require_ok(fx_open(&f, &hd, &dd));
    const uint64_t s = 25 * MiB / 2;
    relo_handle h[20];
    size_t n = 0;
    h[n++] = fx_reserve(f.s, s);
    expect_eq(fx_stats(f.s).bytes_reserved, 14 * MiB);
    h[n++] = fx_reserve(f.s, s); /* the same size again: four copies in 50 MiB */
    expect_eq(fx_stats(f.s).bytes_reserved, 64 * MiB);
    for (int i = 0; i < 3; i++)
        h[n++] = fx_reserve(f.s, s); /* the other copies' room, and the last 1.5 MiB */
    expect_eq(fx_stats(f.s).bytes_reserved, 64 * MiB);
    expect_eq(fx_stats(f.s).backend_allocs, 2);
    h[n++] = fx_reserve(f.s, 27 * MiB / 2); /* a new size: a page of its own */
    h[n++] = fx_reserve(f.s, 29 * MiB / 2); /* another */
    expect_eq(fx_stats(f.s).bytes_reserved, 94 * MiB);
    h[n++] = fx_reserve(f.s, s); /* seen three sizes ago: four copies again */
    expect_eq(fx_stats(f.s).bytes_reserved, 144 * MiB);
    for (int i = 0; i < 3; i++) h[n++] = fx_reserve(f.s, s); /* fills it */
    expect_eq(fx_stats(f.s).bytes_reserved, 144 * MiB);
    h[n++] = fx_reserve(f.s, 35 * MiB); /* strands 1 MiB, over 1/64: two copies when repeated */
    h[n++] = fx_reserve(f.s, 35 * MiB);
    expect_eq(fx_stats(f.s).bytes_reserved, 250 * MiB); /* 36 MiB, then 70 MiB for two */
    h[n++] = fx_reserve(f.s, 127 * MiB / 2); /* strands 0.5 MiB, under 1/64: alone even when repeated */
    h[n++] = fx_reserve(f.s, 127 * MiB / 2);
    expect_eq(fx_stats(f.s).bytes_reserved, 378 * MiB); /* 64 MiB pages */
    for (size_t i = 0; i < n; i++) expect_ok(relo_release(f.dev, h[i]));
    expect_ok(relo_device_check(f.dev));
    fx_close(&f);
}

/* Before a new page the packed layout weighs packing against the page it
 * would take; a page of copies is a bet on more of the size, so it weighs
 * (and asks packing to spare) the request's own page: 26 MiB for a
 * repeated 25 MiB request whose new page would hold two, 50 MiB. */
CHECK_TEST(packing_weighs_a_repeated_size_by_its_own_page)
{
    fx f;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    relo_host_desc hd = fx_host();
    hd.granule = 2 * MiB;
    require_ok(fx_open_sim(&f, &hd, &dd));
    relo_handle h[2];
    h[0] = fx_reserve(f.s, 25 * MiB);
    expect_eq(fx_stats(f.s).bytes_reserved, 26 * MiB);
    relo_stream_layout *l = &f.s->layout;
    uint64_t peak = 0, page = 0;
    relo__device_lock(f.dev);
    l->ops->want_pack(l, 25 * MiB, 25 * MiB, 26 * MiB, true, &peak, &page);
    relo__device_unlock(f.dev);
    expect_eq(page, 26 * MiB);
    h[1] = fx_reserve(f.s, 25 * MiB); /* the page it takes holds two */
    expect_eq(fx_stats(f.s).bytes_reserved, 76 * MiB);
    fx_close_releasing(&f, h, 2);
}

/* Four 12.5 MiB allocations sit alone on 20 MiB pages, and the size had a
 * page of its own before. Packing that gives memory back unasked (a
 * reclaim) moves them to pages of their own size, two to a page: 25 MiB
 * rounds to 26, where one each would strand 1.5 MiB of a 14 MiB page.
 * Packing under memory pressure moves the first to a page of four copies,
 * 50 MiB, where the other three follow, and gives back 2 MiB more. Bytes
 * kept both ways. */
static void lone_copies_scene(fx *f, relo_handle h[5])
{
    relo_host_desc hd = fx_host();
    hd.granule = 2 * MiB;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.cache_limit = RELO_CACHE_LIMIT_NEVER;
    require_ok(fx_open(f, &hd, &dd));
    const uint64_t s = 25 * MiB / 2;
    h[4] = fx_reserve(f->s, s); /* a page of its own: the size is a recent one */
    relo_handle x[4];
    for (int i = 0; i < 4; i++) x[i] = fx_reserve(f->s, 20 * MiB);
    for (int i = 0; i < 4; i++) expect_ok(relo_release(f->dev, x[i]));
    for (int i = 0; i < 4; i++) {
        h[i] = fx_reserve(f->s, s);
        expect_ok(fx_write_pattern(f->dev, h[i], (uint64_t)i + 1, s));
    }
    expect_eq(fx_stats(f->s).bytes_reserved, 94 * MiB);
}

/* per_page: how many of the four share each page they moved to. */
static void lone_copies_check(fx *f, relo_handle h[5], int per_page)
{
    for (int i = 0; i < 4; i++) expect_true(fx_check_pattern(f->dev, h[i], (uint64_t)i + 1, 25 * MiB / 2));
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            expect_eq(fx_bind(f->s, h[i]).buffer == fx_bind(f->s, h[j]).buffer, i / per_page == j / per_page);
    expect_eq(fx_stats(f->s).allocations_moved, 4);
    expect_ok(relo_device_check(f->dev));
    fx_close_releasing(f, h, 5);
}

CHECK_TEST(pressure_moves_a_lone_repeated_size_to_a_page_of_copies)
{
    fx f;
    relo_handle h[5];
    lone_copies_scene(&f, h);
    relo__device_lock(f.dev);
    relo__compact_and_release(f.dev, f.s, UINT64_MAX, true, RELO_REASON_MEMORY_PRESSURE, UINT64_MAX);
    relo__device_unlock(f.dev);
    expect_eq(fx_stats(f.s).bytes_reserved, 64 * MiB); /* 14 + 50 */
    lone_copies_check(&f, h, 4);
}

CHECK_TEST(reclaim_moves_lone_allocations_two_to_a_page_of_their_size)
{
    fx f;
    relo_handle h[5];
    lone_copies_scene(&f, h);
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_stats(f.s).bytes_reserved, 66 * MiB); /* 14 + 2 x 26, not 14 + 4 x 14 */
    lone_copies_check(&f, h, 2);
}

/* Two 16 MiB pages hold an 8 MiB and a 5 MiB allocation each: 13 MiB,
 * which a page sized to it rounds up to 14. Packing under memory pressure
 * moves both runs into one 26 MiB page, where each alone would take a
 * 14 MiB page and strand its own granule's tail: 26 MiB held, not 28.
 * Bytes kept. */
static const uint64_t two_runs_size[4] = {8 * MiB, 5 * MiB, 8 * MiB, 5 * MiB};

/* Two 16 MiB pages, each holding an 8 and a 5 MiB allocation (h[0..1] on
 * one, h[2..3] on the other), on a device lending capacity bytes (0: no
 * limit); then packing as when the device refused a page. */
static void two_runs_packed(fx *f, uint64_t capacity, relo_handle h[4])
{
    relo_host_desc hd = fx_host();
    hd.granule = 2 * MiB;
    hd.capacity = capacity;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.cache_limit = RELO_CACHE_LIMIT_NEVER;
    require_ok(fx_open(f, &hd, &dd));
    relo_handle big[2];
    for (int i = 0; i < 2; i++) big[i] = fx_reserve(f->s, 16 * MiB);
    for (int i = 0; i < 2; i++) expect_ok(relo_release(f->dev, big[i]));
    for (int i = 0; i < 4; i++) {
        h[i] = fx_reserve(f->s, two_runs_size[i]);
        expect_ok(fx_write_pattern(f->dev, h[i], (uint64_t)i + 1, two_runs_size[i]));
    }
    expect_eq(fx_stats(f->s).bytes_reserved, 32 * MiB);
    expect_true(fx_bind(f->s, h[0]).buffer == fx_bind(f->s, h[1]).buffer);
    expect_true(fx_bind(f->s, h[0]).buffer != fx_bind(f->s, h[2]).buffer);
    relo__device_lock(f->dev);
    relo__compact_and_release(f->dev, f->s, UINT64_MAX, true, RELO_REASON_MEMORY_PRESSURE, UINT64_MAX);
    relo__device_unlock(f->dev);
    expect_eq(fx_stats(f->s).allocations_moved, 4);
    for (int i = 0; i < 4; i++)
        expect_true(fx_check_pattern(f->dev, h[i], (uint64_t)i + 1, two_runs_size[i]));
    expect_ok(relo_device_check(f->dev));
}

CHECK_TEST(pressure_moves_two_runs_into_one_page_where_they_round_to_less)
{
    fx f;
    relo_handle h[4];
    two_runs_packed(&f, 0, h);
    expect_eq(fx_stats(f.s).bytes_reserved, 26 * MiB);
    for (int i = 1; i < 4; i++) expect_true(fx_bind(f.s, h[i]).buffer == fx_bind(f.s, h[0]).buffer);
    /* The page a pair is planned into is set only while it is planned. */
    relo_pool *large = &f.s->layout.packed.pools[1];
    relo__device_lock(f.dev);
    large->fill_page = large->pages[0];
    relo__device_unlock(f.dev);
    expect_eq(relo_device_check(f.dev), RELO_ERR_CORRUPT);
    relo__device_lock(f.dev);
    large->fill_page = NULL;
    relo__device_unlock(f.dev);
    expect_ok(relo_device_check(f.dev));
    fx_close_releasing(&f, h, 4);
}

/* The same two pages on a device that can lend 14 MiB more, not the
 * 26 MiB page a pair needs: each run moves alone to a 14 MiB page, one
 * after the other (the first page's 16 MiB come back before the second
 * run's page is taken), and every byte is kept. */
CHECK_TEST(pressure_moves_runs_alone_where_the_pair_page_is_not_lent)
{
    fx f;
    relo_handle h[4];
    two_runs_packed(&f, 46 * MiB, h);
    expect_eq(fx_stats(f.s).bytes_reserved, 28 * MiB);
    expect_true(fx_bind(f.s, h[0]).buffer == fx_bind(f.s, h[1]).buffer);
    expect_true(fx_bind(f.s, h[2]).buffer == fx_bind(f.s, h[3]).buffer);
    expect_true(fx_bind(f.s, h[0]).buffer != fx_bind(f.s, h[2]).buffer);
    fx_close_releasing(&f, h, 4);
}

/* The large pool's small pages follow the workload (1/64 of the most bytes
 * live), but once a request above 10 MiB has needed a page of its own they
 * are at least that request: four 3 MiB requests after a 12 MiB one share
 * one 12 MiB page. Without such a request the same four, in a workload of
 * 12 MiB, get a 4 MiB page each. */
CHECK_TEST(large_request_sets_the_small_page_floor)
{
    fx f;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    relo_host_desc hd = fx_host();
    relo_handle h[5];
    require_ok(fx_open(&f, &hd, &dd));
    h[4] = fx_reserve(f.s, 12 * MiB);
    expect_eq(fx_stats(f.s).backend_allocs, 1);
    for (int i = 0; i < 4; i++) h[i] = fx_reserve(f.s, 3 * MiB);
    expect_eq(fx_stats(f.s).backend_allocs, 2);
    expect_eq(fx_stats(f.s).bytes_reserved, 24 * MiB);
    fx_close_releasing(&f, h, 5);

    require_ok(fx_open(&f, &hd, &dd));
    for (int i = 0; i < 4; i++) h[i] = fx_reserve(f.s, 3 * MiB);
    expect_eq(fx_stats(f.s).backend_allocs, 4);
    expect_eq(fx_stats(f.s).bytes_reserved, 16 * MiB);
    fx_close_releasing(&f, h, 4);
}

CHECK_MAIN()
