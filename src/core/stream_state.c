/*
 * core/stream_state.c — one stream's pools: their setup for the device's layout,
 * the one walk over them, their counts, and giving every page back.
 */
#include "core/stream.h"

#include <string.h>

#include "core/device.h"

relo_status relo__stream_init(struct relo_stream *s, relo_device *d, void *backend_stream)
{
    memset(s, 0, sizeof *s);
    s->device = d;
    s->backend_stream = backend_stream;
    s->home = (relo_pool_home){
        .backend = d->backend,
        .releaser = &d->releaser,
        .slab = &d->slab,
        .handles = &d->handles,
        .alignment = d->alignment,
        .max_page = d->max_page,
        .granule = d->granule,
        .page_order = &d->page_order,
        .pending = &d->pending,
        .held = {&s->held, &d->held},
        .owner = s,
    };
    relo__pool_init(&s->persistent, RELO_POOL_PERSISTENT, "persistent", &s->home, 0);
    relo__pool_init(&s->dedicated, RELO_POOL_DEDICATED, "dedicated", &s->home, 0);
    relo__exclusive_init(&s->tiny, &s->home, "tiny", d->alignment, false);
    s->layout.ops = d->layout;
    return s->layout.ops->init(&s->layout, &s->home);
}

void relo__stream_each_pool(struct relo_stream *s, void (*fn)(relo_pool *, void *), void *user)
{
    /* The one walk over a stream's pools; stats call it on every query. */
    fn(&s->persistent, user);
    fn(&s->dedicated, user);
    fn(&s->tiny, user);
    s->layout.ops->each_pool(&s->layout, fn, user);
}

static void add_allocations(relo_pool *p, void *user)
{
    *(uint64_t *)user += p->allocations;
}
static void add_guarded(relo_pool *p, void *user)
{
    *(uint64_t *)user += p->guarded_pages;
}

uint64_t relo__stream_allocations(const struct relo_stream *s)
{
    uint64_t n = 0;
    relo__stream_each_pool((struct relo_stream *)s, add_allocations, &n);
    return n;
}

uint64_t relo__stream_guarded_pages(const struct relo_stream *s)
{
    uint64_t n = 0;
    relo__stream_each_pool((struct relo_stream *)s, add_guarded, &n);
    return n;
}

void relo__stream_free_pages(struct relo_stream *s)
{
    relo__pool_destroy(&s->persistent);
    relo__pool_destroy(&s->dedicated);
    relo__pool_destroy(&s->tiny);
    s->layout.ops->destroy(&s->layout);
}
