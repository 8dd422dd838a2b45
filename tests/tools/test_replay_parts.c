/*
 * test_replay_parts.c — relo-replay's pieces that need no trace: byte-count
 * parsing, the bounded sampler, and the command line.
 */
#include <string.h>

#include "check.h"
#include "options.h"
#include "samples.h"
#include "units.h"

CHECK_TEST(parses_byte_counts)
{
    uint64_t v = 0;
    expect_true(units_parse_bytes("4096", &v));
    expect_eq(v, 4096);
    expect_true(units_parse_bytes("24M", &v));
    expect_eq(v, 24ull << 20);
    expect_true(units_parse_bytes("24MiB", &v));
    expect_eq(v, 24ull << 20);
    expect_true(units_parse_bytes("1.5GiB", &v));
    expect_eq(v, 3ull << 29);
    expect_true(units_parse_bytes("2k", &v));
    expect_eq(v, 2048);
    expect_true(units_parse_bytes("1T", &v));
    expect_eq(v, 1ull << 40);
    expect_true(units_parse_bytes("100B", &v));
    expect_eq(v, 100);
    expect_true(!units_parse_bytes("", &v));
    expect_true(!units_parse_bytes("M", &v));
    expect_true(!units_parse_bytes("12Q", &v));
    expect_true(!units_parse_bytes("-1", &v));
    expect_true(!units_parse_bytes("0.5", &v)); /* half a byte */
    expect_true(!units_parse_bytes("99999999999999999999", &v));
    expect_true(!units_parse_bytes("16777216T", &v)); /* 2^64 */
}

CHECK_TEST(formats_byte_counts)
{
    char buf[32];
    expect_true(strcmp(units_format_bytes(100, buf, sizeof buf), "100 B") == 0);
    expect_true(strcmp(units_format_bytes(5723951104ull, buf, sizeof buf), "5.33 GiB") == 0);
    expect_true(strcmp(units_format_bytes(97968144ull, buf, sizeof buf), "93.4 MiB") == 0);
}

CHECK_TEST(sampler_keeps_bounded_real_moments)
{
    sampler s;
    require_true(sampler_init(&s, 100000, 2000));
    uint64_t peak = 0, peak_event = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t live = (i * 7919) % 10007, reserved = live + (i % 13);
        if (live > peak) {
            peak = live;
            peak_event = i;
        }
        sampler_add(&s, i, live, reserved, i % 5);
        if (i % 1000 == 0) sampler_relocation(&s, 1);
    }
    sampler_finish(&s);
    expect_le(s.count, 2000);
    expect_ge(s.count, 1000);
    uint64_t seen_peak = 0, relocations = 0;
    for (size_t k = 0; k < s.count; k++) {
        const sample *p = &s.points[k];
        expect_ge(p->reserved, p->live);
        expect_ge(p->reserved_max, p->reserved);
        if (k) expect_gt(p->event, s.points[k - 1].event);
        if (p->live > seen_peak) seen_peak = p->live;
        relocations += p->relocations;
    }
    expect_eq(seen_peak, peak);
    expect_eq(relocations, 100);
    (void)peak_event;
    sampler_free(&s);
}

CHECK_TEST(sampler_with_few_events_keeps_each)
{
    sampler s;
    require_true(sampler_init(&s, 3, 2000));
    sampler_add(&s, 0, 1, 2, 0);
    sampler_add(&s, 1, 5, 6, 0);
    sampler_add(&s, 2, 0, 6, 0);
    sampler_finish(&s);
    expect_eq(s.count, 3);
    sampler_free(&s);
}

CHECK_TEST(parses_options)
{
    char *argv[] = {"relo-replay",    "--backend",     "host",   "a.trace",
                    "--capacity=24M", "--cache-limit", "never",  "--no-relocation",
                    "--placement",    "packed",        "--json", "b.trace",
                    "--svg",          "x.svg",         NULL};
    options o;
    require_eq(options_parse(14, argv, &o), OPTIONS_RUN);
    expect_eq(o.backend, REPLAY_BACKEND_HOST);
    expect_eq(o.capacity, 24ull << 20);
    expect_eq(o.cache_limit, RELO_CACHE_LIMIT_NEVER);
    expect_eq(o.relocation, RELO_RELOCATION_OFF);
    expect_eq(o.placement, RELO_PLACEMENT_PACKED);
    expect_true(o.json);
    expect_true(!o.fit);
    expect_eq(o.trace_count, 2);
    expect_true(strcmp(o.traces[0], "a.trace") == 0);
    expect_true(strcmp(o.traces[1], "b.trace") == 0);
    expect_true(strcmp(o.svg, "x.svg") == 0);

    char *auto_argv[] = {"relo-replay", "--capacity", "auto", "t", NULL};
    require_eq(options_parse(4, auto_argv, &o), OPTIONS_RUN);
    expect_true(o.capacity_auto);
    expect_true(o.fit);

    char *bad1[] = {"relo-replay", "--backend", "gpu", "t", NULL};
    expect_eq(options_parse(4, bad1, &o), OPTIONS_EXIT_USAGE);
    char *bad2[] = {"relo-replay", "--capacity", "lots", "t", NULL};
    expect_eq(options_parse(4, bad2, &o), OPTIONS_EXIT_USAGE);
    char *bad3[] = {"relo-replay", "--json", NULL};
    expect_eq(options_parse(2, bad3, &o), OPTIONS_EXIT_USAGE);
    char *bad4[] = {"relo-replay", "--svg", NULL};
    expect_eq(options_parse(2, bad4, &o), OPTIONS_EXIT_USAGE);
    char *bad5[] = {"relo-replay", "--frobnicate", "t", NULL};
    expect_eq(options_parse(3, bad5, &o), OPTIONS_EXIT_USAGE);
}

CHECK_MAIN()
