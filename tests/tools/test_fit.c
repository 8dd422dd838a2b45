/*
 * test_fit.c — the capacity search of relo-replay --fit (tools/fit.c) on
 * hand-made traces: on a device that charges buffers in granules it tries
 * multiples of the granule only and ends exactly, and on one that charges
 * plain bytes it keeps its tolerance.
 */
#include <string.h>

#include "check.h"
#include "fit.h"

#define MiB (UINT64_C(1) << 20)

/* Allocations of the given sizes, all live at once, then freed. */
static void all_live(trace *t, const uint64_t *sizes, uint32_t n)
{
    trace_init(t);
    trace_set_name_from_path(t, "hand.trace");
    uint16_t s = 0;
    trace_stream_index(t, 0, &s);
    for (uint32_t i = 0; i < n; i++) {
        trace_push(t, TRACE_ALLOC, i, s, sizes[i]);
        t->alloc_count++;
    }
    for (uint32_t i = 0; i < n; i++) trace_push(t, TRACE_FREE, i, s, sizes[i]);
}

static replay_config sim_config(uint64_t granule)
{
    replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = REPLAY_BACKEND_SIM;
    cfg.granule = granule;
    cfg.placement = RELO_PLACEMENT_PACKED;
    return cfg;
}

CHECK_TEST(steps_by_the_granule_of_the_sim_and_host_backends)
{
    replay_config cfg = sim_config(2 * MiB);
    expect_eq(fit_capacity_step(&cfg), 2 * MiB);
    cfg.backend = REPLAY_BACKEND_HOST;
    expect_eq(fit_capacity_step(&cfg), 2 * MiB);
    cfg.backend = REPLAY_BACKEND_OPENCL; /* its driver's rounding is not known */
    expect_eq(fit_capacity_step(&cfg), 1);
    cfg = sim_config(0); /* the backend's own default: not known here */
    expect_eq(fit_capacity_step(&cfg), 1);
}

CHECK_TEST(granule_device_fit_is_the_fewest_granules_exactly)
{
    /* 1 MiB takes a 2 MiB page of the fine pool, 3 MiB a page of its own
     * of 4 MiB: 6 MiB of granules for 4 MiB live, not a byte less. */
    static const uint64_t sizes[] = {MiB, 3 * MiB};
    trace t;
    all_live(&t, sizes, 2);
    expect_eq(t.peak_live_bytes, 4 * MiB);
    replay_config cfg = sim_config(2 * MiB);
    fit_result fit;
    require_true(fit_search(&t, &cfg, 64 * MiB, &fit));
    expect_eq(fit.capacity, 6 * MiB);
    expect_eq(fit.failed_below, 4 * MiB);
    trace_free(&t);
}

CHECK_TEST(granule_device_fit_that_peak_live_rounds_to_takes_one_replay)
{
    static const uint64_t sizes[] = {3 * MiB};
    trace t;
    all_live(&t, sizes, 1);
    replay_config cfg = sim_config(2 * MiB);
    fit_result fit;
    require_true(fit_search(&t, &cfg, 64 * MiB, &fit));
    expect_eq(fit.capacity, 4 * MiB);
    expect_eq(fit.failed_below, 0);
    expect_eq(fit.replays, 1);
    trace_free(&t);
}

CHECK_TEST(byte_device_fit_is_within_the_tolerance)
{
    static const uint64_t sizes[] = {MiB, 3 * MiB};
    trace t;
    all_live(&t, sizes, 2);
    replay_config cfg = sim_config(1);
    fit_result fit;
    require_true(fit_search(&t, &cfg, 64 * MiB, &fit));
    expect_gt(fit.failed_below, 0);
    expect_lt(fit.failed_below, fit.capacity);
    expect_true((double)(fit.capacity - fit.failed_below) <= (double)fit.failed_below * FIT_TOLERANCE);
    trace_free(&t);
}

CHECK_MAIN()
