/*
 * layout/exclusive.c — the exclusive placement's layout (layout/layout.h):
 * one allocation per page, in 24 exclusive pools (buckets) whose page
 * sizes are spaced evenly in log scale from 32 KiB to the device's largest
 * page. A reservation takes the smallest bucket with a free page that
 * fits, else a new page in the smallest bucket that accepts its size.
 * Pages are reused whole; the suspicion rule (pool/unsliced_pool.c) gives
 * back those that look unused.
 */
#include "layout/layout.h"

#include <math.h>

#include "base/hostmem.h"

#define EXCLUSIVE_MIN_BUCKET (32 * RELO_KiB)

static relo_status exclusive_init(relo_stream_layout *l, const relo_pool_home *home)
{
    relo_exclusive *b = &l->exclusive;
    b->pools = relo__calloc(RELO_BUCKETS * sizeof *b->pools);
    if (!b->pools) return RELO_ERR_HOST_MEMORY;
    uint64_t lo = EXCLUSIVE_MIN_BUCKET, hi = home->max_page;
    uint64_t last = 0;
    b->count = 0;
    for (uint32_t i = 0; i < RELO_BUCKETS; i++) {
        double t = (double)i / (double)(RELO_BUCKETS - 1);
        double v = hi > lo ? (double)lo * pow((double)hi / (double)lo, t) : (double)hi;
        uint64_t size = (uint64_t)llround(v);
        if (i == RELO_BUCKETS - 1 || size > hi) size = hi;
        if (!relo__pad_size(size, home->alignment, home->max_page, &size)) size = home->max_page;
        if (size == last) continue;
        last = size;
        relo__exclusive_init(&b->pools[b->count++], home, "bucket", size, true);
    }
    return RELO_OK;
}

static relo_status exclusive_reserve(relo_stream_layout *l, uint64_t size, uint32_t slot, bool allow_new_page,
                                     relo_slice **out)
{
    relo_exclusive *b = &l->exclusive;
    relo_pool *accept = NULL;
    for (uint32_t i = 0; i < b->count; i++) {
        relo_pool *p = &b->pools[i];
        if (size > p->page_size) continue;
        if (!accept) accept = p;
        if (relo__exclusive_has_fit(p, size)) return relo__exclusive_reserve(p, size, slot, false, out);
    }
    if (!accept) return RELO_ERR_BUFFER_TOO_BIG;
    return relo__exclusive_reserve(accept, size, slot, allow_new_page, out);
}

static void exclusive_each_pool(relo_stream_layout *l, void (*fn)(relo_pool *, void *), void *user)
{
    for (uint32_t i = 0; i < l->exclusive.count; i++) fn(&l->exclusive.pools[i], user);
}

static void exclusive_destroy(relo_stream_layout *l)
{
    for (uint32_t i = 0; i < l->exclusive.count; i++) relo__pool_destroy(&l->exclusive.pools[i]);
    relo__free(l->exclusive.pools);
    l->exclusive.pools = NULL;
    l->exclusive.count = 0;
}

static bool exclusive_check(const relo_stream_layout *l, const char **why)
{
    for (uint32_t i = 1; i < l->exclusive.count; i++) {
        if (l->exclusive.pools[i].page_size <= l->exclusive.pools[i - 1].page_size) {
            *why = "bucket sizes do not grow";
            return false;
        }
    }
    return true;
}

/* The suspicion rule of the bucket that served, when its period comes up. */
static void exclusive_served(relo_stream_layout *l, relo_pool *pool, bool may_release)
{
    (void)l;
    if (!pool->periodic_release || !may_release) return;
    if (pool->check_every && pool->reservations % pool->check_every == 0) relo__exclusive_check(pool);
}

const relo_layout_ops relo__layout_exclusive = {
    .kind = RELO_LAYOUT_KIND_EXCLUSIVE,
    .name = "exclusive",
    .init = exclusive_init,
    .reserve = exclusive_reserve,
    .each_pool = exclusive_each_pool,
    .destroy = exclusive_destroy,
    .check = exclusive_check,
    .served = exclusive_served,
};
