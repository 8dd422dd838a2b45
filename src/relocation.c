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
#include <string.h>
#include <time.h>

#include "device.h"
#include "hostmem.h"
#include "log.h"
#include "sliced_pool.h"
#include "trigger.h"

/* Proof that every copy of a pass landed: only copy_all() makes one. */
typedef struct relo_landed {
    const relo_pass *pass;
} relo_landed;

typedef enum relo_copy_outcome {
    RELO_COPY_LANDED = 0,   /* every copy done: commit */
    RELO_COPY_ABANDONED,    /* nothing was (or may still be) written: free targets */
    RELO_COPY_UNKNOWN,      /* the final wait failed: leak both sides */
    RELO_COPY_OUTCOME_COUNT
} relo_copy_outcome;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int relo__candidate_order(const void *a, const void *b)
{
    const relo_candidate *x = a, *y = b;
    if (x->live_bytes != y->live_bytes) return x->live_bytes < y->live_bytes ? -1 : 1;
    return x->page->order < y->page->order ? -1 : (x->page->order > y->page->order);
}

uint64_t relo__page_movable_bytes(const relo_page *page)
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

static void free_targets(relo_pass *plan, uint32_t from)
{
    for (uint32_t i = from; i < plan->count; i++) {
        relo_slice *dst = plan->moves[i].dst;
        plan->bytes -= plan->moves[i].src->size;
        relo__pool_slice_free(dst->page->pool, dst);
    }
    plan->count = from;
}

static int by_size_desc(const void *a, const void *b)
{
    const relo_slice *x = *(relo_slice *const *)a, *y = *(relo_slice *const *)b;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return x->offset < y->offset ? -1 : (x->offset > y->offset);
}

bool relo__pass_plan_page(relo_pass *plan, relo_pool *target, relo_page *page, relo_new_page new_page)
{
    uint32_t mark = plan->count;
    /* Largest first packs best into a best-fit pool's holes; address order
     * is as good as any for a first-fit one. */
    relo_slice *stack[64];
    relo_slice **order = stack;
    uint32_t n = 0;
    if (target->best_fit && page->occupied > 1) {
        if (page->occupied > 64 && !(order = relo__malloc(page->occupied * sizeof *order))) return false;
        for (relo_slice *sl = page->first; sl; sl = sl->next)
            if (sl->state == RELO_SLICE_LIVE) order[n++] = sl;
        qsort(order, n, sizeof *order, by_size_desc);
    }
    bool ok = true;
    relo_slice *sl = n ? order[0] : page->first;
    for (uint32_t i = 0; sl; sl = n ? (++i < n ? order[i] : NULL) : sl->next) {
        if (sl->state != RELO_SLICE_LIVE) continue;
        relo_slice *dst = NULL;
        if (!plan_grow(plan) ||
            relo__sliced_reserve_in(target, sl->size, sl->slot, RELO_SLICE_TARGET, new_page, &dst) != RELO_OK) {
            free_targets(plan, mark);
            ok = false;
            break;
        }
        plan->moves[plan->count++] = (relo_move){sl, dst, sl->slot};
        plan->bytes += sl->size;
    }
    if (order != stack) relo__free(order);
    return ok;
}

/* Plans the outdated pages of one stream's arena. */
static void plan_arena(relo_stream *s, relo_pass *plan)
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
            uint64_t bytes = relo__page_movable_bytes(p->pages[j]);
            if (bytes) c[m++] = (relo_candidate){p->pages[j], bytes};
        }
    }
    qsort(c, m, sizeof *c, relo__candidate_order);
    relo_new_page allow_new = plan->reason == RELO_REASON_ARENA_FULL || plan->reason == RELO_REASON_CAPTURE
                                  ? RELO_NEW_PAGE_POOL_RULE
                                  : RELO_NEW_PAGE_NONE;
    for (uint32_t i = 0; i < m; i++) {
        if (relo__pass_full(plan, c[i].live_bytes)) break; /* the rest waits for the next trigger */
        relo__pass_plan_page(plan, target, c[i].page, allow_new);
    }
    relo__free(c);
}

static relo_copy_outcome copy_all(relo_device *d, const relo_pass *plan, relo_landed *landed)
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
    landed->pass = plan;
    return RELO_COPY_LANDED;
}

static void commit(relo_device *d, const relo_landed *landed)
{
    const relo_pass *plan = landed->pass;
    uint64_t pass = plan->id;
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

static void count_abandoned(relo_device *d, const relo_pass *plan)
{
    uint64_t pass = plan->id;
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_stream *s = plan->moves[i].src->page->pool->stream;
        if (s->relocation_pass != pass) {
            s->relocation_pass = pass;
            s->counters.relocations_abandoned++;
        }
    }
    d->counters.relocations_abandoned++;
}

static void leak_all(relo_pass *plan)
{
    for (uint32_t i = 0; i < plan->count; i++) {
        relo_move *mv = &plan->moves[i];
        mv->src->leak_on_free = true; /* the handle keeps its bytes at the source */
        relo__pool_slice_leak(mv->dst->page->pool, mv->dst);
    }
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
    d->last_reason = reason;
}

bool relo__pass_full(const relo_pass *pass, uint64_t next_bytes)
{
    if (pass->count == 0) return false; /* every pass may move one page */
    if (pass->max_bytes && pass->bytes + next_bytes > pass->max_bytes) return true;
    return pass->max_ns && now_ns() - pass->started_ns > pass->max_ns;
}

bool relo__pass_finish(relo_pass *plan)
{
    relo_device *d = plan->device;
    bool moved = false;
    if (plan->count > 0) {
        relo_landed landed;
        switch (copy_all(d, plan, &landed)) {
        case RELO_COPY_LANDED:
            commit(d, &landed);
            moved = true;
            break;
        case RELO_COPY_ABANDONED:
            count_abandoned(d, plan);
            free_targets(plan, 0);
            relo__log(d, RELO_LOG_WARN, "relocation (%s) abandoned: every source kept",
                      relo__reason_name(plan->reason));
            break;
        case RELO_COPY_UNKNOWN:
            count_abandoned(d, plan);
            leak_all(plan);
            relo__log(d, RELO_LOG_ERROR,
                      "relocation (%s): waiting for copies failed; both sides leaked",
                      relo__reason_name(plan->reason));
            break;
        case RELO_COPY_OUTCOME_COUNT:
            break;
        }
    }
    uint64_t pause = now_ns() - plan->started_ns;
    if (plan->count > 0 && pause > d->counters.longest_pass_ns) d->counters.longest_pass_ns = pause;
    /* Sources may be gone (merged away) by now: the streams the pass
     * counted carry its id. */
    for (uint32_t i = 0; i < d->stream_count; i++) {
        relo_stream *s = d->streams[i];
        if (s->relocation_pass == plan->id && pause > s->counters.longest_pass_ns)
            s->counters.longest_pass_ns = pause;
    }
    relo__free(plan->moves);
    plan->moves = NULL;
    plan->count = plan->cap = 0;
    if (moved) {
        /* Outdated pages that emptied go back now, so a retry has the room. */
        relo__device_cleanup_periodic(d);
        if (d->backend->ops.flush) d->backend->ops.flush(d->backend->ctx);
    }
    return moved;
}

bool relo__relocation_allowed(const relo_device *d)
{
    return d->recording == 0 && d->desc.relocation == RELO_RELOCATION_AUTO &&
           d->desc.layout == RELO_LAYOUT_ADAPTIVE;
}

bool relo__relocate(relo_device *d, relo_stream *only, relo_reason reason)
{
    if (!relo__relocation_allowed(d)) return false;
    uint32_t first = only ? only->index : 0, end = only ? only->index + 1 : d->stream_count;
    bool outdated = false;
    for (uint32_t i = first; i < end; i++) outdated |= relo__arena_has_outdated(&d->streams[i]->arena);
    if (!outdated) return false;

    relo_pass pass;
    relo__pass_begin(&pass, d, reason);
    for (uint32_t i = first; i < end; i++) plan_arena(d->streams[i], &pass);
    bool moved = relo__pass_finish(&pass);
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
    if (!relo__relocation_allowed(d)) return;
    relo_reason reason = relo__trigger(stream);
    if (reason == RELO_REASON_NONE) return;
    relo__relocate(d, stream, reason);
}
