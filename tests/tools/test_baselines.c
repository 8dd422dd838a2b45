/*
 * test_baselines.c — the PyTorch allocator models (tools/torch_classic.c,
 * tools/torch_expandable.c) on small traces written by hand, one rule per
 * case, and the ordered set beneath them. The models are checked against
 * their Python oracles on the shared traces by baseline_oracles.py.
 */
#include <stdbool.h>
#include <string.h>

#include "baseline.h"
#include "check.h"
#include "sorted_index.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* A hand-made trace: events appended with a() and f(), or from steps. */
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

/* One event of a trace written as a list: the next allocation (numbered
 * 0, 1, … in the order written) of size bytes on a stream, or the free of
 * allocation `id`. */
typedef struct step {
    bool free;
    uint32_t id;
    uint64_t size;
    uint64_t stream;
} step;

#define A(size)             \
    {                       \
        false, 0, (size), 0 \
    }
#define A_ON(size, stream)         \
    {                              \
        false, 0, (size), (stream) \
    }
#define F(id)            \
    {                    \
        true, (id), 0, 0 \
    }
/* The steps given, then their count: the last two arguments of play(). */
#define STEPS(...) (const step[]){__VA_ARGS__}, sizeof((const step[]){__VA_ARGS__}) / sizeof(step)

/* Starts h over and appends the n steps. */
static void write_steps(hand *h, const step *st, size_t n)
{
    start(h);
    uint32_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (st[i].free)
            f(h, st[i].id);
        else
            a(h, next++, st[i].size, st[i].stream);
    }
}

/* Replays h through k at capacity; returns the run (timeline freed). */
static baseline_run run(hand *h, baseline_kind k, uint64_t capacity)
{
    baseline_run r;
    baseline_replay(k, &h->t, capacity, 0, &r);
    baseline_run_free(&r);
    return r;
}

/* Replays the n steps through k at capacity (0 = unlimited). */
static baseline_run play(baseline_kind k, uint64_t capacity, const step *st, size_t n)
{
    hand h;
    write_steps(&h, st, n);
    baseline_run r = run(&h, k, capacity);
    trace_free(&h.t);
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
    expect_eq(s.v[0].id, 9); /* (10,2) */
    expect_eq(s.v[1].id, 8); /* (10,5) */
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
    /* 2048 × 700 B and 4096 × 1 B both round to 2 MiB. */
    static const struct {
        uint64_t size;
        uint32_t fill;
    } cases[] = {{700, 2048}, {1, 4096}};
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) {
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            hand h;
            start(&h);
            for (uint32_t i = 0; i < cases[c].fill; i++) a(&h, i, cases[c].size, 0);
            expect_eq(run(&h, (baseline_kind)k, 0).peak_reserved, 2 * MiB);
            a(&h, cases[c].fill, cases[c].size, 0);
            expect_eq(run(&h, (baseline_kind)k, 0).peak_reserved, 4 * MiB);
            trace_free(&h.t);
        }
    }
}

CHECK_TEST(classic_segment_sizes)
{
    static const struct {
        uint64_t size, segment;
    } cases[] = {
        {1, 2 * MiB},        /* small pool */
        {MiB, 2 * MiB},      /* still small */
        {MiB + 1, 20 * MiB}, /* large pool, under 10 MiB */
        {10 * MiB - 512, 20 * MiB},
        {10 * MiB, 10 * MiB}, /* 10 MiB and above: rounded to 2 MiB */
        {11 * MiB + 1, 12 * MiB},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        baseline_run r = play(BASELINE_PYTORCH, 0, STEPS(A(cases[i].size)));
        expect_eq(r.status, BASELINE_COMPLETED);
        expect_eq(r.peak_reserved, cases[i].segment);
        expect_eq(r.peak_live, cases[i].size);
    }
}

/* A large-pool rest is split off only when it is over 1 MiB. A 3 MiB
 * request in a free 4 MiB block keeps the 1 MiB rest inside its block, so
 * when the block after it is freed (4 MiB) a 5 MiB request does not fit
 * there and opens a second segment. */
CHECK_TEST(classic_splits_large_rest_over_1_mib)
{
    /* 4 + 4 + 12 fill the 20 MiB segment; 3 MiB takes the free first 4 MiB
     * and its 1 MiB rest stays inside. */
    expect_eq(play(BASELINE_PYTORCH, 0,
                   STEPS(A(4 * MiB), A(4 * MiB), A(12 * MiB), F(0), A(3 * MiB), F(1), A(5 * MiB)))
                  .peak_reserved,
              40 * MiB);
    /* A rest of 1 MiB + 512 B is split off, and merges with the next. */
    expect_eq(play(BASELINE_PYTORCH, 0,
                   STEPS(A(4 * MiB), A(4 * MiB), A(12 * MiB), F(0), A(3 * MiB - 512), F(1), A(5 * MiB)))
                  .peak_reserved,
              20 * MiB);
}

CHECK_TEST(classic_keeps_streams_apart)
{
    expect_eq(play(BASELINE_PYTORCH, 0, STEPS(A(KiB), A_ON(KiB, 7))).peak_reserved, 4 * MiB);
}

/* Freed neighbours merge: after freeing two adjacent 5 MiB blocks, a
 * 10 MiB request fits the 20 MiB segment. */
CHECK_TEST(classic_merges_free_neighbours)
{
    expect_eq(play(BASELINE_PYTORCH, 0, STEPS(A(5 * MiB), A(5 * MiB), A(5 * MiB), F(0), F(1), A(9 * MiB)))
                  .peak_reserved,
              20 * MiB);
}

/* Best fit: of free blocks of 6 and 4 MiB, a 4 MiB request takes the 4, so
 * a following 6 MiB one still fits. */
CHECK_TEST(classic_takes_best_fit)
{
    /* The last 8 MiB fills the segment. */
    expect_eq(play(BASELINE_PYTORCH, 0,
                   STEPS(A(6 * MiB), A(2 * MiB), A(4 * MiB), A(8 * MiB), F(0), F(2), A(4 * MiB), A(6 * MiB)))
                  .peak_reserved,
              20 * MiB);
}

/* Under a capacity, wholly free segments are returned and the request
 * retried; a segment still in use is not. */
CHECK_TEST(classic_releases_free_segments_when_refused)
{
    hand h;
    write_steps(&h, STEPS(A(12 * MiB), F(0), A(16 * MiB)));
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

    r = play(BASELINE_PYTORCH, 20 * MiB, STEPS(A(12 * MiB), A(16 * MiB)));
    expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
    expect_eq(r.failed_event, 1);
}

CHECK_TEST(classic_fit_lies_within_tolerance)
{
    hand h;
    write_steps(&h, STEPS(A(12 * MiB), F(0), A(16 * MiB)));
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
    static const struct {
        uint64_t size, mapped;
    } cases[] = {
        {1, 2 * MiB}, {MiB, 2 * MiB}, {MiB + 1, 20 * MiB}, {10 * MiB, 20 * MiB}, {25 * MiB, 40 * MiB},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        expect_eq(play(BASELINE_PYTORCH_EXPANDABLE, 0, STEPS(A(cases[i].size))).peak_reserved,
                  cases[i].mapped);
}

/* A segment grows in place: a request that does not fit the free tail maps
 * the pages after it, so three blocks of 15 + 15 + 10 MiB take 40 MiB
 * (the classic allocator opens segments of 16, 16 and 10 MiB). */
CHECK_TEST(expandable_grows_in_place)
{
    hand h;
    write_steps(&h, STEPS(A(15 * MiB), A(15 * MiB), A(10 * MiB)));
    expect_eq(run(&h, BASELINE_PYTORCH_EXPANDABLE, 0).peak_reserved, 40 * MiB);
    expect_eq(run(&h, BASELINE_PYTORCH, 0).peak_reserved, 42 * MiB);
    trace_free(&h.t);
}

/* When a map is refused, free whole pages are unmapped and the map
 * retried; a free part of a page stays mapped and cannot be given back. */
CHECK_TEST(expandable_unmaps_free_pages_when_refused)
{
    /* 30 MiB maps 40; then 1 KiB needs a small page: 42 > 40 until released. */
    baseline_run r = play(BASELINE_PYTORCH_EXPANDABLE, 40 * MiB, STEPS(A(30 * MiB), F(0), A(KiB)));
    expect_eq(r.status, BASELINE_COMPLETED);
    expect_eq(r.peak_reserved, 40 * MiB);

    /* One 20 MiB page: A 0-10, B 10-15, free 15-20; then A's 0-10 is freed,
     * a part of a page only. */
    hand h;
    write_steps(&h, STEPS(A(10 * MiB), A(5 * MiB), F(0), A(KiB)));
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
    baseline_run r = play(BASELINE_PYTORCH_EXPANDABLE, 200 * MiB,
                          STEPS(A(30 * MiB), A(150 * MiB), A(20 * MiB), F(0), F(2), A(20 * MiB),
                                A(30 * MiB)));
    expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
    expect_eq(r.failed_event, 6);
}

/* Expandable keeps streams apart too, and splits any rest of 512 B. */
CHECK_TEST(expandable_streams_and_small_rests)
{
    expect_eq(play(BASELINE_PYTORCH_EXPANDABLE, 0, STEPS(A(KiB), A_ON(KiB, 3))).peak_reserved, 4 * MiB);
    /* 1.5 MiB fits the 2 MiB rest of the first page. */
    expect_eq(
        play(BASELINE_PYTORCH_EXPANDABLE, 0, STEPS(A(20 * MiB - 2 * MiB), A(3 * MiB / 2))).peak_reserved,
        20 * MiB);
}

CHECK_TEST(expandable_fit_completes)
{
    hand h;
    write_steps(&h, STEPS(A(30 * MiB), F(0), A(KiB)));
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
        baseline_run r = play((baseline_kind)k, 0, STEPS(A(KiB), A(UINT64_MAX - 100)));
        expect_eq(r.status, BASELINE_OUT_OF_MEMORY);
        expect_eq(r.failed_event, 1);
    }
}

CHECK_MAIN()
