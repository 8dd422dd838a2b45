/*
 * torch_block.c — the block arena and the neighbour links of the PyTorch
 * allocator models (see torch_block.h).
 */
#include "torch_block.h"

#include <stdlib.h>
#include <string.h>

const char *torch_block_state_name(torch_block_state s)
{
    static const char *const names[TORCH_BLOCK_STATE_COUNT] = {"free", "used", "unmapped"};
    return (unsigned)s < TORCH_BLOCK_STATE_COUNT ? names[s] : "?";
}

void torch_blocks_init(torch_blocks *b)
{
    memset(b, 0, sizeof *b);
    b->free_head = TORCH_NONE;
}

void torch_blocks_free(torch_blocks *b)
{
    free(b->v);
    torch_blocks_init(b);
}

uint32_t torch_blocks_new(torch_blocks *b, uint64_t addr, uint64_t size, torch_block_state state,
                          uint32_t segment, uint32_t pool)
{
    uint32_t i = b->free_head;
    if (i != TORCH_NONE) {
        b->free_head = b->v[i].next;
    } else {
        if (b->count == b->capacity) {
            uint32_t cap = b->capacity ? b->capacity * 2 : 256;
            if (cap <= b->capacity || cap >= TORCH_NONE) return TORCH_NONE;
            torch_block *grown = realloc(b->v, (size_t)cap * sizeof *grown);
            if (!grown) return TORCH_NONE;
            b->v = grown;
            b->capacity = cap;
        }
        i = b->count++;
    }
    torch_block *x = &b->v[i];
    x->addr = addr;
    x->size = size;
    x->prev = x->next = TORCH_NONE;
    x->segment = segment;
    x->pool = pool;
    x->state = (uint8_t)state;
    return i;
}

void torch_blocks_release(torch_blocks *b, uint32_t i)
{
    b->v[i].next = b->free_head;
    b->v[i].prev = TORCH_NONE;
    b->free_head = i;
}

uint32_t torch_blocks_insert(torch_blocks *b, uint32_t i, bool above, uint64_t addr, uint64_t size,
                             torch_block_state state)
{
    uint32_t r = torch_blocks_new(b, addr, size, state, b->v[i].segment, b->v[i].pool);
    if (r == TORCH_NONE) return r;
    torch_block *x = &b->v[i], *y = &b->v[r];
    if (above) {
        y->prev = i;
        y->next = x->next;
        if (x->next != TORCH_NONE) b->v[x->next].prev = r;
        x->next = r;
    } else {
        y->next = i;
        y->prev = x->prev;
        if (x->prev != TORCH_NONE) b->v[x->prev].next = r;
        x->prev = r;
    }
    return r;
}

uint32_t torch_blocks_split(torch_blocks *b, uint32_t i, uint64_t offset, torch_block_state rest_state)
{
    uint32_t r = torch_blocks_insert(b, i, true, b->v[i].addr + offset, b->v[i].size - offset, rest_state);
    if (r != TORCH_NONE) b->v[i].size = offset;
    return r;
}

void torch_blocks_absorb(torch_blocks *b, uint32_t dst, uint32_t src)
{
    torch_block *d = &b->v[dst], *s = &b->v[src];
    if (d->prev == src) {
        d->addr = s->addr;
        d->prev = s->prev;
        if (s->prev != TORCH_NONE) b->v[s->prev].next = dst;
    } else {
        d->next = s->next;
        if (s->next != TORCH_NONE) b->v[s->next].prev = dst;
    }
    d->size += s->size;
    torch_blocks_release(b, src);
}

bool torch_blocks_file(const torch_blocks *b, sorted_index *index, uint32_t i)
{
    const torch_block *x = &b->v[i];
    if (x->state == TORCH_BLOCK_UNMAPPED) return sorted_index_insert(&index[x->pool], x->addr, 0, i);
    return sorted_index_insert(&index[x->pool], x->size, x->addr, i);
}

void torch_blocks_unfile(const torch_blocks *b, sorted_index *index, uint32_t i)
{
    const torch_block *x = &b->v[i];
    if (x->state == TORCH_BLOCK_UNMAPPED)
        sorted_index_remove(&index[x->pool], x->addr, 0);
    else
        sorted_index_remove(&index[x->pool], x->size, x->addr);
}

void torch_blocks_merge(torch_blocks *b, sorted_index *index, uint32_t i)
{
    uint8_t state = b->v[i].state;
    uint32_t n = b->v[i].prev;
    for (int side = 0; side < 2; side++, n = b->v[i].next) {
        if (n == TORCH_NONE || b->v[n].state != state) continue;
        torch_blocks_unfile(b, index, n);
        torch_blocks_absorb(b, i, n);
    }
}
