/*
 * mock_home.h — a pool home (src/pool/pool.h) built by hand over the mock
 * backend, for unit tests that drive a pool or an arena alone: no device,
 * no stream. It is filled as relo__stream_init fills a stream's: the
 * backend, a page releaser that never started (so nothing is queued to
 * drain), a slab of slice nodes, a handle table, the backend's alignment,
 * largest page and granule, the page order, the queue of empty pages to
 * give back, and the two tallies a stream and a device keep.
 *
 * mock_home_check runs each pool's own invariant checker and then checks
 * what the pools share with their home: the tallies and the backend hold
 * exactly the pools' pages, and every queued page is marked as queued.
 *
 * Include after check.h.
 */
#ifndef RELO_TEST_MOCK_HOME_H
#define RELO_TEST_MOCK_HOME_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mock_backend.h"
#include "pool/pool.h"

typedef struct mock_home {
    mock_ctx *mock; /* the backend's state (large: from the heap) */
    relo_backend *backend;
    relo_releaser releaser; /* never started */
    relo_slice_slab slab;
    relo_handle_table handles;
    uint64_t page_order;
    relo_page *pending; /* empty pages queued to go back */
    relo_held held[2];  /* a stream's and a device's tallies */
    relo_pool_home home;
} mock_home;

/** Builds h over a mock backend of the given alignment, largest page and
 *  granule (0 or 1: bytes). False when the backend or the handle table
 *  cannot be made. */
static inline bool mock_home_open(mock_home *h, uint64_t alignment, uint64_t max_page, uint64_t granule)
{
    memset(h, 0, sizeof *h);
    relo_backend_props props = {alignment, max_page, 0, granule};
    h->mock = calloc(1, sizeof *h->mock);
    if (!h->mock || mock_backend_create(h->mock, &props, &h->backend) != RELO_OK) return false;
    if (relo__handle_table_init(&h->handles) != RELO_OK) return false;
    h->home = (relo_pool_home){
        .backend = h->backend,
        .releaser = &h->releaser,
        .slab = &h->slab,
        .handles = &h->handles,
        .alignment = alignment,
        .max_page = max_page - max_page % alignment,
        .granule = granule > 1 ? granule : 1,
        .page_order = &h->page_order,
        .pending = &h->pending,
        .held = {&h->held[0], &h->held[1]},
        .owner = NULL,
    };
    return true;
}

/** A fresh handle slot's index, as a reservation takes one for a LIVE
 *  slice (a pool withdraws its binding when a packed page moves it). */
static inline uint32_t mock_home_slot(mock_home *h)
{
    relo_slot *s = NULL;
    expect_ok(relo__handle_alloc(&h->handles, &s));
    return s ? s->index : 0;
}

/** Gives back the queued pages that are empty and unguarded, as a
 *  device's cleanup does; returns how many went. */
static inline uint32_t mock_home_cleanup(mock_home *h)
{
    uint32_t n = 0;
    while (h->pending) {
        relo_page *p = h->pending;
        h->pending = p->pending_next;
        p->pending_next = NULL;
        p->pending = false;
        if (p->occupied == 0 && p->guards == 0) {
            relo__pool_page_release(p->pool, p);
            n++;
        }
    }
    return n;
}

/* Reports a broken invariant and returns false. */
static inline bool mock_home_broken_(const char *what)
{
    fprintf(stderr, "  broken: %s\n", what);
    return false;
}

/** Each of the n pools passes relo__pool_check, and the home agrees with
 *  them: both tallies hold the pools' bytes and empty bytes, the backend
 *  holds their pages, and the queue holds only pages marked queued. */
static inline bool mock_home_check(const mock_home *h, relo_pool *const *pools, int n)
{
    uint64_t reserved = 0, empty = 0, pages = 0;
    for (int i = 0; i < n; i++) {
        const char *why = NULL;
        if (!relo__pool_check(pools[i], NULL, &why)) return mock_home_broken_(why);
        reserved += pools[i]->bytes_reserved;
        empty += pools[i]->bytes_empty;
        pages += pools[i]->page_count;
    }
    for (int i = 0; i < 2; i++) {
        if (h->held[i].bytes_reserved != reserved) return mock_home_broken_("a tally's reserved bytes");
        if (h->held[i].bytes_empty != empty) return mock_home_broken_("a tally's empty bytes");
        if (h->held[i].peak_bytes_reserved < reserved) return mock_home_broken_("a tally's peak");
    }
    if (h->mock->bytes_held != reserved || h->mock->buffers_live != pages)
        return mock_home_broken_("the backend holds other buffers than the pools' pages");
    for (const relo_page *p = h->pending; p; p = p->pending_next)
        if (!p->pending) return mock_home_broken_("a queued page is not marked pending");
    return true;
}

/** mock_home_check of one pool. */
static inline bool mock_home_check1(const mock_home *h, relo_pool *pool)
{
    return mock_home_check(h, &pool, 1);
}

/** Frees h; every pool over it must be destroyed first (checked: the
 *  backend holds nothing then). */
static inline void mock_home_close(mock_home *h)
{
    expect_eq(h->mock->buffers_live, 0);
    expect_eq(h->held[0].bytes_reserved, 0);
    relo__handle_table_destroy(&h->handles);
    relo__slab_destroy(&h->slab);
    relo_backend_destroy(h->backend);
    free(h->mock);
    memset(h, 0, sizeof *h);
}

#endif /* RELO_TEST_MOCK_HOME_H */
