/*
 * handle.c — the slot table behind relo_handle (see handle.h).
 */
#include "handle.h"

#include <string.h>

#include "hostmem.h"

relo_status relo__handle_alloc(relo_handle_table *t, uint32_t *slot)
{
    uint32_t i;
    if (t->free_head) {
        i = t->free_head - 1;
        t->free_head = t->slots[i].next_free;
    } else {
        if (t->count == UINT32_MAX - 1) return RELO_ERR_HOST_MEMORY;
        if (t->count == t->cap) {
            uint32_t cap = t->cap ? (t->cap > UINT32_MAX / 2 ? UINT32_MAX - 1 : t->cap * 2) : 256;
            relo_slot *slots = relo__realloc(t->slots, (size_t)cap * sizeof *slots);
            if (!slots) return RELO_ERR_HOST_MEMORY;
            t->slots = slots;
            t->cap = cap;
        }
        i = t->count++;
        memset(&t->slots[i], 0, sizeof t->slots[i]);
        t->slots[i].generation = 1;
    }
    t->slots[i].refcount = 1;
    t->slots[i].slice = NULL;
    t->slots[i].next_free = 0;
    t->live++;
    *slot = i;
    return RELO_OK;
}

void relo__handle_free(relo_handle_table *t, uint32_t slot)
{
    relo_slot *s = &t->slots[slot];
    s->refcount = 0;
    s->slice = NULL;
    /* Generation 0 is skipped so a packed id never repeats a fresh slot's. */
    s->generation = s->generation == UINT32_MAX ? 1 : s->generation + 1;
    s->next_free = t->free_head;
    t->free_head = slot + 1;
    t->live--;
}

relo_slot *relo__handle_lookup(relo_handle_table *t, relo_handle h)
{
    uint32_t index = (uint32_t)(h.id & 0xffffffffu);
    uint32_t gen = (uint32_t)(h.id >> 32);
    if (index == 0 || index > t->count) return NULL;
    relo_slot *s = &t->slots[index - 1];
    if (s->refcount == 0 || s->generation != gen) return NULL;
    return s;
}

relo_handle relo__handle_of(const relo_handle_table *t, uint32_t slot)
{
    relo_handle h = {((uint64_t)t->slots[slot].generation << 32) | (uint64_t)(slot + 1)};
    return h;
}

void relo__handle_table_destroy(relo_handle_table *t)
{
    relo__free(t->slots);
    memset(t, 0, sizeof *t);
}
