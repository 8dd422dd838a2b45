/*
 * test_pool.c — one pool (src/pool/pool.h) alone, over a home built by
 * hand on the mock backend (tests/include/mock_home.h): no device, no
 * stream. A sliced pool carves pages from the lowest address, counts every
 * byte, merges free neighbours, takes a guarded or fenced page's room out
 * of service, packs a fenced page, gives empty pages back, and leaves
 * everything as it was when the backend or host memory refuses; an
 * exclusive pool reuses pages whole under the suspicion rule, a persistent
 * pool reuses buffers of exactly the padded size, and a dedicated pool
 * queues each freed buffer. After every change the pool's own checker
 * (relo__pool_check, which runs the occupancy index's too) and the home's
 * tallies are checked.
 */
#include "check.h"
#include "base/hostmem.h"
#include "mock_home.h"

#define KiB RELO_KiB
#define MiB RELO_MiB
#define ALIGN 256
#define PAGE (64 * KiB)

/* A home and one pool of kind over it: sliced pools of PAGE bytes, best
 * fit; the other kinds as their init makes them. */
typedef struct bench {
    mock_home h;
    relo_pool pool;
} bench;

static bool bench_open(bench *b, relo_pool_kind kind)
{
    if (!mock_home_open(&b->h, ALIGN, MiB, 0)) return false;
    if (kind == RELO_POOL_EXCLUSIVE) {
        relo__exclusive_init(&b->pool, &b->h.home, "exclusive", 4 * KiB, true);
        return true;
    }
    relo__pool_init(&b->pool, kind, relo__pool_kind_name(kind), &b->h.home,
                    kind == RELO_POOL_SLICED ? PAGE : 0);
    b->pool.best_fit = true;
    return true;
}

/* Checks the pool holds pages pages and passes its checks, then
 * destroys it and the home (which must hold nothing then). */
static void bench_close(bench *b, uint32_t pages)
{
    expect_true(mock_home_check1(&b->h, &b->pool));
    expect_eq(b->pool.page_count, pages);
    relo__pool_destroy(&b->pool);
    expect_true(mock_home_check1(&b->h, &b->pool));
    mock_home_close(&b->h);
}

/* Reserves size bytes LIVE for a fresh slot; NULL (and a recorded
 * failure) when refused. */
static relo_slice *take(bench *b, uint64_t size, bool allow_new_page)
{
    relo_slice *s = NULL;
    uint32_t slot = mock_home_slot(&b->h);
    relo_status st = RELO_ERR_INVALID_ARGUMENT;
    switch (b->pool.kind) {
    case RELO_POOL_SLICED:
        st = relo__sliced_reserve(&b->pool, size, slot, RELO_SLICE_LIVE, allow_new_page, &s);
        break;
    case RELO_POOL_EXCLUSIVE: st = relo__exclusive_reserve(&b->pool, size, slot, allow_new_page, &s); break;
    case RELO_POOL_PERSISTENT: st = relo__persistent_reserve(&b->pool, size, slot, allow_new_page, &s); break;
    case RELO_POOL_DEDICATED: st = relo__dedicated_reserve(&b->pool, size, slot, allow_new_page, &s); break;
    case RELO_POOL_KIND_COUNT: break;
    }
    expect_ok(st);
    return st == RELO_OK ? s : NULL;
}

/* The pool and its home pass their checks. */
#define require_sound(b) require_true(mock_home_check1(&(b)->h, &(b)->pool))

/* ... and the pool holds n pages. */
#define require_pages(b, n)                 \
    do {                                    \
        require_sound(b);                   \
        expect_eq((b)->pool.page_count, n); \
    } while (0)

/* Whether a reservation of size bytes lands on page (false, and a
 * recorded failure, when it is refused). */
static bool lands_on(bench *b, uint64_t size, bool allow_new_page, const relo_page *page)
{
    relo_slice *s = take(b, size, allow_new_page);
    return s && s->page == page;
}

/* Opens b with a sliced pool and reserves n allocations of size bytes
 * into s. False when either fails. */
static bool bench_fill(bench *b, relo_slice **s, int n, uint64_t size)
{
    if (!bench_open(b, RELO_POOL_SLICED)) return false;
    for (int i = 0; i < n; i++)
        if (!(s[i] = take(b, size, true))) return false;
    return true;
}

/* Opens b with a pool of kind and reserves size bytes in it (a new page
 * allowed): the page it took (the allocation is its first slice), or NULL
 * when either fails. */
static relo_page *bench_first(bench *b, relo_pool_kind kind, uint64_t size)
{
    relo_slice *s = bench_open(b, kind) ? take(b, size, true) : NULL;
    return s ? s->page : NULL;
}

static uint32_t slices_of(const relo_page *p)
{
    uint32_t n = 0;
    for (const relo_slice *s = p->first; s; s = s->next) n++;
    return n;
}

CHECK_TEST(sliced_reservations_carve_from_the_lowest_address_and_count_every_byte)
{
    bench b;
    relo_page *p = bench_first(&b, RELO_POOL_SLICED, 1000);
    require_true(p != NULL);
    relo_slice *a = p->first;
    require_sound(&b);
    expect_eq(a->offset, 0);
    expect_eq(a->length, 1024);
    expect_eq(b.pool.bytes_in_use, 1000);
    expect_eq(b.pool.bytes_padding, 24);
    expect_eq(b.h.held[1].bytes_reserved, PAGE);
    expect_eq(b.h.held[1].counters.backend_allocs, 1);
    relo_slice *c = take(&b, 3000, true);
    require_true(c != NULL);
    require_sound(&b);
    expect_true(c->page == a->page);
    expect_eq(c->offset, 1024);
    expect_eq(b.pool.allocations, 2);
    /* 60 KiB free: 61 KiB needs a page, which this reservation may not
     * add; more than a page is too big. Neither changes anything. */
    relo_slice *none = NULL;
    expect_status(relo__sliced_reserve(&b.pool, 61 * KiB, 0, RELO_SLICE_LIVE, false, &none),
                  RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    expect_status(relo__sliced_reserve(&b.pool, PAGE + 1, 0, RELO_SLICE_LIVE, true, &none),
                  RELO_ERR_BUFFER_TOO_BIG);
    require_pages(&b, 1);
    relo_slice *d = take(&b, 61 * KiB, true);
    require_true(d != NULL);
    require_sound(&b);
    expect_true(d->page != a->page);
    expect_eq(b.h.held[0].bytes_reserved, 2 * PAGE);
    expect_eq(b.h.mock->calls[MOCK_ALLOC], 2);
    bench_close(&b, 2);
}

CHECK_TEST(freed_slices_merge_with_free_neighbours_and_an_empty_page_counts_as_empty)
{
    bench b;
    relo_slice *s[3];
    require_true(bench_fill(&b, s, 3, 4 * KiB));
    relo_slice *x = s[0], *y = s[1], *z = s[2];
    relo_page *p = x->page;
    require_sound(&b);
    expect_eq(slices_of(p), 4);
    expect_eq(b.pool.bytes_empty, 0);
    relo__pool_slice_free(&b.pool, y);
    require_sound(&b);
    expect_eq(slices_of(p), 4); /* x [y free] z [free] */
    relo__pool_slice_free(&b.pool, x);
    require_sound(&b);
    expect_eq(slices_of(p), 3); /* [x y free] z [free] */
    expect_eq(p->first->length, 8 * KiB);
    relo__pool_slice_free(&b.pool, z);
    require_sound(&b);
    expect_eq(slices_of(p), 1);
    expect_eq(p->first->length, PAGE);
    expect_eq(b.pool.bytes_empty, PAGE);
    expect_eq(b.h.held[1].bytes_empty, PAGE);
    bench_close(&b, 1);
}

CHECK_TEST(a_refused_page_changes_nothing)
{
    bench b;
    require_true(bench_open(&b, RELO_POOL_SLICED));
    relo_slice *s = NULL;
    /* Host memory refused from the first allocation on: the page's
     * bookkeeping cannot be made, and the backend is not asked. */
    relo__hostmem_fail_at(1, 1);
    relo_status st = relo__sliced_reserve(&b.pool, 1000, 0, RELO_SLICE_LIVE, true, &s);
    relo__hostmem_fail_at(0, 0);
    expect_status(st, RELO_ERR_HOST_MEMORY);
    require_pages(&b, 0);
    expect_eq(b.h.mock->calls[MOCK_ALLOC], 0);
    mock_refuse(b.h.mock, MOCK_ALLOC, 1, false, RELO_ERR_OUT_OF_MEMORY);
    expect_status(relo__sliced_reserve(&b.pool, 1000, 0, RELO_SLICE_LIVE, true, &s), RELO_ERR_OUT_OF_MEMORY);
    require_pages(&b, 0);
    expect_eq(b.h.held[0].counters.backend_allocs, 0);
    expect_eq(b.h.mock->calls[MOCK_ALLOC], 1);
    /* Both refusals over, the same reservation is served. */
    require_true(take(&b, 1000, true) != NULL);
    bench_close(&b, 1);
}

CHECK_TEST(a_guarded_page_serves_nothing_until_its_last_guard_goes)
{
    bench b;
    relo_page *p = bench_first(&b, RELO_POOL_SLICED, 1000);
    require_true(p != NULL);
    /* Two graphs use it. */
    for (int i = 0; i < 2; i++) relo__pool_page_guard(&b.pool, p);
    require_sound(&b);
    expect_eq(b.pool.guarded_pages, 1);
    expect_eq(relo__occupancy_room(&b.pool), 0);
    relo_slice *s = NULL;
    expect_status(relo__sliced_reserve(&b.pool, 1000, 0, RELO_SLICE_LIVE, false, &s),
                  RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    relo__pool_page_unguard(&b.pool, p);
    require_sound(&b);
    expect_eq(b.pool.guarded_pages, 1);
    expect_status(relo__sliced_reserve(&b.pool, 1000, 0, RELO_SLICE_LIVE, false, &s),
                  RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    relo__pool_page_unguard(&b.pool, p);
    require_sound(&b);
    expect_eq(b.pool.guarded_pages, 0);
    expect_eq(relo__occupancy_room(&b.pool), PAGE - 1024);
    expect_true(lands_on(&b, 1000, false, p));
    bench_close(&b, 1);
}

CHECK_TEST(a_fenced_page_packs_its_slices_down_and_its_room_into_one_slice_at_the_end)
{
    bench b;
    relo_slice *s[4];
    require_true(bench_fill(&b, s, 4, 8 * KiB));
    relo_page *p = s[0]->page;
    relo__pool_slice_free(&b.pool, s[0]);
    relo__pool_slice_free(&b.pool, s[2]);
    require_sound(&b);
    relo__pool_page_fence(&b.pool, p);
    require_sound(&b);
    expect_eq(relo__occupancy_room(&b.pool), 0);
    relo__pool_page_pack(&b.pool, p);
    require_sound(&b);
    expect_eq(s[1]->offset, 0);
    expect_eq(s[3]->offset, 8 * KiB);
    expect_eq(slices_of(p), 3);
    expect_eq(s[3]->next->state, RELO_SLICE_FREE);
    expect_eq(s[3]->next->length, PAGE - 16 * KiB);
    relo__pool_page_unfence(&b.pool, p);
    require_sound(&b);
    relo_slice *t = take(&b, PAGE - 16 * KiB, false);
    require_true(t != NULL);
    expect_eq(t->offset, 16 * KiB);
    bench_close(&b, 1);
}

CHECK_TEST(release_empty_gives_back_every_empty_unguarded_page)
{
    bench b;
    relo_slice *s[3];
    require_true(bench_fill(&b, s, 3, 40 * KiB));
    expect_eq(b.pool.page_count, 3);
    relo_page *guarded = s[1]->page;
    for (int i = 0; i < 3; i++) relo__pool_slice_free(&b.pool, s[i]);
    relo__pool_page_guard(&b.pool, guarded);
    require_sound(&b);
    expect_eq(relo__pool_release_empty(&b.pool, NULL), 2);
    require_pages(&b, 1);
    expect_true(b.pool.pages[0] == guarded);
    expect_eq(b.h.mock->calls[MOCK_FREE], 2);
    expect_eq(b.h.held[0].counters.pages_released, 2);
    expect_eq(b.h.held[1].counters.backend_frees, 2);
    relo__pool_page_unguard(&b.pool, guarded);
    expect_eq(relo__pool_release_empty(&b.pool, NULL), 1);
    require_sound(&b);
    expect_eq(b.h.held[0].bytes_reserved, 0);
    expect_eq(b.h.held[0].peak_bytes_reserved, 3 * PAGE);
    bench_close(&b, 0);
}

CHECK_TEST(an_outdated_pool_queues_a_page_once_its_last_allocation_goes)
{
    bench b;
    require_true(bench_open(&b, RELO_POOL_SLICED));
    relo_slice *a = take(&b, 1000, true), *c = take(&b, 1000, true);
    require_true(a && c);
    b.pool.outdated = true;
    relo__pool_slice_free(&b.pool, a);
    require_sound(&b);
    expect_true(b.h.pending == NULL);
    relo__pool_slice_free(&b.pool, c);
    require_sound(&b);
    expect_true(b.h.pending == b.pool.pages[0]);
    expect_eq(mock_home_cleanup(&b.h), 1);
    bench_close(&b, 0);
}

CHECK_TEST(a_range_whose_copy_is_unknown_is_never_handed_out_again)
{
    bench b;
    require_true(bench_open(&b, RELO_POOL_SLICED));
    relo_slice *a = take(&b, PAGE / 2, true), *c = take(&b, PAGE / 2, true);
    require_true(a && c);
    a->leak_on_free = true;
    relo__pool_slice_free(&b.pool, a);
    require_sound(&b);
    expect_eq(a->state, RELO_SLICE_LEAKED);
    expect_eq(b.h.held[0].counters.bytes_leaked, PAGE / 2);
    relo__pool_slice_free(&b.pool, c);
    require_sound(&b);
    expect_eq(a->page->occupied, 1);
    /* Of the page's two halves only the second serves again; the next
     * request of a half takes a new page. */
    relo_slice *d = take(&b, PAGE / 2, true), *e = take(&b, PAGE / 2, true);
    require_true(d && e);
    require_sound(&b);
    expect_true(d->page == a->page);
    expect_eq(d->offset, PAGE / 2);
    expect_true(e->page != a->page);
    /* A target whose copy is unknown leaks the same way. */
    relo_slice *t = NULL;
    expect_ok(relo__sliced_reserve(&b.pool, 1000, 0, RELO_SLICE_TARGET, false, &t));
    require_true(t != NULL);
    relo__pool_slice_leak(&b.pool, t);
    require_sound(&b);
    expect_eq(b.h.held[1].counters.bytes_leaked, PAGE / 2 + 1024);
    bench_close(&b, 2);
}

CHECK_TEST(a_target_counts_as_an_allocation_once_promoted)
{
    bench b;
    require_true(bench_open(&b, RELO_POOL_SLICED));
    relo_slice *t = NULL;
    expect_ok(relo__sliced_reserve(&b.pool, 1000, 0, RELO_SLICE_TARGET, true, &t));
    require_true(t != NULL);
    require_sound(&b);
    expect_eq(b.pool.allocations, 0);
    expect_eq(t->page->occupied, 1);
    expect_eq(t->page->live, 0);
    relo__pool_slice_promote(&b.pool, t, 1000, mock_home_slot(&b.h));
    require_sound(&b);
    expect_eq(b.pool.allocations, 1);
    expect_eq(b.pool.bytes_in_use, 1000);
    expect_eq(t->page->live_size, 1000);
    bench_close(&b, 1);
}

CHECK_TEST(an_exclusive_pool_reuses_a_page_whole_and_gives_back_one_unused_through_checks)
{
    bench b;
    relo_page *p = bench_first(&b, RELO_POOL_EXCLUSIVE, 1000);
    require_true(p != NULL);
    expect_eq(p->size, 2 * KiB); /* the running average: half the largest size */
    require_sound(&b);
    relo__pool_slice_free(&b.pool, p->first);
    require_sound(&b);
    expect_true(b.pool.free_pages == p);
    expect_true(lands_on(&b, 900, false, p));
    expect_eq(b.h.mock->calls[MOCK_ALLOC], 1);
    relo__pool_slice_free(&b.pool, p->first);
    require_sound(&b);
    /* New at 4, reused once: 3; each check adds one, and 5 gives it back. */
    expect_eq(relo__exclusive_check(&b.pool), 0);
    require_sound(&b);
    expect_eq(relo__exclusive_check(&b.pool), 1);
    bench_close(&b, 0);
}

CHECK_TEST(a_persistent_pool_reuses_only_a_buffer_of_exactly_the_padded_size)
{
    bench b;
    relo_page *p = bench_first(&b, RELO_POOL_PERSISTENT, 1000);
    require_true(p != NULL);
    relo__pool_slice_free(&b.pool, p->first);
    require_sound(&b);
    expect_eq(p->size, 1024);
    expect_true(!lands_on(&b, 2000, true, p));
    require_sound(&b);
    expect_true(lands_on(&b, 800, true, p));
    expect_eq(b.h.mock->calls[MOCK_ALLOC], 2);
    bench_close(&b, 2);
}

CHECK_TEST(a_dedicated_pool_queues_each_freed_buffer_for_the_next_cleanup)
{
    bench b;
    relo_page *p = bench_first(&b, RELO_POOL_DEDICATED, 5000);
    require_true(p != NULL);
    require_sound(&b);
    expect_eq(p->size, 5120);
    relo_slice *s = NULL;
    expect_status(relo__dedicated_reserve(&b.pool, 5000, 0, false, &s), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    relo__pool_slice_free(&b.pool, p->first);
    require_sound(&b);
    expect_true(b.h.pending == b.pool.pages[0]);
    expect_eq(mock_home_cleanup(&b.h), 1);
    require_pages(&b, 0);
    expect_eq(b.h.mock->calls[MOCK_FREE], 1);
    bench_close(&b, 0);
}

CHECK_MAIN()
