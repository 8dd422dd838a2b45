/*
 * dense.c — the dense policy's pools and routing (see dense.h):
 *   fine    sizes ≤ 1 MiB; a new page holds as many copies of its request
 *           as fit in 2 MiB, rounded up to 64 KiB or the device's granule;
 *   large   larger sizes; a new page holds as many copies of a request
 *           ≤ 10 MiB as fit in 20 MiB, else just the request, rounded up
 *           to 2 MiB or the device's granule; any free room of any page
 *           serves any size that fits,
 * both best fit (smallest free slice that fits, lowest address among
 * equals), free neighbours merged. The compaction it relies on is in
 * compaction.c; the retry after a refused page in stream.c.
 */
#include "dense.h"

#include "compaction.h"
#include "device.h"
#include "relocation.h"
#include "sliced_pool.h"

void relo__dense_init(struct relo_stream *s)
{
    relo_device *d = s->device;
    static const char *names[RELO_DENSE_POOLS] = {"fine", "large"};
    static const uint64_t max_page[RELO_DENSE_POOLS] = {RELO_DENSE_FINE_PAGE, UINT64_MAX};
    static const uint64_t granule[RELO_DENSE_POOLS] = {RELO_DENSE_FINE_GRANULE, RELO_DENSE_LARGE_GRANULE};
    static const uint64_t small_max[RELO_DENSE_POOLS] = {RELO_DENSE_FINE_MAX, RELO_DENSE_MEDIUM_MAX};
    static const uint64_t small_page[RELO_DENSE_POOLS] = {RELO_DENSE_FINE_PAGE, RELO_DENSE_MEDIUM_PAGE};
    for (uint32_t k = 0; k < RELO_DENSE_POOLS; k++) {
        relo_pool *p = &s->dense[k];
        /* Pages are multiples of the device's granule too: a page the
         * device rounds up anyway would waste the difference. */
        uint64_t g = relo__max(granule[k], d->granule);
        uint64_t page = relo__min(relo__max(max_page[k], g), d->max_page);
        relo__pool_init(p, RELO_POOL_SLICED, names[k], s, relo__round_down(page, d->alignment));
        p->best_fit = true;
        p->variable_pages = true;
        if (!relo__round_up(g, d->alignment, &p->granule)) p->granule = d->alignment;
        p->small_request_max = small_max[k];
        p->small_request_page = relo__round_down(relo__min(small_page[k], p->page_size), d->alignment);
    }
}

relo_pool *relo__dense_pool_for(struct relo_stream *s, uint64_t padded)
{
    if (padded <= RELO_DENSE_FINE_MAX && padded <= s->dense[0].page_size) return &s->dense[0];
    return &s->dense[1];
}

/* Bytes live and held in the dense pools of every stream; summed only on
 * the slow path, when a pool needs a page. */
static void dense_totals(const relo_device *d, uint64_t *live, uint64_t *reserved)
{
    *live = *reserved = 0;
    for (uint32_t i = 0; i < d->stream_count; i++) {
        for (uint32_t k = 0; k < RELO_DENSE_POOLS; k++) {
            const relo_pool *p = &d->streams[i]->dense[k];
            *live += p->bytes_in_use + p->bytes_padding;
            *reserved += p->bytes_reserved;
        }
    }
}

/* Small pages follow the workload's scale: a page of at most 1/divisor of
 * the most bytes ever live, between the pool's floor and its base size,
 * so a workload of tens of MiB is not carved in 20 MiB pieces. */
static void scale_pages(relo_device *d, relo_pool *pool, uint64_t live)
{
    if (live > d->dense_live_peak) d->dense_live_peak = live;
    uint64_t base = pool == &pool->stream->dense[0] ? RELO_DENSE_FINE_PAGE : RELO_DENSE_MEDIUM_PAGE;
    base = relo__max(base, pool->granule);
    uint64_t page;
    if (!relo__round_up(d->dense_live_peak / RELO_DENSE_PAGE_DIVISOR, pool->granule, &page)) page = base;
    page = relo__min(relo__max(page, pool->granule), relo__min(base, pool->page_size));
    pool->small_request_page = relo__round_down(page, d->alignment);
}

relo_status relo__dense_reserve(struct relo_stream *s, uint64_t size, uint32_t slot, bool allow_new_page,
                                struct relo_slice **out)
{
    relo_device *d = s->device;
    uint64_t padded;
    if (!relo__pad_size(size, d->alignment, d->max_page, &padded)) return RELO_ERR_BUFFER_TOO_BIG;
    relo_pool *pool = relo__dense_pool_for(s, padded);
    relo_status st = relo__sliced_reserve(pool, size, slot, RELO_SLICE_LIVE, false, out);
    if (st != RELO_ERR_PAGE_UPDATE_FORBIDDEN || !allow_new_page) return st;
    /* A new page is needed. When the pools already hold more than the slack
     * in scattered free room, pack them first: the room may come back. A
     * fruitless attempt is not repeated for a few pages. */
    uint64_t live, reserved;
    dense_totals(d, &live, &reserved);
    live += padded;
    scale_pages(d, pool, live);
    uint64_t page = relo__sliced_new_page_size(pool, padded);
    if (s->dense_quiet > 0) {
        s->dense_quiet--;
    } else if (relo__relocation_allowed(d) && reserved + page > live + live / RELO_DENSE_SLACK_DIVISOR) {
        if (relo__compact_and_release(d, NULL, page, true, RELO_REASON_COMPACT) == 0) s->dense_quiet = RELO_DENSE_QUIET_PAGES;
        st = relo__sliced_reserve(pool, size, slot, RELO_SLICE_LIVE, false, out);
        if (st != RELO_ERR_PAGE_UPDATE_FORBIDDEN) return st;
    }
    return relo__sliced_reserve(pool, size, slot, RELO_SLICE_LIVE, true, out);
}
