/*
 * sparse_backend.c — the sparse backend of fuzz_ops (sparse_backend.h):
 * buffers as tables of 1 KiB chunks made on first touch, copies queued
 * until wait_copies, the backend contract checked on every call, faults,
 * the wait hook and the gates.
 */
#include "sparse_backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK UINT64_C(1024)
#define LEAF 256u /* chunks per leaf of a buffer's table */
#define FRESH_BYTE 0xA5
#define LIVE_MAGIC UINT64_C(0x53504152534542FF)
#define DEAD_MAGIC UINT64_C(0x4445414442554621)

typedef struct sp_buffer {
    uint64_t magic; /* LIVE_MAGIC until freed */
    uint64_t size;
    uint64_t nleaves;
    uint8_t ***leaves;  /* LEAF chunks each, made on first touch; a NULL leaf
                           or chunk was never written: reads as FRESH_BYTE */
    uint32_t in_flight; /* queued copies that read or write it */
} sp_buffer;

typedef struct sp_queued {
    sp_buffer *src, *dst;
    uint64_t src_offset, dst_offset, n;
} sp_queued;

typedef struct sp_gate {
    bool armed; /* the next call of armed_for stops */
    pthread_t armed_for;
    bool parked; /* a call stands here now */
    bool open;   /* the parked call may go on */
} sp_gate;

struct sparse_backend {
    pthread_mutex_t mu; /* everything below but the gates and hooks */
    relo_backend_props props;
    sparse_faults faults;
    uint64_t allocs_since_faults, copies_since_faults;
    uint64_t bytes_held;
    uint64_t next_address;
    sp_queued *queue; /* copies enqueued since the last wait_copies */
    size_t queued, queue_cap;
    sparse_range unknown[256]; /* targets of copies whose wait failed */
    size_t n_unknown;
    bool unknown_more; /* and more than fit */

    pthread_mutex_t gate_mu; /* the gates */
    pthread_cond_t gate_cv;
    sp_gate gates[SPARSE_OP_COUNT];

    /* Set while no relo call runs (between fuzz inputs). */
    void (*wait_hook)(void *user);
    void *wait_user;
    void (*park_hook)(void *user);
    void *park_user;
};

static void breach(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void breach(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "sparse backend: contract broken: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---- bytes (the caller holds mu) ---------------------------------------- */

static void check_range(const sp_buffer *b, uint64_t offset, uint64_t n, const char *what)
{
    if (!b) breach("%s on a NULL buffer", what);
    if (b->magic != LIVE_MAGIC) breach("%s on a buffer that is not live", what);
    if (offset > b->size || n > b->size - offset)
        breach("%s of [%llu, +%llu) outside a buffer of %llu bytes", what, (unsigned long long)offset,
               (unsigned long long)n, (unsigned long long)b->size);
}

static uint8_t *chunk_of(sp_buffer *b, uint64_t i, bool make)
{
    uint8_t ***leaf = &b->leaves[i / LEAF];
    if (!*leaf) {
        if (!make) return NULL;
        *leaf = calloc(LEAF, sizeof **leaf);
        if (!*leaf) breach("out of host memory");
    }
    uint8_t **chunk = &(*leaf)[i % LEAF];
    if (!*chunk && make) {
        *chunk = malloc(CHUNK);
        if (!*chunk) breach("out of host memory");
        memset(*chunk, FRESH_BYTE, CHUNK);
    }
    return *chunk;
}

static void put_bytes(sp_buffer *b, uint64_t offset, const uint8_t *src, uint64_t n)
{
    while (n) {
        uint64_t in = offset % CHUNK, seg = CHUNK - in < n ? CHUNK - in : n;
        memcpy(chunk_of(b, offset / CHUNK, true) + in, src, (size_t)seg);
        offset += seg;
        src += seg;
        n -= seg;
    }
}

static void get_bytes(sp_buffer *b, uint64_t offset, uint8_t *dst, uint64_t n)
{
    while (n) {
        uint64_t in = offset % CHUNK, seg = CHUNK - in < n ? CHUNK - in : n;
        const uint8_t *c = chunk_of(b, offset / CHUNK, false);
        if (c)
            memcpy(dst, c + in, (size_t)seg);
        else
            memset(dst, FRESH_BYTE, (size_t)seg);
        offset += seg;
        dst += seg;
        n -= seg;
    }
}

/* Copies n bytes chunk by chunk; an untouched source chunk leaves (or
 * makes) the target fresh without making a chunk for it. */
static void move_bytes(sp_buffer *s, uint64_t so, sp_buffer *d, uint64_t doff, uint64_t n)
{
    while (n) {
        uint64_t sin = so % CHUNK, din = doff % CHUNK;
        uint64_t seg = CHUNK - sin < CHUNK - din ? CHUNK - sin : CHUNK - din;
        if (seg > n) seg = n;
        const uint8_t *sc = chunk_of(s, so / CHUNK, false);
        if (sc) {
            memcpy(chunk_of(d, doff / CHUNK, true) + din, sc + sin, (size_t)seg);
        } else {
            uint8_t *dc = chunk_of(d, doff / CHUNK, false);
            if (dc) memset(dc + din, FRESH_BYTE, (size_t)seg);
        }
        so += seg;
        doff += seg;
        n -= seg;
    }
}

static bool ranges_meet(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return an && bn && a < b + bn && b < a + an;
}

static void check_copy(sp_buffer *s, uint64_t so, sp_buffer *d, uint64_t doff, uint64_t n)
{
    check_range(s, so, n, "copy source");
    check_range(d, doff, n, "copy target");
    if (s == d && ranges_meet(so, n, doff, n))
        breach("a copy's source [%llu, +%llu) meets its target at %llu", (unsigned long long)so,
               (unsigned long long)n, (unsigned long long)doff);
}

/* A read or write must not touch the target of a copy in flight. */
static void check_no_target(const struct sparse_backend *sb, const sp_buffer *b, uint64_t offset, uint64_t n)
{
    for (size_t i = 0; i < sb->queued; i++) {
        const sp_queued *c = &sb->queue[i];
        if (c->dst == b && ranges_meet(offset, n, c->dst_offset, c->n))
            breach("a transfer of [%llu, +%llu) meets the target of a copy in flight at %llu",
                   (unsigned long long)offset, (unsigned long long)n, (unsigned long long)c->dst_offset);
    }
}

/* ---- gates ---------------------------------------------------------------- */

static void gate_pass(sparse_backend *sb, sparse_op op)
{
    sp_gate *g = &sb->gates[op];
    pthread_mutex_lock(&sb->gate_mu);
    if (!g->armed || !pthread_equal(g->armed_for, pthread_self())) {
        pthread_mutex_unlock(&sb->gate_mu);
        return;
    }
    g->armed = false;
    g->parked = true;
    void (*hook)(void *) = sb->park_hook;
    void *user = sb->park_user;
    pthread_mutex_unlock(&sb->gate_mu);
    if (hook) hook(user);
    pthread_mutex_lock(&sb->gate_mu);
    while (!g->open) pthread_cond_wait(&sb->gate_cv, &sb->gate_mu);
    g->open = false;
    g->parked = false;
    pthread_mutex_unlock(&sb->gate_mu);
}

void sparse_gate_arm(sparse_backend *sb, sparse_op op, pthread_t thread)
{
    pthread_mutex_lock(&sb->gate_mu);
    sb->gates[op].armed = true;
    sb->gates[op].armed_for = thread;
    pthread_mutex_unlock(&sb->gate_mu);
}

bool sparse_gate_parked(sparse_backend *sb, sparse_op op)
{
    pthread_mutex_lock(&sb->gate_mu);
    bool parked = sb->gates[op].parked;
    pthread_mutex_unlock(&sb->gate_mu);
    return parked;
}

bool sparse_any_parked(sparse_backend *sb)
{
    bool parked = false;
    pthread_mutex_lock(&sb->gate_mu);
    for (int i = 0; i < SPARSE_OP_COUNT; i++) parked |= sb->gates[i].parked;
    pthread_mutex_unlock(&sb->gate_mu);
    return parked;
}

void sparse_gates_open(sparse_backend *sb)
{
    pthread_mutex_lock(&sb->gate_mu);
    for (int i = 0; i < SPARSE_OP_COUNT; i++) {
        sb->gates[i].armed = false;
        if (sb->gates[i].parked) sb->gates[i].open = true;
    }
    pthread_cond_broadcast(&sb->gate_cv);
    pthread_mutex_unlock(&sb->gate_mu);
}

void sparse_set_wait_hook(sparse_backend *sb, void (*hook)(void *user), void *user)
{
    sb->wait_hook = hook;
    sb->wait_user = user;
}

void sparse_set_park_hook(sparse_backend *sb, void (*hook)(void *user), void *user)
{
    pthread_mutex_lock(&sb->gate_mu);
    sb->park_hook = hook;
    sb->park_user = user;
    pthread_mutex_unlock(&sb->gate_mu);
}

/* ---- the operations ------------------------------------------------------- */

static relo_status sp_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    sparse_backend *sb = ctx;
    if (size == 0 || size > sb->props.max_page_size)
        breach("alloc of %llu bytes (max page %llu)", (unsigned long long)size,
               (unsigned long long)sb->props.max_page_size);
    pthread_mutex_lock(&sb->mu);
    relo_status st = RELO_OK;
    const sparse_faults *f = &sb->faults;
    if (f->refuse_alloc_above && size > f->refuse_alloc_above) st = RELO_ERR_OUT_OF_MEMORY;
    if (f->refuse_alloc_after && sb->allocs_since_faults >= f->refuse_alloc_after)
        st = RELO_ERR_OUT_OF_MEMORY;
    if (sb->props.capacity && size > sb->props.capacity - sb->bytes_held) st = RELO_ERR_OUT_OF_MEMORY;
    sp_buffer *b = NULL;
    if (st == RELO_OK) {
        b = calloc(1, sizeof *b);
        uint64_t nleaves = ((size + CHUNK - 1) / CHUNK + LEAF - 1) / LEAF;
        if (b) b->leaves = calloc((size_t)nleaves, sizeof *b->leaves);
        if (!b || !b->leaves) {
            free(b);
            b = NULL;
            st = RELO_ERR_HOST_MEMORY;
        } else {
            b->magic = LIVE_MAGIC;
            b->size = size;
            b->nleaves = nleaves;
            sb->allocs_since_faults++;
            sb->bytes_held += size;
            *address = sb->next_address;
            sb->next_address += (size + CHUNK - 1) / CHUNK * CHUNK;
            *buffer = b;
        }
    }
    pthread_mutex_unlock(&sb->mu);
    return st;
}

static void sp_free(void *ctx, void *buffer, uint64_t size)
{
    sparse_backend *sb = ctx;
    sp_buffer *b = buffer;
    pthread_mutex_lock(&sb->mu);
    check_range(b, 0, 0, "free");
    if (b->size != size)
        breach("free of %llu bytes, allocated %llu", (unsigned long long)size, (unsigned long long)b->size);
    if (b->in_flight) breach("free of a buffer that %u copies in flight read or write", b->in_flight);
    for (uint64_t i = 0; i < b->nleaves; i++) {
        for (unsigned k = 0; b->leaves[i] && k < LEAF; k++) free(b->leaves[i][k]);
        free(b->leaves[i]);
    }
    free(b->leaves);
    b->magic = DEAD_MAGIC;
    free(b);
    sb->bytes_held -= size;
    pthread_mutex_unlock(&sb->mu);
}

static relo_status sp_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    sparse_backend *sb = ctx;
    gate_pass(sb, SPARSE_WRITE);
    pthread_mutex_lock(&sb->mu);
    check_range(buffer, offset, n, "write");
    check_no_target(sb, buffer, offset, n);
    put_bytes(buffer, offset, src, n);
    pthread_mutex_unlock(&sb->mu);
    return RELO_OK;
}

static relo_status sp_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    sparse_backend *sb = ctx;
    gate_pass(sb, SPARSE_READ);
    pthread_mutex_lock(&sb->mu);
    check_range(buffer, offset, n, "read");
    check_no_target(sb, buffer, offset, n);
    get_bytes(buffer, offset, dst, n);
    pthread_mutex_unlock(&sb->mu);
    return RELO_OK;
}

static relo_status sp_wait_device(void *ctx)
{
    sparse_backend *sb = ctx;
    gate_pass(sb, SPARSE_WAIT_DEVICE);
    if (sb->wait_hook) sb->wait_hook(sb->wait_user);
    pthread_mutex_lock(&sb->mu);
    relo_status st = sb->faults.fail_wait_device ? RELO_ERR_BACKEND : RELO_OK;
    pthread_mutex_unlock(&sb->mu);
    return st;
}

static relo_status sp_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                           uint64_t n)
{
    sparse_backend *sb = ctx;
    gate_pass(sb, SPARSE_COPY);
    pthread_mutex_lock(&sb->mu);
    relo_status st = RELO_OK;
    check_copy(src, src_offset, dst, dst_offset, n);
    if (sb->faults.refuse_copies ||
        (sb->faults.refuse_copy_after && sb->copies_since_faults >= sb->faults.refuse_copy_after))
        st = RELO_ERR_BACKEND;
    if (st == RELO_OK && sb->queued == sb->queue_cap) {
        size_t cap = sb->queue_cap ? 2 * sb->queue_cap : 64;
        sp_queued *q = realloc(sb->queue, cap * sizeof *q);
        if (!q) {
            st = RELO_ERR_HOST_MEMORY;
        } else {
            sb->queue = q;
            sb->queue_cap = cap;
        }
    }
    if (st == RELO_OK) {
        sp_queued c = {src, dst, src_offset, dst_offset, n};
        sb->queue[sb->queued++] = c;
        c.src->in_flight++;
        c.dst->in_flight++;
        sb->copies_since_faults++;
    }
    pthread_mutex_unlock(&sb->mu);
    return st;
}

static relo_status sp_wait_copies(void *ctx)
{
    sparse_backend *sb = ctx;
    gate_pass(sb, SPARSE_WAIT_COPIES);
    pthread_mutex_lock(&sb->mu);
    /* A failed wait leaves the outcome unknown to relo; the copies land
     * anyway, as on a device that reported late. */
    relo_status st = sb->faults.fail_wait_copies ? RELO_ERR_BACKEND : RELO_OK;
    for (size_t i = 0; i < sb->queued; i++) {
        sp_queued *c = &sb->queue[i];
        check_copy(c->src, c->src_offset, c->dst, c->dst_offset, c->n);
        move_bytes(c->src, c->src_offset, c->dst, c->dst_offset, c->n);
        c->src->in_flight--;
        c->dst->in_flight--;
        if (st == RELO_OK) continue;
        if (sb->n_unknown == sizeof sb->unknown / sizeof sb->unknown[0]) {
            sb->unknown_more = true;
        } else {
            sparse_range r = {c->dst, c->dst_offset, c->n};
            sb->unknown[sb->n_unknown++] = r;
        }
    }
    sb->queued = 0;
    pthread_mutex_unlock(&sb->mu);
    return st;
}

static void sp_destroy(void *ctx)
{
    sparse_backend *sb = ctx;
    if (sb->queued) breach("destroyed with %zu copies in flight", sb->queued);
    if (sb->bytes_held) breach("destroyed holding %llu bytes", (unsigned long long)sb->bytes_held);
    free(sb->queue);
    pthread_mutex_destroy(&sb->mu);
    pthread_mutex_destroy(&sb->gate_mu);
    pthread_cond_destroy(&sb->gate_cv);
    free(sb);
}

relo_status sparse_backend_create(const relo_backend_props *props, sparse_backend **ctx, relo_backend **out)
{
    static const relo_backend_ops ops = {
        .alloc = sp_alloc,
        .free = sp_free,
        .write = sp_write,
        .read = sp_read,
        .wait_device = sp_wait_device,
        .copy = sp_copy,
        .wait_copies = sp_wait_copies,
        .destroy = sp_destroy,
    };
    sparse_backend *sb = calloc(1, sizeof *sb);
    if (!sb) return RELO_ERR_HOST_MEMORY;
    pthread_mutex_init(&sb->mu, NULL);
    pthread_mutex_init(&sb->gate_mu, NULL);
    pthread_cond_init(&sb->gate_cv, NULL);
    sb->props = *props;
    sb->props.granule = 1;
    sb->next_address = UINT64_C(1) << 32;
    relo_status st = relo_backend_create(&ops, sb, &sb->props, out);
    if (st != RELO_OK) {
        sp_destroy(sb);
        return st;
    }
    *ctx = sb;
    return RELO_OK;
}

void sparse_set_faults(sparse_backend *sb, const sparse_faults *faults)
{
    pthread_mutex_lock(&sb->mu);
    sb->faults = *faults;
    sb->allocs_since_faults = 0;
    sb->copies_since_faults = 0;
    pthread_mutex_unlock(&sb->mu);
}

uint64_t sparse_bytes_held(sparse_backend *sb)
{
    pthread_mutex_lock(&sb->mu);
    uint64_t held = sb->bytes_held;
    pthread_mutex_unlock(&sb->mu);
    return held;
}

size_t sparse_take_unknown(sparse_backend *sb, sparse_range *out, size_t max, bool *more)
{
    pthread_mutex_lock(&sb->mu);
    size_t n = sb->n_unknown < max ? sb->n_unknown : max;
    memcpy(out, sb->unknown, n * sizeof *out);
    *more = sb->unknown_more || n < sb->n_unknown;
    sb->n_unknown = 0;
    sb->unknown_more = false;
    pthread_mutex_unlock(&sb->mu);
    return n;
}

void sparse_peek(sparse_backend *sb, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    pthread_mutex_lock(&sb->mu);
    check_range(buffer, offset, n, "peek");
    get_bytes(buffer, offset, dst, n);
    pthread_mutex_unlock(&sb->mu);
}

void sparse_runtime_copy(sparse_backend *sb, const relo_binding *from, const relo_binding *to, uint64_t n)
{
    pthread_mutex_lock(&sb->mu);
    check_copy(from->buffer, from->offset, to->buffer, to->offset, n);
    move_bytes(from->buffer, from->offset, to->buffer, to->offset, n);
    pthread_mutex_unlock(&sb->mu);
}
