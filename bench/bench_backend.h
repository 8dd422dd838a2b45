/*
 * bench_backend.h — a backend that wraps another one for relo's
 * benchmarks: it counts the calls that cost a runtime a device drain, and
 * can make the device slow.
 *
 * Every operation goes to the wrapped backend (host, sim, OpenCL, CUDA,
 * Vulkan, or a benchmark's own). On top of that the wrapper
 *   - counts wait_device, wait_copies, copy, alloc and free, so that a
 *     benchmark prints how many times one relo_reclaim waited for the
 *     device: on a GPU each of those waits drains every queue;
 *   - optionally sleeps in wait_device and in wait_copies (a device busy
 *     with long kernels) and in free (drivers that unmap host memory
 *     when a large buffer goes back).
 * The counters are atomics: relo_backend.h lets free overlap the pass's
 * waits and copies, and with RELO_PAGE_FREE_THREAD free comes from relo's
 * own thread.
 *
 * It looks inside the wrapped backend (src/backend/backend.h) for its ops
 * table; the benchmarks are built with src/ on the include path for that.
 */
#ifndef RELO_BENCH_BACKEND_H
#define RELO_BENCH_BACKEND_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "relo.h"
#include "relo_backend.h"

/** The wrapper's state. The caller owns it; it must outlive the device
 *  that takes the wrapping backend. */
typedef struct bench_wrap {
    relo_backend *inner; /* owned: destroyed with the wrapping backend */
    long wait_ns;        /* wait_device and wait_copies sleep this long first (0: no sleep) */
    long free_ns;        /* free sleeps this long after freeing (0: no sleep) */
    _Atomic uint64_t wait_device, wait_copies, copies, allocs, frees;
} bench_wrap;

/* Device waits made by the calling thread, over every wrapper: a
 * benchmark tells the waits of the call it times from those that another
 * thread's calls made meanwhile. */
static _Thread_local uint64_t bench_thread_waits_;

static inline void bench_sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static inline relo_status bench_wrap_alloc_(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    bench_wrap *w = ctx;
    atomic_fetch_add(&w->allocs, 1);
    return w->inner->ops.alloc(w->inner->ctx, size, buffer, address);
}

static inline void bench_wrap_free_(void *ctx, void *buffer, uint64_t size)
{
    bench_wrap *w = ctx;
    w->inner->ops.free(w->inner->ctx, buffer, size);
    if (w->free_ns) bench_sleep_ns(w->free_ns);
    atomic_fetch_add(&w->frees, 1);
}

static inline void bench_wrap_flush_(void *ctx)
{
    bench_wrap *w = ctx;
    w->inner->ops.flush(w->inner->ctx);
}

static inline relo_status bench_wrap_write_(void *ctx, void *buffer, uint64_t offset, const void *src,
                                            uint64_t n)
{
    bench_wrap *w = ctx;
    return w->inner->ops.write(w->inner->ctx, buffer, offset, src, n);
}

static inline relo_status bench_wrap_read_(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    bench_wrap *w = ctx;
    return w->inner->ops.read(w->inner->ctx, buffer, offset, dst, n);
}

static inline relo_status bench_wrap_wait_device_(void *ctx)
{
    bench_wrap *w = ctx;
    if (w->wait_ns) bench_sleep_ns(w->wait_ns);
    atomic_fetch_add(&w->wait_device, 1);
    bench_thread_waits_++;
    return w->inner->ops.wait_device(w->inner->ctx);
}

static inline relo_status bench_wrap_copy_(void *ctx, void *src, uint64_t src_offset, void *dst,
                                           uint64_t dst_offset, uint64_t n)
{
    bench_wrap *w = ctx;
    atomic_fetch_add(&w->copies, 1);
    return w->inner->ops.copy(w->inner->ctx, src, src_offset, dst, dst_offset, n);
}

static inline relo_status bench_wrap_wait_copies_(void *ctx)
{
    bench_wrap *w = ctx;
    if (w->wait_ns) bench_sleep_ns(w->wait_ns);
    atomic_fetch_add(&w->wait_copies, 1);
    bench_thread_waits_++;
    return w->inner->ops.wait_copies(w->inner->ctx);
}

static inline relo_status bench_wrap_stream_add_(void *ctx, void *backend_stream)
{
    bench_wrap *w = ctx;
    return w->inner->ops.stream_add(w->inner->ctx, backend_stream);
}

static inline void bench_wrap_stream_remove_(void *ctx, void *backend_stream)
{
    bench_wrap *w = ctx;
    w->inner->ops.stream_remove(w->inner->ctx, backend_stream);
}

static inline void bench_wrap_destroy_(void *ctx)
{
    bench_wrap *w = ctx;
    relo_backend_destroy(w->inner);
    w->inner = NULL;
}

/**
 * Wraps inner into *out, with the sleeps given (0: none). On success the
 * wrapping backend owns inner (destroying it destroys inner); on failure
 * the caller still does. Optional operations inner lacks stay absent.
 * Returns what relo_backend_create returns.
 */
static inline relo_status bench_wrap_create(bench_wrap *w, relo_backend *inner, long wait_ns, long free_ns,
                                            relo_backend **out)
{
    relo_backend_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.alloc = bench_wrap_alloc_;
    ops.free = bench_wrap_free_;
    ops.flush = inner->ops.flush ? bench_wrap_flush_ : NULL;
    ops.write = inner->ops.write ? bench_wrap_write_ : NULL;
    ops.read = inner->ops.read ? bench_wrap_read_ : NULL;
    ops.wait_device = bench_wrap_wait_device_;
    ops.copy = bench_wrap_copy_;
    ops.wait_copies = bench_wrap_wait_copies_;
    ops.stream_add = inner->ops.stream_add ? bench_wrap_stream_add_ : NULL;
    ops.stream_remove = inner->ops.stream_remove ? bench_wrap_stream_remove_ : NULL;
    ops.destroy = bench_wrap_destroy_;
    memset(w, 0, sizeof *w);
    w->inner = inner;
    w->wait_ns = wait_ns;
    w->free_ns = free_ns;
    return relo_backend_create(&ops, w, &inner->props, out);
}

/** Device waits so far: wait_device and wait_copies calls together. */
static inline uint64_t bench_wrap_waits(bench_wrap *w)
{
    return atomic_load(&w->wait_device) + atomic_load(&w->wait_copies);
}

/** Device waits (wait_device + wait_copies) the calling thread made so
 *  far through any wrapper. */
static inline uint64_t bench_thread_waits(void)
{
    return bench_thread_waits_;
}

#endif /* RELO_BENCH_BACKEND_H */
