/*
 * stream.h — one stream's memory: its persistent and dedicated pools, its
 * dynamic memory in the device's layout (ADAPTIVE: tiny, small pool and
 * arena; EXCLUSIVE: 24 buckets), its mode windows and its capture state.
 * Memory reserved on a stream always returns to that stream's pools.
 *
 * Protected by: the device lock, for every field.
 */
#ifndef RELO_STREAM_H
#define RELO_STREAM_H

#include <stdint.h>

#include "arena.h"
#include "capture.h"
#include "dense.h"
#include "pool.h"
#include "stats.h"

#define RELO_MODE_DEPTH 64
#define RELO_BUCKETS 24
#define RELO_SMALL_MAX (64 * RELO_KiB)
#define RELO_SMALL_PAGE (8 * RELO_MiB)

struct relo_stream {
    struct relo_device *device;
    void *backend_stream;
    uint32_t index;                  /* position in device->streams */
    uint8_t modes[RELO_MODE_DEPTH];  /* open mode windows, innermost last */
    uint32_t mode_depth;

    relo_pool persistent;
    relo_pool dedicated;
    relo_pool tiny;                  /* ADAPTIVE: size 0 */
    relo_pool small;                 /* ADAPTIVE: ≤ 64 KiB */
    relo_arena arena;                /* ADAPTIVE: the rest */
    relo_pool dense[RELO_DENSE_POOLS]; /* ADAPTIVE, dense policy: instead of small + arena */
    uint32_t dense_quiet;            /* new pages before packing is tried again */
    relo_pool buckets[RELO_BUCKETS]; /* EXCLUSIVE */
    uint32_t bucket_count;

    relo_capture capture;
    relo_finish_fn finish;           /* the runtime's wait for this stream's work; NULL = none */
    void *finish_user;
    relo_counters counters;
    uint64_t relocation_pass;        /* last pass that counted this stream */
    uint64_t bytes_reserved;         /* pages held by this stream */
    uint64_t peak_bytes_reserved;
    uint64_t peak_bytes_in_use;      /* highest bytes_allocated_total - bytes_freed_total */
};

/** Calls fn on every pool of the stream (arena pools included), always in
 *  the same order: fixed pools, dense pools, arena slots, buckets. */
void relo__stream_each_pool(struct relo_stream *stream, void (*fn)(relo_pool *, void *), void *user);

/** Reserves on the stream, with cleanup, relocation and retries (design §3.6,
 *  §5, §6.4). The device lock is held. */
relo_status relo__stream_reserve(struct relo_stream *stream, uint64_t size, relo_handle *out);

/** Live allocations and guarded pages of the stream. */
uint64_t relo__stream_allocations(const struct relo_stream *stream);
uint64_t relo__stream_guarded_pages(const struct relo_stream *stream);

/** Sets up the stream's pools for the device's layout. */
void relo__stream_init(struct relo_stream *stream, struct relo_device *device, void *backend_stream);

/** Gives back every page of the stream. */
void relo__stream_free_pages(struct relo_stream *stream);

#endif /* RELO_STREAM_H */
