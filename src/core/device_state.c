/*
 * core/device_state.c — the bottom of the device that every layer above uses:
 * the lock (and the log lines sent when it drops), the queue of emptied
 * pages and its cleanup, freeing page buffers without the lock, and the
 * bytes held across streams.
 */
#include "core/device.h"

#include "base/hostmem.h"

RELO_COLD void relo__device_unlock_sending(relo_device *device)
{
    relo_log_queue lines;
    relo__log_take(&device->log, &lines);
    relo__lock_release(&device->lock);
    relo__log_send(device, &lines);
}

/* The periodic cleanup; with a batch, the buffers of released pages are
 * collected into it instead of freed under the lock. */
static void cleanup(relo_device *d, relo_buffer_batch *batch)
{
    if (d->recording || !d->pending) return;
    bool dropped_outdated = false;
    relo_page *busy = NULL; /* in transfer: queued again */
    while (d->pending) {
        relo_page *p = d->pending;
        d->pending = p->pending_next;
        p->pending_next = NULL;
        if (p->transfers) {
            p->pending_next = busy;
            busy = p;
            continue;
        }
        p->pending = false;
        if (p->occupied == 0 && p->guards == 0) {
            relo_pool *pool = p->pool;
            dropped_outdated |= pool->outdated;
            if (batch)
                relo__pool_page_collect(pool, p, batch);
            else
                relo__pool_page_release(pool, p);
        }
    }
    d->pending = busy;
    if (dropped_outdated)
        for (uint32_t i = 0; i < d->stream_count; i++) relo__stream_drop_empty_pools(d->streams[i]);
}

void relo__device_cleanup_periodic(relo_device *d)
{
    cleanup(d, NULL);
}

void relo__device_cleanup_off_lock(relo_device *d)
{
    relo_buffer_batch batch;
    relo__buffer_batch_init(&batch);
    cleanup(d, &batch);
    relo__device_free_batch(d, &batch);
}

void relo__device_free_batch(relo_device *d, relo_buffer_batch *batch)
{
    uint32_t n = batch->count;
    relo_buffer_free *bufs = batch->bufs;
    if (n > 0 && !(d->releaser.running && relo__releaser_push(&d->releaser, bufs, n))) {
        relo_backend *b = d->backend;
        relo__device_unlock_quietly(d);
        for (uint32_t i = 0; i < n; i++) b->ops.free(b->ctx, bufs[i].buffer, bufs[i].size);
        relo__device_lock(d);
    }
    if (bufs != batch->inline_bufs) relo__free(bufs);
    relo__buffer_batch_init(batch);
}

uint64_t relo__device_held_bytes(relo_device *d)
{
    uint64_t held = 0;
    for (uint32_t i = 0; i < d->stream_count; i++) held += d->streams[i]->held.bytes_reserved;
    d->held_sums++;
    return held;
}
