/*
 * persistent_pool.c — exact-size reuse of whole buffers (see
 * persistent_pool.h).
 */
#include "persistent_pool.h"


relo_status relo__persistent_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                     bool allow_new_page, relo_slice **out)
{
    const relo_pool_home *d = pool->home;
    uint64_t length;
    if (!relo__pad_size(size, d->alignment, d->max_page, &length)) return RELO_ERR_BUFFER_TOO_BIG;
    uint64_t buffer_size = length ? length : d->alignment;
    relo_page *page = NULL;
    for (relo_page *p = pool->free_pages; p; p = p->free_next) {
        if (!p->guards && p->size == buffer_size) {
            page = p;
            break;
        }
    }
    if (!page) {
        if (!allow_new_page) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
        relo_status st = relo__pool_page_new(pool, buffer_size, &page);
        if (st != RELO_OK) return st;
    }
    relo_slice *slice = page->first;
    slice->length = length;
    relo__pool_slice_take(pool, slice, size, slot, RELO_SLICE_LIVE);
    *out = slice;
    return RELO_OK;
}
