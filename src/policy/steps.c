/*
 * policy/steps.c — when memory moves, and in which order. Every occasion on which
 * relo relocates, packs, cleans up or gives pages back is one function
 * here, its steps in the order they run; the calls that reach them
 * (policy/stream.c's reservation, relo_reclaim, relo_capture_prepare) only
 * say which occasion it is. What each step does lives with its concept:
 * pass/relocation.c (the adaptive placement's outdated pages, and every pass's
 * plan, copy and commit), pass/compaction.c (the packed layout's packing), pass/slide.c
 * (packing a page in place), pass/trim.c (the cache limit),
 * core/device_state.c (queued pages).
 *
 * Called with the device lock held; a step that moves memory drops it
 * while it waits and copies.
 */
#include "pass/relocation.h"

/* Merges of stranded tails one refused reservation may try (each gives
 * back at least a granule, or stops the sequence). */
#define RELO_MERGE_TRIES 8

void relo__steps_before_reserve(relo_device *d, relo_stream *s, bool may_relocate)
{
    /* 1. pages emptied since the last call go back (O(1) when none);
     * 2. the adaptive placement's trigger may relocate the arena's outdated pages
     *    (an AUTO reservation of some bytes only: modes and size 0 take
     *    pools that never move). */
    relo__device_cleanup_periodic(d);
    if (may_relocate) relo__relocate_when_wanted(s);
}

/* Packing nothing waits on (before a new page the device would lend, past
 * the cache limit) is a choice, and it has a budget: over the
 * device's life it copies at most 1/RELO_PACK_BUDGET_DIVISOR of the bytes
 * reserved so far. Once that is spent, the new page is taken, or the room
 * stays held, until reservations earn more. It packs the reserving
 * stream's own pools: a reservation never drains the device for another
 * stream's room (that stream's reservations, or a reclaim, pack it).
 * Returns true when pages went back or were emptied. */
static bool pack_within_budget(relo_device *d, relo_stream *s, uint64_t want, relo_reason reason)
{
    uint64_t earned = d->held.counters.bytes_allocated_total / RELO_PACK_BUDGET_DIVISOR;
    if (d->pack_moved >= earned) return false;
    uint64_t before = d->held.counters.bytes_moved;
    bool made = relo__compact_and_release(d, s, want, true, reason, earned - d->pack_moved) != 0;
    d->pack_moved += d->held.counters.bytes_moved - before;
    return made;
}

bool relo__steps_pack_before_page(relo_device *d, relo_stream *s, uint64_t page)
{
    /* On a device of known capacity that the page would fill past
     * 1 - 1/RELO_PACK_FREE_DIVISOR, memory is no longer plentiful: packing
     * is what keeps the next requests from being refused, and no budget
     * holds it back. */
    uint64_t cap = d->capacity;
    if (cap && d->held.bytes_reserved + page > cap - cap / RELO_PACK_FREE_DIVISOR)
        return relo__compact_and_release(d, NULL, page, true, RELO_REASON_COMPACT, UINT64_MAX) != 0;
    return pack_within_budget(d, s, page, RELO_REASON_COMPACT);
}

RELO_COLD relo_status relo__steps_refused(relo_device *d, relo_stream *s, uint64_t size, relo_status st,
                                          relo_pool *room_pool, relo_status (*retry)(void *ctx), void *ctx)
{
    if (st == RELO_ERR_PAGE_SIZES_EXHAUSTED) {
        /* The arena has no slot for another page size: empty the outdated
         * pools into the current one, drop them, try again. */
        relo__relocate(d, s, RELO_REASON_ARENA_FULL);
        relo__device_cleanup_periodic(d);
        return retry(ctx);
    }
    if (st != RELO_ERR_OUT_OF_MEMORY || d->recording) return st;
    /* The device refused a page:
     * 1. a layout that packs (the packed one) packs whatever it can, every stream's
     *    queued pages first;
     * 2. an explicit cleanup of the stream (relocation, packing, every empty
     *    page back), and every stream's cached pages past the cache limit
     *    back, since they count against the device too; then once more. */
    if (relo__layout_packs(s->layout.ops)) {
        relo__device_cleanup_periodic(d);
        relo__compact_and_release(d, s, UINT64_MAX, true, RELO_REASON_MEMORY_PRESSURE, UINT64_MAX);
    }
    relo__steps_explicit(d, s);
    relo__trim(d, NULL, 0);
    st = retry(ctx);
    if (st != RELO_ERR_OUT_OF_MEMORY || !room_pool) return st;
    /* 3. Still refused with free room scattered over the pool's pages: clear
     *    one hole of the request's size (moving the run with the fewest
     *    live bytes into other pages' room) and take it; where every run
     *    holds an allocation no other hole takes, first clear a hole for
     *    that allocation, then the request's (two moves deep);
     * 4. where no other page has the room, pack pages in place so their
     *    room joins up (pass/slide.c), take it, or empty pages into the runs
     *    that opened; where no page has the room even packed, move a few
     *    allocations out of one page into other pages' holes first, then
     *    pack it (two moves deep when no hole takes them). */
    uint64_t padded;
    if (!relo__pad_size(size, d->alignment, UINT64_MAX, &padded)) return st;
    if (relo__compact_make_room(d, room_pool, padded)) {
        st = retry(ctx);
    } else {
        if (relo__compact_make_room_chained(d, room_pool, padded)) st = retry(ctx);
        if (st == RELO_ERR_OUT_OF_MEMORY && relo__slide_make_room(d, room_pool, padded)) {
            st = retry(ctx);
            if (st == RELO_ERR_OUT_OF_MEMORY &&
                relo__compact_and_release(d, s, UINT64_MAX, true, RELO_REASON_MEMORY_PRESSURE, UINT64_MAX) >
                    0)
                st = retry(ctx);
        }
        if (st == RELO_ERR_OUT_OF_MEMORY && relo__slide_make_room_evicting(d, room_pool, padded))
            st = retry(ctx);
    }
    /* 5. Still refused, with the room in tails that rounding to the granule
     *    strands on pages too full for anything to move into: the
     *    allocations of such pages move together into one new page, and a
     *    granule or more goes back each time. */
    for (int i = 0; i < RELO_MERGE_TRIES && st == RELO_ERR_OUT_OF_MEMORY; i++) {
        if (!relo__compact_merge_tails(d, room_pool, padded)) break;
        st = retry(ctx);
    }
    return st;
}

void relo__steps_after_reserve(relo_device *d, relo_stream *s)
{
    /* After the request is served, so that it could take a cached page:
     * 1. empty pages past live + the cache limit go back;
     * 2. a layout that packs (the packed one) that still holds past live +
     *    the cache limit as much again, at least a granule or RELO_PACK_MIN_GAIN, in the
     *    free room of pages that hold allocations, and whose reserving
     *    stream holds that much room itself, empties the stream's
     *    sparsest pages within the copy budget, and what they held past
     *    the limit goes back. After an attempt that moved nothing, the
     *    next waits until that much more room is held past the limit,
     *    or the budget has earned that much again. */
    relo__trim_auto(d);
    if (!relo__layout_packs(d->layout) || d->recording) return;
    uint64_t live = relo__trim_live(d), held = d->held.bytes_reserved;
    /* Cheaply first: a proportional limit is at least live / 16, and
     * packing asks for as much again past it, so less than twice that
     * held past live is not enough (the usual answer). */
    if (d->desc.cache_limit == RELO_CACHE_LIMIT_PROPORTIONAL &&
        (held <= live || held - live < 2 * (live / RELO_TRIM_LIVE_DIVISOR))) {
        d->pack_stuck = 0;
        return;
    }
    uint64_t keep = relo__cache_limit(d);
    uint64_t gain = relo__max(relo__max(d->granule, RELO_PACK_MIN_GAIN), keep);
    if (keep == UINT64_MAX || held <= live || held - live <= keep || held - live - keep < gain) {
        d->pack_stuck = 0;
        return;
    }
    uint64_t over = held - live - keep, allocated = d->held.counters.bytes_allocated_total;
    /* Packing covers the reserving stream only: what it can give back is
     * at most the room its own pages hold. On a device of one stream that
     * is all the room past live. */
    const relo_counters *c = &s->held.counters;
    uint64_t stream_live = c->bytes_allocated_total - c->bytes_freed_total;
    uint64_t stream_room = relo__sub_sat(s->held.bytes_reserved, stream_live);
    if (stream_room < gain) return;
    over = relo__min(over, stream_room);
    if (allocated < d->pack_retry_at && over - relo__min(over, d->pack_stuck) < gain) return;
    if (pack_within_budget(d, s, over, RELO_REASON_CACHE_LIMIT)) {
        d->pack_stuck = 0;
    } else {
        d->pack_stuck = over;
        uint64_t again = relo__min(gain, UINT64_MAX / RELO_PACK_BUDGET_DIVISOR) * RELO_PACK_BUDGET_DIVISOR;
        d->pack_retry_at = relo__add_sat(allocated, again);
    }
}

static void release_empty(relo_pool *pool, void *batch)
{
    relo__pool_release_empty(pool, batch);
}

void relo__steps_explicit(relo_device *d, relo_stream *only)
{
    if (d->recording) return;
    /* 1. relocate the outdated arena pages (adaptive placement);
     * 2. give back what that emptied;
     * 3. pack the packed layout's pools and give back what that emptied;
     * 4. every other empty page of the scope back, empty outdated pools
     *    dropped; the backend flushed. */
    relo__relocate(d, only, RELO_REASON_EXPLICIT);
    relo__device_cleanup_periodic(d);
    relo__compact_and_release(d, only, UINT64_MAX, true, RELO_REASON_EXPLICIT, UINT64_MAX);
    if (d->recording) return; /* a capture began while the lock was dropped */
    uint32_t first, end;
    relo__device_scope(d, only, &first, &end);
    /* The buffers go back without the device lock: a backend's free may
     * wait for the device, and other threads' calls need not. */
    relo_buffer_batch batch;
    relo__buffer_batch_init(&batch);
    for (uint32_t i = first; i < end; i++) {
        relo__stream_each_pool(d->streams[i], release_empty, &batch);
        relo__stream_drop_empty_pools(d->streams[i]);
    }
    relo__device_free_batch(d, &batch);
    if (d->backend->ops.flush) d->backend->ops.flush(d->backend->ctx);
}

void relo__steps_before_capture(relo_device *d)
{
    /* Empty outdated pages now, before any of them can be guarded, and
     * give back what that emptied. */
    relo__relocate(d, NULL, RELO_REASON_CAPTURE);
    relo__device_cleanup_periodic(d);
}
