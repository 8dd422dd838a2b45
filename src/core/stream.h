/*
 * core/stream.h — one stream's memory: its persistent, dedicated and tiny
 * pools, its dynamic memory in the device's layout (layout/layout.h), its mode
 * windows and its capture state.
 * Memory reserved on a stream always returns to that stream's pools.
 *
 * Protected by: the device lock, for every field.
 */
#ifndef RELO_STREAM_H
#define RELO_STREAM_H

#include <stdint.h>

#include "core/capture.h"
#include "layout/layout.h"
#include "pool/pool.h"

#define RELO_MODE_DEPTH 64

struct relo_stream {
    struct relo_device *device;
    void *backend_stream;
    uint32_t index;                 /* position in device->streams */
    uint8_t modes[RELO_MODE_DEPTH]; /* open mode windows, innermost last */
    uint32_t mode_depth;

    relo_pool_home home; /* what every pool of the stream needs (pool/pool.h) */
    relo_pool persistent;
    relo_pool dedicated;
    relo_pool tiny;            /* size 0 */
    relo_stream_layout layout; /* the rest: the device's layout (layout/layout.h) */

    relo_capture capture;
    relo_finish_fn finish; /* the runtime's wait for this stream's work; NULL = none */
    void *finish_user;
    relo_held held;             /* pages held and backend calls, by pool/pool.c; the rest of
                                        the counters by core/counters.c and pass/relocation.c */
    uint64_t relocation_pass;   /* last pass that counted this stream */
    uint64_t peak_bytes_in_use; /* highest bytes_allocated_total - bytes_freed_total */
};

/** The stream that owns a pool. */
static inline struct relo_stream *relo__pool_stream(const relo_pool *pool)
{
    return (struct relo_stream *)pool->home->owner;
}

/** Calls fn on every pool of the stream (arena pools included), always in
 *  the same order: persistent, dedicated, tiny, then the layout's. */
void relo__stream_each_pool(struct relo_stream *stream, void (*fn)(relo_pool *, void *), void *user);

/** Frees the adaptive arena's slots of outdated pools that hold no page
 *  (other layouts have none). */
static inline void relo__stream_drop_empty_pools(struct relo_stream *stream)
{
    relo_arena *arena = relo__layout_arena(&stream->layout);
    if (arena) relo__arena_drop_empty_pools(arena);
}

/** Reserves on the stream, with cleanup, relocation and retries (design §3.5,
 *  §5, §6.4). The device lock is held. */
relo_status relo__stream_reserve(struct relo_stream *stream, uint64_t size, relo_handle *out);

/** Live allocations and guarded pages of the stream. */
uint64_t relo__stream_allocations(const struct relo_stream *stream);
uint64_t relo__stream_guarded_pages(const struct relo_stream *stream);

/** Sets up the stream's pools for the device's layout. Returns RELO_OK or
 *  RELO_ERR_HOST_MEMORY (nothing allocated). */
relo_status relo__stream_init(struct relo_stream *stream, struct relo_device *device, void *backend_stream);

/** Gives back every page of the stream. */
void relo__stream_free_pages(struct relo_stream *stream);

#endif /* RELO_STREAM_H */
