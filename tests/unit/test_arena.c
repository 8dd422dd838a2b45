/*
 * test_arena.c — the adaptive arena (src/pool/arena.h) alone, over a home
 * built by hand on the mock backend (tests/include/mock_home.h): no device,
 * no stream. Its first pool's pages are the floor; a request too large for
 * the current pages grows a pool of larger pages and outdates the old one,
 * whose empty pages are queued to go back; a growth refused for any reason
 * leaves the arena as it was; an outdated pool that holds no page is
 * dropped; destroying the arena gives every page back.
 *
 * The arena has no checker of its own, so arena_ok below is one: every
 * pool passes relo__pool_check, the home's tallies hold their pages, the
 * current pool is the one not outdated, the slot count and the shape
 * agree with the slots, and every pool's pages are of its size. It runs
 * after every change.
 */
#include "check.h"
#include "base/hostmem.h"
#include "mock_home.h"
#include "pool/arena.h"

#define KiB RELO_KiB
#define MiB RELO_MiB
#define ALIGN 256

static bool broken(const char *what)
{
    fprintf(stderr, "  arena: %s\n", what);
    return false;
}

static bool arena_ok(const relo_arena *a, const mock_home *h)
{
    relo_pool *pools[RELO_ARENA_SLOTS];
    int n = 0;
    relo_arena_shape want = {0, 0, 0, 0};
    for (int i = 0; i < RELO_ARENA_SLOTS; i++) {
        relo_pool *p = a->slots[i];
        if (!p) continue;
        pools[n++] = p;
        if (p->slot != i || p->kind != RELO_POOL_SLICED) return broken("a pool names another slot or kind");
        if (p->outdated == (i == a->current))
            return broken("the current pool is outdated, or another is not");
        for (uint32_t k = 0; k < p->page_count; k++)
            if (p->pages[k]->size != p->page_size) return broken("a page is not of its pool's size");
        if (p->outdated) {
            want.outdated_pools++;
            want.outdated_pages += p->page_count;
            want.guarded_outdated_pages += p->guarded_pages;
        } else {
            want.current_pages += p->page_count;
        }
    }
    if ((uint32_t)n != a->pool_count) return broken("pool count differs from the slots");
    if (a->current >= 0 && a->slots[a->current]->page_size != a->page_size)
        return broken("page size differs from the current pool's");
    relo_arena_shape got = relo__arena_shape(a);
    if (memcmp(&got, &want, sizeof got) != 0) return broken("shape differs from the slots");
    if (relo__arena_has_outdated(a) != (want.outdated_pools > 0)) return broken("has_outdated is wrong");
    return mock_home_check(h, pools, n);
}

/* A home with the given largest page, and an arena over it. */
typedef struct bench {
    relo_arena a;
    mock_home h;
} bench;

static bool bench_open(bench *b, uint64_t max_page)
{
    bool made = mock_home_open(&b->h, ALIGN, max_page, 0);
    if (made) relo__arena_init(&b->a, &b->h.home);
    return made;
}

/* Destroys the arena (checked: every page goes back) and the home. */
static void bench_close(bench *b)
{
    relo__arena_destroy(&b->a);
    expect_true(arena_ok(&b->a, &b->h));
    expect_true(relo__arena_current(&b->a) == NULL);
    expect_eq(b->a.page_size, b->a.floor);
    mock_home_close(&b->h);
}

#define require_arena(b) require_true(arena_ok(&(b)->a, &(b)->h))

/* Reserves size bytes for a fresh slot; NULL (and a recorded failure) when
 * refused. */
static relo_slice *take(bench *b, uint64_t size)
{
    relo_slice *s = NULL;
    expect_ok(relo__arena_reserve(&b->a, size, mock_home_slot(&b->h), true, &s));
    return s;
}

/* The arena's fields a refused reservation must leave as they were. */
typedef struct snapshot {
    relo_pool *slots[RELO_ARENA_SLOTS];
    int current;
    uint32_t pool_count;
    uint64_t page_size, bytes_held, allocs;
} snapshot;

static snapshot snap(const bench *b)
{
    snapshot s;
    memcpy(s.slots, b->a.slots, sizeof s.slots);
    s.current = b->a.current;
    s.pool_count = b->a.pool_count;
    s.page_size = b->a.page_size;
    s.bytes_held = b->h.mock->bytes_held;
    s.allocs = b->h.held[0].counters.backend_allocs;
    return s;
}

/* A reservation of size bytes fails with want, and the arena is sound and
 * as it was. A host memory failure the caller injected ends with it. */
static bool refused_unchanged(bench *b, uint64_t size, bool allow_new_page, relo_status want)
{
    snapshot before = snap(b);
    relo_slice *s = NULL;
    relo_status st = relo__arena_reserve(&b->a, size, 0, allow_new_page, &s);
    relo__hostmem_fail_at(0, 0);
    expect_status(st, want);
    snapshot now = snap(b);
    return arena_ok(&b->a, &b->h) && memcmp(before.slots, now.slots, sizeof now.slots) == 0 &&
           before.current == now.current && before.pool_count == now.pool_count &&
           before.page_size == now.page_size && before.bytes_held == now.bytes_held &&
           before.allocs == now.allocs;
}

CHECK_TEST(the_first_pool_has_pages_of_the_floor)
{
    bench b;
    require_true(bench_open(&b, 64 * MiB));
    require_arena(&b);
    expect_true(relo__arena_current(&b.a) == NULL);
    expect_eq(b.a.page_size, 2 * MiB);
    require_true(take(&b, 1000) != NULL);
    require_arena(&b);
    relo_pool *p = relo__arena_current(&b.a);
    require_true(p != NULL);
    expect_eq(p->page_size, 2 * MiB);
    expect_eq(b.a.pool_count, 1);
    /* A request the current pages take goes to the same pool. */
    require_true(take(&b, 2 * MiB - 512) != NULL);
    require_arena(&b);
    expect_eq(b.a.pool_count, 1);
    expect_eq(p->page_count, 2);
    bench_close(&b);
    /* Where the backend's largest page is below 2 MiB, it is the floor. */
    require_true(bench_open(&b, 1 * MiB + 100));
    expect_eq(b.a.floor, 1 * MiB);
    require_true(take(&b, 1000) != NULL);
    require_arena(&b);
    expect_eq(relo__arena_current(&b.a)->page_size, 1 * MiB);
    bench_close(&b);
}

CHECK_TEST(a_larger_request_grows_a_pool_and_outdates_the_old_one)
{
    bench b;
    require_true(bench_open(&b, 64 * MiB));
    relo_slice *small = take(&b, 1000), *other = take(&b, 2 * MiB - 512);
    require_true(small && other);
    relo_pool *old = relo__arena_current(&b.a);
    relo__pool_slice_free(old, other); /* its page is empty now */
    require_arena(&b);
    require_true(take(&b, 3 * MiB) != NULL);
    require_arena(&b);
    relo_pool *now = relo__arena_current(&b.a);
    expect_true(now != old);
    /* 3 MiB + 1 MiB, rounded up to a MiB. */
    expect_eq(now->page_size, 4 * MiB);
    expect_eq(b.a.page_size, 4 * MiB);
    expect_true(old->outdated);
    /* The old pool's empty page was queued at once; the other goes when
     * its allocation does. */
    expect_true(b.h.pending != NULL && b.h.pending->pool == old && b.h.pending->pending_next == NULL);
    expect_eq(mock_home_cleanup(&b.h), 1);
    require_arena(&b);
    relo__pool_slice_free(old, small);
    require_arena(&b);
    expect_eq(mock_home_cleanup(&b.h), 1);
    require_arena(&b);
    expect_eq(old->page_count, 0);
    relo__arena_drop_empty_pools(&b.a);
    require_arena(&b);
    expect_eq(b.a.pool_count, 1);
    expect_true(!relo__arena_has_outdated(&b.a));
    bench_close(&b);
}

CHECK_TEST(a_refused_growth_leaves_the_arena_as_it_was)
{
    bench b;
    require_true(bench_open(&b, 64 * MiB));
    require_true(take(&b, 1000) != NULL);
    /* The backend refuses the larger page. */
    mock_refuse(b.h.mock, MOCK_ALLOC, 1, false, RELO_ERR_OUT_OF_MEMORY);
    expect_true(refused_unchanged(&b, 3 * MiB, true, RELO_ERR_OUT_OF_MEMORY));
    /* Host memory refuses the new pool. */
    relo__hostmem_fail_at(1, 1);
    expect_true(refused_unchanged(&b, 3 * MiB, true, RELO_ERR_HOST_MEMORY));
    /* A recording stream may not add a page. */
    expect_true(refused_unchanged(&b, 3 * MiB, false, RELO_ERR_PAGE_UPDATE_FORBIDDEN));
    /* Larger than the largest page. */
    expect_true(refused_unchanged(&b, 64 * MiB + 1, true, RELO_ERR_BUFFER_TOO_BIG));
    expect_true(!relo__arena_current(&b.a)->outdated);
    /* Nothing refused any more: the same growth is made. */
    require_true(take(&b, 3 * MiB) != NULL);
    require_arena(&b);
    expect_eq(b.a.pool_count, 2);
    bench_close(&b);
}

CHECK_TEST(the_largest_page_caps_a_growth)
{
    bench b;
    require_true(bench_open(&b, 8 * MiB));
    /* 7.5 MiB + 1 MiB would be 9 MiB: the page is the largest, 8 MiB. */
    require_true(take(&b, 7 * MiB + 512 * KiB) != NULL);
    require_arena(&b);
    expect_eq(b.a.page_size, 8 * MiB);
    expect_eq(b.a.pool_count, 1);
    bench_close(&b);
}

CHECK_TEST(destroy_gives_every_page_back)
{
    bench b;
    require_true(bench_open(&b, 64 * MiB));
    for (uint64_t size = 1 * MiB; size <= 5 * MiB; size += 2 * MiB) {
        require_true(take(&b, size) != NULL);
        require_arena(&b);
    }
    expect_eq(b.a.pool_count, 3);
    expect_eq(relo__arena_shape(&b.a).outdated_pools, 2);
    expect_eq(b.h.mock->buffers_live, 3);
    bench_close(&b);
}

CHECK_MAIN()
