/*
 * mem/handle.c — the slot table behind relo_handle, and the process-wide
 * registry of device tags (see mem/handle.h for the encoding and its rules).
 */
#include "mem/handle.h"

#include <pthread.h>
#include <string.h>

#include "base/hostmem.h"

#define SLOT_MASK ((UINT64_C(1) << RELO_HANDLE_SLOT_BITS) - 1u)
#define TAG_SHIFT RELO_HANDLE_SLOT_BITS
#define GEN_SHIFT (RELO_HANDLE_SLOT_BITS + RELO_HANDLE_TAG_BITS)

/* The tag registry. floor is the first generation the tag's next device may
 * hand out; a tag is retired once its floor passes half the range, so every
 * device that takes a tag still has at least 2^25 generations per slot. */
typedef struct tag_entry {
    uint32_t floor; /* 0 = never used (means 1) */
    bool held;      /* a live device has it */
} tag_entry;

static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;
static tag_entry tags[RELO_HANDLE_TAG_MAX + 1]; /* index 0 unused */

static bool tag_retired(const tag_entry *e)
{
    return e->floor > RELO_HANDLE_GEN_MAX / 2;
}

/* fork() while another thread holds the registry would leave the child's
 * copy locked for good: the fork waits for the registry instead, and both
 * sides let go of it after. */
static pthread_once_t tag_fork_once = PTHREAD_ONCE_INIT;
static void tag_fork_prepare(void)
{
    pthread_mutex_lock(&tag_lock);
}
static void tag_fork_after(void)
{
    pthread_mutex_unlock(&tag_lock);
}
static void tag_fork_register(void)
{
    pthread_atfork(tag_fork_prepare, tag_fork_after, tag_fork_after);
}

void relo__handle_registry_hold(bool hold)
{
    pthread_once(&tag_fork_once, tag_fork_register);
    if (hold)
        pthread_mutex_lock(&tag_lock);
    else
        pthread_mutex_unlock(&tag_lock);
}

relo_status relo__handle_table_init(relo_handle_table *t)
{
    memset(t, 0, sizeof *t);
    relo__handle_registry_hold(true);
    for (uint32_t i = 1; i <= RELO_HANDLE_TAG_MAX; i++) {
        tag_entry *e = &tags[i];
        if (e->held || tag_retired(e)) continue;
        e->held = true;
        t->tag = i;
        t->gen_base = e->floor ? e->floor : 1;
        break;
    }
    relo__handle_registry_hold(false);
    return t->tag ? RELO_OK : RELO_ERR_HANDLES_EXHAUSTED;
}

/* Makes the next chunk, so slot t->cap exists. */
RELO_COLD static bool grow(relo_handle_table *t)
{
    uint32_t k = relo__log2(t->cap + (1u << RELO_HANDLE_CHUNK0_BITS)) - RELO_HANDLE_CHUNK0_BITS;
    uint32_t n = 1u << (k + RELO_HANDLE_CHUNK0_BITS);
    relo_slot *chunk = relo__calloc((size_t)n * sizeof *chunk);
    if (!chunk) return false;
    /* Released, so a reader that sees the chunk sees its zeroed slots. */
    atomic_store_explicit(&t->chunks[k], chunk, memory_order_release);
    t->cap += n;
    return true;
}

relo_status relo__handle_alloc(relo_handle_table *t, relo_slot **out)
{
    relo_slot *s;
    if (t->free_head) {
        s = t->free_head;
        t->free_head = s->next_free;
    } else {
        if (t->count == RELO_HANDLE_SLOT_MAX) return RELO_ERR_HANDLES_EXHAUSTED;
        if (t->count == t->cap && !grow(t)) return RELO_ERR_HOST_MEMORY;
        uint32_t i = t->count++;
        s = relo__handle_slot(t, i);
        s->generation = t->gen_base;
        s->index = i;
    }
    s->refcount = 1;
    s->slice = NULL;
    atomic_store_explicit(&s->pin_state, (uint64_t)s->generation << 32, memory_order_relaxed);
    if (s->generation > t->gen_high) t->gen_high = s->generation;
    t->live++;
    *out = s;
    return RELO_OK;
}

/* Writes the published copy of s (id 0 withdraws it). */
static void write_published(relo_slot *s, uint64_t id)
{
    const relo_slice *sl = s->slice;
    uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    /* The classic seqlock writer: odd count, a release fence so no field
     * store is seen before it, the fields, then the even count released. */
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->id, id, memory_order_relaxed);
    if (id) {
        const relo_page *page = sl->page;
        atomic_store_explicit(&s->buffer, (uintptr_t)page->buffer, memory_order_relaxed);
        atomic_store_explicit(&s->offset, sl->offset, memory_order_relaxed);
        atomic_store_explicit(&s->size, sl->size, memory_order_relaxed);
        atomic_store_explicit(&s->address, page->address ? page->address + sl->offset : 0,
                              memory_order_relaxed);
    }
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
    s->published = id != 0;
}

void relo__handle_publish(relo_handle_table *t, uint32_t slot)
{
    relo_slot *s = relo__handle_slot(t, slot);
    bool publish = s->refcount > 0 && s->slice && s->slice->move == 0;
    if (publish || s->published) write_published(s, publish ? relo__handle_of(t, slot).id : 0);
}

void relo__handle_withdraw(relo_handle_table *t, uint32_t slot)
{
    relo_slot *s = relo__handle_slot(t, slot);
    if (s->published) write_published(s, 0);
}

void relo__handle_free(relo_handle_table *t, relo_slot *s)
{
    if (s->published) write_published(s, 0);
    s->refcount = 0;
    t->live--;
    bool retire = s->generation == RELO_HANDLE_GEN_MAX;
    /* Wrapping would let a handle of this slot's first allocation name a
     * later one; the slot is retired instead (for good), generation 0. */
    s->generation = retire ? 0 : s->generation + 1;
    /* The pins go with the old generation: a pin or unpin without the lock
     * that comes after this finds the generation changed. */
    atomic_store_explicit(&s->pin_state, (uint64_t)s->generation << 32, memory_order_release);
    if (retire) {
        s->next_free = NULL;
        t->retired++;
    } else {
        s->next_free = t->free_head;
        t->free_head = s;
    }
}

/* Adds n pins to s if its word holds generation gen and room for them;
 * false otherwise (nothing changed). */
static bool add_pins(relo_slot *s, uint32_t gen, uint32_t n)
{
    uint64_t ps = atomic_load_explicit(&s->pin_state, memory_order_relaxed);
    do {
        if ((uint32_t)(ps >> 32) != gen || (uint32_t)ps > UINT32_MAX - n) return false;
    } while (!atomic_compare_exchange_weak_explicit(&s->pin_state, &ps, ps + n, memory_order_seq_cst,
                                                    memory_order_relaxed));
    return true;
}

/* Drops one pin of s if its word holds generation gen and a pin; false
 * otherwise (nothing changed). */
static bool drop_pin(relo_slot *s, uint32_t gen)
{
    uint64_t ps = atomic_load_explicit(&s->pin_state, memory_order_relaxed);
    do {
        if ((uint32_t)(ps >> 32) != gen || (uint32_t)ps == 0) return false;
    } while (!atomic_compare_exchange_weak_explicit(&s->pin_state, &ps, ps - 1, memory_order_seq_cst,
                                                    memory_order_relaxed));
    return true;
}

relo_status relo__slot_pin(relo_slot *s, uint32_t n)
{
    return add_pins(s, s->generation, n) ? RELO_OK : RELO_ERR_INVALID_ARGUMENT;
}

relo_status relo__slot_unpin(relo_slot *s)
{
    return drop_pin(s, s->generation) ? RELO_OK : RELO_ERR_INVALID_ARGUMENT;
}

/* The published copy of h's slot: true with the slot, the sequence count
 * read and the copy in *out; false when the slot publishes none for h. */
static bool read_published(const relo_handle_table *t, relo_handle h, relo_slot **slot, uint64_t *seq,
                           relo_binding *out)
{
    uint32_t index = (uint32_t)(h.id & SLOT_MASK);
    uint32_t tag = (uint32_t)((h.id >> TAG_SHIFT) & RELO_HANDLE_TAG_MAX);
    if (tag != t->tag || index == 0) return false;
    relo_slot *s = relo__handle_slot_if_made(t, index - 1);
    if (!s) return false;
    uint64_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (q & 1u) return false;
    uint64_t id = atomic_load_explicit(&s->id, memory_order_relaxed);
    uintptr_t buffer = atomic_load_explicit(&s->buffer, memory_order_relaxed);
    uint64_t offset = atomic_load_explicit(&s->offset, memory_order_relaxed);
    uint64_t size = atomic_load_explicit(&s->size, memory_order_relaxed);
    uint64_t address = atomic_load_explicit(&s->address, memory_order_relaxed);
    /* An acquire fence so the second read of the count comes after the
     * fields: unchanged, no writer touched them in between. */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != q || id != h.id) return false;
    *slot = s;
    *seq = q;
    out->buffer = (void *)buffer;
    out->offset = offset;
    out->size = size;
    out->address = address;
    return true;
}

bool relo__handle_resolve_fast(const relo_handle_table *t, relo_handle h, relo_binding *out)
{
    relo_slot *s;
    uint64_t q;
    return read_published(t, h, &s, &q, out);
}

bool relo__handle_pin_fast(relo_handle_table *t, relo_handle h, relo_binding *out)
{
    relo_slot *s;
    uint64_t q;
    relo_binding b;
    if (!read_published(t, h, &s, &q, &b)) return false;
    uint32_t gen = (uint32_t)(h.id >> GEN_SHIFT);
    if (!add_pins(s, gen, 1)) return false;
    /* Against a pass that opens meanwhile: it withdraws the copy, then
     * reads the pins, each after a full fence; here the pin is counted,
     * then the copy read again. One of the two sees the other. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) == q) {
        *out = b;
        return true;
    }
    /* Withdrawn since: undo (unless a release took the pin with the slot). */
    (void)drop_pin(s, gen);
    return false;
}

bool relo__handle_unpin_fast(relo_handle_table *t, relo_handle h)
{
    uint32_t index = (uint32_t)(h.id & SLOT_MASK);
    uint32_t tag = (uint32_t)((h.id >> TAG_SHIFT) & RELO_HANDLE_TAG_MAX);
    if (tag != t->tag || index == 0) return false;
    relo_slot *s = relo__handle_slot_if_made(t, index - 1);
    /* The generation in the pin word names the allocation: a stale handle
     * finds another one and takes the locked path. */
    return s && drop_pin(s, (uint32_t)(h.id >> GEN_SHIFT));
}

relo_slot *relo__handle_lookup(relo_handle_table *t, relo_handle h)
{
    uint32_t index = (uint32_t)(h.id & SLOT_MASK);
    uint32_t tag = (uint32_t)((h.id >> TAG_SHIFT) & RELO_HANDLE_TAG_MAX);
    uint32_t gen = (uint32_t)(h.id >> GEN_SHIFT);
    if (tag != t->tag || index == 0 || index > t->count) return NULL;
    relo_slot *s = relo__handle_slot(t, index - 1);
    /* No slice yet: a reservation on another thread has the slot while it
     * waits out a relocation; its handle is not anybody's until it returns. */
    if (s->refcount == 0 || s->generation != gen || !s->slice) return NULL;
    return s;
}

void relo__handle_table_destroy(relo_handle_table *t)
{
    if (t->tag) {
        relo__handle_registry_hold(true);
        tag_entry *e = &tags[t->tag];
        uint32_t floor = (t->gen_high > t->gen_base ? t->gen_high : t->gen_base) + 1;
        if (floor > e->floor) e->floor = floor;
        e->held = false;
        relo__handle_registry_hold(false);
    }
    for (uint32_t k = 0; k < RELO_HANDLE_CHUNKS; k++)
        relo__free(atomic_load_explicit(&t->chunks[k], memory_order_relaxed));
    memset(t, 0, sizeof *t);
}

bool relo__handle_set_generation(relo_handle_table *t, uint32_t slot, uint32_t gen)
{
    if (slot >= t->count) return false;
    relo_slot *s = relo__handle_slot(t, slot);
    if (s->refcount != 0 || s->generation == 0 || gen == 0 || gen > RELO_HANDLE_GEN_MAX) return false;
    s->generation = gen;
    return true;
}
