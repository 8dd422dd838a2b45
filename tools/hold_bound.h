/*
 * hold_bound.h — what no allocator can beat on a trace: the least memory
 * any allocator must hold over time, given how many buffers it may take
 * from the device.
 *
 * The argument. An allocator that takes memory from a device in buffers
 * charged in whole granules holds, after each event t, H(t) >= R(t): the
 * bytes live then, rounded up to the granule. H rises only when a buffer
 * is taken (one device allocation each); it may fall at any time (frees
 * are not counted). So with at most K allocations, H is a step function
 * with at most K rises. Between two rises, the cheapest H that stays above
 * R is, at each event, the largest R from then to the next rise. The least
 * sum of H over events, over every placement of the rises, is found by
 * dynamic programming; divided by the sum of live bytes over events it is
 * a floor under relo-replay's "time-avg reserved / live" for every
 * allocator with at most K device allocations on this trace. Real
 * allocators also cannot give back part of a buffer, so they do worse.
 *
 * To keep the search quadratic in a bounded number, events are grouped in
 * blocks and each block stands for the least R within it. That only
 * lowers the floor (an allocator's least H within a block is above the
 * block's least R, and it rises between two blocks only if the allocator
 * took a buffer in between), so what is reported stays a floor.
 */
#ifndef RELO_TOOLS_HOLD_BOUND_H
#define RELO_TOOLS_HOLD_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/** Blocks the search uses unless told otherwise: a few seconds at most. */
#define HOLD_BOUND_DEFAULT_BLOCKS 4096u

/** A trace reduced to what the floor needs. Zero-initialise before use. */
typedef struct hold_bound {
    double *least;  /**< per block: the least live bytes in it, rounded up to the granule */
    double *weight; /**< per block: events in it */
    size_t blocks;
    size_t events_per_block;
    double live_sum;    /**< live bytes summed over events (exact, no blocks) */
    double rounded_sum; /**< the same rounded up to the granule, event by event (exact) */
    uint64_t peak_live;
    uint64_t granule;
} hold_bound;

/**
 * Reduces t for a device charging `granule` bytes (>= 1) per buffer, in
 * at most max_blocks blocks (>= 1). Returns false when host memory ran
 * out or t has no event; *b is then empty. Free with hold_bound_free.
 */
bool hold_bound_init(hold_bound *b, const trace *t, uint64_t granule, size_t max_blocks);

/** Frees what hold_bound_init took; *b is empty afterwards. */
void hold_bound_free(hold_bound *b);

/** The floor with as many allocations as wanted: peak live rounded up to
 *  the granule / peak live (the fit), and the exact sum of rounded live
 *  bytes / the sum of live bytes (over time). 0 when nothing is live. */
double hold_bound_fit_floor(const hold_bound *b);
double hold_bound_time_floor(const hold_bound *b);

/** What hold_bound_search found. */
typedef struct hold_bound_result {
    double floor_at_allocs; /**< least time-avg ratio with at most `allocs` allocations: the
                                     higher of the blocks' floor and hold_bound_time_floor */
    uint64_t fewest_allocs; /**< fewest allocations whose floor is <= target; 0 = none: the
                                     exact floor is above target, or the blocks' floor stays above
                                     it with one allocation per block */
} hold_bound_result;

/**
 * Runs the search: the floor on time-averaged held ÷ live with at most
 * `allocs` device allocations (>= 1), and the fewest allocations with
 * which the floor reaches `target`. O(allocations searched × blocks²)
 * time, O(blocks) memory. Returns false when host memory ran out.
 */
bool hold_bound_search(const hold_bound *b, uint64_t allocs, double target, hold_bound_result *out);

#endif /* RELO_TOOLS_HOLD_BOUND_H */
