/*
 * test_slide.c — packing pages in place (src/pass/slide.c, docs/placement.md): when
 * the device refuses a page and no other page has room for what is in the
 * way, the allocations of one page slide toward its start, so its scattered
 * free room joins up and the request fits. Each slide overlaps its own
 * bytes, so its copies go in pieces no longer than the slide.
 *
 * Setup shared by the cases: a dense device whose backend refuses a 17th
 * page; 16 pages of 64 KiB, each holding four 12 KiB allocations with a
 * 4 KiB one after each; the 4 KiB ones are released. Every page then has
 * 16 KiB free in four 4 KiB holes, no hole takes a 12 KiB allocation, and a
 * 16 KiB request fits only once a page is packed: its second, third and
 * fourth allocations slide down by 4, 8 and 12 KiB.
 */
#include "check.h"
#include "fixture.h"
#include "mock_backend.h"
#include "relo.h"
#include "relo_backend.h"

#define PAGES 16
#define PER_PAGE 4
#define COUNT (PAGES * PER_PAGE)
#define BIG (12 * KiB)
#define SMALL (4 * KiB)
#define PAGE (64 * KiB)
#define ASK (16 * KiB)

typedef struct scene {
    fx f;
    relo_handle h[COUNT];       /* the 12 KiB allocations, in order */
    relo_binding before[COUNT];
} scene;

/* Fills the pages over b (taken) and releases the small allocations.
 * False when the layout is not the one the cases rely on. */
static bool scene_open_on(scene *sc, relo_backend *b, const relo_device_desc *dd)
{
    memset(sc, 0, sizeof *sc);
    if (fx_open_backend(&sc->f, b, dd) != RELO_OK) return false;
    relo_handle small[COUNT];
    for (int i = 0; i < COUNT; i++) {
        sc->h[i] = fx_reserve(sc->f.s, BIG);
        small[i] = fx_reserve(sc->f.s, SMALL);
        if (!sc->h[i].id || !small[i].id) return false;
        if (fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, BIG) != RELO_OK) return false;
    }
    for (int i = 0; i < COUNT; i++) expect_ok(relo_release(sc->f.dev, small[i]));
    relo_stats st = fx_stats(sc->f.s);
    if (st.pages != PAGES || st.bytes_reserved != PAGES * PAGE) return false;
    for (int i = 0; i < COUNT; i++) {
        sc->before[i] = fx_bind(sc->f.s, sc->h[i]);
        /* Allocation i is the (i % 4)-th of its page, after i % 4 holes. */
        if (sc->before[i].offset != (uint64_t)(i % PER_PAGE) * (BIG + SMALL)) return false;
    }
    return true;
}

/* On the host backend with room for exactly the 16 pages. */
static bool scene_open(scene *sc, relo_host_desc hd, const relo_device_desc *dd)
{
    hd.capacity = PAGES * PAGE;
    relo_backend *b = NULL;
    if (relo_backend_host_create(&hd, &b) != RELO_OK) return false;
    return scene_open_on(sc, b, dd);
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < COUNT; i++) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    fx_close(&sc->f);
}

static bool scene_bytes_intact(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (!fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, BIG)) return false;
    return true;
}

static int scene_moved(scene *sc) { return fx_moved_count(sc->f.s, sc->h, sc->before, COUNT); }

/* The first page's allocations packed: offsets 0, 12, 24 and 36 KiB in
 * their own buffer; every other allocation where it was. */
static void expect_page_packed(scene *sc, int page)
{
    for (int i = 0; i < COUNT; i++) {
        relo_binding now = fx_bind(sc->f.s, sc->h[i]);
        expect_true(now.buffer == sc->before[i].buffer);
        if (i / PER_PAGE == page)
            expect_eq(now.offset, (uint64_t)(i % PER_PAGE) * BIG);
        else
            expect_eq(now.offset, sc->before[i].offset);
    }
}

CHECK_TEST(refused_page_is_made_by_sliding_and_keeps_bytes)
{
    scene sc;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    require_true(scene_open(&sc, fx_host(), &dd));
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    relo_stats st = fx_stats(sc.f.s);
    expect_eq(st.allocations_moved, 3);
    expect_eq(st.bytes_moved, 3 * BIG);
    expect_eq(st.relocations_abandoned, 0);
    expect_eq(st.bytes_leaked, 0);
    expect_eq(st.pages, PAGES);
    expect_eq(scene_moved(&sc), 3);
    expect_page_packed(&sc, 0);
    /* The request took the run that opened at the packed page's end. */
    relo_binding b = fx_bind(sc.f.s, ask);
    expect_true(b.buffer == sc.before[0].buffer);
    expect_eq(b.offset, PER_PAGE * BIG);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_TEST(without_relocation_the_same_request_is_refused)
{
    /* What sliding buys: nothing may move, every hole is 4 KiB. */
    scene sc;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    dd.relocation = RELO_RELOCATION_OFF;
    require_true(scene_open(&sc, fx_host(), &dd));
    relo_handle ask = {0};
    expect_status(relo_reserve(sc.f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    expect_true(scene_bytes_intact(&sc));
    scene_close(&sc);
}

/* The scene on the mock backend, whose copies land in order at
 * wait_copies (as a device's asynchronous ones do) and which refuses any
 * copy whose source and target overlap, as OpenCL does. */
static bool mock_scene_open(scene *sc, mock_ctx *m)
{
    relo_backend *b = NULL;
    if (mock_backend_create(m, NULL, &b) != RELO_OK) return false;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    if (!scene_open_on(sc, b, &dd)) return false;
    /* The device is full: a 17th page is refused. */
    mock_refuse(m, MOCK_ALLOC, 1, true, RELO_ERR_OUT_OF_MEMORY);
    mock_clear_log(m);
    return true;
}

CHECK_TEST(slide_copies_never_overlap_and_land_in_order)
{
    mock_ctx *m = calloc(1, sizeof *m);
    require_true(m != NULL);
    scene sc;
    require_true(mock_scene_open(&sc, m));
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    expect_eq(m->overlapping_copies, 0);
    /* 12 KiB slid by 4, 8 and 12 KiB: 3 + 2 + 1 pieces. */
    expect_eq(mock_count(m, MOCK_COPY), 6);
    expect_eq(mock_count(m, MOCK_WAIT_COPIES), 1);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 3);
    expect_page_packed(&sc, 0);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, ask));
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
    expect_status(relo_reserve(sc.f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
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
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    expect_eq(fx_stats(sc.f.s).allocations_moved, 3);
    expect_eq(m->overlapping_copies, 0);
    expect_page_packed(&sc, 0);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, ask));
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
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    require_true(scene_open(&sc, fx_host(), &dd));
    relo_host_desc faults = fx_host();
    faults.fail_wait_copies = true;
    require_ok(relo_backend_host_set_faults(sc.f.backend, &faults));
    relo_handle ask = {0};
    expect_status(relo_reserve(sc.f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    relo_stats st = fx_stats(sc.f.s);
    expect_ge(st.relocations_abandoned, 1);
    expect_eq(st.allocations_moved, 0);
    expect_gt(st.bytes_leaked, 0);
    expect_eq(scene_moved(&sc), 0);
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

CHECK_TEST(guarded_page_is_never_slid)
{
    scene sc;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    require_true(scene_open(&sc, fx_host(), &dd));
    /* A graph uses the first page: its allocations are resolved while the
     * stream records. */
    relo_graph *g = NULL;
    require_ok(relo_capture_prepare(sc.f.s));
    require_ok(relo_capture_begin(sc.f.s));
    for (int i = 0; i < PER_PAGE; i++) (void)fx_bind(sc.f.s, sc.h[i]);
    require_ok(relo_capture_end(sc.f.s, &g));
    require_true(g != NULL);
    expect_eq(fx_stats(sc.f.s).guarded_pages, 1);
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    expect_eq(fx_stats(sc.f.s).allocations_moved, 3);
    expect_page_packed(&sc, 1);
    expect_true(fx_bind(sc.f.s, ask).buffer == sc.before[PER_PAGE].buffer);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    relo_graph_destroy(g);
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_TEST(pinned_page_is_never_slid)
{
    scene sc;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    require_true(scene_open(&sc, fx_host(), &dd));
    relo_binding pinned;
    require_ok(relo_pin(sc.f.s, sc.h[1], &pinned));
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    expect_page_packed(&sc, 1);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_unpin(sc.f.dev, sc.h[1]));
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_MAIN()
