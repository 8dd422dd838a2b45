/*
 * pass/compaction.c — emptying sparse pages of the packed placement's pools
 * into denser ones (see pass/relocation.h). A source page is fenced while it is
 * planned, so no target lands on it or on any other source; fences come
 * off once the pass is finished.
 */
#include <stdlib.h>

#include "base/hostmem.h"
#include "pass/relocation.h"

#define MAX_PASSES 64

/* Bytes a page whose allocations may all move (relo__page_movable_bytes:
 * every occupied slice is live) would give back if they moved to a new
 * page of their own size together (variable-page pools): its size less
 * theirs, rounded to the granule. With share, the new page would have room
 * for as much again (see plan_pool): a page already of that size gains
 * nothing, since the move would only make another one like it. */
static uint64_t repagination_gain(const relo_pool *pool, const relo_page *page, bool share)
{
    uint64_t needed, shared;
    if (!relo__round_up(page->occupied_bytes, pool->granule, &needed)) return 0;
    if (share &&
        relo__round_up(relo__add_sat(page->occupied_bytes, page->occupied_bytes), pool->granule, &shared) &&
        page->size == relo__min(shared, relo__max(needed, pool->page_size)))
        return 0;
    return relo__sub_sat(page->size, needed);
}

/* Bytes the device can lend now: its capacity less what it holds
 * (UINT64_MAX when the capacity is unknown). */
static uint64_t lendable(const relo_device *d)
{
    return d->capacity ? relo__sub_sat(d->capacity, d->held.bytes_reserved) : UINT64_MAX;
}

/* Under memory pressure, page p's run, whose live bytes end inside a
 * granule, and the run of the next candidate (the top of the heap c of
 * *n), when the two together round to fewer granules than apart, are
 * planned into one new page sized to both: alone, each would strand its
 * own tail. p is fenced. Returns whether p's run was planned, and in *q
 * the candidate page planned with it (NULL when none was: p's page then
 * keeps the room, which serves later requests). A pair the device cannot
 * lend a page for is not planned; the caller plans p alone. */
static bool plan_pair(relo_pass *pass, relo_pool *pool, relo_page *p, relo_candidate *c, uint32_t *n,
                      relo_page **q)
{
    *q = NULL;
    uint64_t g = pool->granule, a = p->occupied_bytes, ra, rb, rab;
    /* A lone allocation is left to the rule for pages of copies. */
    if (*n == 0 || a % g == 0 || p->live < 2) return false;
    relo_page *next = c[0].page;
    uint64_t b = next->occupied_bytes;
    if (!relo__page_movable_bytes(next) || !relo__round_up(a, g, &ra) || !relo__round_up(b, g, &rb) ||
        !relo__round_up(a + b, g, &rab) || rab >= ra + rb || relo__pass_full(pass, a + b))
        return false;
    /* A device of known capacity that cannot lend the pair's page now
     * would give the run pages of its own sizes instead (the pool falls
     * back to a page for one request), which pairs nothing. */
    if (lendable(pass->device) < rab) return false;
    uint32_t mark = pass->count;
    if (!relo__pass_plan_run(pass, pool, p->first, NULL, RELO_NEW_PAGE_EXACT_OR_COPIES, b)) return false;
    /* The page taken for the pair is the newest the run's targets are on. */
    relo_page *page = NULL;
    for (uint32_t i = mark; i < pass->count; i++) {
        relo_page *t = pass->moves[i].dst->page;
        if (!page || t->order > page->order) page = t;
    }
    /* The candidate leaves the heap: planned here, or left for a later
     * pass when p's targets took its room or it cannot be fenced now. */
    (void)relo__candidates_pop(c, n);
    if (!relo__page_movable_bytes(next) || !relo__pass_fence(pass, next)) return true;
    pool->fill_page = page;
    bool planned = relo__pass_plan_page(pass, pool, next, RELO_NEW_PAGE_NONE);
    pool->fill_page = NULL;
    if (planned)
        *q = next;
    else
        relo__pass_unfence_last(pass);
    return true;
}

/* Free room of spill's pages that serve (0 without spill). */
static uint64_t spill_room(relo_pool *spill)
{
    return spill ? relo__occupancy_room(spill) : 0;
}

/* The pages of class cls of pool that a pass may empty now (they serve
 * and everything on them can move; unhurried: sparse ones only) into
 * *c, grown as needed. Returns how many, or UINT32_MAX when host memory
 * ran out. */
static uint32_t class_candidates(relo_pool *pool, uint32_t cls, bool unhurried, relo_candidate **c,
                                 uint32_t *cap)
{
    uint32_t n = 0;
    for (int dense = 0; dense < (unhurried ? 1 : 2); dense++) {
        for (relo_page *p = relo__occupancy_list(&pool->occupancy, cls, !dense); p; p = p->occ_next) {
            pool->occupancy.plan_visits++;
            if (!relo__page_serves(p)) continue;
            uint64_t live = relo__page_movable_bytes(p);
            if (!live) continue;
            if (n == *cap) {
                uint32_t more = *cap ? *cap * 2 : 64;
                relo_candidate *grown = relo__realloc(*c, more * sizeof *grown);
                if (!grown) return UINT32_MAX;
                *c = grown;
                *cap = more;
            }
            (*c)[n++] = (relo_candidate){p, live};
        }
    }
    return n;
}

/* Plans the emptying of pool's sparsest pages; returns page bytes planned.
 * Targets go into the free room of the other pages, or where those lack it,
 * of spill's pages (non-NULL under pressure: the large pool, whose room
 * serves any size); with repaginate, a page whose allocations do not fit
 * there may move them to new pages of their own size when that gives back
 * at least a granule (outside memory pressure, with room for a second such
 * run). Pages are taken fewest live bytes first (then lowest
 * order) from the pool's occupancy index: its classes, visited upwards,
 * are in that order, and only the pages of a class visited are ordered,
 * so a pass that stops early, or a reclaim that finds few sparse pages,
 * never looks at the rest. */
static uint64_t plan_pool(relo_pass *pass, relo_pool *pool, relo_pool *spill, uint64_t want, bool repaginate)
{
    if (pool->page_count == 0) return 0;
    /* Free bytes on pages that may take targets; reading them settles
     * both indexes, so the classes below are up to date too. */
    uint64_t room = spill_room(spill) + relo__occupancy_room(pool);
    /* Emptying a page gives back its free room at the cost of copying
     * what lives on it. A reclaim, which nothing is waiting on, empties
     * only pages at most 2/3 full (the index's sparse lists), so it does
     * not shuffle dense pages from one to the next; packing for a page
     * needed now takes any. A page too full now stays too full this pass
     * (targets only add to it), so it is no candidate at all. */
    bool unhurried = pass->reason == RELO_REASON_EXPLICIT || pass->reason == RELO_REASON_RUNTIME ||
                     pass->reason == RELO_REASON_CACHE_LIMIT;
    repaginate = repaginate && pool->variable_pages;
    /* Re-paginated under memory pressure, a lone allocation of a recent
     * larger size goes to a page of copies that the next ones fill; packing
     * that gives memory back unasked takes only what it needs now. */
    bool pressure = pass->reason == RELO_REASON_MEMORY_PRESSURE;
    relo_new_page exact = pressure ? RELO_NEW_PAGE_EXACT_OR_COPIES : RELO_NEW_PAGE_EXACT;
    uint64_t emptied = 0;
    relo_candidate *c = NULL;
    uint32_t cap = 0;
    bool stop = false;
    for (uint32_t cls = relo__occupancy_next_class(&pool->occupancy, 0, unhurried);
         cls < RELO_OCC_CLASSES && !stop && emptied < want;
         cls = relo__occupancy_next_class(&pool->occupancy, cls + 1, unhurried)) {
        uint32_t n = class_candidates(pool, cls, unhurried, &c, &cap);
        if (n == UINT32_MAX) break; /* compaction needs memory; moving nothing more is safe */
        relo__candidates_heapify(c, n);
        while (n > 0 && emptied < want) {
            relo_candidate next = relo__candidates_pop(c, &n);
            relo_page *p = next.page;
            if (relo__pass_full(pass, next.live_bytes)) {
                pass->cut = true;
                stop = true;
                break;
            }
            /* A page that took targets of an earlier source this pass keeps
             * them: emptying it is no longer possible. */
            if (relo__page_movable_bytes(p) == 0) continue;
            uint64_t own_room = p->size - p->occupied_bytes;
            if (unhurried && own_room < p->occupied_bytes / 2) continue;
            bool may_fit = room - own_room >= p->occupied_bytes;
            /* A run whose live bytes end inside a granule strands the rest
             * of it on a page of its own; outside memory pressure its new
             * page has room for as much again (see below). */
            bool share = !pressure && p->occupied_bytes % pool->granule != 0;
            bool worth_pages = repaginate && repagination_gain(pool, p, share) >= pool->granule;
            if (!may_fit && !worth_pages) continue;
            if (!relo__pass_fence(pass, p)) {
                stop = true;
                break;
            }
            bool planned = may_fit && relo__pass_plan_page(pass, pool, p, RELO_NEW_PAGE_NONE);
            if (!planned && may_fit && spill)
                planned = relo__pass_plan_page(pass, spill, p, RELO_NEW_PAGE_NONE);
            /* Outside memory pressure a run's new page has room for as
             * much again: the next candidate (one of the
             * same occupancy class, so of about the same live bytes) or
             * the reservation that asked for packing takes it, and two
             * runs share the tail the granule strands. Under pressure a
             * page twice as large may be more than the device can lend,
             * and room left over is room the refused request may not fit:
             * the next candidate is paired only when the two round to
             * fewer granules together, and planned into that page. */
            bool shared = false;
            relo_page *paired = NULL;
            if (!planned && worth_pages && pressure) planned = plan_pair(pass, pool, p, c, &n, &paired);
            if (!planned && worth_pages) {
                shared = share;
                planned = relo__pass_plan_run(pass, pool, p->first, NULL, exact,
                                              shared ? p->occupied_bytes : 0);
            }
            if (planned) {
                room -= relo__min(room, own_room + p->occupied_bytes);
                if (shared) room += p->occupied_bytes;
                emptied += p->size;
                if (paired) {
                    room -= relo__min(room, paired->size);
                    emptied += paired->size;
                }
            } else {
                relo__pass_unfence_last(pass);
            }
        }
    }
    relo__free(c);
    return emptied;
}

uint64_t relo__compact_plan(relo_pass *pass, struct relo_stream *only, uint64_t want, bool repaginate)
{
    relo_device *d = pass->device;
    if (!relo__layout_packs(d->layout)) return 0;
    uint32_t first, end;
    relo__device_scope(d, only, &first, &end);
    uint64_t emptied = 0;
    for (uint32_t s = first; s < end && emptied < want; s++) {
        relo_stream_layout *l = &d->streams[s]->layout;
        relo_pool *pool, *spill;
        for (uint32_t k = 0; emptied < want && (pool = l->ops->pack_pool(l, k, &spill)); k++) {
            /* Under pressure a page may empty into its spill pool's room
             * (the fine pool's into the large pool's): a page back is what
             * the refused request needs. */
            if (pass->reason != RELO_REASON_MEMORY_PRESSURE) spill = NULL;
            emptied += plan_pool(pass, pool, spill, want - emptied, repaginate);
        }
    }
    return emptied;
}

/* Gives back the empty pages of the packed layout's pools of one stream
 * (only) or of every stream while the device holds more than live + keep
 * bytes (keep 0: every one); adds the bytes given back to *released.
 * Within a cache limit
 * the buffers are freed without the device lock, as a trim frees them. */
static void release_packed_empty(relo_device *d, struct relo_stream *only, uint64_t keep, uint64_t *released)
{
    uint32_t first, end;
    if (!relo__layout_packs(d->layout)) return;
    relo__device_scope(d, only, &first, &end);
    relo_buffer_batch batch;
    relo__buffer_batch_init(&batch);
    for (uint32_t s = first; s < end; s++) {
        relo_stream_layout *l = &d->streams[s]->layout;
        relo_pool *pool, *spill;
        for (uint32_t k = 0; (pool = l->ops->pack_pool(l, k, &spill)); k++) {
            uint64_t before = pool->bytes_reserved;
            if (keep == 0)
                relo__pool_release_empty(pool, &batch);
            else
                relo__trim_pool(d, pool, keep, &batch);
            *released += before - pool->bytes_reserved;
        }
    }
    relo__device_free_batch(d, &batch);
}

uint64_t relo__compact_and_release(relo_device *d, struct relo_stream *only, uint64_t want, bool repaginate,
                                   relo_reason reason, uint64_t budget)
{
    /* Packing for a new page, or past the cache limit, keeps what it empties
     * cached within the cache limit (pass/trim.c): the next reservations
     * take it without a new buffer. Without one (NEVER), packing gives
     * back what it emptied, as it always did; a refused page or a reclaim
     * gives every empty page back. */
    bool keeps = reason == RELO_REASON_COMPACT || reason == RELO_REASON_CACHE_LIMIT;
    uint64_t keep = keeps && d->desc.cache_limit != RELO_CACHE_LIMIT_NEVER ? relo__cache_limit(d) : 0;
    uint64_t released = 0, kept = 0, planned_bytes = 0;
    release_packed_empty(d, only, keep, &released);
    for (int i = 0; i < MAX_PASSES && released + kept < want && planned_bytes < budget; i++) {
        /* Packing a reservation starts by itself never waits for another
         * thread's pass: the reservation takes a new page instead. */
        if (!keeps) relo__pass_settle(d);
        if (!relo__relocation_allowed(d) || !relo__layout_packs(d->layout)) break;
        relo_pass pass;
        relo__pass_begin(&pass, d, reason);
        pass.budget = budget - planned_bytes;
        uint64_t planned = relo__compact_plan(&pass, only, want - released - kept, repaginate);
        /* Packing for a new page within a budget either spares the page or
         * does not run: a pass the budget cuts short of it would copy for
         * nothing the request needs. */
        if (reason == RELO_REASON_COMPACT && budget != UINT64_MAX && planned < want - released - kept) {
            relo__pass_drop_moves(&pass);
            relo__pass_finish(&pass);
            break;
        }
        planned_bytes += pass.bytes;
        bool cut = pass.cut;
        if (!relo__pass_finish(&pass)) break;
        uint64_t before = released;
        release_packed_empty(d, only, keep, &released);
        /* What a pass emptied and the cache limit kept counts as room made. */
        if (keep) kept += relo__sub_sat(planned, released - before);
        /* The pass planned everything its bounds allowed: what is left to
         * pack waits for the next occasion, so the device is drained once.
         * A page the device refused is the exception: room the first pass
         * made lets a second pass empty pages the first could not, and the
         * request waits on that room: stopping after one pass there makes
         * fits worse (docs/alternatives.md). */
        if (!cut && reason != RELO_REASON_MEMORY_PRESSURE) break;
    }
    return released + kept;
}

/* One window of a page: the slices from first up to end cover at least
 * the length asked for, and live_bytes of them would have to move. */
typedef struct window {
    relo_page *page;
    relo_slice *first;
    relo_slice *end;
    uint64_t live_bytes;
} window;

static int window_order(const void *a, const void *b)
{
    const window *x = a, *y = b;
    if (x->live_bytes != y->live_bytes) return x->live_bytes < y->live_bytes ? -1 : 1;
    return x->page->order < y->page->order ? -1 : (x->page->order > y->page->order);
}

/* The run of neighbouring slices of page, free or movable, that covers
 * length bytes with the fewest live bytes; false when there is none. */
static bool best_window(relo_page *page, uint64_t length, window *out)
{
    if (page->guards || page->transfers || page->size < length || relo__page_has_pins(page)) return false;
    bool found = false;
    relo_slice *a = page->first;
    uint64_t span = 0, live = 0;
    for (relo_slice *b = page->first; b; b = b->next) {
        if (b->state != RELO_SLICE_FREE && b->state != RELO_SLICE_LIVE) {
            a = b->next; /* a target or a leak stays put: no window across it */
            span = live = 0;
            continue;
        }
        span += b->length;
        if (b->state == RELO_SLICE_LIVE) live += b->length;
        while (a != b && span - a->length >= length) {
            span -= a->length;
            if (a->state == RELO_SLICE_LIVE) live -= a->length;
            a = a->next;
        }
        if (span >= length && (!found || live < out->live_bytes)) {
            *out = (window){page, a, b->next, live};
            found = true;
        }
    }
    return found;
}

/* Each page of pool that serves: its free room added to *room, and its
 * window for length bytes (best_window) into w when live bytes stand in
 * it. The windows come back fewest live bytes first (lowest page order
 * among equals); returns how many. w has room for pool->page_count. */
static uint32_t collect_windows(relo_pool *pool, uint64_t length, window *w, uint64_t *room)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < pool->page_count; i++) {
        relo_page *p = pool->pages[i];
        if (!relo__page_serves(p)) continue;
        *room += p->size - p->occupied_bytes;
        if (best_window(p, length, &w[n]) && w[n].live_bytes > 0) n++;
    }
    qsort(w, n, sizeof *w, window_order);
    return n;
}

bool relo__compact_make_room(relo_device *d, relo_pool *pool, uint64_t length)
{
    relo__pass_settle(d);
    if (!relo__relocation_allowed(d) || !relo__layout_packs(d->layout) || pool->page_count == 0) return false;
    window *w = relo__malloc(pool->page_count * sizeof *w);
    if (!w) return false;
    /* A fine pool's window may also empty into the large pool's room. */
    relo_pool *spill = relo__layout_spill_pool(&relo__pool_stream(pool)->layout, pool);
    uint64_t room = spill_room(spill);
    uint32_t n = collect_windows(pool, length, w, &room);
    relo_pass pass;
    relo__pass_begin(&pass, d, RELO_REASON_MEMORY_PRESSURE);
    bool planned = false;
    for (uint32_t i = 0; i < n && !planned; i++) {
        relo_page *p = w[i].page;
        /* The moves land in the free room of the other pages only. */
        if (w[i].live_bytes > room - (p->size - p->occupied_bytes)) continue;
        /* A plan that failed before this one carved other pages' free
         * slices for its targets and merged them back when it gave them
         * up: the slices this window was found on may be gone. Found
         * again, it is the same run of the page. */
        window now = {0};
        if (!best_window(p, length, &now) || now.live_bytes == 0) continue;
        if (!relo__pass_fence(&pass, p)) break;
        planned = relo__pass_plan_slices(&pass, pool, now.first, now.end, RELO_NEW_PAGE_NONE);
        if (!planned && spill)
            planned = relo__pass_plan_slices(&pass, spill, now.first, now.end, RELO_NEW_PAGE_NONE);
        if (!planned) relo__pass_unfence_last(&pass);
    }
    relo__free(w);
    return relo__pass_finish(&pass);
}

/* Allocation sizes a chained make-room clears a hole for first: those of
 * the windows with the fewest live bytes, at most this many. */
#define CHAIN_SIZES 4u

void relo__note_blocking_size(uint64_t *sizes, uint32_t *n, uint32_t cap, uint64_t size, uint64_t length)
{
    if (size == 0 || size >= length || *n == cap) return;
    for (uint32_t k = 0; k < *n; k++)
        if (sizes[k] == size) return;
    sizes[(*n)++] = size;
}

bool relo__compact_make_room_chained(relo_device *d, relo_pool *pool, uint64_t length)
{
    relo__pass_settle(d);
    if (!relo__relocation_allowed(d) || !relo__layout_packs(d->layout) || pool->page_count == 0) return false;
    window *w = relo__malloc(pool->page_count * sizeof *w);
    if (!w) return false;
    uint64_t room = 0;
    uint32_t n = collect_windows(pool, length, w, &room);
    /* What keeps a window from clearing is, most often, its largest
     * allocation: nothing else has a hole that size. Each distinct such
     * size below length, windows with the fewest live bytes first. */
    uint64_t sizes[CHAIN_SIZES];
    uint32_t count = 0;
    for (uint32_t i = 0; i < n && count < CHAIN_SIZES; i++) {
        uint64_t largest = 0;
        for (relo_slice *s = w[i].first; s != w[i].end; s = s->next)
            if (s->state == RELO_SLICE_LIVE && s->length > largest) largest = s->length;
        relo__note_blocking_size(sizes, &count, CHAIN_SIZES, largest, length);
    }
    relo__free(w);
    bool moved = false;
    for (uint32_t k = 0; k < count; k++) {
        /* A hole for the blocking size first, unless one is there; then,
         * if anything moved since the request's own make-room failed, the
         * request's hole again (its window's allocation now has a place). */
        if (!relo__free_index_find(&pool->free, sizes[k])) {
            if (!relo__compact_make_room(d, pool, sizes[k])) continue;
            moved = true;
        } else if (!moved) {
            continue;
        }
        if (relo__free_index_find(&pool->free, length) || relo__compact_make_room(d, pool, length))
            return true;
    }
    return moved;
}

/* A page whose allocations may all move together, and what its rounding
 * strands: its free room. */
typedef struct tail {
    relo_page *page;
    uint64_t room;
} tail;

/* Most stranded per byte that would move first: those give back the most
 * for the least room the new page needs and the least copying. */
static int by_tail(const void *a, const void *b)
{
    const tail *x = a, *y = b;
    /* room / occupied compared as cross products; long double keeps their
     * order (an exact 128-bit product is not needed to sort). */
    long double rx = (long double)x->room * (long double)y->page->occupied_bytes;
    long double ry = (long double)y->room * (long double)x->page->occupied_bytes;
    if (rx != ry) return rx > ry ? -1 : 1;
    return x->page->order < y->page->order ? -1 : (x->page->order > y->page->order);
}

bool relo__compact_merge_tails(relo_device *d, relo_pool *pool, uint64_t length)
{
    relo__pass_settle(d);
    if (!relo__relocation_allowed(d) || !relo__layout_packs(d->layout) || !pool->variable_pages ||
        pool->page_count < 2)
        return false;
    uint64_t g = pool->granule, lend = lendable(d), need;
    if (!relo__round_up(length, g, &need)) return false;
    uint64_t want = need > lend ? need - lend : g;
    tail *c = relo__malloc(pool->page_count * sizeof *c);
    if (!c) return false;
    uint32_t n = 0;
    for (uint32_t i = 0; i < pool->page_count; i++) {
        relo_page *p = pool->pages[i];
        if (relo__page_serves(p) && relo__page_movable_bytes(p) && p->size > p->occupied_bytes)
            c[n++] = (tail){p, p->size - p->occupied_bytes};
    }
    qsort(c, n, sizeof *c, by_tail);
    /* Most stranded first; a page whose allocations would make the new
     * page larger than the device can lend is passed over. */
    uint64_t live = 0, given = 0, merged = 0;
    uint32_t taken = 0;
    for (uint32_t i = 0; i < n && given < merged + want; i++) {
        uint64_t l = live + c[i].page->occupied_bytes, page;
        if (!relo__round_up(l, g, &page) || page > lend) continue;
        c[taken++] = c[i];
        live = l;
        given += c[i].page->size;
        merged = page;
    }
    bool moved = false;
    if (taken >= 2 && given >= merged + g) {
        relo_pass pass;
        relo__pass_begin(&pass, d, RELO_REASON_MEMORY_PRESSURE);
        bool planned = true;
        uint64_t after = live;
        for (uint32_t i = 0; i < taken && planned; i++) {
            relo_page *p = c[i].page;
            after -= p->occupied_bytes;
            planned = !relo__pass_full(&pass, p->live_size) && relo__pass_fence(&pass, p) &&
                      relo__pass_plan_run(&pass, pool, p->first, NULL, RELO_NEW_PAGE_EXACT, after);
        }
        /* All or nothing: a page that could not be planned leaves the new
         * page short of what the merge gives back. */
        if (!planned) relo__pass_drop_moves(&pass);
        moved = relo__pass_finish(&pass) && planned;
        uint64_t released = 0;
        release_packed_empty(d, relo__pool_stream(pool), 0, &released);
    }
    relo__free(c);
    return moved;
}
