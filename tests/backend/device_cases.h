/*
 * device_cases.h — the cases every real-device backend test runs the same
 * way (test_opencl.c, test_vulkan.c): the relocation and capture cases
 * that move bytes (docs/design.md §6–7) through the public API, a
 * kernel that adds 1 through a binding before and after a relocation, and
 * the parts of the two-stream case the backends share.
 *
 * A test file keeps its own CHECK_TEST lines (ctest registers those) and
 * its own environment; it opens the environment and hands the case a
 * dc_env, which says how to make a backend on it, which runtime queue
 * stands behind relo stream 0 and 1, how to launch the kernel and how to
 * close the environment. Every case closes the device and the environment
 * when it ends normally; a require_* that stops it leaves them open, as a
 * failed case may. The cases of a refused copy, a failed wait and the
 * count of waits wrap the backend in wrap_backend.h, since real devices
 * have no fault injection.
 *
 * Include after check.h: the cases report through expect_* and require_*.
 */
#ifndef RELO_TEST_DEVICE_CASES_H
#define RELO_TEST_DEVICE_CASES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "testing/testing.h"
#include "wrap_backend.h"

/** How the shared cases reach one backend's device. */
typedef struct dc_env {
    void *env; /* the test file's environment, opened */
    /* A fresh backend on env's device, or NULL. */
    relo_backend *(*make_backend)(void *env);
    /* The backend stream (queue, semaphore) behind relo stream i (0 or 1). */
    void *(*stream)(void *env, int i);
    /* Closes env; called once the device is gone. */
    void (*close)(void *env);
    /* Optional: checks of the backend's own on the binding of an
     * allocation that moved (a device address, say). */
    void (*check_moved)(void *env, relo_binding moved);
    /* For the kernel cases: enqueues add1 over the binding's elements on
     * the runtime's side of stream i, and waits for stream i's work; each
     * answers 0 on success or the API's error code. add1_width is the
     * size in bytes of the element add1 increments (1 or 4). */
    int (*launch_add1)(void *env, int i, relo_binding bd);
    int (*finish)(void *env, int i);
    unsigned add1_width;
} dc_env;

/* ------------------------------------------------------------------------ */
/* A device and its streams over the environment                            */
/* ------------------------------------------------------------------------ */

/** A device with the adaptive placement over b (taken; NULL records a failure)
 *  with f->s on stream 0 and, where streams is 2, f->s2 on stream 1.
 *  False, with the failing step recorded, when any step fails. */
static inline bool dc_open(fx *f, const dc_env *e, relo_backend *b, int streams)
{
    memset(f, 0, sizeof *f);
    expect_true(b != NULL);
    if (!b) return false;
    f->backend = b;
    relo_status st = relo_device_create(FX_ADAPTIVE, b, &f->dev);
    if (st == RELO_OK) st = relo_stream_create(f->dev, e->stream(e->env, 0), &f->s);
    if (st == RELO_OK && streams == 2) st = relo_stream_create(f->dev, e->stream(e->env, 1), &f->s2);
    expect_ok(st);
    return st == RELO_OK;
}

/** Destroys the streams and the device (each must succeed), then closes
 *  the environment. */
static inline void dc_close(fx *f, const dc_env *e)
{
    fx_close(f);
    e->close(e->env);
}

/** A fresh backend of e wrapped in wrap_backend.h; NULL where either
 *  fails. */
static inline relo_backend *dc_wrapped(const dc_env *e, wrap **w)
{
    return wrap_backend(e->make_backend(e->env), w);
}

/** Releases n handles; each must succeed. */
static inline void dc_release(relo_device *d, const relo_handle *h, int n)
{
    for (int i = 0; i < n; i++) expect_ok(relo_release(d, h[i]));
}

/* The setup of the first relocation cases: 1 MiB of 7s on a 2 MiB page,
 * then 10 MiB, which grows the arena to 11 MiB pages and leaves the first
 * page outdated. */
static inline relo_status dc_grow_setup(relo_device *d, relo_stream *s, relo_handle *small, relo_handle *big)
{
    relo_status st = relo_reserve(s, MiB, small);
    if (st == RELO_OK) st = fx_fill(d, *small, 7, MiB);
    if (st == RELO_OK) st = relo_reserve(s, 10 * MiB, big);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Relocation and capture cases (docs/design.md §6-7)                       */
/* ------------------------------------------------------------------------ */

static inline void dc_a25_reclaim_moves_and_keeps_bytes(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle h[2]; /* small, big */
    require_ok(dc_grow_setup(d, s, &h[0], &h[1]));
    expect_eq(fx_dev_stats(d).outdated_pages, 1);
    relo_binding before = fx_bind(s, h[0]);

    require_ok(relo_reclaim(s));
    relo_stats st = fx_dev_stats(d);
    expect_eq(st.allocations_moved, 1);
    expect_eq(st.pages, 1);
    expect_eq(st.bytes_reserved, 11 * MiB);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.bytes_in_use, 11 * MiB);
    expect_true(fx_all_bytes(d, h[0], 7, MiB));
    relo_binding after = fx_bind(s, h[0]);
    expect_true(after.buffer != before.buffer);
    expect_true(after.buffer == fx_bind(s, h[1]).buffer);
    if (e.check_moved) e.check_moved(e.env, after);

    dc_release(d, h, 2);
    dc_close(&f, &e);
}

/* The wrapped backend refuses the copy or fails the wait for it; either
 * way the 1 MiB stays where it was, bytes intact. After a refused copy no
 * target stays reserved, so the next 1 MiB lands on the 11 MiB page
 * without a new page; after a failed wait the target stays reserved (its
 * bytes are in doubt), the 11 MiB page is full, and the next 1 MiB needs a
 * page of its own. */
static inline void dc_failed_copy_keeps_bytes(dc_env e, bool refuse_copies)
{
    wrap *w = NULL;
    relo_backend *b = dc_wrapped(&e, &w);
    require_true(b != NULL);
    w->refuse_copies = refuse_copies;
    w->fail_wait_copies = !refuse_copies;
    fx f;
    require_true(dc_open(&f, &e, b, 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle h[3]; /* small, big, more */
    require_ok(dc_grow_setup(d, s, &h[0], &h[1]));
    relo_binding before = fx_bind(s, h[0]);

    require_ok(relo_reclaim(s));
    relo_stats st = fx_dev_stats(d);
    expect_eq(st.allocations_moved, 0);
    if (refuse_copies) {
        expect_eq(st.relocations_abandoned, 1);
        expect_eq(st.bytes_in_use, 11 * MiB);
    } else {
        expect_ge(st.bytes_leaked, MiB);
    }
    relo_binding after = fx_bind(s, h[0]);
    expect_true(after.buffer == before.buffer);
    expect_eq(after.offset, before.offset);
    expect_true(fx_all_bytes(d, h[0], 7, MiB));

    require_ok(relo_reserve(s, MiB, &h[2]));
    void *more = fx_bind(s, h[2]).buffer, *big = fx_bind(s, h[1]).buffer;
    if (refuse_copies) {
        expect_eq(fx_dev_stats(d).pages, st.pages);
        expect_true(more == big);
    } else {
        expect_true(more != big);
        expect_true(more != before.buffer);
    }

    dc_release(d, h, 3);
    dc_close(&f, &e);
}

static inline void dc_a36_recording_stream_blocks_relocation(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 2));
    relo_device *d = f.dev;
    relo_stream *sa = f.s, *sb = f.s2;

    /* B records first, so prepare has nothing of A's to move yet. */
    require_ok(relo_capture_prepare(sb));
    require_ok(relo_capture_begin(sb));
    relo_handle h[2], more; /* small, big */
    require_ok(dc_grow_setup(d, sa, &h[0], &h[1]));
    expect_eq(fx_dev_stats(d).outdated_pages, 1);
    require_ok(relo_reserve(sa, MiB / 2, &more));
    expect_eq(fx_dev_stats(d).allocations_moved, 0);
    expect_status(relo_reclaim(sa), RELO_ERR_RECORDING);
    expect_eq(fx_dev_stats(d).allocations_moved, 0);
    /* Released so that the 11 MiB page has room for the 1 MiB again. */
    require_ok(relo_release(d, more));

    relo_graph *g = NULL;
    require_ok(relo_capture_end(sb, &g));
    relo_graph_destroy(g);
    require_ok(relo_reclaim(sa));
    expect_eq(fx_dev_stats(d).allocations_moved, 1);
    expect_eq(fx_dev_stats(d).outdated_pages, 0);
    expect_true(fx_all_bytes(d, h[0], 7, MiB));

    dc_release(d, h, 2);
    dc_close(&f, &e);
}

static inline void dc_a37_one_wait_before_copies_one_after(dc_env e)
{
    wrap *w = NULL;
    relo_backend *b = dc_wrapped(&e, &w);
    require_true(b != NULL);
    fx f;
    require_true(dc_open(&f, &e, b, 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    /* Two allocations on the outdated page: two copies in one submission. */
    relo_handle h[3]; /* h1, h2, big */
    require_ok(relo_reserve(s, 512 * KiB, &h[0]));
    require_ok(relo_reserve(s, 512 * KiB, &h[1]));
    require_ok(fx_fill(d, h[0], 1, 512 * KiB));
    require_ok(fx_fill(d, h[1], 2, 512 * KiB));
    require_ok(relo_reserve(s, 10 * MiB, &h[2]));
    wrap_clear_log(w);

    require_ok(relo_reclaim(s));
    expect_eq(fx_dev_stats(d).allocations_moved, 2);
    expect_true(strcmp(w->log, "DCCW") == 0);
    if (strcmp(w->log, "DCCW") != 0) fprintf(stderr, "  call order: %s\n", w->log);
    expect_true(fx_all_bytes(d, h[0], 1, 512 * KiB));
    expect_true(fx_all_bytes(d, h[1], 2, 512 * KiB));

    dc_release(d, h, 3);
    dc_close(&f, &e);
}

static inline void dc_a38_capture_state_errors(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 1));
    relo_stream *s = f.s;
    relo_graph *g = NULL;

    expect_status(relo_capture_begin(s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(s, &g), RELO_ERR_CAPTURE_STATE);
    require_ok(relo_capture_prepare(s));
    expect_status(relo_capture_prepare(s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(s, &g), RELO_ERR_CAPTURE_STATE);
    require_ok(relo_capture_begin(s));
    expect_status(relo_capture_begin(s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_prepare(s), RELO_ERR_CAPTURE_STATE);
    require_ok(relo_capture_end(s, &g));
    expect_true(g != NULL);
    relo_graph_destroy(g);

    /* Idle again: a second round runs. */
    g = NULL;
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    require_ok(relo_capture_end(s, &g));
    relo_graph_destroy(g);

    dc_close(&f, &e);
}

static inline void dc_a39_prepare_relocates_every_stream_first(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 2));
    relo_device *d = f.dev;
    relo_stream *sa = f.s, *sb = f.s2;
    relo_handle h[2]; /* small, big */
    require_ok(dc_grow_setup(d, sa, &h[0], &h[1]));
    expect_eq(fx_dev_stats(d).outdated_pages, 1);

    /* B prepares; A's outdated page is emptied and goes back. */
    require_ok(relo_capture_prepare(sb));
    expect_eq(relo__testing_last_reason(d), RELO_REASON_CAPTURE);
    relo_stats st = fx_dev_stats(d);
    expect_eq(st.allocations_moved, 1);
    expect_eq(st.outdated_pages, 0);
    expect_true(fx_all_bytes(d, h[0], 7, MiB));
    expect_true(fx_bind(sa, h[0]).buffer == fx_bind(sa, h[1]).buffer);

    relo_graph *g = NULL;
    require_ok(relo_capture_begin(sb));
    require_ok(relo_capture_end(sb, &g));
    relo_graph_destroy(g);
    dc_release(d, h, 2);
    dc_close(&f, &e);
}

static inline void dc_a40_new_page_while_recording_dooms_it(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle small, big;
    require_ok(relo_reserve(s, MiB, &small));
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    expect_status(relo_reserve(s, 10 * MiB, &big), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    relo_graph *g = (relo_graph *)&g;
    expect_status(relo_capture_end(s, &g), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    expect_true(g == NULL);
    /* The stream is idle again. */
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    require_ok(relo_capture_end(s, &g));
    relo_graph_destroy(g);

    require_ok(relo_release(d, small));
    dc_close(&f, &e);
}

static inline void dc_a41_guarded_page_serves_nothing_new(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle h, next;
    require_ok(relo_reserve(s, MiB, &h));
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    relo_binding used = fx_bind(s, h);
    require_true(used.buffer != NULL);
    require_ok(relo_release(d, h));
    relo_graph *g = NULL;
    require_ok(relo_capture_end(s, &g));
    require_true(g != NULL);
    expect_eq(fx_dev_stats(d).guarded_pages, 1);

    require_ok(relo_reserve(s, MiB, &next));
    expect_eq(fx_dev_stats(d).pages, 2);
    expect_true(fx_bind(s, next).buffer != used.buffer);

    relo_graph_destroy(g);
    expect_eq(fx_dev_stats(d).guarded_pages, 0);
    require_ok(relo_release(d, next));
    dc_close(&f, &e);
}

/* The setup of 42 and 43: a guarded allocation g and an unguarded
 * neighbour n on one 2 MiB page (1 MiB together), then growth to 10 MiB. */
static inline relo_status dc_guarded_setup(relo_device *d, relo_stream *s, relo_handle *g, relo_handle *n,
                                           relo_handle *big, relo_graph **graph)
{
    relo_status st = relo_reserve(s, 768 * KiB, g);
    if (st == RELO_OK) st = relo_reserve(s, 256 * KiB, n);
    if (st == RELO_OK) st = fx_fill(d, *g, 0x11, 768 * KiB);
    if (st == RELO_OK) st = fx_fill(d, *n, 0x22, 256 * KiB);
    if (st == RELO_OK) st = relo_capture_prepare(s);
    if (st == RELO_OK) st = relo_capture_begin(s);
    relo_binding bd;
    if (st == RELO_OK) st = relo_resolve(s, *g, &bd);
    if (st == RELO_OK) st = relo_capture_end(s, graph);
    if (st == RELO_OK) st = relo_reserve(s, 10 * MiB, big);
    return st;
}

static inline void dc_a42_a43_guarded_page_stays_until_graph_destroyed(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle h[3]; /* g, n, big */
    relo_graph *graph = NULL;
    require_ok(dc_guarded_setup(d, s, &h[0], &h[1], &h[2], &graph));
    relo_binding g0 = fx_bind(s, h[0]), n0 = fx_bind(s, h[1]);
    expect_true(g0.buffer == n0.buffer);

    /* 42: the guarded page moves nothing, neighbour included. */
    require_ok(relo_reclaim(s));
    expect_eq(fx_dev_stats(d).allocations_moved, 0);
    expect_true(fx_bind(s, h[0]).buffer == g0.buffer);
    expect_eq(fx_bind(s, h[0]).offset, g0.offset);
    expect_true(fx_bind(s, h[1]).buffer == n0.buffer);
    expect_eq(fx_bind(s, h[1]).offset, n0.offset);

    /* 43: without the graph the same reclaim empties the page. */
    relo_graph_destroy(graph);
    uint64_t released = fx_dev_stats(d).pages_released;
    require_ok(relo_reclaim(s));
    relo_stats st = fx_dev_stats(d);
    expect_eq(st.allocations_moved, 2);
    expect_eq(st.pages, 1);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.pages_released, released + 1);
    expect_true(fx_bind(s, h[0]).buffer == fx_bind(s, h[2]).buffer);
    expect_true(fx_all_bytes(d, h[0], 0x11, 768 * KiB));
    expect_true(fx_all_bytes(d, h[1], 0x22, 256 * KiB));

    dc_release(d, h, 3);
    dc_close(&f, &e);
}

/* ------------------------------------------------------------------------ */
/* A kernel through bindings                                                */
/* ------------------------------------------------------------------------ */

/* Element i of the counting pattern, plus add, cut to width bytes. */
static inline uint32_t dc_count(uint64_t i, uint32_t add, unsigned width)
{
    uint32_t v = (uint32_t)(i * 13 + add);
    return width == 1 ? (uint8_t)v : v;
}

/** Writes the counting pattern (element i is i * 13, in elements of width
 *  1 or 4 bytes) over the first n bytes of h. */
static inline relo_status dc_write_count(relo_device *d, relo_handle h, uint64_t n, unsigned width)
{
    unsigned char *p = malloc((size_t)n);
    if (!p) return RELO_ERR_HOST_MEMORY;
    for (uint64_t i = 0; i < n / width; i++) {
        uint32_t v = dc_count(i, 0, width);
        if (width == 1)
            p[i] = (unsigned char)v;
        else
            memcpy(p + i * width, &v, width);
    }
    relo_status s = relo_write(d, h, 0, p, n);
    free(p);
    return s;
}

/** Whether the first n bytes of h hold the counting pattern with add
 *  added to each element. */
static inline bool dc_reads_count(relo_device *d, relo_handle h, uint64_t n, uint32_t add, unsigned width)
{
    unsigned char *p = malloc((size_t)n);
    if (!p) return false;
    bool ok = relo_read(d, h, 0, p, n) == RELO_OK;
    for (uint64_t i = 0; ok && i < n / width; i++) {
        uint32_t v = 0;
        if (width == 1)
            v = p[i];
        else
            memcpy(&v, p + i * width, width);
        ok = v == dc_count(i, add, width);
    }
    free(p);
    return ok;
}

/** The kernel case: add1 through the binding of 1 MiB, then growth and a
 *  reclaim that moves the 1 MiB onto the 11 MiB page, then add1 through the
 *  new binding; the bytes show both additions. The caller has built the
 *  kernel (or skipped). */
static inline void dc_kernel_through_binding_across_relocation(dc_env e)
{
    fx f;
    require_true(dc_open(&f, &e, e.make_backend(e.env), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    unsigned width = e.add1_width;

    relo_handle h[2]; /* h, big */
    require_ok(relo_reserve(s, MiB, &h[0]));
    require_ok(dc_write_count(d, h[0], MiB, width));
    relo_binding before = fx_bind(s, h[0]);
    require_eq(e.launch_add1(e.env, 0, before), 0);
    require_eq(e.finish(e.env, 0), 0);
    expect_true(dc_reads_count(d, h[0], MiB, 1, width));

    /* Growth, then reclaim: the 1 MiB moves onto the 11 MiB page. */
    require_ok(relo_reserve(s, 10 * MiB, &h[1]));
    require_ok(relo_reclaim(s));
    expect_eq(fx_dev_stats(d).allocations_moved, 1);
    relo_binding after = fx_bind(s, h[0]);
    expect_true(after.buffer != before.buffer);
    expect_true(after.buffer == fx_bind(s, h[1]).buffer);
    require_eq(e.launch_add1(e.env, 0, after), 0);
    require_eq(e.finish(e.env, 0), 0);
    expect_true(dc_reads_count(d, h[0], MiB, 2, width));

    dc_release(d, h, 2);
    dc_close(&f, &e);
}

/* The two-stream case's setup: h[0] (on stream a) and h[1] (on b), 1 MiB
 * each with the counting pattern, then 10 MiB on each stream (h[2], h[3]),
 * which leaves both first pages outdated. */
static inline relo_status dc_two_streams_setup(const dc_env *e, fx *f, relo_handle h[4])
{
    relo_stream *sa = f->s, *sb = f->s2;
    relo_status st = relo_reserve(sa, MiB, &h[0]);
    if (st == RELO_OK) st = relo_reserve(sb, MiB, &h[1]);
    if (st == RELO_OK) st = dc_write_count(f->dev, h[0], MiB, e->add1_width);
    if (st == RELO_OK) st = dc_write_count(f->dev, h[1], MiB, e->add1_width);
    if (st == RELO_OK) st = relo_reserve(sa, 10 * MiB, &h[2]);
    if (st == RELO_OK) st = relo_reserve(sb, 10 * MiB, &h[3]);
    if (st == RELO_OK) expect_eq(fx_dev_stats(f->dev).outdated_pages, 2);
    return st;
}

/* What the device-wide reclaim of the two-stream case must leave: both
 * 1 MiB moved, no page outdated, and the bytes each stream's add1 wrote. */
static inline void dc_two_streams_moved(const dc_env *e, fx *f, const relo_handle h[4])
{
    relo_stats st = fx_dev_stats(f->dev);
    expect_eq(st.allocations_moved, 2);
    expect_eq(st.outdated_pages, 0);
    expect_true(dc_reads_count(f->dev, h[0], MiB, 1, e->add1_width));
    expect_true(dc_reads_count(f->dev, h[1], MiB, 1, e->add1_width));
}

#endif /* RELO_TEST_DEVICE_CASES_H */
