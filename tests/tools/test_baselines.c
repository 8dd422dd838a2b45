/*
 * test_baselines.c — the PyTorch allocator models (tools/torch_classic.c,
 * tools/torch_expandable.c) on small traces written by hand, one rule per
 * case, and the ordered set beneath them. The models are checked against
 * their Python oracles on the shared traces by baseline_oracles.py.
 */
#include <string.h>

#include "baseline.h"
#include "check.h"
#include "sorted_index.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* A hand-made trace: events appended with a() and f(). */
typedef struct hand {
    trace t;
    uint64_t size[4097];
    uint16_t stream[4097];
} hand;

static void start(hand *h)
{
    memset(h, 0, sizeof *h);
    trace_init(&h->t);
    trace_set_name_from_path(&h->t, "hand.trace");
}

/* Allocation number `id` (dense, given in order) of size bytes on stream s. */
static void a(hand *h, uint32_t id, uint64_t size, uint64_t s)
{
    uint16_t si = 0;
    trace_stream_index(&h->t, s, &si);
    h->size[id] = size;
    h->stream[id] = si;
    trace_push(&h->t, TRACE_ALLOC, id, si, size);
    if (id + 1 > h->t.alloc_count) h->t.alloc_count = id + 1;
}

static void f(hand *h, uint32_t id)
{
    trace_push(&h->t, TRACE_FREE, id, h->stream[id], h->size[id]);
}

/* Replays h through k at capacity; returns the run (timeline freed). */
static baseline_run run(hand *h, baseline_kind k, uint64_t capacity)
{
    baseline_run r;
    baseline_replay(k, &h->t, capacity, 0, &r);
    baseline_run_free(&r);
    return r;
}

CHECK_TEST(sorted_index_orders_and_finds)
{
    sorted_index s;
    sorted_index_init(&s);
    require_true(sorted_index_insert(&s, 30, 1, 7));
    require_true(sorted_index_insert(&s, 10, 5, 8));
    require_true(sorted_index_insert(&s, 10, 2, 9));
    require_true(sorted_index_insert(&s, 20, 0, 10));
    expect_eq(s.count, 4);
    expect_eq(s.v[0].id, 9);   /* (10,2) */
    expect_eq(s.v[1].id, 8);   /* (10,5) */
    expect_eq(sorted_index_lower_bound(&s, 10, 3), 1);
    expect_eq(sorted_index_lower_bound(&s, 11, 0), 2);
    expect_eq(sorted_index_lower_bound(&s, 31, 0), 4);
    expect_true(sorted_index_remove(&s, 10, 5));
    expect_true(!sorted_index_remove(&s, 10, 5));
    expect_eq(s.count, 3);
    expect_eq(s.v[1].id, 10);
    sorted_index_free(&s);
}

CHECK_TEST(names_parse_both_ways)
{
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) {
        baseline_kind back;
        require_true(baseline_kind_parse(baseline_kind_name((baseline_kind)k), &back));
        expect_eq(back, k);
    }
    baseline_kind x;
    expect_true(!baseline_kind_parse("tensorflow", &x));
}

/* Requests round up to 512 B: 2048 requests of 700 B fill one 2 MiB small
 * segment exactly; one more opens a second. */
CHECK_TEST(classic_rounds_to_512_bytes)
{
    hand h;
    start(&h);
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) {
        for (uint32_t i = 0; i < 2048; i++) a(&h, i, 700, 0);
        expect_eq(run(&h, (baseline_kind)k, 0).peak_reserved, 2 * MiB);
        a(&h, 2048, 700, 0);
        expect_eq(run(&h, (baseline_kind)k, 0).peak_reserved, 4 * MiB);
        trace_free(&h.t);
        start(&h);
        for (uint32_t i = 0; i < 4096; i++) a(&h, i, 1, 0);   /* 4096 × 512 B = 2 MiB */
        expect_eq(run(&h, (baseline_kind)k, 0).peak_reserved, 2 * MiB);
        a(&h, 4096, 1, 0);
        expect_eq(run(&h, (baseline_kind)k, 0).peak_reserved, 4 * MiB);
        trace_free(&h.t);
        start(&h);
    }
    trace_free(&h.t);
}

CHECK_TEST(classic_segment_sizes)
{
    static const struct { uint64_t size, segment; } cases[] = {
        {1, 2 * MiB},                    /* small pool */
        {MiB, 2 * MiB},                  /* still small */
        {MiB + 1, 20 * MiB},             /* large pool, under 10 MiB */
        {10 * MiB - 512, 20 * MiB},
        {10 * MiB, 10 * MiB},            /* 10 MiB and above: rounded to 2 MiB */
        {11 * MiB + 1, 12 * MiB},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hand h;
        start(&h);
        a(&h, 0, cases[i].size, 0);
        baseline_run r = run(&h, BASELINE_PYTORCH, 0);
        expect_eq(r.status, BASELINE_COMPLETED);
        expect_eq(r.peak_reserved, cases[i].segment);
        expect_eq(r.peak_live, cases[i].size);
        trace_free(&h.t);
    }
}

/* A large-pool rest is split off only when it is over 1 MiB. A 3 MiB
 * request in a free 4 MiB block keeps the 1 MiB rest inside its block, so
 * when the block after it is freed (4 MiB) a 5 MiB request does not fit
 * there and opens a second segment. */
CHECK_TEST(classic_splits_large_rest_over_1_mib)
{
    hand h;
    start(&h);
    a(&h, 0, 4 * MiB, 0);
    a(&h, 1, 4 * MiB, 0);
    a(&h, 2, 12 * MiB, 0);      /* fills the 20 MiB segment */
    f(&h, 0);
    a(&h, 3, 3 * MiB, 0);       /* takes the free 4 MiB; the 1 MiB rest stays inside */
    f(&h, 1);
    a(&h, 4, 5 * MiB, 0);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 40 * MiB);
    trace_free(&h.t);
    start(&h);
    a(&h, 0, 4 * MiB, 0);
    a(&h, 1, 4 * MiB, 0);
    a(&h, 2, 12 * MiB, 0);
    f(&h, 0);
    a(&h, 3, 3 * MiB - 512, 0); /* rest 1 MiB + 512 B: split off, and merges with the next */
    f(&h, 1);
    a(&h, 4, 5 * MiB, 0);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 20 * MiB);
    trace_free(&h.t);
}

CHECK_TEST(classic_keeps_streams_apart)
{
    hand h;
    start(&h);
    a(&h, 0, KiB, 0);
    a(&h, 1, KiB, 7);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 4 * MiB);
    trace_free(&h.t);
}

/* Freed neighbours merge: after freeing two adjacent 5 MiB blocks, a
 * 10 MiB request fits the 20 MiB segment. */
CHECK_TEST(classic_merges_free_neighbours)
{
    hand h;
    start(&h);
    a(&h, 0, 5 * MiB, 0);
    a(&h, 1, 5 * MiB, 0);
    a(&h, 2, 5 * MiB, 0);
    f(&h, 0);
    f(&h, 1);
    a(&h, 3, 9 * MiB, 0);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 20 * MiB);
    trace_free(&h.t);
}

/* Best fit: of free blocks of 6 and 4 MiB, a 4 MiB request takes the 4, so
 * a following 6 MiB one still fits. */
CHECK_TEST(classic_takes_best_fit)
{
    hand h;
    start(&h);
    a(&h, 0, 6 * MiB, 0);
    a(&h, 1, 2 * MiB, 0);
    a(&h, 2, 4 * MiB, 0);
    a(&h, 3, 8 * MiB, 0);      /* fills the segment's last 8 MiB */
    f(&h, 0);
    f(&h, 2);
    a(&h, 4, 4 * MiB, 0);
    a(&h, 5, 6 * MiB, 0);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 20 * MiB);
    trace_free(&h.t);
}

/* Under a capacity, wholly free segments are returned and the request
 * retried; a segment still in use is not. */
CHECK_TEST(classic_releases_free_segments_when_refused)
{
    hand h;
    start(&h);
    a(&h, 0, 12 * MiB, 0);
    f(&h, 0);
    a(&h, 1, 16 * MiB, 0);
    baseline_run r = run(&h, BASELINE_PYTORCH, 20 * MiB);
    expect_eq(r.status, BASELINE_COMPLETED);
    expect_eq(r.peak_reserved, 16 * MiB);
    /* Device calls: two segments made, the first one given back. */
    expect_eq(r.device_allocs, 2);
    expect_eq(r.device_frees, 1);
    expect_eq(r.end_reserved, 16 * MiB);
    expect_eq(r.end_live, 16 * MiB);
    baseline_run unl = run(&h, BASELINE_PYTORCH, 0);
    expect_eq(unl.peak_reserved, 28 * MiB);
    expect_eq(unl.device_allocs, 2);
    expect_eq(unl.device_frees, 0);
    /* Held over time: 12 MiB for 12 live, 12 for 0, 28 for 16. */
    expect_eq((uint64_t)unl.reserved_event_sum, 52 * MiB);
    expect_eq((uint64_t)unl.live_event_sum, 28 * MiB);
    trace_free(&h.t);

    start(&h);
    a(&h, 0, 12 * MiB, 0);
    a(&h, 1, 16 * MiB, 0);
    r = run(&h, BASELINE_PYTORCH, 20 * MiB);
    expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
    expect_eq(r.failed_event, 1);
    trace_free(&h.t);
}

CHECK_TEST(classic_fit_lies_within_tolerance)
{
    hand h;
    start(&h);
    a(&h, 0, 12 * MiB, 0);
    f(&h, 0);
    a(&h, 1, 16 * MiB, 0);
    baseline_fit fit;
    require_true(baseline_fit_search(BASELINE_PYTORCH, &h.t, 28 * MiB, &fit));
    expect_ge(fit.capacity, 16 * MiB);
    expect_le(fit.capacity, 18 * MiB);
    expect_gt(fit.replays, 1);
    trace_free(&h.t);
}

/* Expandable: pages of 2 MiB (small) and 20 MiB (large) are mapped for the
 * rounded request only. */
CHECK_TEST(expandable_maps_whole_pages)
{
    static const struct { uint64_t size, mapped; } cases[] = {
        {1, 2 * MiB}, {MiB, 2 * MiB}, {MiB + 1, 20 * MiB}, {10 * MiB, 20 * MiB}, {25 * MiB, 40 * MiB},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hand h;
        start(&h);
        a(&h, 0, cases[i].size, 0);
        expect_eq(run(&h, BASELINE_PYTORCH_EXPANDABLE, 0).peak_reserved, cases[i].mapped);
        trace_free(&h.t);
    }
}

/* A segment grows in place: a request that does not fit the free tail maps
 * the pages after it, so three blocks of 15 + 15 + 10 MiB take 40 MiB
 * (the classic allocator opens segments of 16, 16 and 10 MiB). */
CHECK_TEST(expandable_grows_in_place)
{
    hand h;
    start(&h);
    a(&h, 0, 15 * MiB, 0);
    a(&h, 1, 15 * MiB, 0);
    a(&h, 2, 10 * MiB, 0);
    expect_eq(run(&h, BASELINE_PYTORCH_EXPANDABLE, 0).peak_reserved, 40 * MiB);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 42 * MiB);
    trace_free(&h.t);
}

/* When a map is refused, free whole pages are unmapped and the map
 * retried; a free part of a page stays mapped and cannot be given back. */
CHECK_TEST(expandable_unmaps_free_pages_when_refused)
{
    hand h;
    start(&h);
    a(&h, 0, 30 * MiB, 0);     /* maps 40 MiB */
    f(&h, 0);
    a(&h, 1, KiB, 0);          /* needs a small page: 42 > 40 until released */
    baseline_run r = run(&h, BASELINE_PYTORCH_EXPANDABLE, 40 * MiB);
    expect_eq(r.status, BASELINE_COMPLETED);
    expect_eq(r.peak_reserved, 40 * MiB);
    trace_free(&h.t);

    start(&h);
    a(&h, 0, 10 * MiB, 0);     /* one 20 MiB page: A 0-10, B 10-15, free 15-20 */
    a(&h, 1, 5 * MiB, 0);
    f(&h, 0);                  /* free 0-10: a part of a page only */
    a(&h, 2, KiB, 0);
    r = run(&h, BASELINE_PYTORCH_EXPANDABLE, 21 * MiB);
    expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
    expect_eq(r.failed_event, 3);
    r = run(&h, BASELINE_PYTORCH_EXPANDABLE, 22 * MiB);
    expect_eq(r.status, BASELINE_COMPLETED);
    trace_free(&h.t);
}

/* A range spans the device memory and an eighth more. On 200 MiB, after
 * A (30) + B (150) + C (20) fill it and A and C are freed, a 20 MiB request
 * passes over C, whose 40 MiB of unmapped range behind it could grow, and
 * takes the low end of A's block; the last 30 MiB then finds no room. With
 * a range of exactly 200 MiB, C would have no unmapped range behind it,
 * would be taken, and 30 MiB would fit in A's block. */
CHECK_TEST(expandable_range_is_memory_and_an_eighth)
{
    hand h;
    start(&h);
    a(&h, 0, 30 * MiB, 0);
    a(&h, 1, 150 * MiB, 0);
    a(&h, 2, 20 * MiB, 0);
    f(&h, 0);
    f(&h, 2);
    a(&h, 3, 20 * MiB, 0);
    a(&h, 4, 30 * MiB, 0);
    baseline_run r = run(&h, BASELINE_PYTORCH_EXPANDABLE, 200 * MiB);
    expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
    expect_eq(r.failed_event, 6);
    trace_free(&h.t);
}

/* Expandable keeps streams apart too, and splits any rest of 512 B. */
CHECK_TEST(expandable_streams_and_small_rests)
{
    hand h;
    start(&h);
    a(&h, 0, KiB, 0);
    a(&h, 1, KiB, 3);
    expect_eq(run(&h, BASELINE_PYTORCH_EXPANDABLE, 0).peak_reserved, 4 * MiB);
    trace_free(&h.t);
    start(&h);
    a(&h, 0, 20 * MiB - 2 * MiB, 0);
    a(&h, 1, 3 * MiB / 2, 0);  /* fits the 2 MiB rest of the first page */
    expect_eq(run(&h, BASELINE_PYTORCH_EXPANDABLE, 0).peak_reserved, 20 * MiB);
    trace_free(&h.t);
}

CHECK_TEST(expandable_fit_completes)
{
    hand h;
    start(&h);
    a(&h, 0, 30 * MiB, 0);
    f(&h, 0);
    a(&h, 1, KiB, 0);
    baseline_measure m;
    require_true(baseline_measure_run(BASELINE_PYTORCH_EXPANDABLE, &h.t, 0, true, 100, &m));
    expect_eq(m.run.peak_reserved, 42 * MiB);
    require_true(m.fit.found);
    expect_ge(m.fit.capacity, 30 * MiB);
    expect_le(m.fit.capacity, 42 * MiB);
    expect_eq(run(&h, BASELINE_PYTORCH_EXPANDABLE, m.fit.capacity).status, BASELINE_COMPLETED);
    expect_gt(m.run.samples.count, 0);
    baseline_measure_free(&m);
    trace_free(&h.t);
}

/* Requests no device holds fail as out of memory instead of wrapping. */
CHECK_TEST(huge_requests_run_out_of_memory)
{
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) {
        hand h;
        start(&h);
        a(&h, 0, KiB, 0);
        a(&h, 1, UINT64_MAX - 100, 0);
        baseline_run r = run(&h, (baseline_kind)k, 0);
        expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
        expect_eq(r.failed_event, 1);
        trace_free(&h.t);
    }
}

CHECK_MAIN()
