/*
 * layout/buckets.c — RELO_LAYOUT_EXCLUSIVE (layout/layout.h): 24 exclusive pools
 * whose page sizes are spaced evenly in log scale from 32 KiB to the
 * device's largest page. A reservation takes the smallest bucket with a
 * free page that fits, else a new page in the smallest bucket that accepts
 * its size. Pages are reused whole; the suspicion rule (pool/unsliced_pool.c)
 * gives back those that look unused.
 */
#include "layout/layout.h"

#include <math.h>

#include "base/hostmem.h"

#define EXCLUSIVE_MIN_BUCKET (32 * RELO_KiB)

static relo_status buckets_init(relo_stream_layout *l, const relo_pool_home *home)
{
    relo_buckets *b = &l->buckets;
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

static relo_status buckets_reserve(relo_stream_layout *l, uint64_t size, uint32_t slot, bool allow_new_page,
                                   relo_slice **out)
{
    relo_buckets *b = &l->buckets;
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

static void buckets_each_pool(relo_stream_layout *l, void (*fn)(relo_pool *, void *), void *user)
{
    for (uint32_t i = 0; i < l->buckets.count; i++) fn(&l->buckets.pools[i], user);
}

static void buckets_destroy(relo_stream_layout *l)
{
    for (uint32_t i = 0; i < l->buckets.count; i++) relo__pool_destroy(&l->buckets.pools[i]);
    relo__free(l->buckets.pools);
    l->buckets.pools = NULL;
    l->buckets.count = 0;
}

static bool buckets_check(const relo_stream_layout *l, const char **why)
{
    for (uint32_t i = 1; i < l->buckets.count; i++) {
        if (l->buckets.pools[i].page_size <= l->buckets.pools[i - 1].page_size) {
            *why = "bucket sizes do not grow";
            return false;
        }
    }
    return true;
}

/* The suspicion rule of the bucket that served, when its period comes up. */
static void buckets_served(relo_stream_layout *l, relo_pool *pool, bool may_release)
{
    (void)l;
    if (!pool->periodic_release || !may_release) return;
    if (pool->check_every && pool->reservations % pool->check_every == 0) relo__exclusive_check(pool);
}

const relo_layout_ops relo__layout_buckets = {
    .kind = RELO_LAYOUT_KIND_BUCKETS,
    .name = "buckets",
    .init = buckets_init,
    .reserve = buckets_reserve,
    .each_pool = buckets_each_pool,
    .destroy = buckets_destroy,
    .check = buckets_check,
    .served = buckets_served,
};
