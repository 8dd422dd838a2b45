/*
 * layout/adaptive.c — the adaptive placement's layout (layout/layout.h,
 * design §3.6): sizes up to 64 KiB in the small pool, 8 MiB pages carved
 * first fit; larger ones in the arena (pool/arena.h), whose pages grow
 * with the workload. The relocation that empties the arena's outdated
 * pages is pass/relocation.c's.
 */
#include "layout/layout.h"


static relo_status adaptive_init(relo_stream_layout *l, const relo_pool_home *home)
{
    uint64_t small_page = relo__round_down(relo__min(RELO_SMALL_PAGE, home->max_page), home->alignment);
    relo__pool_init(&l->adaptive.small, RELO_POOL_SLICED, "small", home, small_page);
    relo__arena_init(&l->adaptive.arena, home);
    return RELO_OK;
}

static relo_status adaptive_reserve(relo_stream_layout *l, uint64_t size, uint32_t slot, bool allow_new_page,
                                    relo_slice **out)
{
    relo_pool *small = &l->adaptive.small;
    uint64_t padded;
    RELO_ASSERT(size > 0);
    if (relo__pad_size(size, small->home->alignment, relo__min(RELO_SMALL_MAX, small->page_size), &padded))
        return relo__sliced_reserve_padded(small, size, padded, slot, RELO_SLICE_LIVE,
                                           allow_new_page ? RELO_NEW_PAGE_POOL_RULE : RELO_NEW_PAGE_NONE,
                                           out);
    return relo__arena_reserve(&l->adaptive.arena, size, slot, allow_new_page, out);
}

static void adaptive_each_pool(relo_stream_layout *l, void (*fn)(relo_pool *, void *), void *user)
{
    fn(&l->adaptive.small, user);
    const relo_arena *a = &l->adaptive.arena;
    for (uint32_t i = 0, seen = 0; seen < a->pool_count && i < RELO_ARENA_SLOTS; i++) {
        if (!a->slots[i]) continue;
        seen++;
        fn(a->slots[i], user);
    }
}

static void adaptive_destroy(relo_stream_layout *l)
{
    relo__pool_destroy(&l->adaptive.small);
    relo__arena_destroy(&l->adaptive.arena);
}

static bool adaptive_check(const relo_stream_layout *l, const char **why)
{
    const relo_arena *a = &l->adaptive.arena;
    uint32_t pools = 0;
    const relo_pool *current = relo__arena_current(a);
    if (a->current >= 0 && (!current || current->outdated)) {
        *why = "the current arena pool is missing or outdated";
        return false;
    }
    for (int i = 0; i < RELO_ARENA_SLOTS; i++) {
        const relo_pool *p = a->slots[i];
        if (!p) continue;
        pools++;
        if (p->slot != i) {
            *why = "arena pool slot number is wrong";
            return false;
        }
        if (p != current && !p->outdated) {
            *why = "a second arena pool is not outdated";
            return false;
        }
        if (current && p->page_size > current->page_size) {
            *why = "page sizes shrank";
            return false;
        }
    }
    if (pools != a->pool_count) {
        *why = "arena pool count is wrong";
        return false;
    }
    if (current && current->page_size != a->page_size) {
        *why = "arena page size differs from the current pool's";
        return false;
    }
    return true;
}

const relo_layout_ops relo__layout_adaptive = {
    .kind = RELO_LAYOUT_KIND_ADAPTIVE,
    .name = "adaptive",
    .init = adaptive_init,
    .reserve = adaptive_reserve,
    .each_pool = adaptive_each_pool,
    .destroy = adaptive_destroy,
    .check = adaptive_check,
};
