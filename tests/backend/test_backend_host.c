/*
 * test_backend_host.c — the host and simulated backends driven directly
 * through their ops, without a device: fill patterns, capacity, every kind
 * of fault injection, call counts, distinct sim addresses, and the two
 * public queries refusing a backend of another kind.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"

#define MiB (UINT64_C(1) << 20)
#define KiB (UINT64_C(1) << 10)

static relo_backend *make_host(const relo_host_desc *desc)
{
    relo_backend *b = NULL;
    if (relo_backend_host_create(desc, &b) != RELO_OK) return NULL;
    return b;
}

static relo_backend *make_sim(const relo_host_desc *desc)
{
    relo_backend *b = NULL;
    if (relo_backend_sim_create(desc, &b) != RELO_OK) return NULL;
    return b;
}

static relo_status balloc(relo_backend *b, uint64_t size, void **buf, uint64_t *addr)
{
    return b->ops.alloc(b->ctx, size, buf, addr);
}

static relo_host_counts counts_of(relo_backend *b)
{
    relo_host_counts c;
    memset(&c, 0, sizeof c);
    (void)relo_backend_host_counts(b, &c);
    return c;
}

static bool all_bytes(const unsigned char *p, uint64_t n, unsigned char v)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != v) return false;
    return true;
}

CHECK_TEST(host_defaults)
{
    relo_backend *b = make_host(NULL);
    require_true(b != NULL);
    relo_backend_props p;
    require_ok(relo_backend_props_get(b, &p));
    expect_eq(p.alignment, 64);
    expect_eq(p.max_page_size, UINT64_C(1) << 30);
    expect_eq(p.capacity, 0);
    relo_backend_destroy(b);
}

CHECK_TEST(host_desc_values_reported)
{
    relo_host_desc d = {.capacity = 24 * MiB, .alignment = 32, .max_page_size = 128 * MiB};
    relo_backend *b = make_host(&d);
    require_true(b != NULL);
    relo_backend_props p;
    require_ok(relo_backend_props_get(b, &p));
    expect_eq(p.alignment, 32);
    expect_eq(p.max_page_size, 128 * MiB);
    expect_eq(p.capacity, 24 * MiB);
    relo_backend_destroy(b);
}

/* The simulated device charges what a GPU driver does: each buffer its
 * size rounded up to the granule (2 MiB by default); granule 1 charges
 * plain bytes. The host backend charges bytes unless told otherwise. */
CHECK_TEST(sim_charges_in_granules)
{
    relo_host_desc d = {.capacity = 4 * MiB};
    relo_backend *b = make_sim(&d);
    require_true(b != NULL);
    relo_backend_props p;
    require_ok(relo_backend_props_get(b, &p));
    expect_eq(p.granule, 2 * MiB);
    void *x = NULL, *y = NULL, *z = NULL;
    uint64_t addr;
    require_ok(balloc(b, 300 * KiB, &x, &addr));
    expect_eq(counts_of(b).bytes_held, 2 * MiB);
    require_ok(balloc(b, 2 * MiB, &y, &addr));
    expect_eq(counts_of(b).bytes_held, 4 * MiB);
    expect_status(balloc(b, 1, &z, &addr), RELO_ERR_OUT_OF_MEMORY);
    b->ops.free(b->ctx, x, 300 * KiB);
    expect_eq(counts_of(b).bytes_held, 2 * MiB);
    b->ops.free(b->ctx, y, 2 * MiB);
    expect_eq(counts_of(b).bytes_held, 0);
    relo_backend_destroy(b);

    d.granule = 1;
    b = make_sim(&d);
    require_true(b != NULL);
    void *held[13];
    for (int i = 0; i < 13; i++) require_ok(balloc(b, 300 * KiB, &held[i], &addr));
    expect_eq(counts_of(b).bytes_held, 13 * 300 * KiB);
    for (int i = 0; i < 13; i++) b->ops.free(b->ctx, held[i], 300 * KiB);
    relo_backend_destroy(b);

    relo_backend *h = make_host(NULL);
    require_true(h != NULL);
    require_ok(relo_backend_props_get(h, &p));
    expect_eq(p.granule, 1);
    relo_backend_destroy(h);
}

/* The packed placement sizes its pages in the device's granule: a small
 * request on a 2 MiB-granule device takes one whole granule, never a
 * smaller page the device would round up anyway. */
CHECK_TEST(packed_pages_follow_the_granule)
{
    relo_host_desc d = {.granule = 4 * MiB};
    relo_backend *b = make_sim(&d);
    require_true(b != NULL);
    relo_device *dev = NULL;
    require_ok(relo_device_create(NULL, b, &dev));
    relo_stream *s = NULL;
    require_ok(relo_stream_create(dev, NULL, &s));
    relo_handle h;
    require_ok(relo_reserve(s, 100 * KiB, &h));
    relo_stats st;
    require_ok(relo_device_stats(dev, &st));
    expect_eq(st.bytes_reserved, 4 * MiB);
    expect_ok(relo_release(dev, h));
    expect_ok(relo_stream_destroy(s));
    expect_ok(relo_device_destroy(dev));
}

CHECK_TEST(create_rejects_bad_desc)
{
    relo_backend *b = NULL;
    relo_host_desc d = {.alignment = 4096, .max_page_size = 1024};
    expect_status(relo_backend_host_create(&d, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_sim_create(&d, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_true(b == NULL);
    expect_status(relo_backend_host_create(NULL, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_sim_create(NULL, NULL), RELO_ERR_INVALID_ARGUMENT);
}

CHECK_TEST(host_fresh_fill_and_alignment)
{
    relo_backend *b = make_host(NULL);
    require_true(b != NULL);
    void *buf = NULL;
    uint64_t addr = 0;
    require_ok(balloc(b, 4096 + 3, &buf, &addr));
    require_true(buf != NULL);
    expect_eq(addr, (uint64_t)(uintptr_t)buf);
    expect_eq(addr % 64, 0);
    expect_true(all_bytes(buf, 4096 + 3, 0xA5));
    b->ops.free(b->ctx, buf, 4096 + 3);
    relo_backend_destroy(b);
}

CHECK_TEST(host_odd_alignment_uses_power_of_two)
{
    relo_host_desc d = {.alignment = 50};
    relo_backend *b = make_host(&d);
    require_true(b != NULL);
    void *buf = NULL;
    uint64_t addr = 0;
    require_ok(balloc(b, 100, &buf, &addr));
    expect_eq(addr % 64, 0);
    b->ops.free(b->ctx, buf, 100);
    relo_backend_destroy(b);
}

CHECK_TEST(host_write_read_copy)
{
    relo_backend *b = make_host(NULL);
    require_true(b != NULL);
    void *src = NULL, *dst = NULL;
    uint64_t a1 = 0, a2 = 0;
    require_ok(balloc(b, 1024, &src, &a1));
    require_ok(balloc(b, 1024, &dst, &a2));
    expect_ne(a1, a2);

    unsigned char data[100], back[100];
    for (int i = 0; i < 100; i++) data[i] = (unsigned char)i;
    require_ok(b->ops.write(b->ctx, src, 10, data, sizeof data));
    require_ok(b->ops.copy(b->ctx, src, 10, dst, 500, sizeof data));
    require_ok(b->ops.wait_copies(b->ctx));
    require_ok(b->ops.read(b->ctx, dst, 500, back, sizeof back));
    expect_eq(memcmp(data, back, sizeof data), 0);
    /* Bytes around the copied range keep the fresh pattern. */
    expect_eq(((unsigned char *)dst)[499], 0xA5);
    expect_eq(((unsigned char *)dst)[600], 0xA5);

    relo_host_counts c = counts_of(b);
    expect_eq(c.allocs, 2);
    expect_eq(c.copies, 1);
    expect_eq(c.wait_copies, 1);
    expect_eq(c.bytes_held, 2048);
    b->ops.free(b->ctx, src, 1024);
    b->ops.free(b->ctx, dst, 1024);
    c = counts_of(b);
    expect_eq(c.frees, 2);
    expect_eq(c.bytes_held, 0);
    relo_backend_destroy(b);
}

/* Runs the same fault checks on either kind. */
static void check_capacity(relo_backend *b)
{
    void *x = NULL, *y = NULL, *z = NULL;
    uint64_t a = 0;
    require_ok(balloc(b, 6 * MiB, &x, &a));
    require_ok(balloc(b, 4 * MiB, &y, &a));
    /* 10 MiB held of 10 MiB: one more byte is refused. */
    expect_status(balloc(b, 1, &z, &a), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(counts_of(b).allocs, 2);
    b->ops.free(b->ctx, y, 4 * MiB);
    require_ok(balloc(b, 4 * MiB, &z, &a));
    expect_status(balloc(b, UINT64_MAX / 2, &y, &a), RELO_ERR_BACKEND); /* above max page */
    expect_eq(counts_of(b).bytes_held, 10 * MiB);
    b->ops.free(b->ctx, x, 6 * MiB);
    b->ops.free(b->ctx, z, 4 * MiB);
    expect_eq(counts_of(b).bytes_held, 0);
}

CHECK_TEST(host_capacity_refusal)
{
    relo_host_desc d = {.capacity = 10 * MiB};
    relo_backend *b = make_host(&d);
    require_true(b != NULL);
    check_capacity(b);
    relo_backend_destroy(b);
}

CHECK_TEST(sim_capacity_refusal)
{
    relo_host_desc d = {.capacity = 10 * MiB};
    relo_backend *b = make_sim(&d);
    require_true(b != NULL);
    check_capacity(b);
    relo_backend_destroy(b);
}

static void check_refuse_above(relo_backend *b)
{
    void *x = NULL, *y = NULL;
    uint64_t a = 0;
    expect_status(balloc(b, 8 * MiB + 1, &x, &a), RELO_ERR_OUT_OF_MEMORY);
    require_ok(balloc(b, 8 * MiB, &y, &a));
    expect_eq(counts_of(b).allocs, 1);
    b->ops.free(b->ctx, y, 8 * MiB);
}

CHECK_TEST(refuse_alloc_above)
{
    relo_host_desc d = {.refuse_alloc_above = 8 * MiB};
    relo_backend *b = make_host(&d);
    require_true(b != NULL);
    check_refuse_above(b);
    relo_backend_destroy(b);
    b = make_sim(&d);
    require_true(b != NULL);
    check_refuse_above(b);
    relo_backend_destroy(b);
}

static void check_refuse_after(relo_backend *b)
{
    void *x[4] = {NULL, NULL, NULL, NULL};
    uint64_t a = 0;
    require_ok(balloc(b, 64, &x[0], &a));
    require_ok(balloc(b, 64, &x[1], &a));
    /* After two served allocs every further one is refused, frees or not. */
    expect_status(balloc(b, 64, &x[2], &a), RELO_ERR_OUT_OF_MEMORY);
    b->ops.free(b->ctx, x[1], 64);
    expect_status(balloc(b, 64, &x[2], &a), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(counts_of(b).allocs, 2);

    /* set_faults restarts the count: one more, then refuse. */
    relo_host_desc f = {.refuse_alloc_after = 1};
    require_ok(relo_backend_host_set_faults(b, &f));
    require_ok(balloc(b, 64, &x[1], &a));
    expect_status(balloc(b, 64, &x[2], &a), RELO_ERR_OUT_OF_MEMORY);

    /* Turning faults off lets allocs through again. */
    relo_host_desc none = {0};
    require_ok(relo_backend_host_set_faults(b, &none));
    require_ok(balloc(b, 64, &x[2], &a));
    for (int i = 0; i < 3; i++) b->ops.free(b->ctx, x[i], 64);
    expect_eq(counts_of(b).bytes_held, 0);
}

CHECK_TEST(refuse_alloc_after)
{
    relo_host_desc d = {.refuse_alloc_after = 2};
    relo_backend *b = make_host(&d);
    require_true(b != NULL);
    check_refuse_after(b);
    relo_backend_destroy(b);
    b = make_sim(&d);
    require_true(b != NULL);
    check_refuse_after(b);
    relo_backend_destroy(b);
}

static void check_copy_faults(relo_backend *b)
{
    void *x = NULL, *y = NULL;
    uint64_t a = 0;
    require_ok(balloc(b, 256, &x, &a));
    require_ok(balloc(b, 256, &y, &a));

    relo_host_desc f = {.refuse_copies = true};
    require_ok(relo_backend_host_set_faults(b, &f));
    expect_status(b->ops.copy(b->ctx, x, 0, y, 0, 16), RELO_ERR_BACKEND);
    expect_eq(counts_of(b).copies, 0);

    relo_host_desc g = {.refuse_copy_after = 2};
    require_ok(relo_backend_host_set_faults(b, &g));
    expect_ok(b->ops.copy(b->ctx, x, 0, y, 0, 16));
    expect_ok(b->ops.copy(b->ctx, x, 16, y, 16, 16));
    expect_status(b->ops.copy(b->ctx, x, 32, y, 32, 16), RELO_ERR_BACKEND);
    expect_eq(counts_of(b).copies, 2);

    relo_host_desc w = {.fail_wait_copies = true, .fail_wait_device = true};
    require_ok(relo_backend_host_set_faults(b, &w));
    expect_ok(b->ops.copy(b->ctx, x, 0, y, 0, 16));
    expect_status(b->ops.wait_copies(b->ctx), RELO_ERR_BACKEND);
    expect_status(b->ops.wait_device(b->ctx), RELO_ERR_BACKEND);

    relo_host_desc none = {0};
    require_ok(relo_backend_host_set_faults(b, &none));
    expect_ok(b->ops.wait_copies(b->ctx));
    expect_ok(b->ops.wait_device(b->ctx));
    b->ops.flush(b->ctx);

    relo_host_counts c = counts_of(b);
    expect_eq(c.copies, 3);
    expect_eq(c.wait_copies, 2); /* failed waits count too */
    expect_eq(c.wait_device, 2);
    expect_eq(c.flushes, 1);
    b->ops.free(b->ctx, x, 256);
    b->ops.free(b->ctx, y, 256);
}

CHECK_TEST(host_copy_and_wait_faults)
{
    relo_backend *b = make_host(NULL);
    require_true(b != NULL);
    check_copy_faults(b);
    relo_backend_destroy(b);
}

CHECK_TEST(sim_copy_and_wait_faults)
{
    relo_backend *b = make_sim(NULL);
    require_true(b != NULL);
    check_copy_faults(b);
    relo_backend_destroy(b);
}

CHECK_TEST(faults_from_desc_at_create)
{
    relo_host_desc d = {.refuse_copies = true, .fail_wait_copies = true, .fail_wait_device = true};
    relo_backend *b = make_host(&d);
    require_true(b != NULL);
    void *x = NULL, *y = NULL;
    uint64_t a = 0;
    require_ok(balloc(b, 64, &x, &a));
    require_ok(balloc(b, 64, &y, &a));
    expect_status(b->ops.copy(b->ctx, x, 0, y, 0, 8), RELO_ERR_BACKEND);
    expect_status(b->ops.wait_copies(b->ctx), RELO_ERR_BACKEND);
    expect_status(b->ops.wait_device(b->ctx), RELO_ERR_BACKEND);
    /* The refused copy left the target as it was. */
    expect_true(all_bytes(y, 64, 0xA5));
    b->ops.free(b->ctx, x, 64);
    b->ops.free(b->ctx, y, 64);
    relo_backend_destroy(b);
}

CHECK_TEST(sim_distinct_aligned_addresses)
{
    relo_host_desc d = {.alignment = 256};
    relo_backend *b = make_sim(&d);
    require_true(b != NULL);
    enum { N = 64 };
    void *bufs[N];
    uint64_t addrs[N];
    for (int i = 0; i < N; i++) {
        uint64_t size = (uint64_t)(i * 1000 + 1);
        require_ok(balloc(b, size, &bufs[i], &addrs[i]));
        require_true(bufs[i] != NULL);
        expect_ne(addrs[i], 0);
        expect_eq(addrs[i] % 256, 0);
        /* Each buffer's range lies past the previous one: no overlap. */
        if (i > 0) expect_ge(addrs[i], addrs[i - 1] + (uint64_t)((i - 1) * 1000 + 1));
        for (int j = 0; j < i; j++) expect_true(bufs[i] != bufs[j]);
    }
    relo_host_counts c = counts_of(b);
    expect_eq(c.allocs, N);
    for (int i = 0; i < N; i++) b->ops.free(b->ctx, bufs[i], (uint64_t)(i * 1000 + 1));
    expect_eq(counts_of(b).bytes_held, 0);
    expect_eq(counts_of(b).frees, N);
    relo_backend_destroy(b);
}

CHECK_TEST(sim_has_no_bytes)
{
    relo_backend *b = make_sim(NULL);
    require_true(b != NULL);
    expect_true(b->ops.write == NULL);
    expect_true(b->ops.read == NULL);
    relo_backend_props p;
    require_ok(relo_backend_props_get(b, &p));
    expect_eq(p.alignment, 64);
    expect_eq(p.max_page_size, UINT64_C(1) << 30);
    /* A sim buffer holds nothing, so a huge page costs no memory. */
    void *x = NULL;
    uint64_t a = 0;
    require_ok(balloc(b, UINT64_C(1) << 30, &x, &a));
    expect_eq(counts_of(b).bytes_held, UINT64_C(1) << 30);
    b->ops.free(b->ctx, x, UINT64_C(1) << 30);
    relo_backend_destroy(b);
}

/* A backend of another kind, for the queries that must refuse it. */
static int other_buffer;
static relo_status other_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    (void)ctx;
    (void)size;
    *buffer = &other_buffer;
    *address = 0;
    return RELO_OK;
}
static void other_free(void *ctx, void *buffer, uint64_t size)
{
    (void)ctx;
    (void)buffer;
    (void)size;
}
static relo_status other_wait(void *ctx)
{
    (void)ctx;
    return RELO_OK;
}
static relo_status other_copy(void *ctx, void *s, uint64_t so, void *d, uint64_t dof, uint64_t n)
{
    (void)ctx;
    (void)s;
    (void)so;
    (void)d;
    (void)dof;
    (void)n;
    return RELO_OK;
}

CHECK_TEST(queries_reject_other_kinds)
{
    relo_backend_ops ops = {.alloc = other_alloc,
                            .free = other_free,
                            .wait_device = other_wait,
                            .copy = other_copy,
                            .wait_copies = other_wait};
    relo_backend_props props = {.alignment = 64, .max_page_size = MiB};
    int ctx = 0;
    relo_backend *b = NULL;
    require_ok(relo_backend_create(&ops, &ctx, &props, &b));
    relo_host_counts c;
    relo_host_desc d = {0};
    expect_status(relo_backend_host_counts(b, &c), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_set_faults(b, &d), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_counts(NULL, &c), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_set_faults(NULL, &d), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(b);

    relo_backend *h = make_host(NULL);
    require_true(h != NULL);
    expect_status(relo_backend_host_counts(h, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_host_set_faults(h, NULL), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(h);
}

CHECK_MAIN()
