/*
 * backend/sim.c — the simulated backend: bookkeeping only, no bytes, so a
 * replay of a trace far larger than this machine's memory runs.
 *
 * A buffer is its virtual address, cast to a pointer (a small host record
 * holding it where pointers are narrower than 64 bits); addresses come from
 * a bump counter, each rounded up to the alignment's power of two, so they
 * are distinct, aligned and never 0.
 * Address space is never reused: 2^64 bytes outlast any trace. write and
 * read are absent (relo then reports RELO_ERR_UNSUPPORTED); copies succeed
 * at once. Each buffer takes its size rounded up to the granule (2 MiB by
 * default, as cudaMalloc) from the capacity, so small pages cost here what
 * they cost on a GPU. Fault injection, capacity and counts are shared with
 * the host backend (hostlike.c).
 */
#include "backend/hostlike.h"
#include "base/hostmem.h"

/* A buffer is its address where a pointer holds 64 bits (no host memory
 * per buffer); elsewhere a small record holding it. */
#if UINTPTR_MAX >= UINT64_MAX
#define SIM_BUFFER_IS_ADDRESS 1
#else
#define SIM_BUFFER_IS_ADDRESS 0
typedef struct sim_buffer {
    uint64_t address;
} sim_buffer;
#endif

static relo_status sim_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    relo__hostlike *h = ctx;
    uint64_t a = 0;
    relo_status s = relo__hostlike_alloc_claim(h, size, &a);
    if (s != RELO_OK) return s;
#if SIM_BUFFER_IS_ADDRESS
    *buffer = (void *)(uintptr_t)a;
#else
    sim_buffer *b = relo__malloc(sizeof *b);
    if (!b) {
        relo__hostlike_alloc_unclaim(h, size);
        return RELO_ERR_HOST_MEMORY;
    }
    b->address = a;
    *buffer = b;
#endif
    *address = a;
    return RELO_OK;
}

static void sim_free(void *ctx, void *buffer, uint64_t size)
{
    if (!buffer) return;
#if !SIM_BUFFER_IS_ADDRESS
    relo__free(buffer);
#endif
    relo__hostlike_free_done(ctx, size);
}

static relo_status sim_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                            uint64_t n)
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
