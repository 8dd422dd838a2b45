/*
 * slide.c — packing a dense pool's pages in place (see slide.c). A page is
 * planned as a whole: each live allocation above a free slice gets a slide
 * to the end of the allocations below it, in address order, so the targets
 * tile the page's start and the free room ends up as one run at its end
 * when the pass commits (relo__pool_page_pack). The page is fenced while
 * the pass is open, so its free room serves nothing meanwhile.
 */
#include <stdlib.h>

#include "hostmem.h"
#include "relocation.h"

/* What packing a page would cost and give: the bytes its slides would copy
 * and the free run it would have. */
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

bool relo__slide_plan_page(relo_pass *pass, relo_page *page)
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
    if (!relo__relocation_allowed(d) || d->layout->kind != RELO_LAYOUT_KIND_DENSE || pool->page_count == 0) return false;
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
        if (relo__slide_plan_page(&pass, c[i].page) && one_page) break;
    }
    relo__free(c);
    return relo__pass_finish(&pass);
}
