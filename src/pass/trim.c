/*
 * pass/trim.c — the cache limit (see pass/relocation.h and relo.h):
 * giving empty pages back to the backend once the device holds more than
 * the bytes live plus the cache limit, and the same on request for relo_trim
 * (api/reclaim.c).
 * Nothing here moves an allocation; only pages with none go back.
 */
#include "base/hostmem.h"
#include "pass/relocation.h"

uint64_t relo__trim_live(const relo_device *d)
{
    return d->held.counters.bytes_allocated_total - d->held.counters.bytes_freed_total;
}

uint64_t relo__trim_resolve(const relo_device *d, uint64_t v)
{
    if (v != RELO_CACHE_LIMIT_PROPORTIONAL) return v;
    /* At least one granule per dynamic pool of each stream: a small
     * workload keeps a page to turn to in each pool instead of a new one. */
    uint64_t floor = d->granule * RELO_TRIM_POOLS * (d->stream_count ? d->stream_count : 1);
    return relo__max(relo__trim_live(d) / RELO_TRIM_LIVE_DIVISOR, floor);
}

uint64_t relo__cache_limit(const relo_device *d)
{
    return relo__trim_resolve(d, d->desc.cache_limit);
}

/* True while the device holds more than live + keep bytes. */
static bool over(const relo_device *d, uint64_t keep)
{
    uint64_t live = relo__trim_live(d);
    return d->held.bytes_reserved > live && d->held.bytes_reserved - live > keep;
}

uint64_t relo__trim_pool(relo_device *d, relo_pool *pool, uint64_t keep, relo_buffer_batch *batch)
{
    /* Only pages carved into slices: exclusive pools (the tiny pool, the
     * exclusive placement's buckets) keep their own reuse rule, persistent
     * and dedicated memory their modes'. */
    if (pool->kind != RELO_POOL_SLICED || pool->bytes_empty == 0) return 0;
    uint64_t before = pool->bytes_reserved;
    /* The pool's empty pages that nothing holds, from its occupancy index,
     * in the order a walk down every page takes them (so the pages that
     * stay keep their positions); the walk itself only when host memory
     * for the list ran out. */
    relo_page_list empty;
    if (relo__occupancy_empty_pages(pool, &empty)) {
        for (relo_page *p; over(d, keep) && (p = relo__page_list_pop(&empty));)
            relo__pool_page_collect(pool, p, batch);
        relo__page_list_free(&empty);
    } else {
        for (uint32_t i = pool->page_count; i-- > 0 && pool->bytes_empty && over(d, keep);) {
            relo_page *p = pool->pages[i];
            if (p->occupied || p->guards || p->pending || p->fenced || p->transfers) continue;
            relo__pool_page_collect(pool, p, batch);
        }
    }
    return before - pool->bytes_reserved;
}

typedef struct trim_walk {
    relo_device *device;
    uint64_t keep;
    uint64_t released;
    relo_buffer_batch batch; /* detached, freed without the lock after the walk */
} trim_walk;

static void trim_pool(relo_pool *pool, void *user)
{
    trim_walk *w = user;
    w->released += relo__trim_pool(w->device, pool, w->keep, &w->batch);
}

RELO_COLD uint64_t relo__trim(relo_device *d, struct relo_stream *only, uint64_t keep)
{
    if (d->recording || d->held.bytes_empty == 0 || !over(d, keep)) return 0;
    trim_walk w;
    w.device = d;
    w.keep = keep;
    w.released = 0;
    relo__buffer_batch_init(&w.batch);
    uint32_t first, end;
    relo__device_scope(d, only, &first, &end);
    for (uint32_t s = first; s < end && d->held.bytes_empty && over(d, keep); s++)
        relo__stream_each_pool(d->streams[s], trim_pool, &w);
    /* The backend's frees, which can cost as much as a copy, keep no other
     * thread waiting on the device lock. */
    relo__device_free_batch(d, &w.batch);
    return w.released;
}

void relo__trim_auto(relo_device *d)
{
    /* Empty pages that stayed last time (guarded, queued, in a transfer)
     * are not walked again until more pages empty. */
    if (d->held.bytes_empty <= d->trim_stuck) {
        d->trim_stuck = d->held.bytes_empty;
        return;
    }
    uint64_t keep = relo__cache_limit(d);
    if (!over(d, keep)) return;
    relo__trim(d, NULL, keep);
    if (over(d, keep)) d->trim_stuck = d->held.bytes_empty;
}
