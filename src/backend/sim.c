/*
 * backend/sim.c — the simulated backend: bookkeeping only, no bytes, so a
 * replay of a trace far larger than this machine's memory runs.
 *
 * A buffer is a small host record (relo__malloc) holding its virtual
 * address; addresses come from a bump counter, each rounded up to the
 * alignment's power of two, so they are distinct, aligned and never 0.
 * Address space is never reused: 2^64 bytes outlast any trace. write and
 * read are absent (relo then reports RELO_ERR_UNSUPPORTED); copies succeed
 * at once. Each buffer takes its size rounded up to the granule (2 MiB by
 * default, as cudaMalloc) from the capacity, so small pages cost here what
 * they cost on a GPU. Fault injection, capacity and counts are shared with
 * the host backend (hostlike.c).
 */
#include "backend/hostlike.h"
#include "hostmem.h"

/* One simulated buffer. Its address makes it distinct from every other. */
typedef struct sim_buffer {
    uint64_t address;
    uint64_t size;
} sim_buffer;

static relo_status sim_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    relo__hostlike *h = ctx;
    relo_status s = relo__hostlike_alloc_admit(h, size);
    if (s != RELO_OK) return s;

    uint64_t mask = h->address_alignment - 1;
    if (size > UINT64_MAX - mask) return RELO_ERR_OUT_OF_MEMORY;
    uint64_t span = (size + mask) & ~mask;
    /* Running out of virtual addresses is the device refusing. */
    if (h->next_address > UINT64_MAX - span) return RELO_ERR_OUT_OF_MEMORY;

    sim_buffer *b = relo__malloc(sizeof *b);
    if (!b) return RELO_ERR_HOST_MEMORY;
    b->address = h->next_address;
    b->size = size;
    h->next_address += span;

    relo__hostlike_alloc_done(h, size);
    *buffer = b;
    *address = b->address;
    return RELO_OK;
}

static void sim_free(void *ctx, void *buffer, uint64_t size)
{
    if (!buffer) return;
    relo__free(buffer);
    relo__hostlike_free_done(ctx, size);
}

static relo_status sim_copy(void *ctx, void *src, uint64_t src_offset, void *dst,
                            uint64_t dst_offset, uint64_t n)
{
    relo__hostlike *h = ctx;
    (void)src;
    (void)src_offset;
    (void)dst;
    (void)dst_offset;
    (void)n;
    relo_status s = relo__hostlike_copy_admit(h);
    if (s != RELO_OK) return s;
    relo__hostlike_copy_done(h);
    return RELO_OK;
}

static const relo_backend_ops sim_ops = {
    .alloc = sim_alloc,
    .free = sim_free,
    .flush = relo__hostlike_flush,
    .write = NULL,
    .read = NULL,
    .wait_device = relo__hostlike_wait_device,
    .copy = sim_copy,
    .wait_copies = relo__hostlike_wait_copies,
    .stream_add = NULL,
    .stream_remove = NULL,
    .destroy = relo__hostlike_destroy,
};

/* Contract in relo_backend.h. */
relo_status relo_backend_sim_create(const relo_host_desc *desc, relo_backend **out)
{
    return relo__hostlike_create(&sim_ops, desc, RELO_HOSTLIKE_SIM_GRANULE, out);
}
