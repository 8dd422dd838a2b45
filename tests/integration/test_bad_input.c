/*
 * test_bad_input.c — docs/design.md invariants 2, 3 and 9, and the rest of the API's
 * misuse: sizes near 2^64, NULL for every required argument of every
 * public function, out-of-range enums and descriptors, double release,
 * stale handles, and destroying objects that still hold memory.
 */
#include <stddef.h>

#include "check.h"
#include "fixture.h"
#include "base/hostmem.h"
#include "mock_backend.h"
#include "testing/testing.h"

/* 48. relo_reserve with a size near 2^64 → BUFFER_TOO_BIG (no overflow in
 *     padding or page rounding), in every route and placement; nothing
 *     changes and the backend is never asked. */
CHECK_TEST(b48_sizes_near_2_64_too_big)
{
    const uint64_t sizes[] = {
        UINT64_MAX,           UINT64_MAX - 1,
        UINT64_MAX - 31,      UINT64_MAX - 32,
        UINT64_MAX - 1 * MiB, UINT64_MAX - 2 * MiB + 1,
        UINT64_C(1) << 63,    (UINT64_C(1) << 63) + 1 * MiB,
        UINT64_C(1) << 50,    128 * MiB + 1,
    };
    for (int placement = 0; placement < RELO_PLACEMENT_COUNT; placement++) {
        relo_device_desc dd;
        memset(&dd, 0, sizeof dd);
        dd.placement = (relo_placement)placement;
        fx f;
        require_ok(fx_open(&f, NULL, &dd));
        for (int mode = 0; mode < 3; mode++) {
            if (mode) expect_ok(relo_mode_push(f.s, mode == 1 ? RELO_MODE_PERSISTENT : RELO_MODE_DEDICATED));
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                relo_handle h = {12345};
                relo_status st = relo_reserve(f.s, sizes[i], &h);
                if (st != RELO_ERR_BUFFER_TOO_BIG)
                    fprintf(stderr, "placement %d mode %d size %llu: %s\n", placement, mode,
                            (unsigned long long)sizes[i], relo_status_name(st));
                expect_status(st, RELO_ERR_BUFFER_TOO_BIG);
                expect_eq(h.id, 12345); /* *out untouched on failure */
            }
            if (mode) expect_ok(relo_mode_pop(f.s));
        }
        relo_stats st = fx_stats(f.s);
        expect_eq(st.pages, 0);
        expect_eq(st.allocations, 0);
        expect_eq(fx_counts(&f).allocs, 0);
        expect_eq(relo__testing_page_size(f.s), 0);
        /* The largest size that fits still works afterwards. */
        relo_handle ok = fx_reserve(f.s, 128 * MiB);
        expect_ok(relo_release(f.dev, ok));
        fx_close(&f);
    }
}

/* 49. NULL for a required argument → INVALID_ARGUMENT, for every public
 *     function; the functions that cannot fail accept NULL as a no-op. */
CHECK_TEST(b49_null_device_and_stream_api)
{
    relo_backend *b = NULL;
    relo_host_desc hd = fx_host();
    require_ok(relo_backend_host_create(&hd, &b));
    relo_device *d = NULL;
    expect_status(relo_device_create(NULL, NULL, &d), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_device_create(NULL, b, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_true(d == NULL);
    /* Bad descriptors: the caller still owns the backend. */
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.relocation = RELO_RELOCATION_COUNT;
    expect_status(relo_device_create(&dd, b, &d), RELO_ERR_INVALID_ARGUMENT);
    memset(&dd, 0, sizeof dd);
    dd.placement = RELO_PLACEMENT_COUNT;
    expect_status(relo_device_create(&dd, b, &d), RELO_ERR_INVALID_ARGUMENT);
    expect_true(d == NULL);

    fx f;
    require_ok(fx_open_backend(&f, b, NULL));
    expect_status(relo_device_destroy(NULL), RELO_ERR_INVALID_ARGUMENT);
    relo_device_desc got;
    expect_status(relo_device_desc_get(NULL, &got), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_device_desc_get(f.dev, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_device_desc_get(f.dev, &got));
    expect_eq(got.capacity, 0);
    expect_eq(got.placement, RELO_PLACEMENT_PACKED); /* zero resolves to the default, packed */

    relo_stream *s = NULL;
    expect_status(relo_stream_create(NULL, NULL, &s), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_stream_create(f.dev, NULL, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_true(s == NULL);
    expect_status(relo_stream_destroy(NULL), RELO_ERR_INVALID_ARGUMENT);

    expect_status(relo_mode_push(NULL, RELO_MODE_PERSISTENT), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_mode_push(f.s, RELO_MODE_COUNT), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_mode_push(f.s, (relo_mode)-1), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_mode_pop(NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_mode_pop(f.s), RELO_ERR_INVALID_ARGUMENT);
    /* At most 64 windows. */
    for (int i = 0; i < 64; i++) expect_ok(relo_mode_push(f.s, RELO_MODE_PERSISTENT));
    expect_status(relo_mode_push(f.s, RELO_MODE_DEDICATED), RELO_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 64; i++) expect_ok(relo_mode_pop(f.s));
    expect_status(relo_mode_pop(f.s), RELO_ERR_INVALID_ARGUMENT);

    expect_status(relo_reclaim(NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_device_check(NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_true(relo_status_name((relo_status)999) != NULL);
    expect_true(relo_status_string((relo_status)-1) != NULL);
    expect_true(strcmp(relo_status_name(RELO_ERR_NOT_FOUND), "RELO_ERR_NOT_FOUND") == 0);
    expect_true(relo_mode_name((relo_mode)77) != NULL);
    fx_close(&f);
}

CHECK_TEST(b49_null_handle_api)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_handle h = fx_reserve(f.s, 64);
    uint8_t buf[8] = {0};
    relo_binding bd;
    expect_status(relo_reserve(NULL, 64, &h), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_reserve(f.s, 64, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_retain(NULL, h), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_release(NULL, h), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_resolve(NULL, h, &bd), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_resolve(f.s, h, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_write(NULL, h, 0, buf, 8), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_write(f.dev, h, 0, NULL, 8), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_read(NULL, h, 0, buf, 8), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_read(f.dev, h, 0, NULL, 8), RELO_ERR_INVALID_ARGUMENT);
    /* None of it touched the allocation. */
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 1);
    expect_eq(st.bytes_in_use, 64);
    expect_ok(relo_resolve(f.s, h, &bd));
    expect_ok(relo_release(f.dev, h));
    expect_eq(fx_stats(f.s).allocations, 0);
    fx_close(&f);
}

CHECK_TEST(b49_null_capture_and_stats_api)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_graph *g = NULL;
    expect_status(relo_capture_prepare(NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_capture_begin(NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_capture_end(NULL, &g), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_capture_prepare(f.s));
    expect_ok(relo_capture_begin(f.s));
    expect_status(relo_capture_end(f.s, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_capture_end(f.s, &g)); /* still recording after the NULL */
    relo_graph_destroy(g);
    relo_graph_destroy(NULL);

    relo_stats st;
    expect_status(relo_device_stats(NULL, &st), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_device_stats(f.dev, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_stream_stats(NULL, &st), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_stream_stats(f.s, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_stream_stats(f.s, &st));
    FILE *out = tmpfile();
    require_true(out != NULL);
    expect_status(relo_stats_print(NULL, out), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_stats_print(&st, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_stats_print(&st, out));
    expect_status(relo_device_report_json(NULL, out), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_device_report_json(f.dev, NULL), RELO_ERR_INVALID_ARGUMENT);
    fclose(out);
    fx_close(&f);
}

static relo_status no_alloc(void *c, uint64_t s, void **b, uint64_t *a)
{
    (void)c;
    (void)s;
    (void)b;
    (void)a;
    return RELO_ERR_OUT_OF_MEMORY;
}
static void no_free(void *c, void *b, uint64_t s)
{
    (void)c;
    (void)b;
    (void)s;
}
static relo_status no_wait(void *c)
{
    (void)c;
    return RELO_OK;
}
static relo_status no_copy(void *c, void *s, uint64_t so, void *d, uint64_t dof, uint64_t n)
{
    (void)c;
    (void)s;
    (void)so;
    (void)d;
    (void)dof;
    (void)n;
    return RELO_OK;
}

CHECK_TEST(b49_null_backend_api)
{
    relo_backend_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.alloc = no_alloc;
    ops.free = no_free;
    ops.wait_device = no_wait;
    ops.copy = no_copy;
    ops.wait_copies = no_wait;
    relo_backend_props props = {32, 128 * MiB, 0, 0};
    relo_backend *b = NULL;
    expect_status(relo_backend_create(NULL, NULL, &props, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_create(&ops, NULL, NULL, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_create(&ops, NULL, &props, NULL), RELO_ERR_INVALID_ARGUMENT);
    /* Each required op missing in turn. */
    for (int k = 0; k < 5; k++) {
        relo_backend_ops o = ops;
        if (k == 0) o.alloc = NULL;
        if (k == 1) o.free = NULL;
        if (k == 2) o.wait_device = NULL;
        if (k == 3) o.copy = NULL;
        if (k == 4) o.wait_copies = NULL;
        expect_status(relo_backend_create(&o, NULL, &props, &b), RELO_ERR_INVALID_ARGUMENT);
    }
    relo_backend_props bad = {0, 128 * MiB, 0, 0};
    expect_status(relo_backend_create(&ops, NULL, &bad, &b), RELO_ERR_INVALID_ARGUMENT);
    bad.alignment = 64;
    bad.max_page_size = 32;
    expect_status(relo_backend_create(&ops, NULL, &bad, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_true(b == NULL);
    require_ok(relo_backend_create(&ops, NULL, &props, &b));
    relo_backend_props got;
    expect_status(relo_backend_props_get(NULL, &got), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_props_get(b, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_backend_props_get(b, &got));
    expect_eq(got.max_page_size, 128 * MiB);
    /* Host-only calls refuse another kind of backend. */
    relo_host_counts c;
    relo_host_desc hd = fx_host();
    expect_status(relo_backend_host_counts(b, &c), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_set_faults(b, &hd), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(b);
    relo_backend_destroy(NULL);

    expect_status(relo_backend_host_create(&hd, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_sim_create(&hd, NULL), RELO_ERR_INVALID_ARGUMENT);
    relo_host_desc tiny = fx_host();
    tiny.max_page_size = 16; /* below the alignment */
    b = NULL;
    expect_status(relo_backend_host_create(&tiny, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_sim_create(&tiny, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_true(b == NULL);
    require_ok(relo_backend_host_create(NULL, &b)); /* NULL desc = defaults */
    expect_ok(relo_backend_props_get(b, &got));
    expect_eq(got.alignment, 64);
    expect_eq(got.max_page_size, 1 * GiB);
    expect_eq(got.capacity, 0);
    expect_status(relo_backend_host_counts(NULL, &c), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_counts(b, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_set_faults(NULL, &hd), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_set_faults(b, NULL), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(b);
}

/* 50. relo_device_destroy with a live allocation → BUSY, nothing freed;
 *     after release it succeeds. */
CHECK_TEST(b50_destroy_with_live_allocation_is_busy)
{
    static mock_ctx m;
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, NULL, &b));
    fx f;
    require_ok(fx_open_backend(&f, b, NULL));
    relo_handle h = fx_reserve(f.s, 1 * MiB);
    expect_ok(fx_fill(f.dev, h, 0x50, 1 * MiB));
    uint64_t frees = m.calls[MOCK_FREE];

    expect_status(relo_device_destroy(f.dev), RELO_ERR_BUSY);
    expect_status(relo_stream_destroy(f.s), RELO_ERR_BUSY);
    expect_eq(m.calls[MOCK_FREE], frees);
    expect_true(!m.destroyed);
    expect_eq(fx_stats(f.s).allocations, 1);
    expect_true(fx_all_bytes(f.dev, h, 0x50, 1 * MiB));

    expect_ok(relo_release(f.dev, h));
    expect_ok(relo_device_destroy(f.dev)); /* destroys the stream too */
    expect_true(m.destroyed);
    expect_eq(m.buffers_live, 0);
    expect_eq(m.bytes_held, 0);
}

/* relo_device_desc.size: 0 and sizeof(relo_device_desc) are this
 * version's size; a larger one (a caller built against a later relo.h) or
 * one smaller than the first version's is refused, leaving the backend with
 * the caller; relo_device_desc_get reports this version's size. A
 * placement out of range is refused too. */
CHECK_TEST(x_device_desc_size)
{
    relo_backend *b = NULL;
    relo_host_desc hd = fx_host();
    require_ok(relo_backend_host_create(&hd, &b));
    relo_device *d = NULL;
    relo_device_desc dd;
    const uint32_t refused[] = {(uint32_t)sizeof dd + 1,
                                (uint32_t)sizeof dd + 64,
                                UINT32_MAX,
                                (uint32_t)sizeof dd - 1,
                                (uint32_t)offsetof(relo_device_desc, page_free),
                                4,
                                1};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        memset(&dd, 0, sizeof dd);
        dd.size = refused[i];
        expect_status(relo_device_create(&dd, b, &d), RELO_ERR_INVALID_ARGUMENT);
        expect_true(d == NULL);
    }
    const relo_placement bad_placements[] = {RELO_PLACEMENT_COUNT, (relo_placement)99};
    for (size_t i = 0; i < sizeof bad_placements / sizeof bad_placements[0]; i++) {
        memset(&dd, 0, sizeof dd);
        dd.size = sizeof dd;
        dd.placement = bad_placements[i];
        expect_status(relo_device_create(&dd, b, &d), RELO_ERR_INVALID_ARGUMENT);
        expect_true(d == NULL);
    }
    /* This version's size, given or as 0: the desc is read whole. */
    const uint32_t sizes[] = {0, (uint32_t)sizeof dd};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memset(&dd, 0, sizeof dd);
        dd.size = sizes[i];
        dd.placement = RELO_PLACEMENT_ADAPTIVE;
        dd.cache_limit = 3 * MiB;
        dd.page_free = RELO_PAGE_FREE_INLINE;
        if (!b) require_ok(relo_backend_host_create(&hd, &b));
        require_ok(relo_device_create(&dd, b, &d));
        b = NULL; /* the device owns it now */
        relo_device_desc got;
        memset(&got, 0xAB, sizeof got);
        expect_ok(relo_device_desc_get(d, &got));
        expect_eq(got.size, sizeof got);
        expect_eq(got.placement, RELO_PLACEMENT_ADAPTIVE);
        expect_eq(got.cache_limit, 3 * MiB);
        expect_ok(relo_device_destroy(d));
        d = NULL;
    }
    /* No desc at all: the defaults, reported with this version's size. */
    require_ok(relo_backend_host_create(&hd, &b));
    require_ok(relo_device_create(NULL, b, &d));
    relo_device_desc got;
    memset(&got, 0, sizeof got);
    expect_ok(relo_device_desc_get(d, &got));
    expect_eq(got.size, sizeof got);
    expect_eq(got.placement, RELO_PLACEMENT_PACKED);
    expect_eq(got.cache_limit, RELO_CACHE_LIMIT_DEFAULT);
    expect_ok(relo_device_destroy(d));
}

/* Destroying a stream: BUSY while it records or a live allocation of it
 * exists, also when another stream holds the handle's only use. */
CHECK_TEST(x_stream_destroy_busy)
{
    fx f;
    require_ok(fx_open2(&f, NULL, NULL));
    relo_handle h = fx_reserve(f.s2, 100);
    (void)fx_bind(f.s, h); /* used on the other stream */
    expect_status(relo_stream_destroy(f.s2), RELO_ERR_BUSY);
    expect_ok(relo_release(f.dev, h));
    expect_ok(relo_capture_prepare(f.s2));
    expect_status(relo_stream_destroy(f.s2), RELO_ERR_BUSY);
    expect_ok(relo_capture_begin(f.s2));
    expect_status(relo_stream_destroy(f.s2), RELO_ERR_BUSY);
    relo_graph *g = NULL;
    expect_ok(relo_capture_end(f.s2, &g));
    relo_graph_destroy(g);
    expect_ok(relo_stream_destroy(f.s2));
    f.s2 = NULL;
    expect_eq(fx_dev_stats(f.dev).pages, fx_stats(f.s).pages);
    fx_close(&f);
}

/* Double release, release of a retained handle one time too many, and
 * stale handles after the slot was reused many times. */
CHECK_TEST(x_double_release_and_stale_handles)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_handle keep = fx_reserve(f.s, 256);
    relo_handle h = fx_reserve(f.s, 256);
    expect_ok(relo_retain(f.dev, h));
    expect_ok(relo_release(f.dev, h));
    expect_ok(relo_release(f.dev, h));
    expect_status(relo_release(f.dev, h), RELO_ERR_NOT_FOUND);
    expect_status(relo_release(f.dev, h), RELO_ERR_NOT_FOUND);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.allocations, 1);
    expect_eq(st.bytes_in_use, 256);

    /* Recycle slots: every old value stays stale, every new one is fresh. */
    enum { N = 200 };
    static relo_handle old[N];
    for (int i = 0; i < N; i++) {
        old[i] = fx_reserve(f.s, 64 + (uint64_t)i);
        expect_ok(relo_release(f.dev, old[i]));
    }
    relo_handle live[8];
    for (int i = 0; i < 8; i++) live[i] = fx_reserve(f.s, 64);
    for (int i = 0; i < N; i++) {
        relo_binding b;
        expect_status(relo_resolve(f.s, old[i], &b), RELO_ERR_NOT_FOUND);
        expect_status(relo_retain(f.dev, old[i]), RELO_ERR_NOT_FOUND);
        expect_status(relo_release(f.dev, old[i]), RELO_ERR_NOT_FOUND);
        for (int j = 0; j < 8; j++) expect_ne(old[i].id, live[j].id);
    }
    expect_eq(fx_stats(f.s).allocations, 9);
    for (int i = 0; i < 8; i++) expect_ok(relo_release(f.dev, live[i]));
    expect_ok(relo_release(f.dev, keep));
    expect_ok(relo_device_check(f.dev));
    fx_close(&f);
}

/* A handle from one device means nothing on another. */
CHECK_TEST(x_handle_from_another_device)
{
    fx f1, f2;
    require_ok(fx_open(&f1, NULL, NULL));
    require_ok(fx_open(&f2, NULL, NULL));
    relo_handle h = fx_reserve(f1.s, 100);
    relo_binding b;
    relo_status st = relo_resolve(f2.s, h, &b);
    expect_true(st == RELO_ERR_NOT_FOUND || st == RELO_ERR_INVALID_ARGUMENT);
    st = relo_release(f2.dev, h);
    expect_true(st == RELO_ERR_NOT_FOUND || st == RELO_ERR_INVALID_ARGUMENT);
    expect_eq(fx_stats(f1.s).allocations, 1);
    expect_ok(relo_release(f1.dev, h));
    fx_close(&f2);
    fx_close(&f1);
}

/* Host memory runs out at every point of a reservation in turn: each
 * failure is RELO_ERR_HOST_MEMORY with nothing changed, and the device
 * keeps working. */
CHECK_TEST(x_host_memory_failure_at_each_step)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    int failures = 0;
    for (uint64_t n = 1; n < 64; n++) {
        relo_stats before = fx_stats(f.s);
        relo_handle h = {0};
        relo__testing_hostmem_fail_at(n, 1);
        relo_status st = relo_reserve(f.s, 10 * MiB + n * 4096, &h);
        relo__testing_hostmem_fail_at(0, 0);
        if (st == RELO_OK) {
            expect_ok(relo_release(f.dev, h));
            break;
        }
        failures++;
        expect_status(st, RELO_ERR_HOST_MEMORY);
        relo_stats after = fx_stats(f.s);
        expect_eq(after.allocations, before.allocations);
        expect_eq(after.bytes_in_use, before.bytes_in_use);
        expect_ok(relo_device_check(f.dev));
    }
    expect_gt(failures, 0);
    expect_ok(relo_release(f.dev, a));
    fx_close(&f);
}

CHECK_MAIN()
