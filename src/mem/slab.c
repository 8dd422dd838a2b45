/*
 * mem/slab.c — the slab of slice nodes and of page records (see mem/page.h),
 * both carved from chunks: a slice or a page that comes seldom costs a
 * trip to malloc, and one that goes never does. Pages themselves (their buffers, their accounting) are made and
 * given back by the pools (pool/pool.c).
 */
#include "mem/page.h"

#include <string.h>

#include "base/hostmem.h"

#define SLAB_CHUNK 256u
/* Page records per chunk: a workload that takes hundreds of pages (the
 * packed placement's small pages) pays one malloc per this many. */
#define PAGE_CHUNK 32u

const char *relo__slice_state_name(relo_slice_state state)
{
    switch (state) {
    case RELO_SLICE_FREE: return "FREE";
    case RELO_SLICE_LIVE: return "LIVE";
    case RELO_SLICE_TARGET: return "TARGET";
    case RELO_SLICE_LEAKED: return "LEAKED";
    case RELO_SLICE_STATE_COUNT: break;
    }
    return "UNKNOWN";
}

/* Allocates bytes as a new chunk of the slab, kept for destroy. NULL:
 * host memory ran out (nothing changed). */
RELO_COLD static void *chunk_new(relo_slice_slab *slab, size_t bytes)
{
    if (slab->chunk_count == slab->chunk_cap) {
        uint32_t cap = slab->chunk_cap ? slab->chunk_cap * 2 : 16;
        void **chunks = relo__realloc(slab->chunks, cap * sizeof *chunks);
        if (!chunks) return NULL;
        slab->chunks = chunks;
        slab->chunk_cap = cap;
    }
    void *chunk = relo__malloc(bytes);
    if (chunk) slab->chunks[slab->chunk_count++] = chunk;
    return chunk;
}

RELO_COLD bool relo__slab_grow(relo_slice_slab *slab)
{
    relo_slice *chunk = chunk_new(slab, SLAB_CHUNK * sizeof *chunk);
    if (!chunk) return false;
    for (uint32_t i = 0; i < SLAB_CHUNK; i++) {
        chunk[i].left = slab->free;
        slab->free = &chunk[i];
    }
    return true;
}

/* Adds a chunk of page records to the records kept. */
RELO_COLD static bool page_grow(relo_slice_slab *slab)
{
    relo_page *chunk = chunk_new(slab, PAGE_CHUNK * sizeof *chunk);
    if (!chunk) return false;
    for (uint32_t i = PAGE_CHUNK; i-- > 0;) {
        chunk[i].free_next = slab->free_pages;
        slab->free_pages = &chunk[i];
    }
    return true;
}

relo_page *relo__page_new(relo_slice_slab *slab)
{
    if (!slab->free_pages && !page_grow(slab)) return NULL;
    relo_page *page = slab->free_pages;
    slab->free_pages = page->free_next;
    memset(page, 0, sizeof *page);
    return page;
}

void relo__page_delete(relo_slice_slab *slab, relo_page *page)
{
    page->pool = NULL;
    page->free_next = slab->free_pages;
    slab->free_pages = page;
}

void relo__slab_destroy(relo_slice_slab *slab)
{
    /* Page records live in chunks too: every one goes with them. */
    for (uint32_t i = 0; i < slab->chunk_count; i++) relo__free(slab->chunks[i]);
    relo__free(slab->chunks);
    memset(slab, 0, sizeof *slab);
}
