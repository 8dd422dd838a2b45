/*
 * pool/pool.c — the parts every pool kind shares: taking pages from and giving
 * them back to the backend, the accounting of slices, guards, and the
 * pool's invariant checker. Accounting changes only here, so the stats add
 * up by construction; relo__pool_check verifies they do.
 */
#include "pool/pool.h"

#include <string.h>

#include "base/hostmem.h"

static void pool_free_page_push(relo_pool *pool, relo_page *page);

const char *relo__pool_kind_name(relo_pool_kind kind)
{
    switch (kind) {
    case RELO_POOL_SLICED: return "sliced";
    case RELO_POOL_EXCLUSIVE: return "exclusive";
    case RELO_POOL_PERSISTENT: return "persistent";
    case RELO_POOL_DEDICATED: return "dedicated";
    case RELO_POOL_KIND_COUNT: break;
    }
    return "unknown";
}

void relo__pool_init(relo_pool *pool, relo_pool_kind kind, const char *name, const relo_pool_home *home,
                     uint64_t page_size)
{
    memset(pool, 0, sizeof *pool);
    pool->kind = kind;
    pool->name = name;
    pool->home = home;
    pool->page_size = page_size;
    pool->slot = -1;
}

void relo__pool_queue_release(relo_pool *pool, relo_page *page)
{
    if (page->pending) return;
    page->pending = true;
    page->pending_next = *pool->home->pending;
    *pool->home->pending = page;
}

/* A page's emptiness changed: its bytes join (or leave) the empty bytes of
 * the pool and of its home's tallies, which the cache limit weighs
 * (pass/trim.c). */
void relo__pool_empty_changed(relo_pool *pool, const relo_page *page, bool now_empty)
{
    if (now_empty) {
        pool->bytes_empty += page->size;
        for (int i = 0; i < 2; i++) pool->home->held[i]->bytes_empty += page->size;
    } else {
        pool->bytes_empty -= page->size;
        for (int i = 0; i < 2; i++) pool->home->held[i]->bytes_empty -= page->size;
    }
}

static void add_reserved(relo_pool *pool, uint64_t size)
{
    pool->bytes_reserved += size;
    for (int i = 0; i < 2; i++) {
        relo_held *h = pool->home->held[i];
        h->bytes_reserved += size;
        if (h->bytes_reserved > h->peak_bytes_reserved) h->peak_bytes_reserved = h->bytes_reserved;
    }
}

/* A page given back: its bytes leave the pool's and its tallies' figures. */
static void sub_reserved(relo_pool *pool, uint64_t size)
{
    pool->bytes_reserved -= size;
    for (int i = 0; i < 2; i++) {
        relo_held *h = pool->home->held[i];
        h->bytes_reserved -= size;
        h->counters.backend_frees++;
        h->counters.pages_released++;
    }
}

/* Bytes that can never be handed out again (a copy's outcome is unknown). */
static void add_leaked(relo_pool *pool, uint64_t bytes)
{
    for (int i = 0; i < 2; i++) pool->home->held[i]->counters.bytes_leaked += bytes;
}

relo_status relo__pool_page_new(relo_pool *pool, uint64_t size, relo_page **out)
{
    const relo_pool_home *home = pool->home;
    if (pool->kind == RELO_POOL_SLICED) {
        /* The index is set up with the first page, for the longest slice
         * the pool may hold; allocating fails here, never on release. */
        relo_status ist = relo__free_index_init(&pool->free, pool->best_fit,
                                                relo__max(size, pool->page_size));
        if (ist == RELO_OK) ist = relo__occupancy_init(&pool->occupancy);
        if (ist != RELO_OK) return ist;
    }
    if (pool->page_count == pool->page_cap) {
        uint32_t cap = pool->page_cap ? pool->page_cap * 2 : 4;
        relo_page **pages = relo__realloc(pool->pages, cap * sizeof *pages);
        if (!pages) return RELO_ERR_HOST_MEMORY;
        pool->pages = pages;
        pool->page_cap = cap;
    }
    relo_page *page = relo__page_new(home->slab);
    if (!page) return RELO_ERR_HOST_MEMORY;
    relo_slice *whole = relo__slice_new(home->slab);
    if (!whole) {
        relo__page_delete(home->slab, page);
        return RELO_ERR_HOST_MEMORY;
    }
    void *buffer = NULL;
    uint64_t address = 0;
    relo_backend *backend = home->backend;
    relo_status st = backend->ops.alloc(backend->ctx, size, &buffer, &address);
    /* Bytes the release thread has yet to give back are counted as gone:
     * the device may have the room once they are. */
    if (st == RELO_ERR_OUT_OF_MEMORY && relo__releaser_drain(home->releaser))
        st = backend->ops.alloc(backend->ctx, size, &buffer, &address);
    if (st != RELO_OK || !buffer) {
        relo__slice_delete(home->slab, whole);
        relo__page_delete(home->slab, page);
        return st != RELO_OK ? st : RELO_ERR_BACKEND;
    }
    page->buffer = buffer;
    page->address = address;
    page->size = size;
    page->order = (*home->page_order)++;
    page->pool = pool;
    page->index = pool->page_count;
    page->suspicion = 4;
    pool->pages[pool->page_count++] = page;

    whole->page = page;
    whole->offset = 0;
    whole->length = size;
    whole->state = RELO_SLICE_FREE;
    page->first = whole;
    if (pool->kind == RELO_POOL_SLICED) relo__pool_free_insert(pool, whole);

    add_reserved(pool, size);
    relo__pool_empty_changed(pool, page, true);
    relo__occupancy_touch(&pool->occupancy, page);
    for (int i = 0; i < 2; i++) home->held[i]->counters.backend_allocs++;
    *out = page;
    return RELO_OK;
}

/* Takes a page out of its pool; its free slices leave the free index
 * when unindex says they are in it. */
static void detach(relo_pool *pool, relo_page *page, relo_buffer_free *out, bool unindex)
{
    if (page->on_free_list) relo__pool_free_page_remove(pool, page);
    relo_slice *sl = page->first;
    while (sl) {
        relo_slice *next = sl->next;
        if (unindex && sl->state == RELO_SLICE_FREE) relo__pool_free_remove(pool, sl);
        relo__slice_delete(pool->home->slab, sl);
        sl = next;
    }
    out->buffer = page->buffer;
    out->size = page->size;
    relo__pool_empty_changed(pool, page, false);
    relo__occupancy_remove(pool, page);

    uint32_t i = page->index;
    pool->pages[i] = pool->pages[--pool->page_count];
    pool->pages[i]->index = i;
    sub_reserved(pool, page->size);
    relo__page_delete(pool->home->slab, page);
}

/* As relo__pool_page_release, but the buffer is handed to the caller to
 *  free with the backend later (without the device lock); the bookkeeping
 *  (bytes reserved, counters) already says it is gone. */
static void pool_page_detach(relo_pool *pool, relo_page *page, relo_buffer_free *out)
{
    RELO_ASSERT(page->occupied == 0 && page->guards == 0 && !page->pending && !page->fenced &&
                !page->transfers);
    detach(pool, page, out, pool->kind == RELO_POOL_SLICED);
}

/* Gives a buffer taken out of its pool back to the backend. */
static void free_buffer(relo_pool *pool, const relo_buffer_free *b)
{
    relo_backend *backend = pool->home->backend;
    backend->ops.free(backend->ctx, b->buffer, b->size);
}

void relo__pool_page_release(relo_pool *pool, relo_page *page)
{
    relo_buffer_free b;
    pool_page_detach(pool, page, &b);
    free_buffer(pool, &b);
}

void relo__pool_page_collect(relo_pool *pool, relo_page *page, relo_buffer_batch *batch)
{
    if (batch->count == batch->cap) {
        uint32_t cap = batch->cap * 2;
        bool inline_part = batch->bufs == batch->inline_bufs;
        relo_buffer_free *b = relo__realloc(inline_part ? NULL : batch->bufs, cap * sizeof *b);
        if (!b) {
            relo__pool_page_release(pool, page);
            return;
        }
        if (inline_part) memcpy(b, batch->inline_bufs, batch->count * sizeof *b);
        batch->bufs = b;
        batch->cap = cap;
    }
    pool_page_detach(pool, page, &batch->bufs[batch->count++]);
}

/* Gives page back: into batch, or at once without one. */
static void give_back(relo_pool *pool, relo_page *page, relo_buffer_batch *batch)
{
    if (batch)
        relo__pool_page_collect(pool, page, batch);
    else
        relo__pool_page_release(pool, page);
}

/* Gives back every empty page of a sliced pool that nothing holds (no
 * guard, not pending, no fence, no transfer), as its occupancy index lists
 * them: highest position first, so the pages that stay keep their
 * positions. Returns how many went, or -1 when host memory ran out
 * (nothing went; the caller walks the pages). */
static int64_t release_indexed_empty(relo_pool *pool, relo_buffer_batch *batch)
{
    relo_page_list go;
    if (!relo__occupancy_empty_pages(pool, &go)) return -1;
    int64_t m = 0;
    for (relo_page *p; (p = relo__page_list_pop(&go)); m++) give_back(pool, p, batch);
    relo__page_list_free(&go);
    return m;
}

uint32_t relo__pool_release_empty(relo_pool *pool, relo_buffer_batch *batch)
{
    int64_t listed = pool->kind == RELO_POOL_SLICED ? release_indexed_empty(pool, batch) : -1;
    if (listed >= 0) return (uint32_t)listed;
    uint32_t released = 0;
    for (uint32_t i = pool->page_count; i-- > 0;) {
        relo_page *p = pool->pages[i];
        if (p->occupied == 0 && p->guards == 0 && !p->pending && !p->fenced && !p->transfers) {
            give_back(pool, p, batch);
            released++;
        }
    }
    return released;
}

void relo__pool_destroy(relo_pool *pool)
{
    while (pool->page_count) {
        relo_page *p = pool->pages[pool->page_count - 1];
        /* Leaked slices and guards die with the device or stream: nothing
         * can reach them any more. The page's free room leaves the index
         * while the page's state still says it is there; then every slice
         * is simply marked free. */
        bool indexed = pool->kind == RELO_POOL_SLICED && relo__page_serves(p);
        for (relo_slice *sl = p->first; sl; sl = sl->next) {
            if (sl->state == RELO_SLICE_FREE && indexed) relo__pool_free_remove(pool, sl);
            if (sl->state == RELO_SLICE_LIVE) {
                pool->allocations--;
                pool->bytes_in_use -= sl->size;
                pool->bytes_padding -= sl->length - sl->size;
            }
            sl->state = RELO_SLICE_FREE;
        }
        if (p->guards) pool->guarded_pages--;
        p->guards = 0;
        p->fenced = false;
        if (p->occupied) relo__pool_empty_changed(pool, p, true);
        p->occupied = 0;
        p->occupied_bytes = 0;
        p->live = 0;
        p->live_size = 0;
        if (p->pending) {
            relo_page **pp = pool->home->pending;
            while (*pp && *pp != p) pp = &(*pp)->pending_next;
            if (*pp) *pp = p->pending_next;
            p->pending = false;
        }
        relo_buffer_free b;
        detach(pool, p, &b, false);
        free_buffer(pool, &b);
    }
    relo__free(pool->pages);
    pool->pages = NULL;
    pool->page_cap = 0;
    relo__free_index_destroy(&pool->free);
    relo__occupancy_destroy(&pool->occupancy);
    pool->free_pages = NULL;
}

/* Unlinks a slice from its page's list and gives its node back. */
static void unlink_slice(relo_pool *pool, relo_slice *sl)
{
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        sl->page->first = sl->next;
    if (sl->next) sl->next->prev = sl->prev;
    relo__slice_delete(pool->home->slab, sl);
}

/* Merges a FREE slice, not indexed, with its FREE neighbours (sliced
 * pools), found through the page's address-ordered list, and leaves the
 * merged slice in the free index when its page serves. A neighbour
 * already indexed keeps its node: by address its place in the treap (its
 * key passes no other free slice), so only maxima are restored; by size it
 * moves to the class of the merged length, or to the front of its own. */
static void merge_neighbours(relo_pool *pool, relo_slice *sl)
{
    bool serves = relo__page_serves(sl->page);
    relo_slice *prev = sl->prev, *next = sl->next;
    bool prev_free = prev && prev->state == RELO_SLICE_FREE;
    bool next_free = next && next->state == RELO_SLICE_FREE;
    if (!prev_free && !next_free) {
        if (serves) relo__pool_free_insert(pool, sl);
        return;
    }
    relo_slice *keep = prev_free ? prev : next;
    if (prev_free && next_free) {
        if (serves) relo__pool_free_remove(pool, next);
        prev->length += next->length;
        unlink_slice(pool, next);
    }
    if (!prev_free) keep->offset = sl->offset;
    keep->length += sl->length;
    unlink_slice(pool, sl);
    if (serves) relo__free_index_refresh(&pool->free, keep);
}

/* A slice marked leak_on_free is freed: a copy from here may still be
 * running, so the range is never handed out again. */
RELO_COLD static void free_leaked(relo_pool *pool, relo_slice *slice)
{
    slice->state = RELO_SLICE_LEAKED;
    slice->slot = 0;
    add_leaked(pool, slice->length);
    relo__occupancy_touch(&pool->occupancy, slice->page);
}

/* The rest of a free in a pool of one allocation per page: the page is
 * whole again. */
RELO_NOINLINE static void free_unsliced(relo_pool *pool, relo_slice *slice)
{
    relo_page *page = slice->page;
    slice->length = page->size;
    switch (pool->kind) {
    case RELO_POOL_EXCLUSIVE:
    case RELO_POOL_PERSISTENT:
        /* Reuse decides its fate. */
        pool_free_page_push(pool, page);
        break;
    case RELO_POOL_DEDICATED:
        if (page->guards == 0) relo__pool_queue_release(pool, page);
        break;
    case RELO_POOL_SLICED:
    case RELO_POOL_KIND_COUNT: break;
    }
}

void relo__pool_slice_free(relo_pool *pool, relo_slice *slice)
{
    relo_page *page = slice->page;
    if (slice->state == RELO_SLICE_LIVE) {
        page->live--;
        page->live_size -= slice->size;
        pool->allocations--;
        pool->bytes_in_use -= slice->size;
        pool->bytes_padding -= slice->length - slice->size;
    }
    if (slice->leak_on_free) {
        free_leaked(pool, slice);
        return;
    }
    slice->state = RELO_SLICE_FREE;
    slice->size = 0;
    slice->slot = 0;
    page->occupied--;
    page->occupied_bytes -= slice->length;
    if (page->occupied == 0) relo__pool_empty_changed(pool, page, true);
    relo__occupancy_touch(&pool->occupancy, page);

    if (pool->kind != RELO_POOL_SLICED) {
        free_unsliced(pool, slice);
        return;
    }
    merge_neighbours(pool, slice);
    if (page->occupied == 0 && relo__page_serves(page) && pool->outdated)
        relo__pool_queue_release(pool, page);
}

/* Takes a sliced page's free room out of the index, or puts it back. */
static void set_in_service(relo_pool *pool, relo_page *page, bool serve)
{
    if (pool->kind != RELO_POOL_SLICED) return;
    for (relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state != RELO_SLICE_FREE) continue;
        if (serve)
            relo__pool_free_insert(pool, sl);
        else
            relo__pool_free_remove(pool, sl);
    }
}

/* After a page serves again: an empty page goes back where its pool says. */
static void after_back_in_service(relo_pool *pool, relo_page *page)
{
    if (page->occupied != 0) return;
    if ((pool->kind == RELO_POOL_SLICED && pool->outdated) || pool->kind == RELO_POOL_DEDICATED)
        relo__pool_queue_release(pool, page);
}

void relo__pool_page_guard(relo_pool *pool, relo_page *page)
{
    bool was_serving = relo__page_serves(page);
    if (page->guards++ == 0) pool->guarded_pages++;
    if (was_serving) set_in_service(pool, page, false);
    relo__occupancy_touch(&pool->occupancy, page);
}

void relo__pool_page_unguard(relo_pool *pool, relo_page *page)
{
    RELO_ASSERT(page->guards > 0);
    if (--page->guards > 0) return;
    pool->guarded_pages--;
    if (!relo__page_serves(page)) return;
    set_in_service(pool, page, true);
    relo__occupancy_touch(&pool->occupancy, page);
    after_back_in_service(pool, page);
}

void relo__pool_page_fence(relo_pool *pool, relo_page *page)
{
    RELO_ASSERT(!page->fenced);
    if (relo__page_serves(page)) set_in_service(pool, page, false);
    page->fenced = true;
    relo__occupancy_touch(&pool->occupancy, page);
}

void relo__pool_page_unfence(relo_pool *pool, relo_page *page)
{
    RELO_ASSERT(page->fenced);
    page->fenced = false;
    if (!relo__page_serves(page)) return;
    set_in_service(pool, page, true);
    relo__occupancy_touch(&pool->occupancy, page);
    after_back_in_service(pool, page);
}

/* Adds a page with no allocation to the free-page list (exclusive,
 *  persistent). */
static void pool_free_page_push(relo_pool *pool, relo_page *page)
{
    if (page->on_free_list) return;
    page->on_free_list = true;
    page->free_prev = NULL;
    page->free_next = pool->free_pages;
    if (pool->free_pages) pool->free_pages->free_prev = page;
    pool->free_pages = page;
}

void relo__pool_free_page_remove(relo_pool *pool, relo_page *page)
{
    if (!page->on_free_list) return;
    if (page->free_prev)
        page->free_prev->free_next = page->free_next;
    else
        pool->free_pages = page->free_next;
    if (page->free_next) page->free_next->free_prev = page->free_prev;
    page->free_prev = page->free_next = NULL;
    page->on_free_list = false;
}

bool relo__pool_check(const relo_pool *pool, const relo_pool_checker *checker, const char **why)
{
#define FAIL(msg)     \
    do {              \
        *why = msg;   \
        return false; \
    } while (0)
    uint64_t allocations = 0, in_use = 0, padding = 0, reserved = 0, empty = 0, guarded = 0, free_slices = 0;
    if (pool->fill_page) FAIL("a fill page is set outside the planning of a pass");
    for (uint32_t i = 0; i < pool->page_count; i++) {
        const relo_page *p = pool->pages[i];
        if (p->index != i) FAIL("page index does not match its position");
        if (p->pool != pool) FAIL("page names another pool");
        reserved += p->size;
        if (p->occupied == 0) empty += p->size;
        if (p->guards) guarded++;
        uint64_t end = 0, occupied = 0, occupied_bytes = 0, live = 0, live_size = 0;
        const relo_slice *prev = NULL;
        for (const relo_slice *sl = p->first; sl; prev = sl, sl = sl->next) {
            if (sl->page != p) FAIL("slice names another page");
            if (sl->prev != prev) FAIL("slice list links are broken");
            if (sl->offset != end) FAIL("slices leave a gap or overlap");
            if (pool->kind == RELO_POOL_SLICED && sl->offset % pool->home->alignment)
                FAIL("slice offset is not aligned");
            end = sl->offset + sl->length;
            if (sl->state == RELO_SLICE_FREE) {
                if (pool->kind == RELO_POOL_SLICED) {
                    if (prev && prev->state == RELO_SLICE_FREE) FAIL("two free neighbours not merged");
                    if (relo__page_serves(p)) free_slices++;
                }
                continue;
            }
            occupied++;
            occupied_bytes += sl->length;
            if (sl->state == RELO_SLICE_LIVE) {
                allocations++;
                live++;
                live_size += sl->size;
                in_use += sl->size;
                if (sl->size > sl->length) FAIL("slice shorter than its size");
                padding += sl->length - sl->size;
                if (checker && !checker->live(checker->user, sl, why)) return false;
            }
        }
        if (pool->kind == RELO_POOL_SLICED || p->occupied == 0) {
            if (end != p->size) FAIL("slices do not cover the page");
        } else if (end > p->size) {
            FAIL("slice runs past its page");
        }
        if (occupied != p->occupied || occupied_bytes != p->occupied_bytes)
            FAIL("page occupancy counters are wrong");
        if (live != p->live || live_size != p->live_size) FAIL("page live counters are wrong");
        if (checker && !checker->page(checker->user, p, why)) return false;
    }
    if (allocations != pool->allocations || in_use != pool->bytes_in_use || padding != pool->bytes_padding)
        FAIL("pool allocation accounting is wrong");
    if (reserved != pool->bytes_reserved) FAIL("pool reserved bytes differ from its pages");
    if (empty != pool->bytes_empty) FAIL("pool empty bytes differ from its empty pages");
    if (guarded != pool->guarded_pages) FAIL("pool guarded page count is wrong");
    if (pool->kind == RELO_POOL_SLICED) {
        uint64_t indexed = 0;
        if (pool->free.by_size != pool->best_fit && pool->page_count) FAIL("free index follows another rule");
        if (!relo__free_index_check(&pool->free, &indexed, why)) return false;
        if (indexed != free_slices) FAIL("free index does not hold exactly the free slices of serving pages");
    }
    if (!relo__occupancy_check(pool, why)) return false;
    return true;
#undef FAIL
}

void relo__pool_slice_promote(relo_pool *pool, relo_slice *slice, uint64_t size, uint32_t slot)
{
    RELO_ASSERT(slice->state == RELO_SLICE_TARGET);
    slice->state = RELO_SLICE_LIVE;
    slice->size = size;
    slice->slot = slot;
    slice->page->live++;
    slice->page->live_size += size;
    pool->allocations++;
    pool->bytes_in_use += size;
    pool->bytes_padding += slice->length - size;
    relo__occupancy_touch(&pool->occupancy, slice->page);
}

void relo__pool_slice_leak(relo_pool *pool, relo_slice *slice)
{
    RELO_ASSERT(slice->state == RELO_SLICE_TARGET);
    slice->state = RELO_SLICE_LEAKED;
    slice->slot = 0;
    add_leaked(pool, slice->length);
}

void relo__pool_page_pack(relo_pool *pool, relo_page *page)
{
    RELO_ASSERT(page->fenced && pool->kind == RELO_POOL_SLICED);
    uint64_t at = 0;
    relo_slice *last = NULL;
    for (relo_slice *sl = page->first, *next; sl; sl = next) {
        next = sl->next;
        if (sl->state == RELO_SLICE_FREE) {
            unlink_slice(pool, sl); /* fenced: not in the tree */
            continue;
        }
        /* Its moves withdrew the slots' published bindings when the pass
         * opened; a live slice moved here without one may not keep it. */
        if (sl->offset != at && sl->state == RELO_SLICE_LIVE)
            relo__handle_withdraw(pool->home->handles, sl->slot);
        sl->offset = at;
        at += sl->length;
        last = sl;
    }
    if (at == page->size) return;
    /* The node of a free slice just unlinked is back in the slab: taking
     * one cannot fail. */
    relo_slice *room = relo__slice_new(pool->home->slab);
    RELO_ASSERT(room != NULL);
    room->page = page;
    room->offset = at;
    room->length = page->size - at;
    room->state = RELO_SLICE_FREE;
    room->prev = last;
    room->next = NULL;
    if (last)
        last->next = room;
    else
        page->first = room;
}

void relo__pool_page_leak_free(relo_pool *pool, relo_page *page)
{
    RELO_ASSERT(page->fenced);
    for (relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state != RELO_SLICE_FREE) continue;
        sl->state = RELO_SLICE_LEAKED;
        page->occupied++;
        page->occupied_bytes += sl->length;
        add_leaked(pool, sl->length);
    }
    relo__occupancy_touch(&pool->occupancy, page);
}
