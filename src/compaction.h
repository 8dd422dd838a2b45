/*
 * compaction.h — packing live allocations of the dense policy's pools
 * (docs/design.md §10, docs/policy.md): the pages with the fewest live bytes are
 * emptied into the free room of denser pages of the same pool, each page
 * all-or-nothing, through the relocation pass machinery (same copy,
 * abandon, leak and commit path; nothing moves while a stream records;
 * guarded pages are never a source nor a target).
 *
 * Called with the device lock held.
 */
#ifndef RELO_COMPACTION_H
#define RELO_COMPACTION_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"

/**
 * One compaction pass over pool (non-NULL), or over every dense pool of
 * every stream (NULL). Stops once the pages it plans to empty add up to
 * want bytes, or at the pass's bounds. With reason EXPLICIT (a reclaim)
 * only pages at most 2/3 full are sources; otherwise any page that can be
 * emptied is. Targets go into the free room of
 * denser pages; with repaginate, the allocations of a page of a variable-
 * page pool may also move to new pages of their own size when that gives
 * back at least a granule. Emptied pages stay with their pool (empty,
 * serving again); a cleanup gives them back.
 * Returns the bytes of pages emptied (0: nothing moved).
 */
uint64_t relo__compact(relo_device *device, relo_pool *pool, uint64_t want, bool repaginate,
                       relo_reason reason);

/**
 * Plans compaction of the dense pools of one stream (only non-NULL) or of
 * every stream into pass, fencing its sources in the pass, until want bytes
 * of pages would empty or the pass is full. Returns the bytes planned.
 */
uint64_t relo__compact_plan(struct relo_pass *pass, struct relo_stream *only, uint64_t want, bool repaginate);

/**
 * Compacts the dense pools of one stream (only non-NULL) or of every stream
 * until want bytes of pages are empty and given back, or nothing more moves
 * (at most a bounded number of passes). Returns bytes given back.
 */
uint64_t relo__compact_and_release(relo_device *device, struct relo_stream *only, uint64_t want,
                                   bool repaginate, relo_reason reason);

/**
 * Makes one hole of at least length bytes in pool without a new page, for
 * a request the device refused a page for: in the page where the fewest
 * live bytes stand in the way, the allocations of the run of slices that
 * would cover length move to the free room of the pool's other pages
 * (all or none, one window per call). Returns whether anything moved.
 * Nothing moves while relocation is not allowed. Device lock held.
 */
bool relo__compact_make_room(relo_device *device, relo_pool *pool, uint64_t length);

#endif /* RELO_COMPACTION_H */
