/*
 * shadow.h — the shadow model the randomized tests compare relo against:
 * every live handle with its stream, size, owner count and the key of the
 * byte pattern written into it, plus a ring of released handle values
 * that must stay stale. Include after fixture.h.
 */
#ifndef RELO_TEST_SHADOW_H
#define RELO_TEST_SHADOW_H

#include <stdlib.h>

#include "fixture.h"

#define SHADOW_STREAMS 4
#define SHADOW_STALE 256

typedef struct shadow_alloc {
    relo_handle h;
    uint64_t size;
    uint64_t key; /* pattern key (fx_write_pattern) */
    uint32_t refs;
    int stream;
} shadow_alloc;

typedef struct shadow {
    shadow_alloc *a;
    size_t n, cap;
    uint64_t count[SHADOW_STREAMS]; /* live allocations per stream */
    uint64_t bytes[SHADOW_STREAMS]; /* requested bytes per stream */
    relo_handle stale[SHADOW_STALE];
    size_t n_stale; /* released so far (ring index) */
    uint64_t next_key;
    bool no_bytes; /* sim backend: no patterns to write or check */
} shadow;

static inline void shadow_free(shadow *m)
{
    free(m->a);
    memset(m, 0, sizeof *m);
}

/** Adds a fresh allocation (refcount 1) and writes its pattern. */
static inline shadow_alloc *shadow_add(shadow *m, relo_device *d, relo_handle h, uint64_t size, int stream)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->a = realloc(m->a, m->cap * sizeof *m->a);
    }
    shadow_alloc *x = &m->a[m->n++];
    x->h = h;
    x->size = size;
    x->key = ++m->next_key;
    x->refs = 1;
    x->stream = stream;
    m->count[stream]++;
    m->bytes[stream] += size;
    if (!m->no_bytes) expect_ok(fx_write_pattern(d, h, x->key, size));
    return x;
}

/** Drops one owner of allocation i (relo_release included); at zero the
 *  handle joins the stale ring. Returns whether it was freed. */
static inline bool shadow_release(shadow *m, relo_device *d, size_t i)
{
    shadow_alloc *x = &m->a[i];
    expect_ok(relo_release(d, x->h));
    if (--x->refs > 0) return false;
    m->count[x->stream]--;
    m->bytes[x->stream] -= x->size;
    m->stale[m->n_stale++ % SHADOW_STALE] = x->h;
    m->a[i] = m->a[--m->n];
    return true;
}

/** Rewrites allocation i with a new pattern key. */
static inline void shadow_rewrite(shadow *m, relo_device *d, size_t i)
{
    m->a[i].key = ++m->next_key;
    if (!m->no_bytes) expect_ok(fx_write_pattern(d, m->a[i].h, m->a[i].key, m->a[i].size));
}

/** Number of live allocations whose bytes differ from their pattern. */
static inline int shadow_verify(const shadow *m, relo_device *d)
{
    int bad = 0;
    for (size_t i = 0; i < m->n && !m->no_bytes; i++) {
        const shadow_alloc *x = &m->a[i];
        if (!fx_check_pattern(d, x->h, x->key, x->size)) {
            if (bad < 5)
                fprintf(stderr, "  allocation %#llx (%llu B, stream %d) lost its bytes\n",
                        (unsigned long long)x->h.id, (unsigned long long)x->size, x->stream);
            bad++;
        }
    }
    return bad;
}

/** Whether a random stale handle is refused by every handle call. */
static inline void shadow_check_stale(const shadow *m, relo_stream *s, relo_device *d, uint64_t *rng)
{
    if (!m->n_stale) return;
    size_t held = m->n_stale < SHADOW_STALE ? m->n_stale : SHADOW_STALE;
    relo_handle h = m->stale[fx_rand(rng) % held];
    relo_binding b;
    uint8_t byte;
    expect_status(relo_resolve(s, h, &b), RELO_ERR_NOT_FOUND);
    if (!m->no_bytes) expect_status(relo_read(d, h, 0, &byte, 1), RELO_ERR_NOT_FOUND);
    expect_status(relo_retain(d, h), RELO_ERR_NOT_FOUND);
    expect_status(relo_release(d, h), RELO_ERR_NOT_FOUND);
}

/** Every handle value in the stale ring still resolves to NOT_FOUND. */
static inline void shadow_check_all_stale(const shadow *m, relo_stream *s)
{
    size_t held = m->n_stale < SHADOW_STALE ? m->n_stale : SHADOW_STALE;
    for (size_t i = 0; i < held; i++) {
        relo_binding b;
        expect_status(relo_resolve(s, m->stale[i], &b), RELO_ERR_NOT_FOUND);
    }
}

static int shadow_cmp_binding_(const void *pa, const void *pb)
{
    const relo_binding *a = pa, *b = pb;
    if (a->buffer != b->buffer) return (uintptr_t)a->buffer < (uintptr_t)b->buffer ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/** Resolves every live allocation (sizes must match) and checks that no
 *  two share a byte (invariant 1). Resolving on s while s records would
 *  touch pages, so callers do this only outside captures. */
static inline void shadow_check_layout(const shadow *m, relo_stream *s)
{
    relo_binding *b = malloc((m->n + 1) * sizeof *b);
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        relo_binding x;
        relo_status st = relo_resolve(s, m->a[i].h, &x);
        expect_ok(st);
        if (st != RELO_OK) continue;
        expect_eq(x.size, m->a[i].size);
        if (x.size) b[k++] = x;
    }
    qsort(b, k, sizeof *b, shadow_cmp_binding_);
    for (size_t i = 1; i < k; i++) {
        if (b[i].buffer == b[i - 1].buffer) expect_ge(b[i].offset, b[i - 1].offset + b[i - 1].size);
    }
    free(b);
}

/** Index of a random live allocation (m->n must be > 0). */
static inline size_t shadow_pick(const shadow *m, uint64_t *rng)
{
    return (size_t)(fx_rand(rng) % m->n);
}

#endif /* RELO_TEST_SHADOW_H */
