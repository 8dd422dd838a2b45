/*
 * test_refused_reservation.c — a reservation the device refuses a page for
 * is served with room recovered from the pages held: allocations move into
 * other pages' holes, a hole is cleared first for one that fits no hole
 * (src/pass/compaction.c, relo__compact_make_room and
 * relo__compact_make_room_chained), or the allocations of pages whose
 * granule rounding strands their tails move together into one new page
 * (relo__compact_merge_tails). Without relocation, or where a graph guards
 * a page, nothing moves. Packing a page in place is
 * test_refused_reservation_packing.c's.
 *
 * Every scene but the last is a device of the packed placement on the host backend with
 * room for exactly its 64 KiB pages of the fine pool, filled and then
 * holed (KiB; h = a released hole).
 *
 * A plan given up (first case), four pages:
 *   P  [a1 5][a2 5][h 2][a3 4][X 48]        2 free
 *   Q  [F 13][Z 14][W 37]                   13 free
 *   R  [15][h 3][15][h 3][15][h 3][10]       9 free
 *   S  the same as R                         9 free
 * A request of 16 KiB has no hole and no page. The runs that would open
 * it, fewest live bytes first: P's [a1 a2 h a3] (14), then Q's [F Z] (14;
 * Q is younger), then R's and S's (15). P's plan moves a1 and a2 into F
 * (the only hole of 5 KiB or more) and finds no hole for a3 (every other
 * hole is 3 KiB), so it gives both targets up: the second one's free
 * merges with the first and with what is left of F, and F's slice is
 * unlinked. Q's run must then be found again on its page, not walked from
 * a slice that is gone. The request is served in the end (the pages are
 * packed in place, one of R's allocations moves into the run that opens on
 * Q, and R's end then has 19 KiB free); the case checks that every byte
 * and every allocation is where relo says.
 *
 * A hole cleared first, three pages:
 *   A  [B 12][h 4][16][16][16]          4 free
 *   C  [16][16][20][h 5][s 2][h 5]     10 free
 *   D  [16][16][30][h 2]                2 free
 * A request of 16 KiB has no hole and no page. Its best run is B and the
 * hole after it, but no hole takes 12 KiB, and every other run holds more
 * than the other pages' room. Packing a page in place joins no run of
 * 16 KiB (no page has that much free), no page can be emptied (16 KiB free
 * in all, at least 48 KiB on each) and no tails merge (less than a page
 * free in all). Two moves make it: s into D's 2 KiB hole, which clears
 * 12 KiB on C, then B into that; the request takes A's first 16 KiB.
 *
 * Stranded tails merged: a device charging 2 MiB granules, 66 MiB (33
 * granules). Allocations of 11, 13 and 15 MiB take pages of their own of
 * 12, 14 and 16 MiB (42 MiB; each strands 1 MiB at its end), which leaves
 * 24 MiB to lend. A request of 25 MiB needs a page of 26 MiB: no hole
 * takes anything, no page packs further; moving the 11 and 13 MiB
 * allocations into one page of 24 MiB gives back 26 MiB, and then the
 * 26 MiB page fits.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"
#include "scene.h"

/* ---- a plan given up ---------------------------------------------------- */

static const scene_layout given_up = {
    .pages = {"5 5 h2 4 48", "h13 14 37", "15 h3 15 h3 15 h3 10", "15 h3 15 h3 15 h3 10"},
};

CHECK_TEST(refused_request_is_served_after_a_plan_gives_its_targets_back)
{
    scene sc;
    require_true(scene_open(&sc, &given_up, RELO_RELOCATION_AUTO));
    relo_handle ask = fx_reserve(sc.f.s, 16 * KiB);
    expect_eq(fx_stats(sc.f.s).bytes_leaked, 0);
    expect_eq(fx_stats(sc.f.s).pages, 4);
    scene_close_sound(&sc, ask);
}

/* ---- a hole cleared first ----------------------------------------------- */

#define CLEAR_ASK (16 * KiB)

enum { B, A1, A2, A3, C1, C2, C3, S, D1, D2, D3 };

static const scene_layout cleared = {
    .pages = {"12 h4 16 16 16", "16 16 20 h5 2 h5", "16 16 30 h2"},
};

CHECK_TEST(refused_request_is_served_by_clearing_a_hole)
{
    scene sc;
    require_true(scene_open(&sc, &cleared, RELO_RELOCATION_AUTO));
    relo_handle ask = fx_reserve(sc.f.s, CLEAR_ASK);
    scene_expect_moved(&sc, 2, 14 * KiB, 3);
    expect_eq(scene_moved(&sc), 2);
    /* s took D's hole; B the 12 KiB that opened on C. */
    expect_true(scene_at(&sc, sc.h[S], D1, 62 * KiB));
    expect_true(scene_at(&sc, sc.h[B], C1, 52 * KiB));
    if (ask.id) expect_true(scene_at(&sc, ask, A1, 0));
    scene_close_sound(&sc, ask);
}

CHECK_TEST(without_relocation_the_request_a_cleared_hole_serves_is_refused)
{
    scene sc;
    require_true(scene_open(&sc, &cleared, RELO_RELOCATION_OFF));
    scene_expect_refused(&sc, CLEAR_ASK);
    expect_eq(scene_moved(&sc), 0);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* With page (0 A, 1 C, 2 D) guarded the request is refused, and none of
 * page's allocations moves. (The other pages may still be packed in place,
 * in vain: no page has 16 KiB free.) The scene, open, is left to the
 * caller with the graph destroyed. */
static void expect_guard_holds(scene *sc, int page)
{
    relo_graph *g = scene_guard_page(sc, page);
    require_true(g != NULL);
    relo_handle ask = {0};
    expect_status(relo_reserve(sc->f.s, CLEAR_ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    for (int i = 0; i < sc->count; i++)
        if (sc->at[i].page == page) expect_true(scene_in_place(sc, i));
    expect_eq(fx_stats(sc->f.s).bytes_leaked, 0);
    scene_expect_sound(sc, (relo_handle){0});
    relo_graph_destroy(g);
}

CHECK_TEST(guarded_blocking_page_is_not_touched)
{
    /* A graph uses B's page: B may not move, and nothing else opens a run
     * of 16 KiB. */
    scene sc;
    require_true(scene_open(&sc, &cleared, RELO_RELOCATION_AUTO));
    expect_guard_holds(&sc, 0);
    /* Once the graph goes, the two moves are there to make (s was packed
     * in place on C meanwhile: B lands where the joined hole begins). */
    relo_handle ask = fx_reserve(sc.f.s, CLEAR_ASK);
    expect_true(scene_at(&sc, ask, A1, 0));
    expect_true(scene_bind(&sc, B).buffer == sc.before[C1].buffer);
    expect_true(scene_bind(&sc, S).buffer == sc.before[D1].buffer);
    for (int i = 0; i < sc.count; i++)
        if (i != B && i != S) expect_true(scene_in_place(&sc, i));
    scene_close_sound(&sc, ask);
}

CHECK_TEST(guarded_page_of_the_first_move_is_not_touched)
{
    /* A graph uses C: its small allocation may not move, so no hole of
     * 12 KiB opens for B. */
    scene sc;
    require_true(scene_open(&sc, &cleared, RELO_RELOCATION_AUTO));
    expect_guard_holds(&sc, 1);
    scene_close(&sc);
}

/* ---- stranded tails merged ---------------------------------------------- */

#define GRANULE (2 * MiB)
#define CAPACITY (33 * GRANULE)
#define TAILS_ASK (25 * MiB)

static const scene_layout tails = {
    .pages = {"11", "13", "15"},
    .unit = MiB,
    .reserved = 42 * MiB,
};

static bool tails_open(scene *sc, relo_relocation relocation)
{
    relo_host_desc hd = fx_host();
    hd.capacity = CAPACITY;
    hd.granule = GRANULE;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.capacity = CAPACITY;
    dd.relocation = relocation;
    return scene_open_host(sc, &tails, &hd, &dd);
}

CHECK_TEST(refused_request_is_served_by_merging_stranded_tails_into_one_page)
{
    scene sc;
    require_true(tails_open(&sc, RELO_RELOCATION_AUTO));
    relo_handle ask = fx_reserve(sc.f.s, TAILS_ASK);
    /* The merged page (24 MiB), the 15 MiB one's (16) and the request's (26). */
    scene_expect_moved(&sc, 2, 24 * MiB, 3);
    expect_eq(fx_stats(sc.f.s).bytes_reserved, CAPACITY);
    relo_binding a = scene_bind(&sc, 0), b = scene_bind(&sc, 1);
    expect_true(!fx_same_place(sc.before[0], a));
    expect_true(!fx_same_place(sc.before[1], b));
    expect_true(a.buffer == b.buffer);
    expect_true(scene_in_place(&sc, 2));
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_TEST(without_relocation_stranded_tails_are_not_merged)
{
    scene sc;
    require_true(tails_open(&sc, RELO_RELOCATION_OFF));
    scene_expect_refused(&sc, TAILS_ASK);
    expect_true(scene_bytes_intact(&sc));
    scene_close(&sc);
}

CHECK_TEST(a_guarded_page_is_not_merged)
{
    /* A graph uses the 11 MiB allocation's page. Merging the other two
     * would need a page of 28 MiB, more than the device can lend: the
     * request is refused and nothing moves. */
    scene sc;
    require_true(tails_open(&sc, RELO_RELOCATION_AUTO));
    relo_graph *g = scene_guard_page(&sc, 0);
    require_true(g != NULL);
    scene_expect_refused(&sc, TAILS_ASK);
    for (int i = 0; i < sc.count; i++) expect_true(scene_in_place(&sc, i));
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    /* Once the graph goes, the merge is there to make. */
    relo_graph_destroy(g);
    relo_handle ask = fx_reserve(sc.f.s, TAILS_ASK);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 2);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_MAIN()
