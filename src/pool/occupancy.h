/*
 * pool/occupancy.h — the pages of one sliced pool by how full they are, kept
 * up to date at every change of a page's occupancy, so that compaction
 * planning and the release of empty pages look at the pages they act on
 * and not at every page the pool holds:
 *   - pages with no occupied slice, in one list;
 *   - the others in classes of their live bytes (the requested sizes of
 *     their LIVE slices, what a pass would move), two levels as a free
 *     index has them: the power of two below, split in four steps. Each
 *     class has two lists, the pages a reclaim may empty (free room at
 *     least half their occupied bytes, at most 2/3 full: "sparse") and
 *     the others, and one bit per list says which hold pages. Classes are
 *     in the order of live bytes, so visiting them upwards and ordering
 *     the pages of each visited class gives the pages fewest live bytes
 *     first without ever sorting the pool;
 *   - the free bytes of the pages that serve (no guard, no fence): the
 *     room compaction may move into, as one sum.
 * A change of a page's occupancy only marks the page as touched (the
 * reservation path pays a flag test while it keeps to the same pages);
 * a touched page is put in its list and its part of the room recomputed
 * from its counters, in O(1), when RELO_OCC_TOUCHED_MAX other pages were
 * touched after it, or before anything reads the index
 * (relo__occupancy_settle). So each event costs O(1), at most one page
 * settled, and a read settles at most RELO_OCC_TOUCHED_MAX pages, however
 * many the pool holds. A read of the empty pages alone (the release of
 * empty pages, after most reservations that empty one) settles only the
 * touched pages whose emptiness changed, and a page leaving its pool
 * leaves the touched list alone: the others stay touched.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_OCCUPANCY_H
#define RELO_OCCUPANCY_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/page.h"
#include "relo.h"

struct relo_pool;

#define RELO_OCC_CLASSES 256u                  /* classes of live bytes up to 2^64 */
#define RELO_OCC_LISTS (2u * RELO_OCC_CLASSES) /* list 2c: class c, sparse; 2c + 1: the rest */
#define RELO_OCC_WORDS (RELO_OCC_LISTS / 64u)
#define RELO_OCC_TOUCHED_MAX 32u /* touched pages waiting to be settled */

/* page->occ_list: 0 not indexed (not a sliced page, or taken out), 1 the
 * empty list, 2 + i list i of the classes. */
#define RELO_OCC_NONE 0u
#define RELO_OCC_EMPTY 1u

typedef struct relo_occupancy {
    relo_page **lists;               /* RELO_OCC_LISTS heads, allocated with the first page */
    uint64_t bitmap[RELO_OCC_WORDS]; /* which lists hold pages */
    relo_page *empty;                /* pages with no occupied slice */
    relo_page *dirty;                /* pages touched since they were last settled,
                                       oldest first, through occ_dirty_next (and back
                                       through occ_dirty_prev) */
    relo_page *dirty_tail;           /* the newest of them */
    uint32_t dirty_count;            /* how many (at most RELO_OCC_TOUCHED_MAX) */
    uint64_t room;                   /* free bytes of the pages that serve, as the
                                       pages were when last settled */
    uint64_t plan_visits;            /* pages compaction planning took from the lists (tests) */
    uint64_t empty_visits;           /* pages the release of empty pages took from its list (tests) */
} relo_occupancy;

/** The class of a page with live bytes; classes grow with live bytes. */
static inline uint32_t relo__occupancy_class(uint64_t live)
{
    if (live < 4) return (uint32_t)live;
    uint32_t fl = relo__log2(live);
    return (fl - 1u) * 4u + (uint32_t)((live >> (fl - 2u)) & 3u);
}

/** Whether a page with occupied_bytes of size is one a reclaim may empty:
 *  its free room is at least half what it holds. */
static inline bool relo__occupancy_sparse(uint64_t size, uint64_t occupied_bytes)
{
    return size - occupied_bytes >= occupied_bytes / 2;
}

/** Allocates the list heads (once; again does nothing). RELO_OK or
 *  RELO_ERR_HOST_MEMORY (nothing changed). */
relo_status relo__occupancy_init(relo_occupancy *occ);

/** Frees the list heads; every page must be out already (room 0). */
void relo__occupancy_destroy(relo_occupancy *occ);

/** Marks an untouched page as touched (relo__occupancy_touch), settling
 *  the oldest touched page when RELO_OCC_TOUCHED_MAX are waiting. */
void relo__occupancy_mark(relo_occupancy *occ, relo_page *page);

/** Notes that page's occupied, occupied_bytes, live_size, guards or fence
 *  changed: it will be put in the list its counters say, its free bytes
 *  counted in the room while it serves. Does nothing for a pool without
 *  an index (not sliced). O(1), never fails. */
static inline void relo__occupancy_touch(relo_occupancy *occ, relo_page *page)
{
    if (page->occ_dirty || !occ->lists) return;
    relo__occupancy_mark(occ, page);
}


/** Free bytes of the pages of pool that serve (no guard, no fence), with
 *  the index settled first: the one way to read the room. */
uint64_t relo__occupancy_room(struct relo_pool *pool);

/** Takes page out of the index (it leaves its pool); the other touched
 *  pages stay touched. */
void relo__occupancy_remove(struct relo_pool *pool, relo_page *page);

/** The first class at or after from with a page in a list the caller
 *  wants: sparse pages only, or every page; RELO_OCC_CLASSES when none.
 *  The lists are as the pages were at the last settle: a caller that
 *  changes pages after it settles checks each page it takes. */
uint32_t relo__occupancy_next_class(const relo_occupancy *occ, uint32_t from, bool sparse_only);

/** The first page of list (2 * class + !sparse); NULL when empty. The
 *  list runs through page->occ_next. */
static inline relo_page *relo__occupancy_list(const relo_occupancy *occ, uint32_t cls, bool sparse)
{
    return occ->lists[2u * cls + (sparse ? 0u : 1u)];
}

/** Pages the inline part of a relo_page_list holds before it needs the heap. */
#define RELO_PAGE_LIST_INLINE 16u

/** A list of pages kept in the caller's frame while it is short. */
typedef struct relo_page_list {
    relo_page **pages; /* inline, or from the heap when longer */
    uint32_t count;
    relo_page *inline_pages[RELO_PAGE_LIST_INLINE];
} relo_page_list;

/** Frees a list's heap part, if any. */
void relo__page_list_free(relo_page_list *list);

/** Takes the page of the highest position (page->index) out of a list
 *  that relo__occupancy_empty_pages filled (a max-heap by position), or
 *  returns NULL when none is left. Giving each page back before the next
 *  is taken leaves the positions of the rest as they were: a release
 *  moves the last page, higher than all of them, into its hole. */
relo_page *relo__page_list_pop(relo_page_list *list);

/** Brings the empty list up to date (settling the touched pages whose
 *  emptiness changed, and only those), then lists the empty pages of a
 *  sliced pool that nothing holds (no guard, not pending, no fence, no
 *  transfer) in *out (free it with relo__page_list_free), to be taken
 *  with relo__page_list_pop, highest position first: the order of a walk
 *  down every page, so that giving them back in it leaves each page that
 *  stays where that walk would. Returns false when host memory ran out
 *  (the list is empty then). */
bool relo__occupancy_empty_pages(struct relo_pool *pool, relo_page_list *out);


/** Checks the index against the pool's pages: each page listed once, in
 *  the list its counters say unless it is marked as touched, the marks,
 *  the bitmap, and the room. Changes nothing. */
bool relo__occupancy_check(const struct relo_pool *pool, const char **why);

#endif /* RELO_OCCUPANCY_H */
