/*
 * test_hold_bound.c — the floors of relo-bound (tools/hold_bound.c) on
 * hand-made traces whose answers can be worked out by hand: how many
 * troughs an allocator with K buffers must hold through, what a granule
 * costs, and that grouping events in blocks only ever lowers a floor.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "hold_bound.h"

#define MiB (UINT64_C(1) << 20)

/* `cycles` times: one allocation of `size`, then its free. */
static void cycles_of(trace *t, uint32_t cycles, uint64_t size)
{
    trace_init(t);
    trace_set_name_from_path(t, "cycles.trace");
    uint16_t s = 0;
    trace_stream_index(t, 0, &s);
    for (uint32_t i = 0; i < cycles; i++) {
        trace_push(t, TRACE_ALLOC, i, s, size);
        trace_push(t, TRACE_FREE, i, s, size);
        t->alloc_count++;
    }
}

static bool near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

CHECK_TEST(each_buffer_short_of_one_per_cycle_holds_through_a_trough)
{
    /* Live after each event: 10, 0, 10, 0, 10, 0, 10, 0 (sum 40). With k
     * buffers the peaks fall in k runs, and each run holds its peak through
     * the troughs inside it: 4 - k troughs of 10. */
    trace t;
    cycles_of(&t, 4, 10);
    hold_bound b;
    require_true(hold_bound_init(&b, &t, 1, 64));
    expect_true(near(hold_bound_time_floor(&b), 1.0));
    expect_true(near(hold_bound_fit_floor(&b), 1.0));
    static const double want[] = {0, 1.75, 1.5, 1.25, 1.0, 1.0};
    for (uint64_t k = 1; k <= 5; k++) {
        hold_bound_result r;
        require_true(hold_bound_search(&b, k, 1.0, &r));
        expect_true(near(r.floor_at_allocs, want[k]));
        expect_eq(r.fewest_allocs, 4);
    }
    hold_bound_result r;
    require_true(hold_bound_search(&b, 1, 1.5, &r));
    expect_eq(r.fewest_allocs, 2);
    hold_bound_free(&b);
    trace_free(&t);
}

CHECK_TEST(the_granule_rounds_every_event_up)
{
    /* One byte live, then none: a 2 MiB device holds a granule for it. */
    trace t;
    cycles_of(&t, 1, 1);
    hold_bound b;
    require_true(hold_bound_init(&b, &t, 2 * MiB, 64));
    expect_true(near(hold_bound_fit_floor(&b), (double)(2 * MiB)));
    expect_true(near(hold_bound_time_floor(&b), (double)(2 * MiB)));
    hold_bound_result r;
    require_true(hold_bound_search(&b, 1, 1.10, &r));
    expect_true(near(r.floor_at_allocs, (double)(2 * MiB)));
    expect_eq(r.fewest_allocs, 0); /* no allocator gets within 1.10 */
    hold_bound_free(&b);
    trace_free(&t);
}

CHECK_TEST(blocks_only_lower_the_floor)
{
    /* Cycles of growing size, so that blocks merge unlike events. */
    trace t;
    trace_init(&t);
    trace_set_name_from_path(&t, "growing.trace");
    uint16_t s = 0;
    trace_stream_index(&t, 0, &s);
    for (uint32_t i = 0; i < 40; i++) {
        uint64_t size = 3 * MiB + (uint64_t)(i % 7) * MiB;
        trace_push(&t, TRACE_ALLOC, 2 * i, s, size);
        trace_push(&t, TRACE_ALLOC, 2 * i + 1, s, MiB);
        trace_push(&t, TRACE_FREE, 2 * i, s, size);
        t.alloc_count += 2;
    }
    hold_bound fine, coarse;
    require_true(hold_bound_init(&fine, &t, 2 * MiB, 1000));
    require_true(hold_bound_init(&coarse, &t, 2 * MiB, 7));
    expect_eq(fine.events_per_block, 1);
    expect_gt(coarse.events_per_block, 1);
    for (uint64_t k = 1; k <= 12; k += 3) {
        hold_bound_result f, c;
        require_true(hold_bound_search(&fine, k, 1.2, &f));
        require_true(hold_bound_search(&coarse, k, 1.2, &c));
        expect_le(c.floor_at_allocs, f.floor_at_allocs + 1e-12);
        expect_ge(f.floor_at_allocs, hold_bound_time_floor(&fine) - 1e-12);
    }
    hold_bound_free(&fine);
    hold_bound_free(&coarse);
    trace_free(&t);
}

CHECK_MAIN()
