/*
 * mem/page.h — pages (one backend buffer each) and slices (contiguous ranges of
 * a page). All bookkeeping lives here, out of band: nothing is ever written
 * into device memory.
 *
 * Every page keeps its slices in an address-ordered doubly linked list that
 * covers the page exactly, so a freed slice finds its neighbours in O(1).
 * Free slices of a sliced page also sit in their pool's free index
 * (mem/free_index.h) while the page serves (no guard, no fence). Slice nodes come from a per-device slab so the
 * hot path calls malloc rarely and release never allocates.
 *
 * Protected by: the device lock, for every field.
 */
#ifndef RELO_PAGE_H
#define RELO_PAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "relo.h"
#include "base/util.h"

struct relo_pool;
struct relo_device;

/** What a slice holds. */
typedef enum relo_slice_state {
    RELO_SLICE_FREE = 0, /* room; in the free index while its page serves */
    RELO_SLICE_LIVE,     /* an allocation: slot names its handle */
    RELO_SLICE_TARGET,   /* reserved by a relocation plan, not yet committed */
    RELO_SLICE_LEAKED,   /* a copy's outcome is unknown: never reused */
    RELO_SLICE_STATE_COUNT
} relo_slice_state;

const char *relo__slice_state_name(relo_slice_state state);

/**
 * The bytes a request of size bytes takes: size rounded up to a multiple
 * of alignment (≥ 1), into *padded. The one place sizes are padded, for
 * every pool and for routing. Returns false, *padded unspecified, when
 * that overflows or exceeds limit (UINT64_MAX for none). Size 0 pads to
 * 0: the callers that give it room say how much.
 */
static inline bool relo__pad_size(uint64_t size, uint64_t alignment, uint64_t limit, uint64_t *padded)
{
    if ((alignment & (alignment - 1)) == 0) {
        /* Every backend's alignment so far: a mask, not a division, on
         * the path of every reservation. */
        uint64_t mask = alignment - 1;
        if (size > UINT64_MAX - mask) return false;
        *padded = (size + mask) & ~mask;
        return *padded <= limit;
    }
    return relo__round_up(size, alignment, padded) && *padded <= limit;
}

typedef struct relo_slice {
    uint64_t offset; /* from the start of the page */
    uint64_t length; /* bytes of the page it covers (size + padding) */
    uint64_t size;   /* requested bytes; 0 for free slices */
    struct relo_page *page;
    struct relo_slice *prev; /* address order within the page */
    struct relo_slice *next;
    struct relo_slice *left;  /* free index: treap child or class list previous;
                                   slab free list when the node is unused */
    struct relo_slice *right; /* free index: treap child or class list next */
    uint64_t max_length;      /* address treap: largest length in this subtree */
    union {
        uint32_t priority; /* address treap: heap priority, drawn at each insert */
        uint32_t bin;      /* size classes: the class list it is in (f * RELO_FREE_SL_COUNT + s),
                                   kept so a remove need not work it out again */
    };
    uint32_t slot;     /* handle slot index of a LIVE slice */
    uint32_t move;     /* LIVE source of the pass in flight: move index + 1; 0 = none */
    uint8_t state;     /* relo_slice_state */
    bool leak_on_free; /* a copy from here had an unknown outcome */
} relo_slice;

typedef struct relo_page {
    void *buffer;     /* the backend's buffer */
    uint64_t address; /* device address, 0 if none */
    uint64_t size;    /* bytes of the buffer */
    uint64_t order;   /* creation order in the device: lower = preferred */
    struct relo_pool *pool;
    uint32_t index;          /* position in pool->pages */
    uint32_t occupied;       /* slices that are not FREE */
    uint64_t occupied_bytes; /* their lengths */
    uint32_t live;           /* LIVE slices: the page can move whole when live == occupied */
    uint64_t live_size;      /* their requested sizes */
    uint32_t guards;         /* sealed graphs using this page */
    uint32_t transfers;      /* relo_read/relo_write in progress without the lock:
                                   no source, and not given back */
    uint32_t touch_stamp;    /* capture epoch that last touched it */
    uint32_t suspicion;      /* exclusive pools: how unused it looks */
    bool fenced;             /* a compaction source: its room serves nothing */
    bool pending;            /* queued on the device's release list */
    bool on_free_list;       /* exclusive/persistent: in pool->free_pages */
    struct relo_page *pending_next;
    struct relo_page *free_prev; /* exclusive/persistent: pool's free pages */
    struct relo_page *free_next;
    relo_slice *first;          /* lowest-address slice */
    struct relo_page *occ_prev; /* sliced pools: the page's occupancy list (pool/occupancy.h) */
    struct relo_page *occ_next;
    uint64_t occ_room;                /* its free bytes counted in the pool's room (0: serves nothing) */
    struct relo_page *occ_dirty_next; /* the pool's touched pages, while occ_dirty, linked both */
    struct relo_page *occ_dirty_prev; /* ways so one leaves without settling the rest */
    uint16_t occ_list;                /* which list: RELO_OCC_NONE, RELO_OCC_EMPTY, 2 + class list */
    bool occ_dirty;                   /* changed since its occupancy list was last settled */
} relo_page;

/** A slab of slice nodes and page records, both allocated in chunks, so
 *  that slice churn and new pages seldom reach malloc. */
typedef struct relo_slice_slab {
    relo_slice *free; /* free nodes, linked through left */
    void **chunks;    /* every chunk allocated (nodes and records), for destroy */
    uint32_t chunk_count, chunk_cap;
    relo_page *free_pages; /* page records not in use, linked through free_next */
} relo_slice_slab;

/** Adds a chunk of free nodes to the slab. Returns false when host memory
 *  ran out (nothing changed). */
bool relo__slab_grow(relo_slice_slab *slab);

/* Taking and giving back a node run several times on every reservation
 * and release: inline, so they cost no call. */

/** Takes a node (zeroed). NULL: host memory ran out. A node gets its
 *  treap priority when it enters an address treap (mem/free_index.h), not
 *  here: most nodes never do (every node of a best-fit pool, and the
 *  allocated part of every carve). */
static inline relo_slice *relo__slice_new(relo_slice_slab *slab)
{
    if (!slab->free && !relo__slab_grow(slab)) return NULL;
    relo_slice *s = slab->free;
    slab->free = s->left;
    /* Zeroed member by member: a block clear (a call to memset, or a
     * string store) of its eleven words costs more than the stores, and
     * inline the compiler drops the stores its caller makes again. */
    s->offset = s->length = s->size = s->max_length = 0;
    s->page = NULL;
    s->prev = s->next = s->left = s->right = NULL;
    s->priority = 0;
    s->slot = s->move = 0;
    s->state = RELO_SLICE_FREE;
    s->leak_on_free = false;
    return s;
}

/** Returns a node to the slab. Never fails, never allocates. */
static inline void relo__slice_delete(relo_slice_slab *slab, relo_slice *slice)
{
    slice->left = slab->free;
    slice->page = NULL;
    slab->free = slice;
}
/** Takes a page record (zeroed). NULL: host memory ran out. */
relo_page *relo__page_new(relo_slice_slab *slab);
/** Keeps a page record for the next relo__page_new (records are freed
 *  only with the slab). Never fails. */
void relo__page_delete(relo_slice_slab *slab, relo_page *page);
/** Frees every chunk, and with them every slice node and page record. */
void relo__slab_destroy(relo_slice_slab *slab);

#endif /* RELO_PAGE_H */
