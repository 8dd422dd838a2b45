/*
 * layout/packed.c — the packed placement's layout, the default
 * (layout/layout.h, docs/placement.md): dynamic memory carved as a
 * fine-grained caching allocator would, best fit
 * in two pools by size, and packed by compaction (pass/compaction.c) when the
 * device refuses a page, on relo_reclaim, and before a pool takes a new
 * page while its free room is scattered. It places everything as such an
 * allocator would until the moment it would fail, and then still has a
 * move to make.
 *   fine    sizes ≤ 1 MiB; a new page holds as many copies of its request
 *           as fit in 2 MiB, rounded up to 64 KiB or the device's granule;
 *   large   larger sizes; a new page holds as many copies of a request
 *           ≤ 10 MiB as fit in 20 MiB, else just the request, rounded up
 *           to 2 MiB or the device's granule (up to four copies of one of
 *           the last four such sizes, where the granule would strand more
 *           than 1/64 of it); any free room of any page serves any size
 *           that fits,
 * the 2 and 20 MiB pages smaller while the workload is small (scale_pages),
 * both best fit (smallest free slice that fits, lowest address among
 * equals), free neighbours merged.
 */
#include "layout/layout.h"


static relo_status packed_init(relo_stream_layout *l, const relo_pool_home *home)
{
    static const char *names[RELO_PACKED_POOLS] = {"fine", "large"};
    static const uint64_t max_page[RELO_PACKED_POOLS] = {RELO_PACKED_FINE_PAGE, UINT64_MAX};
    static const uint64_t granule[RELO_PACKED_POOLS] = {RELO_PACKED_FINE_GRANULE, RELO_PACKED_LARGE_GRANULE};
    static const uint64_t small_max[RELO_PACKED_POOLS] = {RELO_PACKED_FINE_MAX, RELO_PACKED_MEDIUM_MAX};
    static const uint64_t small_page[RELO_PACKED_POOLS] = {RELO_PACKED_FINE_PAGE, RELO_PACKED_MEDIUM_PAGE};
    l->packed.quiet = 0;
    for (uint32_t k = 0; k < RELO_PACKED_POOLS; k++) {
        relo_pool *p = &l->packed.pools[k];
        l->packed.largest_own[k] = 0;
        /* Pages are multiples of the device's granule too: a page the
         * device rounds up anyway would waste the difference. */
        uint64_t g = relo__max(granule[k], home->granule);
        uint64_t page = relo__min(relo__max(max_page[k], g), home->max_page);
        relo__pool_init(p, RELO_POOL_SLICED, names[k], home, relo__round_down(page, home->alignment));
        p->best_fit = true;
        p->variable_pages = true;
        if (!relo__round_up(g, home->alignment, &p->granule)) p->granule = home->alignment;
        p->small_request_max = small_max[k];
        p->small_request_page = relo__round_down(relo__min(small_page[k], p->page_size), home->alignment);
    }
    return RELO_OK;
}

/* The pool for padded bytes, the layout known to be packed. */
static relo_pool *pool_for(relo_packed *packed, uint64_t padded)
{
    if (padded <= RELO_PACKED_FINE_MAX && padded <= packed->pools[0].page_size) return &packed->pools[0];
    return &packed->pools[1];
}

static relo_pool *packed_room_pool(relo_stream_layout *l, uint64_t padded)
{
    return pool_for(&l->packed, padded);
}

/* Packing empties pages of the fine and the large pool; under memory
 * pressure the large pool's room may take the fine pool's allocations. */
static relo_pool *packed_pack_pool(relo_stream_layout *l, uint32_t k, relo_pool **spill)
{
    if (k >= RELO_PACKED_POOLS) return NULL;
    *spill = k == 0 ? &l->packed.pools[1] : NULL;
    return &l->packed.pools[k];
}

/* Small pages follow the workload's scale: a page of at most 1/divisor of
 * the most bytes ever live, between the pool's floor and its base size,
 * so a workload of tens of MiB is not carved in 20 MiB pieces. A young
 * workload is not a small one, though: once the pool has needed a page for
 * a request above its small-request bound (a tensor that has a page of its
 * own, over 10 MiB in the large pool), its small pages are at least that
 * request, up to the base. Such a request's own page is already larger
 * than the smaller page would be, and the live bytes so far (the first
 * layers of a model) say little of where the workload is going: without
 * this, a GPU workload took a hundred 4-16 MiB pages before its live bytes
 * reached the 1.28 GB at which 1/64 is 20 MiB. padded is the request a
 * page is needed for. */
static void scale_pages(relo_packed *packed, relo_pool *pool, uint64_t live, uint64_t padded,
                        uint64_t *live_peak)
{
    if (live > *live_peak) *live_peak = live;
    uint32_t k = pool == &packed->pools[0] ? 0 : 1;
    if (padded > pool->small_request_max && padded > packed->largest_own[k]) packed->largest_own[k] = padded;
    uint64_t base = k == 0 ? RELO_PACKED_FINE_PAGE : RELO_PACKED_MEDIUM_PAGE;
    base = relo__max(base, pool->granule);
    uint64_t page;
    if (!relo__round_up(*live_peak / RELO_PACKED_PAGE_DIVISOR, pool->granule, &page)) page = base;
    page = relo__max(page, packed->largest_own[k]);
    page = relo__min(relo__max(page, pool->granule), relo__min(base, pool->page_size));
    pool->small_request_page = relo__round_down(page, pool->home->alignment);
}

/* Reserves size in the pool its padded size goes to, new_page saying
 * whether and how a page may be taken. */
static relo_status reserve_in_pool(relo_stream_layout *l, uint64_t size, uint32_t slot,
                                   relo_new_page new_page, relo_slice **out)
{
    const relo_pool_home *home = l->packed.pools[0].home;
    uint64_t padded;
    RELO_ASSERT(size > 0);
    if (!relo__pad_size(size, home->alignment, home->max_page, &padded)) return RELO_ERR_BUFFER_TOO_BIG;
    /* Padded once: the pool's own limit is checked on the same length. */
    return relo__sliced_reserve_padded(pool_for(&l->packed, padded), size, padded, slot, RELO_SLICE_LIVE,
                                       new_page, out);
}

static relo_status packed_reserve(relo_stream_layout *l, uint64_t size, uint32_t slot, bool allow_new_page,
                                  relo_slice **out)
{
    return reserve_in_pool(l, size, slot, allow_new_page ? RELO_NEW_PAGE_POOL_RULE : RELO_NEW_PAGE_NONE, out);
}

static relo_status packed_reserve_new_page(relo_stream_layout *l, uint64_t size, uint32_t slot,
                                           relo_slice **out)
{
    return reserve_in_pool(l, size, slot, RELO_NEW_PAGE_ONLY, out);
}

/* A new page is needed. When the pools already hold more than the slack in
 * scattered free room, pack them first: the room may come back. A
 * fruitless attempt is not repeated for a few pages. */
static bool packed_want_pack(relo_stream_layout *l, uint64_t size, uint64_t live, uint64_t reserved,
                             bool may_move, uint64_t *live_peak, uint64_t *page)
{
    const relo_pool_home *home = l->packed.pools[0].home;
    uint64_t padded;
    if (!relo__pad_size(size, home->alignment, home->max_page, &padded)) return false;
    relo_pool *pool = pool_for(&l->packed, padded);
    live += padded;
    scale_pages(&l->packed, pool, live, padded, live_peak);
    *page = relo__sliced_new_page_size(pool, padded);
    /* A page of copies of a larger size is a bet on more of it: whether to
     * pack, and how much room to ask of packing, is judged on the page the
     * request alone would take. */
    uint64_t alone;
    if (padded > pool->small_request_max && relo__round_up(padded, pool->granule, &alone) && alone < *page)
        *page = alone;
    if (l->packed.quiet > 0) {
        l->packed.quiet--;
        return false;
    }
    return may_move && reserved + *page > live + live / RELO_PACKED_SLACK_DIVISOR;
}

static void packed_pack_done(relo_stream_layout *l, bool gave_back)
{
    if (!gave_back) l->packed.quiet = RELO_PACKED_QUIET_PAGES;
}

static void packed_held(const relo_stream_layout *l, uint64_t *live, uint64_t *reserved)
{
    for (uint32_t k = 0; k < RELO_PACKED_POOLS; k++) {
        const relo_pool *p = &l->packed.pools[k];
        *live += p->bytes_in_use + p->bytes_padding;
        *reserved += p->bytes_reserved;
    }
}

static void packed_each_pool(relo_stream_layout *l, void (*fn)(relo_pool *, void *), void *user)
{
    for (uint32_t k = 0; k < RELO_PACKED_POOLS; k++) fn(&l->packed.pools[k], user);
}

static void packed_destroy(relo_stream_layout *l)
{
    for (uint32_t k = 0; k < RELO_PACKED_POOLS; k++) relo__pool_destroy(&l->packed.pools[k]);
}

static bool packed_check(const relo_stream_layout *l, const char **why)
{
    for (uint32_t k = 0; k < RELO_PACKED_POOLS; k++) {
        const relo_pool *p = &l->packed.pools[k];
        if (p->kind != RELO_POOL_SLICED || !p->best_fit || !p->variable_pages) {
            *why = "a packed-layout pool is not a best-fit sliced pool of variable pages";
            return false;
        }
    }
    return true;
}

const relo_layout_ops relo__layout_packed = {
    .kind = RELO_LAYOUT_KIND_PACKED,
    .name = "packed",
    .init = packed_init,
    .reserve = packed_reserve,
    .each_pool = packed_each_pool,
    .destroy = packed_destroy,
    .check = packed_check,
    .want_pack = packed_want_pack,
    .reserve_new_page = packed_reserve_new_page,
    .pack_done = packed_pack_done,
    .held = packed_held,
    .pack_pool = packed_pack_pool,
    .room_pool = packed_room_pool,
};
