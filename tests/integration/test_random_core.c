/*
 * test_random_core.c — random operations on one stream against a shadow
 * model: reserve (heavy-tailed sizes, 0 to 24 MiB), release, retain, write
 * and read back a pattern, mode windows, reclaim. The host backend lends
 * 192 MiB (live bytes kept under about 110 MiB), so pressure relocation and
 * refused pages happen.
 *
 * After every operation the stream's allocation count and bytes in use
 * equal the model's. After every relocation (a change in the device's
 * moved, relocated or abandoned counts), every reclaim and every refused
 * reservation (which cleans up and retries), every live allocation still
 * holds its pattern; every 50 operations (RELO_CHECK_EVERY) relo_device_check
 * passes and no two live allocations overlap. Released handles stay
 * NOT_FOUND. The stream's finish runs relo_device_check inside every
 * relocation pass, while the pass is open and waits for the device; each
 * must pass, and each run must make at least one such check. Each run
 * must move at least a set number of allocations (the
 * sizes ramp up so the arena keeps growing and leaving outdated pages), so
 * a library that stopped relocating fails here rather than passing with
 * nothing to check.
 *
 * RELO_SEED=n reproduces a run; the seed prints when a case fails.
 */
#include "check.h"
#include "fixture.h"
#include "shadow.h"

/* Heavy-tailed sizes: mostly small, a few large. The largest size ramps
 * from 3 MiB to 24 MiB over a run, so the arena grows through many page
 * sizes (each growth leaves an outdated pool to relocate) instead of
 * jumping to 25 MiB pages at the first large draw. The sizes stay modest
 * because the host backend fills every fresh and freed page: bytes, not
 * operations, set this test's time. */
static uint64_t random_size(uint64_t *rng, double progress)
{
    uint64_t top = 3 * MiB + (uint64_t)(progress * (double)(21 * MiB));
    uint64_t u = fx_rand(rng) % 1000;
    if (u < 10) return 0;
    if (u < 400) return fx_range(rng, 1, 4 * KiB);
    if (u < 700) return fx_range(rng, 4 * KiB, 256 * KiB);
    if (u < 900) return fx_range(rng, 256 * KiB, 2 * MiB);
    if (u < 950) return fx_range(rng, top / 2, top);
    return fx_range(rng, top - top / 8, top);
}

typedef struct run_stats {
    int reserves, oom, exhausted, releases, reclaims, verified;
} run_stats;

/* Every live allocation holds its pattern and the device's invariants
 * hold; called after every event that may have moved or freed memory. */
static void verify_all(const shadow *m, relo_device *dev, run_stats *rs)
{
    expect_eq(shadow_verify(m, dev), 0);
    expect_ok(relo_device_check(dev));
    rs->verified++;
}

/* ops random operations from seed; the run must move at least min_moved
 * allocations. */
static void run(uint64_t seed, int ops, relo_placement placement, uint64_t min_moved)
{
    printf("  seed %llu\n", (unsigned long long)seed);
    uint64_t rng = seed;
    relo_host_desc hd = fx_host();
    hd.capacity = 192 * MiB;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    fx f;
    require_ok(fx_open(&f, &hd, &dd));
    fx_pass_checks in_pass = {0};
    fx_check_in_passes(&in_pass, f.dev, f.s);
    shadow m = {0};
    run_stats rs = {0};
    int depth = 0;
    relo_stats dev = fx_dev_stats(f.dev);
    /* RELO_CHECK_EVERY=1 finds the first operation that breaks an invariant. */
    const char *every = getenv("RELO_CHECK_EVERY");
    int check_every = every && atoi(every) > 0 ? atoi(every) : 50;
    /* RELO_TRACE=1 prints every operation. */
    bool trace = getenv("RELO_TRACE") != NULL;

    for (int op = 0; op < ops; op++) {
        int failures = check_failures_;
        uint64_t r = fx_rand(&rng) % 100;
        uint64_t live = m.bytes[0];
        if (r < 40 && live > 110 * MiB) r = 50; /* keep live bytes bounded */
        bool cleaned = false;                   /* a reclaim or a refused reservation ran a cleanup */
        if (r >= 40 && r < 65 && m.n == 0) r = 0;

        if (r < 40) {
            uint64_t size = random_size(&rng, (double)op / ops);
            relo_handle h = {0};
            relo_status st = relo_reserve(f.s, size, &h);
            rs.reserves++;
            if (trace)
                fprintf(stderr, "%d: reserve %llu -> %s %#llx\n", op, (unsigned long long)size,
                        relo_status_name(st), (unsigned long long)h.id);
            if (st == RELO_OK) {
                shadow_add(&m, f.dev, h, size, 0);
            } else if (st == RELO_ERR_OUT_OF_MEMORY) {
                rs.oom++;
                cleaned = true;
            } else if (st == RELO_ERR_PAGE_SIZES_EXHAUSTED) {
                rs.exhausted++;
                cleaned = true;
            } else {
                fprintf(stderr, "reserve %llu: %s\n", (unsigned long long)size, relo_status_name(st));
                expect_ok(st);
            }
        } else if (r < 65) {
            size_t i = shadow_pick(&m, &rng);
            relo_handle h = m.a[i].h;
            if (trace)
                fprintf(stderr, "%d: release %#llx (%llu B, refs %u)\n", op, (unsigned long long)h.id,
                        (unsigned long long)m.a[i].size, m.a[i].refs);
            if (shadow_release(&m, f.dev, i)) {
                relo_binding b;
                expect_status(relo_resolve(f.s, h, &b), RELO_ERR_NOT_FOUND);
            }
            rs.releases++;
        } else if (r < 70) {
            if (m.n) {
                size_t i = shadow_pick(&m, &rng);
                expect_ok(relo_retain(f.dev, m.a[i].h));
                m.a[i].refs++;
            }
        } else if (r < 80) {
            if (m.n) {
                size_t i = shadow_pick(&m, &rng);
                shadow_rewrite(&m, f.dev, i);
                expect_true(fx_check_pattern(f.dev, m.a[i].h, m.a[i].key, m.a[i].size));
            }
        } else if (r < 85) {
            /* Windows are opened rarely and closed soon, so most
             * reservations reach the arena, whose growth leaves the
             * outdated pages relocation empties. */
            uint64_t coin = fx_rand(&rng) % 4;
            if (depth == 0 && coin != 0) {
                /* no window this time */
            } else if (depth > 0 && (depth >= 3 || coin != 0)) {
                expect_ok(relo_mode_pop(f.s));
                depth--;
                if (trace) fprintf(stderr, "%d: pop\n", op);
            } else {
                relo_mode mode = fx_rand(&rng) % 2 ? RELO_MODE_PERSISTENT : RELO_MODE_DEDICATED;
                expect_ok(relo_mode_push(f.s, mode));
                depth++;
                if (trace) fprintf(stderr, "%d: push %s\n", op, relo_mode_name(mode));
            }
        } else if (r < 88) {
            expect_ok(relo_reclaim(f.s));
            rs.reclaims++;
            cleaned = true;
            if (trace) fprintf(stderr, "%d: reclaim\n", op);
        } else if (r < 95) {
            shadow_check_stale(&m, f.s, f.dev, &rng);
        } else if (m.n) {
            size_t i = shadow_pick(&m, &rng);
            relo_binding b;
            expect_ok(relo_resolve(f.s, m.a[i].h, &b));
            expect_eq(b.size, m.a[i].size);
        }

        relo_stats st = fx_stats(f.s);
        expect_eq(st.allocations, m.count[0]);
        expect_eq(st.bytes_in_use, m.bytes[0]);
        relo_stats now = fx_dev_stats(f.dev);
        if (cleaned || now.allocations_moved != dev.allocations_moved || now.relocations != dev.relocations ||
            now.relocations_abandoned != dev.relocations_abandoned)
            verify_all(&m, f.dev, &rs);
        dev = now;
        if (op % check_every == check_every - 1) {
            expect_ok(relo_device_check(f.dev));
            shadow_check_layout(&m, f.s);
            shadow_check_all_stale(&m, f.s);
        }
        if (check_failures_ != failures) {
            fprintf(stderr, "first failure at operation %d (kind %llu), seed %llu\n", op,
                    (unsigned long long)r, (unsigned long long)seed);
            shadow_free(&m);
            return; /* leaves the device: the report matters more */
        }
    }

    expect_eq(shadow_verify(&m, f.dev), 0);
    relo_stats end = fx_dev_stats(f.dev);
    /* Relocation really ran: without it every check above has nothing to
     * catch. */
    expect_ge(end.allocations_moved, min_moved);
    expect_ge(end.relocations, 3);
    printf(
        "  seed %llu: %d reserves (%d refused by the device, %d page sizes exhausted), "
        "%d releases, %d reclaims, %llu relocations moving %llu allocations (at least %llu wanted), "
        "%llu abandoned, %d full verifications, peak reserved %llu MiB\n",
        (unsigned long long)seed, rs.reserves, rs.oom, rs.exhausted, rs.releases, rs.reclaims,
        (unsigned long long)end.relocations, (unsigned long long)end.allocations_moved,
        (unsigned long long)min_moved, (unsigned long long)end.relocations_abandoned, rs.verified,
        (unsigned long long)(end.peak_bytes_reserved / MiB));

    fx_expect_pass_checks(&in_pass, 1);
    while (depth-- > 0) expect_ok(relo_mode_pop(f.s));
    while (m.n) shadow_release(&m, f.dev, m.n - 1);
    expect_ok(relo_reclaim(f.s));
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 0);
    expect_eq(st.pages, 0);
    expect_eq(st.bytes_reserved, 0);
    shadow_free(&m);
    fx_close(&f);
}

/* The minimum moves of each case sit well under what a sweep of seeds gave
 * (fewest allocations moved: 59 in 18 seeds, 57 and 103 in 35), far above
 * the zero a library that does not relocate gives. */
CHECK_TEST(random_core_against_shadow_model)
{
    run(check_seed(), 2000, RELO_PLACEMENT_ADAPTIVE, 35);
}

/* A second, shorter run from a seed derived from the first, so one ctest
 * run covers two sequences. */
CHECK_TEST(random_core_second_sequence)
{
    run(check_seed() * 6364136223846793005u + 1442695040888963407u, 1500, RELO_PLACEMENT_ADAPTIVE, 25);
}

/* The packed placement also compacts current pages: more moves, same rules. */
CHECK_TEST(random_core_packed_placement)
{
    run(check_seed() ^ 0x5DEECE66Du, 1500, RELO_PLACEMENT_PACKED, 50);
}

CHECK_MAIN()
