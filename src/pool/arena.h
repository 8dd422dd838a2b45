/*
 * pool/arena.h — adaptive pages (design §3.6): up to 64 sliced pools, one per
 * page size the workload grew through. New allocations come from the
 * current pool only; a request too large for its pages grows a new pool
 * with larger pages, and the old one becomes outdated: it serves nothing
 * new and gives each page back once it is empty.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_ARENA_H
#define RELO_ARENA_H

#include <stdbool.h>
#include <stdint.h>

#include "pool/pool.h"

#define RELO_ARENA_SLOTS 64

/** The arena's shape as the relocation trigger compares it (design §6.1). */
typedef struct relo_arena_shape {
    uint64_t current_pages;
    uint64_t outdated_pools;
    uint64_t outdated_pages;
    uint64_t guarded_outdated_pages;
} relo_arena_shape;

typedef struct relo_arena {
    const relo_pool_home *home; /* its pools'; alignment and max page come from it */
    relo_pool *slots[RELO_ARENA_SLOTS];
    int current;            /* slot of the current pool, -1 before the first */
    uint32_t pool_count;    /* slots holding a pool */
    uint64_t page_size;     /* current page size (the floor before the first) */
    uint64_t floor;         /* min(2 MiB, max page), rounded up to the alignment */
    bool stalled;           /* the last relocation moved nothing ... */
    relo_arena_shape stall; /* ... with the arena in this shape */
} relo_arena;

/** How a size fits the arena. */
typedef enum relo_fit {
    RELO_FIT_FITS = 0, /* current pages take it */
    RELO_FIT_GROW,     /* a pool with larger pages is needed */
    RELO_FIT_TOO_BIG,  /* larger than the largest page */
    RELO_FIT_COUNT
} relo_fit;

void relo__arena_init(relo_arena *arena, const relo_pool_home *home);


/**
 * Reserves size bytes in the arena for slot (state LIVE) or as a relocation
 * target (TARGET), growing when the size needs larger pages.
 * allow_new_page false: only room already held (a recording stream).
 * Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG; RELO_ERR_PAGE_SIZES_EXHAUSTED;
 * RELO_ERR_PAGE_UPDATE_FORBIDDEN (a new page was needed and not allowed);
 * RELO_ERR_OUT_OF_MEMORY and other backend refusals; RELO_ERR_HOST_MEMORY.
 * On failure nothing changed (a refused growth changes nothing).
 */
relo_status relo__arena_reserve(relo_arena *arena, uint64_t size, uint32_t slot, bool allow_new_page,
                                relo_slice **out);

/** The current pool, or NULL before the first reservation. */
relo_pool *relo__arena_current(const relo_arena *arena);

/** Frees the slots of outdated pools that hold no page. */
void relo__arena_drop_empty_pools(relo_arena *arena);

/** The shape the trigger compares. */
relo_arena_shape relo__arena_shape(const relo_arena *arena);

/** True when some pool is outdated. */
bool relo__arena_has_outdated(const relo_arena *arena);

/** Destroys every pool (device/stream destroy). */
void relo__arena_destroy(relo_arena *arena);

#endif /* RELO_ARENA_H */
