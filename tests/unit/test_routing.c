/*
 * test_routing.c — which pool serves a size (docs/design.md §3.5–3.6)
 * under the ADAPTIVE layout, the pages it takes, how the arena's page size
 * grows, and what a refused or too-big request leaves behind.
 *
 * Page sizes the public API cannot show come from relo__testing_page_size
 * (the arena's current page size) and relo__testing_arena_pools.
 */
#include "check.h"
#include "fixture.h"
#include "testing/testing.h"

/* 5. 100 B → 1 allocation, 100 B in use, 8 MiB reserved (one small-pool
 *    page); release and reserve 100 B again → the same figures. */
CHECK_TEST(b05_small_pool_100_bytes)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle h = fx_reserve(f.s, 100);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 1);
    expect_eq(st.bytes_in_use, 100);
    expect_eq(st.bytes_reserved, 8 * MiB);
    expect_eq(st.pages, 1);
    expect_eq(relo__testing_page_size(f.s), 0); /* the arena made no pool */

    expect_ok(relo_release(f.dev, h));
    h = fx_reserve(f.s, 100);
    st = fx_stats(f.s);
    expect_eq(st.allocations, 1);
    expect_eq(st.bytes_in_use, 100);
    expect_eq(st.bytes_reserved, 8 * MiB);
    expect_eq(st.pages, 1);
    expect_ok(relo_release(f.dev, h));
    fx_close(&f);
}

/* 6. Two 512 B → 2 allocations, 1024 B in use, 8 MiB reserved. */
CHECK_TEST(b06_two_small_share_a_page)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 512), b = fx_reserve(f.s, 512);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 2);
    expect_eq(st.bytes_in_use, 1024);
    expect_eq(st.bytes_reserved, 8 * MiB);
    expect_eq(st.pages, 1);
    expect_true(fx_bind(f.s, a).buffer == fx_bind(f.s, b).buffer);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 7. Two 1.5 MiB → 4 MiB reserved (two 2 MiB arena pages). */
CHECK_TEST(b07_two_arena_pages)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 3 * MiB / 2), b = fx_reserve(f.s, 3 * MiB / 2);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.bytes_reserved, 4 * MiB);
    expect_eq(st.pages, 2);
    expect_eq(st.outdated_pages, 0);
    expect_eq(relo__testing_page_size(f.s), 2 * MiB);
    expect_true(fx_bind(f.s, a).buffer != fx_bind(f.s, b).buffer);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 8. Alignment 50: two 40 B → 20 B of padding in total. */
CHECK_TEST(b08_padding_alignment_50)
{
    relo_host_desc hd = fx_host();
    hd.alignment = 50;
    fx f;
    require_ok(fx_open(&f, &hd, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 40), b = fx_reserve(f.s, 40);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 2);
    expect_eq(st.bytes_in_use, 80);
    expect_eq(st.bytes_padding, 20);
    /* Offsets are multiples of the alignment. */
    expect_eq(fx_bind(f.s, a).offset % 50, 0);
    expect_eq(fx_bind(f.s, b).offset % 50, 0);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    expect_eq(fx_stats(f.s).bytes_padding, 0);
    fx_close(&f);
}

/* 9. 4096 B and 4 MiB → different pools; reserved = 8 MiB + 5 MiB. */
CHECK_TEST(b09_small_and_arena_pools)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 4096), b = fx_reserve(f.s, 4 * MiB);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.bytes_reserved, 8 * MiB + 5 * MiB);
    expect_eq(st.pages, 2);
    expect_eq(st.outdated_pages, 0);
    /* The arena's first pool was made for the 4 MiB: 4 + 1 MiB pages. */
    expect_eq(relo__testing_page_size(f.s), 5 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 1);
    expect_true(fx_bind(f.s, a).buffer != fx_bind(f.s, b).buffer);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 10. 128 KiB reserved and released, then 512 KiB → 2 MiB reserved,
 *     1 allocation (same page). */
CHECK_TEST(b10_arena_page_reused)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 128 * KiB);
    void *page = fx_bind(f.s, a).buffer;
    expect_eq(relo__testing_page_size(f.s), 2 * MiB);
    expect_ok(relo_release(f.dev, a));
    relo_handle b = fx_reserve(f.s, 512 * KiB);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.bytes_reserved, 2 * MiB);
    expect_eq(st.allocations, 1);
    expect_eq(st.pages, 1);
    expect_true(fx_bind(f.s, b).buffer == page);
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 11. 50, 1000, 100, 5000, 200, 10000, 300, all released, then the first
 *     three again → reserved after ≤ 1.1 × before. */
CHECK_TEST(b11_small_sizes_reuse_room)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    const uint64_t sizes[] = {50, 1000, 100, 5000, 200, 10000, 300};
    relo_handle h[7];
    for (int i = 0; i < 7; i++) h[i] = fx_reserve(f.s, sizes[i]);
    uint64_t before = fx_stats(f.s).bytes_reserved;
    expect_eq(before, 8 * MiB);
    for (int i = 0; i < 7; i++) expect_ok(relo_release(f.dev, h[i]));
    for (int i = 0; i < 3; i++) h[i] = fx_reserve(f.s, sizes[i]);
    relo_stats st = fx_stats(f.s);
    expect_le(st.bytes_reserved * 10, before * 11);
    expect_eq(st.allocations, 3);
    expect_eq(st.bytes_in_use, 1150);
    for (int i = 0; i < 3; i++) expect_ok(relo_release(f.dev, h[i]));
    fx_close(&f);
}

/* 12. 7 MiB (close to the small pool's 8 MiB page) is served by the arena,
 *     not the small pool. Both would take an 8 MiB page, so reserved bytes
 *     alone cannot tell: the arena's page size and pool count can. */
CHECK_TEST(b12_7mib_goes_to_arena)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 7 * MiB);
    expect_eq(relo__testing_page_size(f.s), 8 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 1);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.bytes_reserved, 8 * MiB);
    /* A small reservation then takes a page of its own (the small pool's),
     * not the 1 MiB left on the arena page. */
    relo_handle b = fx_reserve(f.s, 100);
    expect_true(fx_bind(f.s, a).buffer != fx_bind(f.s, b).buffer);
    expect_eq(fx_stats(f.s).bytes_reserved, 16 * MiB);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 13. 1 MiB → 2 MiB pages; 10 MiB → 11 MiB; 6 MiB → stays 11 MiB. */
CHECK_TEST(b13_page_size_grows_never_shrinks)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    expect_eq(relo__testing_page_size(f.s), 0);
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    expect_eq(relo__testing_page_size(f.s), 2 * MiB);
    relo_handle b = fx_reserve(f.s, 10 * MiB);
    expect_eq(relo__testing_page_size(f.s), 11 * MiB);
    relo_handle c = fx_reserve(f.s, 6 * MiB);
    expect_eq(relo__testing_page_size(f.s), 11 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 2);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    expect_ok(relo_release(f.dev, c));
    fx_close(&f);
}

/* 14. Max page 16 MiB: 16 MiB → 16 MiB pages; 16 MiB + 1 → BUFFER_TOO_BIG. */
CHECK_TEST(b14_max_page_16mib)
{
    relo_host_desc hd = fx_host();
    hd.max_page_size = 16 * MiB;
    fx f;
    require_ok(fx_open(&f, &hd, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 16 * MiB);
    expect_eq(relo__testing_page_size(f.s), 16 * MiB);
    relo_stats before = fx_stats(f.s);
    relo_handle b = {0};
    expect_status(relo_reserve(f.s, 16 * MiB + 1, &b), RELO_ERR_BUFFER_TOO_BIG);
    expect_eq(b.id, 0);
    relo_stats after = fx_stats(f.s);
    expect_eq(after.pages, before.pages);
    expect_eq(after.bytes_reserved, 16 * MiB);
    expect_eq(relo__testing_page_size(f.s), 16 * MiB);
    expect_ok(relo_release(f.dev, a));
    fx_close(&f);
}

/* 15. After one 1 MiB, 2^50 B → BUFFER_TOO_BIG; still 2 MiB pages, 1 page,
 *     nothing outdated; the next 1 MiB comes from the page held. */
CHECK_TEST(b15_too_big_changes_nothing)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    void *page = fx_bind(f.s, a).buffer;
    uint64_t allocs = fx_counts(&f).allocs;
    relo_handle big = {0};
    expect_status(relo_reserve(f.s, UINT64_C(1) << 50, &big), RELO_ERR_BUFFER_TOO_BIG);
    expect_eq(big.id, 0);
    expect_eq(relo__testing_page_size(f.s), 2 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 1);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.outdated_pages, 0);
    expect_eq(fx_counts(&f).allocs, allocs); /* never retried, never asked */

    relo_handle b = fx_reserve(f.s, 1 * MiB);
    expect_true(fx_bind(f.s, b).buffer == page);
    expect_eq(fx_stats(f.s).pages, 1);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 16. 1 MiB then 10 MiB → 11 MiB pages, 2 pages held, 1 outdated; a
 *     further 1 MiB lands on the 11 MiB page, not the outdated one. */
CHECK_TEST(b16_outdated_pool_serves_nothing)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    relo_handle b = fx_reserve(f.s, 10 * MiB);
    expect_eq(relo__testing_page_size(f.s), 11 * MiB);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 2);
    expect_eq(st.outdated_pages, 1);
    expect_eq(st.bytes_outdated, 2 * MiB);
    expect_eq(st.bytes_reserved, 13 * MiB);

    relo_handle c = fx_reserve(f.s, 1 * MiB);
    expect_true(fx_bind(f.s, c).buffer == fx_bind(f.s, b).buffer);
    expect_true(fx_bind(f.s, c).buffer != fx_bind(f.s, a).buffer);
    expect_eq(fx_stats(f.s).pages, 2);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    expect_ok(relo_release(f.dev, c));
    fx_close(&f);
}

/* 17. 1 MiB (kept) and 10 MiB; release the 1 MiB; reserve 1 MiB → 1 page
 *     held, nothing outdated (the emptied outdated page went back at the
 *     periodic cleanup). */
CHECK_TEST(b17_emptied_outdated_page_goes_back)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    relo_handle b = fx_reserve(f.s, 10 * MiB);
    expect_ok(relo_release(f.dev, a));
    relo_handle c = fx_reserve(f.s, 1 * MiB);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.bytes_reserved, 11 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 1);
    expect_eq(fx_counts(&f).frees, 1);
    expect_ok(relo_release(f.dev, b));
    expect_ok(relo_release(f.dev, c));
    fx_close(&f);
}

/* 18. A backend refusing buffers above 8 MiB: after 1 MiB, 10 MiB →
 *     OUT_OF_MEMORY; page size still 2 MiB, nothing outdated; the next
 *     1 MiB comes from the page held. */
CHECK_TEST(b18_refused_growth_changes_nothing)
{
    relo_host_desc hd = fx_host();
    hd.refuse_alloc_above = 8 * MiB;
    fx f;
    require_ok(fx_open(&f, &hd, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    void *page = fx_bind(f.s, a).buffer;
    relo_handle big = {0};
    expect_status(relo_reserve(f.s, 10 * MiB, &big), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(big.id, 0);
    expect_eq(relo__testing_page_size(f.s), 2 * MiB);
    expect_eq(relo__testing_arena_pools(f.s), 1);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.allocations, 1);

    relo_handle b = fx_reserve(f.s, 1 * MiB);
    expect_true(fx_bind(f.s, b).buffer == page);
    expect_eq(fx_stats(f.s).pages, 1);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* 19. Max page 1 GiB: (3 + 2k) MiB for k = 0, 1, … kept until all 64 arena
 *     slots hold a pool; the next, larger reservation (200 MiB) succeeds
 *     because an ARENA_FULL relocation moves the allocation of every
 *     outdated pool into the current pool and frees their slots. One move
 *     per outdated pool that held an allocation.
 *
 *     Each (3 + 2k) MiB exceeds the current (2 + 2k) MiB page, so each one
 *     grows the arena to (4 + 2k) MiB pages: k = 0…63 fill the 64 slots
 *     (4…130 MiB pages, about 4.2 GiB live, 4 GiB moved).
 *
 *     This case runs on the sim backend. On the host backend it took 55 s
 *     and 9.8 GiB of resident memory on the 2-core CI machine, nearly all
 *     in the host backend's fill of fresh and freed buffers and in page
 *     faults, not in relo. The bytes a relocation moves are checked by
 *     test_relocation, test_random_core and test_random_reloc instead. */
CHECK_TEST(b19_arena_full_relocation_frees_slots)
{
    relo_host_desc hd = fx_host();
    hd.max_page_size = 1 * GiB;
    fx f;
    require_ok(fx_open_sim(&f, &hd, FX_ADAPTIVE));
    enum { K = 64 };
    relo_handle h[K];
    for (int k = 0; k < K; k++) {
        h[k] = fx_reserve(f.s, (uint64_t)(3 + 2 * k) * MiB);
        require_ne(h[k].id, 0);
        expect_eq(relo__testing_page_size(f.s), (uint64_t)(4 + 2 * k) * MiB);
    }
    expect_eq(relo__testing_arena_pools(f.s), 64);
    relo_stats before = fx_stats(f.s);
    expect_eq(before.outdated_pages, 63);
    expect_eq(before.allocations_moved, 0);
    expect_eq(relo__testing_trigger(f.s), RELO_REASON_ARENA_FULL);
    relo_binding first = fx_bind(f.s, h[0]);

    relo_handle big = {0};
    expect_ok(relo_reserve(f.s, 200 * MiB, &big));
    expect_eq(relo__testing_last_reason(f.dev), RELO_REASON_ARENA_FULL);
    relo_stats st = fx_dev_stats(f.dev);
    expect_eq(st.allocations_moved, 63);
    expect_eq(st.relocations, 1);
    expect_eq(st.relocations_abandoned, 0);
    expect_eq(st.bytes_moved, (uint64_t)(63 * 3 + 2 * (62 * 63 / 2)) * MiB);
    expect_eq(st.allocations, 65);
    /* The 130 MiB pool (now outdated, holding all 64) and the 201 MiB one. */
    expect_eq(relo__testing_arena_pools(f.s), 2);
    expect_eq(relo__testing_page_size(f.s), 201 * MiB);
    expect_true(fx_bind(f.s, h[0]).buffer != first.buffer);
    /* Everything now lives on 130 MiB pages, outdated by the 201 MiB pool. */
    relo_stats ss = fx_stats(f.s);
    expect_eq(ss.bytes_outdated % (130 * MiB), 0);
    expect_ge(ss.bytes_outdated, 4224 * MiB);
    expect_eq(ss.bytes_reserved, ss.bytes_outdated + 201 * MiB);
    expect_ok(relo_device_check(f.dev));
    for (int k = 0; k < K; k++) expect_ok(relo_release(f.dev, h[k]));
    expect_ok(relo_release(f.dev, big));
    fx_close(&f);
}

/* 20. Size 0 → served by the tiny pool, resolves with size 0, never placed
 *     on a sliced page: the arena makes no pool, each size-0 allocation has
 *     a page of its own (exclusive: one slice per page), and none shares a
 *     page with a small-pool allocation. */
CHECK_TEST(b20_size_zero_tiny_pool)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle z1 = fx_reserve(f.s, 0), z2 = fx_reserve(f.s, 0);
    require_ne(z1.id, 0);
    require_ne(z2.id, 0);
    expect_ne(z1.id, z2.id);
    relo_binding b1 = fx_bind(f.s, z1), b2 = fx_bind(f.s, z2);
    expect_eq(b1.size, 0);
    expect_eq(b2.size, 0);
    expect_true(b1.buffer != NULL);
    expect_true(b1.buffer != b2.buffer);
    expect_eq(relo__testing_page_size(f.s), 0);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 2);
    expect_eq(st.bytes_in_use, 0);
    expect_eq(st.pages, 2);

    relo_handle small = fx_reserve(f.s, 32);
    relo_binding bs = fx_bind(f.s, small);
    expect_true(bs.buffer != b1.buffer && bs.buffer != b2.buffer);
    /* Reading or writing zero bytes of it is fine; one byte is not. */
    uint8_t x = 0;
    expect_status(relo_read(f.dev, z1, 0, &x, 1), RELO_ERR_OUT_OF_RANGE);

    expect_ok(relo_release(f.dev, z1));
    expect_ok(relo_release(f.dev, z2));
    expect_ok(relo_release(f.dev, small));
    fx_close(&f);
}

CHECK_MAIN()
