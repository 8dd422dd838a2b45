/*
 * core/device.h — the device: the backend, the handle table, the slab of slice
 * nodes, the streams, the list of pages waiting to go back, and the one
 * lock every public call takes.
 *
 * Protected by: lock, for every field except desc, backend, alignment,
 * granule and max_page, which are read-only after creation.
 */
#ifndef RELO_DEVICE_H
#define RELO_DEVICE_H

#include <stdint.h>

#include "backend/backend.h"
#include "mem/handle.h"
#include "base/lock.h"
#include "core/log.h"
#include "mem/page.h"
#include "base/reason.h"
#include "backend/releaser.h"
#include "core/stats.h"
#include "core/stream.h"

/** Called for every committed move, in commit order; set by tests
 *  (relo__testing_set_move_hook) to see the plan's order. */
typedef void (*relo__move_hook)(void *user, relo_handle handle, uint64_t size);

struct relo_device {
    relo_lock lock;                /* base/lock.h: cheaper than a pthread mutex uncontended */
    relo_cond pass_done;           /* broadcast when the open pass closes; waits pass lock */
    struct relo_pass *open_pass;   /* the one pass open now, or NULL */
    relo_device_desc desc;         /* effective: defaults resolved */
    const relo_layout_ops *layout; /* every stream's, picked from desc (layout/layout.h) */
    relo_backend *backend;
    uint64_t alignment; /* backend's */
    uint64_t max_page;  /* backend's, rounded down to the alignment */
    uint64_t granule;   /* backend's allocation granule; 1 = bytes */
    uint64_t capacity;  /* judged against; 0 = unknown */

    relo_releaser releaser; /* RELO_PAGE_FREE_THREAD: started at create */
    relo_handle_table handles;
    relo_slice_slab slab;

    struct relo_stream **streams;
    uint32_t stream_count, stream_cap;

    uint32_t recording;     /* streams in RECORDING */
    uint32_t graphs;        /* graphs not yet destroyed */
    uint32_t capture_epoch; /* last epoch handed to a recording */
    uint64_t page_order;    /* next page's order */
    relo_page *pending;     /* empty pages to give back at the next cleanup */

    relo_held held;             /* every page held, every stream; counters outlive streams */
    uint64_t trim_stuck;        /* empty bytes the last automatic trim could not give back */
    uint64_t pack_moved;        /* requested bytes moved by packing nothing waited on (policy/steps.c) */
    uint64_t pack_retry_at;     /* after packing past the cache limit moved nothing: bytes
                                       allocated in all before it is tried again, ... */
    uint64_t pack_stuck;        /* ... unless more than this is held past it (policy/steps.c) */
    uint64_t peak_bytes_in_use; /* highest bytes_allocated_total - bytes_freed_total */

    uint64_t relocation_passes; /* passes started */
    uint64_t layout_live_peak;  /* most bytes live the layout saw at a new page (layout/layout.h) */
    uint64_t held_sums;         /* times bytes held were summed (trigger) */
    relo_reason last_reason;
    relo__move_hook move_hook;
    void *move_hook_user;
    relo_log_queue log; /* lines for the callback, sent at unlock */
};

/* The lock wrappers are inline: every public call takes and drops the lock
 * once, in a file of its own (api/), and a program linked without
 * link-time optimisation would otherwise pay two calls for them. */

/** Takes the device lock (every public call does, once). Not recursive. */
static inline void relo__device_lock(relo_device *device)
{
    relo__lock_acquire(&device->lock);
}

/** Releases the device lock in the middle of a call (to wait for the
 *  device, copy, transfer or free buffers), leaving the queued log lines
 *  for the unlock that ends a call: the callback never runs while a call
 *  has work in progress, such as a pass of its own open. */
static inline void relo__device_unlock_quietly(relo_device *device)
{
    relo__lock_release(&device->lock);
}

/** relo__device_unlock with log lines queued: takes them, releases the
 *  lock and sends them. */
void relo__device_unlock_sending(relo_device *device);

/** Releases the device lock, which the calling thread holds, as a public
 *  call returns, then sends the log lines queued under it to the callback
 *  (which may call relo: nothing of the call is in progress any more). */
static inline void relo__device_unlock(relo_device *device)
{
    if (device->log.count == 0 && device->log.dropped == 0)
        relo__lock_release(&device->lock);
    else
        relo__device_unlock_sending(device);
}

/**
 * Periodic cleanup: gives back the queued pages that are still empty and
 * unguarded, drops outdated pools that emptied, applies the exclusive
 * suspicion rule where due. Skipped while any stream records. O(1) when
 * nothing is queued.
 */
void relo__device_cleanup_periodic(relo_device *device);

/**
 * As relo__device_cleanup_periodic, but the buffers of the pages it gives
 * back are freed with the device lock dropped (the bookkeeping is done
 * first, under it): what a pass emptied goes back off the path other
 * threads wait on. Falls back to freeing under the lock without host
 * memory for the list.
 */
void relo__device_cleanup_off_lock(relo_device *device);

/** Frees the buffers collected in batch (relo__pool_page_collect) without
 *  the device lock: hands them to the release thread, or drops the lock,
 *  frees them and takes it again; the batch is empty afterwards. The lock
 *  is held; other threads may run meanwhile. The one way page buffers
 *  leave off the lock. */
void relo__device_free_batch(relo_device *device, relo_buffer_batch *batch);

/** Bytes of pages held across every stream (counts one sum). */
uint64_t relo__device_held_bytes(relo_device *device);

/** The streams a call covers, indices first .. end-1 of device->streams:
 *  only's, or every stream's when only is NULL. The one place a reclaim,
 *  a relocation or a compaction is scoped. */
static inline void relo__device_scope(const relo_device *device, const struct relo_stream *only,
                                      uint32_t *first, uint32_t *end)
{
    *first = only ? only->index : 0;
    *end = only ? only->index + 1 : device->stream_count;
}

#endif /* RELO_DEVICE_H */
