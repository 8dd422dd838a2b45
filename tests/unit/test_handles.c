/*
 * test_handles.c — acceptance behaviours 1–4: the life of a handle, stale
 * and made-up handle values, and byte access through relo_write/relo_read.
 */
#include "check.h"
#include "fixture.h"

/* 1. A reserved handle resolves; after release the same value gives
 *    NOT_FOUND, also after its slice was reused by another reservation. */
CHECK_TEST(b01_released_handle_is_stale_even_after_reuse)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_handle h = fx_reserve(f.s, 1000);
    require_ne(h.id, 0);
    relo_binding first = fx_bind(f.s, h);
    expect_eq(first.size, 1000);
    expect_true(first.buffer != NULL);

    expect_ok(relo_release(f.dev, h));
    relo_binding b;
    expect_status(relo_resolve(f.s, h, &b), RELO_ERR_NOT_FOUND);

    /* The same size lands on the freed slice (lowest address first fit). */
    relo_handle again = fx_reserve(f.s, 1000);
    require_ne(again.id, 0);
    expect_ne(again.id, h.id);
    relo_binding second = fx_bind(f.s, again);
    expect_true(fx_same_place(first, second));

    expect_status(relo_resolve(f.s, h, &b), RELO_ERR_NOT_FOUND);
    uint8_t byte = 0;
    expect_status(relo_read(f.dev, h, 0, &byte, 1), RELO_ERR_NOT_FOUND);
    expect_status(relo_write(f.dev, h, 0, &byte, 1), RELO_ERR_NOT_FOUND);
    expect_status(relo_retain(f.dev, h), RELO_ERR_NOT_FOUND);
    expect_status(relo_release(f.dev, h), RELO_ERR_NOT_FOUND);
    /* The stale calls did not touch the new owner of the slice. */
    expect_eq(fx_stats(f.s).allocations, 1);
    expect_ok(relo_resolve(f.s, again, &b));

    expect_ok(relo_release(f.dev, again));
    fx_close(&f);
}

/* 2. retain then one release: still resolves; a second release frees it. */
CHECK_TEST(b02_retain_adds_an_owner)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_handle h = fx_reserve(f.s, 4096);
    require_ne(h.id, 0);
    expect_ok(relo_retain(f.dev, h));
    expect_ok(relo_release(f.dev, h));

    relo_binding b;
    expect_ok(relo_resolve(f.s, h, &b));
    expect_eq(b.size, 4096);
    expect_eq(fx_stats(f.s).allocations, 1);
    expect_eq(fx_stats(f.s).bytes_in_use, 4096);

    expect_ok(relo_release(f.dev, h));
    expect_status(relo_resolve(f.s, h, &b), RELO_ERR_NOT_FOUND);
    expect_eq(fx_stats(f.s).allocations, 0);
    expect_eq(fx_stats(f.s).bytes_in_use, 0);
    fx_close(&f);
}

static bool not_found_or_invalid(relo_status st)
{
    return st == RELO_ERR_NOT_FOUND || st == RELO_ERR_INVALID_ARGUMENT;
}

/* 3. Handle 0 and made-up values give NOT_FOUND (or INVALID_ARGUMENT)
 *    from every call that takes a handle, and never crash. */
CHECK_TEST(b03_zero_and_made_up_handles)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    /* One live allocation, so made-up values have something to collide
     * with; none of them is its value. */
    relo_handle live = fx_reserve(f.s, 256);
    require_ne(live.id, 0);
    expect_ok(fx_fill(f.dev, live, 0x3C, 256));

    const uint64_t values[] = {
        0,
        1,
        0xDEADBEEFu,
        UINT64_MAX,
        UINT64_C(0x8000000000000000),
        live.id + 1,
        live.id ^ (UINT64_C(1) << 40),
        live.id ^ (UINT64_C(1) << 63),
        live.id ^ UINT64_C(0xFFFFFFFF00000000),
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        relo_handle h = {values[i]};
        if (h.id == live.id) continue;
        relo_binding b;
        uint8_t buf[4] = {1, 2, 3, 4};
        expect_true(not_found_or_invalid(relo_resolve(f.s, h, &b)));
        expect_true(not_found_or_invalid(relo_retain(f.dev, h)));
        expect_true(not_found_or_invalid(relo_release(f.dev, h)));
        expect_true(not_found_or_invalid(relo_read(f.dev, h, 0, buf, 4)));
        expect_true(not_found_or_invalid(relo_write(f.dev, h, 0, buf, 4)));
    }
    /* The live allocation is untouched. */
    expect_eq(fx_stats(f.s).allocations, 1);
    expect_true(fx_all_bytes(f.dev, live, 0x3C, 256));
    expect_ok(relo_release(f.dev, live));
    fx_close(&f);
}

/* 4. Bytes written read back; a read or write past the size is refused
 *    and changes nothing. */
CHECK_TEST(b04_write_read_and_bounds)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    enum { N = 1000 };
    relo_handle h = fx_reserve(f.s, N);
    require_ne(h.id, 0);

    uint8_t in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (uint8_t)(i * 7 + 3);
    expect_ok(relo_write(f.dev, h, 0, in, N));
    memset(out, 0, N);
    expect_ok(relo_read(f.dev, h, 0, out, N));
    expect_true(memcmp(in, out, N) == 0);

    /* A partial range inside. */
    expect_ok(relo_read(f.dev, h, 990, out, 10));
    expect_true(memcmp(out, in + 990, 10) == 0);

    /* Past the end, by one byte and by far (offsets that overflow). */
    uint8_t junk[32];
    memset(junk, 0xEE, sizeof junk);
    expect_status(relo_write(f.dev, h, 990, junk, 11), RELO_ERR_OUT_OF_RANGE);
    expect_status(relo_write(f.dev, h, N, junk, 1), RELO_ERR_OUT_OF_RANGE);
    expect_status(relo_write(f.dev, h, UINT64_MAX, junk, 2), RELO_ERR_OUT_OF_RANGE);
    expect_status(relo_write(f.dev, h, 1, junk, UINT64_MAX), RELO_ERR_OUT_OF_RANGE);

    uint8_t probe[32];
    memset(probe, 0x11, sizeof probe);
    expect_status(relo_read(f.dev, h, 990, probe, 11), RELO_ERR_OUT_OF_RANGE);
    expect_status(relo_read(f.dev, h, UINT64_MAX - 4, probe, 8), RELO_ERR_OUT_OF_RANGE);
    expect_status(relo_read(f.dev, h, 8, probe, UINT64_MAX - 4), RELO_ERR_OUT_OF_RANGE);
    /* A refused read leaves the destination alone. */
    for (size_t i = 0; i < sizeof probe; i++) expect_eq(probe[i], 0x11);

    /* Nothing the refused writes carried landed. */
    memset(out, 0, N);
    expect_ok(relo_read(f.dev, h, 0, out, N));
    expect_true(memcmp(in, out, N) == 0);

    expect_ok(relo_release(f.dev, h));
    fx_close(&f);
}

CHECK_MAIN()
