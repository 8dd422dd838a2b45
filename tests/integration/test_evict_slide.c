/*
 * test_evict_slide.c — moving a few allocations out of a page, then packing
 * it in place (src/pass/slide.c, relo__slide_make_room_evicting; step 4 of
 * relo__steps_refused): when the device refuses a page and no page has
 * the request's length free even packed, one page's free room is topped up
 * by moving an allocation into another page's hole, and the page is then
 * packed so that the room is one run.
 *
 * Two scenes, each a dense device on the host backend with room for
 * exactly three 64 KiB pages of the fine pool, filled and then holed (KiB;
 * h = a released hole). Both ask for 24 KiB, which has no hole and no
 * page: every run of 24 KiB holds an allocation of 20 KiB or more, and no
 * hole takes one, nor can one be cleared (every run of 20 KiB holds one
 * too, or more than the other pages' room); no page has 24 KiB free to
 * pack into one run, and no page can be emptied. Without the step the
 * request is refused.
 *
 * One move out:
 *   P  [X 8][Y 20][Z 20][h 16]      16 free
 *   Q  [26][20][10][h 8]             8 free
 *   R  [26][20][10][h 8]             8 free
 * X into an 8 KiB hole of Q or R leaves P 24 KiB free; Y and Z then slide
 * down by 8 KiB, and the request takes P's last 24 KiB.
 *
 * Two deep:
 *   P  [B 14][Y 20][Z 20][h 10]     10 free
 *   Q  [S 8][22][24][h 10]          10 free
 *   R  [22][26][8][h 8]              8 free
 * No page can top its room up to 24 KiB: B, the one allocation that
 * would do for P, is larger than every hole. So a hole of 14 KiB is made
 * first the same way: S into R's 8 KiB hole, then Q's 22 and 24 slide down
 * (18 KiB free at Q's end); then B moves into it, P's Y and Z slide down
 * by 14 KiB, and the request takes P's last 24 KiB.
 *
 * Into a new page the device can still lend (last cases): on a device that
 * charges 2 MiB granules and has 2 MiB left, two large-pool pages (MiB):
 *   P  [A 1.25][B 1.25][C 1.5]        full
 *   Q  [E 2.5][h 1.5]
 * A request of 2.5 MiB needs a 4 MiB page. C fits Q's hole and A fits
 * nowhere held, but a 2 MiB page, which the device can lend, takes it; B
 * then slides down and the request takes P's last 2.75 MiB.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"

#define PAGE (64 * KiB)
#define PAGES 3
#define ASK (24 * KiB)
#define MAX_COUNT 9
#define MAX_ORDER 12

/* An allocation of a scene: its size, its page (0 P, 1 Q, 2 R) and its
 * offset there. */
typedef struct placed {
    uint64_t size;
    int page;
    uint64_t offset;
} placed;

/* A scene: its allocations, and the reservations that fill the pages in
 * address order: an allocation's index, or (negative) a hole of that many
 * KiB, released after. */
typedef struct layout {
    int count;
    placed at[MAX_COUNT];
    int order_count;
    int order[MAX_ORDER];
} layout;

/* The first scene: one move out. */
enum { X, Y, Z, Q1, Q2, Q3, R1, R2, R3 };
static const layout one_out = {
    9,
    {
        [X] = {8 * KiB, 0, 0},          [Y] = {20 * KiB, 0, 8 * KiB},   [Z] = {20 * KiB, 0, 28 * KiB},
        [Q1] = {26 * KiB, 1, 0},        [Q2] = {20 * KiB, 1, 26 * KiB}, [Q3] = {10 * KiB, 1, 46 * KiB},
        [R1] = {26 * KiB, 2, 0},        [R2] = {20 * KiB, 2, 26 * KiB}, [R3] = {10 * KiB, 2, 46 * KiB},
    },
    12,
    {X, Y, Z, -16, Q1, Q2, Q3, -8, R1, R2, R3, -8},
};

/* The second scene: two deep. */
enum { B2, Y2, Z2, S2, Q22, Q24, R22, R26, R8 };
static const layout two_deep = {
    9,
    {
        [B2] = {14 * KiB, 0, 0},        [Y2] = {20 * KiB, 0, 14 * KiB}, [Z2] = {20 * KiB, 0, 34 * KiB},
        [S2] = {8 * KiB, 1, 0},         [Q22] = {22 * KiB, 1, 8 * KiB}, [Q24] = {24 * KiB, 1, 30 * KiB},
        [R22] = {22 * KiB, 2, 0},       [R26] = {26 * KiB, 2, 22 * KiB}, [R8] = {8 * KiB, 2, 48 * KiB},
    },
    12,
    {B2, Y2, Z2, -10, S2, Q22, Q24, -10, R22, R26, R8, -8},
};

typedef struct scene {
    fx f;
    const layout *l;
    relo_handle h[MAX_COUNT];
    relo_binding before[MAX_COUNT];
} scene;

/* Fills the three pages with l in address order and releases the holes.
 * False when the layout is not the one the cases rely on. */
static bool scene_open(scene *sc, const layout *l, relo_relocation relocation)
{
    memset(sc, 0, sizeof *sc);
    sc->l = l;
    const placed *at = l->at;
    relo_host_desc hd = fx_host();
    hd.capacity = PAGES * PAGE;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    dd.relocation = relocation;
    if (fx_open(&sc->f, &hd, &dd) != RELO_OK) return false;
    relo_handle holes[MAX_ORDER];
    int n = 0;
    for (int k = 0; k < l->order_count; k++) {
        int i = l->order[k];
        relo_handle got = fx_reserve(sc->f.s, i >= 0 ? at[i].size : (uint64_t)-i * KiB);
        if (!got.id) return false;
        if (i >= 0)
            sc->h[i] = got;
        else
            holes[n++] = got;
    }
    for (int i = 0; i < n; i++) expect_ok(relo_release(sc->f.dev, holes[i]));
    for (int i = 0; i < l->count; i++)
        if (fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, at[i].size) != RELO_OK) return false;
    relo_stats st = fx_stats(sc->f.s);
    if (st.pages != PAGES || st.bytes_reserved != PAGES * PAGE) return false;
    for (int i = 0; i < l->count; i++) {
        sc->before[i] = fx_bind(sc->f.s, sc->h[i]);
        if (sc->before[i].offset != at[i].offset) return false;
        for (int j = 0; j < i; j++)
            if ((sc->before[i].buffer == sc->before[j].buffer) != (at[i].page == at[j].page)) return false;
    }
    return true;
}

static bool scene_bytes_intact(scene *sc)
{
    for (int i = 0; i < sc->l->count; i++)
        if (!fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sc->l->at[i].size)) return false;
    return true;
}

static int scene_moved(scene *sc) { return fx_moved_count(sc->f.s, sc->h, sc->before, sc->l->count); }

/* No two of the scene's allocations, nor ask (id 0: none), share a byte. */
static bool scene_apart(scene *sc, relo_handle ask)
{
    relo_binding b[MAX_COUNT + 1];
    int n = 0;
    for (int i = 0; i < sc->l->count; i++) b[n++] = fx_bind(sc->f.s, sc->h[i]);
    if (ask.id) b[n++] = fx_bind(sc->f.s, ask);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (fx_overlap(b[i], b[j])) return false;
    return true;
}

static void scene_close(scene *sc) { fx_close_releasing(&sc->f, sc->h, (size_t)sc->l->count); }

/* No two allocations (ask among them unless its id is 0) share a byte,
 * every pattern reads back, and the device's invariants hold. */
static void expect_sound(scene *sc, relo_handle ask)
{
    expect_true(scene_apart(sc, ask));
    expect_true(scene_bytes_intact(sc));
    expect_ok(relo_device_check(sc->f.dev));
}

/* X is in the 8 KiB hole of Q or R (at 56 KiB). */
static bool x_moved_out(scene *sc)
{
    relo_binding x = fx_bind(sc->f.s, sc->h[X]);
    return (x.buffer == sc->before[Q1].buffer || x.buffer == sc->before[R1].buffer) && x.offset == 56 * KiB;
}

/* Every allocation of the scene but those of P where it was. */
static void expect_q_and_r_in_place(scene *sc)
{
    for (int i = 0; i < sc->l->count; i++)
        if (sc->l->at[i].page != 0) expect_true(fx_same_place(sc->before[i], fx_bind(sc->f.s, sc->h[i])));
}

/* The request refused with every allocation in place. */
static void expect_refused_in_place(scene *sc)
{
    relo_handle ask = {0};
    expect_status(relo_reserve(sc->f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(scene_moved(sc), 0);
    expect_eq(fx_stats(sc->f.s).bytes_leaked, 0);
    expect_sound(sc, (relo_handle){0});
}

/* One move out: the move, the two slides and the request at P's end. */
static void expect_room_made(scene *sc, relo_handle ask)
{
    relo_stats st = fx_stats(sc->f.s);
    expect_eq(st.allocations_moved, 3);
    expect_eq(st.bytes_moved, 48 * KiB);
    expect_eq(st.relocations, 2);
    expect_eq(st.relocations_abandoned, 0);
    expect_eq(st.bytes_leaked, 0);
    expect_eq(st.pages, PAGES);
    expect_eq(scene_moved(sc), 3);
    expect_true(x_moved_out(sc));
    relo_binding y = fx_bind(sc->f.s, sc->h[Y]), z = fx_bind(sc->f.s, sc->h[Z]);
    expect_true(y.buffer == sc->before[Y].buffer);
    expect_eq(y.offset, 0);
    expect_true(z.buffer == sc->before[Z].buffer);
    expect_eq(z.offset, 20 * KiB);
    expect_q_and_r_in_place(sc);
    relo_binding a = fx_bind(sc->f.s, ask);
    expect_true(a.buffer == sc->before[Y].buffer);
    expect_eq(a.offset, 40 * KiB);
    expect_sound(sc, ask);
}

/* The request served as expect_room_made says, then released. */
static void expect_request_served(scene *sc)
{
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc->f.s, ASK, &ask));
    if (!ask.id) return;
    expect_room_made(sc, ask);
    expect_ok(relo_release(sc->f.dev, ask));
}

CHECK_TEST(request_fits_once_one_allocation_moves_out_and_the_page_packs)
{
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    expect_request_served(&sc);
    scene_close(&sc);
}

CHECK_TEST(without_relocation_the_same_request_is_refused)
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
    relo_host_desc faults = fx_host();
    faults.refuse_copies = true;
    require_ok(relo_backend_host_set_faults(sc.f.backend, &faults));
    expect_refused_in_place(&sc);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    expect_ge(fx_stats(sc.f.s).relocations_abandoned, 1);
    require_ok(relo_backend_host_set_faults(sc.f.backend, &(relo_host_desc){0}));
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    if (ask.id) {
        expect_eq(fx_stats(sc.f.s).allocations_moved, 3);
        expect_true(x_moved_out(&sc));
        expect_eq(fx_bind(sc.f.s, ask).offset, 40 * KiB);
        expect_sound(&sc, ask);
        expect_ok(relo_release(sc.f.dev, ask));
    }
    scene_close(&sc);
}

CHECK_TEST(refused_slide_after_the_move_out_loses_nothing)
{
    /* The move out lands (one copy), the slides' first piece is refused:
     * X stays where it went, Y and Z where they were, every byte intact,
     * and the request is refused. */
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    relo_host_desc faults = fx_host();
    faults.refuse_copy_after = 1;
    require_ok(relo_backend_host_set_faults(sc.f.backend, &faults));
    relo_handle ask = {0};
    expect_status(relo_reserve(sc.f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    relo_stats st = fx_stats(sc.f.s);
    expect_eq(st.allocations_moved, 1);
    expect_ge(st.relocations_abandoned, 1);
    expect_eq(st.bytes_leaked, 0);
    expect_eq(scene_moved(&sc), 1);
    expect_true(x_moved_out(&sc));
    expect_true(fx_same_place(sc.before[Y], fx_bind(sc.f.s, sc.h[Y])));
    expect_true(fx_same_place(sc.before[Z], fx_bind(sc.f.s, sc.h[Z])));
    expect_sound(&sc, (relo_handle){0});
    scene_close(&sc);
}

CHECK_TEST(guarded_page_is_not_touched)
{
    /* A graph uses P's allocations: none may move, and nothing else opens
     * 24 KiB. Once the graph goes, the room is made. */
    scene sc;
    require_true(scene_open(&sc, &one_out, RELO_RELOCATION_AUTO));
    relo_graph *g = NULL;
    require_ok(relo_capture_prepare(sc.f.s));
    require_ok(relo_capture_begin(sc.f.s));
    for (int i = 0; i < one_out.count; i++)
        if (one_out.at[i].page == 0) (void)fx_bind(sc.f.s, sc.h[i]);
    require_ok(relo_capture_end(sc.f.s, &g));
    require_true(g != NULL);
    expect_eq(fx_stats(sc.f.s).guarded_pages, 1);
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
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    if (ask.id) {
        relo_stats st = fx_stats(sc.f.s);
        /* S out, Q's two slides; B out, P's two slides. */
        expect_eq(st.allocations_moved, 6);
        expect_eq(st.bytes_moved, (8 + 22 + 24 + 14 + 20 + 20) * KiB);
        expect_eq(st.relocations, 4);
        expect_eq(st.relocations_abandoned, 0);
        expect_eq(st.bytes_leaked, 0);
        expect_eq(st.pages, PAGES);
        relo_binding s = fx_bind(sc.f.s, sc.h[S2]), b = fx_bind(sc.f.s, sc.h[B2]);
        expect_true(s.buffer == sc.before[R8].buffer);
        expect_eq(s.offset, 56 * KiB);
        expect_true(b.buffer == sc.before[Q22].buffer);
        expect_eq(b.offset, 46 * KiB);
        expect_eq(fx_bind(sc.f.s, sc.h[Q22]).offset, 0);
        expect_eq(fx_bind(sc.f.s, sc.h[Q24]).offset, 22 * KiB);
        expect_eq(fx_bind(sc.f.s, sc.h[Y2]).offset, 0);
        expect_eq(fx_bind(sc.f.s, sc.h[Z2]).offset, 20 * KiB);
        relo_binding a = fx_bind(sc.f.s, ask);
        expect_true(a.buffer == sc.before[Y2].buffer);
        expect_eq(a.offset, 40 * KiB);
        for (int i = R22; i <= R8; i++) expect_true(fx_same_place(sc.before[i], fx_bind(sc.f.s, sc.h[i])));
        expect_sound(&sc, ask);
        expect_ok(relo_release(sc.f.dev, ask));
    }
    scene_close(&sc);
}

CHECK_TEST(two_deep_without_relocation_the_same_request_is_refused)
{
    scene sc;
    require_true(scene_open(&sc, &two_deep, RELO_RELOCATION_OFF));
    expect_refused_in_place(&sc);
    scene_close(&sc);
}

/* ---- into a new page the device can still lend ------------------------- */

enum { PA, PB, PC, QE, LENT_COUNT };
static const uint64_t lent_size[LENT_COUNT] = {1280 * KiB, 1280 * KiB, 1536 * KiB, 2560 * KiB};

/* The two pages on a device of capacity bytes charging 2 MiB granules (the
 * empty pages taken first are kept: no release threshold), patterns
 * written. False when the layout is not the one the cases rely on. */
static bool lent_open(fx *f, relo_handle *h, relo_binding *before, uint64_t capacity)
{
    relo_host_desc hd = fx_host();
    hd.capacity = capacity;
    hd.granule = 2 * MiB;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    dd.release_threshold = RELO_RELEASE_THRESHOLD_NEVER;
    if (fx_open(f, &hd, &dd) != RELO_OK) return false;
    for (int i = 0; i < LENT_COUNT; i++) {
        if (i == PA || i == QE) {
            /* a 4 MiB page, empty, for what follows */
            relo_handle page = fx_reserve(f->s, 4 * MiB);
            if (!page.id || relo_release(f->dev, page) != RELO_OK) return false;
        }
        h[i] = fx_reserve(f->s, lent_size[i]);
        if (!h[i].id || fx_write_pattern(f->dev, h[i], (uint64_t)i + 1, lent_size[i]) != RELO_OK) return false;
        before[i] = fx_bind(f->s, h[i]);
    }
    relo_stats st = fx_stats(f->s);
    return st.pages == 2 && st.bytes_reserved == 8 * MiB && before[PA].offset == 0 &&
           before[PB].buffer == before[PA].buffer && before[PB].offset == 1280 * KiB &&
           before[PC].buffer == before[PA].buffer && before[PC].offset == 2560 * KiB &&
           before[QE].buffer != before[PA].buffer && before[QE].offset == 0;
}

/* Every pattern reads back, nothing overlaps, the invariants hold. */
static void expect_lent_sound(fx *f, const relo_handle *h, relo_handle ask)
{
    relo_binding b[LENT_COUNT + 1];
    for (int i = 0; i < LENT_COUNT; i++) {
        expect_true(fx_check_pattern(f->dev, h[i], (uint64_t)i + 1, lent_size[i]));
        b[i] = fx_bind(f->s, h[i]);
    }
    int n = LENT_COUNT;
    if (ask.id) b[n++] = fx_bind(f->s, ask);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) expect_true(!fx_overlap(b[i], b[j]));
    expect_ok(relo_device_check(f->dev));
}

CHECK_TEST(moved_out_allocations_take_a_new_page_the_device_can_still_lend)
{
    fx f;
    relo_handle h[LENT_COUNT];
    relo_binding before[LENT_COUNT];
    require_true(lent_open(&f, h, before, 10 * MiB));
    relo_handle ask = {0};
    expect_ok(relo_reserve(f.s, 2560 * KiB, &ask));
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 3);
    expect_eq(st.bytes_reserved, 10 * MiB);
    /* C into Q's hole, A into the new page, B slid down. */
    expect_eq(st.allocations_moved, 3);
    expect_eq(st.bytes_moved, (1536 + 1280 + 1280) * KiB);
    relo_binding a = fx_bind(f.s, h[PA]), b = fx_bind(f.s, h[PB]), c = fx_bind(f.s, h[PC]);
    expect_true(c.buffer == before[QE].buffer);
    expect_eq(c.offset, 2560 * KiB);
    expect_true(a.buffer != before[PA].buffer && a.buffer != before[QE].buffer);
    expect_true(b.buffer == before[PA].buffer);
    expect_eq(b.offset, 0);
    if (ask.id) {
        relo_binding r = fx_bind(f.s, ask);
        expect_true(r.buffer == before[PA].buffer);
        expect_eq(r.offset, 1280 * KiB);
    }
    expect_lent_sound(&f, h, ask);
    if (ask.id) expect_ok(relo_release(f.dev, ask));
    fx_close_releasing(&f, h, LENT_COUNT);
}

CHECK_TEST(less_than_a_granule_left_takes_no_new_page)
{
    /* 1 MiB left: no page for A, so nothing moves and the request is
     * refused. */
    fx f;
    relo_handle h[LENT_COUNT];
    relo_binding before[LENT_COUNT];
    require_true(lent_open(&f, h, before, 9 * MiB));
    relo_handle ask = {0};
    expect_status(relo_reserve(f.s, 2560 * KiB, &ask), RELO_ERR_OUT_OF_MEMORY);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 2);
    expect_eq(st.allocations_moved, 0);
    for (int i = 0; i < LENT_COUNT; i++) expect_true(fx_same_place(before[i], fx_bind(f.s, h[i])));
    expect_lent_sound(&f, h, (relo_handle){0});
    fx_close_releasing(&f, h, LENT_COUNT);
}

CHECK_MAIN()
