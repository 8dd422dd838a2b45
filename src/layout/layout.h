/*
 * layout/layout.h — how a stream's dynamic memory (RELO_MODE_AUTO, size > 0) is
 * carved into pools: the layouts, one file each behind one table of
 * operations, named after the placement (relo_placement) each carries out,
 * and the one place the device's desc picks among them.
 *
 *   packed     (layout/packed.c) the packed placement, the default
 *              (docs/placement.md): best fit in a fine and a large pool
 *              whose pages follow the workload;
 *   adaptive   (layout/adaptive.c) the adaptive placement: sizes ≤ 64 KiB
 *              in the small pool (8 MiB pages, first fit), the rest in the
 *              arena (pool/arena.h: one sliced pool per page size grown
 *              through);
 *   exclusive  (layout/exclusive.c) the exclusive placement: 24 exclusive
 *              pools of sizes spaced evenly in log scale.
 *
 * A layout knows pools and nothing above them: it gets its pools' home at
 * init. What moves (pass/relocation.c for the adaptive arena's outdated
 * pages, pass/compaction.c for packed) and when (policy/steps.c) lives in
 * the folders above and asks the layout through the table; the
 * persistent, dedicated and tiny pools every stream has are the stream's
 * (core/stream.h).
 *
 * Protected by: the device lock.
 */
#ifndef RELO_LAYOUT_H
#define RELO_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "pool/arena.h"
#include "pool/pool.h"

typedef enum relo_layout_kind {
    RELO_LAYOUT_KIND_PACKED = 0,
    RELO_LAYOUT_KIND_ADAPTIVE,
    RELO_LAYOUT_KIND_EXCLUSIVE,
    RELO_LAYOUT_KIND_COUNT
} relo_layout_kind;

/* ---- adaptive (the adaptive placement) ---------------------------------- */

#define RELO_SMALL_MAX (64 * RELO_KiB)
#define RELO_SMALL_PAGE (8 * RELO_MiB)

typedef struct relo_adaptive {
    relo_pool small;  /* ≤ 64 KiB */
    relo_arena arena; /* the rest */
} relo_adaptive;

/* ---- packed (the packed placement, the default) ------------------------- */

#define RELO_PACKED_POOLS 2
#define RELO_PACKED_FINE_MAX (1 * RELO_MiB)      /* fine pool: sizes up to this */
#define RELO_PACKED_FINE_PAGE (2 * RELO_MiB)     /* ... on pages of at most this */
#define RELO_PACKED_FINE_GRANULE (64 * RELO_KiB) /* ... in multiples of this */
#define RELO_PACKED_MEDIUM_MAX (10 * RELO_MiB)   /* large pool: a new page for sizes up to this */
#define RELO_PACKED_MEDIUM_PAGE (20 * RELO_MiB)  /* ... is this big */
#define RELO_PACKED_LARGE_GRANULE (2 * RELO_MiB) /* ... else its request rounded to this */
#define RELO_PACKED_SLACK_DIVISOR 16u            /* pack before a new page past live + live/16 */
#define RELO_PACKED_QUIET_PAGES 8u               /* new pages before packing is tried again in vain */
#define RELO_PACKED_PAGE_DIVISOR \
    64u /* small pages ≤ peak live / 64 (within floor and base), but
                                         at least the pool's largest_own (up to base) */

typedef struct relo_packed {
    relo_pool pools[RELO_PACKED_POOLS];      /* fine, large */
    uint32_t quiet;                          /* new pages before packing is tried again */
    uint64_t largest_own[RELO_PACKED_POOLS]; /* the largest request above each pool's small-request
                                               bound that needed a new page (0 = none yet) */
} relo_packed;

/* ---- exclusive (the exclusive placement) -------------------------------- */

#define RELO_BUCKETS 24

typedef struct relo_exclusive {
    relo_pool *pools; /* RELO_BUCKETS of them, allocated at init */
    uint32_t count;
} relo_exclusive;

/* ---- the table ---------------------------------------------------------- */

typedef struct relo_stream_layout relo_stream_layout;

typedef struct relo_layout_ops {
    relo_layout_kind kind;
    const char *name;
    /** Sets up the layout's pools in home. Returns RELO_OK or
     *  RELO_ERR_HOST_MEMORY (nothing allocated). */
    relo_status (*init)(relo_stream_layout *layout, const relo_pool_home *home);
    /**
     * Reserves size (> 0) bytes for slot; a new page only when
     * allow_new_page. Returns RELO_OK, RELO_ERR_BUFFER_TOO_BIG,
     * RELO_ERR_PAGE_UPDATE_FORBIDDEN (no room held, no new page allowed),
     * RELO_ERR_PAGE_SIZES_EXHAUSTED (adaptive: no arena slot left), the
     * backend's refusal or RELO_ERR_HOST_MEMORY; on failure nothing changed.
     */
    relo_status (*reserve)(relo_stream_layout *layout, uint64_t size, uint32_t slot, bool allow_new_page,
                           relo_slice **out);
    /** Calls fn on every pool, always in the same order. */
    void (*each_pool)(relo_stream_layout *layout, void (*fn)(relo_pool *, void *), void *user);
    /** Gives back every page and frees what init and growth allocated. */
    void (*destroy)(relo_stream_layout *layout);
    /** The layout's own invariants (its pools check themselves). */
    bool (*check)(const relo_stream_layout *layout, const char **why);
    /**
     * Asked when a reservation of size bytes needs a new page (NULL: the
     * layout never packs first). live and reserved are the bytes live and
     * held in this layout's pools over the device, *live_peak the most
     * bytes live it has seen (updated here), may_move whether relocation
     * may run now. Returns true when the pools should be packed before the
     * page is taken, with the room packing should spare in *page (the
     * page's size, or the request's own where the page would hold copies).
     */
    bool (*want_pack)(relo_stream_layout *layout, uint64_t size, uint64_t live, uint64_t reserved,
                      bool may_move, uint64_t *live_peak, uint64_t *page);
    /**
     * Reserves size bytes for slot on a new page without searching the room
     * held: called (with a new page allowed) right after reserve found no
     * room for the same size and nothing freed any since, so the search
     * would fail again. Returns as reserve. A layout with want_pack has it.
     */
    relo_status (*reserve_new_page)(relo_stream_layout *layout, uint64_t size, uint32_t slot,
                                    relo_slice **out);
    /** After the pack want_pack asked for; gave_back: pages went back. */
    void (*pack_done)(relo_stream_layout *layout, bool gave_back);
    /** Adds the bytes live and held in the pools packing weighs (NULL: none). */
    void (*held)(const relo_stream_layout *layout, uint64_t *live, uint64_t *reserved);
    /**
     * The k-th pool whose pages packing empties into its other pages (k
     * from 0; NULL past the last), with in *spill the pool whose room may
     * also take its allocations when the device refused a page (or NULL).
     * NULL op: the layout never packs (relo__layout_packs).
     */
    relo_pool *(*pack_pool)(relo_stream_layout *layout, uint32_t k, relo_pool **spill);
    /** The pool a request of padded bytes goes to, where room is made for
     *  it when the device refused a page (a hole cleared, pages packed in
     *  place). NULL op, or NULL: no such room is made. */
    relo_pool *(*room_pool)(relo_stream_layout *layout, uint64_t padded);
    /** After a reservation the layout served from pool: its own periodic
     *  rule, if any (NULL op: none); may_release is false while a stream
     *  records (no page may go back then). The device lock is held. */
    void (*served)(relo_stream_layout *layout, relo_pool *pool, bool may_release);
} relo_layout_ops;

/** A stream's layout: its table and only its own state (the largest,
 *  the adaptive layout's, sets the size; the exclusive layout's buckets
 *  live apart). */
struct relo_stream_layout {
    const relo_layout_ops *ops;
    union {
        relo_adaptive adaptive;
        relo_packed packed;
        relo_exclusive exclusive;
    };
};

extern const relo_layout_ops relo__layout_adaptive;
extern const relo_layout_ops relo__layout_packed;
extern const relo_layout_ops relo__layout_exclusive;

/** The layout of a placement (DEFAULT resolved, as relo_device_create
 *  does, to PACKED): the one placement switch. */
static inline const relo_layout_ops *relo__layout_pick(relo_placement placement)
{
    switch (placement) {
    case RELO_PLACEMENT_ADAPTIVE: return &relo__layout_adaptive;
    case RELO_PLACEMENT_EXCLUSIVE: return &relo__layout_exclusive;
    case RELO_PLACEMENT_DEFAULT:
    case RELO_PLACEMENT_PACKED:
    case RELO_PLACEMENT_COUNT: break;
    }
    return &relo__layout_packed;
}

/** The adaptive layout's arena, or NULL under another layout. */
static inline relo_arena *relo__layout_arena(const relo_stream_layout *layout)
{
    return layout->ops->kind == RELO_LAYOUT_KIND_ADAPTIVE ? (relo_arena *)&layout->adaptive.arena : NULL;
}

/** Whether the layout packs live allocations (it has pools to pack). */
static inline bool relo__layout_packs(const relo_layout_ops *ops)
{
    return ops->pack_pool != NULL;
}

/** The pool whose room may take the allocations of pool's pages when the
 *  device refused a page, or NULL (pool is no pool the layout packs, or
 *  has no such pool). */
static inline relo_pool *relo__layout_spill_pool(relo_stream_layout *layout, const relo_pool *pool)
{
    if (!layout->ops->pack_pool) return NULL;
    relo_pool *spill = NULL;
    for (uint32_t k = 0;; k++) {
        relo_pool *p = layout->ops->pack_pool(layout, k, &spill);
        if (!p) return NULL;
        if (p == pool) return spill;
    }
}

#endif /* RELO_LAYOUT_H */
