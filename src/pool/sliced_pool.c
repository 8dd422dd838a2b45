/*
 * pool/sliced_pool.c — carving slices out of pages (pool/pool.h). Freeing and
 * merging live in pool/pool.c, shared with the other kinds.
 */
#include "pool/pool.h"

/* Splits a free slice so its first `length` bytes hold the allocation;
 * returns the slice that holds it. The free remainder keeps the node and,
 * by address, its place in the treap (its key grows but passes no other
 * free slice), so only the maxima need restoring; by size it moves to the
 * class of its new length, or only to the front of its own. */
static relo_status carve(relo_pool *pool, relo_slice *f, uint64_t length, uint64_t size, uint32_t slot,
                         relo_slice_state state, relo_slice **out)
{
    relo_slice *taken = f;
    if (f->length > length) {
        relo_slice *a = relo__slice_new(pool->home->slab);
        if (!a) return RELO_ERR_HOST_MEMORY;
        a->page = f->page;
        a->offset = f->offset;
        a->length = length;
        a->state = RELO_SLICE_FREE;
        a->prev = f->prev;
        a->next = f;
        if (f->prev)
            f->prev->next = a;
        else
            f->page->first = a;
        f->prev = a;
        f->offset += length;
        f->length -= length;
        relo__free_index_refresh(&pool->free, f);
        taken = a;
    } else {
        relo__pool_free_remove(pool, f);
    }
    relo__pool_slice_take(pool, taken, size, slot, state);
    *out = taken;
    return RELO_OK;
}

relo_status relo__sliced_reserve(relo_pool *pool, uint64_t size, uint32_t slot, relo_slice_state state,
                                 bool allow_new_page, relo_slice **out)
{
    return relo__sliced_reserve_in(pool, size, slot, state,
                                   allow_new_page ? RELO_NEW_PAGE_POOL_RULE : RELO_NEW_PAGE_NONE, out);
}

relo_status relo__sliced_reserve_in(relo_pool *pool, uint64_t size, uint32_t slot, relo_slice_state state,
                                    relo_new_page new_page, relo_slice **out)
{
    uint64_t length;
    if (!relo__pad_size(size ? size : 1, pool->home->alignment, pool->page_size, &length))
        return RELO_ERR_BUFFER_TOO_BIG;
    return relo__sliced_reserve_padded(pool, size, length, slot, state, new_page, out);
}

/* True when length is among the sizes that had a page of their own lately. */
static bool own_size_seen(const relo_pool *pool, uint64_t length)
{
    for (uint32_t i = 0; i < RELO_OWN_SIZES; i++)
        if (pool->own_sizes[i] == length) return true;
    return false;
}

/* Remembers length as a size given a page of its own, in place of the
 * oldest remembered size when it is a new one. */
static void note_own_size(relo_pool *pool, uint64_t length)
{
    if (own_size_seen(pool, length)) return;
    pool->own_sizes[pool->own_next] = length;
    pool->own_next = (pool->own_next + 1) % RELO_OWN_SIZES;
}

/* No room held fits length bytes: takes the page new_page asks for (not
 * NONE) into *out. Out of line, so the path that finds room (most
 * reservations) does not carry its frame. */
RELO_NOINLINE static relo_status take_page(relo_pool *pool, uint64_t length, relo_new_page new_page,
                                           relo_page **out)
{
    uint64_t page_size = relo__sliced_new_page_size(pool, length);
    if (pool->variable_pages && length > pool->small_request_max) note_own_size(pool, length);
    /* A larger request alone in its run, moved under memory pressure, may
     * take a page of copies: the next allocations of its size moved off
     * their own pages land in it, and each such page that goes back gives
     * back its stranded tail. */
    bool exact = new_page == RELO_NEW_PAGE_EXACT || new_page == RELO_NEW_PAGE_EXACT_OR_COPIES;
    bool copies = new_page == RELO_NEW_PAGE_EXACT_OR_COPIES && length > pool->small_request_max &&
                  pool->exact_hint <= length;
    if (exact && !copies && pool->variable_pages &&
        (!relo__round_up(relo__max(length, pool->exact_hint), pool->granule, &page_size) ||
         page_size > pool->page_size))
        page_size = pool->page_size;
    relo_status st = relo__pool_page_new(pool, page_size, out);
    /* A page of several copies bets on more of the same size; when the
     * device cannot lend it, a page for this request alone may fit. */
    uint64_t alone;
    if (st == RELO_ERR_OUT_OF_MEMORY && pool->variable_pages &&
        relo__round_up(length, pool->granule, &alone) && alone < page_size)
        st = relo__pool_page_new(pool, alone, out);
    return st;
}

/* The lowest-address free slice of page that holds length bytes, or NULL
 * (also for a page whose room serves nothing now: a source, a guarded
 * page). Out of line: only a pass planning a pair of runs sets a fill
 * page. */
RELO_NOINLINE static relo_slice *fill_page_fit(const relo_page *page, uint64_t length)
{
    if (!relo__page_serves(page)) return NULL;
    for (relo_slice *s = page->first; s; s = s->next)
        if (s->state == RELO_SLICE_FREE && s->length >= length) return s;
    return NULL;
}

relo_status relo__sliced_reserve_padded(relo_pool *pool, uint64_t size, uint64_t length, uint32_t slot,
                                        relo_slice_state state, relo_new_page new_page, relo_slice **out)
{
    if (length > pool->page_size) return RELO_ERR_BUFFER_TOO_BIG;
    /* A search the caller has just made in vain is not made again (the
     * packed layout's reservation that asks about packing in between). */
    RELO_ASSERT(new_page != RELO_NEW_PAGE_ONLY || !pool->free.by_size ||
                !relo__free_index_find(&pool->free, length));
    relo_slice *f = NULL;
    if (new_page != RELO_NEW_PAGE_ONLY) {
        if (pool->fill_page) f = fill_page_fit(pool->fill_page, length);
        if (!f) f = relo__free_index_find(&pool->free, length);
    }
    relo_page *fresh = NULL;
    if (!f) {
        if (new_page == RELO_NEW_PAGE_NONE) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
        relo_status st = take_page(pool, length, new_page, &fresh);
        if (st != RELO_OK) return st;
        f = fresh->first;
    }
    relo_status st = carve(pool, f, length, size, slot, state, out);
    if (st != RELO_OK && fresh) relo__pool_page_release(pool, fresh);
    return st;
}

/* A page's stranded tail beyond 1/this of its request is worth more copies
 * of a repeated size, ... */
#define RELO_STRANDED_TAIL_DIVISOR 64u
/* ... up to this many on one page. */
#define RELO_OWN_COPIES_MAX 4u

/* The page for from..to copies of length bytes (rounded to the granule,
 * within the pool's page size) that strands the least per byte, or page,
 * stranding waste, when none strands less. */
static uint64_t least_stranding(const relo_pool *pool, uint64_t length, uint64_t from, uint64_t to,
                                uint64_t page, uint64_t waste)
{
    for (uint64_t k = from; waste > 0 && k <= to && length <= UINT64_MAX / k; k++) {
        uint64_t p;
        if (!relo__round_up(k * length, pool->granule, &p) || p > pool->page_size) break;
        if ((p - k * length) * page < waste * p) {
            waste = p - k * length;
            page = p;
        }
    }
    return page;
}

uint64_t relo__sliced_new_page_size(const relo_pool *pool, uint64_t length)
{
    if (!pool->variable_pages) return pool->page_size;
    uint64_t page;
    if (length > 0 && length <= pool->small_request_max && pool->small_request_page >= length) {
        /* As many copies of the request as a small page holds, so a page
         * that serves one size class wastes at most a granule. */
        uint64_t copies = pool->small_request_page / length;
        if (!relo__round_up(copies * length, pool->granule, &page) || page > pool->small_request_page)
            page = pool->small_request_page;
        /* The granule may strand the tail of every such page (5 MiB copies
         * on 2 MiB granules); up to twice the copies, take the count that
         * strands the least per byte. */
        return least_stranding(pool, length, copies + 1, 2 * copies, page,
                               page - relo__min(page, copies * length));
    }
    if (!relo__round_up(length, pool->granule, &page) || page > pool->page_size) page = pool->page_size;
    /* A larger request has a page of its own. When a size that had one
     * lately comes again and the granule strands more than 1/64 of it (a
     * 12.5 MiB request: 1.5 MiB of a 14 MiB page), the page holds up to
     * four copies, the count that strands the least per byte (50 MiB: none
     * for four). A size seen once (a growing workload) is not bet on. */
    if (own_size_seen(pool, length) && (page - length) * RELO_STRANDED_TAIL_DIVISOR > length)
        page = least_stranding(pool, length, 2, RELO_OWN_COPIES_MAX, page, page - length);
    return page;
}
