/*
 * relocation.h — moving live allocations off outdated pages (design §6):
 * plan (analyse, order, reserve targets all-or-nothing per page), copy
 * (wait for the device, enqueue, always wait for the copies), commit only
 * from landed copies, or abandon / leak on failure. The order across streams
 * (§6.4) lives here and nowhere else.
 *
 * Called with the device lock held.
 */
#ifndef RELO_RELOCATION_H
#define RELO_RELOCATION_H

#include <stdbool.h>

#include "device.h"
#include "sliced_pool.h"
#include "stream.h"
#include "testing.h"

/** One move of a pass: an allocation's slot, its source and its target. */
typedef struct relo_move {
    relo_slice *src;
    relo_slice *dst;
    uint32_t slot;
} relo_move;

/**
 * One relocation or compaction pass: the plan (targets reserved as TARGET
 * slices), its budget, and what it moved. Plan pages with
 * relo__pass_plan_page, then relo__pass_finish copies and commits (or
 * abandons, or leaks) and frees the plan.
 */
typedef struct relo_pass {
    struct relo_device *device;
    relo_reason reason;
    uint64_t id;            /* counts streams once per pass in their stats */
    relo_move *moves;
    uint32_t count, cap;
    uint64_t bytes;         /* requested bytes planned */
    uint64_t started_ns;
    uint64_t max_bytes;     /* 0 = no bound */
    uint64_t max_ns;        /* 0 = no bound */
} relo_pass;

void relo__pass_begin(relo_pass *pass, relo_device *device, relo_reason reason);

/** True when planning next_bytes more would break the pass's bounds; the
 *  first page of a pass always fits. */
bool relo__pass_full(const relo_pass *pass, uint64_t next_bytes);

/** Reserves targets in target for every allocation of page, or none
 *  (all-or-nothing per page). new_page: whether and how targets may take
 *  new pages. */
bool relo__pass_plan_page(relo_pass *pass, relo_pool *target, relo_page *page, relo_new_page new_page);

/** Copies, then commits from landed copies, or abandons (sources kept) or
 *  leaks (outcome unknown). Frees the plan. Returns true when it moved. */
bool relo__pass_finish(relo_pass *pass);

/** Requested bytes on a page whose every occupied slice is a movable LIVE
 *  allocation and that no graph guards; 0 otherwise. */
uint64_t relo__page_movable_bytes(const relo_page *page);

/** A page a pass may empty, with its movable bytes. */
typedef struct relo_candidate {
    relo_page *page;
    uint64_t live_bytes;
} relo_candidate;

/** qsort order of candidates: fewest live bytes first, then lower page. */
int relo__candidate_order(const void *a, const void *b);

/** No stream records, relocation is on, the layout is ADAPTIVE. */
bool relo__relocation_allowed(const relo_device *device);

/**
 * Relocate-when-wanted, before a reservation on stream: asks the trigger,
 * and relocates the stream's arena when it says so. Does nothing while any
 * stream records or relocation is off.
 */
void relo__relocate_when_wanted(struct relo_stream *stream);

/**
 * Relocates the outdated pages of one stream's arena (stream non-NULL) or
 * of every stream's (NULL) with reason. Nothing happens while any stream
 * records, with the EXCLUSIVE layout, or with relocation off. Stalls the
 * trigger on arenas where nothing moved. Returns true when something moved.
 */
bool relo__relocate(relo_device *device, struct relo_stream *stream, relo_reason reason);

#endif /* RELO_RELOCATION_H */
