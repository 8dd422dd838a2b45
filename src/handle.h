/*
 * handle.h — the handle table. A handle packs a slot index (low 32 bits,
 * stored +1 so that 0 is never valid) and the slot's generation (high 32
 * bits). Freeing a slot bumps its generation, so an old handle value never
 * reaches the allocation that reuses the slot. Lookup is O(1).
 *
 * Protected by: the device lock.
 */
#ifndef RELO_HANDLE_H
#define RELO_HANDLE_H

#include <stdint.h>

#include "page.h"
#include "relo.h"

typedef struct relo_slot {
    relo_slice *slice;      /* where the allocation is now; NULL when free */
    uint32_t generation;    /* bumped on every free */
    uint32_t refcount;      /* 0 = free slot */
    uint32_t next_free;     /* free list, index + 1; 0 = end */
} relo_slot;

typedef struct relo_handle_table {
    relo_slot *slots;
    uint32_t count;         /* slots ever used */
    uint32_t cap;
    uint32_t free_head;     /* index + 1 of the first free slot; 0 = none */
    uint64_t live;          /* slots with refcount > 0 */
} relo_handle_table;

/** Takes a free slot with refcount 1 and no slice. RELO_ERR_HOST_MEMORY when
 *  the table cannot grow (nothing changes). */
relo_status relo__handle_alloc(relo_handle_table *t, uint32_t *slot);

/** Frees a slot: its handle values go stale. Never fails. */
void relo__handle_free(relo_handle_table *t, uint32_t slot);

/** The live slot a handle names, or NULL (stale, 0, made up). */
relo_slot *relo__handle_lookup(relo_handle_table *t, relo_handle h);

/** The handle value of a live slot. */
relo_handle relo__handle_of(const relo_handle_table *t, uint32_t slot);

/** Frees the table's memory. */
void relo__handle_table_destroy(relo_handle_table *t);

#endif /* RELO_HANDLE_H */
