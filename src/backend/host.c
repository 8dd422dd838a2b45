/*
 * backend/host.c — the host backend: device buffers are blocks of host
 * memory, so tests and debuggers see real bytes. It doubles as the
 * debugging backend: a fresh buffer is filled with 0xA5 and a freed one with
 * 0xDD before it goes, so a byte relocation lost or a read after free shows.
 *
 * A buffer's identity is the block's first byte and its address is that
 * pointer as an integer, aligned to the smallest power of two at least the
 * configured alignment (what posix_memalign can give; glibc maps large
 * blocks straight from the kernel). Copies are memmove, done at once, so
 * wait_copies has nothing to wait for. Fault injection, capacity and counts
 * live in hostlike.c, shared with the simulated backend.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/hostlike.h"

#define HOST_FRESH_BYTE 0xA5
#define HOST_FREED_BYTE 0xDD

static relo_status host_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    relo__hostlike *h = ctx;
    relo_status s = relo__hostlike_alloc_claim(h, size, NULL);
    if (s != RELO_OK) return s;

    void *p = NULL;
    /* Host memory is this backend's device memory: running out of it is the
     * device refusing, which relo may clean up after and retry. */
    if (size > SIZE_MAX || posix_memalign(&p, (size_t)h->address_alignment, (size_t)size) != 0 || !p) {
        relo__hostlike_alloc_unclaim(h, size);
        return RELO_ERR_OUT_OF_MEMORY;
    }
    memset(p, HOST_FRESH_BYTE, (size_t)size);
    *buffer = p;
    *address = (uint64_t)(uintptr_t)p;
    return RELO_OK;
}

static void host_free(void *ctx, void *buffer, uint64_t size)
{
    if (!buffer) return;
    if (!((relo__hostlike *)ctx)->no_free_fill) memset(buffer, HOST_FREED_BYTE, (size_t)size);
    free(buffer);
    relo__hostlike_free_done(ctx, size);
}

static relo_status host_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    (void)ctx;
    if (n) memcpy((unsigned char *)buffer + offset, src, (size_t)n);
    return RELO_OK;
}

static relo_status host_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    (void)ctx;
    if (n) memcpy(dst, (const unsigned char *)buffer + offset, (size_t)n);
    return RELO_OK;
}

static relo_status host_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                             uint64_t n)
{
    relo__hostlike *h = ctx;
    relo_status s = relo__hostlike_copy_admit(h);
    if (s != RELO_OK) return s;
    /* memmove rather than memcpy: the contract promises no overlap, but a
     * core bug that breaks the promise should corrupt nothing extra. */
    if (n) memmove((unsigned char *)dst + dst_offset, (const unsigned char *)src + src_offset, (size_t)n);
    relo__hostlike_copy_done(h);
    return RELO_OK;
}

static const relo_backend_ops host_ops = {
    .alloc = host_alloc,
    .free = host_free,
    .flush = relo__hostlike_flush,
    .write = host_write,
    .read = host_read,
    .wait_device = relo__hostlike_wait_device,
    .copy = host_copy,
    .wait_copies = relo__hostlike_wait_copies,
    .stream_add = NULL,
    .stream_remove = NULL,
    .destroy = relo__hostlike_destroy,
};

/* Contract in relo_backend.h. */
relo_status relo_backend_host_create(const relo_host_desc *desc, relo_backend **out)
{
    return relo__hostlike_create(&host_ops, desc, RELO_HOSTLIKE_HOST_GRANULE, out);
}
