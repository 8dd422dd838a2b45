/*
 * backend/hostlike.c — the half of the host and simulated backends that does
 * not depend on what a buffer is: configuration, fault injection, capacity
 * accounting (each buffer charged its size rounded up to the granule, as
 * a GPU driver charges) and call counts, plus the two public queries that work on
 * either kind (relo_backend_host_counts, relo_backend_host_set_faults).
 *
 * Counting rules, which tests rely on:
 *   - allocs, frees and copies count calls that were served; a refused
 *     alloc or copy is not counted.
 *   - wait_device, wait_copies and flushes count every call, including
 *     waits that report an injected failure: the core did wait.
 *   - refuse_alloc_after = N lets N allocs succeed and refuses every later
 *     one; refuse_copy_after likewise for copies. Both count from the
 *     backend's creation or from the last relo_backend_host_set_faults call,
 *     so a test can finish its setup and then say "N more, then refuse".
 */
#include "backend/hostlike.h"

#include <string.h>

#include "base/hostmem.h"

#define HOSTLIKE_DEFAULT_ALIGNMENT 64u
#define HOSTLIKE_DEFAULT_MAX_PAGE (UINT64_C(1) << 30)

/* The smallest power of two ≥ x (x ≥ 1), or 0 when it does not fit. */
static uint64_t round_up_pow2(uint64_t x)
{
    uint64_t p = 1;
    while (p < x) {
        if (p > UINT64_MAX / 2) return 0;
        p *= 2;
    }
    return p;
}

static void copy_faults(relo_host_desc *to, const relo_host_desc *from)
{
    to->refuse_alloc_above = from->refuse_alloc_above;
    to->refuse_alloc_after = from->refuse_alloc_after;
    to->refuse_copies = from->refuse_copies;
    to->fail_wait_copies = from->fail_wait_copies;
    to->fail_wait_device = from->fail_wait_device;
    to->refuse_copy_after = from->refuse_copy_after;
}

/* Validates desc (NULL = every default), fills *ctx and *props with the
 * effective values; default_granule stands in for desc->granule == 0.
 * Returns RELO_OK or RELO_ERR_INVALID_ARGUMENT (max page size below the
 * alignment, or an alignment whose power-of-two round-up overflows). */
static relo_status hostlike_init(relo__hostlike *ctx, const relo_host_desc *desc, uint64_t default_granule,
                                 relo_backend_props *props)
{
    relo_host_desc zero;
    memset(&zero, 0, sizeof zero);
    if (!desc) desc = &zero;

    uint64_t alignment = desc->alignment ? desc->alignment : HOSTLIKE_DEFAULT_ALIGNMENT;
    uint64_t max_page = desc->max_page_size ? desc->max_page_size : HOSTLIKE_DEFAULT_MAX_PAGE;
    if (max_page < alignment) return RELO_ERR_INVALID_ARGUMENT;
    /* Addresses honour the alignment rounded up to a power of two, and at
     * least a pointer's alignment, because that is what posix_memalign can
     * give; for power-of-two alignments that is the alignment itself. */
    uint64_t address_alignment = round_up_pow2(alignment);
    if (address_alignment == 0) return RELO_ERR_INVALID_ARGUMENT;
    if (address_alignment < sizeof(void *)) address_alignment = sizeof(void *);

    memset(ctx, 0, sizeof *ctx);
    if (!relo__lock_init(&ctx->lock)) return RELO_ERR_HOST_MEMORY;
    copy_faults(&ctx->faults, desc);
    ctx->capacity = desc->capacity;
    ctx->no_free_fill = desc->no_free_fill;
    ctx->max_page_size = max_page;
    ctx->granule = desc->granule ? desc->granule : default_granule;
    ctx->address_alignment = address_alignment;
    /* Sim addresses start well above zero so that no buffer's address is 0,
     * which the contract reserves for "no device address". */
    ctx->next_address = address_alignment > (UINT64_C(1) << 32) ? address_alignment : (UINT64_C(1) << 32);

    props->alignment = alignment;
    props->max_page_size = max_page;
    props->capacity = desc->capacity;
    props->granule = ctx->granule;
    return RELO_OK;
}

relo_status relo__hostlike_create(const relo_backend_ops *ops, const relo_host_desc *desc,
                                  uint64_t default_granule, relo_backend **out)
{
    if (!out) return RELO_ERR_INVALID_ARGUMENT;
    relo__hostlike *ctx = relo__malloc(sizeof *ctx);
    if (!ctx) return RELO_ERR_HOST_MEMORY;
    relo_backend_props props;
    relo_status s = hostlike_init(ctx, desc, default_granule, &props);
    if (s != RELO_OK) {
        relo__free(ctx);
        return s;
    }
    s = relo_backend_create(ops, ctx, &props, out);
    if (s != RELO_OK) relo__hostlike_destroy(ctx);
    return s;
}

/* What a buffer of size bytes takes from the capacity: size rounded up to
 * the granule (saturating). */
static uint64_t hostlike_charge(const relo__hostlike *ctx, uint64_t size)
{
    uint64_t g = ctx->granule;
    if (g <= 1 || size % g == 0) return size;
    uint64_t extra = g - size % g;
    return size > UINT64_MAX - extra ? UINT64_MAX : size + extra;
}

relo_status relo__hostlike_alloc_claim(relo__hostlike *ctx, uint64_t size, uint64_t *address)
{
    if (size == 0 || size > ctx->max_page_size) return RELO_ERR_BACKEND;
    uint64_t charge = hostlike_charge(ctx, size);
    uint64_t mask = ctx->address_alignment - 1, span = 0;
    if (address) {
        if (size > UINT64_MAX - mask) return RELO_ERR_OUT_OF_MEMORY;
        span = (size + mask) & ~mask;
    }
    relo__lock_acquire(&ctx->lock);
    relo_status st = RELO_OK;
    if (ctx->faults.refuse_alloc_above && size > ctx->faults.refuse_alloc_above) st = RELO_ERR_OUT_OF_MEMORY;
    if (ctx->faults.refuse_alloc_after && ctx->allocs_since_faults >= ctx->faults.refuse_alloc_after)
        st = RELO_ERR_OUT_OF_MEMORY;
    /* Written as a subtraction so that a size near 2^64 cannot wrap. */
    if (ctx->capacity &&
        (ctx->counts.bytes_held > ctx->capacity || charge > ctx->capacity - ctx->counts.bytes_held))
        st = RELO_ERR_OUT_OF_MEMORY;
    /* Running out of virtual addresses is the device refusing. */
    if (address && ctx->next_address > UINT64_MAX - span) st = RELO_ERR_OUT_OF_MEMORY;
    if (st == RELO_OK) {
        ctx->counts.allocs++;
        ctx->counts.bytes_held += charge;
        ctx->allocs_since_faults++;
        if (address) {
            *address = ctx->next_address;
            ctx->next_address += span;
        }
    }
    relo__lock_release(&ctx->lock);
    return st;
}

void relo__hostlike_alloc_unclaim(relo__hostlike *ctx, uint64_t size)
{
    relo__lock_acquire(&ctx->lock);
    uint64_t charge = hostlike_charge(ctx, size);
    ctx->counts.allocs--;
    ctx->counts.bytes_held = ctx->counts.bytes_held >= charge ? ctx->counts.bytes_held - charge : 0;
    ctx->allocs_since_faults--;
    relo__lock_release(&ctx->lock);
}

void relo__hostlike_free_done(relo__hostlike *ctx, uint64_t size)
{
    relo__lock_acquire(&ctx->lock);
    ctx->counts.frees++;
    /* A size that does not match the alloc is a core bug; saturating keeps
     * the count meaningful enough for the test that will catch it. */
    uint64_t charge = hostlike_charge(ctx, size);
    ctx->counts.bytes_held = ctx->counts.bytes_held >= charge ? ctx->counts.bytes_held - charge : 0;
    relo__lock_release(&ctx->lock);
}

relo_status relo__hostlike_copy_admit(const relo__hostlike *ctx)
{
    if (ctx->faults.refuse_copies) return RELO_ERR_BACKEND;
    if (ctx->faults.refuse_copy_after && ctx->copies_since_faults >= ctx->faults.refuse_copy_after)
        return RELO_ERR_BACKEND;
    return RELO_OK;
}

void relo__hostlike_copy_done(relo__hostlike *ctx)
{
    ctx->counts.copies++;
    ctx->copies_since_faults++;
}

void relo__hostlike_flush(void *ctx)
{
    ((relo__hostlike *)ctx)->counts.flushes++;
}

relo_status relo__hostlike_wait_device(void *ctx)
{
    relo__hostlike *h = ctx;
    h->counts.wait_device++;
    return h->faults.fail_wait_device ? RELO_ERR_BACKEND : RELO_OK;
}

relo_status relo__hostlike_wait_copies(void *ctx)
{
    relo__hostlike *h = ctx;
    h->counts.wait_copies++;
    return h->faults.fail_wait_copies ? RELO_ERR_BACKEND : RELO_OK;
}

void relo__hostlike_destroy(void *ctx)
{
    relo__lock_destroy(&((relo__hostlike *)ctx)->lock);
    relo__free(ctx);
}

/* Both kinds install relo__hostlike_destroy and no other backend does, so
 * that pointer identifies them; the ctx is then a relo__hostlike. */
static relo__hostlike *hostlike_of(const relo_backend *backend)
{
    if (!backend || backend->ops.destroy != relo__hostlike_destroy || !backend->ctx) return NULL;
    return backend->ctx;
}

/* Contract in relo_backend.h. */
relo_status relo_backend_host_counts(const relo_backend *backend, relo_host_counts *out)
{
    relo__hostlike *h = hostlike_of(backend);
    if (!h || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo__lock_acquire(&h->lock);
    *out = h->counts;
    relo__lock_release(&h->lock);
    return RELO_OK;
}

/* Contract in relo_backend.h. The counters that refuse_*_after compare
 * against restart here (see the top of this file). */
relo_status relo_backend_host_set_faults(relo_backend *backend, const relo_host_desc *desc)
{
    relo__hostlike *h = hostlike_of(backend);
    if (!h || !desc) return RELO_ERR_INVALID_ARGUMENT;
    relo__lock_acquire(&h->lock);
    copy_faults(&h->faults, desc);
    h->allocs_since_faults = 0;
    relo__lock_release(&h->lock);
    h->copies_since_faults = 0;
    return RELO_OK;
}
