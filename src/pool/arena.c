/*
 * pool/arena.c — adaptive pages (see pool/arena.h). A growth allocates the
 * new pool's first page with the request before anything else changes, so
 * a refused growth leaves the arena exactly as it was.
 */
#include "pool/arena.h"

#include <string.h>

#include "base/hostmem.h"

void relo__arena_init(relo_arena *arena, const relo_pool_home *home)
{
    memset(arena, 0, sizeof *arena);
    arena->home = home;
    arena->current = -1;
    uint64_t floor = relo__min(2 * RELO_MiB, home->max_page);
    if (!relo__round_up(floor, home->alignment, &arena->floor)) arena->floor = home->max_page;
    if (arena->floor > home->max_page) arena->floor = home->max_page;
    arena->page_size = arena->floor;
}

relo_pool *relo__arena_current(const relo_arena *arena)
{
    return arena->current >= 0 ? arena->slots[arena->current] : NULL;
}

/* Classifies a request; *grow_page gets the page size a growth would use. */
static relo_fit arena_fit(const relo_arena *arena, uint64_t size, uint64_t *grow_page)
{
    uint64_t alignment = arena->home->alignment, max_page = arena->home->max_page;
    uint64_t needed;
    if (!relo__pad_size(size, alignment, max_page, &needed)) return RELO_FIT_TOO_BIG;
    if (needed <= arena->page_size) {
        if (arena->current >= 0) return RELO_FIT_FITS;
        *grow_page = arena->page_size; /* the first pool, at the floor */
        return RELO_FIT_GROW;
    }
    /* page = clamp(roundup(roundup(size + 1 MiB, 1 MiB), alignment), floor,
     * max page); a backend may lend pages up to 2^64 - 1 bytes, so the sum
     * saturates and a rounding that overflows clamps to the max page. */
    uint64_t mib;
    if (!relo__round_up(relo__add_sat(size, RELO_MiB), RELO_MiB, &mib)) mib = max_page;
    uint64_t page;
    if (!relo__round_up(mib, alignment, &page)) page = max_page;
    if (page < arena->floor) page = arena->floor;
    if (page > max_page) page = max_page;
    *grow_page = page;
    return RELO_FIT_GROW;
}

static int free_slot(const relo_arena *arena)
{
    for (int i = 0; i < RELO_ARENA_SLOTS; i++)
        if (!arena->slots[i]) return i;
    return -1;
}

static void pool_outdate(relo_pool *pool)
{
    pool->outdated = true;
    for (uint32_t i = 0; i < pool->page_count; i++) {
        relo_page *p = pool->pages[i];
        if (p->occupied == 0 && p->guards == 0) relo__pool_queue_release(pool, p);
    }
}

static relo_status grow(relo_arena *arena, uint64_t size, uint64_t page, uint32_t slot, bool allow_new_page,
                        relo_slice **out)
{
    if (!allow_new_page) return RELO_ERR_PAGE_UPDATE_FORBIDDEN;
    int i = free_slot(arena);
    if (i < 0) return RELO_ERR_PAGE_SIZES_EXHAUSTED;
    relo_pool *pool = relo__calloc(sizeof *pool);
    if (!pool) return RELO_ERR_HOST_MEMORY;
    relo__pool_init(pool, RELO_POOL_SLICED, "arena", arena->home, page);
    pool->slot = i;
    /* The slot and the current pool change only once the page exists. */
    arena->slots[i] = pool;
    relo_status st = relo__sliced_reserve(pool, size, slot, RELO_SLICE_LIVE, true, out);
    if (st != RELO_OK) {
        arena->slots[i] = NULL;
        relo__free(pool->pages);
        relo__free_index_destroy(&pool->free);
        relo__occupancy_destroy(&pool->occupancy);
        relo__free(pool);
        return st;
    }
    relo_pool *old = relo__arena_current(arena);
    arena->current = i;
    arena->page_size = page;
    arena->pool_count++;
    if (old) pool_outdate(old);
    return RELO_OK;
}

relo_status relo__arena_reserve(relo_arena *arena, uint64_t size, uint32_t slot, bool allow_new_page,
                                relo_slice **out)
{
    /* The current pages take it (RELO_FIT_FITS, as arena_fit
     * would find, every arena page being at most the largest): padded
     * once, here. */
    relo_pool *current = relo__arena_current(arena);
    uint64_t needed;
    if (current && size > 0 && relo__pad_size(size, arena->home->alignment, arena->page_size, &needed))
        return relo__sliced_reserve_padded(current, size, needed, slot, RELO_SLICE_LIVE,
                                           allow_new_page ? RELO_NEW_PAGE_POOL_RULE : RELO_NEW_PAGE_NONE,
                                           out);
    uint64_t page = 0;
    switch (arena_fit(arena, size, &page)) {
    case RELO_FIT_FITS:
        return relo__sliced_reserve(relo__arena_current(arena), size, slot, RELO_SLICE_LIVE, allow_new_page,
                                    out);
    case RELO_FIT_GROW: return grow(arena, size, page, slot, allow_new_page, out);
    case RELO_FIT_TOO_BIG:
    case RELO_FIT_COUNT: break;
    }
    return RELO_ERR_BUFFER_TOO_BIG;
}

void relo__arena_drop_empty_pools(relo_arena *arena)
{
    for (int i = 0; i < RELO_ARENA_SLOTS; i++) {
        relo_pool *p = arena->slots[i];
        if (!p || !p->outdated || p->page_count) continue;
        relo__free(p->pages);
        relo__free_index_destroy(&p->free);
        relo__occupancy_destroy(&p->occupancy);
        relo__free(p);
        arena->slots[i] = NULL;
        arena->pool_count--;
    }
}

relo_arena_shape relo__arena_shape(const relo_arena *arena)
{
    relo_arena_shape shape = {0, 0, 0, 0};
    for (int i = 0; i < RELO_ARENA_SLOTS; i++) {
        const relo_pool *p = arena->slots[i];
        if (!p) continue;
        if (!p->outdated) {
            shape.current_pages += p->page_count;
            continue;
        }
        shape.outdated_pools++;
        shape.outdated_pages += p->page_count;
        shape.guarded_outdated_pages += p->guarded_pages;
    }
    return shape;
}

bool relo__arena_has_outdated(const relo_arena *arena)
{
    return arena->pool_count > (arena->current >= 0 ? 1u : 0u);
}

void relo__arena_destroy(relo_arena *arena)
{
    for (int i = 0; i < RELO_ARENA_SLOTS; i++) {
        relo_pool *p = arena->slots[i];
        if (!p) continue;
        relo__pool_destroy(p);
        relo__free(p);
        arena->slots[i] = NULL;
    }
    arena->pool_count = 0;
    arena->current = -1;
    arena->page_size = arena->floor;
}
