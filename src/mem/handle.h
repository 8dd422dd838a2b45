/*
 * mem/handle.h — the handle table. A handle packs three fields into 64 bits:
 *
 *   bits  0..25  slot index + 1 (so 0 is never valid)
 *   bits 26..37  the device's tag (1..4095)
 *   bits 38..63  the slot's generation (1..2^26-1)
 *
 * The tag binds a handle to its device: a handle shown to another device
 * never matches, because two live devices never share a tag. Freeing a slot
 * bumps its generation; a slot whose generation would pass the largest the
 * field holds is retired for good instead of wrapping, so an old handle value
 * never reaches a later allocation however often slots are reused.
 *
 * Tags are recycled, but only forward: when a device is destroyed its tag
 * remembers the highest generation the device handed out, and the next
 * device that takes the tag starts every slot above it. So a handle of a
 * destroyed device, shown to a later device with the same tag, names a
 * generation that device never hands out. A tag whose floor climbs past half
 * the generation range is retired too. Lookup stays O(1).
 *
 * Resolving without the lock. A slot may also carry a published copy of
 * its binding (buffer, offset, size, address) and the handle value it
 * answers for, behind a per-slot sequence count: a writer (always under the
 * device lock) makes the count odd, changes the copy and makes it even
 * again; relo_resolve reads the count, the copy and the count again, and
 * uses the copy only when both counts are the same and even and the copy
 * names the handle. A slot publishes only while the locked answer would be
 * exactly the copy: live, placed, and not a source of the open relocation
 * pass. It publishes lazily, at its first locked resolve, so reservations
 * and releases nobody resolves pay only a flag test; anything that would
 * change a published slot's answer (its free, a pass that moves it)
 * withdraws the copy first. Without a copy (stale, moving, reserving, never
 * resolved) the caller takes the locked path, which answers exactly. Slots
 * live in chunks that never move (chunk k holds 256·2^k slots), so a reader
 * never touches freed memory while the table grows.
 *
 * Pinning without the lock. A slot's pins live in one atomic word with
 * the slot's generation (generation << 32 | pins), so a pin or unpin
 * changes the count of exactly the allocation its handle names: once the
 * slot is freed the generation differs and the exchange fails. relo_pin
 * of a published slot counts itself on the slot, then reads the sequence
 * count again (a full fence between); a pass that opens withdraws its
 * sources first and then reads their pins (a full fence between), so
 * either the pin sees the withdrawal and undoes itself, or the pass sees
 * the pin and leaves the allocation where it is (pass/relocation.c). Planning
 * reads the slots' pins as it plans each move, and the count is the one
 * record of pins: a page keeps none, so nothing has to agree with it.
 *
 * Protected by: the device lock (table, and every write to a slot); the
 * published copy is read without it. The tag registry has its own lock.
 */
#ifndef RELO_HANDLE_H
#define RELO_HANDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mem/page.h"
#include "relo.h"
#include "base/util.h"

enum {
    RELO_HANDLE_SLOT_BITS = 26,
    RELO_HANDLE_TAG_BITS = 12,
    RELO_HANDLE_GEN_BITS = 26,
};
#define RELO_HANDLE_SLOT_MAX ((UINT32_C(1) << RELO_HANDLE_SLOT_BITS) - 1u) /* slots per device */
#define RELO_HANDLE_TAG_MAX ((UINT32_C(1) << RELO_HANDLE_TAG_BITS) - 1u)
#define RELO_HANDLE_GEN_MAX ((UINT32_C(1) << RELO_HANDLE_GEN_BITS) - 1u)

typedef struct relo_slot {
    union {
        relo_slice *slice;           /* taken (refcount > 0): where the allocation is now,
                                       NULL while its reservation is in progress */
        struct relo_slot *next_free; /* free: the next free slot; NULL = end (retired: NULL) */
    };                               /* a free slot's slice is never read: refcount says free
                                       first, and taking the slot sets slice */
    uint32_t generation;             /* bumped on every free; 0 once retired */
    uint32_t refcount;               /* 0 = free slot */
    _Atomic uint64_t pin_state;      /* generation << 32 | relo_pin calls not yet unpinned
                                   (the allocation is never moved); see above */
    uint32_t index;                  /* this slot's index in the table */
    bool published;                  /* id below is not 0 */

    /* The published binding, read without the lock (see above). */
    _Atomic uint64_t seq; /* odd while a writer changes the fields below */
    _Atomic uint64_t id;  /* handle value answered without the lock; 0 = take the lock */
    _Atomic uintptr_t buffer;
    _Atomic uint64_t offset, size, address;
} relo_slot;

/* Slot chunks: chunk k holds 2^(k + RELO_HANDLE_CHUNK0_BITS) slots, so
 * RELO_HANDLE_CHUNKS of them cover every slot index. */
#define RELO_HANDLE_CHUNK0_BITS 8u
#define RELO_HANDLE_CHUNKS (RELO_HANDLE_SLOT_BITS - RELO_HANDLE_CHUNK0_BITS + 1u)

typedef struct relo_handle_table {
    _Atomic(relo_slot *) chunks[RELO_HANDLE_CHUNKS]; /* never move once made */
    uint32_t count;                                  /* slots ever used */
    uint32_t cap;                                    /* slots the chunks made so far hold */
    relo_slot *free_head; /* the first free slot, NULL = none: a pointer, so taking a slot
                               does not work out where its index lives */
    uint32_t tag;         /* this device's tag; 0 before init */
    uint32_t gen_base;    /* generation a new slot starts at */
    uint32_t gen_high;    /* highest generation handed out */
    uint64_t live;        /* slots with refcount > 0 */
    uint64_t retired;     /* slots retired at the end of their generations */
} relo_handle_table;

/** Takes (hold) or lets go of the process-wide tag registry, as device
 *  creation and destruction do; a fork waits until it is let go. Tests
 *  hold it to open the window a creation holds it for. */
void relo__handle_registry_hold(bool hold);

/** Takes a tag for a new device's table (zeroing the table).
 *  RELO_ERR_HANDLES_EXHAUSTED when every tag is held by a live device or
 *  retired. */
relo_status relo__handle_table_init(relo_handle_table *t);

/** Takes a free slot with refcount 1 and no slice into *out (its index is
 *  (*out)->index). RELO_ERR_HOST_MEMORY when the table cannot grow,
 *  RELO_ERR_HANDLES_EXHAUSTED when every slot index is used (nothing
 *  changes). */
relo_status relo__handle_alloc(relo_handle_table *t, relo_slot **out);

/** Frees a slot of the table: its handle values go stale, for good, and
 *  the pins the allocation still had go with them. Never fails. */
void relo__handle_free(relo_handle_table *t, relo_slot *slot);

/** The pins a slot holds now (relo_pin calls not yet unpinned). */
static inline uint32_t relo__slot_pins(const relo_slot *s)
{
    return (uint32_t)atomic_load_explicit(&((relo_slot *)s)->pin_state, memory_order_relaxed);
}

/** Adds n pins to the live slot s, as n relo_pin calls do (device lock
 *  held; pins without the lock may run meanwhile). RELO_ERR_INVALID_ARGUMENT,
 *  with nothing changed, when its count would pass UINT32_MAX. */
relo_status relo__slot_pin(relo_slot *s, uint32_t n);

/** Drops one pin of the live slot s (device lock held).
 *  RELO_ERR_INVALID_ARGUMENT when it holds none. */
relo_status relo__slot_unpin(relo_slot *s);

/** relo_pin without the device lock: when h's slot publishes its binding
 *  and holds fewer than UINT32_MAX pins, pins it, fills *out and returns
 *  true. False, with nothing changed, when the caller must take the locked
 *  path (which answers exactly). */
bool relo__handle_pin_fast(relo_handle_table *t, relo_handle h, relo_binding *out);

/** relo_unpin without the device lock: when h names a live slot that
 *  holds a pin, drops it and returns true. False, with nothing changed,
 *  when the caller must take the locked path (which answers exactly:
 *  a stale handle, or one with no pin). */
bool relo__handle_unpin_fast(relo_handle_table *t, relo_handle h);

/** The live slot a handle names, or NULL (stale, 0, made up, another
 *  device's, or a slot whose reservation has not returned yet). */
relo_slot *relo__handle_lookup(relo_handle_table *t, relo_handle h);

/** The slot at index i (< RELO_HANDLE_SLOT_MAX), or NULL while its chunk
 *  has not been made. Safe without the lock. */
static inline relo_slot *relo__handle_slot_if_made(const relo_handle_table *t, uint32_t i)
{
    uint32_t j = i + (1u << RELO_HANDLE_CHUNK0_BITS), k = relo__log2(j) - RELO_HANDLE_CHUNK0_BITS;
    relo_slot *chunk = atomic_load_explicit(&((relo_handle_table *)t)->chunks[k], memory_order_acquire);
    return chunk ? &chunk[j - (1u << (k + RELO_HANDLE_CHUNK0_BITS))] : NULL;
}

/** The slot at index i (< t->count, so its chunk is made). */
static inline relo_slot *relo__handle_slot(const relo_handle_table *t, uint32_t i)
{
    uint32_t j = i + (1u << RELO_HANDLE_CHUNK0_BITS), k = relo__log2(j) - RELO_HANDLE_CHUNK0_BITS;
    relo_slot *chunk = atomic_load_explicit(&((relo_handle_table *)t)->chunks[k], memory_order_relaxed);
    return &chunk[j - (1u << (k + RELO_HANDLE_CHUNK0_BITS))];
}

/** Publishes the slot's binding from its slice when the slot is live,
 *  placed and not a source of the open pass (its slice's move mark is 0);
 *  withdraws it otherwise. The device lock is held. */
void relo__handle_publish(relo_handle_table *t, uint32_t slot);

/** Withdraws a published binding (a no-op for a slot that publishes none):
 *  call before anything changes what a locked resolve of the slot would
 *  answer (the slot freed, its allocation about to move). The device lock
 *  is held. */
void relo__handle_withdraw(relo_handle_table *t, uint32_t slot);

/** The binding of h without the device lock, when its slot publishes one
 *  (see above): true with *out filled, or false when the caller must take
 *  the locked path (which answers exactly, NOT_FOUND included). */
bool relo__handle_resolve_fast(const relo_handle_table *t, relo_handle h, relo_binding *out);

/** The handle value of a live slot of the table. */
static inline relo_handle relo__handle_of_slot(const relo_handle_table *t, const relo_slot *s)
{
    relo_handle h = {((uint64_t)s->generation << (RELO_HANDLE_SLOT_BITS + RELO_HANDLE_TAG_BITS)) |
                     ((uint64_t)t->tag << RELO_HANDLE_SLOT_BITS) | (uint64_t)(s->index + 1)};
    return h;
}

/** The handle value of the live slot at index slot. */
static inline relo_handle relo__handle_of(const relo_handle_table *t, uint32_t slot)
{
    return relo__handle_of_slot(t, relo__handle_slot(t, slot));
}

/** Frees the table's memory and hands its tag back with its floor raised
 *  past every generation it handed out. */
void relo__handle_table_destroy(relo_handle_table *t);

/** Testing: sets the generation of a free slot, so a test can reach the end
 *  of the generation range without 2^26 cycles. Returns false if the slot is
 *  not free or gen is 0 or past the range. */
bool relo__handle_set_generation(relo_handle_table *t, uint32_t slot, uint32_t gen);

#endif /* RELO_HANDLE_H */
