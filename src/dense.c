/*
 * dense.c — the dense policy's pools and routing (see dense.h):
 *   fine    sizes ≤ 1 MiB; a new page holds as many copies of its request
 *           as fit in 2 MiB, rounded up to 64 KiB;
 *   large   larger sizes; a new page holds as many copies of a request
 *           ≤ 10 MiB as fit in 20 MiB, else just the request, rounded up
 *           to 2 MiB; any free room of any page serves any size that fits,
 * both best fit (smallest free slice that fits, lowest address among
 * equals), free neighbours merged. The compaction it relies on is in
 * compaction.c; the retry after a refused page in stream.c.
 */
#include "dense.h"

#include "compaction.h"
#include "device.h"
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
        uint64_t page = relo__min(max_page[k], d->max_page);
        relo__pool_init(p, RELO_POOL_SLICED, names[k], s, relo__round_down(page, d->alignment));
        p->best_fit = true;
        p->variable_pages = true;
        if (!relo__round_up(granule[k], d->alignment, &p->granule)) p->granule = d->alignment;
        p->small_request_max = small_max[k];
        p->small_request_page = relo__round_down(relo__min(small_page[k], p->page_size), d->alignment);
    }
}

static relo_pool *pool_for(struct relo_stream *s, uint64_t padded)
{
    if (padded <= RELO_DENSE_FINE_MAX && padded <= s->dense[0].page_size) return &s->dense[0];
    return &s->dense[1];
}

uint64_t relo__dense_page_for(const struct relo_stream *s, uint64_t size)
{
    relo_device *d = s->device;
    uint64_t padded;
    if (!relo__round_up(size, d->alignment, &padded)) return UINT64_MAX;
    return relo__sliced_new_page_size(pool_for((struct relo_stream *)s, padded), padded);
}

relo_status relo__dense_reserve(struct relo_stream *s, uint64_t size, uint32_t slot, bool allow_new_page,
                                struct relo_slice **out)
{
    relo_device *d = s->device;
    uint64_t padded;
    if (!relo__round_up(size, d->alignment, &padded) || padded > d->max_page) return RELO_ERR_BUFFER_TOO_BIG;
    return relo__sliced_reserve(pool_for(s, padded), size, slot, RELO_SLICE_LIVE, allow_new_page, out);
}
