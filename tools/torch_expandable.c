/*
 * torch_expandable.c — PyTorch's caching allocator with expandable
 * segments, as a baseline model (rules in docs/baselines.md).
 *
 * A segment is a range of model addresses sized from the device memory,
 * cut into pages (2 MiB small pool, 20 MiB large pool). Blocks are used,
 * free (mapped, cached) or unmapped. Reserved bytes are the mapped ones;
 * the capacity bounds them. Each (stream, pool) keeps its free blocks by
 * (size, address) and its unmapped blocks by address.
 */
#include "torch_expandable.h"

#include <stdlib.h>

#include "sorted_index.h"
#include "torch_block.h"
#include "torch_common.h"

/* The device memory assumed when the capacity is unlimited (or larger). */
#define UNLIMITED_MEMORY (UINT64_C(1) << 50)
#define SMALL_PAGE (2 * TORCH_MIB)
#define LARGE_PAGE (20 * TORCH_MIB)

typedef struct expandable {
    torch_blocks blocks;
    sorted_index *free;     /* per pool: free mapped blocks by (size, address) */
    sorted_index *unmapped; /* per pool: unmapped blocks by address */
    uint32_t pool_count;
    uint32_t *block_of; /* per allocation number: its block */
    uint32_t alloc_count;
    uint64_t *segment_base; /* per segment number: its first address */
    uint32_t segment_count;
    uint32_t segment_capacity;
    uint32_t *scratch; /* release_cached's copy of a free list */
    size_t scratch_capacity;
    uint64_t capacity; /* 0 = unlimited */
    uint64_t memory;   /* device memory the segment span is sized from */
    uint64_t reserved; /* mapped bytes */
    uint64_t peak;
    uint64_t next_base;
    uint64_t pages_mapped; /* device calls: one map per page */
    uint64_t pages_unmapped;
} expandable;

/* Map results: mapped, refused by the capacity, or host memory gone. */
enum { MAP_OK = 1, MAP_REFUSED = 0, MAP_FAILED = -1 };

static uint64_t page_of(uint32_t pool)
{
    return torch_pool_is_small(pool) ? SMALL_PAGE : LARGE_PAGE;
}

static void destroy(void *model)
{
    expandable *m = model;
    if (!m) return;
    for (uint32_t p = 0; m->free && p < m->pool_count; p++) sorted_index_free(&m->free[p]);
    for (uint32_t p = 0; m->unmapped && p < m->pool_count; p++) sorted_index_free(&m->unmapped[p]);
    free(m->free);
    free(m->unmapped);
    free(m->block_of);
    free(m->segment_base);
    free(m->scratch);
    torch_blocks_free(&m->blocks);
    free(m);
}

static void *create(const trace *t, uint64_t capacity)
{
    expandable *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    torch_blocks_init(&m->blocks);
    m->capacity = capacity;
    m->memory = capacity && capacity < UNLIMITED_MEMORY ? capacity : UNLIMITED_MEMORY;
    m->pool_count = (t->stream_count ? t->stream_count : 1) * 2u;
    m->alloc_count = t->alloc_count;
    m->free = calloc(m->pool_count, sizeof *m->free);
    m->unmapped = calloc(m->pool_count, sizeof *m->unmapped);
    m->block_of = calloc(t->alloc_count ? t->alloc_count : 1, sizeof *m->block_of);
    if (!m->free || !m->unmapped || !m->block_of) {
        destroy(m);
        return NULL;
    }
    return m;
}

static bool add_free(expandable *m, uint32_t b)
{
    return torch_blocks_file(&m->blocks, m->free, b);
}

static void remove_free(expandable *m, uint32_t b)
{
    torch_blocks_unfile(&m->blocks, m->free, b);
}

static bool add_unmapped(expandable *m, uint32_t b)
{
    return torch_blocks_file(&m->blocks, m->unmapped, b);
}

static void remove_unmapped(expandable *m, uint32_t b)
{
    torch_blocks_unfile(&m->blocks, m->unmapped, b);
}

static bool is(const expandable *m, uint32_t b, torch_block_state s)
{
    return b != TORCH_NONE && m->blocks.v[b].state == s;
}

/* A new segment for pool p: one unmapped block spanning the device memory
 * and an eighth more, in whole pages. TORCH_NONE when host memory or model
 * addresses ran out. */
static uint32_t new_segment(expandable *m, uint32_t p)
{
    uint64_t page = page_of(p);
    uint64_t span = (m->memory + m->memory / 8 + page - 1) / page * page;
    if (m->next_base > UINT64_MAX - span - LARGE_PAGE) return TORCH_NONE;
    if (m->segment_count == m->segment_capacity) {
        uint32_t cap = m->segment_capacity ? m->segment_capacity * 2 : 16;
        if (cap <= m->segment_capacity) return TORCH_NONE;
        uint64_t *grown = realloc(m->segment_base, (size_t)cap * sizeof *grown);
        if (!grown) return TORCH_NONE;
        m->segment_base = grown;
        m->segment_capacity = cap;
    }
    uint32_t b = torch_blocks_new(&m->blocks, m->next_base, span, TORCH_BLOCK_UNMAPPED, m->segment_count, p);
    if (b == TORCH_NONE || !add_unmapped(m, b)) return TORCH_NONE;
    m->segment_base[m->segment_count++] = m->next_base;
    /* Distinct ranges at increasing addresses, a gap between them. */
    m->next_base += span + LARGE_PAGE;
    return b;
}

/* Maps whole pages for the first `nbytes` of unmapped block b; the mapped
 * part merges with free neighbours and keeps index b. */
static int map_block(expandable *m, uint32_t b, uint64_t nbytes)
{
    uint64_t page = page_of(m->blocks.v[b].pool);
    uint64_t mb = (nbytes + page - 1) / page * page;
    if (m->capacity && mb > m->capacity - m->reserved) return MAP_REFUSED;
    remove_unmapped(m, b);
    m->blocks.v[b].state = TORCH_BLOCK_FREE;
    if (mb < m->blocks.v[b].size) {
        uint32_t r = torch_blocks_split(&m->blocks, b, mb, TORCH_BLOCK_UNMAPPED);
        if (r == TORCH_NONE || !add_unmapped(m, r)) return MAP_FAILED;
    }
    torch_blocks_merge(&m->blocks, m->free, b);
    if (!add_free(m, b)) return MAP_FAILED;
    m->pages_mapped += mb / page;
    m->reserved += mb;
    if (m->reserved > m->peak) m->peak = m->reserved;
    return MAP_OK;
}

/* Where growth for `rs` bytes starts: the lowest unmapped block (or the
 * free block right before it) whose run of free and unmapped blocks adds
 * up to rs; else a new segment's single block. */
static uint32_t find_expandable(expandable *m, uint32_t p, uint64_t rs)
{
    const sorted_index *u = &m->unmapped[p];
    for (size_t i = 0; i < u->count; i++) {
        uint32_t c = u->v[i].id;
        if (is(m, m->blocks.v[c].prev, TORCH_BLOCK_FREE)) c = m->blocks.v[c].prev;
        uint64_t got = 0;
        for (uint32_t x = c; got < rs && x != TORCH_NONE && m->blocks.v[x].state != TORCH_BLOCK_USED;
             x = m->blocks.v[x].next)
            got += m->blocks.v[x].size;
        if (got >= rs) return c;
    }
    return new_segment(m, p);
}

/* Maps enough pages for a free block of at least rs bytes and takes it out
 * of the free list. Returns its index, or TORCH_NONE with *step saying why. */
static uint32_t grow(expandable *m, uint32_t p, uint64_t rs, baseline_step *step)
{
    *step = BASELINE_STEP_FAILED;
    uint32_t c = find_expandable(m, p, rs);
    if (c == TORCH_NONE) return TORCH_NONE;
    int mapped = MAP_OK;
    if (m->blocks.v[c].state == TORCH_BLOCK_UNMAPPED) {
        uint64_t size = m->blocks.v[c].size;
        mapped = map_block(m, c, size < rs ? size : rs);
    }
    while (mapped == MAP_OK && m->blocks.v[c].size < rs) {
        uint32_t n = m->blocks.v[c].next;
        if (!is(m, n, TORCH_BLOCK_UNMAPPED)) {
            /* The request outgrows the segment's address range. */
            *step = BASELINE_STEP_OUT_OF_MEMORY;
            return TORCH_NONE;
        }
        uint64_t want = rs - m->blocks.v[c].size, size = m->blocks.v[n].size;
        mapped = map_block(m, n, want < size ? want : size);
        c = n; /* n absorbed c */
    }
    if (mapped != MAP_OK) {
        *step = mapped == MAP_REFUSED ? BASELINE_STEP_OUT_OF_MEMORY : BASELINE_STEP_FAILED;
        return TORCH_NONE;
    }
    remove_free(m, c);
    *step = BASELINE_STEP_OK;
    return c;
}

/* Unmaps the whole pages inside free block b; partial pages at either end
 * stay free blocks. A segment left as one unmapped block is destroyed. */
static bool unmap_block(expandable *m, uint32_t b)
{
    torch_block x = m->blocks.v[b];
    uint64_t page = page_of(x.pool), base = m->segment_base[x.segment];
    uint64_t rel = x.addr - base;
    uint64_t first = (rel + page - 1) / page, last = (rel + x.size) / page;
    if (first >= last) return true;
    remove_free(m, b);
    uint64_t ustart = base + first * page, usize = (last - first) * page;
    uint64_t before = ustart - x.addr, after = x.addr + x.size - (ustart + usize);
    /* The partial pages at either end stay free, as blocks of their own. */
    for (int above = 0; above < 2; above++) {
        uint64_t n = above ? after : before, at = above ? ustart + usize : x.addr;
        if (n == 0) continue;
        uint32_t y = torch_blocks_insert(&m->blocks, b, above, at, n, TORCH_BLOCK_FREE);
        if (y == TORCH_NONE || !add_free(m, y)) return false;
    }
    torch_block *bb = &m->blocks.v[b];
    bb->addr = ustart;
    bb->size = usize;
    bb->state = TORCH_BLOCK_UNMAPPED;
    torch_blocks_merge(&m->blocks, m->unmapped, b);
    if (!add_unmapped(m, b)) return false;
    m->pages_unmapped += usize / page;
    m->reserved -= usize;
    if (m->blocks.v[b].prev == TORCH_NONE && m->blocks.v[b].next == TORCH_NONE) {
        remove_unmapped(m, b);
        torch_blocks_release(&m->blocks, b);
    }
    return true;
}

/* Unmaps every free page of every pool and stream, large pools first. */
static bool release_cached(expandable *m)
{
    for (uint32_t small = 0; small < 2; small++) {
        for (uint32_t p = small; p < m->pool_count; p += 2) {
            sorted_index *l = &m->free[p];
            if (l->count > m->scratch_capacity) {
                uint32_t *grown = realloc(m->scratch, l->count * sizeof *grown);
                if (!grown) return false;
                m->scratch = grown;
                m->scratch_capacity = l->count;
            }
            size_t count = l->count;
            for (size_t i = 0; i < count; i++) m->scratch[i] = l->v[i].id;
            for (size_t i = 0; i < count; i++)
                if (!unmap_block(m, m->scratch[i])) return false;
        }
    }
    return true;
}

/* A free block's size plus the unmapped block right after it, if any. */
static uint64_t expandable_size(const expandable *m, uint32_t b)
{
    const torch_block *x = &m->blocks.v[b];
    return x->size + (is(m, x->next, TORCH_BLOCK_UNMAPPED) ? m->blocks.v[x->next].size : 0);
}

static baseline_step alloc(void *model, uint32_t a, uint16_t stream, uint64_t size)
{
    expandable *m = model;
    if (size > BASELINE_MAX_REQUEST) return BASELINE_STEP_OUT_OF_MEMORY;
    if (a >= m->alloc_count) return BASELINE_STEP_FAILED;
    uint64_t rs = torch_round_size(size);
    uint32_t p = torch_pool(stream, torch_is_small(rs));
    sorted_index *l = &m->free[p];
    size_t j = sorted_index_lower_bound(l, rs, 0);
    uint32_t b;
    if (j < l->count) {
        /* Best fit, but a block at a segment's mapped end is passed over
         * for the next larger one when that one could grow less. */
        while (j + 1 < l->count && expandable_size(m, l->v[j + 1].id) < expandable_size(m, l->v[j].id)) j++;
        b = l->v[j].id;
        sorted_index_remove_at(l, j);
    } else {
        baseline_step step;
        b = grow(m, p, rs, &step);
        if (b == TORCH_NONE && step == BASELINE_STEP_OUT_OF_MEMORY) {
            if (!release_cached(m)) return BASELINE_STEP_FAILED;
            b = grow(m, p, rs, &step);
        }
        if (b == TORCH_NONE) return step;
    }
    if (m->blocks.v[b].size - rs >= TORCH_MIN_BLOCK) {
        uint32_t r = torch_blocks_split(&m->blocks, b, rs, TORCH_BLOCK_FREE);
        if (r == TORCH_NONE || !add_free(m, r)) return BASELINE_STEP_FAILED;
    }
    m->blocks.v[b].state = TORCH_BLOCK_USED;
    m->block_of[a] = b;
    return BASELINE_STEP_OK;
}

static baseline_step release(void *model, uint32_t a)
{
    expandable *m = model;
    if (a >= m->alloc_count) return BASELINE_STEP_FAILED;
    uint32_t b = m->block_of[a];
    m->blocks.v[b].state = TORCH_BLOCK_FREE;
    torch_blocks_merge(&m->blocks, m->free, b);
    return add_free(m, b) ? BASELINE_STEP_OK : BASELINE_STEP_FAILED;
}

static uint64_t reserved(const void *model)
{
    return ((const expandable *)model)->reserved;
}

static uint64_t peak_reserved(const void *model)
{
    return ((const expandable *)model)->peak;
}

/* One physical allocation and map per page, one unmap and release per page. */
static void device_calls(const void *model, uint64_t *allocs, uint64_t *frees)
{
    const expandable *m = model;
    *allocs = m->pages_mapped;
    *frees = m->pages_unmapped;
}

const baseline_model_ops torch_expandable_ops = {create,        alloc,        release, reserved,
                                                 peak_reserved, device_calls, destroy};
