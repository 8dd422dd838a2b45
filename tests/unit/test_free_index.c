/*
 * test_free_index.c — the free-slice index of sliced pools (src/mem/free_index.h)
 * on its own, over slices made by hand: the size classes and their two
 * bitmaps, best fit with the lowest address among equal lengths, a slice
 * changed in place refreshed to where a remove and an insert would leave
 * it, the address-ordered first fit the adaptive placement keeps, and the invariant
 * checker (relo__free_index_check) that relo_device_check runs on every
 * pool, and the path and hint a search by address keeps for what follows
 * it. Randomized cases compare the index with a plain array. Last, the
 * page counters passes read instead of walking a page's slices.
 */
#include "check.h"
#include "fixture.h"
#include "mem/free_index.h"
#include "pass/relocation.h"

#define PAGES 4
#define SLICES 512

typedef struct bench_set {
    relo_page pages[PAGES];
    relo_slice slices[SLICES];
    bool in[SLICES];
} bench_set;

static void set_up(bench_set *b)
{
    memset(b, 0, sizeof *b);
    for (uint32_t i = 0; i < PAGES; i++) b->pages[i].order = 10 + i;
}

/* Slice i of page p at offset, length bytes, FREE. */
static relo_slice *make(bench_set *b, uint32_t i, uint32_t p, uint64_t offset, uint64_t length)
{
    relo_slice *s = &b->slices[i];
    memset(s, 0, sizeof *s);
    s->page = &b->pages[p];
    s->offset = offset;
    s->length = length;
    s->state = RELO_SLICE_FREE;
    s->priority = (uint32_t)(i * 2654435761u);
    return s;
}

/* Where and how long one hand-made slice is: on page `page` at offset. */
typedef struct place {
    uint32_t page;
    uint64_t offset, length;
} place;

/* Sets b up and x empty (best fit, or address-ordered first fit, over
 * slices up to max_length), then inserts n slices, slice i at at[i]. */
static relo_status open_index(bench_set *b, relo_free_index *x, bool best_fit, uint64_t max_length,
                              const place *at, uint32_t n)
{
    set_up(b);
    memset(x, 0, sizeof *x);
    relo_status st = relo__free_index_init(x, best_fit, max_length);
    for (uint32_t i = 0; st == RELO_OK && i < n; i++)
        relo__free_index_insert(x, make(b, i, at[i].page, at[i].offset, at[i].length));
    return st;
}

/* The places given, then their count: the last two arguments of open_index(). */
#define PLACES(...) \
    (const place[]){__VA_ARGS__}, (uint32_t)(sizeof((const place[]){__VA_ARGS__}) / sizeof(place))

static bool index_ok(const relo_free_index *x, uint64_t want_count)
{
    uint64_t count = 0;
    const char *why = NULL;
    bool ok = relo__free_index_check(x, &count, &why);
    if (!ok) fprintf(stderr, "  index check: %s\n", why);
    return ok && count == want_count;
}

CHECK_TEST(classes_cover_lengths_in_order)
{
    /* Classes are consecutive ranges: a longer length never maps to a
     * lower class, and each class spans at most 1/32 of its lengths. */
    uint32_t pf = 0, ps = 0;
    for (uint64_t len = 1; len < 70000; len++) {
        uint32_t fl, sl;
        relo__free_index_class(len, &fl, &sl);
        require_true(sl < RELO_FREE_SL_COUNT);
        uint64_t key = (uint64_t)fl * RELO_FREE_SL_COUNT + sl, prev = (uint64_t)pf * RELO_FREE_SL_COUNT + ps;
        require_true(key == prev || key == prev + 1 || len == 1);
        pf = fl;
        ps = sl;
    }
    uint32_t fl, sl;
    relo__free_index_class(31, &fl, &sl);
    expect_eq(fl, 0);
    expect_eq(sl, 31);
    relo__free_index_class(32, &fl, &sl);
    expect_eq(fl, 1);
    expect_eq(sl, 0);
    relo__free_index_class(300, &fl, &sl); /* 256 + 5 steps of 8 */
    expect_eq(fl, 4);
    expect_eq(sl, 5);
    relo__free_index_class(303, &fl, &sl);
    expect_eq(sl, 5);
    relo__free_index_class(304, &fl, &sl);
    expect_eq(sl, 6);
    relo__free_index_class(UINT64_MAX, &fl, &sl);
    expect_eq(fl + 1, RELO_FREE_FL_MAX); /* the last of the levels a length needs */
    expect_eq(sl, RELO_FREE_SL_COUNT - 1);
}

CHECK_TEST(best_fit_takes_the_shortest_slice_that_fits)
{
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, true, 1 << 20,
                          PLACES({0, 0, 100}, {0, 8192, 300}, {0, 2 * 8192, 303}, {0, 3 * 8192, 200},
                                 {0, 4 * 8192, 1000}, {0, 5 * 8192, 5000})));
    expect_true(index_ok(&x, 6));
    expect_eq(relo__free_index_find(&x, 1)->length, 100);
    expect_eq(relo__free_index_find(&x, 150)->length, 200);
    expect_eq(relo__free_index_find(&x, 200)->length, 200);
    /* 290's class is empty; the next class up holds 300 and 303 (303 at
     * its head, inserted last): the shorter one wins. */
    expect_eq(relo__free_index_find(&x, 290)->length, 300);
    expect_eq(relo__free_index_find(&x, 301)->length, 303);
    expect_eq(relo__free_index_find(&x, 1001)->length, 5000);
    expect_true(relo__free_index_find(&x, 5001) == NULL);
    expect_true(relo__free_index_find(&x, (uint64_t)1 << 40) == NULL);
    relo__free_index_destroy(&x);
}

CHECK_TEST(best_fit_prefers_the_lowest_address_among_equals)
{
    /* Same length on pages 2, 0, 1, and twice on page 0; page 0 at 4096
     * is the lowest address. The last is shorter and does not fit 4096. */
    bench_set b;
    relo_free_index x;
    require_ok(
        open_index(&b, &x, true, 1 << 20,
                   PLACES({2, 0, 4096}, {0, 8192, 4096}, {1, 0, 4096}, {0, 4096, 4096}, {3, 0, 4000})));
    relo_slice *got = relo__free_index_find(&x, 4096);
    require_true(got != NULL);
    expect_true(got == &b.slices[3]);
    relo__free_index_remove(&x, got);
    expect_true(relo__free_index_find(&x, 4096) == &b.slices[1]);
    expect_true(relo__free_index_find(&x, 3900) == &b.slices[4]);
    expect_true(index_ok(&x, 4));
    relo__free_index_destroy(&x);
}

CHECK_TEST(removing_the_last_slice_of_a_class_clears_its_bits)
{
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, true, 1 << 20, PLACES({0, 0, 700}, {0, 1024, 700}, {0, 4096, 70000})));
    expect_true(index_ok(&x, 3));
    relo__free_index_remove(&x, &b.slices[2]);
    expect_true(index_ok(&x, 2));
    /* Nothing above 700's class: a long request finds nothing. */
    expect_true(relo__free_index_find(&x, 1000) == NULL);
    relo__free_index_remove(&x, &b.slices[0]);
    relo__free_index_remove(&x, &b.slices[1]);
    expect_eq(x.fl_bitmap, 0);
    expect_true(relo__free_index_find(&x, 1) == NULL);
    expect_true(index_ok(&x, 0));
    relo__free_index_destroy(&x);
}

CHECK_TEST(a_fit_deep_in_the_requests_class_is_found)
{
    /* Twenty slices of the request's class that are too short, then one
     * that fits, and nothing above: the search goes past its usual look. */
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, true, 1 << 20, PLACES({0, 0, 1030}))); /* ends up last in the list */
    for (uint32_t i = 1; i <= 20; i++) relo__free_index_insert(&x, make(&b, i, 0, 2048u * i, 1024));
    relo_slice *got = relo__free_index_find(&x, 1025);
    expect_true(got == &b.slices[0]);
    relo__free_index_destroy(&x);
}

CHECK_TEST(by_address_takes_the_lowest_address_that_fits)
{
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, false, 1 << 20,
                          PLACES({1, 0, 5000}, {0, 9000, 100}, {0, 20000, 6000}, {2, 0, 100000})));
    expect_true(index_ok(&x, 4));
    expect_true(relo__free_index_find(&x, 50) == &b.slices[1]);
    expect_true(relo__free_index_find(&x, 4000) == &b.slices[2]); /* page 0 before page 1 */
    expect_true(relo__free_index_find(&x, 7000) == &b.slices[3]);
    expect_true(relo__free_index_find(&x, 200000) == NULL);
    /* The front of a slice given away in place: the treap is refreshed. */
    b.slices[2].offset += 3000;
    b.slices[2].length -= 3000;
    relo__free_index_refresh(&x, &b.slices[2]);
    expect_true(index_ok(&x, 4));
    expect_true(relo__free_index_find(&x, 4000) == &b.slices[0]);
    relo__free_index_destroy(&x);
}

/* Whether two by-size indexes over twin bench sets hold the same slices
 * (by their place in the set) in the same order in every class. */
static bool same_lists(const bench_set *a, const relo_free_index *x, const bench_set *b,
                       const relo_free_index *y)
{
    if (x->fl_count != y->fl_count || x->fl_bitmap != y->fl_bitmap) return false;
    for (uint32_t f = 0; f < x->fl_count; f++) {
        if (x->sl_bitmap[f] != y->sl_bitmap[f]) return false;
        for (uint32_t c = 0; c < RELO_FREE_SL_COUNT; c++) {
            const relo_slice *s = x->bins[f * RELO_FREE_SL_COUNT + c],
                             *t = y->bins[f * RELO_FREE_SL_COUNT + c];
            for (; s && t; s = s->right, t = t->right)
                if (s - a->slices != t - b->slices) return false;
            if (s || t) return false;
        }
    }
    return true;
}

CHECK_TEST(by_size_a_refresh_leaves_a_slice_where_remove_and_insert_would)
{
    /* Three slices of one class (39 KiB up to 40 KiB), the newest first in
     * its list. x is refreshed in place; y, its twin, has each slice
     * removed and inserted again: every class list must read the same. */
    static bench_set a, b;
    relo_free_index x, y;
    const place at[] = {{0, 0, 40000}, {0, 65536, 40100}, {1, 0, 40500}, {1, 65536, 900}};
    require_ok(open_index(&a, &x, true, 1 << 20, at, 4));
    require_ok(open_index(&b, &y, true, 1 << 20, at, 4));
    require_true(same_lists(&a, &x, &b, &y));
    uint32_t fl, sl;
    relo__free_index_class(40000, &fl, &sl);
    uint32_t bin = fl * RELO_FREE_SL_COUNT + sl;
    require_true(x.bins[bin] == &a.slices[2]);

    /* Slices carved from the front. The first step keeps the last of its
     * class in that class: it comes first there, and no bit changes. */
    const uint64_t fl_bits = x.fl_bitmap, sl_bits = x.sl_bitmap[fl];
    const struct {
        uint32_t i;
        uint64_t cut;
    } steps[] = {
        {0, 50},    /* 39,950: within the class, from last to first */
        {0, 10},    /* 39,940: within the class, already first */
        {1, 39200}, /* 900: into the class of 900, which holds one */
        {3, 850},   /* 50: out of that class, into an empty one */
        {0, 39000}, /* 940: out of the 40 KiB class, into another */
        {2, 40090}, /* 410: the 40 KiB class empties */
    };
    for (uint32_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        uint32_t i = steps[k].i;
        a.slices[i].offset += steps[k].cut;
        a.slices[i].length -= steps[k].cut;
        relo__free_index_refresh(&x, &a.slices[i]);
        relo__free_index_remove(&y, &b.slices[i]);
        b.slices[i].offset += steps[k].cut;
        b.slices[i].length -= steps[k].cut;
        relo__free_index_insert(&y, &b.slices[i]);
        expect_true(index_ok(&x, 4));
        expect_true(same_lists(&a, &x, &b, &y));
        if (k == 0) {
            expect_true(x.bins[bin] == &a.slices[0]);
            expect_eq(x.fl_bitmap, fl_bits);
            expect_eq(x.sl_bitmap[fl], sl_bits);
        }
    }
    expect_eq(x.sl_bitmap[fl] & (1u << sl), 0);
    expect_true(relo__free_index_find(&x, 11) == &a.slices[3]);
    expect_true(relo__free_index_find(&x, 60) == &a.slices[2]);
    relo__free_index_destroy(&x);
    relo__free_index_destroy(&y);
}

CHECK_TEST(the_checker_finds_a_broken_index)
{
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, true, 1 << 20, PLACES({0, 0, 700}, {0, 1024, 700})));
    require_true(index_ok(&x, 2));
    uint64_t count;
    const char *why = NULL;

    /* A length changed while indexed: the slice sits in the wrong class. */
    b.slices[0].length = 9000;
    expect_true(!relo__free_index_check(&x, &count, &why));
    b.slices[0].length = 700;
    /* A class bit with no list. */
    x.sl_bitmap[0] |= 1u;
    expect_true(!relo__free_index_check(&x, &count, &why));
    x.sl_bitmap[0] &= ~1u;
    /* A level bit with no class. */
    x.fl_bitmap |= (uint64_t)1 << 2;
    expect_true(!relo__free_index_check(&x, &count, &why));
    x.fl_bitmap &= ~((uint64_t)1 << 2);
    /* A back link that disagrees. */
    relo_slice *saved = b.slices[0].left;
    b.slices[0].left = &b.slices[0];
    expect_true(!relo__free_index_check(&x, &count, &why));
    b.slices[0].left = saved;
    /* A slice that is no longer free. */
    b.slices[1].state = RELO_SLICE_LIVE;
    expect_true(!relo__free_index_check(&x, &count, &why));
    b.slices[1].state = RELO_SLICE_FREE;
    expect_true(index_ok(&x, 2));
    relo__free_index_destroy(&x);
}

/* The exact best fit by brute force: shortest, then lowest address. */
static relo_slice *brute_best(bench_set *b, uint64_t length)
{
    relo_slice *best = NULL;
    for (uint32_t i = 0; i < SLICES; i++) {
        relo_slice *s = &b->slices[i];
        if (!b->in[i] || s->length < length) continue;
        if (!best || s->length < best->length ||
            (s->length == best->length &&
             (s->page->order < best->page->order ||
              (s->page->order == best->page->order && s->offset < best->offset))))
            best = s;
    }
    return best;
}

CHECK_TEST(random_operations_agree_with_a_plain_array)
{
    uint64_t seed = check_seed();
    uint64_t rng = seed;
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, true, (uint64_t)1 << 30, NULL, 0));
    uint64_t held = 0, failures = 0;
    for (int op = 0; op < 200000 && failures == 0; op++) {
        uint32_t i = (uint32_t)(fx_rand(&rng) % SLICES);
        /* A few lengths repeat often, the rest spread over 5 decades. */
        uint64_t len = fx_rand(&rng) % 4 ? 256u * (1 + fx_rand(&rng) % 8) : fx_range(&rng, 1, 100000000);
        if (!b.in[i]) {
            relo__free_index_insert(&x, make(&b, i, (uint32_t)(fx_rand(&rng) % PAGES), 4096u * i, len));
            b.in[i] = true;
            held++;
        } else if (fx_rand(&rng) % 2) {
            relo__free_index_remove(&x, &b.slices[i]);
            b.in[i] = false;
            held--;
        } else {
            /* Changed in place, as a carve (its front given away) or a
             * merge (a neighbour's length added) changes it. */
            relo_slice *s = &b.slices[i];
            if (s->length > 1 && (fx_rand(&rng) % 2 || s->length + len > ((uint64_t)1 << 30))) {
                uint64_t cut = fx_range(&rng, 1, s->length - 1);
                s->offset += cut;
                s->length -= cut;
            } else {
                s->length += len;
            }
            relo__free_index_refresh(&x, s);
        }
        uint64_t want = fx_rand(&rng) % 3 ? 256u * (1 + fx_rand(&rng) % 8) : fx_range(&rng, 1, 120000000);
        relo_slice *got = relo__free_index_find(&x, want), *best = brute_best(&b, want);
        if ((got == NULL) != (best == NULL) || (got && (got->length < want || !b.in[got - b.slices]))) {
            failures++;
        } else if (got && got != best) {
            /* Only the first few slices of a class are compared: the pick
             * may differ from the exact best, but never by more than the
             * class it found, which holds no shorter fit than the best's
             * class unless the best shares the request's class. */
            uint32_t gf, gs, bf, bs, rf, rs;
            relo__free_index_class(got->length, &gf, &gs);
            relo__free_index_class(best->length, &bf, &bs);
            relo__free_index_class(want, &rf, &rs);
            bool same_class = gf == bf && gs == bs;
            bool best_in_request_class = bf == rf && bs == rs;
            if (!same_class && !best_in_request_class) failures++;
        }
        if (op % 997 == 0 && !index_ok(&x, held)) failures++;
    }
    if (failures) fprintf(stderr, "  seed %llu\n", (unsigned long long)seed);
    expect_eq(failures, 0);
    expect_true(index_ok(&x, held));
    relo__free_index_destroy(&x);
}

/* The first fit by address by brute force: lowest page order, then offset. */
static relo_slice *brute_first(bench_set *b, uint64_t length)
{
    relo_slice *first = NULL;
    for (uint32_t i = 0; i < SLICES; i++) {
        relo_slice *s = &b->slices[i];
        if (!b->in[i] || s->length < length) continue;
        if (!first || s->page->order < first->page->order ||
            (s->page->order == first->page->order && s->offset < first->offset))
            first = s;
    }
    return first;
}

CHECK_TEST(by_address_a_search_keeps_its_path_and_hint_until_they_go_stale)
{
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, false, 1 << 20, PLACES({0, 0, 100}, {0, 10000, 5000}, {1, 0, 8000})));
    require_true(relo__free_index_find(&x, 4000) == &b.slices[1]);
    expect_true(x.path_len > 0);
    /* Carved from the front, as a reservation does: the refresh climbs the
     * kept path, and the next search of as much is answered by the hint. */
    b.slices[1].offset += 1000;
    b.slices[1].length -= 1000;
    relo__free_index_refresh(&x, &b.slices[1]);
    expect_true(index_ok(&x, 3));
    expect_true(x.path_len > 0);
    expect_true(relo__free_index_find(&x, 4000) == &b.slices[1]);
    expect_true(relo__free_index_find(&x, 4001) == &b.slices[2]);
    /* A slice before the hint's grows (a neighbour merged into it): the
     * hint goes, and the search finds the grown slice first. */
    require_true(relo__free_index_find(&x, 4000) == &b.slices[1]);
    b.slices[0].length = 4500;
    relo__free_index_refresh(&x, &b.slices[0]);
    expect_true(index_ok(&x, 3));
    expect_true(relo__free_index_find(&x, 4000) == &b.slices[0]);
    /* A slice inserted before the hint's: found, not skipped. */
    require_true(relo__free_index_find(&x, 6000) == &b.slices[2]);
    relo__free_index_insert(&x, make(&b, 3, 0, 20000, 7000));
    expect_true(relo__free_index_find(&x, 6000) == &b.slices[3]);
    expect_true(index_ok(&x, 4));
    /* The checker sees a hint gone stale behind the index's back. */
    require_true(relo__free_index_find(&x, 7000) == &b.slices[3]);
    b.slices[0].length = 7500;
    relo__free_tree_refresh(x.root, &b.slices[0], NULL, NULL);
    uint64_t count;
    const char *why = NULL;
    expect_true(!relo__free_index_check(&x, &count, &why));
    relo__free_index_refresh(&x, &b.slices[0]);
    expect_true(index_ok(&x, 4));
    relo__free_index_destroy(&x);
}

CHECK_TEST(by_address_random_operations_agree_with_a_plain_array)
{
    uint64_t seed = check_seed();
    uint64_t rng = seed;
    bench_set b;
    relo_free_index x;
    require_ok(open_index(&b, &x, false, (uint64_t)1 << 30, NULL, 0));
    uint64_t held = 0, failures = 0;
    /* Slice i lives within [1 MiB * i, 1 MiB * (i + 1)) of its page, so
     * carving and growing in place never pass another slice. */
    for (int op = 0; op < 200000 && failures == 0; op++) {
        uint32_t i = (uint32_t)(fx_rand(&rng) % SLICES);
        if (!b.in[i]) {
            uint64_t len = fx_range(&rng, 1, 600000);
            relo__free_index_insert(&x,
                                    make(&b, i, (uint32_t)(fx_rand(&rng) % PAGES), (uint64_t)i << 20, len));
            b.in[i] = true;
            held++;
        } else if (fx_rand(&rng) % 4 == 0) {
            relo__free_index_remove(&x, &b.slices[i]);
            b.in[i] = false;
            held--;
        } else if (fx_rand(&rng) % 3 == 0) {
            uint64_t end = ((uint64_t)i + 1) << 20, used = b.slices[i].offset + b.slices[i].length;
            if (used < end) b.slices[i].length += fx_range(&rng, 1, end - used);
            relo__free_index_refresh(&x, &b.slices[i]);
        }
        /* Runs of one length, as reservations come, and the odd other. */
        uint64_t want = fx_rand(&rng) % 4 ? 4096u * (1 + fx_rand(&rng) % 4) : fx_range(&rng, 1, 1000000);
        for (int run = 0; run < 4 && failures == 0; run++) {
            relo_slice *got = relo__free_index_find(&x, want), *first = brute_first(&b, want);
            if (got != first) {
                failures++;
            } else if (got && got->length > want) {
                got->offset += want; /* carved from the front */
                got->length -= want;
                relo__free_index_refresh(&x, got);
            }
        }
        if (op % 997 == 0 && !index_ok(&x, held)) failures++;
    }
    if (failures) fprintf(stderr, "  seed %llu\n", (unsigned long long)seed);
    expect_eq(failures, 0);
    expect_true(index_ok(&x, held));
    relo__free_index_destroy(&x);
}

CHECK_TEST(a_page_moves_whole_only_when_all_it_holds_is_live)
{
    /* What a pass may move, from the page's counters alone: three LIVE
     * allocations of 100, 200 and 300 bytes, the only slices in use. */
    relo_page p;
    memset(&p, 0, sizeof p);
    p.occupied = 3;
    p.live = 3;
    p.live_size = 600;
    expect_eq(relo__page_movable_bytes(&p), 600);
    /* A fourth slice in use is a TARGET or a LEAKED range: it stays put,
     * so the page cannot be emptied and is no source. */
    p.occupied = 4;
    expect_eq(relo__page_movable_bytes(&p), 0);
    p.occupied = 3;
    p.guards = 1;
    expect_eq(relo__page_movable_bytes(&p), 0);
    p.guards = 0;
    p.occupied = p.live = 0;
    p.live_size = 0;
    expect_eq(relo__page_movable_bytes(&p), 0);
}

CHECK_MAIN()
