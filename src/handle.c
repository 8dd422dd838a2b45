/*
 * handle.c — the slot table behind relo_handle, and the process-wide
 * registry of device tags (see handle.h for the encoding and its rules).
 */
#include "handle.h"

#include <pthread.h>
#include <string.h>

#include "hostmem.h"

#define SLOT_MASK ((UINT64_C(1) << RELO_HANDLE_SLOT_BITS) - 1u)
#define TAG_SHIFT RELO_HANDLE_SLOT_BITS
#define GEN_SHIFT (RELO_HANDLE_SLOT_BITS + RELO_HANDLE_TAG_BITS)

/* The tag registry. floor is the first generation the tag's next device may
 * hand out; a tag is retired once its floor passes half the range, so every
 * device that takes a tag still has at least 2^25 generations per slot. */
typedef struct tag_entry {
    uint32_t floor;     /* 0 = never used (means 1) */
    bool held;          /* a live device has it */
} tag_entry;

static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;
static tag_entry tags[RELO_HANDLE_TAG_MAX + 1];     /* index 0 unused */

static bool tag_retired(const tag_entry *e) { return e->floor > RELO_HANDLE_GEN_MAX / 2; }

relo_status relo__handle_table_init(relo_handle_table *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_lock(&tag_lock);
    for (uint32_t i = 1; i <= RELO_HANDLE_TAG_MAX; i++) {
        tag_entry *e = &tags[i];
        if (e->held || tag_retired(e)) continue;
        e->held = true;
        t->tag = i;
        t->gen_base = e->floor ? e->floor : 1;
        break;
    }
    pthread_mutex_unlock(&tag_lock);
    return t->tag ? RELO_OK : RELO_ERR_HOST_MEMORY;
}

relo_status relo__handle_alloc(relo_handle_table *t, uint32_t *slot)
{
    uint32_t i;
    if (t->free_head) {
        i = t->free_head - 1;
        t->free_head = t->slots[i].next_free;
    } else {
        if (t->count == RELO_HANDLE_SLOT_MAX) return RELO_ERR_HOST_MEMORY;
        if (t->count == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 256;
            if (cap > RELO_HANDLE_SLOT_MAX) cap = RELO_HANDLE_SLOT_MAX;
            relo_slot *slots = relo__realloc(t->slots, (size_t)cap * sizeof *slots);
            if (!slots) return RELO_ERR_HOST_MEMORY;
            t->slots = slots;
            t->cap = cap;
        }
        i = t->count++;
        memset(&t->slots[i], 0, sizeof t->slots[i]);
        t->slots[i].generation = t->gen_base;
    }
    relo_slot *s = &t->slots[i];
    s->refcount = 1;
    s->slice = NULL;
    s->next_free = 0;
    s->pins = 0;
    if (s->generation > t->gen_high) t->gen_high = s->generation;
    t->live++;
    *slot = i;
    return RELO_OK;
}

void relo__handle_free(relo_handle_table *t, uint32_t slot)
{
    relo_slot *s = &t->slots[slot];
    s->refcount = 0;
    s->slice = NULL;
    t->live--;
    if (s->generation == RELO_HANDLE_GEN_MAX) {
        /* Wrapping would let a handle of this slot's first allocation name
         * a later one; the slot is retired instead (24 bytes, for good). */
        s->generation = 0;
        s->next_free = 0;
        t->retired++;
        return;
    }
    s->generation++;
    s->next_free = t->free_head;
    t->free_head = slot + 1;
}

relo_slot *relo__handle_lookup(relo_handle_table *t, relo_handle h)
{
    uint32_t index = (uint32_t)(h.id & SLOT_MASK);
    uint32_t tag = (uint32_t)((h.id >> TAG_SHIFT) & RELO_HANDLE_TAG_MAX);
    uint32_t gen = (uint32_t)(h.id >> GEN_SHIFT);
    if (tag != t->tag || index == 0 || index > t->count) return NULL;
    relo_slot *s = &t->slots[index - 1];
    /* No slice yet: a reservation on another thread has the slot while it
     * waits out a relocation; its handle is not anybody's until it returns. */
    if (s->refcount == 0 || s->generation != gen || !s->slice) return NULL;
    return s;
}

relo_handle relo__handle_of(const relo_handle_table *t, uint32_t slot)
{
    relo_handle h = {((uint64_t)t->slots[slot].generation << GEN_SHIFT) | ((uint64_t)t->tag << TAG_SHIFT) |
                     (uint64_t)(slot + 1)};
    return h;
}

void relo__handle_table_destroy(relo_handle_table *t)
{
    if (t->tag) {
        pthread_mutex_lock(&tag_lock);
        tag_entry *e = &tags[t->tag];
        uint32_t floor = (t->gen_high > t->gen_base ? t->gen_high : t->gen_base) + 1;
        if (floor > e->floor) e->floor = floor;
        e->held = false;
        pthread_mutex_unlock(&tag_lock);
    }
    relo__free(t->slots);
    memset(t, 0, sizeof *t);
}

bool relo__handle_set_generation(relo_handle_table *t, uint32_t slot, uint32_t gen)
{
    if (slot >= t->count || t->slots[slot].refcount != 0 || t->slots[slot].generation == 0) return false;
    if (gen == 0 || gen > RELO_HANDLE_GEN_MAX) return false;
    t->slots[slot].generation = gen;
    return true;
}
