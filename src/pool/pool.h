/*
 * pool/pool.h — what every pool has in common: its pages, its accounting, and
 * the one path by which pages are taken from and given back to the backend.
 * The kinds add their carving rules: pool/sliced_pool.c carves pages into
 * slices; pool/unsliced_pool.c gives each allocation a page (exclusive,
 * persistent, dedicated). Their calls are declared here too.
 *
 * Protected by: the device lock, for every field.
 */
#ifndef RELO_POOL_H
#define RELO_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "mem/free_index.h"
#include "mem/handle.h"
#include "pool/occupancy.h"
#include "mem/page.h"
#include "backend/releaser.h"

/** Counters of events a stream and a device keep for relo_stats
 *  (monotonic; longest_pass_ns is a maximum; gauges are summed from the
 *  pools). pool/pool.c changes the backend and leak counters,
 *  pass/relocation.c and core/counters.c the rest. */
#define RELO_COUNTER_LIST(X) \
    X(relocations)           \
    X(relocations_abandoned) \
    X(allocations_moved)     \
    X(bytes_moved)           \
    X(bytes_leaked)          \
    X(pages_released)        \
    X(backend_allocs)        \
    X(backend_frees)         \
    X(longest_pass_ns)       \
    X(allocations_total)     \
    X(bytes_allocated_total) \
    X(frees_total)           \
    X(bytes_freed_total)

typedef struct relo_counters {
#define RELO_X_(name) uint64_t name;
    RELO_COUNTER_LIST(RELO_X_)
#undef RELO_X_
} relo_counters;

/** Bytes held and backend calls made, as a stream and a device count them;
 *  pool/pool.c keeps both exact on every page taken or given back. */
typedef struct relo_held {
    uint64_t bytes_reserved; /* pages held */
    uint64_t peak_bytes_reserved;
    uint64_t bytes_empty;   /* of which pages with no allocation (pass/trim.c) */
    relo_counters counters; /* backend_allocs, backend_frees, pages_released and
                                       bytes_leaked change here; the rest above */
} relo_held;

/**
 * Where a pool lives: everything it needs from the layers above, handed to
 * it at init, so that no pool knows what a stream or a device is. The
 * stream that owns the pools fills one in (core/stream_state.c); the
 * pointers outlive every pool that holds them.
 */
typedef struct relo_pool_home {
    relo_backend *backend;      /* pages come from and go back to it */
    relo_releaser *releaser;    /* drained when the backend refuses a page */
    relo_slice_slab *slab;      /* slice nodes */
    relo_handle_table *handles; /* a packed page withdraws its slots' bindings */
    uint64_t alignment;         /* the backend's: slices start at multiples of it */
    uint64_t max_page;          /* the backend's largest buffer, a multiple of alignment */
    uint64_t granule;           /* the backend's allocation granule; 1 = bytes */
    uint64_t *page_order;       /* the next page's order number (shared by every pool) */
    relo_page **pending;        /* the queue of empty pages to give back at cleanup */
    relo_held *held[2];         /* counted here: the stream's, then the device's */
    void *owner;                /* the stream, for the layers above (relo__pool_stream) */
} relo_pool_home;

typedef enum relo_pool_kind {
    RELO_POOL_SLICED = 0, /* fixed-size pages carved into slices */
    RELO_POOL_EXCLUSIVE,  /* one slice per page, pages reused whole */
    RELO_POOL_PERSISTENT, /* exact-size buffers, kept until cleanup */
    RELO_POOL_DEDICATED,  /* one buffer per allocation */
    RELO_POOL_KIND_COUNT
} relo_pool_kind;

const char *relo__pool_kind_name(relo_pool_kind kind);

/* How many distinct sizes of larger requests with a page of their own a
 * pool of variable pages remembers, to tell a repeated size (a layer's
 * activations, interleaved with other layers' sizes) from one seen once. */
#define RELO_OWN_SIZES 4u

typedef struct relo_pool {
    relo_pool_kind kind;
    const char *name; /* "small", "arena", "bucket", ... for reports */
    const relo_pool_home *home;
    uint64_t page_size;                 /* sliced: every page; exclusive: largest size taken */
    int slot;                           /* arena slot, or -1 */
    bool outdated;                      /* serves nothing new; pages go back once empty */
    bool periodic_release;              /* exclusive: the suspicion rule applies */
    bool best_fit;                      /* sliced: free index by size (packed placement), else by address */
    bool variable_pages;                /* sliced: each new page sized to its request (packed: large pool) */
    uint64_t granule;                   /* variable_pages: new pages are multiples of this */
    uint64_t exact_hint;                /* variable_pages, set while a pass plans: an EXACT new page
                                   holds at least this many bytes (the rest of the source's
                                   allocations, so they share one page); 0 = none */
    struct relo_page *fill_page;        /* sliced, set only while a pass plans a run into one page:
                                   reservations take its free room first (lowest address
                                   that fits), before the free index; NULL otherwise */
    uint64_t small_request_max;         /* variable_pages: requests up to this ... */
    uint64_t small_request_page;        /* ... get a new page of this size */
    uint64_t own_sizes[RELO_OWN_SIZES]; /* variable_pages: the last RELO_OWN_SIZES distinct larger
                                   requests given a page of their own (one of them again gets a
                                   page of several copies where that strands less); 0 = none */
    uint32_t own_next;                  /* ... the entry the next new size replaces */

    relo_page **pages; /* every page held, page->index is the position */
    uint32_t page_count, page_cap;

    relo_free_index free;     /* sliced: free slices of pages that serve */
    relo_page *free_pages;    /* exclusive, persistent: pages with no allocation */
    relo_occupancy occupancy; /* sliced: pages by how full they are, and the room that serves */

    double average;        /* exclusive: running average of request sizes */
    uint64_t reservations; /* exclusive: reservations served */
    uint64_t check_every;  /* exclusive: reservations between suspicion checks */

    /* accounting, kept exact on every change */
    uint64_t allocations;    /* LIVE slices */
    uint64_t bytes_in_use;   /* their requested sizes */
    uint64_t bytes_padding;  /* their padding */
    uint64_t bytes_reserved; /* sum of page sizes */
    uint64_t bytes_empty;    /* sizes of the pages with no allocation: what a trim may give back */
    uint64_t guarded_pages;
} relo_pool;

/** True when a page's free room may serve new reservations: no graph
 *  guards it and no compaction pass has fenced it off. */
static inline bool relo__page_serves(const relo_page *page)
{
    return page->guards == 0 && !page->fenced;
}

/** The pool's free-index operations, under the pool's rule. */
static inline void relo__pool_free_insert(relo_pool *pool, relo_slice *s)
{
    relo__free_index_insert(&pool->free, s);
}
static inline void relo__pool_free_remove(relo_pool *pool, relo_slice *s)
{
    relo__free_index_remove(&pool->free, s);
}

/** Sets up an empty pool. */
void relo__pool_init(relo_pool *pool, relo_pool_kind kind, const char *name, const relo_pool_home *home,
                     uint64_t page_size);

/** Queues an empty page to go back at the next cleanup (no-op if queued). */
void relo__pool_queue_release(relo_pool *pool, relo_page *page);

/**
 * Takes a buffer of size bytes from the backend and adds it as a page whose
 * whole range is one FREE slice (sliced pools insert it into the free
 * index, set up on the first page by the pool's best_fit rule).
 * Returns RELO_OK, RELO_ERR_HOST_MEMORY, or the backend's refusal; on
 * failure nothing changed.
 */
relo_status relo__pool_page_new(relo_pool *pool, uint64_t size, relo_page **out);

/** Gives an empty, unguarded page back to the backend. Never fails. */
void relo__pool_page_release(relo_pool *pool, relo_page *page);


/** Buffers a relo_buffer_batch holds before it needs the heap: the pages a
 *  trim or a cleanup usually gives back at once. */
#define RELO_BUFFER_BATCH_INLINE 8u

/** Buffers of pages taken out of their pools, waiting to be freed without
 *  the device lock (relo__device_free_batch). Set up with
 *  relo__buffer_batch_init; never copied (bufs may point into it). */
typedef struct relo_buffer_batch {
    relo_buffer_free *bufs; /* inline_bufs, or from the heap when longer */
    uint32_t count, cap;
    relo_buffer_free inline_bufs[RELO_BUFFER_BATCH_INLINE];
} relo_buffer_batch;

/** An empty batch, in its inline part (a batch that stays short, as most
 *  do, costs no trip to malloc). */
static inline void relo__buffer_batch_init(relo_buffer_batch *batch)
{
    batch->bufs = batch->inline_bufs;
    batch->count = 0;
    batch->cap = RELO_BUFFER_BATCH_INLINE;
}

/** As relo__pool_page_detach, into batch; when the batch cannot grow (host
 *  memory), the page goes back to the backend at once instead. Never
 *  fails. */
void relo__pool_page_collect(relo_pool *pool, relo_page *page, relo_buffer_batch *batch);

/** Gives back every empty page that nothing holds (no guard, not pending,
 *  no fence, no transfer): into batch (relo__pool_page_collect) for the
 *  caller to free without the device lock, or at once when batch is NULL.
 *  Returns how many went. */
uint32_t relo__pool_release_empty(relo_pool *pool, relo_buffer_batch *batch);

/** Gives back every page, live or not (device and stream destroy). */
void relo__pool_destroy(relo_pool *pool);

/** Adds a page's bytes to the empty bytes of the pool and its tallies
 *  (now_empty), or takes them out: its emptiness changed. */
void relo__pool_empty_changed(relo_pool *pool, const relo_page *page, bool now_empty);

/** Removes a page from the free-page list. */
void relo__pool_free_page_remove(relo_pool *pool, relo_page *page);

/** Marks a FREE slice as holding an allocation of size bytes for slot (or
 *  as a TARGET when state says so), with the accounting. Inline: every
 *  reservation takes a slice. */
static inline void relo__pool_slice_take(relo_pool *pool, relo_slice *slice, uint64_t size, uint32_t slot,
                                         relo_slice_state state)
{
    relo_page *page = slice->page;
    RELO_ASSERT(slice->state == RELO_SLICE_FREE);
    slice->state = (uint8_t)state;
    slice->size = size;
    slice->slot = slot;
    slice->leak_on_free = false;
    if (page->occupied == 0) relo__pool_empty_changed(pool, page, false);
    page->occupied++;
    page->occupied_bytes += slice->length;
    if (page->on_free_list) relo__pool_free_page_remove(pool, page);
    if (state == RELO_SLICE_LIVE) {
        page->live++;
        page->live_size += size;
        pool->allocations++;
        pool->bytes_in_use += size;
        pool->bytes_padding += slice->length - size;
    }
    relo__occupancy_touch(&pool->occupancy, page);
}

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


/** What the layers above check of a pool's live slices and pages as
 *  relo__pool_check walks them (api/check.c: the open pass, the handles). */
typedef struct relo_pool_checker {
    /* A LIVE slice. Returns false, with *why, on a broken invariant. */
    bool (*live)(void *user, const relo_slice *slice, const char **why);
    /* A page, after its slices. */
    bool (*page)(void *user, const relo_page *page, const char **why);
    void *user;
} relo_pool_checker;

/** Checks the pool's pages, slices and accounting, and through checker
 *  (NULL: none) what the layers above know of them. Returns false on the
 *  first broken invariant and says which through *why. */
bool relo__pool_check(const relo_pool *pool, const relo_pool_checker *checker, const char **why);

/** Turns a TARGET slice into a LIVE allocation for slot (relocation commit). */
void relo__pool_slice_promote(relo_pool *pool, relo_slice *slice, uint64_t size, uint32_t slot);

/**
 * Packs a fenced sliced page's bookkeeping after its allocations slid down
 * (pass/slide.c): every occupied slice, in address order, takes the lowest
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

/* ---- sliced pools (pool/sliced_pool.c) -----------------------------------
 * Pages of one size (or, for variable pages, sized to their requests)
 * carved into slices (design §3.1): first fit by address through the
 * treap, or best fit by size class (best_fit, the packed layout's pools). */

/**
 * Carves size bytes (padded to the alignment) for slot, with state LIVE or
 * TARGET, from the lowest page and lowest address that fits (best fit in a
 * best_fit pool; first the pool's fill_page, lowest address, while a pass
 * sets one); takes a new page only when allow_new_page.
 * Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG (padded size > page size);
 * RELO_ERR_PAGE_UPDATE_FORBIDDEN (no room held and no new page allowed);
 * the backend's refusal; RELO_ERR_HOST_MEMORY. On failure nothing changed.
 */
relo_status relo__sliced_reserve(relo_pool *pool, uint64_t size, uint32_t slot, relo_slice_state state,
                                 bool allow_new_page, relo_slice **out);

/** Whether a reservation may add a page, and of which size. */
typedef enum relo_new_page {
    RELO_NEW_PAGE_NONE = 0,        /* only room already held */
    RELO_NEW_PAGE_POOL_RULE,       /* a page as the pool makes them */
    RELO_NEW_PAGE_EXACT,           /* variable pages: the request rounded to the granule */
    RELO_NEW_PAGE_EXACT_OR_COPIES, /* as EXACT, except that a larger request with nothing else
                                 of its run to share the page takes the pool rule's page,
                                 copies of a recent size where that strands less (packing
                                 under memory pressure) */
    RELO_NEW_PAGE_ONLY,            /* as POOL_RULE, without searching the room held: the caller
                                 has just searched it in vain for the same size, and nothing
                                 has freed room since */
    RELO_NEW_PAGE_COUNT
} relo_new_page;

/** relo__sliced_reserve with the new-page rule spelled out. */
relo_status relo__sliced_reserve_in(relo_pool *pool, uint64_t size, uint32_t slot, relo_slice_state state,
                                    relo_new_page new_page, relo_slice **out);

/** relo__sliced_reserve_in for a caller that has padded the size already:
 *  length is size (> 0) padded to the alignment by relo__pad_size.
 *  Returns as relo__sliced_reserve_in. */
relo_status relo__sliced_reserve_padded(relo_pool *pool, uint64_t size, uint64_t length, uint32_t slot,
                                        relo_slice_state state, relo_new_page new_page, relo_slice **out);

/** The size of the page a reservation of length (padded) bytes would add:
 *  the pool's page size, or for variable pages the request's own rule. */
uint64_t relo__sliced_new_page_size(const relo_pool *pool, uint64_t length);

/* ---- unsliced pools (pool/unsliced_pool.c): one allocation per page -----
 * exclusive   pages reused whole (design §3.2); page size follows a running
 *             average of request sizes; free pages that stay unused through
 *             enough periodic checks go back (the suspicion rule). The tiny
 *             pool and the exclusive placement's buckets are exclusive pools.
 * persistent  exact-size buffers (design §3.3): a request reuses a free
 *             buffer of exactly its padded size, else takes a new one; freed
 *             buffers stay until an explicit cleanup. Weights live here, and
 *             so do a graph capture's allocations.
 * dedicated   one exact-size buffer per allocation (design §3.4), given back
 *             at the first cleanup after it is freed. */

/** Sets up an exclusive pool taking sizes up to max_size. periodic: the
 *  suspicion rule gives unused pages back. */
void relo__exclusive_init(relo_pool *pool, const relo_pool_home *home, const char *name, uint64_t max_size,
                          bool periodic);

/** True when a free, unguarded page of the pool fits size. */
bool relo__exclusive_has_fit(const relo_pool *pool, uint64_t size);

/**
 * Reserves size bytes for slot: the least suspected free page that fits,
 * else a new page of max(average, size) when allow_new_page.
 * Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG; RELO_ERR_PAGE_UPDATE_FORBIDDEN;
 * the backend's refusal; RELO_ERR_HOST_MEMORY. Nothing changes on failure.
 */
relo_status relo__exclusive_reserve(relo_pool *pool, uint64_t size, uint32_t slot, bool allow_new_page,
                                    relo_slice **out);

/** The periodic check: raises the suspicion of free pages and gives back
 *  those that reach 5. Returns pages released. */
uint32_t relo__exclusive_check(relo_pool *pool);

/** Reserves size bytes for slot. Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG;
 *  RELO_ERR_PAGE_UPDATE_FORBIDDEN (a new buffer needed, not allowed); the
 *  backend's refusal; RELO_ERR_HOST_MEMORY. Nothing changes on failure. */
relo_status relo__persistent_reserve(relo_pool *pool, uint64_t size, uint32_t slot, bool allow_new_page,
                                     relo_slice **out);

/** Reserves size bytes for slot in a buffer of its own. Returns RELO_OK;
 *  RELO_ERR_BUFFER_TOO_BIG; RELO_ERR_PAGE_UPDATE_FORBIDDEN (not allowed to
 *  add a page); the backend's refusal; RELO_ERR_HOST_MEMORY. */
relo_status relo__dedicated_reserve(relo_pool *pool, uint64_t size, uint32_t slot, bool allow_new_page,
                                    relo_slice **out);

#endif /* RELO_POOL_H */
