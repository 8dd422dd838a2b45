/*
 * test_occupancy_index.c — the occupancy index of a sliced pool
 * (src/pool/occupancy.h) alone, over pages made by hand: no backend, no
 * slices, only the counters the index reads. A touched page is settled
 * before anything reads the index, or once too many others were touched
 * after it; the room is the free bytes of the pages that serve; pages are
 * listed by their live bytes and sparseness, and the class search finds
 * them upwards; the empty pages listed for release are the unheld ones,
 * highest position first, and reading them settles only the pages whose
 * emptiness changed; a page taken out leaves the others touched. After
 * every change the index's own checker (relo__occupancy_check) runs.
 */
#include "check.h"
#include "pool/occupancy.h"
#include "pool/pool.h"

#define KiB RELO_KiB
#define PAGE (64 * KiB)
#define MAX_PAGES 48

/* A sliced pool record holding hand-made pages; only the index and the
 * page array are used. */
typedef struct bench {
    relo_pool pool;
    relo_page pages[MAX_PAGES];
    relo_page *list[MAX_PAGES];
} bench;

static bool bench_open(bench *b, uint32_t n)
{
    memset(b, 0, sizeof *b);
    b->pool.kind = RELO_POOL_SLICED;
    b->pool.pages = b->list;
    for (uint32_t i = 0; i < n; i++) {
        b->pages[i].pool = &b->pool;
        b->pages[i].index = i;
        b->pages[i].size = PAGE;
        b->list[i] = &b->pages[i];
    }
    b->pool.page_count = n;
    if (relo__occupancy_init(&b->pool.occupancy) != RELO_OK) return false;
    /* As a pool does with each new page. */
    for (uint32_t i = 0; i < n; i++) relo__occupancy_touch(&b->pool.occupancy, &b->pages[i]);
    return true;
}

/* Takes every page out, then frees the lists. */
static void bench_close(bench *b)
{
    for (uint32_t i = 0; i < b->pool.page_count; i++) relo__occupancy_remove(&b->pool, b->list[i]);
    expect_eq(b->pool.occupancy.room, 0);
    relo__occupancy_destroy(&b->pool.occupancy);
}

static bool index_ok(const bench *b)
{
    const char *why = NULL;
    if (relo__occupancy_check(&b->pool, &why)) return true;
    fprintf(stderr, "  occupancy check: %s\n", why);
    return false;
}

/* Page i now holds `slices` occupied slices of occupied bytes, live of
 * them live; the index is told. */
static void fill(bench *b, uint32_t i, uint32_t slices, uint64_t occupied, uint64_t live)
{
    relo_page *p = &b->pages[i];
    p->occupied = slices;
    p->live = slices;
    p->occupied_bytes = occupied;
    p->live_size = live;
    relo__occupancy_touch(&b->pool.occupancy, p);
}

#define require_index(b) require_true(index_ok(b))

/* The list a settled page is in: 2 + 2 * class + !sparse, or the empty one. */
static uint32_t list_code(const relo_page *p)
{
    if (p->occupied == 0) return RELO_OCC_EMPTY;
    return 2u + 2u * relo__occupancy_class(p->live_size) +
           (relo__occupancy_sparse(p->size, p->occupied_bytes) ? 0u : 1u);
}

CHECK_TEST(room_is_the_free_bytes_of_the_pages_that_serve_once_settled)
{
    bench b;
    require_true(bench_open(&b, 3));
    require_index(&b);
    fill(&b, 0, 1, 16 * KiB, 16 * KiB);
    require_index(&b);
    fill(&b, 1, 2, 48 * KiB, 40 * KiB);
    require_index(&b);
    /* Touched only (page 2 new and empty): nothing counted until a read
     * settles them. */
    expect_eq(b.pool.occupancy.room, 0);
    expect_eq(b.pool.occupancy.dirty_count, 3);
    expect_eq(relo__occupancy_room(&b.pool), 48 * KiB + 16 * KiB + PAGE);
    require_index(&b);
    expect_eq(b.pool.occupancy.dirty_count, 0);
    /* A guard and a fence take their pages' room out. */
    b.pages[0].guards = 1;
    relo__occupancy_touch(&b.pool.occupancy, &b.pages[0]);
    require_index(&b);
    b.pages[2].fenced = true;
    relo__occupancy_touch(&b.pool.occupancy, &b.pages[2]);
    require_index(&b);
    expect_eq(relo__occupancy_room(&b.pool), 16 * KiB);
    require_index(&b);
    b.pages[0].guards = 0;
    b.pages[2].fenced = false;
    relo__occupancy_touch(&b.pool.occupancy, &b.pages[0]);
    relo__occupancy_touch(&b.pool.occupancy, &b.pages[2]);
    require_index(&b);
    expect_eq(relo__occupancy_room(&b.pool), 48 * KiB + 16 * KiB + PAGE);
    require_index(&b);
    bench_close(&b);
}

CHECK_TEST(pages_are_listed_by_live_bytes_and_sparseness_and_found_upwards)
{
    bench b;
    require_true(bench_open(&b, 4));
    fill(&b, 0, 4, 60 * KiB, 60 * KiB); /* dense, most live */
    fill(&b, 1, 1, 8 * KiB, 8 * KiB);   /* sparse, fewest live */
    fill(&b, 2, 2, 50 * KiB, 20 * KiB); /* dense: less than a third free */
    fill(&b, 3, 0, 0, 0);               /* empty */
    require_index(&b);
    (void)relo__occupancy_room(&b.pool);
    require_index(&b);
    const relo_occupancy *occ = &b.pool.occupancy;
    for (uint32_t i = 0; i < 4; i++) expect_eq(b.pages[i].occ_list, list_code(&b.pages[i]));
    expect_true(occ->empty == &b.pages[3]);
    uint32_t c1 = relo__occupancy_class(8 * KiB), c2 = relo__occupancy_class(20 * KiB),
             c0 = relo__occupancy_class(60 * KiB);
    require_true(c1 < c2 && c2 < c0);
    /* Every page, fewest live bytes first; the sparse ones alone. */
    expect_eq(relo__occupancy_next_class(occ, 0, false), c1);
    expect_eq(relo__occupancy_next_class(occ, c1 + 1, false), c2);
    expect_eq(relo__occupancy_next_class(occ, c2 + 1, false), c0);
    expect_eq(relo__occupancy_next_class(occ, c0 + 1, false), RELO_OCC_CLASSES);
    expect_eq(relo__occupancy_next_class(occ, 0, true), c1);
    expect_eq(relo__occupancy_next_class(occ, c1 + 1, true), RELO_OCC_CLASSES);
    expect_true(relo__occupancy_list(occ, c1, true) == &b.pages[1]);
    expect_true(relo__occupancy_list(occ, c2, false) == &b.pages[2]);
    expect_true(relo__occupancy_list(occ, c2, true) == NULL);
    /* Page 1 fills up: it moves to its new class, dense. */
    fill(&b, 1, 3, 62 * KiB, 62 * KiB);
    require_index(&b);
    (void)relo__occupancy_room(&b.pool);
    require_index(&b);
    expect_eq(relo__occupancy_next_class(occ, 0, true), RELO_OCC_CLASSES);
    expect_eq(relo__occupancy_next_class(occ, 0, false), c2);
    bench_close(&b);
}

CHECK_TEST(a_page_touched_before_too_many_others_is_settled)
{
    bench b;
    require_true(bench_open(&b, 40));
    require_index(&b);
    /* Forty new pages: the first eight were settled to make way. */
    expect_eq(b.pool.occupancy.dirty_count, RELO_OCC_TOUCHED_MAX);
    for (uint32_t i = 0; i < 40; i++) expect_eq(b.pages[i].occ_dirty, i >= 40 - RELO_OCC_TOUCHED_MAX);
    for (uint32_t i = 0; i < 8; i++) expect_eq(b.pages[i].occ_list, RELO_OCC_EMPTY);
    /* Each of them touched again settles the oldest page still waiting. */
    for (uint32_t i = 0; i < 8; i++) {
        fill(&b, i, 1, KiB * (i + 1), KiB * (i + 1));
        require_index(&b);
        expect_eq(b.pool.occupancy.dirty_count, RELO_OCC_TOUCHED_MAX);
        expect_true(!b.pages[8 + i].occ_dirty);
        expect_true(b.pool.occupancy.dirty_tail == &b.pages[i]);
    }
    /* Touching a touched page again costs nothing and keeps its place. */
    relo_page *oldest = b.pool.occupancy.dirty;
    expect_true(oldest == &b.pages[16]);
    fill(&b, 16, 1, 4 * KiB, 4 * KiB);
    require_index(&b);
    expect_true(b.pool.occupancy.dirty == oldest);
    bench_close(&b);
}

CHECK_TEST(empty_pages_for_release_are_the_unheld_ones_highest_position_first)
{
    bench b;
    require_true(bench_open(&b, 24));
    /* Page 3 holds something; 5 is guarded, 7 queued, 9 fenced, 11 in a
     * transfer: the other 19 empty pages go, more than a list holds
     * inline. */
    fill(&b, 3, 1, 4 * KiB, 4 * KiB);
    b.pages[5].guards = 1;
    b.pages[7].pending = true;
    b.pages[9].fenced = true;
    b.pages[11].transfers = 1;
    for (uint32_t i = 0; i < 24; i++) {
        relo__occupancy_touch(&b.pool.occupancy, &b.pages[i]);
        require_index(&b);
    }
    (void)relo__occupancy_room(&b.pool);
    require_index(&b);
    /* Page 3 empties and page 4 fills: both touched; page 20 touched with
     * no change. */
    fill(&b, 3, 0, 0, 0);
    fill(&b, 4, 1, 4 * KiB, 4 * KiB);
    relo__occupancy_touch(&b.pool.occupancy, &b.pages[20]);
    require_index(&b);
    relo_page_list go;
    require_true(relo__occupancy_empty_pages(&b.pool, &go));
    require_index(&b);
    expect_eq(go.count, 19);
    /* Only the pages whose emptiness changed were settled. */
    expect_true(!b.pages[3].occ_dirty && !b.pages[4].occ_dirty);
    expect_true(b.pages[20].occ_dirty);
    uint32_t last = UINT32_MAX, n = 0;
    for (relo_page *p; (p = relo__page_list_pop(&go)); n++) {
        expect_lt(p->index, last);
        last = p->index;
        expect_true(p->index != 4 && p->index != 5 && p->index != 7 && p->index != 9 && p->index != 11);
    }
    expect_eq(n, 19);
    relo__page_list_free(&go);
    b.pages[5].guards = 0;
    b.pages[7].pending = false;
    b.pages[9].fenced = false;
    b.pages[11].transfers = 0;
    bench_close(&b);
}

CHECK_TEST(a_page_taken_out_leaves_the_others_touched)
{
    bench b;
    require_true(bench_open(&b, 3));
    for (uint32_t i = 0; i < 3; i++) fill(&b, i, 1, 16 * KiB, 16 * KiB);
    (void)relo__occupancy_room(&b.pool);
    for (uint32_t i = 0; i < 3; i++) fill(&b, i, 1, 32 * KiB, 32 * KiB);
    require_index(&b);
    /* Page 1 leaves its pool: the last page takes its position. */
    relo__occupancy_remove(&b.pool, &b.pages[1]);
    b.list[1] = &b.pages[2];
    b.pages[2].index = 1;
    b.pool.page_count = 2;
    require_index(&b);
    expect_true(b.pages[0].occ_dirty && b.pages[2].occ_dirty);
    expect_eq(b.pages[1].occ_list, RELO_OCC_NONE);
    expect_eq(b.pool.occupancy.dirty_count, 2);
    expect_eq(relo__occupancy_room(&b.pool), 2 * 32 * KiB);
    require_index(&b);
    bench_close(&b);
}

CHECK_TEST(classes_grow_with_live_bytes)
{
    uint32_t prev = 0;
    for (uint64_t live = 0; live < (UINT64_C(1) << 40); live = live < 64 ? live + 1 : live + live / 7) {
        uint32_t c = relo__occupancy_class(live);
        expect_ge(c, prev);
        expect_lt(c, RELO_OCC_CLASSES);
        prev = c;
    }
    expect_lt(relo__occupancy_class(UINT64_MAX), RELO_OCC_CLASSES);
    /* Sparse: free room at least half of what the page holds. */
    expect_true(relo__occupancy_sparse(PAGE, 40 * KiB));
    expect_true(!relo__occupancy_sparse(PAGE, 44 * KiB));
}

CHECK_TEST(the_checker_finds_an_untouched_page_in_the_wrong_list)
{
    bench b;
    require_true(bench_open(&b, 2));
    fill(&b, 0, 1, 16 * KiB, 16 * KiB);
    fill(&b, 1, 1, 16 * KiB, 16 * KiB);
    (void)relo__occupancy_room(&b.pool);
    require_index(&b);
    /* A change the index is not told of. */
    b.pages[0].live_size = 60 * KiB;
    b.pages[0].occupied_bytes = 60 * KiB;
    const char *why = NULL;
    expect_true(!relo__occupancy_check(&b.pool, &why));
    relo__occupancy_touch(&b.pool.occupancy, &b.pages[0]);
    require_index(&b);
    bench_close(&b);
}

CHECK_MAIN()
