/*
 * relocation.c — moving live allocations off outdated pages (design §6).
 *
 * A pass runs in three steps. Plan: every outdated page is empty (nothing
 * to move), guarded or holding slices that cannot move (skipped), or
 * movable; movable pages are taken fewest live bytes first, and each gets
 * targets in its arena's current pool for all of its allocations or none.
 * Copy: the device finishes all work, every copy is enqueued, and the
 * copies are always waited for, even after a refused enqueue, so no target
 * is reused while a copy may still write it. Commit: only from a landed
 * copy — commit() takes a relo_landed, which only copy_all() makes — each
 * handle's slot points at its target and the source is freed.
 *
 * The order across streams (§6.4) is here and nowhere else: nothing moves
 * while any stream records; the device's work is finished before a byte
 * moves; a pass covers one stream's arena (the trigger) or all of them
 * (reclaim, capture).
 */
#include "relocation.h"

#include <stdlib.h>
#include <time.h>

#include "device.h"
#include "hostmem.h"
#include "log.h"
#include "sliced_pool.h"
#include "trigger.h"

typedef struct relo_move {
    relo_slice *src;
    relo_slice *dst;
    uint32_t slot;
} relo_move;

typedef struct relo_plan {
    relo_move *moves;
    uint32_t count, cap;
    uint64_t bytes;        /* requested bytes planned */
    uint64_t started_ns;   /* for the pass's time bound */
} relo_plan;

/* Proof that every copy of a plan landed: only copy_all() makes one. */
typedef struct relo_landed {
    const relo_plan *plan;
} relo_landed;

typedef enum relo_copy_outcome {
    RELO_COPY_LANDED = 0,   /* every copy done: commit */
    RELO_COPY_ABANDONED,    /* nothing was (or may still be) written: free targets */
    RELO_COPY_UNKNOWN,      /* the final wait failed: leak both sides */
    RELO_COPY_OUTCOME_COUNT
} relo_copy_outcome;

typedef struct relo_candidate {
    relo_page *page;
    uint64_t live_bytes;
} relo_candidate;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int by_live_bytes(const void *a, const void *b)
{
    const relo_candidate *x = a, *y = b;
    if (x->live_bytes != y->live_bytes) return x->live_bytes < y->live_bytes ? -1 : 1;
    return x->page->order < y->page->order ? -1 : (x->page->order > y->page->order);
}

/* Live bytes of a page whose every occupied slice can move, else 0. */
static uint64_t movable_bytes(const relo_page *page)
{
    if (page->guards || page->occupied == 0) return 0;
    uint64_t bytes = 0;
    for (const relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state == RELO_SLICE_FREE) continue;
        if (sl->state != RELO_SLICE_LIVE) return 0; /* a target or a leak stays put */
        bytes += sl->size;
    }
    return bytes;
}

static bool plan_grow(relo_plan *plan)
{
    if (plan->count < plan->cap) return true;
    uint32_t cap = plan->cap ? plan->cap * 2 : 64;
    relo_move *moves = relo__realloc(plan->moves, cap * sizeof *moves);
    if (!moves) return false;
    plan->moves = moves;
    plan->cap = cap;
    return true;
}

static void free_targets(relo_plan *plan, uint32_t from)
{
    for (uint32_t i = from; i < plan->count; i++) {
        relo_slice *dst = plan->moves[i].dst;
        plan->bytes -= plan->moves[i].src->size;
        relo__pool_slice_free(dst->page->pool, dst);
    }
    plan->count = from;
}

/* Reserves targets for every allocation of page, or none. */
static bool plan_page(relo_plan *plan, relo_pool *target, relo_page *page, bool allow_new_page)
{
    uint32_t mark = plan->count;
    for (relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state != RELO_SLICE_LIVE) continue;
        relo_slice *dst = NULL;
        if (!plan_grow(plan) ||
            relo__sliced_reserve(target, sl->size, sl->slot, RELO_SLICE_TARGET, allow_new_page, &dst) !=
                RELO_OK) {
            free_targets(plan, mark);
            return false;
        }
        plan->moves[plan->count++] = (relo_move){sl, dst, sl->slot};
        plan->bytes += sl->size;
    }
    return true;
}

/* Plans the outdated pages of one stream's arena. */
static void plan_arena(relo_device *d, relo_stream *s, relo_reason reason, relo_plan *plan)
{
    relo_arena *arena = &s->arena;
    relo_pool *target = relo__arena_current(arena);
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
            uint64_t bytes = movable_bytes(p->pages[j]);
            if (bytes) c[m++] = (relo_candidate){p->pages[j], bytes};
        }
    }
    qsort(c, m, sizeof *c, by_live_bytes);
    bool allow_new = reason == RELO_REASON_ARENA_FULL || reason == RELO_REASON_CAPTURE;
    for (uint32_t i = 0; i < m; i++) {
        if (plan->count > 0 && d->desc.pass_max_bytes &&
            plan->bytes + c[i].live_bytes > d->desc.pass_max_bytes)
            break; /* a bounded pass leaves the rest for the next trigger */
        if (plan->count > 0 && d->desc.pass_max_ns && now_ns() - plan->started_ns > d->desc.pass_max_ns)
            break;
        plan_page(plan, target, c[i].page, allow_new);
    }
    relo__free(c);
}

static relo_copy_outcome copy_all(relo_device *d, const relo_plan *plan, relo_landed *landed)
{
    relo_backend *b = d->backend;
    if (b->ops.wait_device(b->ctx) != RELO_OK) return RELO_COPY_ABANDONED;
    relo_status enqueued = RELO_OK;
    for (uint32_t i = 0; i < plan->count && enqueued == RELO_OK; i++) {
        const relo_move *mv = &plan->moves[i];
        enqueued = b->ops.copy(b->ctx, mv->src->page->buffer, mv->src->offset, mv->dst->page->buffer,
                               mv->dst->offset, mv->src->size);
    }
    /* Always wait: a refused enqueue says nothing of the copies before it. */
    if (b->ops.wait_copies(b->ctx) != RELO_OK) return RELO_COPY_UNKNOWN;
    if (enqueued != RELO_OK) return RELO_COPY_ABANDONED;
    landed->plan = plan;
    return RELO_COPY_LANDED;
}

static void commit(relo_device *d, const relo_landed *landed, uint64_t pass)
{
    const relo_plan *plan = landed->plan;
    for (uint32_t i = 0; i < plan->count; i++) {
        const relo_move *mv = &plan->moves[i];
        relo_slice *src = mv->src, *dst = mv->dst;
        relo_stream *s = src->page->pool->stream;
        uint64_t size = src->size;
        relo__pool_slice_promote(dst->page->pool, dst, size, mv->slot);
        d->handles.slots[mv->slot].slice = dst;
        relo__pool_slice_free(src->page->pool, src);
        if (s->relocation_pass != pass) {
            s->relocation_pass = pass;
            s->counters.relocations++;
        }
        s->counters.allocations_moved++;
        s->counters.bytes_moved += size;
        d->counters.allocations_moved++;
        d->counters.bytes_moved += size;
        if (d->move_hook) d->move_hook(d->move_hook_user, relo__handle_of(&d->handles, mv->slot), size);
    }
    d->counters.relocations++;
}

static void count_abandoned(relo_device *d, const relo_plan *plan, uint64_t pass)
{
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_stream *s = plan->moves[i].src->page->pool->stream;
        if (s->relocation_pass != pass) {
            s->relocation_pass = pass;
            s->counters.relocations_abandoned++;
        }
    }
    d->counters.relocations_abandoned++;
}

static void leak_all(relo_plan *plan)
{
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_move *mv = &plan->moves[i];
        mv->src->leak_on_free = true; /* the handle keeps its bytes at the source */
        relo__pool_slice_leak(mv->dst->page->pool, mv->dst);
    }
}

static bool relocation_allowed(const relo_device *d)
{
    return d->recording == 0 && d->desc.relocation == RELO_RELOCATION_AUTO &&
           d->desc.layout == RELO_LAYOUT_ADAPTIVE;
}

bool relo__relocate(relo_device *d, relo_stream *only, relo_reason reason)
{
    if (!relocation_allowed(d)) return false;
    uint32_t first = only ? only->index : 0, end = only ? only->index + 1 : d->stream_count;
    bool outdated = false;
    for (uint32_t i = first; i < end; i++) outdated |= relo__arena_has_outdated(&d->streams[i]->arena);
    if (!outdated) return false;

    d->last_reason = reason;
    uint64_t pass = ++d->relocation_passes;
    relo_plan plan = {NULL, 0, 0, 0, now_ns()};
    for (uint32_t i = first; i < end; i++) plan_arena(d, d->streams[i], reason, &plan);

    bool moved = false;
    if (plan.count > 0) {
        relo_landed landed;
        switch (copy_all(d, &plan, &landed)) {
        case RELO_COPY_LANDED:
            commit(d, &landed, pass);
            moved = true;
            break;
        case RELO_COPY_ABANDONED:
            count_abandoned(d, &plan, pass);
            free_targets(&plan, 0);
            relo__log(d, RELO_LOG_WARN, "relocation (%s) abandoned: every source kept",
                      relo__reason_name(reason));
            break;
        case RELO_COPY_UNKNOWN:
            count_abandoned(d, &plan, pass);
            leak_all(&plan);
            relo__log(d, RELO_LOG_ERROR,
                      "relocation (%s): waiting for copies failed; both sides leaked",
                      relo__reason_name(reason));
            break;
        case RELO_COPY_OUTCOME_COUNT:
            break;
        }
    }
    relo__free(plan.moves);
    if (moved) {
        /* Outdated pages that emptied go back now, so a retry has the room. */
        relo__device_cleanup_periodic(d);
        if (d->backend->ops.flush) d->backend->ops.flush(d->backend->ctx);
    }
    for (uint32_t i = first; i < end; i++) {
        relo_arena *a = &d->streams[i]->arena;
        if (moved)
            relo__trigger_unstall(a);
        else if (relo__arena_has_outdated(a))
            relo__trigger_stall(a);
    }
    return moved;
}

void relo__relocate_when_wanted(relo_stream *stream)
{
    relo_device *d = stream->device;
    if (!relocation_allowed(d)) return;
    relo_reason reason = relo__trigger(stream);
    if (reason == RELO_REASON_NONE) return;
    relo__relocate(d, stream, reason);
}
