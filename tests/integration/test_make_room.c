/*
 * test_make_room.c — make-room (src/pass/compaction.c, relo__compact_make_room;
 * step 3 of relo__steps_refused) after a window whose plan failed: the
 * failed plan carved its targets out of another page's free slices and
 * merged them back when it gave them up, which can unlink the very slice
 * the next window begins with. That window must be found again on its
 * page, not walked from a slice that is gone.
 *
 * The scene: a dense device on the host backend with room for exactly
 * four 64 KiB pages of the fine pool, filled and then holed (KiB; h = a
 * released hole):
 *   P  [a1 5][a2 5][h 2][a3 4][X 48]        2 free
 *   Q  [F 13][Z 14][W 37]                   13 free
 *   R  [15][h 3][15][h 3][15][h 3][10]       9 free
 *   S  the same as R                         9 free
 * A request of 16 KiB has no hole and no page. make-room's windows, fewest
 * live bytes first: P's [a1 a2 h a3] (14), then Q's [F Z] (14; Q is
 * younger), then R's and S's (15). P's plan moves a1 and a2 into F (the
 * only hole of 5 KiB or more) and finds no hole for a3 (every other hole
 * is 3 KiB), so it gives both targets up: the second one's free merges
 * with the first and with what is left of F, and F's slice is unlinked.
 * Q's window must then be found again. The request is served in the end
 * (the slide step packs the pages in place, one of R's allocations moves
 * into the run that opens on Q, and R's end then has 19 KiB free); what
 * the case checks is that nothing is walked that is gone, and that every
 * byte and every allocation is where relo says.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"

#define PAGE (64 * KiB)
#define PAGES 4
#define ASK (16 * KiB)
#define COUNT 14

enum { A1, A2, A3, X, Z, W, R1, R2, R3, R4, S1, S2, S3, S4 };

static const uint64_t size_of[COUNT] = {
    [A1] = 5 * KiB,  [A2] = 5 * KiB,  [A3] = 4 * KiB,  [X] = 48 * KiB, [Z] = 14 * KiB,
    [W] = 37 * KiB,  [R1] = 15 * KiB, [R2] = 15 * KiB, [R3] = 15 * KiB, [R4] = 10 * KiB,
    [S1] = 15 * KiB, [S2] = 15 * KiB, [S3] = 15 * KiB, [S4] = 10 * KiB,
};

/* The reservations that fill the pages, in address order: an allocation,
 * or (negative) a hole of that many KiB, released after. */
static const int order[] = {A1, A2, -2, A3, X, -13, Z, W, R1, -3, R2, -3, R3, -3, R4, S1, -3, S2, -3, S3, -3, S4};
#define ORDER_COUNT (int)(sizeof order / sizeof order[0])

typedef struct scene {
    fx f;
    relo_handle h[COUNT];
} scene;

/* Fills the four pages in address order and releases the holes. False
 * when the layout is not the one the case relies on. */
static bool scene_open(scene *sc)
{
    memset(sc, 0, sizeof *sc);
    relo_host_desc hd = fx_host();
    hd.capacity = PAGES * PAGE;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    if (fx_open(&sc->f, &hd, &dd) != RELO_OK) return false;
    relo_handle holes[ORDER_COUNT];
    relo_binding at[ORDER_COUNT];
    int n = 0;
    for (int k = 0; k < ORDER_COUNT; k++) {
        int i = order[k];
        relo_handle got = fx_reserve(sc->f.s, i >= 0 ? size_of[i] : (uint64_t)-i * KiB);
        if (!got.id) return false;
        at[k] = fx_bind(sc->f.s, got);
        if (i >= 0)
            sc->h[i] = got;
        else
            holes[n++] = got;
        /* In address order: each right after the one before, on the same
         * page, or at the start of a new one once a page is full. */
        if (k > 0 && at[k].buffer == at[k - 1].buffer && at[k].offset != at[k - 1].offset + at[k - 1].size)
            return false;
        if ((k == 0 || at[k].buffer != at[k - 1].buffer) && at[k].offset != 0) return false;
    }
    for (int i = 0; i < n; i++) expect_ok(relo_release(sc->f.dev, holes[i]));
    for (int i = 0; i < COUNT; i++)
        if (fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, size_of[i]) != RELO_OK) return false;
    relo_stats st = fx_stats(sc->f.s);
    return st.pages == PAGES && st.bytes_reserved == PAGES * PAGE;
}

CHECK_TEST(window_after_a_failed_plan_is_found_again)
{
    scene sc;
    require_true(scene_open(&sc));
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    expect_eq(fx_stats(sc.f.s).bytes_leaked, 0);
    expect_eq(fx_stats(sc.f.s).pages, PAGES);
    relo_binding b[COUNT + 1];
    int n = 0;
    for (int i = 0; i < COUNT; i++) b[n++] = fx_bind(sc.f.s, sc.h[i]);
    if (ask.id) b[n++] = fx_bind(sc.f.s, ask);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) expect_true(!fx_overlap(b[i], b[j]));
    for (int i = 0; i < COUNT; i++) expect_true(fx_check_pattern(sc.f.dev, sc.h[i], (uint64_t)i + 1, size_of[i]));
    expect_ok(relo_device_check(sc.f.dev));
    if (ask.id) expect_ok(relo_release(sc.f.dev, ask));
    fx_close_releasing(&sc.f, sc.h, COUNT);
}

CHECK_MAIN()
