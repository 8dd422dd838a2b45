/*
 * stream.c — one stream's memory: pool setup for the device's layout, mode
 * windows, and the reservation path with its cleanup, relocation and retry
 * rules (design §3.5, §5, §6.4). The public calls that wrap these live in
 * device.c.
 */
#include "stream.h"

#include <math.h>
#include <string.h>

#include "compaction.h"
#include "dedicated_pool.h"
#include "device.h"
#include "exclusive_pool.h"
#include "hostmem.h"
#include "persistent_pool.h"
#include "relocation.h"
#include "sliced_pool.h"
#include "slide.h"
#include "trim.h"

#define EXCLUSIVE_MIN_BUCKET (32 * RELO_KiB)

static void init_buckets(struct relo_stream *s)
{
    relo_device *d = s->device;
    uint64_t lo = EXCLUSIVE_MIN_BUCKET, hi = d->max_page;
    uint64_t last = 0;
    s->bucket_count = 0;
    for (uint32_t i = 0; i < RELO_BUCKETS; i++) {
        /* Evenly spaced in log scale from 32 KiB to the max page. */
        double t = (double)i / (double)(RELO_BUCKETS - 1);
        double v = hi > lo ? (double)lo * pow((double)hi / (double)lo, t) : (double)hi;
        uint64_t size = (uint64_t)llround(v);
        if (i == RELO_BUCKETS - 1 || size > hi) size = hi;
        if (!relo__pad_size(size, d->alignment, d->max_page, &size)) size = d->max_page;
        if (size == last) continue;
        last = size;
        relo__exclusive_init(&s->buckets[s->bucket_count++], s, "bucket", size, true);
    }
}

void relo__stream_init(struct relo_stream *s, relo_device *d, void *backend_stream)
{
    memset(s, 0, sizeof *s);
    s->device = d;
    s->backend_stream = backend_stream;
    relo__pool_init(&s->persistent, RELO_POOL_PERSISTENT, "persistent", s, 0);
    relo__pool_init(&s->dedicated, RELO_POOL_DEDICATED, "dedicated", s, 0);
    relo__exclusive_init(&s->tiny, s, "tiny", d->alignment, false);
    uint64_t small_page = relo__round_down(relo__min(RELO_SMALL_PAGE, d->max_page), d->alignment);
    relo__pool_init(&s->small, RELO_POOL_SLICED, "small", s, small_page);
    relo__arena_init(&s->arena, d->alignment, d->max_page);
    if (d->desc.layout == RELO_LAYOUT_EXCLUSIVE) init_buckets(s);
    relo__dense_init(s);
}

void relo__stream_each_pool(struct relo_stream *s, void (*fn)(relo_pool *, void *), void *user)
{
    /* The one walk over a stream's pools; stats call it on every query. */
    fn(&s->persistent, user);
    fn(&s->dedicated, user);
    fn(&s->tiny, user);
    fn(&s->small, user);
    for (uint32_t k = 0; k < RELO_DENSE_POOLS; k++) fn(&s->dense[k], user);
    for (uint32_t i = 0, seen = 0; seen < s->arena.pool_count && i < RELO_ARENA_SLOTS; i++) {
        if (!s->arena.slots[i]) continue;
        seen++;
        fn(s->arena.slots[i], user);
    }
    for (uint32_t i = 0; i < s->bucket_count; i++) fn(&s->buckets[i], user);
}

static void add_allocations(relo_pool *p, void *user) { *(uint64_t *)user += p->allocations; }
static void add_guarded(relo_pool *p, void *user) { *(uint64_t *)user += p->guarded_pages; }

uint64_t relo__stream_allocations(const struct relo_stream *s)
{
    uint64_t n = 0;
    relo__stream_each_pool((struct relo_stream *)s, add_allocations, &n);
    return n;
}

uint64_t relo__stream_guarded_pages(const struct relo_stream *s)
{
    uint64_t n = 0;
    relo__stream_each_pool((struct relo_stream *)s, add_guarded, &n);
    return n;
}

static void destroy_unless_arena(relo_pool *p, void *user)
{
    (void)user;
    if (p->slot < 0) relo__pool_destroy(p); /* arena pools go with the arena */
}

void relo__stream_free_pages(struct relo_stream *s)
{
    relo__stream_each_pool(s, destroy_unless_arena, NULL);
    relo__arena_destroy(&s->arena);
}

static relo_mode effective_mode(const struct relo_stream *s)
{
    return s->mode_depth ? (relo_mode)s->modes[s->mode_depth - 1] : RELO_MODE_AUTO;
}

/* EXCLUSIVE layout: the smallest bucket with a free page that fits, else a
 * new page in the smallest bucket that accepts the size. */
static relo_status reserve_buckets(struct relo_stream *s, uint64_t size, uint32_t slot,
                                   bool allow_new_page, relo_slice **out)
{
    relo_pool *accept = NULL;
    for (uint32_t i = 0; i < s->bucket_count; i++) {
        relo_pool *b = &s->buckets[i];
        if (size > b->page_size) continue;
        if (!accept) accept = b;
        if (relo__exclusive_has_fit(b, size)) return relo__exclusive_reserve(b, size, slot, false, out);
    }
    if (!accept) return RELO_ERR_BUFFER_TOO_BIG;
    return relo__exclusive_reserve(accept, size, slot, allow_new_page, out);
}

/* Runs the suspicion rule of an exclusive pool when its period comes up. */
static void exclusive_periodic(relo_pool *pool)
{
    if (!pool->periodic_release || pool->stream->device->recording) return;
    if (pool->check_every && pool->reservations % pool->check_every == 0)
        relo__exclusive_check(pool);
}

/* Routes one reservation to its pool (design §3.6, routing order). */
static relo_status route(struct relo_stream *s, uint64_t size, uint32_t slot, relo_slice **out)
{
    relo_device *d = s->device;
    bool allow = s->capture.state != RELO_CAPTURE_RECORDING;
    switch (effective_mode(s)) {
    case RELO_MODE_DEDICATED:
        return relo__dedicated_reserve(&s->dedicated, size, slot, allow, out);
    case RELO_MODE_PERSISTENT:
        return relo__persistent_reserve(&s->persistent, size, slot, allow, out);
    case RELO_MODE_AUTO:
    case RELO_MODE_COUNT:
        break;
    }
    if (size == 0) return relo__exclusive_reserve(&s->tiny, 0, slot, allow, out);
    if (d->desc.layout == RELO_LAYOUT_EXCLUSIVE) {
        relo_status st = reserve_buckets(s, size, slot, allow, out);
        if (st == RELO_OK) exclusive_periodic((*out)->page->pool);
        return st;
    }
    if (d->desc.policy == RELO_POLICY_DENSE) return relo__dense_reserve(s, size, slot, allow, out);
    uint64_t padded;
    if (relo__pad_size(size, d->alignment, relo__min(RELO_SMALL_MAX, s->small.page_size), &padded))
        return relo__sliced_reserve(&s->small, size, slot, RELO_SLICE_LIVE, allow, out);
    return relo__arena_reserve(&s->arena, s, size, slot, allow, out);
}

relo_status relo__stream_reserve(struct relo_stream *s, uint64_t size, relo_handle *out)
{
    relo_device *d = s->device;
    relo__device_cleanup_periodic(d);
    if (effective_mode(s) == RELO_MODE_AUTO && size > 0) relo__relocate_when_wanted(s);

    uint32_t slot;
    relo_status st = relo__handle_alloc(&d->handles, &slot);
    if (st != RELO_OK) return st;
    relo_slice *slice = NULL;
    st = route(s, size, slot, &slice);
    if (st == RELO_ERR_OUT_OF_MEMORY && d->recording == 0) {
        /* The device refused: give back what nothing needs (the dense
         * policy packs whatever it can first), then once more. */
        if (d->desc.policy == RELO_POLICY_DENSE) {
            relo__device_cleanup_periodic(d);
            relo__compact_and_release(d, s, UINT64_MAX, true, RELO_REASON_MEMORY_PRESSURE);
        }
        relo__device_cleanup_explicit(d, s);
        relo__trim(d, NULL, 0); /* every stream's cached pages count against the device */
        st = route(s, size, slot, &slice);
        /* Still refused, with free room scattered over the pages: clear
         * one hole of the request's size and take it; where no other page
         * has the room, pack pages in place so their room joins up
         * (slide.h), take it, or empty pages into the runs that opened. */
        uint64_t padded;
        if (st == RELO_ERR_OUT_OF_MEMORY && size > 0 && d->desc.policy == RELO_POLICY_DENSE &&
            d->desc.layout == RELO_LAYOUT_ADAPTIVE && effective_mode(s) == RELO_MODE_AUTO &&
            relo__pad_size(size, d->alignment, UINT64_MAX, &padded)) {
            relo_pool *pool = relo__dense_pool_for(s, padded);
            if (relo__compact_make_room(d, pool, padded)) {
                st = route(s, size, slot, &slice);
            } else if (relo__slide_make_room(d, pool, padded)) {
                st = route(s, size, slot, &slice);
                if (st == RELO_ERR_OUT_OF_MEMORY &&
                    relo__compact_and_release(d, s, UINT64_MAX, true, RELO_REASON_MEMORY_PRESSURE) > 0)
                    st = route(s, size, slot, &slice);
            }
        }
    } else if (st == RELO_ERR_PAGE_SIZES_EXHAUSTED) {
        relo__relocate(d, s, RELO_REASON_ARENA_FULL);
        relo__device_cleanup_periodic(d);
        st = route(s, size, slot, &slice);
    }
    if (st != RELO_OK) {
        relo__handle_free(&d->handles, slot);
        if (st == RELO_ERR_PAGE_UPDATE_FORBIDDEN && s->capture.state == RELO_CAPTURE_RECORDING &&
            s->capture.doom == RELO_OK)
            s->capture.doom = st;
        return st;
    }
    relo__handle_slot(&d->handles, slot)->slice = slice; /* published at its first locked resolve */
    relo__stats_allocated(s, size);
    *out = relo__handle_of(&d->handles, slot);
    /* After the request is served, so that it could take a cached page. */
    relo__trim_auto(d);
    return RELO_OK;
}

relo_status relo_mode_push(relo_stream *stream, relo_mode mode)
{
    if (!stream || (unsigned)mode >= RELO_MODE_COUNT) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    relo_status st = RELO_ERR_INVALID_ARGUMENT;
    if (stream->mode_depth < RELO_MODE_DEPTH) {
        stream->modes[stream->mode_depth++] = (uint8_t)mode;
        st = RELO_OK;
    }
    relo__device_unlock(stream->device);
    return st;
}

relo_status relo_mode_pop(relo_stream *stream)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    relo_status st = RELO_ERR_INVALID_ARGUMENT;
    if (stream->mode_depth > 0) {
        stream->mode_depth--;
        st = RELO_OK;
    }
    relo__device_unlock(stream->device);
    return st;
}
