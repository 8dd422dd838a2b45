/*
 * torch_classic.c — PyTorch's caching allocator without expandable
 * segments, as a baseline model (rules in docs/baselines.md).
 *
 * Each (stream, pool) keeps its free blocks ordered by (size, address);
 * a request takes the smallest that fits, or a new segment. Segments are
 * never resized: a segment is returned to the device only when it is
 * wholly free and a new segment would exceed the capacity. Model addresses
 * grow with each new segment, so ties between equal free blocks go to the
 * older segment, then the lower offset.
 */
#include "torch_classic.h"

#include <stdlib.h>

#include "sorted_index.h"
#include "torch_block.h"
#include "torch_common.h"

typedef struct classic {
    torch_blocks blocks;
    sorted_index *free; /* per pool: free blocks by (size, address) */
    uint32_t pool_count;
    uint32_t *block_of; /* per allocation number: its block */
    uint32_t alloc_count;
    uint64_t capacity; /* 0 = unlimited */
    uint64_t reserved;
    uint64_t peak;
    uint64_t next_base; /* model address of the next segment */
    uint32_t segments_made;
    uint64_t segments_freed;
} classic;

/* The size of the segment a rounded request opens. */
static uint64_t segment_size(uint64_t rounded)
{
    if (torch_is_small(rounded)) return 2 * TORCH_MIB;
    if (rounded < 10 * TORCH_MIB) return 20 * TORCH_MIB;
    return (rounded + 2 * TORCH_MIB - 1) / (2 * TORCH_MIB) * (2 * TORCH_MIB);
}

static void destroy(void *model)
{
    classic *m = model;
    if (!m) return;
    for (uint32_t p = 0; p < m->pool_count; p++) sorted_index_free(&m->free[p]);
    free(m->free);
    free(m->block_of);
    torch_blocks_free(&m->blocks);
    free(m);
}

static void *create(const trace *t, uint64_t capacity)
{
    classic *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    torch_blocks_init(&m->blocks);
    m->capacity = capacity;
    m->pool_count = (t->stream_count ? t->stream_count : 1) * 2u;
    m->alloc_count = t->alloc_count;
    m->free = calloc(m->pool_count, sizeof *m->free);
    m->block_of = calloc(t->alloc_count ? t->alloc_count : 1, sizeof *m->block_of);
    if (!m->free || !m->block_of) {
        destroy(m);
        return NULL;
    }
    return m;
}

/* Returns every wholly free segment of every pool to the device. */
static void release_cached(classic *m)
{
    for (uint32_t p = 0; p < m->pool_count; p++) {
        sorted_index *l = &m->free[p];
        size_t kept = 0;
        for (size_t i = 0; i < l->count; i++) {
            uint32_t b = l->v[i].id;
            const torch_block *x = &m->blocks.v[b];
            if (x->prev == TORCH_NONE && x->next == TORCH_NONE) {
                m->reserved -= x->size;
                m->segments_freed++;
                torch_blocks_release(&m->blocks, b);
            } else {
                l->v[kept++] = l->v[i];
            }
        }
        l->count = kept;
    }
}

/* A new segment for pool p big enough for `rounded`; TORCH_NONE with *step set when refused. */
static uint32_t new_segment(classic *m, uint32_t p, uint64_t rounded, baseline_step *step)
{
    uint64_t seg = segment_size(rounded);
    if (m->capacity && seg > m->capacity - m->reserved) {
        release_cached(m);
        if (seg > m->capacity - m->reserved) {
            *step = BASELINE_STEP_OUT_OF_MEMORY;
            return TORCH_NONE;
        }
    }
    if (m->next_base > UINT64_MAX - seg) {
        *step = BASELINE_STEP_FAILED; /* model addresses ran out */
        return TORCH_NONE;
    }
    uint32_t b = torch_blocks_new(&m->blocks, m->next_base, seg, TORCH_BLOCK_FREE, m->segments_made, p);
    if (b == TORCH_NONE) {
        *step = BASELINE_STEP_FAILED;
        return TORCH_NONE;
    }
    m->next_base += seg;
    m->segments_made++;
    m->reserved += seg;
    if (m->reserved > m->peak) m->peak = m->reserved;
    return b;
}

static baseline_step alloc(void *model, uint32_t a, uint16_t stream, uint64_t size)
{
    classic *m = model;
    if (size > BASELINE_MAX_REQUEST) return BASELINE_STEP_OUT_OF_MEMORY;
    if (a >= m->alloc_count) return BASELINE_STEP_FAILED;
    uint64_t rs = torch_round_size(size);
    bool small = torch_is_small(rs);
    uint32_t p = torch_pool(stream, small);
    sorted_index *l = &m->free[p];
    size_t j = sorted_index_lower_bound(l, rs, 0);
    uint32_t b;
    if (j < l->count) {
        b = l->v[j].id;
        sorted_index_remove_at(l, j);
    } else {
        baseline_step step = BASELINE_STEP_OK;
        b = new_segment(m, p, rs, &step);
        if (b == TORCH_NONE) return step;
    }
    /* Split off the rest when it is worth keeping: any 512 B in the small
     * pool, more than 1 MiB in the large one. */
    uint64_t rest = m->blocks.v[b].size - rs;
    if (small ? rest >= TORCH_MIN_BLOCK : rest > TORCH_MIB) {
        uint32_t r = torch_blocks_split(&m->blocks, b, rs, TORCH_BLOCK_FREE);
        if (r == TORCH_NONE || !torch_blocks_file(&m->blocks, m->free, r)) return BASELINE_STEP_FAILED;
    }
    m->blocks.v[b].state = TORCH_BLOCK_USED;
    m->block_of[a] = b;
    return BASELINE_STEP_OK;
}

static baseline_step release(void *model, uint32_t a)
{
    classic *m = model;
    if (a >= m->alloc_count) return BASELINE_STEP_FAILED;
    uint32_t b = m->block_of[a];
    m->blocks.v[b].state = TORCH_BLOCK_FREE;
    torch_blocks_merge(&m->blocks, m->free, b);
    return torch_blocks_file(&m->blocks, m->free, b) ? BASELINE_STEP_OK : BASELINE_STEP_FAILED;
}

static uint64_t reserved(const void *model)
{
    return ((const classic *)model)->reserved;
}

static uint64_t peak_reserved(const void *model)
{
    return ((const classic *)model)->peak;
}

/* One cudaMalloc per segment made, one cudaFree per segment released. */
static void device_calls(const void *model, uint64_t *allocs, uint64_t *frees)
{
    const classic *m = model;
    *allocs = m->segments_made;
    *frees = m->segments_freed;
}

const baseline_model_ops torch_classic_ops = {create,        alloc,        release, reserved,
                                              peak_reserved, device_calls, destroy};
