/*
 * test_occupancy.c — the occupancy index of sliced pools (src/pool/occupancy.h):
 * a reclaim looks at the pages it may empty, not at every page held; the
 * page it empties first is the one a walk over every page would choose
 * (fewest live bytes, lowest order among equals, at most 2/3 full); a
 * trim gives back the empty pages a walk down every page would, in its
 * order; and the index follows every change the pools make, as
 * relo_device_check verifies.
 *
 * Devices of the packed placement on the simulated backend, so thousands of pages cost no
 * bytes.
 */
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"
#include "pass/relocation.h"
#include "core/stream.h"
#include "testing/testing.h"

typedef struct dev {
    relo_device *d;
    relo_stream *s;
} dev;

static bool dev_open(dev *x, uint64_t pass_max_bytes)
{
    relo_host_desc hd;
    memset(&hd, 0, sizeof hd);
    hd.alignment = 256;
    relo_backend *be = NULL;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.pass_max_bytes = pass_max_bytes;
    return relo_backend_sim_create(&hd, &be) == RELO_OK && relo_device_create(&dd, be, &x->d) == RELO_OK &&
           relo_stream_create(x->d, NULL, &x->s) == RELO_OK;
}

static void dev_close(dev *x, relo_handle *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].id) expect_ok(relo_release(x->d, h[i]));
    expect_ok(relo_stream_destroy(x->s));
    expect_ok(relo_device_destroy(x->d));
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* 20,000 allocations of 64 KiB: hundreds of fine-pool pages, full. */
enum { FULL_N = 20000 };

/* Fills the fine pool with FULL_N allocations of 64 KiB, then releases
 * every step-th of the first count. */
static void fill_then_release(dev *x, relo_handle *h, size_t count, size_t step)
{
    for (size_t i = 0; i < FULL_N; i++) require_ok(relo_reserve(x->s, 64 * KiB, &h[i]));
    expect_gt(x->s->layout.packed.pools[0].page_count, 300);
    for (size_t i = 0; i < count; i += step) {
        expect_ok(relo_release(x->d, h[i]));
        h[i].id = 0;
    }
}

/* The device's stats and the pages taken from the occupancy index around
 * one call: planning's (plan) and the empty lists' (empty). */
typedef struct visits {
    relo_stats before, after;
    uint64_t plan0, empty0, plan, empty;
} visits;

static void visits_begin(dev *x, visits *v)
{
    expect_ok(relo_device_stats(x->d, &v->before));
    relo__testing_occupancy_visits(x->s, &v->plan0, &v->empty0);
}

static void visits_end(dev *x, visits *v)
{
    uint64_t plan1, empty1;
    relo__testing_occupancy_visits(x->s, &plan1, &empty1);
    expect_ok(relo_device_stats(x->d, &v->after));
    v->plan = plan1 - v->plan0;
    v->empty = empty1 - v->empty0;
}

/* 20,000 allocations of 64 KiB fill hundreds of fine-pool pages; every
 * other one of the first 256 goes, which leaves a few pages half full. A
 * reclaim empties them: planning takes a few dozen pages from the index
 * (the sparse ones), and so does the release of the pages it emptied (the
 * empty ones), never the hundreds of full ones. A planner or a release
 * that walked every page would take none from the index (0). */
CHECK_TEST(reclaim_looks_at_sparse_pages_only)
{
    static relo_handle h[FULL_N];
    dev x;
    require_true(dev_open(&x, 0));
    fill_then_release(&x, h, 256, 2);
    visits v;
    visits_begin(&x, &v);
    expect_ok(relo_reclaim(x.s));
    visits_end(&x, &v);
    expect_gt(v.after.allocations_moved, v.before.allocations_moved);
    expect_gt(v.after.pages_released, v.before.pages_released);
    expect_gt(v.plan, 0);
    expect_le(v.plan, 64);
    expect_gt(v.empty, 0);
    expect_le(v.empty, 64);
    expect_ok(relo_device_check(x.d));
    dev_close(&x, h, FULL_N);
}

/* relo_trim takes the empty pages it gives back from the pools' empty
 * lists, one visit each, among hundreds of full pages; a trim that walked
 * every page would take none from the index (0). */
CHECK_TEST(trim_takes_empty_pages_from_the_index)
{
    static relo_handle h[FULL_N];
    dev x;
    require_true(dev_open(&x, 0));
    fill_then_release(&x, h, 96, 1); /* the first pages, whole */
    visits v;
    visits_begin(&x, &v);
    uint64_t released = 0;
    expect_ok(relo_trim(x.d, 0, &released));
    visits_end(&x, &v);
    uint64_t pages = v.after.pages_released - v.before.pages_released;
    expect_gt(pages, 0);
    expect_eq(released, v.before.bytes_reserved - v.after.bytes_reserved);
    expect_eq(v.empty, pages); /* one visit per page given back, no more */
    expect_eq(v.plan, 0);
    expect_eq(v.after.allocations_moved, v.before.allocations_moved); /* a trim moves nothing */
    expect_ok(relo_device_check(x.d));
    dev_close(&x, h, FULL_N);
}

/* The fine pool's page that holds allocation h. */
static relo_page *page_of(dev *x, relo_handle h)
{
    relo_binding b = {0};
    if (relo_resolve(x->s, h, &b) != RELO_OK) return NULL;
    relo_pool *pool = &x->s->layout.packed.pools[0];
    for (uint32_t i = 0; i < pool->page_count; i++)
        if (pool->pages[i]->buffer == b.buffer) return pool->pages[i];
    return NULL;
}

/* Empties `empties` pages of the fine pool (every third from the start),
 * then trims all but `stay` of them away: the pages given back, and where
 * the others end up, must be those of a walk down every page (highest
 * position first, each page given back replaced by the last). */
static void trim_order_case(uint32_t empties, uint32_t stay)
{
    static relo_handle h[FULL_N];
    static relo_page *want[4096];
    dev x;
    require_true(dev_open(&x, 0));
    for (size_t i = 0; i < FULL_N; i++) require_ok(relo_reserve(x.s, 64 * KiB, &h[i]));
    relo_pool *pool = &x.s->layout.packed.pools[0];
    require_true(pool->page_count > 3 * empties && pool->page_count <= 4096);
    for (size_t i = 0; i < FULL_N; i++) {
        relo_page *p = page_of(&x, h[i]);
        require_true(p != NULL);
        if (p->index % 3 == 0 && p->index / 3 < empties) {
            expect_ok(relo_release(x.d, h[i]));
            h[i].id = 0;
        }
    }
    /* The walk, on a copy of the page array. */
    uint32_t n = pool->page_count, left = empties - stay;
    uint64_t freed = 0;
    for (uint32_t i = 0; i < n; i++) want[i] = pool->pages[i];
    for (uint32_t i = n; i-- > 0 && left > 0;) {
        if (want[i]->occupied) continue;
        freed += want[i]->size;
        want[i] = want[--n];
        left--;
    }
    /* Keep what the device holds past live, less what the walk gives back. */
    uint64_t excess = x.d->held.bytes_reserved - relo__trim_live(x.d);
    uint64_t released = 0;
    expect_ok(relo_trim(x.d, excess - freed, &released));
    expect_eq(released, freed);
    bool same = pool->page_count == n;
    for (uint32_t i = 0; same && i < n; i++) same = pool->pages[i] == want[i];
    expect_true(same);
    if (!same) printf("  %u empty pages, %u to stay: not the walk's pages\n", empties, stay);
    expect_ok(relo_device_check(x.d));
    dev_close(&x, h, FULL_N);
}

/* A trim that takes some of many empty pages gives back the ones a walk
 * down every page would, highest position first, and leaves the others
 * where that walk would: some of 40, all of 40, and some of 12 (more and
 * fewer than a page list keeps in the caller's frame). */
CHECK_TEST(trim_gives_back_the_highest_positions_first)
{
    trim_order_case(40, 25);
    trim_order_case(40, 0);
    trim_order_case(12, 5);
}

/* Notes the first allocation a pass moves. */
static void first_move(void *user, relo_handle handle, uint64_t size)
{
    (void)size;
    relo_handle *first = user;
    if (!first->id) *first = handle;
}

/* The first move of a reclaim whose passes each move one page (a bound
 * of one byte: the first page of a pass always fits) comes from the page
 * a walk over every page of the fine pool picks: serving, everything on
 * it movable, at most 2/3 full, fewest live bytes, lowest order among
 * equals. Many random layouts, so the pages spread over many classes and
 * share live bytes often. */
CHECK_TEST(first_page_emptied_is_the_walks_choice)
{
    enum { N = 600, LAYOUTS = 40 };
    static relo_handle h[N];
    static void *was[N];
    for (uint64_t seed = 1; seed <= LAYOUTS; seed++) {
        dev x;
        require_true(dev_open(&x, 1));
        uint64_t r = seed * UINT64_C(0x9E3779B97F4A7C15);
        for (size_t i = 0; i < N; i++) {
            uint64_t size = 16 * KiB + next_rand(&r) % (240 * KiB);
            require_ok(relo_reserve(x.s, size, &h[i]));
        }
        /* Each page keeps a random share of what it holds. */
        uint64_t keep = 0;
        for (size_t i = 0; i < N; i++) {
            if (i % 16 == 0) keep = next_rand(&r) % 100;
            if (next_rand(&r) % 100 >= keep) {
                expect_ok(relo_release(x.d, h[i]));
                h[i].id = 0;
            }
        }
        /* The walk's choice. */
        const relo_pool *pool = &x.s->layout.packed.pools[0];
        const relo_page *best = NULL;
        for (uint32_t i = 0; i < pool->page_count; i++) {
            const relo_page *p = pool->pages[i];
            uint64_t live = relo__page_movable_bytes(p);
            if (!relo__page_serves(p) || live == 0 || p->size - p->occupied_bytes < p->occupied_bytes / 2)
                continue;
            if (!best || live < best->live_size || (live == best->live_size && p->order < best->order))
                best = p;
        }
        for (size_t i = 0; i < N; i++) {
            relo_binding b = {0};
            was[i] = NULL;
            if (h[i].id && relo_resolve(x.s, h[i], &b) == RELO_OK) was[i] = b.buffer;
        }
        void *best_buffer = best ? best->buffer : NULL;
        relo_handle first = {0};
        relo__testing_set_move_hook(x.d, first_move, &first);
        expect_ok(relo_reclaim(x.s));
        relo__testing_set_move_hook(x.d, NULL, NULL);
        expect_ok(relo_device_check(x.d));
        if (best) {
            expect_ne(first.id, 0);
            void *first_was = NULL;
            for (size_t i = 0; i < N; i++)
                if (h[i].id && h[i].id == first.id) first_was = was[i];
            expect_true(first_was == best_buffer);
            if (first_was != best_buffer)
                printf("  layout %llu: first move not from the walk's page\n", (unsigned long long)seed);
        }
        dev_close(&x, h, N);
    }
}

/* Reservations, releases and reclaims (whose passes fence and unfence
 * pages, take targets and empty pages) in random order; relo_device_check,
 * which checks each page's occupancy list and the room of the serving
 * pages, runs every few steps. */
CHECK_TEST(index_follows_every_change)
{
    enum { N = 3000, STEPS = 40000 };
    static relo_handle h[N];
    dev x;
    require_true(dev_open(&x, 0));
    uint64_t r = 12345;
    for (uint32_t step = 0; step < STEPS; step++) {
        size_t i = (size_t)(next_rand(&r) % N);
        if (h[i].id) {
            expect_ok(relo_release(x.d, h[i]));
            h[i].id = 0;
        } else {
            /* Mostly fine-pool sizes, sometimes a large one. */
            uint64_t size = next_rand(&r) % 8 ? 4 * KiB + next_rand(&r) % MiB
                                              : 2 * MiB + next_rand(&r) % (16 * MiB);
            require_ok(relo_reserve(x.s, size, &h[i]));
        }
        if (step % 5000 == 4999) expect_ok(relo_reclaim(x.s));
        if (step % 500 == 0) require_ok(relo_device_check(x.d));
    }
    expect_ok(relo_reclaim(x.s));
    expect_ok(relo_device_check(x.d));
    dev_close(&x, h, N);
}

CHECK_MAIN()
