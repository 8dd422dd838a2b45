/*
 * testing/testing.c — the internal queries and hooks of testing/testing.h,
 * for relo's own tests, benchmarks and fuzzers.
 */
#include "testing/testing.h"

#include "base/hostmem.h"
#include "base/lock.h"
#include "core/device.h"
#include "pass/relocation.h"

relo_reason relo__testing_trigger(relo_stream *stream)
{
    relo__device_lock(stream->device);
    relo_reason r = relo__trigger(stream);
    relo__device_unlock(stream->device);
    return r;
}

uint64_t relo__testing_held_sums(relo_device *device)
{
    relo__device_lock(device);
    uint64_t n = device->held_sums;
    relo__device_unlock(device);
    return n;
}

static void add_visits(relo_pool *pool, void *user)
{
    uint64_t *n = user;
    n[0] += pool->occupancy.plan_visits;
    n[1] += pool->occupancy.empty_visits;
}

void relo__testing_occupancy_visits(relo_stream *stream, uint64_t *plan, uint64_t *empty)
{
    uint64_t n[2] = {0, 0};
    relo__device_lock(stream->device);
    relo__stream_each_pool(stream, add_visits, n);
    relo__device_unlock(stream->device);
    *plan = n[0];
    *empty = n[1];
}

uint64_t relo__testing_page_size(relo_stream *stream)
{
    relo__device_lock(stream->device);
    relo_arena *a = relo__layout_arena(&stream->layout);
    const relo_pool *p = a ? relo__arena_current(a) : NULL;
    uint64_t size = p ? p->page_size : 0;
    relo__device_unlock(stream->device);
    return size;
}

uint32_t relo__testing_arena_pools(relo_stream *stream)
{
    relo__device_lock(stream->device);
    const relo_arena *a = relo__layout_arena(&stream->layout);
    uint32_t n = a ? a->pool_count : 0;
    relo__device_unlock(stream->device);
    return n;
}

relo_reason relo__testing_last_reason(relo_device *device)
{
    relo__device_lock(device);
    relo_reason r = device->last_reason;
    relo__device_unlock(device);
    return r;
}

relo_status relo__testing_relocate(relo_stream *stream, relo_reason reason)
{
    if (!stream || reason <= RELO_REASON_NONE || reason >= RELO_REASON_COUNT)
        return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = stream->device;
    relo__device_lock(d);
    relo_status st = d->recording ? RELO_ERR_RECORDING : RELO_OK;
    if (st == RELO_OK) relo__relocate(d, stream, reason);
    relo__device_unlock(d);
    return st;
}

uint64_t relo__testing_capacity(relo_device *device)
{
    relo__device_lock(device);
    uint64_t c = device->capacity;
    relo__device_unlock(device);
    return c;
}

void relo__testing_set_move_hook(relo_device *device, relo__move_hook hook, void *user)
{
    relo__device_lock(device);
    device->move_hook = hook;
    device->move_hook_user = user;
    relo__device_unlock(device);
}

uint32_t relo__testing_age_free_slots(relo_device *device, uint32_t generation)
{
    relo__device_lock(device);
    uint32_t n = 0;
    for (uint32_t i = 0; i < device->handles.count; i++)
        if (relo__handle_set_generation(&device->handles, i, generation)) n++;
    relo__device_unlock(device);
    return n;
}

uint64_t relo__testing_retired_slots(relo_device *device)
{
    relo__device_lock(device);
    uint64_t n = device->handles.retired;
    relo__device_unlock(device);
    return n;
}

relo_status relo__testing_add_pins(relo_device *device, relo_handle h, uint32_t n)
{
    relo__device_lock(device);
    relo_status st = RELO_ERR_NOT_FOUND;
    relo_slot *slot = relo__handle_lookup(&device->handles, h);
    if (slot) st = relo__slot_pin(slot, n);
    relo__device_unlock(device);
    return st;
}

void relo__testing_hold_tag_registry(bool hold)
{
    relo__handle_registry_hold(hold);
}

void relo__testing_hostmem_fail_at(uint64_t n, int sticky)
{
    relo__hostmem_fail_at(n, sticky);
}

uint64_t relo__testing_hostmem_calls(void)
{
    return relo__hostmem_calls();
}

bool relo__testing_lock_init_exchange(relo_lock *lock)
{
    return relo__lock_init_exchange(lock);
}

bool relo__testing_lock_releases_by_store(const relo_lock *lock)
{
    return relo__lock_releases_by_store(lock);
}

bool relo__testing_pressure_high(uint64_t capacity, uint64_t held, uint64_t page)
{
    return relo__pressure_high(capacity, held, page);
}
