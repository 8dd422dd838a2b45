/*
 * fixture.h — small helpers shared by relo's unit and integration tests:
 * a device with streams over a host, sim or caller-made backend, stats and
 * bindings read in one call, and byte patterns written into allocations and
 * checked after they may have moved.
 *
 * Include after check.h: the helpers report through expect_*. Every helper
 * is static inline so a test file pays only for what it uses.
 */
#ifndef RELO_TEST_FIXTURE_H
#define RELO_TEST_FIXTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "relo.h"
#include "relo_backend.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/** A device, its backend (kept for relo_backend_host_counts and fault
 *  injection; the device owns it) and up to two streams. */
typedef struct fx {
    relo_backend *backend;
    relo_device *dev;
    relo_stream *s;  /* the default stream */
    relo_stream *s2; /* a second stream, only where fx_open2 made one */
} fx;

/** The test defaults: alignment 32, max page 128 MiB, capacity
 *  unknown, no faults. */
static inline relo_host_desc fx_host(void)
{
    relo_host_desc d;
    memset(&d, 0, sizeof d);
    d.alignment = 32;
    d.max_page_size = 128 * MiB;
    return d;
}

/** A device desc asking for the adaptive placement (docs/placement.md).
 *  The default is the packed placement; the tests of what the adaptive
 *  placement does (small pool, adaptive arena, outdated pages) ask for
 *  this by name: fx_open(&f, &hd, FX_ADAPTIVE). */
#define FX_ADAPTIVE (&(const relo_device_desc){.placement = RELO_PLACEMENT_ADAPTIVE})

/** A device desc with every field at its default but the placement, for a
 *  test that sets more fields of it (relocation, bounds, cache limit). */
static inline relo_device_desc fx_desc(relo_placement placement)
{
    relo_device_desc d;
    memset(&d, 0, sizeof d);
    d.placement = placement;
    return d;
}

/* Log sink of every fixture device: warnings and errors go to stderr, so
 * the invariant relo_device_check found broken shows next to the failure. */
static void fx_log_(void *user, relo_log_level level, const char *message)
{
    (void)user;
    if (level >= RELO_LOG_WARN) fprintf(stderr, "relo[%d]: %s\n", (int)level, message);
}

/** Makes a device over backend b (taken on success) and one stream. A desc
 *  without a log sink gets fx_log_. */
static inline relo_status fx_open_backend(fx *f, relo_backend *b, const relo_device_desc *dd)
{
    relo_device_desc desc;
    memset(&desc, 0, sizeof desc);
    if (dd) desc = *dd;
    if (!desc.log) desc.log = fx_log_;
    memset(f, 0, sizeof *f);
    relo_status st = relo_device_create(&desc, b, &f->dev);
    if (st != RELO_OK) {
        relo_backend_destroy(b);
        return st;
    }
    f->backend = b;
    st = relo_stream_create(f->dev, NULL, &f->s);
    if (st != RELO_OK) {
        relo_device_destroy(f->dev);
        f->dev = NULL;
    }
    return st;
}

/** Host backend from hd (NULL = fx_host()), device from dd (NULL =
 *  defaults), one stream. */
static inline relo_status fx_open(fx *f, const relo_host_desc *hd, const relo_device_desc *dd)
{
    relo_host_desc def = fx_host();
    relo_backend *b = NULL;
    relo_status st = relo_backend_host_create(hd ? hd : &def, &b);
    if (st != RELO_OK) return st;
    return fx_open_backend(f, b, dd);
}

/** As fx_open over the simulated backend (no bytes). */
static inline relo_status fx_open_sim(fx *f, const relo_host_desc *hd, const relo_device_desc *dd)
{
    relo_host_desc def = fx_host();
    relo_backend *b = NULL;
    relo_status st = relo_backend_sim_create(hd ? hd : &def, &b);
    if (st != RELO_OK) return st;
    return fx_open_backend(f, b, dd);
}

/** As fx_open, with a second stream in f->s2. */
static inline relo_status fx_open2(fx *f, const relo_host_desc *hd, const relo_device_desc *dd)
{
    relo_status st = fx_open(f, hd, dd);
    if (st != RELO_OK) return st;
    return relo_stream_create(f->dev, NULL, &f->s2);
}

/** Destroys the streams and the device; each must succeed (the test
 *  released everything it reserved and destroyed its graphs). */
static inline void fx_close(fx *f)
{
    if (f->s2) expect_ok(relo_stream_destroy(f->s2));
    if (f->s) expect_ok(relo_stream_destroy(f->s));
    if (f->dev) expect_ok(relo_device_destroy(f->dev));
    memset(f, 0, sizeof *f);
}

/** Releases the n handles (each must succeed), then closes f as fx_close. */
static inline void fx_close_releasing(fx *f, const relo_handle *h, size_t n)
{
    for (size_t i = 0; i < n; i++) expect_ok(relo_release(f->dev, h[i]));
    fx_close(f);
}

/** The handles given, then their count: the last two arguments of
 *  fx_close_releasing. */
#define FX_HANDLES(...) \
    (const relo_handle[]){__VA_ARGS__}, sizeof((const relo_handle[]){__VA_ARGS__}) / sizeof(relo_handle)

static inline relo_stats fx_stats(relo_stream *s)
{
    relo_stats st;
    memset(&st, 0, sizeof st);
    expect_ok(relo_stream_stats(s, &st));
    return st;
}

static inline relo_stats fx_dev_stats(relo_device *d)
{
    relo_stats st;
    memset(&st, 0, sizeof st);
    expect_ok(relo_device_stats(d, &st));
    return st;
}

/** Calls the host or sim backend served so far. */
static inline relo_host_counts fx_counts(const fx *f)
{
    relo_host_counts c;
    memset(&c, 0, sizeof c);
    expect_ok(relo_backend_host_counts(f->backend, &c));
    return c;
}

/** Reserves size bytes; the handle, or id 0 (and a recorded failure). */
static inline relo_handle fx_reserve(relo_stream *s, uint64_t size)
{
    relo_handle h = {0};
    expect_ok(relo_reserve(s, size, &h));
    return h;
}

/** Where h is now; all zero (and a recorded failure) if it does not
 *  resolve. */
static inline relo_binding fx_bind(relo_stream *s, relo_handle h)
{
    relo_binding b;
    memset(&b, 0, sizeof b);
    expect_ok(relo_resolve(s, h, &b));
    return b;
}

static inline bool fx_same_place(relo_binding a, relo_binding b)
{
    return a.buffer == b.buffer && a.offset == b.offset && a.size == b.size;
}

/** How many of the n handles h are no longer where before[i] says. */
static inline int fx_moved_count(relo_stream *s, const relo_handle *h, const relo_binding *before, int n)
{
    int moved = 0;
    for (int i = 0; i < n; i++)
        if (!fx_same_place(before[i], fx_bind(s, h[i]))) moved++;
    return moved;
}

/** Whether [a.offset, a.offset + a.size) and b's range share a byte of the
 *  same buffer. */
static inline bool fx_overlap(relo_binding a, relo_binding b)
{
    return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

/* ------------------------------------------------------------------------ */
/* Bytes                                                                    */
/* ------------------------------------------------------------------------ */

#define FX_CHUNK (64 * 1024)

/** Fills the first n bytes of h with byte. */
static inline relo_status fx_fill(relo_device *d, relo_handle h, uint8_t byte, uint64_t n)
{
    static uint8_t buf[FX_CHUNK];
    memset(buf, byte, sizeof buf);
    for (uint64_t off = 0; off < n; off += FX_CHUNK) {
        uint64_t k = n - off < FX_CHUNK ? n - off : FX_CHUNK;
        relo_status st = relo_write(d, h, off, buf, k);
        if (st != RELO_OK) return st;
    }
    return RELO_OK;
}

/** Whether each of the first n bytes of h reads back as byte. */
static inline bool fx_all_bytes(relo_device *d, relo_handle h, uint8_t byte, uint64_t n)
{
    static uint8_t buf[FX_CHUNK];
    for (uint64_t off = 0; off < n; off += FX_CHUNK) {
        uint64_t k = n - off < FX_CHUNK ? n - off : FX_CHUNK;
        if (relo_read(d, h, off, buf, k) != RELO_OK) return false;
        for (uint64_t i = 0; i < k; i++)
            if (buf[i] != byte) return false;
    }
    return true;
}

/** The pattern byte of allocation key at offset: differs between
 *  neighbouring offsets and between keys, so a shifted or swapped copy
 *  shows. */
static inline uint8_t fx_pattern_byte(uint64_t key, uint64_t off)
{
    uint64_t x = key * UINT64_C(0x9E3779B97F4A7C15) + off * 7u + (off >> 9) * 13u;
    return (uint8_t)(x ^ (x >> 29) ^ (x >> 47));
}

/* The regions a pattern covers: the whole allocation up to 16 KiB, else
 * 4 KiB at its head, middle and tail (enough to catch a lost or shifted
 * copy without writing gigabytes). */
#define FX_SAMPLE (4 * 1024)

static inline int fx_regions(uint64_t size, uint64_t off[3], uint64_t len[3])
{
    if (size <= 4 * FX_SAMPLE) {
        off[0] = 0;
        len[0] = size;
        return size ? 1 : 0;
    }
    off[0] = 0;
    off[1] = (size / 2) & ~(uint64_t)63;
    off[2] = size - FX_SAMPLE;
    len[0] = len[1] = len[2] = FX_SAMPLE;
    return 3;
}

/** Writes key's pattern into h (size bytes). */
static inline relo_status fx_write_pattern(relo_device *d, relo_handle h, uint64_t key, uint64_t size)
{
    uint8_t buf[4 * FX_SAMPLE]; /* per call: threads may write patterns at once */
    uint64_t off[3], len[3];
    int n = fx_regions(size, off, len);
    for (int r = 0; r < n; r++) {
        for (uint64_t i = 0; i < len[r]; i++) buf[i] = fx_pattern_byte(key, off[r] + i);
        relo_status st = relo_write(d, h, off[r], buf, len[r]);
        if (st != RELO_OK) return st;
    }
    return RELO_OK;
}

/** Whether h still holds key's pattern. */
static inline bool fx_check_pattern(relo_device *d, relo_handle h, uint64_t key, uint64_t size)
{
    uint8_t buf[4 * FX_SAMPLE]; /* per call: threads may write patterns at once */
    uint64_t off[3], len[3];
    int n = fx_regions(size, off, len);
    for (int r = 0; r < n; r++) {
        if (relo_read(d, h, off[r], buf, len[r]) != RELO_OK) return false;
        for (uint64_t i = 0; i < len[r]; i++)
            if (buf[i] != fx_pattern_byte(key, off[r] + i)) return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* The checker inside passes                                                */
/* ------------------------------------------------------------------------ */

/** Counts of relo_device_check calls made inside relocation passes. */
typedef struct fx_pass_checks {
    relo_device *dev;
    _Atomic uint64_t checks;  /* calls made */
    _Atomic uint64_t corrupt; /* calls that did not answer RELO_OK */
} fx_pass_checks;

static relo_status fx_pass_check_(void *user)
{
    fx_pass_checks *c = user;
    relo_status st = relo_device_check(c->dev);
    atomic_fetch_add(&c->checks, 1);
    if (st != RELO_OK) atomic_fetch_add(&c->corrupt, 1);
    return RELO_OK;
}

/** Gives stream s a finish that runs relo_device_check on d: relo calls it
 *  on the thread that copies, inside every pass of the device (its own and
 *  relo_pass_copy), while the pass waits for the device's work, so the
 *  checker sees each pass open. Give every stream of the device one (with
 *  one c) and relo calls the finishes instead of the backend's wait. */
static inline void fx_check_in_passes(fx_pass_checks *c, relo_device *d, relo_stream *s)
{
    c->dev = d;
    expect_ok(relo_stream_set_finish(s, fx_pass_check_, c));
}

/** Expects checks inside passes to have run (at least min) and every one to
 *  have passed; prints the count. */
static inline void fx_expect_pass_checks(fx_pass_checks *c, uint64_t min)
{
    uint64_t n = atomic_load(&c->checks), bad = atomic_load(&c->corrupt);
    printf("  relo_device_check inside passes: %llu, %llu not OK\n", (unsigned long long)n,
           (unsigned long long)bad);
    expect_ge(n, min);
    expect_eq(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* Randomness and time                                                      */
/* ------------------------------------------------------------------------ */

/** splitmix64: small, seedable, good enough for test choices. */
static inline uint64_t fx_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/** Uniform in [lo, hi]. */
static inline uint64_t fx_range(uint64_t *state, uint64_t lo, uint64_t hi)
{
    return lo + fx_rand(state) % (hi - lo + 1);
}

static inline uint64_t fx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/** A relo_reclaim of stream on a thread of its own (pthread_create with
 *  fx_reclaim_thread), for tests of what other threads may do while its
 *  pass waits; st holds its status once joined. */
typedef struct fx_reclaimer {
    relo_stream *stream;
    relo_status st;
} fx_reclaimer;

static inline void *fx_reclaim_thread(void *arg)
{
    fx_reclaimer *r = arg;
    r->st = relo_reclaim(r->stream);
    return NULL;
}

#endif /* RELO_TEST_FIXTURE_H */
