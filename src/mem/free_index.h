/*
 * mem/free_index.h — the free slices of one sliced pool, indexed for the
 * pool's placement rule:
 *   - by size (best fit, the packed placement): segregated size classes with
 *     two-level bitmaps, as TLSF has them. The first level is the power of
 *     two below a length, the second splits it into RELO_FREE_SL_COUNT
 *     equal steps; each class is a doubly linked list of its slices, and
 *     one bit per class (and one per power of two) says which lists hold
 *     any. Insert and remove are O(1); a search looks a few slices into
 *     the request's own class, then takes the first non-empty class above
 *     it, found with two bit scans. No tree, no walk over the pool.
 *   - by address (address-ordered first fit, the adaptive placement's small and
 *     arena pools, whose placement counts on the lowest page
 *     and lowest address that fits): the treap of mem/free_tree.c (below), the one
 *     structure that answers "lowest address with room for n" in
 *     O(log n).
 * Free neighbours are never found through the index: every page keeps its
 * slices in an address-ordered list (mem/page.h), which is where merging looks.
 * A slice's offset and length change while it is indexed only by a carve
 * or a merge, which calls relo__free_index_refresh at once.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_FREE_INDEX_H
#define RELO_FREE_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/page.h"
#include "relo.h"
#include "base/util.h"

#define RELO_FREE_SL_LOG 5u /* second level: 2^5 steps */
#define RELO_FREE_SL_COUNT (1u << RELO_FREE_SL_LOG)
/* First levels a uint64_t length needs: a length whose highest bit is bit
 * 63 has first level 63 - RELO_FREE_SL_LOG + 1, so one more than that. */
#define RELO_FREE_FL_MAX (64u - RELO_FREE_SL_LOG + 1u)

/* ---- the address treap (mem/free_tree.c) -----------------------------------
 * The free slices of a first-fit pool in a treap keyed by (page order,
 * offset) and augmented with the largest length in each subtree: the
 * lowest page and lowest address that fits (which keeps later pages empty
 * so they can go back) is one walk down the tree, O(log n) expected. A
 * slice's length changes while it is in the tree only as the refresh
 * below allows. */

/* The longest root-to-slice path a search keeps for the refresh after it
 * (mem/free_index.h); a deeper slice, rare in a treap (expected depth about
 * 2 ln n), is refreshed by the search from the root instead. */
#define RELO_FREE_PATH_MAX 64u

/** Inserts a free slice (its links are overwritten) by the priority it
 *  holds (relo__free_index_insert draws it). */
void relo__free_tree_insert(relo_slice **root, relo_slice *slice);

/** Removes a slice that is in the tree. */
void relo__free_tree_remove(relo_slice **root, relo_slice *slice);

/**
 * Restores the subtree maxima above a slice whose length (and, by address,
 * offset) changed in place without passing any other slice of the tree in
 * its order. Cheaper than a remove and an insert: no rotations, and it
 * stops at the first node whose maximum did not change. When the slice
 * ends the path kept by the last relo__free_tree_first_fit (path, with
 * *path_len nodes, in a tree that has not changed shape since), it climbs
 * that path, comparing no keys; otherwise it walks down from the root and
 * sets *path_len to 0, since the slice may now be a fit before the kept
 * one. path and path_len may be NULL: no path is kept.
 */
void relo__free_tree_refresh(relo_slice *root, relo_slice *slice, relo_slice *const *path,
                             uint32_t *path_len);

/** The lowest-address slice with length ≥ length, or NULL. When path is
 *  not NULL and a slice is found at most RELO_FREE_PATH_MAX nodes deep,
 *  the nodes from the root down to it are stored in path and their count
 *  in *path_len; otherwise *path_len is 0. */
relo_slice *relo__free_tree_first_fit(relo_slice *root, uint64_t length, relo_slice **path,
                                      uint32_t *path_len);


/** Whether a slice before `slice` in address order (slice in the tree)
 *  is length bytes or longer. O(depth). */
bool relo__free_tree_fits_before(const relo_slice *root, const relo_slice *slice, uint64_t length);

/** Checks order, heap and max_length invariants; counts nodes. Returns
 *  false on the first broken one. */
bool relo__free_tree_check(const relo_slice *root, uint64_t *count);

typedef struct relo_free_index {
    bool by_size; /* size classes (best fit) or the address treap */
    /* by address */
    relo_slice *root;
    /* The path from the root to the slice the last search returned, while
     * no insert or remove has changed the tree's shape since (path_len 0:
     * none held). The slice a search returns is usually carved next, and
     * the refresh that follows climbs this path instead of walking down
     * the tree again: on a pool of many pages the nodes of the walk are
     * cache misses, and each key compared reaches its node's page too. */
    relo_slice **path; /* RELO_FREE_PATH_MAX entries, from init */
    uint32_t path_len;
    /* While a path is held, no slice before its end in address order is
     * hint_length bytes or longer (that search found the first fit for
     * hint_length, and carving the found slice, or growing it, keeps
     * this true): a later search for at least hint_length bytes that the
     * same slice still fits is answered without a walk, as runs of
     * reservations and a pass's targets ask. Any other refresh, insert or
     * remove drops the path and with it this. */
    uint64_t hint_length;
    uint32_t rng; /* xorshift32 state: the priority of each slice inserted */
    /* by size: classes of first level f and second level s at
     * bins[f * RELO_FREE_SL_COUNT + s]; fl_count first levels are kept,
     * enough for the longest slice the pool may hold. */
    relo_slice **bins;
    uint32_t *sl_bitmap; /* per first level: which of its classes hold slices */
    uint64_t fl_bitmap;  /* which first levels hold slices */
    uint32_t fl_count;
} relo_free_index;

/**
 * Sets up an empty index. by_size chooses the rule; max_length is the
 * longest slice it will ever hold (by size, the classes are allocated
 * for it; by address, the path a search keeps for its refresh). Returns
 * RELO_OK or RELO_ERR_HOST_MEMORY (nothing allocated).
 * Calling it again on an index set up with the same rule does nothing.
 */
relo_status relo__free_index_init(relo_free_index *index, bool by_size, uint64_t max_length);

/** Frees what init allocated; the index is empty and unset afterwards.
 *  The slices it held are not touched. */
void relo__free_index_destroy(relo_free_index *index);

/**
 * A slice with length ≥ length, or NULL when none is held.
 * By address: the lowest page order and offset that fits. By size: the
 * shortest, then lowest-address, among the first few slices of the
 * request's own class that fit, else among the first few of the smallest
 * non-empty class above it (every slice there fits), else the first fit
 * further down the request's class. Best fit within one class step
 * (1/RELO_FREE_SL_COUNT of the length) in O(1); exact by size when the
 * classes searched hold at most eight slices each or one length.
 */
relo_slice *relo__free_index_find(relo_free_index *index, uint64_t length);

/**
 * Checks the index: by size, that every slice is FREE and in the class its
 * length maps to, that list links agree both ways, and that each bitmap
 * bit is set exactly when its list or level holds slices; by address, the
 * treap's order, heap and maxima. Counts the slices held into *count.
 * Returns false on the first broken invariant and names it through *why.
 */
bool relo__free_index_check(const relo_free_index *index, uint64_t *count, const char **why);

/** relo__free_index_refresh (below) of an index by address: the treap's
 *  maxima above the slice. */
void relo__free_index_refresh_by_address(relo_free_index *index, relo_slice *slice);

/* Insert, remove and the class of a length run on every reservation and
 * release: inline, so they cost no call. */

/** The class (first level, second level) a length belongs to. */
static inline void relo__free_index_class(uint64_t length, uint32_t *fl, uint32_t *sl)
{
    if (length < RELO_FREE_SL_COUNT) {
        /* Below one full step the classes are exact lengths. */
        *fl = 0;
        *sl = (uint32_t)length;
        return;
    }
    uint32_t msb = relo__log2(length);
    *fl = msb - RELO_FREE_SL_LOG + 1u;
    *sl = (uint32_t)(length >> (msb - RELO_FREE_SL_LOG)) - RELO_FREE_SL_COUNT;
}

/* By size: links a FREE slice first in the list of class (fl, sl), the
 * class its length maps to, and raises that class's bits if it was empty. */
static inline void relo__free_index_push(relo_free_index *index, relo_slice *slice, uint32_t fl, uint32_t sl)
{
    RELO_ASSERT(fl < index->fl_count);
    uint32_t bin = fl * RELO_FREE_SL_COUNT + sl;
    relo_slice **head = &index->bins[bin];
    slice->bin = bin;
    slice->left = NULL;
    slice->right = *head;
    if (*head) {
        (*head)->left = slice;
    } else {
        /* The class's first slice: its bits go up. */
        index->sl_bitmap[fl] |= 1u << sl;
        index->fl_bitmap |= (uint64_t)1 << fl;
    }
    *head = slice;
}

/* By size: unlinks an indexed slice from the list of the class it was
 * pushed to (slice->bin, whatever its length is now), and lowers that
 * class's bits if it empties. */
static inline void relo__free_index_unlink(relo_free_index *index, relo_slice *slice)
{
    if (slice->left) {
        slice->left->right = slice->right;
    } else {
        /* The head of its class list, which the push noted in the slice. */
        relo_slice **head = &index->bins[slice->bin];
        RELO_ASSERT(*head == slice);
        *head = slice->right;
        if (!*head) {
            uint32_t fl = slice->bin / RELO_FREE_SL_COUNT, sl = slice->bin % RELO_FREE_SL_COUNT;
            index->sl_bitmap[fl] &= ~(1u << sl);
            if (!index->sl_bitmap[fl]) index->fl_bitmap &= ~((uint64_t)1 << fl);
        }
    }
    if (slice->right) slice->right->left = slice->left;
    slice->left = slice->right = NULL;
}

/** Adds a FREE slice (its index links are overwritten; by address, its
 *  treap priority too). Never fails. */
static inline void relo__free_index_insert(relo_free_index *index, relo_slice *slice)
{
    if (!index->by_size) {
        /* xorshift32, drawn here rather than for every node the slab
         * hands out: treap priorities only need to look random and
         * independent of the keys, and a slice that leaves the treap
         * and comes back may draw a new one. */
        uint32_t x = index->rng ? index->rng : 0x9e3779b9u;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        index->rng = x;
        slice->priority = x;
        index->path_len = 0; /* rotations change the paths */
        relo__free_tree_insert(&index->root, slice);
        return;
    }
    uint32_t fl, sl;
    relo__free_index_class(slice->length, &fl, &sl);
    relo__free_index_push(index, slice, fl, sl);
}

/** Removes a slice that is in the index. Never fails. */
static inline void relo__free_index_remove(relo_free_index *index, relo_slice *slice)
{
    if (!index->by_size) {
        index->path_len = 0;
        relo__free_tree_remove(&index->root, slice);
        return;
    }
    relo__free_index_unlink(index, slice);
}

/**
 * Restores what the index keeps about an indexed slice whose offset and
 * length changed in place (carving its front, merging a neighbour into
 * it), leaving it where a remove and an insert would. By address only
 * when the slice passed no other indexed slice in address order: the
 * treap's maxima are refreshed. By size the slice goes first in the list
 * of the class its new length maps to; the class is worked out once, and
 * a slice that stays first of the class it was in is not touched.
 */
static inline void relo__free_index_refresh(relo_free_index *index, relo_slice *slice)
{
    if (!index->by_size) {
        relo__free_index_refresh_by_address(index, slice);
        return;
    }
    uint32_t fl, sl;
    relo__free_index_class(slice->length, &fl, &sl);
    if (fl * RELO_FREE_SL_COUNT + sl == slice->bin && !slice->left) return;
    relo__free_index_unlink(index, slice);
    relo__free_index_push(index, slice, fl, sl);
}

#endif /* RELO_FREE_INDEX_H */
