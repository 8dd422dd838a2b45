/*
 * mem/free_index.c — the free-slice index of a sliced pool (see mem/free_index.h):
 * size classes with two-level bitmaps, or the address treap of
 * mem/free_tree.c. Class lists link through the slice's left (previous) and
 * right (next) fields, which the treap uses for its children: a pool has
 * one rule, so a slice is in one structure or the other.
 */
#include "mem/free_index.h"

#include <stddef.h>
#include <string.h>

#include "base/hostmem.h"

/* How many slices of one class a search compares before it settles. Among
 * slices of one length the lowest address wins, as in the size-ordered
 * tree this index replaced: stopping at the first exact fit instead made
 * transformer_train_growing's fit 2 % worse, while eight left every
 * shipped trace's fit as it was. */
#define SCAN_LIMIT 8u

static uint32_t lsb64(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_ctzll(v);
#else
    uint32_t r = 0;
    while (!(v & 1)) {
        v >>= 1;
        r++;
    }
    return r;
#endif
}

relo_status relo__free_index_init(relo_free_index *index, bool by_size, uint64_t max_length)
{
    if (by_size && index->bins) {
        /* Already set up; a longer slice than planned needs more levels. */
        uint32_t fl, sl;
        relo__free_index_class(max_length ? max_length : 1, &fl, &sl);
        if (fl < index->fl_count) return RELO_OK;
        uint32_t count = fl + 1;
        relo_slice **bins = relo__realloc(index->bins, (size_t)count * RELO_FREE_SL_COUNT * sizeof *bins);
        if (!bins) return RELO_ERR_HOST_MEMORY;
        index->bins = bins;
        uint32_t *sl_bitmap = relo__realloc(index->sl_bitmap, count * sizeof *sl_bitmap);
        if (!sl_bitmap) return RELO_ERR_HOST_MEMORY;
        index->sl_bitmap = sl_bitmap;
        memset(bins + (size_t)index->fl_count * RELO_FREE_SL_COUNT, 0,
               (size_t)(count - index->fl_count) * RELO_FREE_SL_COUNT * sizeof *bins);
        memset(sl_bitmap + index->fl_count, 0, (count - index->fl_count) * sizeof *sl_bitmap);
        index->fl_count = count;
        return RELO_OK;
    }
    if (!by_size) {
        if (!index->path) {
            index->path = relo__malloc(RELO_FREE_PATH_MAX * sizeof *index->path);
            if (!index->path) return RELO_ERR_HOST_MEMORY;
            index->path_len = 0;
        }
        index->by_size = false;
        return RELO_OK;
    }
    uint32_t fl, sl;
    relo__free_index_class(max_length ? max_length : 1, &fl, &sl);
    uint32_t count = fl + 1;
    relo_slice **bins = relo__calloc((size_t)count * RELO_FREE_SL_COUNT * sizeof *bins);
    uint32_t *sl_bitmap = relo__calloc(count * sizeof *sl_bitmap);
    if (!bins || !sl_bitmap) {
        relo__free(bins);
        relo__free(sl_bitmap);
        return RELO_ERR_HOST_MEMORY;
    }
    index->by_size = true;
    index->bins = bins;
    index->sl_bitmap = sl_bitmap;
    index->fl_bitmap = 0;
    index->fl_count = count;
    return RELO_OK;
}

void relo__free_index_destroy(relo_free_index *index)
{
    relo__free(index->bins);
    relo__free(index->sl_bitmap);
    relo__free(index->path);
    memset(index, 0, sizeof *index);
}

void relo__free_index_refresh_by_address(relo_free_index *index, relo_slice *slice)
{
    RELO_ASSERT(!index->by_size);
    /* The slice the last search found climbs the path kept for it; any
     * other may have grown past the hint, and the path goes with it. */
    relo__free_tree_refresh(index->root, slice, index->path, &index->path_len);
}

/* a before b in address order: lower page, then lower offset. */
static bool lower(const relo_slice *a, const relo_slice *b)
{
    if (a->page->order != b->page->order) return a->page->order < b->page->order;
    return a->offset < b->offset;
}

/* The shortest slice ≥ length among the first `limit` of a list (lowest
 * address among equals); *rest says where the scan stopped. With limit
 * UINT32_MAX it stops at the first fit. */
static relo_slice *scan(relo_slice *s, uint64_t length, uint32_t limit, relo_slice **rest)
{
    relo_slice *best = NULL;
    for (uint32_t n = 0; s && n < limit; s = s->right, n++) {
        if (s->length < length) continue;
        if (!best || s->length < best->length || (s->length == best->length && lower(s, best))) best = s;
        if (limit == UINT32_MAX) break;
    }
    *rest = s;
    return best;
}

relo_slice *relo__free_index_find(relo_free_index *index, uint64_t length)
{
    if (!index->by_size) {
        if (index->path_len && length >= index->hint_length) {
            relo_slice *last = index->path[index->path_len - 1];
            if (last->length >= length) return last; /* nothing before it fits */
        }
        index->hint_length = length;
        return relo__free_tree_first_fit(index->root, length, index->path, &index->path_len);
    }
    if (!index->fl_bitmap) return NULL;
    uint32_t fl, sl;
    relo__free_index_class(length, &fl, &sl);
    relo_slice *rest = NULL, *found = NULL;
    if (fl < index->fl_count) {
        /* The request's own class holds lengths on both sides of it. */
        found = scan(index->bins[fl * RELO_FREE_SL_COUNT + sl], length, SCAN_LIMIT, &rest);
        if (found) return found;
        /* Any class above holds only slices that fit: the first one found
         * by the bitmaps is the smallest. */
        uint32_t above = sl + 1 < RELO_FREE_SL_COUNT ? index->sl_bitmap[fl] & (~0u << (sl + 1)) : 0;
        if (!above) {
            uint64_t levels = fl + 1 < 64 ? index->fl_bitmap & (~(uint64_t)0 << (fl + 1)) : 0;
            if (levels) {
                fl = lsb64(levels);
                above = index->sl_bitmap[fl];
            }
        }
        if (above) {
            relo_slice *head = index->bins[fl * RELO_FREE_SL_COUNT + lsb64(above)], *unused;
            /* A class of one slice, as most are: that slice, unscanned. */
            if (!head->right) return head;
            return scan(head, length, SCAN_LIMIT, &unused);
        }
    }
    /* Nothing above: a fit, if any, is further down the request's class. */
    return rest ? scan(rest, length, UINT32_MAX, &rest) : NULL;
}

bool relo__free_index_check(const relo_free_index *index, uint64_t *count, const char **why)
{
#define FAIL(msg)     \
    do {              \
        *why = msg;   \
        return false; \
    } while (0)
    *count = 0;
    if (!index->by_size) {
        if (!relo__free_tree_check(index->root, count)) FAIL("free tree is malformed");
        if (index->path_len > RELO_FREE_PATH_MAX || (index->path_len && !index->path))
            FAIL("free tree's kept path is too long");
        for (uint32_t i = 0; i < index->path_len; i++) {
            const relo_slice *s = index->path[i];
            bool linked = i == 0 ? s == index->root
                                 : s == index->path[i - 1]->left || s == index->path[i - 1]->right;
            if (!linked) FAIL("free tree's kept path is not a path from its root");
        }
        if (index->path_len &&
            relo__free_tree_fits_before(index->root, index->path[index->path_len - 1], index->hint_length))
            FAIL("free tree's hint is wrong: a slice before the last fit is as long");
        return true;
    }
    if (index->fl_count > RELO_FREE_FL_MAX) FAIL("free index has too many levels");
    for (uint32_t fl = 0; fl < index->fl_count; fl++) {
        bool level_used = false;
        for (uint32_t sl = 0; sl < RELO_FREE_SL_COUNT; sl++) {
            const relo_slice *prev = NULL;
            const relo_slice *s = index->bins[fl * RELO_FREE_SL_COUNT + sl];
            bool bit = (index->sl_bitmap[fl] >> sl) & 1u;
            if (bit != (s != NULL)) FAIL("free index class bit disagrees with its list");
            level_used = level_used || s;
            for (; s; prev = s, s = s->right) {
                uint32_t f, c;
                relo__free_index_class(s->length, &f, &c);
                if (f != fl || c != sl) FAIL("free slice is in the wrong size class");
                if (s->bin != fl * RELO_FREE_SL_COUNT + sl) FAIL("free slice's noted class is not its list");
                if (s->state != RELO_SLICE_FREE) FAIL("free index holds a slice that is not free");
                if (s->left != prev) FAIL("free index list links disagree");
                (*count)++;
            }
        }
        if (((index->fl_bitmap >> fl) & 1u) != level_used)
            FAIL("free index level bit disagrees with its classes");
    }
    if (index->fl_count < 64 && index->fl_bitmap >> index->fl_count)
        FAIL("free index level bit past its levels");
    return true;
#undef FAIL
}
