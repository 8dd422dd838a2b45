/*
 * sliced_pool.c — carving slices out of fixed-size pages (see
 * sliced_pool.h). Freeing and merging live in pool.c, shared with the
 * other kinds.
 */
#include "sliced_pool.h"

#include "device.h"
#include "free_tree.h"

/* Splits a free slice so its first `length` bytes hold the allocation. */
static relo_status carve(relo_pool *pool, relo_slice *f, uint64_t length, uint64_t size,
                         uint32_t slot, relo_slice_state state)
{
    relo_slice_slab *slab = &pool->stream->device->slab;
    if (f->length > length) {
        relo_slice *rest = relo__slice_new(slab);
        if (!rest) return RELO_ERR_HOST_MEMORY;
        relo__free_tree_remove(&pool->free_root, f);
        rest->page = f->page;
        rest->offset = f->offset + length;
        rest->length = f->length - length;
        rest->state = RELO_SLICE_FREE;
        rest->prev = f;
        rest->next = f->next;
        if (f->next) f->next->prev = rest;
        f->next = rest;
        f->length = length;
        relo__free_tree_insert(&pool->free_root, rest);
    } else {
        relo__free_tree_remove(&pool->free_root, f);
    }
    relo__pool_slice_take(pool, f, size, slot, state);
    return RELO_OK;
}

relo_status relo__sliced_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                 relo_slice_state state, bool allow_new_page, relo_slice **out)
{
    uint64_t align = pool->stream->device->alignment;
    uint64_t length;
    if (!relo__round_up(size ? size : 1, align, &length) || length > pool->page_size)
        return RELO_ERR_BUFFER_TOO_BIG;
    relo_slice *f = relo__free_tree_first_fit(pool->free_root, length);
    relo_page *fresh = NULL;
    if (!f) {
        if (!allow_new_page) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
        relo_status st = relo__pool_page_new(pool, pool->page_size, &fresh);
        if (st != RELO_OK) return st;
        f = fresh->first;
    }
    relo_status st = carve(pool, f, length, size, slot, state);
    if (st != RELO_OK) {
        if (fresh) relo__pool_page_release(pool, fresh);
        return st;
    }
    *out = f;
    return RELO_OK;
}

bool relo__sliced_has_room(const relo_pool *pool, uint64_t length)
{
    return relo__free_tree_first_fit(pool->free_root, length) != NULL;
}
