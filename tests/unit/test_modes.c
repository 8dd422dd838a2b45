/*
 * test_modes.c — mode windows (docs/design.md §3.2–3.4; PERSISTENT,
 * DEDICATED) route around dynamic memory, dedicated buffers go back at the
 * next cleanup, and the exclusive placement reuses whole pages.
 */
#include "check.h"
#include "fixture.h"
#include "testing/testing.h"

/* 21. Push PERSISTENT twice, pop once, reserve 1 KiB → the persistent pool
 *     holds 1024 B in use; dynamic pools hold no page. Pop again, reserve
 *     1 KiB → the dynamic pools hold one page. A persistent slice is its own
 *     buffer of exactly the padded size, so the stream holds 1024 B of pages
 *     and nothing else. */
CHECK_TEST(b21_nested_persistent_windows)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    expect_ok(relo_mode_push(f.s, RELO_MODE_PERSISTENT));
    expect_ok(relo_mode_push(f.s, RELO_MODE_PERSISTENT));
    expect_ok(relo_mode_pop(f.s));
    relo_handle p = fx_reserve(f.s, 1024);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 1);
    expect_eq(st.bytes_in_use, 1024);
    expect_eq(st.pages, 1);
    expect_eq(st.bytes_reserved, 1024);
    expect_eq(relo__testing_page_size(f.s), 0);

    expect_ok(relo_mode_pop(f.s));
    expect_status(relo_mode_pop(f.s), RELO_ERR_INVALID_ARGUMENT); /* none open */
    relo_handle d = fx_reserve(f.s, 1024);
    st = fx_stats(f.s);
    expect_eq(st.allocations, 2);
    expect_eq(st.bytes_in_use, 2048);
    expect_eq(st.pages, 2);
    expect_eq(st.bytes_reserved, 1024 + 8 * MiB); /* one small-pool page */
    expect_true(fx_bind(f.s, p).buffer != fx_bind(f.s, d).buffer);
    expect_ok(relo_release(f.dev, p));
    expect_ok(relo_release(f.dev, d));
    fx_close(&f);
}

/* 22. After 1 MiB dynamic, a 100 MiB PERSISTENT reservation and a 200 MiB
 *     DEDICATED one leave the arena at 2 MiB pages, 1 page, nothing
 *     outdated.
 *
 *     A 200 MiB buffer is larger than the default 128 MiB max page, which
 *     the backend contract forbids asking for; the behaviour reads as both
 *     reservations succeeding, so this device allows 256 MiB buffers. */
CHECK_TEST(b22_persistent_and_dedicated_bypass_arena)
{
    relo_host_desc hd = fx_host();
    hd.max_page_size = 256 * MiB;
    fx f;
    require_ok(fx_open(&f, &hd, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    expect_ok(relo_mode_push(f.s, RELO_MODE_PERSISTENT));
    relo_handle p = fx_reserve(f.s, 100 * MiB);
    expect_ok(relo_mode_pop(f.s));
    expect_ok(relo_mode_push(f.s, RELO_MODE_DEDICATED));
    relo_handle d = fx_reserve(f.s, 200 * MiB);
    expect_ok(relo_mode_pop(f.s));

    expect_eq(relo__testing_page_size(f.s), 2 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 1);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.pages, 3); /* arena page, persistent buffer, dedicated buffer */
    expect_eq(st.bytes_reserved, 2 * MiB + 100 * MiB + 200 * MiB);
    expect_eq(st.bytes_in_use, 301 * MiB);
    void *arena_page = fx_bind(f.s, a).buffer;
    expect_true(fx_bind(f.s, p).buffer != arena_page);
    expect_true(fx_bind(f.s, d).buffer != arena_page);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, p));
    expect_ok(relo_release(f.dev, d));
    fx_close(&f);
}

/* 23. A released DEDICATED allocation goes back to the backend at the next
 *     cleanup; a live one does not. The cleanup is the periodic one before a
 *     reservation that needs a page (the stream's first small one). */
CHECK_TEST(b23_dedicated_returns_at_next_cleanup)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    expect_ok(relo_mode_push(f.s, RELO_MODE_DEDICATED));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    relo_handle b = fx_reserve(f.s, 3 * MiB);
    expect_ok(relo_mode_pop(f.s));
    expect_ok(fx_fill(f.dev, b, 0x5B, 3 * MiB));
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 2);
    expect_eq(st.bytes_reserved, 4 * MiB);
    expect_eq(fx_counts(&f).frees, 0);

    expect_ok(relo_release(f.dev, a));
    relo_handle c = fx_reserve(f.s, 100);
    expect_eq(fx_counts(&f).frees, 1);
    st = fx_stats(f.s);
    expect_eq(st.pages, 2); /* b's buffer and the small-pool page */
    expect_eq(st.bytes_reserved, 3 * MiB + 8 * MiB);
    expect_true(fx_all_bytes(f.dev, b, 0x5B, 3 * MiB));

    /* An explicit cleanup too leaves the live one alone. */
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_counts(&f).frees, 1);
    expect_true(fx_all_bytes(f.dev, b, 0x5B, 3 * MiB));
    expect_ok(relo_release(f.dev, b));
    expect_ok(relo_release(f.dev, c));
    fx_close(&f);
}

/* 24. EXCLUSIVE layout, alignment 10: 50/150/250/350 → 800 B in use; five
 *     sizes 1000·i released and reserved again → same count, in-use and
 *     reserved (the whole pages are reused). */
CHECK_TEST(b24_exclusive_layout_reuses_pages)
{
    relo_host_desc hd = fx_host();
    hd.alignment = 10;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = RELO_PLACEMENT_EXCLUSIVE;
    fx f;
    require_ok(fx_open(&f, &hd, &dd));
    const uint64_t small[] = {50, 150, 250, 350};
    relo_handle s4[4];
    for (int i = 0; i < 4; i++) s4[i] = fx_reserve(f.s, small[i]);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 4);
    expect_eq(st.bytes_in_use, 800);

    relo_handle h[5];
    for (int i = 0; i < 5; i++) h[i] = fx_reserve(f.s, 1000 * (uint64_t)(i + 1));
    relo_stats first = fx_stats(f.s);
    expect_eq(first.allocations, 9);
    expect_eq(first.bytes_in_use, 800 + 15000);
    uint64_t allocs = fx_counts(&f).allocs;

    for (int i = 0; i < 5; i++) expect_ok(relo_release(f.dev, h[i]));
    for (int i = 0; i < 5; i++) h[i] = fx_reserve(f.s, 1000 * (uint64_t)(i + 1));
    relo_stats again = fx_stats(f.s);
    expect_eq(again.allocations, first.allocations);
    expect_eq(again.bytes_in_use, first.bytes_in_use);
    expect_eq(again.bytes_reserved, first.bytes_reserved);
    expect_eq(again.pages, first.pages);
    expect_eq(fx_counts(&f).allocs, allocs);
    /* Nothing is ever outdated in this layout. */
    expect_eq(again.outdated_pages, 0);

    for (int i = 0; i < 5; i++) expect_ok(relo_release(f.dev, h[i]));
    for (int i = 0; i < 4; i++) expect_ok(relo_release(f.dev, s4[i]));
    fx_close(&f);
}

/* Size 0 in every mode: served, resolves with size 0, and the device's
 * invariants hold before and after its release and a cleanup. (Found by
 * test_random_core: a size-0 DEDICATED allocation, once released, left a
 * page whose slices did not cover it.) */
CHECK_TEST(x_size_zero_in_every_mode)
{
    const relo_mode modes[] = {RELO_MODE_AUTO, RELO_MODE_PERSISTENT, RELO_MODE_DEDICATED};
    for (int i = 0; i < 3; i++) {
        int failures = check_failures_;
        fx f;
        require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
        if (modes[i] != RELO_MODE_AUTO) expect_ok(relo_mode_push(f.s, modes[i]));
        relo_handle z = fx_reserve(f.s, 0);
        require_ne(z.id, 0);
        expect_eq(fx_bind(f.s, z).size, 0);
        relo_handle other = fx_reserve(f.s, 100);
        if (modes[i] != RELO_MODE_AUTO) expect_ok(relo_mode_pop(f.s));
        expect_ok(relo_device_check(f.dev));
        expect_ok(relo_release(f.dev, z));
        expect_ok(relo_device_check(f.dev));
        relo_handle next = fx_reserve(f.s, 1 * MiB); /* a periodic cleanup */
        expect_ok(relo_device_check(f.dev));
        expect_ok(relo_release(f.dev, other));
        expect_ok(relo_release(f.dev, next));
        expect_ok(relo_reclaim(f.s));
        expect_ok(relo_device_check(f.dev));
        expect_eq(fx_stats(f.s).pages, 0);
        if (check_failures_ != failures) fprintf(stderr, "  (mode %s)\n", relo_mode_name(modes[i]));
        fx_close(&f);
    }
}

/* A reservation the backend refuses runs an explicit cleanup and retries
 * once (design §5): a persistent buffer freed earlier stays cached until
 * an explicit cleanup, and only that cleanup makes room for the retry.
 * Under both placements. */
CHECK_TEST(x_refused_reservation_cleans_up_and_retries)
{
    static const relo_placement placements[] = {RELO_PLACEMENT_ADAPTIVE, RELO_PLACEMENT_PACKED};
    for (size_t i = 0; i < sizeof placements / sizeof placements[0]; i++) {
        relo_host_desc hd = fx_host();
        hd.capacity = 16 * MiB;
        relo_device_desc dd = {.placement = placements[i]};
        fx f;
        require_ok(fx_open(&f, &hd, &dd));
        expect_ok(relo_mode_push(f.s, RELO_MODE_PERSISTENT));
        relo_handle w = fx_reserve(f.s, 10 * MiB);
        expect_ok(relo_mode_pop(f.s));
        expect_ok(relo_release(f.dev, w));
        expect_eq(fx_stats(f.s).bytes_reserved, 10 * MiB); /* cached, not given back */
        expect_eq(fx_counts(&f).frees, 0);
        relo_handle a;
        expect_ok(relo_reserve(f.s, 8 * MiB, &a)); /* refused once, then served */
        expect_eq(fx_counts(&f).frees, 1);
        expect_ok(relo_device_check(f.dev));
        expect_ok(relo_release(f.dev, a));
        if (check_failures_ != 0) fprintf(stderr, "  (placement %s)\n", relo_placement_name(placements[i]));
        fx_close(&f);
    }
}

CHECK_MAIN()
