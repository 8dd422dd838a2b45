/*
 * policy/stream.c — the reservation path: a stream's mode window routes a
 * request to a pool, and a refused one is retried after the steps of
 * policy/steps.c (cleanup, relocation, packing). relo_reserve (api/device.c)
 * calls it.
 */
#include "core/stream.h"

#include <string.h>

#include "core/device.h"
#include "base/hostmem.h"
#include "pass/relocation.h"

static relo_mode effective_mode(const struct relo_stream *s)
{
    return s->mode_depth ? (relo_mode)s->modes[s->mode_depth - 1] : RELO_MODE_AUTO;
}

/* The pool where room is made for a refused request (layout/layout.h), or NULL. */
static relo_pool *room_pool(relo_stream_layout *l, uint64_t padded)
{
    return l->ops->room_pool ? l->ops->room_pool(l, padded) : NULL;
}

/* Bytes live and held in the pools the device's layout packs, over every
 * stream; summed only on the slow path, when a pool needs a page. */
static void layout_totals(const relo_device *d, uint64_t *live, uint64_t *reserved)
{
    *live = *reserved = 0;
    for (uint32_t i = 0; i < d->stream_count; i++) {
        const relo_stream_layout *l = &d->streams[i]->layout;
        if (l->ops->held) l->ops->held(l, live, reserved);
    }
}

/* The search of reserve_in_layout found no room: asks the layout whether
 * to pack first, packs, searches once more, and takes the new page. Out
 * of line, so the search that finds room keeps a small frame. */
RELO_NOINLINE static relo_status reserve_after_search(struct relo_stream *s, uint64_t size, uint32_t slot,
                                                      relo_slice **out)
{
    relo_device *d = s->device;
    relo_stream_layout *l = &s->layout;
    const relo_layout_ops *ops = l->ops;
    uint64_t live, reserved, page;
    layout_totals(d, &live, &reserved);
    if (ops->want_pack(l, size, live, reserved, relo__relocation_allowed(d), &d->layout_live_peak, &page)) {
        ops->pack_done(l, relo__steps_pack_before_page(d, s, page));
        relo_status st = ops->reserve(l, size, slot, false, out);
        if (st != RELO_ERR_PAGE_UPDATE_FORBIDDEN) return st;
    }
    return ops->reserve_new_page(l, size, slot, out);
}

/* Reserves in the stream's layout. A layout that packs before a new page
 * (packed) is asked first whether to, with the device's totals, and the
 * compaction runs here, in the layer that may move memory. The new page
 * is taken without searching again the room a search has just found
 * wanting (after a pack, that search is the one that follows it). */
static relo_status reserve_in_layout(struct relo_stream *s, uint64_t size, uint32_t slot, bool allow,
                                     relo_slice **out)
{
    relo_stream_layout *l = &s->layout;
    const relo_layout_ops *ops = l->ops;
    if (!ops->want_pack || !allow) return ops->reserve(l, size, slot, allow, out);
    relo_status st = ops->reserve(l, size, slot, false, out);
    if (st != RELO_ERR_PAGE_UPDATE_FORBIDDEN) return st;
    return reserve_after_search(s, size, slot, out);
}

/* The reservations no layout serves: a mode's own pool, and size 0 in the
 * tiny pool (design §3.5, routing order). */
RELO_NOINLINE static relo_status route_outside_layout(struct relo_stream *s, relo_mode mode, uint64_t size,
                                                      uint32_t slot, bool allow, relo_slice **out)
{
    switch (mode) {
    case RELO_MODE_DEDICATED: return relo__dedicated_reserve(&s->dedicated, size, slot, allow, out);
    case RELO_MODE_PERSISTENT: return relo__persistent_reserve(&s->persistent, size, slot, allow, out);
    case RELO_MODE_AUTO:
    case RELO_MODE_COUNT: break;
    }
    return relo__exclusive_reserve(&s->tiny, 0, slot, allow, out);
}

/* Routes one reservation to its pool (design §3.5, routing order): a
 * mode's pool, then size 0's, then the layout. */
static relo_status route(struct relo_stream *s, uint64_t size, uint32_t slot, relo_slice **out)
{
    bool allow = s->capture.state != RELO_CAPTURE_RECORDING;
    relo_mode mode = effective_mode(s);
    if (mode == RELO_MODE_DEDICATED || mode == RELO_MODE_PERSISTENT || size == 0)
        return route_outside_layout(s, mode, size, slot, allow, out);
    relo_status st = reserve_in_layout(s, size, slot, allow, out);
    if (st == RELO_OK && s->layout.ops->served)
        s->layout.ops->served(&s->layout, (*out)->page->pool, s->device->recording == 0);
    return st;
}

/* The reservation a refused one retries (relo__steps_refused). */
typedef struct retry_ctx {
    struct relo_stream *stream;
    uint64_t size;
    uint32_t slot;
    relo_slice **out;
} retry_ctx;

static relo_status retry_route(void *ctx)
{
    retry_ctx *r = ctx;
    return route(r->stream, r->size, r->slot, r->out);
}

relo_status relo__stream_reserve(struct relo_stream *s, uint64_t size, relo_handle *out)
{
    relo_device *d = s->device;
    bool dynamic = effective_mode(s) == RELO_MODE_AUTO && size > 0;
    relo__steps_before_reserve(d, s, dynamic);

    relo_slot *handle;
    relo_status st = relo__handle_alloc(&d->handles, &handle);
    if (st != RELO_OK) return st;
    uint32_t slot = handle->index;
    relo_slice *slice = NULL;
    st = route(s, size, slot, &slice);
    if (st != RELO_OK) {
        uint64_t padded;
        relo_pool *room = dynamic && relo__pad_size(size, d->alignment, UINT64_MAX, &padded)
                              ? room_pool(&s->layout, padded)
                              : NULL;
        retry_ctx r = {s, size, slot, &slice};
        st = relo__steps_refused(d, s, size, st, room, retry_route, &r);
    }
    if (st != RELO_OK) {
        relo__handle_free(&d->handles, handle);
        if (st == RELO_ERR_PAGE_UPDATE_FORBIDDEN && s->capture.state == RELO_CAPTURE_RECORDING &&
            s->capture.doom == RELO_OK)
            s->capture.doom = st;
        return st;
    }
    handle->slice = slice; /* published at its first locked resolve */
    relo__stats_allocated(s, size);
    *out = relo__handle_of_slot(&d->handles, handle);
    relo__steps_after_reserve(d, s);
    return RELO_OK;
}
