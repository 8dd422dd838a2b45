/*
 * test_refused_reservation_packing.c — a reservation the device refuses a
 * page for is served by packing a page in place (src/pass/slide.c,
 * docs/placement.md): the allocations of one page slide toward its start,
 * so its scattered free room joins up and the request fits
 * (relo__slide_make_room); where no page has the request's length free even
 * packed, one page's room is first topped up by moving a few of its
 * allocations into other pages' holes, or into a new page the device can
 * still lend (relo__slide_make_room_evicting). Each slide overlaps its own
 * bytes, so its copies go in pieces no longer than the slide. Without
 * relocation, or where a graph guards a page or a pin holds one of its
 * allocations, that page stays as it is. Room recovered from other pages'
 * holes is test_refused_reservation.c's.
 *
 * Four scenes, each a device of the packed placement on the host backend (or, where a case
 * says, the mock backend) with room for exactly its pages, filled and then
 * holed (KiB; h = a released hole).
 *
 * Scattered holes: 16 pages of 64 KiB, each holding four 12 KiB
 * allocations with a 4 KiB hole after each. Every page has 16 KiB free in
 * four holes, no hole takes a 12 KiB allocation, and a 16 KiB request fits
 * only once a page is packed: its second, third and fourth allocations
 * slide down by 4, 8 and 12 KiB.
 *
 * The next two ask for 24 KiB, which has no hole and no page: every run of
 * 24 KiB holds an allocation of 20 KiB or more, and no hole takes one, nor
 * can one be cleared (every run of 20 KiB holds one too, or more than the
 * other pages' room); no page has 24 KiB free to pack into one run, and no
 * page can be emptied.
 *
 * One move out, three pages:
 *   P  [X 8][Y 20][Z 20][h 16]      16 free
 *   Q  [26][20][10][h 8]             8 free
 *   R  [26][20][10][h 8]             8 free
 * X into an 8 KiB hole of Q or R leaves P 24 KiB free; Y and Z then slide
 * down by 8 KiB, and the request takes P's last 24 KiB.
 *
 * Two deep, three pages:
 *   P  [B 14][Y 20][Z 20][h 10]     10 free
 *   Q  [S 8][22][24][h 10]          10 free
 *   R  [22][26][8][h 8]              8 free
 * No page can top its room up to 24 KiB: B, the one allocation that
 * would do for P, is larger than every hole. So a hole of 14 KiB is made
 * first the same way: S into R's 8 KiB hole, then Q's 22 and 24 slide down
 * (18 KiB free at Q's end); then B moves into it, P's Y and Z slide down
 * by 14 KiB, and the request takes P's last 24 KiB.
 *
 * Into a new page the device can still lend: on a device that charges
 * 2 MiB granules and has 2 MiB left, two large-pool pages (MiB):
 *   P  [A 1.25][B 1.25][C 1.5]        full
 *   Q  [E 2.5][h 1.5]
 * A request of 2.5 MiB needs a 4 MiB page. C fits Q's hole and A fits
 * nowhere held, but a 2 MiB page, which the device can lend, takes it; B
 * then slides down and the request takes P's last 2.75 MiB.
 */
#include "check.h"
#include "fixture.h"
#include "mock_backend.h"
#include "relo.h"
#include "relo_backend.h"
#include "scene.h"

/* ---- scattered holes ---------------------------------------------------- */

#define SCATTERED_PAGES 16
#define PER_PAGE 4
#define BIG (12 * KiB)
#define SCATTERED_ASK (16 * KiB)

/* Four 12 KiB allocations, each followed by a 4 KiB hole: allocation i
 * is the (i % 4)-th of page i / 4. */
#define SCATTERED_PAGE "12 h4 12 h4 12 h4 12 h4"
#define SCATTERED_4 SCATTERED_PAGE, SCATTERED_PAGE, SCATTERED_PAGE, SCATTERED_PAGE
static const scene_layout scattered = {.pages = {SCATTERED_4, SCATTERED_4, SCATTERED_4, SCATTERED_4}};

/* The page's allocations packed: offsets 0, 12, 24 and 36 KiB in their
 * own buffer; every other allocation where it was. */
static void expect_page_packed(scene *sc, int page)
{
    for (int i = 0; i < sc->count; i++) {
        relo_binding now = scene_bind(sc, i);
        expect_true(now.buffer == sc->before[i].buffer);
        if (i / PER_PAGE == page)
            expect_eq(now.offset, (uint64_t)(i % PER_PAGE) * BIG);
        else
            expect_eq(now.offset, sc->before[i].offset);
    }
}

/* The request served from the packed page's end, every byte intact;
 * then released. */
static void expect_served_packed(scene *sc, int page)
{
    relo_handle ask = fx_reserve(sc->f.s, SCATTERED_ASK);
    expect_eq(fx_stats(sc->f.s).allocations_moved, 3);
    expect_page_packed(sc, page);
    expect_true(scene_at(sc, ask, page * PER_PAGE, PER_PAGE * BIG));
    scene_expect_sound(sc, ask);
    if (ask.id) expect_ok(relo_release(sc->f.dev, ask));
}

/* A reservation of size bytes is refused after a pass was abandoned, with
 * moved allocations moved. */
static void expect_abandoned(scene *sc, uint64_t size, uint64_t moved)
{
    relo_handle ask = {0};
    expect_status(relo_reserve(sc->f.s, size, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_ge(fx_stats(sc->f.s).relocations_abandoned, 1);
    expect_eq(fx_stats(sc->f.s).allocations_moved, moved);
    expect_eq(scene_moved(sc), (int)moved);
}

CHECK_TEST(refused_request_is_served_by_packing_a_page_in_place)
{
    scene sc;
    require_true(scene_open(&sc, &scattered, RELO_RELOCATION_AUTO));
    expect_served_packed(&sc, 0);
    scene_expect_moved(&sc, 3, 3 * BIG, SCATTERED_PAGES);
    expect_eq(scene_moved(&sc), 3);
    scene_close(&sc);
}

CHECK_TEST(without_relocation_scattered_holes_stay_apart)
{
    /* What packing buys: nothing may move, every hole is 4 KiB. */
    scene sc;
    require_true(scene_open(&sc, &scattered, RELO_RELOCATION_OFF));
    scene_expect_refused(&sc, SCATTERED_ASK);
    expect_true(scene_bytes_intact(&sc));
    scene_close(&sc);
}

/* The scattered scene on the mock backend, whose copies land in order at
 * wait_copies (as a device's asynchronous ones do) and which refuses any
 * copy whose source and target overlap, as OpenCL does. */
static bool mock_scene_open(scene *sc, mock_ctx *m)
{
    relo_backend *b = NULL;
    if (mock_backend_create(m, NULL, &b) != RELO_OK) return false;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    if (!scene_open_on(sc, &scattered, b, &dd)) return false;
    /* The device is full: a 17th page is refused. */
    mock_refuse(m, MOCK_ALLOC, 1, true, RELO_ERR_OUT_OF_MEMORY);
    mock_clear_log(m);
    return true;
}

CHECK_TEST(packing_copies_never_overlap_and_land_in_order)
{
    mock_ctx *m = calloc(1, sizeof *m);
    require_true(m != NULL);
    scene sc;
    require_true(mock_scene_open(&sc, m));
    expect_served_packed(&sc, 0);
    expect_eq(m->overlapping_copies, 0);
    /* 12 KiB slid by 4, 8 and 12 KiB: 3 + 2 + 1 pieces. */
    expect_eq(mock_count(m, MOCK_COPY), 6);
    expect_eq(mock_count(m, MOCK_WAIT_COPIES), 1);
    scene_close(&sc);
    free(m);
}

CHECK_TEST(refused_piece_is_played_back_and_nothing_is_lost)
{
    mock_ctx *m = calloc(1, sizeof *m);
    require_true(m != NULL);
    scene sc;
    require_true(mock_scene_open(&sc, m));
    /* The pass has its fourth copy refused, after the second allocation's
     * three pieces overwrote its own bytes: the three are played back, the
     * pass abandons, and the request fails with every byte in place. */
    mock_refuse(m, MOCK_COPY, 4, false, 0);
    relo_handle ask = {0};
    expect_status(relo_reserve(sc.f.s, SCATTERED_ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    relo_stats st = fx_stats(sc.f.s);
    expect_eq(st.relocations_abandoned, 1);
    expect_eq(st.allocations_moved, 0);
    expect_eq(st.bytes_leaked, 0);
    expect_eq(scene_moved(&sc), 0);
    /* 3 landed + 1 refused + 3 played back. */
    expect_eq(mock_count(m, MOCK_COPY), 7);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));

    /* With copies back, the same request packs the page from the restored
     * bytes. */
    expect_served_packed(&sc, 0);
    expect_eq(m->overlapping_copies, 0);
    scene_close(&sc);
    free(m);
}

CHECK_TEST(unknown_copy_outcome_leaks_the_page_room)
{
    /* The copies' wait fails: relo cannot tell what landed, so the handles
     * stay at their sources, the packed page's free room is never reused,
     * and nothing is counted as moved. (A slide overwrites its source, so
     * unlike a move to another page, its bytes are not promised here.) */
    scene sc;
    require_true(scene_open(&sc, &scattered, RELO_RELOCATION_AUTO));
    require_ok(relo_backend_host_set_faults(sc.f.backend, &(relo_host_desc){.fail_wait_copies = true}));
    expect_abandoned(&sc, SCATTERED_ASK, 0);
    expect_gt(fx_stats(sc.f.s).bytes_leaked, 0);
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(guarded_page_is_never_packed)
{
    scene sc;
    require_true(scene_open(&sc, &scattered, RELO_RELOCATION_AUTO));
    /* A graph uses the first page: the second is packed instead. */
    relo_graph *g = scene_guard_page(&sc, 0);
    require_true(g != NULL);
    expect_served_packed(&sc, 1);
    relo_graph_destroy(g);
    scene_close(&sc);
}

CHECK_TEST(pinned_page_is_never_packed)
{
    scene sc;
    require_true(scene_open(&sc, &scattered, RELO_RELOCATION_AUTO));
    relo_binding pinned;
    require_ok(relo_pin(sc.f.s, sc.h[1], &pinned));
    expect_served_packed(&sc, 1);
    expect_ok(relo_unpin(sc.f.dev, sc.h[1]));
    scene_close(&sc);
}

/* ---- one move out, and two deep ----------------------------------------- */

#define ASK (24 * KiB)

enum { X, Y, Z, Q1, Q2, Q3, R1, R2, R3 };
static const scene_layout one_out = {.pages = {"8 20 20 h16", "26 20 10 h8", "26 20 10 h8"}};

enum { B2, Y2, Z2, S2, Q22, Q24, R22, R26, R8 };
static const scene_layout two_deep = {.pages = {"14 20 20 h10", "8 22 24 h10", "22 26 8 h8"}};

/* X is in the 8 KiB hole of Q or R (at 56 KiB). */
static bool x_moved_out(scene *sc)
{
    relo_binding x = scene_bind(sc, X);
    return (x.buffer == sc->before[Q1].buffer || x.buffer == sc->before[R1].buffer) && x.offset == 56 * KiB;
}

/* The request refused with every allocation in place. */
static void expect_refused_in_place(scene *sc)
{
    relo_handle ask = {0};
    expect_status(relo_reserve(sc->f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(scene_moved(sc), 0);
    expect_eq(fx_stats(sc->f.s).bytes_leaked, 0);
    scene_expect_sound(sc, (relo_handle){0});
}

/* One move out: the move, the two slides and the request at P's end. */
static void expect_room_made(scene *sc, relo_handle ask)
{
    scene_expect_moved(sc, 3, 48 * KiB, 3);
    expect_eq(fx_stats(sc->f.s).relocations, 2);
    expect_eq(scene_moved(sc), 3);
    expect_true(x_moved_out(sc));
    expect_true(scene_at(sc, sc->h[Y], Y, 0));
    expect_true(scene_at(sc, sc->h[Z], Z, 20 * KiB));
    /* Every allocation of Q and R where it was. */
    for (int i = Q1; i <= R3; i++) expect_true(scene_in_place(sc, i));
    expect_true(scene_at(sc, ask, Y, 40 * KiB));
    scene_expect_sound(sc, ask);
}

/* The request served as expect_room_made says, then released. */
static void expect_request_served(scene *sc)
{
    relo_handle ask = fx_reserve(sc->f.s, ASK);
    if (!ask.id) return;
    expect_room_made(sc, ask);
    expect_ok(relo_release(sc->f.dev, ask));
}

CHECK_TEST(refused_request_is_served_by_moving_one_allocation_out_and_packing)
{
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    expect_request_served(&sc);
    scene_close(&sc);
}

CHECK_TEST(without_relocation_no_allocation_moves_out)
{
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_OFF));
    expect_refused_in_place(&sc);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    scene_close(&sc);
}

CHECK_TEST(refused_copy_of_the_move_out_loses_nothing)
{
    /* Every copy refused: the move out is abandoned, nothing is packed,
     * the request is refused; with copies back it is made as usual. */
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    require_ok(relo_backend_host_set_faults(sc.f.backend, &(relo_host_desc){.refuse_copies = true}));
    expect_refused_in_place(&sc);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    expect_ge(fx_stats(sc.f.s).relocations_abandoned, 1);
    require_ok(relo_backend_host_set_faults(sc.f.backend, &(relo_host_desc){0}));
    relo_handle ask = fx_reserve(sc.f.s, ASK);
    if (ask.id) {
        expect_eq(fx_stats(sc.f.s).allocations_moved, 3);
        expect_true(x_moved_out(&sc));
        expect_eq(fx_bind(sc.f.s, ask).offset, 40 * KiB);
    }
    scene_close_sound(&sc, ask);
}

CHECK_TEST(refused_packing_after_the_move_out_loses_nothing)
{
    /* The move out lands (one copy), the slides' first piece is refused:
     * X stays where it went, Y and Z where they were, every byte intact,
     * and the request is refused. */
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    require_ok(relo_backend_host_set_faults(sc.f.backend, &(relo_host_desc){.refuse_copy_after = 1}));
    expect_abandoned(&sc, ASK, 1);
    expect_eq(fx_stats(sc.f.s).bytes_leaked, 0);
    expect_true(x_moved_out(&sc));
    expect_true(scene_in_place(&sc, Y));
    expect_true(scene_in_place(&sc, Z));
    scene_close_sound(&sc, (relo_handle){0});
}

CHECK_TEST(guarded_page_gives_nothing_out_and_is_not_packed)
{
    /* A graph uses P's allocations: none may move, and nothing else opens
     * 24 KiB. Once the graph goes, the room is made. */
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    relo_graph *g = scene_guard_page(&sc, 0);
    require_true(g != NULL);
    expect_refused_in_place(&sc);
    relo_graph_destroy(g);
    expect_request_served(&sc);
    scene_close(&sc);
}

CHECK_TEST(pinned_allocation_keeps_its_page_in_place)
{
    /* A pin on Z: P is no source, so X does not move out for it. */
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    relo_binding pinned;
    require_ok(relo_pin(sc.f.s, sc.h[Z], &pinned));
    expect_refused_in_place(&sc);
    expect_ok(relo_unpin(sc.f.dev, sc.h[Z]));
    scene_close(&sc);
}

CHECK_TEST(two_deep_a_hole_for_the_blocking_allocation_is_made_first)
{
    scene sc;
    require_true(scene_open(&sc, &two_deep, RELO_RELOCATION_AUTO));
    relo_handle ask = fx_reserve(sc.f.s, ASK);
    if (ask.id) {
        /* S out, Q's two slides; B out, P's two slides. */
        scene_expect_moved(&sc, 6, (8 + 22 + 24 + 14 + 20 + 20) * KiB, 3);
        expect_eq(fx_stats(sc.f.s).relocations, 4);
        expect_true(scene_at(&sc, sc.h[S2], R8, 56 * KiB));
        expect_true(scene_at(&sc, sc.h[B2], Q22, 46 * KiB));
        expect_eq(scene_bind(&sc, Q22).offset, 0);
        expect_eq(scene_bind(&sc, Q24).offset, 22 * KiB);
        expect_eq(scene_bind(&sc, Y2).offset, 0);
        expect_eq(scene_bind(&sc, Z2).offset, 20 * KiB);
        expect_true(scene_at(&sc, ask, Y2, 40 * KiB));
        for (int i = R22; i <= R8; i++) expect_true(scene_in_place(&sc, i));
    }
    scene_close_sound(&sc, ask);
}

CHECK_TEST(without_relocation_the_two_deep_request_is_refused)
{
    scene sc;
    require_true(scene_open(&sc, &two_deep, RELO_RELOCATION_OFF));
    expect_refused_in_place(&sc);
    scene_close(&sc);
}

/* ---- into a new page the device can still lend -------------------------- */

enum { PA, PB, PC, QE };
static const scene_layout lent = {
    .pages = {"1280 1280 1536", "2560"},
    .reserved = 8 * MiB,
    .empty_page = 4 * MiB,
};

/* The two pages on a device of capacity bytes charging 2 MiB granules (the
 * empty pages taken first are kept: no cache limit). */
static bool lent_open(scene *sc, uint64_t capacity)
{
    relo_host_desc hd = fx_host();
    hd.capacity = capacity;
    hd.granule = 2 * MiB;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.cache_limit = RELO_CACHE_LIMIT_NEVER;
    return scene_open_host(sc, &lent, &hd, &dd);
}

CHECK_TEST(moved_out_allocations_take_a_new_page_the_device_can_still_lend)
{
    scene sc;
    require_true(lent_open(&sc, 10 * MiB));
    relo_handle ask = fx_reserve(sc.f.s, 2560 * KiB);
    expect_eq(fx_stats(sc.f.s).bytes_reserved, 10 * MiB);
    /* C into Q's hole, A into the new page, B slid down. */
    scene_expect_moved(&sc, 3, (1536 + 1280 + 1280) * KiB, 3);
    relo_binding a = scene_bind(&sc, PA);
    expect_true(scene_at(&sc, sc.h[PC], QE, 2560 * KiB));
    expect_true(a.buffer != sc.before[PA].buffer && a.buffer != sc.before[QE].buffer);
    expect_true(scene_at(&sc, sc.h[PB], PA, 0));
    if (ask.id) expect_true(scene_at(&sc, ask, PA, 1280 * KiB));
    scene_close_sound(&sc, ask);
}

CHECK_TEST(less_than_a_granule_left_takes_no_new_page)
{
    /* 1 MiB left: no page for A, so nothing moves and the request is
     * refused. */
    scene sc;
    require_true(lent_open(&sc, 9 * MiB));
    scene_expect_refused(&sc, 2560 * KiB);
    expect_eq(fx_stats(sc.f.s).pages, 2);
    for (int i = 0; i < sc.count; i++) expect_true(scene_in_place(&sc, i));
    scene_close_sound(&sc, (relo_handle){0});
}

CHECK_MAIN()
