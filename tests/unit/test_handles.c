/*
 * test_handles.c — the life of a handle (docs/design.md §4, invariants 2 and 9), stale
 * and made-up handle values, and byte access through relo_write/relo_read.
 */
#include "check.h"
#include "fixture.h"
#include "mem/handle.h"
#include "testing/testing.h"

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

static bool every_call_not_found(fx *f, relo_handle h)
{
    relo_binding b;
    uint8_t byte = 0;
    return relo_resolve(f->s, h, &b) == RELO_ERR_NOT_FOUND && relo_retain(f->dev, h) == RELO_ERR_NOT_FOUND &&
           relo_read(f->dev, h, 0, &byte, 1) == RELO_ERR_NOT_FOUND &&
           relo_write(f->dev, h, 0, &byte, 1) == RELO_ERR_NOT_FOUND &&
           relo_release(f->dev, h) == RELO_ERR_NOT_FOUND;
}

/* A handle is bound to its device: device A's handle is NOT_FOUND on device
 * B, even where B holds an allocation in the same slot, and B's allocation
 * is untouched by the attempt. */
CHECK_TEST(handle_of_another_device_is_not_found)
{
    fx a, b;
    require_ok(fx_open(&a, NULL, NULL));
    require_ok(fx_open(&b, NULL, NULL));
    relo_handle ha = fx_reserve(a.s, 4096);
    relo_handle hb = fx_reserve(b.s, 4096);
    require_ne(ha.id, 0);
    require_ne(hb.id, 0);
    expect_ne(ha.id, hb.id);
    expect_ok(fx_fill(a.dev, ha, 0xA1, 4096));
    expect_ok(fx_fill(b.dev, hb, 0xB2, 4096));

    expect_true(every_call_not_found(&b, ha));
    expect_true(every_call_not_found(&a, hb));
    expect_eq(fx_stats(b.s).allocations, 1);
    expect_true(fx_all_bytes(b.dev, hb, 0xB2, 4096));
    expect_true(fx_all_bytes(a.dev, ha, 0xA1, 4096));

    expect_ok(relo_release(a.dev, ha));
    expect_ok(relo_release(b.dev, hb));
    fx_close(&b);
    fx_close(&a);
}

/* A device identity is recycled only forward: handles of destroyed devices
 * are NOT_FOUND on every later device, and no later device hands out the
 * same value, however many devices come and go. */
CHECK_TEST(handle_of_destroyed_device_never_returns)
{
    enum { ROUNDS = 64, PER = 4 };
    static uint64_t seen[ROUNDS * PER];
    size_t n = 0;
    for (int r = 0; r < ROUNDS; r++) {
        fx f;
        require_ok(fx_open_sim(&f, NULL, NULL));
        relo_handle h[PER];
        for (int i = 0; i < PER; i++) {
            h[i] = fx_reserve(f.s, 256);
            require_ne(h[i].id, 0);
        }
        /* Every handle of the devices before is stale here. */
        for (size_t k = 0; k < n; k++) {
            relo_handle old = {seen[k]};
            expect_true(every_call_not_found(&f, old));
            for (int i = 0; i < PER; i++) expect_ne(h[i].id, old.id);
        }
        expect_eq(fx_stats(f.s).allocations, PER);
        for (int i = 0; i < PER; i++) {
            seen[n++] = h[i].id;
            expect_ok(relo_release(f.dev, h[i]));
        }
        fx_close(&f);
    }
}

/* A slot whose generation runs out is retired, never wrapped: a handle of
 * the slot's first allocation stays NOT_FOUND after the slot has used every
 * generation, and the next reservations land elsewhere. (Reaching the end
 * by cycling takes 2^26 reserve/release pairs; a testing hook ages the free
 * slot instead.) */
CHECK_TEST(slot_at_end_of_generations_is_retired)
{
    fx f;
    require_ok(fx_open_sim(&f, NULL, NULL));
    relo_handle first = fx_reserve(f.s, 512);
    require_ne(first.id, 0);
    expect_ok(relo_release(f.dev, first));
    expect_eq(relo__testing_age_free_slots(f.dev, RELO_HANDLE_GEN_MAX), 1);

    relo_handle last = fx_reserve(f.s, 512); /* the slot's final generation */
    require_ne(last.id, 0);
    expect_ne(last.id, first.id);
    expect_ok(relo_release(f.dev, last));
    expect_eq(relo__testing_retired_slots(f.dev), 1);

    /* Many reuses after: neither old value ever names a live allocation. */
    for (int i = 0; i < 1000; i++) {
        relo_handle h = fx_reserve(f.s, 512);
        require_ne(h.id, 0);
        expect_ne(h.id, first.id);
        expect_ne(h.id, last.id);
        expect_true(every_call_not_found(&f, first));
        expect_true(every_call_not_found(&f, last));
        expect_eq(fx_stats(f.s).allocations, 1);
        expect_ok(relo_release(f.dev, h));
    }
    fx_close(&f);
}

CHECK_MAIN()
