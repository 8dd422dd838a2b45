/*
 * slide.h — packing pages in place (docs/design.md §10, docs/policy.md):
 * the live allocations of a dense pool's page slide toward its start, so its
 * scattered free room becomes one run at its end. This is the move left when
 * no other page has room to take a page's allocations: a request of the
 * coalesced size then fits, and compaction finds whole holes to empty other
 * pages into. A slide may land on its own bytes; its copies go in pieces no
 * longer than the distance it slides, in order (relo_backend.h), and a
 * refused piece has the landed ones played back before the pass abandons.
 * Slides run as passes of their own, through the relocation pass
 * (relocation.h): never while a stream records, guarded, pinned or
 * transferring pages untouched, all or nothing.
 *
 * Called with the device lock held.
 */
#ifndef RELO_SLIDE_H
#define RELO_SLIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"

/**
 * Plans the slides that pack page (a page of pass's device that serves, with
 * only movable live allocations) toward its start, fencing it in pass (a
 * slide pass: pass->slides). Returns false, with nothing planned and the
 * page not fenced, when nothing would move or host memory ran out.
 */
bool relo__slide_plan_page(struct relo_pass *pass, relo_page *page);

/**
 * For a request of length bytes the device refused a page for, in pool (a
 * dense pool): when one page could hold the request once packed, packs the
 * one that copies the fewest bytes; otherwise packs every page whose free
 * room is scattered, fewest bytes to copy first, within the pass's bounds,
 * so compaction can fill the runs that open. One pass, all or nothing.
 * Nothing moves while relocation is not allowed. Returns whether anything
 * moved. Device lock held.
 */
bool relo__slide_make_room(relo_device *device, relo_pool *pool, uint64_t length);

#endif /* RELO_SLIDE_H */
