/*
 * torch_block.h — the blocks of the PyTorch allocator models: pieces of a
 * segment, in address order, each used, free or (expandable segments only)
 * unmapped.
 *
 * Blocks live in one growing array and name each other by index, so a
 * model keeps no pointers that a reallocation of the array would break.
 * A block's neighbours are the blocks right below and above it in the same
 * segment; TORCH_NONE marks a segment's ends. Not thread-safe.
 */
#ifndef RELO_TOOLS_TORCH_BLOCK_H
#define RELO_TOOLS_TORCH_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "sorted_index.h"

/** "No block": the neighbour beyond a segment's end. */
#define TORCH_NONE UINT32_MAX

typedef enum torch_block_state {
    TORCH_BLOCK_FREE = 0, /**< mapped and cached, can serve a request */
    TORCH_BLOCK_USED,     /**< holds a live allocation */
    TORCH_BLOCK_UNMAPPED, /**< address space without memory behind it */
    TORCH_BLOCK_STATE_COUNT
} torch_block_state;

typedef struct torch_block {
    uint64_t addr; /**< model address: segments never overlap */
    uint64_t size;
    uint32_t prev;    /**< block below in the segment, or TORCH_NONE */
    uint32_t next;    /**< block above in the segment, or TORCH_NONE */
    uint32_t segment; /**< the model's number for its segment */
    uint32_t pool;    /**< the model's number for its (stream, pool) */
    uint8_t state;    /**< torch_block_state */
} torch_block;

typedef struct torch_blocks {
    torch_block *v;
    uint32_t count; /* slots handed out so far */
    uint32_t capacity;
    uint32_t free_head; /* a released slot (chained through .next), or TORCH_NONE */
} torch_blocks;

/** The state's name ("free", "used", "unmapped"). */
const char *torch_block_state_name(torch_block_state s);

/** Makes an empty arena. */
void torch_blocks_init(torch_blocks *b);

/** Frees the arena. */
void torch_blocks_free(torch_blocks *b);

/**
 * A new block with the given fields and no neighbours. Returns its index,
 * or TORCH_NONE when host memory ran out. Earlier pointers into b->v may
 * be stale afterwards; indices stay valid.
 */
uint32_t torch_blocks_new(torch_blocks *b, uint64_t addr, uint64_t size, torch_block_state state,
                          uint32_t segment, uint32_t pool);

/** Returns block i's slot for reuse. Its neighbours must not name it any more. */
void torch_blocks_release(torch_blocks *b, uint32_t i);

/**
 * A new block of the given range and state in i's segment and pool,
 * linked right above i (above) or right below it; i's own range is the
 * caller's to adjust. Returns the new block's index, or TORCH_NONE when
 * host memory ran out (nothing linked).
 */
uint32_t torch_blocks_insert(torch_blocks *b, uint32_t i, bool above, uint64_t addr, uint64_t size,
                             torch_block_state state);

/**
 * Splits block i at `offset` bytes (0 < offset < size): i keeps the low
 * part, a new block of the given state takes the rest and is linked after
 * it. Returns the new block's index, or TORCH_NONE when host memory ran
 * out (i unchanged).
 */
uint32_t torch_blocks_split(torch_blocks *b, uint32_t i, uint64_t offset, torch_block_state rest_state);

/**
 * Block dst absorbs its neighbour src (either side): dst spans both, src's
 * slot is released. The caller first takes src out of any set.
 */
void torch_blocks_absorb(torch_blocks *b, uint32_t dst, uint32_t src);

/*
 * A model files its free and unmapped blocks in one sorted_index per pool
 * (index[pool]): a free block under (size, address), so a lower bound on
 * the size finds the best fit; an unmapped one under (address, 0).
 */

/** Files block i in index[its pool] under the key of its state (free or
 *  unmapped). Returns false when host memory ran out. */
bool torch_blocks_file(const torch_blocks *b, sorted_index *index, uint32_t i);

/** Takes block i, filed in its present state, out of index[its pool]. */
void torch_blocks_unfile(const torch_blocks *b, sorted_index *index, uint32_t i);

/**
 * Block i absorbs each neighbour in the same state as itself (the one
 * below, then the one above), taking it out of index first. i is not
 * filed itself: the caller files it once its state is final.
 */
void torch_blocks_merge(torch_blocks *b, sorted_index *index, uint32_t i);

#endif /* RELO_TOOLS_TORCH_BLOCK_H */
