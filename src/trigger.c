/*
 * trigger.c — whether a relocation is wanted before a reservation (design
 * §6.1). Every step before the pressure rule is O(1) in the device's size;
 * the bytes held across streams are summed only when the answer depends
 * on them.
 */
#include "trigger.h"

#include "device.h"

const char *relo__reason_name(relo_reason reason)
{
    switch (reason) {
    case RELO_REASON_NONE: return "RELO_REASON_NONE";
    case RELO_REASON_EXPLICIT: return "RELO_REASON_EXPLICIT";
    case RELO_REASON_MEMORY_PRESSURE: return "RELO_REASON_MEMORY_PRESSURE";
    case RELO_REASON_ARENA_FULL: return "RELO_REASON_ARENA_FULL";
    case RELO_REASON_CAPTURE: return "RELO_REASON_CAPTURE";
    case RELO_REASON_COMPACT: return "RELO_REASON_COMPACT";
    case RELO_REASON_RUNTIME: return "RELO_REASON_RUNTIME";
    case RELO_REASON_COUNT: break;
    }
    return "RELO_REASON_UNKNOWN";
}

bool relo__pressure_high(uint64_t capacity, uint64_t held, uint64_t page)
{
    /* The next page would leave less than another page of room: the last
     * moment a relocation can still free what the device needs. */
    return relo__add_sat(held, page) > relo__sub_sat(capacity, page);
}

static bool same_shape(relo_arena_shape a, relo_arena_shape b)
{
    return a.current_pages == b.current_pages && a.outdated_pools == b.outdated_pools &&
           a.outdated_pages == b.outdated_pages && a.guarded_outdated_pages == b.guarded_outdated_pages;
}

relo_reason relo__trigger(struct relo_stream *stream)
{
    relo_arena *arena = relo__layout_arena(&stream->layout);
    relo_device *d = stream->device;
    if (!arena || !relo__arena_has_outdated(arena)) return RELO_REASON_NONE;
    if (arena->stalled && same_shape(relo__arena_shape(arena), arena->stall)) return RELO_REASON_NONE;
    if (arena->pool_count == RELO_ARENA_SLOTS) return RELO_REASON_ARENA_FULL;
    if (d->capacity == 0) return RELO_REASON_NONE;
    uint64_t held = relo__device_held_bytes(d);
    return relo__pressure_high(d->capacity, held, arena->page_size) ? RELO_REASON_MEMORY_PRESSURE
                                                                    : RELO_REASON_NONE;
}

void relo__trigger_stall(relo_arena *arena)
{
    arena->stalled = true;
    arena->stall = relo__arena_shape(arena);
}

void relo__trigger_unstall(relo_arena *arena) { arena->stalled = false; }
