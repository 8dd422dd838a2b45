/*
 * test_merge_tails.c — merging the tails that rounding to the granule
 * strands (src/pass/compaction.c, relo__compact_merge_tails; docs/placement.md):
 * when the device refuses a page and each page of the pool is too full for
 * anything to move into, the allocations of several pages move together
 * into one new page of their combined size, and the pages they leave give
 * back more than it took.
 *
 * Setup shared by the cases: a dense device on the host backend charging
 * 2 MiB granules, 66 MiB (33 granules). Allocations of 11, 13 and 15 MiB
 * take pages of their own of 12, 14 and 16 MiB (42 MiB; each strands
 * 1 MiB at its end), which leaves 24 MiB to lend. A request of 25 MiB
 * needs a page of 26 MiB: no hole takes anything, no page packs further;
 * moving the 11 and 13 MiB allocations into one page of 24 MiB gives back
 * 26 MiB, and then the 26 MiB page fits.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"

#define GRANULE (2 * MiB)
#define CAPACITY (33 * GRANULE)
#define ASK (25 * MiB)
#define COUNT 3

static const uint64_t sizes[COUNT] = {11 * MiB, 13 * MiB, 15 * MiB};

typedef struct scene {
    fx f;
    relo_handle h[COUNT];
    relo_binding before[COUNT];
} scene;

/* False when the layout is not the one the cases rely on. */
static bool scene_open(scene *sc, relo_relocation relocation)
{
    memset(sc, 0, sizeof *sc);
    relo_host_desc hd = fx_host();
    hd.capacity = CAPACITY;
    hd.granule = GRANULE;
    relo_device_desc dd = fx_desc(RELO_POLICY_DENSE);
    dd.capacity = CAPACITY;
    dd.relocation = relocation;
    if (fx_open(&sc->f, &hd, &dd) != RELO_OK) return false;
    for (int i = 0; i < COUNT; i++) {
        sc->h[i] = fx_reserve(sc->f.s, sizes[i]);
        if (!sc->h[i].id) return false;
        if (fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sizes[i]) != RELO_OK) return false;
        sc->before[i] = fx_bind(sc->f.s, sc->h[i]);
    }
    relo_stats st = fx_stats(sc->f.s);
    return st.pages == COUNT && st.bytes_reserved == 42 * MiB;
}

static bool scene_bytes_intact(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (!fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sizes[i])) return false;
    return true;
}

static void scene_close(scene *sc) { fx_close_releasing(&sc->f, sc->h, COUNT); }

CHECK_TEST(refused_page_comes_from_merged_tails_and_keeps_bytes)
{
    scene sc;
    require_true(scene_open(&sc, RELO_RELOCATION_AUTO));
    relo_handle ask = {0};
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    relo_stats st = fx_stats(sc.f.s);
    expect_eq(st.allocations_moved, 2);
    expect_eq(st.bytes_moved, 24 * MiB);
    expect_eq(st.relocations_abandoned, 0);
    expect_eq(st.bytes_leaked, 0);
    /* The merged page (24 MiB), the 15 MiB one's (16) and the request's (26). */
    expect_eq(st.pages, 3);
    expect_eq(st.bytes_reserved, CAPACITY);
    relo_binding a = fx_bind(sc.f.s, sc.h[0]), b = fx_bind(sc.f.s, sc.h[1]);
    expect_true(!fx_same_place(sc.before[0], a));
    expect_true(!fx_same_place(sc.before[1], b));
    expect_true(a.buffer == b.buffer);
    expect_true(fx_same_place(sc.before[2], fx_bind(sc.f.s, sc.h[2])));
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_TEST(without_relocation_the_same_request_is_refused)
{
    scene sc;
    require_true(scene_open(&sc, RELO_RELOCATION_OFF));
    relo_handle ask = {0};
    expect_status(relo_reserve(sc.f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    expect_true(scene_bytes_intact(&sc));
    scene_close(&sc);
}

CHECK_TEST(a_guarded_page_is_not_merged)
{
    /* A graph uses the 11 MiB allocation's page. Merging the other two
     * would need a page of 28 MiB, more than the device can lend: the
     * request is refused and nothing moves. */
    scene sc;
    require_true(scene_open(&sc, RELO_RELOCATION_AUTO));
    relo_graph *g = NULL;
    require_ok(relo_capture_prepare(sc.f.s));
    require_ok(relo_capture_begin(sc.f.s));
    (void)fx_bind(sc.f.s, sc.h[0]);
    require_ok(relo_capture_end(sc.f.s, &g));
    require_true(g != NULL);
    expect_eq(fx_stats(sc.f.s).guarded_pages, 1);
    relo_handle ask = {0};
    expect_status(relo_reserve(sc.f.s, ASK, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(fx_stats(sc.f.s).allocations_moved, 0);
    for (int i = 0; i < COUNT; i++) expect_true(fx_same_place(sc.before[i], fx_bind(sc.f.s, sc.h[i])));
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_device_check(sc.f.dev));
    /* Once the graph goes, the merge is there to make. */
    relo_graph_destroy(g);
    expect_ok(relo_reserve(sc.f.s, ASK, &ask));
    expect_eq(fx_stats(sc.f.s).allocations_moved, 2);
    expect_true(scene_bytes_intact(&sc));
    expect_ok(relo_release(sc.f.dev, ask));
    scene_close(&sc);
}

CHECK_MAIN()
