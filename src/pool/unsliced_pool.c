/*
 * pool/unsliced_pool.c — the pool kinds that give each allocation a page of its
 * own (pool/pool.h): exclusive pools reuse pages whole under the suspicion rule,
 * persistent pools reuse buffers of exactly the padded size, dedicated
 * pools give every allocation a fresh buffer. The free-page list an
 * exclusive pool scans on reuse holds only pages nobody uses, which the
 * suspicion rule keeps few.
 */
#include <math.h>

#include "pool/pool.h"

#define SUSPICION_NEW 4u
#define SUSPICION_RELEASE 5u
#define CHECKS_PER_PERIOD 5u

void relo__exclusive_init(relo_pool *pool, const relo_pool_home *home, const char *name, uint64_t max_size,
                          bool periodic)
{
    relo__pool_init(pool, RELO_POOL_EXCLUSIVE, name, home, max_size);
    pool->periodic_release = periodic;
    pool->average = (double)max_size / 2.0;
    /* dealloc period = 5000 × round(1 + size / GiB) reservations. */
    uint64_t period = 5000u * (uint64_t)llround(1.0 + (double)max_size / (double)RELO_GiB);
    pool->check_every = period / CHECKS_PER_PERIOD;
}

static relo_page *find_free(const relo_pool *pool, uint64_t length)
{
    relo_page *best = NULL;
    for (relo_page *p = pool->free_pages; p; p = p->free_next) {
        if (p->guards || p->size < length) continue;
        if (!best || p->suspicion < best->suspicion ||
            (p->suspicion == best->suspicion && p->order < best->order))
            best = p;
    }
    return best;
}

bool relo__exclusive_has_fit(const relo_pool *pool, uint64_t size)
{
    uint64_t length;
    if (!relo__pad_size(size, pool->home->alignment, UINT64_MAX, &length)) return false;
    return find_free(pool, length) != NULL;
}

relo_status relo__exclusive_reserve(relo_pool *pool, uint64_t size, uint32_t slot, bool allow_new_page,
                                    relo_slice **out)
{
    uint64_t align = pool->home->alignment;
    uint64_t length;
    if (!relo__pad_size(size, align, pool->page_size, &length)) return RELO_ERR_BUFFER_TOO_BIG;
    relo_page *page = find_free(pool, length);
    if (page) {
        if (page->suspicion > 0) page->suspicion--;
    } else {
        if (!allow_new_page) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
        uint64_t want = (uint64_t)pool->average;
        if (want < length) want = length;
        uint64_t page_size;
        if (!relo__pad_size(want ? want : 1, align, UINT64_MAX, &page_size)) return RELO_ERR_BUFFER_TOO_BIG;
        relo_status st = relo__pool_page_new(pool, page_size, &page);
        if (st != RELO_OK) return st;
        page->suspicion = SUSPICION_NEW;
    }
    pool->average = 0.99 * pool->average + 0.01 * (double)size;
    pool->reservations++;
    relo_slice *slice = page->first;
    slice->length = length;
    relo__pool_slice_take(pool, slice, size, slot, RELO_SLICE_LIVE);
    *out = slice;
    return RELO_OK;
}

uint32_t relo__exclusive_check(relo_pool *pool)
{
    uint32_t released = 0;
    relo_page *p = pool->free_pages;
    while (p) {
        relo_page *next = p->free_next;
        if (!p->guards && !p->pending && !p->transfers) {
            p->suspicion++;
            if (p->suspicion >= SUSPICION_RELEASE) {
                relo__pool_page_release(pool, p);
                released++;
            }
        }
        p = next;
    }
    return released;
}

/* ---- persistent and dedicated: a buffer of the request's own size ---- */

/* The padded length of a request that gets a buffer of its own, and that
 * buffer's size (a size-0 request takes one alignment unit). False when
 * it exceeds the largest buffer. */
static bool own_buffer(const relo_pool *pool, uint64_t size, uint64_t *length, uint64_t *buffer)
{
    const relo_pool_home *home = pool->home;
    if (!relo__pad_size(size, home->alignment, home->max_page, length)) return false;
    *buffer = *length ? *length : home->alignment;
    return true;
}

/* Gives a page's one slice to the allocation. */
static relo_status take_whole(relo_pool *pool, relo_page *page, uint64_t length, uint64_t size, uint32_t slot,
                              relo_slice **out)
{
    relo_slice *slice = page->first;
    slice->length = length;
    relo__pool_slice_take(pool, slice, size, slot, RELO_SLICE_LIVE);
    *out = slice;
    return RELO_OK;
}

relo_status relo__persistent_reserve(relo_pool *pool, uint64_t size, uint32_t slot, bool allow_new_page,
                                     relo_slice **out)
{
    uint64_t length, buffer_size;
    if (!own_buffer(pool, size, &length, &buffer_size)) return RELO_ERR_BUFFER_TOO_BIG;
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
    return take_whole(pool, page, length, size, slot, out);
}

relo_status relo__dedicated_reserve(relo_pool *pool, uint64_t size, uint32_t slot, bool allow_new_page,
                                    relo_slice **out)
{
    uint64_t length, buffer_size;
    if (!own_buffer(pool, size, &length, &buffer_size)) return RELO_ERR_BUFFER_TOO_BIG;
    if (!allow_new_page) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
    relo_page *page;
    relo_status st = relo__pool_page_new(pool, buffer_size, &page);
    if (st != RELO_OK) return st;
    return take_whole(pool, page, length, size, slot, out);
}
