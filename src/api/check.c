/*
 * api/check.c — relo_device_check: the invariants of design §9 over the whole
 * device. Tests and fuzzers call it every N operations; it costs time
 * linear in the slices held.
 */
#include <inttypes.h>

#include "core/device.h"
#include "core/log.h"
#include "pass/relocation.h"

/* What the per-pool check carries across the walk of one stream. */
typedef struct pool_walk {
    const struct relo_stream *stream;
    const char *why; /* the first broken invariant, or NULL */
    uint64_t reserved;
    uint64_t allocations;
} pool_walk;

/* What a pool cannot know of its live slices: the open pass that may move
 * them and the handle slots that name them. */
static bool check_live(void *user, const relo_slice *sl, const char **why)
{
    const relo_device *d = user;
    const struct relo_pass *open = d->open_pass;
    if (sl->move && (!open || sl->move > open->count || open->moves[sl->move - 1].src != sl)) {
        *why = "slice marked as a source of no open pass";
        return false;
    }
    /* A source released while its pass is open waits for the close. */
    if (sl->move && open->moves[sl->move - 1].fate == RELO_FATE_DROPPED) return true;
    if (sl->slot >= d->handles.count) {
        *why = "live slice names no slot";
        return false;
    }
    const relo_slot *slot = relo__handle_slot(&d->handles, sl->slot);
    if (slot->refcount == 0 || slot->slice != sl) {
        *why = "slot does not point back at its slice";
        return false;
    }
    return true;
}

/* What a pool cannot know of its pages: whether a pass is open, whether a
 * stream records. */
static bool check_page(void *user, const relo_page *p, const char **why)
{
    const relo_device *d = user;
    if (p->fenced && !d->open_pass) {
        *why = "a page is still fenced outside a compaction pass";
        return false;
    }
    if (p->pool->outdated && p->pool->kind == RELO_POOL_SLICED && p->occupied == 0 && !p->guards &&
        !p->pending && d->recording == 0) {
        *why = "empty outdated page is not queued for release";
        return false;
    }
    return true;
}

static void check_pool(relo_pool *p, void *user)
{
    pool_walk *w = user;
    if (w->why) return;
    if (relo__pool_stream(p) != w->stream) {
        w->why = "pool names another stream";
        return;
    }
    relo_pool_checker checker = {check_live, check_page, w->stream->device};
    if (!relo__pool_check(p, &checker, &w->why)) return;
    w->reserved += p->bytes_reserved;
    w->allocations += p->allocations;
}

/* A slot publishes a binding only while a locked resolve would answer that
 * binding with no move to veto: live, placed, not a source of the open
 * pass (it may publish none: slots publish at their first locked resolve). */
static bool published_matches(const relo_handle_table *t, relo_slot *slot)
{
    const relo_slice *sl = slot->slice;
    bool may = slot->refcount > 0 && sl && sl->move == 0;
    uint64_t id = atomic_load_explicit(&slot->id, memory_order_relaxed);
    if (slot->published != (id != 0)) return false;
    if (id == 0) return true;
    if (!may || id != relo__handle_of(t, slot->index).id) return false;
    const relo_page *page = sl->page;
    return atomic_load_explicit(&slot->buffer, memory_order_relaxed) == (uintptr_t)page->buffer &&
           atomic_load_explicit(&slot->offset, memory_order_relaxed) == sl->offset &&
           atomic_load_explicit(&slot->size, memory_order_relaxed) == sl->size &&
           atomic_load_explicit(&slot->address, memory_order_relaxed) ==
               (page->address ? page->address + sl->offset : 0) &&
           (atomic_load_explicit(&slot->seq, memory_order_relaxed) & 1u) == 0;
}

/* Sources of the open pass released while it is open: still allocated. */
static uint64_t released_sources(const relo_device *d)
{
    uint64_t n = 0;
    const struct relo_pass *open = d->open_pass;
    for (uint32_t i = 0; open && i < open->count; i++) n += open->moves[i].fate == RELO_FATE_DROPPED;
    return n;
}

static bool check_device(relo_device *d, const char **why)
{
    uint64_t reserved = 0, allocations = 0;
    for (uint32_t i = 0; i < d->stream_count; i++) {
        const struct relo_stream *s = d->streams[i];
        if (s->index != i || s->device != d) {
            *why = "stream list is inconsistent";
            return false;
        }
        pool_walk w = {s, NULL, 0, 0};
        relo__stream_each_pool(d->streams[i], check_pool, &w);
        if (w.why) {
            *why = w.why;
            return false;
        }
        allocations += w.allocations;
        if (w.reserved != s->held.bytes_reserved) {
            *why = "stream reserved bytes differ from the sum of its pools";
            return false;
        }
        if (!s->layout.ops->check(&s->layout, why)) return false;
        reserved += w.reserved;
    }
    if (reserved != d->held.bytes_reserved) {
        *why = "device reserved bytes differ from the sum of its streams";
        return false;
    }
    relo_stats st;
    relo__device_stats(d, &st);
    if (st.bytes_allocated_total - st.bytes_freed_total != st.bytes_in_use ||
        st.allocations_total - st.frees_total != st.allocations) {
        *why = "totals allocated less freed differ from what is in use";
        return false;
    }
    if (st.peak_bytes_in_use < st.bytes_in_use) {
        *why = "peak bytes in use is below bytes in use";
        return false;
    }
    /* Two legal states part handles from allocations: a source released
     * while its pass is open stays allocated until the pass closes, and a
     * reservation waiting on a pass it started holds a slot with no
     * allocation yet. */
    uint64_t reserving = 0;
    for (uint32_t i = 0; i < d->handles.count; i++) {
        relo_slot *slot = relo__handle_slot(&d->handles, i);
        if (!published_matches(&d->handles, slot)) {
            *why = "a slot's lock-free binding differs from its locked one";
            return false;
        }
        if (slot->refcount == 0) continue;
        if (!slot->slice) {
            reserving++;
            continue;
        }
        if (slot->slice->state != RELO_SLICE_LIVE || slot->slice->slot != i) {
            *why = "a live handle does not name its live slice";
            return false;
        }
    }
    if (allocations - released_sources(d) != d->handles.live - reserving) {
        *why = "live handles differ from live allocations";
        return false;
    }
    for (const relo_page *p = d->pending; p; p = p->pending_next) {
        if (!p->pending) {
            *why = "a queued page is not marked pending";
            return false;
        }
    }
    return true;
}

relo_status relo_device_check(relo_device *device)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    const char *why = NULL;
    bool ok = check_device(device, &why);
    if (!ok) relo__log(device, RELO_LOG_ERROR, "invariant broken: %s", why);
    relo__device_unlock(device);
    return ok ? RELO_OK : RELO_ERR_CORRUPT;
}
