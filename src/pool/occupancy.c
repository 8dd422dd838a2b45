/*
 * pool/occupancy.c — the pages of a sliced pool by how full they are (see
 * pool/occupancy.h). Every list is doubly linked through the page, so a page
 * changes list in O(1); a bitmap over the lists finds the next class that
 * holds pages with a bit scan per word.
 */
#include "pool/occupancy.h"

#include "base/hostmem.h"
#include "pool/pool.h"

relo_status relo__occupancy_init(relo_occupancy *occ)
{
    if (occ->lists) return RELO_OK;
    occ->lists = relo__calloc(RELO_OCC_LISTS * sizeof *occ->lists);
    return occ->lists ? RELO_OK : RELO_ERR_HOST_MEMORY;
}

void relo__occupancy_destroy(relo_occupancy *occ)
{
    RELO_ASSERT(occ->room == 0 && occ->empty == NULL && occ->dirty == NULL);
    relo__free(occ->lists);
    occ->lists = NULL;
    for (uint32_t i = 0; i < RELO_OCC_WORDS; i++) occ->bitmap[i] = 0;
}

/* The head of list code (RELO_OCC_EMPTY or 2 + a class list). */
static relo_page **head_of(relo_occupancy *occ, uint32_t code)
{
    return code == RELO_OCC_EMPTY ? &occ->empty : &occ->lists[code - 2];
}

static void unlink_page(relo_occupancy *occ, relo_page *page)
{
    uint32_t code = page->occ_list;
    if (page->occ_prev)
        page->occ_prev->occ_next = page->occ_next;
    else
        *head_of(occ, code) = page->occ_next;
    if (page->occ_next) page->occ_next->occ_prev = page->occ_prev;
    if (code >= 2 && !occ->lists[code - 2])
        occ->bitmap[(code - 2) / 64] &= ~(UINT64_C(1) << ((code - 2) % 64));
    page->occ_prev = page->occ_next = NULL;
    page->occ_list = RELO_OCC_NONE;
}

static void link_page(relo_occupancy *occ, relo_page *page, uint32_t code)
{
    relo_page **head = head_of(occ, code);
    page->occ_prev = NULL;
    page->occ_next = *head;
    if (*head) (*head)->occ_prev = page;
    *head = page;
    if (code >= 2) occ->bitmap[(code - 2) / 64] |= UINT64_C(1) << ((code - 2) % 64);
    page->occ_list = (uint16_t)code;
}

/* The list a page's counters say it belongs in. */
static uint32_t list_of(const relo_page *page)
{
    if (page->occupied == 0) return RELO_OCC_EMPTY;
    return 2u + 2u * relo__occupancy_class(page->live_size) +
           (relo__occupancy_sparse(page->size, page->occupied_bytes) ? 0u : 1u);
}

/* Puts one page where its counters say, and its room in the sum. */
static void settle_page(relo_occupancy *occ, relo_page *page)
{
    uint64_t room = relo__page_serves(page) ? page->size - page->occupied_bytes : 0;
    occ->room = occ->room - page->occ_room + room;
    page->occ_room = room;
    uint32_t code = list_of(page);
    if (code == page->occ_list) return;
    if (page->occ_list != RELO_OCC_NONE) unlink_page(occ, page);
    link_page(occ, page, code);
}

/* Takes a touched page off the touched list, wherever it is in it (its
 * list and room are as they were; the caller settles it or drops it). */
static void unmark(relo_occupancy *occ, relo_page *page)
{
    relo_page *prev = page->occ_dirty_prev, *next = page->occ_dirty_next;
    if (prev)
        prev->occ_dirty_next = next;
    else
        occ->dirty = next;
    if (next)
        next->occ_dirty_prev = prev;
    else
        occ->dirty_tail = prev;
    occ->dirty_count--;
    page->occ_dirty_next = page->occ_dirty_prev = NULL;
    page->occ_dirty = false;
}

/* Settles the oldest touched page. */
static void settle_oldest(relo_occupancy *occ)
{
    relo_page *p = occ->dirty;
    unmark(occ, p);
    settle_page(occ, p);
}

void relo__occupancy_mark(relo_occupancy *occ, relo_page *page)
{
    page->occ_dirty = true;
    page->occ_dirty_next = NULL;
    page->occ_dirty_prev = occ->dirty_tail;
    if (occ->dirty_tail)
        occ->dirty_tail->occ_dirty_next = page;
    else
        occ->dirty = page;
    occ->dirty_tail = page;
    if (++occ->dirty_count > RELO_OCC_TOUCHED_MAX) settle_oldest(occ);
}

/* Brings the index of pool up to date with every page touched since the
 *  last settle. O(pages touched). */
static void occupancy_settle(relo_pool *pool)
{
    relo_occupancy *occ = &pool->occupancy;
    while (occ->dirty) settle_oldest(occ);
}

uint64_t relo__occupancy_room(relo_pool *pool)
{
    occupancy_settle(pool);
    return pool->occupancy.room;
}

void relo__occupancy_remove(relo_pool *pool, relo_page *page)
{
    relo_occupancy *occ = &pool->occupancy;
    if (page->occ_dirty) unmark(occ, page);
    occ->room -= page->occ_room;
    page->occ_room = 0;
    if (page->occ_list != RELO_OCC_NONE) unlink_page(occ, page);
}

uint32_t relo__occupancy_next_class(const relo_occupancy *occ, uint32_t from, bool sparse_only)
{
    /* Lists 2c (sparse) and 2c + 1 interleave: the sparse ones are the
     * even bits of every word. */
    const uint64_t mask = sparse_only ? UINT64_C(0x5555555555555555) : UINT64_MAX;
    uint32_t bit = 2u * from;
    for (uint32_t w = bit / 64; w < RELO_OCC_WORDS; w++) {
        uint64_t word = occ->bitmap[w] & mask;
        if (w == bit / 64) word &= UINT64_MAX << (bit % 64);
        if (word) return (w * 64u + relo__log2(word & (~word + 1u))) / 2u; /* lowest set bit */
    }
    return RELO_OCC_CLASSES;
}

/* Restores the max-heap by position (page->index) below slot i of the
 * first n pages of h. */
static void sift_down_by_index(relo_page **h, uint32_t n, uint32_t i)
{
    relo_page *p = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1]->index > h[c]->index) c++;
        if (h[c]->index <= p->index) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = p;
}

relo_page *relo__page_list_pop(relo_page_list *list)
{
    if (list->count == 0) return NULL;
    relo_page **h = list->pages, *top = h[0];
    h[0] = h[--list->count];
    if (list->count > 1) sift_down_by_index(h, list->count, 0);
    return top;
}

void relo__page_list_free(relo_page_list *list)
{
    if (list->pages != list->inline_pages) relo__free(list->pages);
    list->pages = list->inline_pages;
    list->count = 0;
}

bool relo__occupancy_empty_pages(relo_pool *pool, relo_page_list *out)
{
    relo_occupancy *occ = &pool->occupancy;
    out->pages = out->inline_pages;
    out->count = 0;
    /* Only the empty list is read: a touched page joins it or leaves it
     * now when its emptiness changed; the others stay touched (they may
     * be touched again before anything reads their lists, and settling
     * them here would make the next touch pay for a mark again). */
    for (relo_page *p = occ->dirty, *next; p; p = next) {
        next = p->occ_dirty_next;
        if ((p->occupied == 0) != (p->occ_list == RELO_OCC_EMPTY)) {
            unmark(occ, p);
            settle_page(occ, p);
        }
    }
    uint32_t n = 0;
    for (const relo_page *p = occ->empty; p; p = p->occ_next) n++;
    if (n > RELO_PAGE_LIST_INLINE && !(out->pages = relo__malloc(n * sizeof *out->pages))) {
        out->pages = out->inline_pages;
        return false;
    }
    relo_page **go = out->pages;
    uint32_t m = 0;
    for (relo_page *p = occ->empty; p; p = p->occ_next) {
        occ->empty_visits++;
        if (p->guards == 0 && !p->pending && !p->fenced && !p->transfers) go[m++] = p;
    }
    /* Highest position first: each release moves the last page into the
     * hole, and that page, higher than every page still to go, stays, and
     * the positions of those still to go do not change: the heap stays a
     * heap while they go. A heap, not a sort: the cache limit's trim usually
     * takes a few pages of many, and building the heap costs one pass. */
    for (uint32_t i = m / 2; i-- > 0;) sift_down_by_index(go, m, i);
    out->count = m;
    return true;
}

bool relo__occupancy_check(const relo_pool *pool, const char **why)
{
#define FAIL(msg)     \
    do {              \
        *why = msg;   \
        return false; \
    } while (0)
    const relo_occupancy *occ = &pool->occupancy;
    if (!occ->lists) {
        if (occ->room || occ->empty || occ->dirty) FAIL("occupancy index holds pages it has no lists for");
        return true;
    }
    uint64_t dirty = 0;
    const relo_page *last = NULL;
    for (const relo_page *p = occ->dirty; p; last = p, p = p->occ_dirty_next) {
        if (!p->occ_dirty || p->pool != pool) FAIL("occupancy touched list holds an unmarked page");
        if (p->occ_dirty_prev != last) FAIL("occupancy touched list links disagree");
        if (++dirty > RELO_OCC_TOUCHED_MAX) FAIL("occupancy touched list holds too many pages");
    }
    if (last != occ->dirty_tail || dirty != occ->dirty_count)
        FAIL("occupancy touched list's tail or count is wrong");
    uint64_t room = 0, marked = 0, indexed = 0;
    for (uint32_t i = 0; i < pool->page_count; i++) {
        const relo_page *p = pool->pages[i];
        room += p->occ_room;
        indexed += p->occ_list != RELO_OCC_NONE;
        if (p->occ_dirty) {
            marked++;
            continue; /* settled before the index is read */
        }
        uint64_t want_room = relo__page_serves(p) ? p->size - p->occupied_bytes : 0;
        if (p->occ_room != want_room) FAIL("an untouched page's room in the occupancy index is stale");
        if (p->occ_list != list_of(p)) FAIL("an untouched page is in the wrong occupancy list");
    }
    if (marked != dirty) FAIL("pages marked as touched differ from the touched list");
    if (room != occ->room) FAIL("occupancy room differs from the pages' parts of it");
    /* Every list holds exactly the pages that name it, linked both ways;
     * together they hold every page once, but for a page touched before
     * its first settle. */
    uint64_t listed = 0;
    for (uint32_t code = RELO_OCC_EMPTY; code < 2u + RELO_OCC_LISTS; code++) {
        const relo_page *head = code == RELO_OCC_EMPTY ? occ->empty : occ->lists[code - 2];
        if (code >= 2) {
            bool bit = (occ->bitmap[(code - 2) / 64] >> ((code - 2) % 64)) & 1u;
            if (bit != (head != NULL)) FAIL("occupancy bitmap differs from its lists");
        }
        const relo_page *prev = NULL;
        for (const relo_page *p = head; p; prev = p, p = p->occ_next) {
            if (p->occ_prev != prev) FAIL("occupancy list links are broken");
            if (p->pool != pool || p->occ_list != code) FAIL("occupancy list holds a page of another list");
            if (++listed > pool->page_count) FAIL("occupancy lists hold more pages than the pool");
        }
    }
    if (listed != indexed) FAIL("occupancy lists miss pages of the pool");
    return true;
#undef FAIL
}
