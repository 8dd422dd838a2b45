/*
 * pool.h — what every pool has in common: its pages, its accounting, and
 * the one path by which pages are taken from and given back to the backend.
 * The kinds (sliced, exclusive, persistent, dedicated) add their carving
 * rules in their own files.
 *
 * Protected by: the device lock, for every field.
 */
#ifndef RELO_POOL_H
#define RELO_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "free_index.h"
#include "occupancy.h"
#include "page.h"

struct relo_stream;
struct relo_device;

typedef enum relo_pool_kind {
    RELO_POOL_SLICED = 0,   /* fixed-size pages carved into slices */
    RELO_POOL_EXCLUSIVE,    /* one slice per page, pages reused whole */
    RELO_POOL_PERSISTENT,   /* exact-size buffers, kept until cleanup */
    RELO_POOL_DEDICATED,    /* one buffer per allocation */
    RELO_POOL_KIND_COUNT
} relo_pool_kind;

const char *relo__pool_kind_name(relo_pool_kind kind);

typedef struct relo_pool {
    relo_pool_kind kind;
    const char *name;           /* "small", "arena", "bucket", ... for reports */
    struct relo_stream *stream;
    uint64_t page_size;         /* sliced: every page; exclusive: largest size taken */
    int slot;                   /* arena slot, or -1 */
    bool outdated;              /* serves nothing new; pages go back once empty */
    bool periodic_release;      /* exclusive: the suspicion rule applies */
    bool best_fit;              /* sliced: free index by size (dense policy), else by address */
    bool variable_pages;        /* sliced: each new page sized to its request (dense large pool) */
    uint64_t granule;           /* variable_pages: new pages are multiples of this */
    uint64_t exact_hint;        /* variable_pages, set while a pass plans: an EXACT new page
                                   holds at least this many bytes (the rest of the source's
                                   allocations, so they share one page); 0 = none */
    uint64_t small_request_max; /* variable_pages: requests up to this ... */
    uint64_t small_request_page; /* ... get a new page of this size */
    uint64_t last_own_page;     /* variable_pages: the last larger request given a page of its
                                   own (a second one of that size gets a page of two copies
                                   where that strands less) */

    relo_page **pages;          /* every page held, page->index is the position */
    uint32_t page_count, page_cap;

    relo_free_index free;       /* sliced: free slices of pages that serve */
    relo_page *free_pages;      /* exclusive, persistent: pages with no allocation */
    relo_occupancy occupancy;   /* sliced: pages by how full they are, and the room that serves */

    double average;             /* exclusive: running average of request sizes */
    uint64_t reservations;      /* exclusive: reservations served */
    uint64_t check_every;       /* exclusive: reservations between suspicion checks */

    /* accounting, kept exact on every change */
    uint64_t allocations;       /* LIVE slices */
    uint64_t bytes_in_use;      /* their requested sizes */
    uint64_t bytes_padding;     /* their padding */
    uint64_t bytes_reserved;    /* sum of page sizes */
    uint64_t bytes_empty;       /* sizes of the pages with no allocation: what a trim may give back */
    uint64_t guarded_pages;
} relo_pool;

/** True when a page's free room may serve new reservations: no graph
 *  guards it and no compaction pass has fenced it off. */
static inline bool relo__page_serves(const relo_page *page) { return page->guards == 0 && !page->fenced; }

/** The pool's free-index operations, under the pool's rule. */
static inline void relo__pool_free_insert(relo_pool *pool, relo_slice *s) { relo__free_index_insert(&pool->free, s); }
static inline void relo__pool_free_remove(relo_pool *pool, relo_slice *s) { relo__free_index_remove(&pool->free, s); }

/** Sets up an empty pool. */
void relo__pool_init(relo_pool *pool, relo_pool_kind kind, const char *name,
                     struct relo_stream *stream, uint64_t page_size);

/**
 * Takes a buffer of size bytes from the backend and adds it as a page whose
 * whole range is one FREE slice (sliced pools insert it into the free
 * index, set up on the first page by the pool's best_fit rule).
 * Returns RELO_OK, RELO_ERR_HOST_MEMORY, or the backend's refusal; on
 * failure nothing changed.
 */
relo_status relo__pool_page_new(relo_pool *pool, uint64_t size, relo_page **out);

/** A backend buffer whose page is gone, waiting to be freed. */
typedef struct relo_buffer_free {
    void *buffer;
    uint64_t size;
} relo_buffer_free;

/** Gives an empty, unguarded page back to the backend. Never fails. */
void relo__pool_page_release(relo_pool *pool, relo_page *page);

/** As relo__pool_page_release, but the buffer is handed to the caller to
 *  free with the backend later (without the device lock); the bookkeeping
 *  (bytes reserved, counters) already says it is gone. */
void relo__pool_page_detach(relo_pool *pool, relo_page *page, relo_buffer_free *out);

/** Gives back every empty unguarded page. Returns how many went. */
uint32_t relo__pool_release_empty(relo_pool *pool);

/** Gives back every page, live or not (device and stream destroy). */
void relo__pool_destroy(relo_pool *pool);

/** Marks a FREE slice as holding an allocation of size bytes for slot (or
 *  as a TARGET when state says so), with the accounting. */
void relo__pool_slice_take(relo_pool *pool, relo_slice *slice, uint64_t size, uint32_t slot,
                           relo_slice_state state);

/**
 * Frees a LIVE or TARGET slice: merges room, updates the accounting, and
 * queues the page for release where its pool's rule says so (outdated
 * sliced pools and dedicated pools). A slice marked leak_on_free becomes
 * LEAKED instead. Never fails, never allocates.
 */
void relo__pool_slice_free(relo_pool *pool, relo_slice *slice);

/** Adds a guard; the first guard takes the page's room out of service. */
void relo__pool_page_guard(relo_pool *pool, relo_page *page);
/** Drops a guard; the last one puts the room back in service. */
void relo__pool_page_unguard(relo_pool *pool, relo_page *page);

/** Fences a page off for a compaction pass: its room serves nothing (so
 *  targets never land on a source) until relo__pool_page_unfence. */
void relo__pool_page_fence(relo_pool *pool, relo_page *page);
void relo__pool_page_unfence(relo_pool *pool, relo_page *page);

/** Adds a page with no allocation to the free-page list (exclusive,
 *  persistent). */
void relo__pool_free_page_push(relo_pool *pool, relo_page *page);
/** Removes a page from the free-page list. */
void relo__pool_free_page_remove(relo_pool *pool, relo_page *page);

/** Checks the pool's pages, slices and accounting. Returns false on the
 *  first broken invariant and says which through *why. */
bool relo__pool_check(const relo_pool *pool, const char **why);

/** Turns a TARGET slice into a LIVE allocation for slot (relocation commit). */
void relo__pool_slice_promote(relo_pool *pool, relo_slice *slice, uint64_t size, uint32_t slot);

/**
 * Packs a fenced sliced page's bookkeeping after its allocations slid down
 * (slide.h): every occupied slice, in address order, takes the lowest
 * offset after the one before it, and the page's free room becomes one FREE
 * slice at its end (left out of the free tree until the fence comes off).
 * Bytes are the caller's business. Never fails, never allocates.
 */
void relo__pool_page_pack(relo_pool *pool, relo_page *page);

/** Marks every FREE slice of a fenced page LEAKED: a slide's copies into
 *  them had an unknown outcome. */
void relo__pool_page_leak_free(relo_pool *pool, relo_page *page);

/** Marks a TARGET slice LEAKED: never reused (copy outcome unknown). */
void relo__pool_slice_leak(relo_pool *pool, relo_slice *slice);

#endif /* RELO_POOL_H */
