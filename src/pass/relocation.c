/*
 * pass/relocation.c — moving live allocations off outdated pages (design §6).
 *
 * A pass runs in three steps. Plan: every outdated page is empty (nothing
 * to move), guarded or holding slices that cannot move (skipped), or
 * movable; movable pages are taken fewest live bytes first, and each gets
 * targets in its arena's current pool for all of its allocations or none.
 * Open: the sources are marked with their move, and the pass becomes the
 * device's one open pass. Copy, without the device lock: the device
 * finishes all work (the streams' finishes, or the backend's wait), every
 * copy is enqueued, and the copies are always waited for, even after a
 * refused enqueue, so no target is reused while a copy may still write it.
 * Close, under the lock again: only when every copy landed do moves commit
 * (each handle's slot points at its target and the source is freed); a move
 * whose source was resolved, pinned or written meanwhile was skipped, and
 * one whose allocation was released was dropped, and neither commits.
 *
 * The order across streams (§6.4) is here and nowhere else: nothing moves
 * while any stream records or another pass is open; the device's work is
 * finished before a byte moves; a pass covers one stream's arena (the
 * trigger, a stream's reclaim, the out-of-memory retry) or all of them
 * (relo_reclaim_device, capture).
 */
#include "pass/relocation.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/device.h"
#include "base/hostmem.h"
#include "core/log.h"


static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* x before y in the order passes take candidates. */
static bool candidate_before(const relo_candidate *x, const relo_candidate *y)
{
    if (x->live_bytes != y->live_bytes) return x->live_bytes < y->live_bytes;
    return x->page->order < y->page->order;
}

static void sift_down(relo_candidate *c, uint32_t n, uint32_t i)
{
    relo_candidate v = c[i];
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && candidate_before(&c[k + 1], &c[k])) k++;
        if (!candidate_before(&c[k], &v)) break;
        c[i] = c[k];
        i = k;
    }
    c[i] = v;
}

void relo__candidates_heapify(relo_candidate *c, uint32_t n)
{
    for (uint32_t i = n / 2; i-- > 0;) sift_down(c, n, i);
}

relo_candidate relo__candidates_pop(relo_candidate *c, uint32_t *n)
{
    relo_candidate top = c[0];
    c[0] = c[--*n];
    if (*n > 1) sift_down(c, *n, 0);
    return top;
}

uint64_t relo__page_movable_bytes(const relo_page *page)
{
    if (page->guards || page->transfers || page->occupied == 0) return 0;
    /* A target or a leak stays put, and so does its page. */
    return page->live == page->occupied ? page->live_size : 0;
}

static bool plan_grow(relo_pass *plan)
{
    if (plan->count < plan->cap) return true;
    uint32_t cap = plan->cap ? plan->cap * 2 : 64;
    relo_move *moves = relo__realloc(plan->moves, cap * sizeof *moves);
    if (!moves) return false;
    plan->moves = moves;
    plan->cap = cap;
    return true;
}

/* Appends a planned move (room made by plan_grow). The pass writes the
 * allocation's handle slot when it opens and again when it commits; among
 * a million live allocations that slot has long left the caches, and the
 * open's loop over the moves would wait on one miss after another. Loaded
 * now, each miss overlaps the planning of the moves after it. */
static void add_move(relo_pass *plan, relo_slice *src, relo_slice *dst, uint64_t slide_to)
{
    RELO_PREFETCH_WRITE(relo__handle_slot(&plan->device->handles, src->slot));
    plan->moves[plan->count++] = (relo_move){src, dst, slide_to, src->slot, RELO_FATE_PLANNED};
    plan->bytes += src->size;
}

static void free_targets(relo_pass *plan, uint32_t from)
{
    for (uint32_t i = from; i < plan->count; i++) {
        relo_slice *dst = plan->moves[i].dst;
        plan->bytes -= plan->moves[i].src->size;
        if (dst) relo__pool_slice_free(dst->page->pool, dst);
    }
    plan->count = from;
}

void relo__pass_drop_moves(relo_pass *plan)
{
    free_targets(plan, 0);
}

/* Larger size first, then lower offset: a total order over the slices of
 * one page (their offsets differ), so any sort gives the same order. */
/* Whether a LIVE slice's allocation is pinned: it never moves. Pins take
 * no lock (mem/handle.h), so a pass that opens checks its sources again. */
static bool slice_pinned(const relo_device *d, const relo_slice *sl)
{
    return relo__slot_pins(relo__handle_slot(&d->handles, sl->slot)) != 0;
}

bool relo__page_has_pins(const relo_page *page)
{
    const relo_device *d = relo__pool_stream(page->pool)->device;
    for (const relo_slice *sl = page->first; sl; sl = sl->next)
        if (sl->state == RELO_SLICE_LIVE && slice_pinned(d, sl)) return true;
    return false;
}

static bool size_before(const relo_slice *x, const relo_slice *y)
{
    if (x->size != y->size) return x->size > y->size;
    return x->offset < y->offset;
}

static int by_size_desc(const void *a, const void *b)
{
    const relo_slice *x = *(relo_slice *const *)a, *y = *(relo_slice *const *)b;
    return size_before(x, y) ? -1 : (size_before(y, x) ? 1 : 0);
}

/* Runs up to this many allocations are sorted by insertion in place:
 * qsort's merge sort (a buffer, a call through a pointer per comparison)
 * cost about 1,500 instructions a run where most runs hold a few. */
#define PLAN_INSERTION_MAX 16u

void relo__slices_largest_first(relo_slice **order, uint32_t n)
{
    if (n > PLAN_INSERTION_MAX) {
        qsort(order, n, sizeof *order, by_size_desc);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        relo_slice *x = order[i];
        uint32_t k = i;
        for (; k > 0 && size_before(x, order[k - 1]); k--) order[k] = order[k - 1];
        order[k] = x;
    }
}

bool relo__pass_plan_slices(relo_pass *plan, relo_pool *target, relo_slice *first, const relo_slice *end,
                            relo_new_page new_page)
{
    return relo__pass_plan_run(plan, target, first, end, new_page, 0);
}

bool relo__pass_plan_run(relo_pass *plan, relo_pool *target, relo_slice *first, const relo_slice *end,
                         relo_new_page new_page, uint64_t after)
{
    uint32_t mark = plan->count;
    uint32_t live = 0;
    for (relo_slice *sl = first; sl != end; sl = sl->next) {
        if (sl->state != RELO_SLICE_LIVE) continue;
        if (slice_pinned(plan->device, sl)) return false; /* the run moves whole or not at all */
        live++;
    }
    /* Largest first packs best into a best-fit pool's holes; address order
     * is as good as any for a first-fit one. */
    relo_slice *stack[64];
    relo_slice **order = stack;
    uint32_t n = 0;
    if (target->best_fit && live > 1) {
        if (live > 64 && !(order = relo__malloc(live * sizeof *order))) return false;
        for (relo_slice *sl = first; sl != end; sl = sl->next)
            if (sl->state == RELO_SLICE_LIVE) order[n++] = sl;
        relo__slices_largest_first(order, n);
    }
    bool ok = true;
    /* Allocations that need new pages of their own size share them: one
     * page for the rest of the run and the runs planned after it, rounded
     * to the granule once. */
    uint64_t rest = after;
    if (new_page == RELO_NEW_PAGE_EXACT || new_page == RELO_NEW_PAGE_EXACT_OR_COPIES)
        for (relo_slice *x = first; x != end; x = x->next)
            if (x->state == RELO_SLICE_LIVE) rest += x->length;
    relo_slice *sl = n ? order[0] : first;
    for (uint32_t i = 0; sl && sl != end; sl = n ? (++i < n ? order[i] : NULL) : sl->next) {
        if (sl->state != RELO_SLICE_LIVE) continue;
        target->exact_hint = rest;
        rest -= sl->length;
        relo_slice *dst = NULL;
        if (!plan_grow(plan) || relo__sliced_reserve_in(target, sl->size, sl->slot, RELO_SLICE_TARGET,
                                                        new_page, &dst) != RELO_OK) {
            free_targets(plan, mark);
            ok = false;
            break;
        }
        add_move(plan, sl, dst, 0);
    }
    target->exact_hint = 0;
    if (order != stack) relo__free(order);
    return ok;
}

bool relo__pass_add_slide(relo_pass *plan, relo_slice *slice, uint64_t to)
{
    RELO_ASSERT(plan->slides && slice->page->fenced && slice->state == RELO_SLICE_LIVE && to < slice->offset);
    if (slice_pinned(plan->device, slice) || !plan_grow(plan)) return false;
    add_move(plan, slice, NULL, to);
    return true;
}

bool relo__pass_plan_page(relo_pass *plan, relo_pool *target, relo_page *page, relo_new_page new_page)
{
    return relo__pass_plan_slices(plan, target, page->first, NULL, new_page);
}

/* Plans the outdated pages of one stream's arena. */
static void plan_arena(relo_stream *s, relo_pass *plan)
{
    relo_arena *arena = relo__layout_arena(&s->layout);
    relo_pool *target = arena ? relo__arena_current(arena) : NULL;
    if (!target) return;
    uint32_t n = 0;
    for (int i = 0; i < RELO_ARENA_SLOTS; i++)
        if (arena->slots[i] && arena->slots[i]->outdated) n += arena->slots[i]->page_count;
    if (n == 0) return;
    relo_candidate *c = relo__malloc(n * sizeof *c);
    if (!c) return; /* planning needs memory: moving nothing is always safe */
    uint32_t m = 0;
    for (int i = 0; i < RELO_ARENA_SLOTS; i++) {
        relo_pool *p = arena->slots[i];
        if (!p || !p->outdated) continue;
        for (uint32_t j = 0; j < p->page_count; j++) {
            uint64_t bytes = relo__page_movable_bytes(p->pages[j]);
            if (bytes) c[m++] = (relo_candidate){p->pages[j], bytes};
        }
    }
    relo__candidates_heapify(c, m);
    relo_new_page allow_new = plan->reason == RELO_REASON_ARENA_FULL || plan->reason == RELO_REASON_CAPTURE
                                  ? RELO_NEW_PAGE_POOL_RULE
                                  : RELO_NEW_PAGE_NONE;
    uint32_t mark = plan->count;
    uint64_t given = 0, taken = 0;
    while (m > 0) {
        relo_candidate next = relo__candidates_pop(c, &m);
        if (relo__pass_full(plan, next.live_bytes)) break; /* the rest waits for the next trigger */
        relo_page *p = next.page;
        if (!relo__pass_plan_page(plan, target, p, allow_new)) continue;
        /* What moving this page gives back: the whole page when nothing
         * else stays on it, at the cost of the room its allocations take. */
        if (next.live_bytes == p->occupied_bytes) given += p->size;
        taken += p->occupied_bytes;
    }
    relo__free(c);
    /* Under pressure the room the moves take in current pages is room the
     * next reservations would have used: a pass that does not give back at
     * least a granule more than it takes (a page, net) only copies, and
     * the allocations it would move often die soon anyway. It is not
     * started (docs/alternatives.md: it made the adaptive placement's fit worse). */
    if (plan->reason == RELO_REASON_MEMORY_PRESSURE && (given < taken || given - taken < s->device->granule))
        free_targets(plan, mark);
}

void relo__relocation_plan(relo_pass *pass, relo_stream *only)
{
    relo_device *d = pass->device;
    uint32_t first, end;
    relo__device_scope(d, only, &first, &end);
    for (uint32_t i = first; i < end; i++) plan_arena(d->streams[i], pass);
}

/* Waits for the device's work: the streams' finishes, and the backend's
 * device-wide wait unless every stream has a finish. */
static relo_status wait_for_work(relo_device *d, const relo_pass *pass)
{
    relo_backend *b = d->backend;
    if (!pass->all_finish) {
        relo_status st = b->ops.wait_device(b->ctx);
        if (st != RELO_OK) return st;
    }
    for (uint32_t i = 0; i < pass->finish_count; i++) {
        relo_status st = pass->finishes[i].fn(pass->finishes[i].user);
        if (st != RELO_OK) return st;
    }
    return RELO_OK;
}

/* The copies of one move: one for a move to another slice; for a slide,
 * pieces no longer than the distance it slides, lowest first, so no copy's
 * source and target overlap and each piece reads bytes no earlier piece
 * wrote (the backend runs them in order, relo_backend.h). */
static uint32_t chunk_count(const relo_move *mv)
{
    if (mv->dst) return 1;
    uint64_t gap = mv->src->offset - mv->slide_to;
    return (uint32_t)((mv->src->size + gap - 1) / gap);
}

/* Enqueues piece k of mv, or with undo the copy that puts its bytes back. */
static relo_status copy_chunk(relo_backend *b, const relo_move *mv, uint32_t k, bool undo)
{
    const relo_slice *src = mv->src;
    if (mv->dst)
        return b->ops.copy(b->ctx, src->page->buffer, src->offset, mv->dst->page->buffer, mv->dst->offset,
                           src->size);
    uint64_t gap = src->offset - mv->slide_to, at = (uint64_t)k * gap;
    uint64_t n = relo__min(gap, src->size - at);
    void *buf = src->page->buffer;
    if (undo) return b->ops.copy(b->ctx, buf, mv->slide_to + at, buf, src->offset + at, n);
    return b->ops.copy(b->ctx, buf, src->offset + at, buf, mv->slide_to + at, n);
}

/* After a refused enqueue at piece k of move i, every piece before landed:
 * the slides among them overwrote their sources, so they are played back
 * in reverse order (each piece's target is its own, so each undo finds the
 * bytes its piece wrote). Returns whether every undo landed. */
static bool undo_slides(relo_backend *b, const relo_pass *pass, uint32_t i, uint32_t k)
{
    bool any = false;
    for (uint32_t m = i + 1; m-- > 0;) {
        const relo_move *mv = &pass->moves[m];
        uint32_t end = m == i ? k : chunk_count(mv);
        if (mv->dst) continue;
        for (uint32_t c = end; c-- > 0;) {
            if (copy_chunk(b, mv, c, true) != RELO_OK) return false;
            any = true;
        }
    }
    return !any || b->ops.wait_copies(b->ctx) == RELO_OK;
}

relo_copy_outcome relo__pass_copy(relo_pass *pass)
{
    relo_device *d = pass->device;
    relo_backend *b = d->backend;
    if (wait_for_work(d, pass) != RELO_OK) return RELO_COPY_ABANDONED;
    relo_status enqueued = RELO_OK;
    uint32_t i = 0, k = 0;
    for (; i < pass->count && enqueued == RELO_OK; i++) {
        const relo_move *mv = &pass->moves[i];
        uint32_t n = chunk_count(mv);
        for (k = 0; k < n && enqueued == RELO_OK; k++) enqueued = copy_chunk(b, mv, k, false);
    }
    /* Always wait: a refused enqueue says nothing of the copies before it. */
    if (b->ops.wait_copies(b->ctx) != RELO_OK) return RELO_COPY_UNKNOWN;
    if (enqueued == RELO_OK) return RELO_COPY_LANDED;
    /* The loops stepped past the refused piece: it is piece k - 1 of move
     * i - 1, and was not enqueued. */
    if (pass->slides && !undo_slides(b, pass, i - 1, k - 1)) return RELO_COPY_UNKNOWN;
    return RELO_COPY_ABANDONED;
}

/* Commits the moves still PLANNED (the others are left to the caller);
 * returns how many committed. */
static uint32_t commit(relo_device *d, relo_pass *plan)
{
    uint64_t pass = plan->id;
    uint32_t committed = 0;
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_move *mv = &plan->moves[i];
        if (mv->fate != RELO_FATE_PLANNED) continue;
        relo_slice *src = mv->src, *dst = mv->dst;
        relo_stream *s = relo__pool_stream(src->page->pool);
        uint64_t size = src->size;
        relo_slot *slot = relo__handle_slot(&d->handles, mv->slot);
        if (dst) {
            relo__pool_slice_promote(dst->page->pool, dst, size, mv->slot);
            slot->slice = dst; /* withdrawn when the pass opened; the next locked resolve publishes */
            relo__pool_slice_free(src->page->pool, src);
        } /* a slide's slice took its new offset when its page was packed */
        if (s->relocation_pass != pass) {
            s->relocation_pass = pass;
            s->held.counters.relocations++;
        }
        s->held.counters.allocations_moved++;
        s->held.counters.bytes_moved += size;
        d->held.counters.allocations_moved++;
        d->held.counters.bytes_moved += size;
        if (d->move_hook) d->move_hook(d->move_hook_user, relo__handle_of(&d->handles, mv->slot), size);
        committed++;
    }
    if (committed) d->held.counters.relocations++;
    return committed;
}

static void count_abandoned(relo_device *d, const relo_pass *plan)
{
    uint64_t pass = plan->id;
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_stream *s = relo__pool_stream(plan->moves[i].src->page->pool);
        if (s->relocation_pass != pass) {
            s->relocation_pass = pass;
            s->held.counters.relocations_abandoned++;
        }
    }
    d->held.counters.relocations_abandoned++;
}

static void leak_all(relo_pass *plan)
{
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_move *mv = &plan->moves[i];
        mv->src->leak_on_free = true; /* the handle keeps its bytes at the source */
        if (mv->dst) relo__pool_slice_leak(mv->dst->page->pool, mv->dst);
    }
    /* A slide's targets are its page's free room. */
    for (uint32_t i = 0; plan->slides && i < plan->fence_count; i++)
        relo__pool_page_leak_free(plan->fences[i]->pool, plan->fences[i]);
}

void relo__pass_begin(relo_pass *pass, relo_device *d, relo_reason reason)
{
    memset(pass, 0, sizeof *pass);
    pass->device = d;
    pass->reason = reason;
    pass->id = ++d->relocation_passes;
    pass->started_ns = now_ns();
    pass->max_bytes = d->desc.pass_max_bytes;
    pass->max_ns = d->desc.pass_max_ns;
    pass->budget = UINT64_MAX;
    d->last_reason = reason;
}

bool relo__pass_full(const relo_pass *pass, uint64_t next_bytes)
{
    if (pass->bytes > pass->budget || next_bytes > pass->budget - pass->bytes) return true;
    if (pass->count == 0) return false; /* every pass may move one page */
    if (pass->max_bytes && pass->bytes + next_bytes > pass->max_bytes) return true;
    if (pass->max_moves && pass->count >= pass->max_moves) return true;
    return pass->max_ns && now_ns() - pass->started_ns > pass->max_ns;
}

bool relo__pass_fence(relo_pass *pass, relo_page *page)
{
    if (pass->fence_count == pass->fence_cap) {
        uint32_t cap = pass->fence_cap ? pass->fence_cap * 2 : 16;
        relo_page **pages = relo__realloc(pass->fences, cap * sizeof *pages);
        if (!pages) return false;
        pass->fences = pages;
        pass->fence_cap = cap;
    }
    relo__pool_page_fence(page->pool, page);
    pass->fences[pass->fence_count++] = page;
    return true;
}

void relo__pass_unfence_last(relo_pass *pass)
{
    relo_page *page = pass->fences[--pass->fence_count];
    relo__pool_page_unfence(page->pool, page);
}

relo_status relo__pass_open(relo_pass *pass)
{
    relo_device *d = pass->device;
    RELO_ASSERT(d->open_pass == NULL);
    uint32_t n = 0;
    for (uint32_t i = 0; i < d->stream_count; i++) n += d->streams[i]->finish != NULL;
    if (n) {
        pass->finishes = relo__malloc(n * sizeof *pass->finishes);
        if (!pass->finishes) return RELO_ERR_HOST_MEMORY;
        for (uint32_t i = 0; i < d->stream_count; i++) {
            relo_stream *s = d->streams[i];
            if (s->finish) pass->finishes[pass->finish_count++] = (relo_finish){s->finish, s->finish_user};
        }
    }
    pass->all_finish = n > 0 && n == d->stream_count;
    /* Marked sources are withdrawn from lock-free resolves and pins, which
     * then reach the mark under the lock (a resolve vetoes the move, a pin
     * waits for it). */
    for (uint32_t i = 0; i < pass->count; i++) {
        pass->moves[i].src->move = i + 1;
        relo__handle_withdraw(&d->handles, pass->moves[i].slot);
    }
    /* A pin without the lock that counted itself before the withdrawal is
     * seen now (mem/handle.h): its move is skipped, and a slide, which cannot
     * be, calls off the whole pass before anything is copied. */
    atomic_thread_fence(memory_order_seq_cst);
    for (uint32_t i = 0; i < pass->count; i++) {
        relo_move *mv = &pass->moves[i];
        if (relo__slot_pins(relo__handle_slot(&d->handles, mv->slot)) == 0) continue;
        if (!mv->dst) {
            for (uint32_t j = 0; j < pass->count; j++) pass->moves[j].src->move = 0;
            return RELO_ERR_BUSY;
        }
        if (mv->fate == RELO_FATE_PLANNED) mv->fate = RELO_FATE_SKIPPED;
    }
    pass->owner = pthread_self();
    d->open_pass = pass;
    return RELO_OK;
}

bool relo__pass_close(relo_pass *plan, relo_copy_outcome outcome)
{
    relo_device *d = plan->device;
    bool moved = false;
    if (d->open_pass == plan) {
        for (uint32_t i = 0; i < plan->count; i++) plan->moves[i].src->move = 0;
        d->open_pass = NULL;
        relo__cond_broadcast(&d->pass_done);
    }
    if (plan->count > 0) {
        switch (outcome) {
        case RELO_COPY_LANDED:
            /* Every slide landed, the vetoed ones too (a slide is never
             * skipped): the slid pages' bookkeeping follows the bytes. */
            for (uint32_t i = 0; plan->slides && i < plan->fence_count; i++)
                relo__pool_page_pack(plan->fences[i]->pool, plan->fences[i]);
            moved = commit(d, plan) > 0;
            break;
        case RELO_COPY_ABANDONED:
            count_abandoned(d, plan);
            relo__log(d, RELO_LOG_WARN, "relocation (%s) abandoned: every source kept",
                      relo__reason_name(plan->reason));
            break;
        case RELO_COPY_UNKNOWN:
            count_abandoned(d, plan);
            leak_all(plan);
            relo__log(d, RELO_LOG_ERROR, "relocation (%s): waiting for copies failed; both sides leaked",
                      relo__reason_name(plan->reason));
            break;
        case RELO_COPY_OUTCOME_COUNT: break;
        }
        /* What did not commit: targets go back (leaked ones stay LEAKED),
         * and allocations released while the pass was open go now. */
        for (uint32_t i = 0; i < plan->count; i++) {
            relo_move *mv = &plan->moves[i];
            if (outcome == RELO_COPY_LANDED && mv->fate == RELO_FATE_PLANNED) continue;
            if (outcome != RELO_COPY_UNKNOWN && mv->dst) relo__pool_slice_free(mv->dst->page->pool, mv->dst);
            if (mv->fate == RELO_FATE_DROPPED) {
                relo__stats_freed(relo__pool_stream(mv->src->page->pool), mv->src->size);
                relo__pool_slice_free(mv->src->page->pool, mv->src);
            }
        }
    }
    uint64_t pause = now_ns() - plan->started_ns;
    if (plan->count > 0 && pause > d->held.counters.longest_pass_ns) d->held.counters.longest_pass_ns = pause;
    /* Sources may be gone (merged away) by now: the streams the pass
     * counted carry its id. */
    for (uint32_t i = 0; i < d->stream_count; i++) {
        relo_stream *s = d->streams[i];
        if (s->relocation_pass == plan->id && pause > s->held.counters.longest_pass_ns)
            s->held.counters.longest_pass_ns = pause;
    }
    for (uint32_t i = 0; i < plan->fence_count; i++)
        relo__pool_page_unfence(plan->fences[i]->pool, plan->fences[i]);
    relo__free(plan->fences);
    relo__free(plan->finishes);
    relo__free(plan->moves);
    plan->fences = NULL;
    plan->finishes = NULL;
    plan->moves = NULL;
    plan->count = plan->cap = plan->fence_count = plan->fence_cap = plan->finish_count = 0;
    if (moved) {
        /* Outdated pages that emptied go back now, so a retry has the room;
         * their buffers are freed off the lock. */
        relo__device_cleanup_off_lock(d);
        if (d->backend->ops.flush) d->backend->ops.flush(d->backend->ctx);
    }
    return moved;
}

bool relo__pass_finish(relo_pass *plan)
{
    relo_device *d = plan->device;
    relo_copy_outcome outcome = RELO_COPY_ABANDONED;
    if (plan->count > 0) {
        if (relo__pass_open(plan) == RELO_OK) {
            /* Other threads go on while relo waits and copies: the sources
             * carry their marks, so a release, resolve or write reaches
             * the move instead of the bytes. */
            relo__device_unlock_quietly(d);
            outcome = relo__pass_copy(plan);
            relo__device_lock(d);
        }
    }
    return relo__pass_close(plan, outcome);
}

void relo__pass_settle(relo_device *d)
{
    while (d->open_pass && !d->open_pass->runtime) relo__cond_wait(&d->pass_done, &d->lock);
}

bool relo__pass_wait_for_move(relo_device *d, const relo_slice *slice)
{
    const relo_pass *open = d->open_pass;
    if (slice->move == 0 || pthread_equal(open->owner, pthread_self()) ||
        (open->copying && pthread_equal(open->copier, pthread_self())))
        return false;
    uint64_t id = open->id;
    while (d->open_pass && d->open_pass->id == id) relo__cond_wait(&d->pass_done, &d->lock);
    return true;
}

bool relo__pass_drop(relo_device *d, relo_slice *slice)
{
    if (slice->move == 0) return false;
    d->open_pass->moves[slice->move - 1].fate = RELO_FATE_DROPPED;
    return true;
}

bool relo__relocation_allowed(const relo_device *d)
{
    return d->recording == 0 && d->open_pass == NULL && d->desc.relocation == RELO_RELOCATION_AUTO &&
           d->desc.placement != RELO_PLACEMENT_EXCLUSIVE;
}

/* Records that a relocation of this arena found nothing to move. */
static void trigger_stall(relo_arena *arena)
{
    arena->stalled = true;
    arena->stall = relo__arena_shape(arena);
}

/* Clears the stall (something moved). */
static void trigger_unstall(relo_arena *arena)
{
    arena->stalled = false;
}

bool relo__relocate(relo_device *d, relo_stream *only, relo_reason reason)
{
    relo__pass_settle(d);
    if (!relo__relocation_allowed(d)) return false;
    uint32_t first, end;
    relo__device_scope(d, only, &first, &end);
    bool outdated = false;
    for (uint32_t i = first; i < end; i++) {
        relo_arena *a = relo__layout_arena(&d->streams[i]->layout);
        outdated |= a && relo__arena_has_outdated(a);
    }
    if (!outdated) return false;

    relo_pass pass;
    relo__pass_begin(&pass, d, reason);
    relo__relocation_plan(&pass, only);
    bool moved = relo__pass_finish(&pass);
    for (uint32_t i = first; i < end; i++) {
        relo_arena *a = relo__layout_arena(&d->streams[i]->layout);
        if (!a) continue;
        if (moved)
            trigger_unstall(a);
        else if (relo__arena_has_outdated(a))
            trigger_stall(a);
    }
    return moved;
}

void relo__relocate_when_wanted(relo_stream *stream)
{
    relo_device *d = stream->device;
    /* The trigger weighs an arena's outdated pages: under a layout with
     * none (packed, exclusive) it never fires, and nothing else is asked. */
    if (!relo__layout_arena(&stream->layout) || !relo__relocation_allowed(d)) return;
    relo_reason reason = relo__trigger(stream);
    if (reason == RELO_REASON_NONE) return;
    relo__relocate(d, stream, reason);
}

/* ---- the trigger (design §6.1): whether a reservation should relocate first ---- */

bool relo__pressure_high(uint64_t capacity, uint64_t held, uint64_t page)
{
    /* The next page would leave less than another page of room: the last
     * moment a relocation can still free what the device needs. */
    return relo__add_sat(held, page) > relo__sub_sat(capacity, page);
}

static bool same_shape(relo_arena_shape a, relo_arena_shape b)
{
    return a.current_pages == b.current_pages && a.outdated_pools == b.outdated_pools &&
           a.outdated_pages == b.outdated_pages && a.guarded_outdated_pages == b.guarded_outdated_pages;
}

relo_reason relo__trigger(struct relo_stream *stream)
{
    relo_arena *arena = relo__layout_arena(&stream->layout);
    relo_device *d = stream->device;
    if (!arena || !relo__arena_has_outdated(arena)) return RELO_REASON_NONE;
    if (arena->stalled && same_shape(relo__arena_shape(arena), arena->stall)) return RELO_REASON_NONE;
    if (arena->pool_count == RELO_ARENA_SLOTS) return RELO_REASON_ARENA_FULL;
    if (d->capacity == 0) return RELO_REASON_NONE;
    uint64_t held = relo__device_held_bytes(d);
    return relo__pressure_high(d->capacity, held, arena->page_size) ? RELO_REASON_MEMORY_PRESSURE
                                                                    : RELO_REASON_NONE;
}
