/*
 * test_replay_robust.c — relo-replay's parts against hostile numbers: byte
 * counts with fractions that overflow a naive product, and page limits for
 * requests near 2^64, and a sweep that asks for too many replays.
 */
#include <stdint.h>

#include <string.h>

#include "check.h"
#include "progress.h"
#include "replay_backend.h"
#include "sweep.h"
#include "trace_reader.h"
#include "units.h"

CHECK_TEST(fractions_are_exact_or_refused)
{
    uint64_t v = 0;
    /* 0.017578125 = 9/512: exactly 18 GiB of a TiB. */
    expect_true(units_parse_bytes("0.017578125T", &v));
    expect_eq(v, 18ull << 30);
    /* Not a whole number of bytes; a product in 64 bits wraps to 2 GiB. */
    v = 0;
    expect_true(!units_parse_bytes("0.018730341T", &v));
    expect_eq(v, 0);
    /* Trailing zeros change nothing, however many. */
    expect_true(units_parse_bytes("1.500000000000000000000000G", &v));
    expect_eq(v, 3ull << 29);
    /* 2^-10 is exact; 2^-20 needs twenty digits, more than are read. */
    expect_true(units_parse_bytes("0.0009765625T", &v)); /* 2^-10 */
    expect_eq(v, 1ull << 30);
    expect_true(!units_parse_bytes("0.00000095367431640625T", &v));
    /* The largest value and one past it. */
    expect_true(units_parse_bytes("18446744073709551615", &v));
    expect_eq(v, UINT64_MAX);
    expect_true(!units_parse_bytes("16777215.9999999999999T", &v));
    expect_true(!units_parse_bytes("16777216T", &v));
    expect_true(units_parse_bytes("16777215.5T", &v));
    expect_eq(v, (16777215ull << 40) + (1ull << 39));
}

CHECK_TEST(page_limit_saturates_near_two_to_the_64)
{
    const uint64_t mib = 1ull << 20;
    expect_eq(replay_backend_max_page(4096), 0);
    expect_eq(replay_backend_max_page(3ull << 30), (3ull << 30) + 2 * mib);
    uint64_t top = UINT64_MAX / mib * mib;
    expect_eq(replay_backend_max_page(UINT64_MAX), top);
    expect_eq(replay_backend_max_page(UINT64_MAX - mib), top);
    /* Never below the request it is for, and never wrapped small. */
    for (uint64_t s = UINT64_MAX; s > UINT64_MAX - 8 * mib; s -= mib / 2)
        expect_ge(replay_backend_max_page(s), s - mib);
}

CHECK_TEST(progress_bar_fits_the_terminal)
{
    progress p;
    memset(&p, 0, sizeof p);
    snprintf(p.label, sizeof p.label, "fit try 3 of ~9, 112 MiB: transformer_train_growing");
    p.total = 1000;
    static const unsigned widths[] = {20, 40, 60, 80, 120, 300};
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++) {
        p.columns = widths[i];
        char line[512];
        size_t n = progress_format(&p, 500, line, sizeof line);
        expect_eq(n, strlen(line));
        expect_le(n, widths[i] > 30 ? widths[i] - 1 : 29);
        expect_true(strstr(line, " 50%") != NULL);
        if (widths[i] >= 40) expect_true(strstr(line, "fit try 3 of ~9") != NULL);
    }
}

CHECK_TEST(sweep_runs_at_most_its_limit_of_replays)
{
    static const char text[] = "a 1 100\nf 1\n";
    trace t;
    trace_error e;
    require_true(trace_read_buffer(text, sizeof text - 1, "sweep.trace", TRACE_FORMAT_RELO, &t, &e));
    replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.granule = 1;
    sweep_result r;
    /* Exactly the limit runs, every replay; one more runs none. */
    expect_true(sweep_run(&t, &cfg, 1ull << 30, (1ull << 30) + SWEEP_MAX_REPLAYS - 1, 1, &r));
    expect_eq(r.replays, SWEEP_MAX_REPLAYS);
    require_true(!sweep_run(&t, &cfg, 1ull << 30, (1ull << 30) + SWEEP_MAX_REPLAYS, 1, &r));
    expect_eq(r.replays, 0);
    expect_eq(r.status, RELO_ERR_INVALID_ARGUMENT);
    expect_true(strstr(r.error, "asks for 100001 replays, more than the 100000 a sweep runs") != NULL);
    /* About 10^12 replays: refused at once, and the count does not wrap. */
    expect_true(!sweep_run(&t, &cfg, 1, UINT64_MAX, 1, &r));
    expect_eq(r.replays, 0);
    trace_free(&t);
}

CHECK_MAIN()
