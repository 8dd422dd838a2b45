/*
 * pass/slide.c — packing a packed-layout pool's pages in place (see pass/relocation.h). A
 * page is planned as a whole: each live allocation above a free slice gets
 * a slide to the end of the allocations below it, in address order, so the
 * targets tile the page's start and the free room ends up as one run at
 * its end when the pass commits (relo__pool_page_pack). The page is fenced
 * while the pass is open, so its free room serves nothing meanwhile.
 *
 * A page whose free room is short of a request even packed may first have
 * a few allocations moved out into other pages' holes, in a pass of their
 * own, before it is packed in another: a failed copy of either pass loses
 * nothing, and a slide never overwrites bytes a move to another page has
 * yet to copy.
 */
#include <stdlib.h>

#include "base/hostmem.h"
#include "pass/relocation.h"

/* What packing a page would cost and give: the bytes its moves would copy
 * (its slides; or the allocations moved out of it, below) and the free
 * room it has. */
typedef struct slide_candidate {
    relo_page *page;
    uint64_t copy_bytes;
    uint64_t free_bytes;
} slide_candidate;

static int by_copy_bytes(const void *a, const void *b)
{
    const slide_candidate *x = a, *y = b;
    if (x->copy_bytes != y->copy_bytes) return x->copy_bytes < y->copy_bytes ? -1 : 1;
    return x->page->order < y->page->order ? -1 : (x->page->order > y->page->order);
}

/* Bytes page's slides would copy; 0 when it is packed already. */
static uint64_t slide_cost(const relo_page *page)
{
    uint64_t copy = 0;
    bool hole = false;
    for (const relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state == RELO_SLICE_FREE) {
            hole = true;
        } else if (hole) {
            copy += sl->size;
        }
    }
    return copy;
}

/*
 * Plans the slides that pack page (a page of pass's device that serves, with
 * only movable live allocations) toward its start, fencing it in pass (a
 * slide pass: pass->slides). Returns false, with nothing planned and the
 * page not fenced, when nothing would move or host memory ran out.
 */
static bool slide_plan_page(relo_pass *pass, relo_page *page)
{
    RELO_ASSERT(pass->slides);
    if (!relo__pass_fence(pass, page)) return false;
    uint32_t mark = pass->count;
    uint64_t bytes = pass->bytes, at = 0;
    for (relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state == RELO_SLICE_FREE) continue;
        if (sl->offset != at && !relo__pass_add_slide(pass, sl, at)) {
            pass->count = mark;
            break;
        }
        at += sl->length;
    }
    if (pass->count == mark) {
        pass->bytes = bytes;
        relo__pass_unfence_last(pass);
        return false;
    }
    return true;
}

bool relo__slide_make_room(relo_device *d, relo_pool *pool, uint64_t length)
{
    relo__pass_settle(d);
    if (!relo__relocation_allowed(d) || !relo__layout_packs(d->layout) || pool->page_count == 0) return false;
    slide_candidate *c = relo__malloc(pool->page_count * sizeof *c);
    if (!c) return false; /* packing needs memory; moving nothing is safe */
    uint32_t n = 0;
    bool one_page = false; /* some page holds the request once packed */
    for (uint32_t i = 0; i < pool->page_count; i++) {
        relo_page *p = pool->pages[i];
        if (!relo__page_serves(p) || relo__page_movable_bytes(p) == 0) continue;
        uint64_t copy = slide_cost(p);
        if (copy == 0) continue;
        c[n++] = (slide_candidate){p, copy, p->size - p->occupied_bytes};
        one_page |= p->size - p->occupied_bytes >= length;
    }
    qsort(c, n, sizeof *c, by_copy_bytes);
    relo_pass pass;
    relo__pass_begin(&pass, d, RELO_REASON_MEMORY_PRESSURE);
    pass.slides = true;
    for (uint32_t i = 0; i < n; i++) {
        if (one_page && c[i].free_bytes < length) continue;
        if (relo__pass_full(&pass, c[i].copy_bytes)) break;
        if (slide_plan_page(&pass, c[i].page) && one_page) break;
    }
    relo__free(c);
    return relo__pass_finish(&pass);
}

/* ---- moving a few allocations out first ------------------------------- */

/* Pages one attempt tries, fewest bytes to move out first. */
#define EVICT_TRIES 8u

/* Sizes a chained attempt clears a hole for first, at most. */
#define EVICT_CHAIN 4u

/* Which live allocations of page (free room below length) to move out so
 * that its free room reaches length: the smallest one that is enough
 * alone, else the largest first until they are enough; only allocations no
 * longer than hole, the most room one could go to (room_for). Writes them
 * to out (room for page->live) and returns how many, with their lengths
 * in *bytes; 0 when no choice is enough. *cover gets the length of the
 * smallest allocation that would be enough alone whether or not a hole
 * takes it (0 when none would): what blocks the page when none is. */
static uint32_t choose_evictions(relo_page *page, uint64_t length, uint64_t hole, relo_slice **out,
                                 uint64_t *bytes, uint64_t *cover)
{
    uint64_t deficit = length - (page->size - page->occupied_bytes);
    relo_slice *single = NULL;
    uint32_t n = 0;
    *cover = 0;
    for (relo_slice *sl = page->first; sl; sl = sl->next) {
        if (sl->state != RELO_SLICE_LIVE) continue;
        if (sl->length >= deficit && (!*cover || sl->length < *cover)) *cover = sl->length;
        if (sl->length > hole) continue;
        out[n++] = sl;
        if (sl->length >= deficit && (!single || sl->length < single->length)) single = sl;
    }
    if (single) {
        out[0] = single;
        *bytes = single->length;
        return 1;
    }
    relo__slices_largest_first(out, n);
    uint64_t sum = 0;
    uint32_t k = 0;
    while (k < n && sum < deficit) sum += out[k++]->length;
    *bytes = sum;
    return sum >= deficit ? k : 0;
}

/* The longest allocation page could move out: the largest free slice of
 * another page (top, on top_page, else second) or a new page of spare
 * bytes. */
static uint64_t room_for(const relo_page *page, const relo_page *top_page, uint64_t top, uint64_t second,
                         uint64_t spare)
{
    return relo__max(page == top_page ? second : top, spare);
}

/* One attempt of relo__slide_make_room_evicting; with chain, a failed one
 * first clears holes for the sizes that blocked it, then tries again. */
static bool evict_make_room(relo_device *d, relo_pool *pool, uint64_t length, bool chain)
{
    relo__pass_settle(d);
    if (!relo__relocation_allowed(d) || !relo__layout_packs(d->layout) || pool->page_count < 2) return false;
    /* The largest free slice of any page that serves, and the largest of
     * any other page: where a page's allocations could go. */
    uint64_t top = 0, second = 0;
    const relo_page *top_page = NULL;
    uint32_t most_live = 1;
    for (uint32_t i = 0; i < pool->page_count; i++) {
        relo_page *p = pool->pages[i];
        if (!relo__page_serves(p)) continue;
        if (p->live > most_live) most_live = p->live;
        uint64_t largest = 0;
        for (const relo_slice *sl = p->first; sl; sl = sl->next)
            if (sl->state == RELO_SLICE_FREE && sl->length > largest) largest = sl->length;
        if (largest > top) {
            second = top;
            top = largest;
            top_page = p;
        } else if (largest > second) {
            second = largest;
        }
    }
    /* What a device of known capacity can still lend, in whole granules:
     * the allocations moved out may also go to a new page of up to that
     * size (the request, refused, needed a larger one). */
    uint64_t spare = 0;
    if (d->capacity) {
        uint64_t lend = relo__sub_sat(d->capacity, d->held.bytes_reserved);
        spare = lend - lend % relo__max(pool->granule, 1);
    }
    slide_candidate *c = relo__malloc(pool->page_count * sizeof *c);
    relo_slice **chosen = relo__malloc(most_live * sizeof *chosen);
    uint64_t block[EVICT_CHAIN];
    uint32_t n = 0, blocks = 0;
    bool moved = false;
    if (!c || !chosen) goto done; /* planning needs memory: moving nothing is safe */
    /* Candidates: pages that serve, whose every allocation may move, that
     * are large enough for the request but lack the free room (those with
     * enough were for relo__slide_make_room). */
    for (uint32_t i = 0; i < pool->page_count; i++) {
        relo_page *p = pool->pages[i];
        if (!relo__page_serves(p) || p->transfers || !relo__page_movable_bytes(p) || p->size < length ||
            p->size - p->occupied_bytes >= length || relo__page_has_pins(p))
            continue;
        uint64_t bytes, cover;
        if (choose_evictions(p, length, room_for(p, top_page, top, second, spare), chosen, &bytes, &cover))
            c[n++] = (slide_candidate){p, bytes, p->size - p->occupied_bytes};
        else if (chain)
            relo__note_blocking_size(block, &blocks, EVICT_CHAIN, cover, length);
    }
    qsort(c, n, sizeof *c, by_copy_bytes);
    for (uint32_t i = 0; i < n && i < EVICT_TRIES; i++) {
        relo_page *p = c[i].page;
        /* chosen holds the last page looked at: choose again for this one. */
        uint64_t bytes, cover;
        uint32_t k = choose_evictions(p, length, room_for(p, top_page, top, second, spare), chosen, &bytes,
                                      &cover);
        relo_pass pass;
        relo__pass_begin(&pass, d, RELO_REASON_MEMORY_PRESSURE);
        /* Fenced, the page takes none of its own allocations. */
        bool planned = relo__pass_fence(&pass, p);
        /* Largest first, each into the best hole; where none is left, into
         * one new page sized for it and those after it (rounded to the
         * granule), which the device refuses beyond what it can lend. */
        for (uint32_t j = 0; j < k && planned; j++) {
            bytes -= chosen[j]->length;
            planned = relo__pass_plan_run(&pass, pool, chosen[j], chosen[j]->next,
                                          spare ? RELO_NEW_PAGE_EXACT : RELO_NEW_PAGE_NONE, bytes);
        }
        /* All or nothing: moving only some leaves the page short. */
        if (!planned) relo__pass_drop_moves(&pass);
        bool opened = pass.count > 0;
        moved = relo__pass_finish(&pass) && planned;
        /* A pass with moves dropped the lock: the candidates may be gone. */
        if (opened || moved) break;
    }
done:
    relo__free(chosen);
    relo__free(c);
    if (moved) {
        /* The room the moves left joins the page's own once it is packed
         * (unless the request fits already). */
        if (!relo__free_index_find(&pool->free, length)) relo__slide_make_room(d, pool, length);
        return true;
    }
    /* What kept the pages from their moves: allocations no hole takes.
     * Clear a hole that size the same way, then try again. */
    for (uint32_t k = 0; k < blocks; k++) {
        bool made = false;
        if (!relo__free_index_find(&pool->free, block[k])) {
            if (!evict_make_room(d, pool, block[k], false)) continue;
            made = true;
        }
        if (relo__free_index_find(&pool->free, length) || evict_make_room(d, pool, length, false))
            return true;
        moved |= made;
    }
    return moved;
}

bool relo__slide_make_room_evicting(relo_device *d, relo_pool *pool, uint64_t length)
{
    return evict_make_room(d, pool, length, true);
}
