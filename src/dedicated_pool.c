/*
 * dedicated_pool.c — a buffer per allocation (see dedicated_pool.h). Freed
 * buffers are queued on the device and go back at the next cleanup (pool.c).
 */
#include "dedicated_pool.h"


relo_status relo__dedicated_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                    bool allow_new_page, relo_slice **out)
{
    const relo_pool_home *d = pool->home;
    uint64_t length;
    if (!relo__pad_size(size, d->alignment, d->max_page, &length)) return RELO_ERR_BUFFER_TOO_BIG;
    if (!allow_new_page) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
    relo_page *page;
    relo_status st = relo__pool_page_new(pool, length ? length : d->alignment, &page);
    if (st != RELO_OK) return st;
    relo_slice *slice = page->first;
    slice->length = length;
    relo__pool_slice_take(pool, slice, size, slot, RELO_SLICE_LIVE);
    *out = slice;
    return RELO_OK;
}
