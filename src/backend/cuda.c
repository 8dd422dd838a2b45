/*
 * backend/cuda.c — the CUDA backend, driver API only: a page is a
 * cuMemAlloc range; relocation copies are cuMemcpyDtoDAsync on one copy
 * stream; waiting for the device is cuCtxSynchronize, which finishes the
 * work of every stream of the context: the legacy default stream, streams
 * relo was never told of, and the copy stream. Each op makes the backend's
 * context current for its duration (push/pop), so it works from any runtime
 * thread. Every CUresult becomes a relo status here (cuda_status) and is
 * remembered for relo_backend_cuda_last_error.
 *
 * A buffer's identity is its base CUdeviceptr cast to a pointer: device
 * pointers are never 0, and no host record per page is needed. The only
 * field that changes after creation is last_error, and it is atomic, so
 * ops may run on several threads at once (the driver is thread-safe).
 */
#include "relo_cuda.h"

#include <stdatomic.h>

#include "backend/backend.h"
#include "base/hostmem.h"

/* What cuMemAlloc guarantees for every allocation's base. */
#define CUDA_ALIGNMENT 256u
#define CUDA_GRANULE (UINT64_C(2) << 20) /* what the driver rounds each allocation up to */

typedef struct cuda_ctx {
    CUcontext context;      /* the caller's; not owned; set at creation */
    CUstream copy_stream;   /* relocation copies; set at creation */
    int own_copy_stream;    /* the backend created it and destroys it */
    _Atomic int last_error; /* CUresult of the last failed driver call; atomic */
} cuda_ctx;

static void remember(cuda_ctx *c, CUresult r)
{
    atomic_store_explicit(&c->last_error, (int)r, memory_order_relaxed);
}

static relo_status cuda_status(cuda_ctx *c, CUresult r)
{
    if (r == CUDA_SUCCESS) return RELO_OK;
    remember(c, r);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? RELO_ERR_OUT_OF_MEMORY : RELO_ERR_BACKEND;
}

static relo_status push(cuda_ctx *c)
{
    return cuda_status(c, cuCtxPushCurrent(c->context));
}

/* Pops the context pushed by push; the first error of the op wins. */
static relo_status pop(cuda_ctx *c, relo_status s)
{
    CUcontext popped = NULL;
    CUresult r = cuCtxPopCurrent(&popped);
    if (r != CUDA_SUCCESS) remember(c, r);
    return s != RELO_OK ? s : (r == CUDA_SUCCESS ? RELO_OK : RELO_ERR_BACKEND);
}

static CUdeviceptr ptr_of(const void *buffer, uint64_t offset)
{
    return (CUdeviceptr)(uintptr_t)buffer + (CUdeviceptr)offset;
}

static relo_status cu_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    cuda_ctx *c = ctx;
    if (size == 0 || size > SIZE_MAX) return RELO_ERR_BACKEND;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    CUdeviceptr p = 0;
    s = cuda_status(c, cuMemAlloc(&p, (size_t)size));
    s = pop(c, s);
    if (s != RELO_OK) {
        /* A pop that failed after a served alloc must not leak the range. */
        if (p) (void)cuMemFree(p);
        return s;
    }
    *buffer = (void *)(uintptr_t)p;
    *address = (uint64_t)p;
    return RELO_OK;
}

static void cu_free(void *ctx, void *buffer, uint64_t size)
{
    cuda_ctx *c = ctx;
    (void)size;
    /* Free cannot fail by contract: a refused free leaks the range and
     * leaves its code for relo_backend_cuda_last_error. */
    if (push(c) != RELO_OK) return;
    (void)pop(c, cuda_status(c, cuMemFree(ptr_of(buffer, 0))));
}

static relo_status cu_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    cuda_ctx *c = ctx;
    if (n == 0) return RELO_OK;
    if (n > SIZE_MAX) return RELO_ERR_BACKEND;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    /* From pageable memory cuMemcpyHtoD may return once the bytes are
     * staged, before they land; the legacy stream's synchronize waits for
     * them, so the write is done when it returns, as the contract says, for
     * every stream and for relocation copies. No wait on the copy stream:
     * relo waits for every relocation copy before it points a handle at the
     * copied bytes. */
    s = cuda_status(c, cuMemcpyHtoD(ptr_of(buffer, offset), src, (size_t)n));
    if (s == RELO_OK) s = cuda_status(c, cuStreamSynchronize(CU_STREAM_LEGACY));
    return pop(c, s);
}

static relo_status cu_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    cuda_ctx *c = ctx;
    if (n == 0) return RELO_OK;
    if (n > SIZE_MAX) return RELO_ERR_BACKEND;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    s = cuda_status(c, cuMemcpyDtoH(dst, ptr_of(buffer, offset), (size_t)n));
    return pop(c, s);
}

static relo_status cu_wait_device(void *ctx)
{
    cuda_ctx *c = ctx;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    /* The whole context, not the streams relo was told of: work on the
     * legacy default stream, on a stream created without relo, or on a
     * per-thread default stream may touch relo's memory too, and the copy
     * stream is non-blocking, so nothing else would order that work before
     * the copies. One call, however many streams there are; the price is
     * also waiting for work that touches only memory of the runtime's own. */
    return pop(c, cuda_status(c, cuCtxSynchronize()));
}

static relo_status cu_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                           uint64_t n)
{
    cuda_ctx *c = ctx;
    if (n == 0) return RELO_OK;
    if (n > SIZE_MAX) return RELO_ERR_BACKEND;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    /* One stream runs its copies in the order enqueued, as relo_backend.h
     * asks of copies whose ranges meet (a slide's pieces). */
    s = cuda_status(c, cuMemcpyDtoDAsync(ptr_of(dst, dst_offset), ptr_of(src, src_offset), (size_t)n,
                                         c->copy_stream));
    return pop(c, s);
}

static relo_status cu_wait_copies(void *ctx)
{
    cuda_ctx *c = ctx;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    return pop(c, cuda_status(c, cuStreamSynchronize(c->copy_stream)));
}

static relo_status cu_stream_add(void *ctx, void *backend_stream)
{
    cuda_ctx *c = ctx;
    CUstream st = (CUstream)backend_stream;
    /* Nothing to record: wait_device finishes every stream of the context.
     * A stream of another context, though, is work relo could never wait
     * for; refuse it now. NULL (the legacy default stream), CU_STREAM_LEGACY
     * and CU_STREAM_PER_THREAD belong to whatever context is current, which
     * the push makes ours. */
    if (!st) return RELO_OK;
    relo_status s = push(c);
    if (s != RELO_OK) return s;
    CUcontext sctx = NULL;
    s = cuda_status(c, cuStreamGetCtx(st, &sctx));
    if (s == RELO_OK && sctx != c->context) s = RELO_ERR_BACKEND;
    return pop(c, s);
}

static void cu_destroy(void *ctx)
{
    cuda_ctx *c = ctx;
    if (c->own_copy_stream && push(c) == RELO_OK) {
        (void)cuStreamDestroy(c->copy_stream);
        (void)pop(c, RELO_OK);
    }
    relo__free(c);
}

static const relo_backend_ops cuda_ops = {
    .alloc = cu_alloc,
    .free = cu_free,
    /* cuMemFree returns memory to the device at once; nothing is cached. */
    .flush = NULL,
    .write = cu_write,
    .read = cu_read,
    .wait_device = cu_wait_device,
    .copy = cu_copy,
    .wait_copies = cu_wait_copies,
    .stream_add = cu_stream_add,
    /* Nothing is recorded per stream, so nothing to forget. */
    .stream_remove = NULL,
    .destroy = cu_destroy,
};

/* Device memory, with the context current: the total of cuMemGetInfo, or
 * cuDeviceTotalMem where that query fails. */
static CUresult query_total(CUdevice device, uint64_t *total)
{
    size_t free_bytes = 0, total_bytes = 0;
    CUresult r = cuMemGetInfo(&free_bytes, &total_bytes);
    if (r == CUDA_SUCCESS && total_bytes > 0) {
        *total = total_bytes;
        return CUDA_SUCCESS;
    }
    r = cuDeviceTotalMem(&total_bytes, device);
    if (r == CUDA_SUCCESS) *total = total_bytes;
    return r;
}

/* Contract in relo_cuda.h. */
relo_status relo_backend_cuda_create(CUcontext context, CUdevice device, CUstream copy_stream,
                                     relo_backend **out)
{
    if (!context || !out) return RELO_ERR_INVALID_ARGUMENT;
    cuda_ctx *c = relo__calloc(sizeof *c);
    if (!c) return RELO_ERR_HOST_MEMORY;
    c->context = context;
    c->copy_stream = copy_stream;
    atomic_init(&c->last_error, (int)CUDA_SUCCESS);

    relo_status s = push(c);
    if (s != RELO_OK) {
        relo__free(c);
        return RELO_ERR_BACKEND;
    }
    CUdevice ctx_device = 0;
    uint64_t total = 0;
    CUresult r = cuCtxGetDevice(&ctx_device);
    if (r == CUDA_SUCCESS && ctx_device != device) s = RELO_ERR_INVALID_ARGUMENT;
    if (r == CUDA_SUCCESS && s == RELO_OK) r = query_total(device, &total);
    if (r == CUDA_SUCCESS && s == RELO_OK && !copy_stream) {
        r = cuStreamCreate(&c->copy_stream, CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS) c->own_copy_stream = 1;
    }
    if (r != CUDA_SUCCESS) {
        (void)cuda_status(c, r);
        s = RELO_ERR_BACKEND;
    }
    s = pop(c, s);
    if (s == RELO_OK && total < CUDA_ALIGNMENT) s = RELO_ERR_BACKEND;
    if (s != RELO_OK) {
        cu_destroy(c);
        return s;
    }

    relo_backend_props props = {
        .alignment = CUDA_ALIGNMENT,
        /* cuMemAlloc takes any size the device holds; relo's capacity rule
         * keeps pages well below it in practice. */
        .max_page_size = total - total % CUDA_ALIGNMENT,
        .capacity = total,
        /* cuMemAlloc hands out whole 2 MiB pages of device memory. */
        .granule = CUDA_GRANULE,
    };
    s = relo_backend_create(&cuda_ops, c, &props, out);
    if (s != RELO_OK) cu_destroy(c);
    return s;
}

/* Contract in relo_cuda.h. */
relo_status relo_backend_cuda_last_error(const relo_backend *backend, CUresult *out)
{
    if (!backend || !out || backend->ops.destroy != cu_destroy || !backend->ctx)
        return RELO_ERR_INVALID_ARGUMENT;
    cuda_ctx *c = backend->ctx;
    *out = (CUresult)atomic_load_explicit(&c->last_error, memory_order_relaxed);
    return RELO_OK;
}
