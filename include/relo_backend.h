/*
 * relo_backend.h — the contract between relo's core and a device.
 *
 * A backend allocates and frees device buffers ("pages"), copies between
 * them, reads and writes them from the host, and waits for device work. The
 * core calls it only through relo_backend_ops. Which calls may overlap:
 *   - alloc, free, flush, stream_add and stream_remove come with the device
 *     lock held: never two at once for one device.
 *   - wait_device, copy and wait_copies come without the lock, from the
 *     thread running a relocation pass (one pass at a time per device, so
 *     never two of these at once), while other threads may call alloc,
 *     free, flush, stream_add, stream_remove, read and write. So does free
 *     for the pages a pass emptied, once the pass has closed, and for the
 *     empty pages the cache limit or relo_trim gives back: it may
 *     overlap an alloc, and whatever capacity accounting the two share
 *     needs a lock.
 *   - With RELO_PAGE_FREE_THREAD, free comes from the device's own thread,
 *     without the lock, and may overlap any operation, another free
 *     included (the lock-held frees of other pages go on meanwhile).
 *   - read and write come without the lock, from any thread, possibly
 *     several at once, each on a buffer no free or copy target overlaps
 *     (relo keeps the page alive and out of relocation meanwhile).
 * So state shared between those groups (a list of registered queues, an
 * error code) needs a lock of the backend's own; buffers themselves need
 * none.
 *
 * relo ships five backends: host (real bytes in host memory, with fault
 * injection, for tests) and sim (bookkeeping only, for replays larger than
 * RAM), both below and both in librelo; OpenCL (relo_opencl.h), CUDA
 * (relo_cuda.h) and Vulkan (relo_vulkan.h), each a library of its own. A
 * runtime may bring its own through relo_backend_create.
 */
#ifndef RELO_BACKEND_H
#define RELO_BACKEND_H

#include "relo.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the device allows; the core branches on these, never on the API. */
typedef struct relo_backend_props {
    uint64_t alignment;     /**< every slice offset is a multiple; ≥ 1 */
    uint64_t max_page_size; /**< largest buffer the device allocates; ≥ alignment */
    uint64_t capacity;      /**< device bytes; 0 = unknown */
    uint64_t granule;       /**< the device charges each buffer its size rounded up to a
                                  multiple of this (2 MiB for cudaMalloc); 0 or 1 = bytes. The
                                  core sizes pages in multiples of it where it chooses sizes */
} relo_backend_props;

/**
 * The operations. ctx is the pointer given to relo_backend_create. Every
 * operation except free, destroy and flush returns relo_status.
 */
typedef struct relo_backend_ops {
    /**
     * Allocates a buffer of exactly size bytes (size ≥ 1, ≤ max_page_size).
     * Writes the buffer's identity to *buffer (never NULL on success) and its
     * device address to *address (0 if the device has none).
     * Returns RELO_OK, RELO_ERR_OUT_OF_MEMORY (the device refused: relo may
     * clean up and retry), RELO_ERR_BACKEND, RELO_ERR_HOST_MEMORY.
     */
    relo_status (*alloc)(void *ctx, uint64_t size, void **buffer, uint64_t *address);

    /** Frees a buffer alloc returned, with the same size. Cannot fail: a
     *  backend that cannot free logs and leaks. No device work uses it. */
    void (*free)(void *ctx, void *buffer, uint64_t size);

    /** Makes memory freed so far really available to the device (trims a
     *  cache, drops deferred frees). May be NULL. */
    void (*flush)(void *ctx);

    /** Synchronously copies n host bytes into buffer at offset. NULL =
     *  the backend holds no bytes (relo_write returns RELO_ERR_UNSUPPORTED). */
    relo_status (*write)(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n);

    /** Synchronously copies n bytes of buffer at offset to host dst. NULL as
     *  for write. */
    relo_status (*read)(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n);

    /** Blocks until every piece of device work that may touch relo's
     *  memory is done (every registered stream, and anything else).
     *  Returns RELO_OK or an error (relocation is then abandoned). */
    relo_status (*wait_device)(void *ctx);

    /**
     * Enqueues a device-to-device copy of n bytes; it may run
     * asynchronously until wait_copies. The source and target of one copy
     * never overlap, but they may lie in the same buffer, and a copy may
     * read or write bytes an earlier copy of the same batch (since the last
     * wait_copies) wrote or read: copies must take effect in the order
     * enqueued wherever their ranges meet (an in-order queue or stream
     * does; an out-of-order one needs barriers). relo relies on it to slide
     * an allocation down its own page in pieces no longer than the slide.
     * Returns RELO_OK or an error: the copy was not enqueued.
     */
    relo_status (*copy)(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                        uint64_t n);

    /**
     * Blocks until every copy enqueued since the last call is done. RELO_OK
     * means all of them landed. Any error means the outcome is unknown: relo
     * then never reuses the memory of either side of those copies.
     */
    relo_status (*wait_copies)(void *ctx);

    /** Tells the backend about a stream's queue (may be NULL for the op or
     *  the queue). Returns RELO_OK or an error (the stream is not created). */
    relo_status (*stream_add)(void *ctx, void *backend_stream);

    /** Forgets a queue stream_add accepted. May be NULL. */
    void (*stream_remove)(void *ctx, void *backend_stream);

    /** Releases the backend's context. Called once by relo_backend_destroy
     *  or relo_device_destroy. May be NULL. */
    void (*destroy)(void *ctx);
} relo_backend_ops;

/**
 * Wraps ops and ctx into a backend. ops is copied; alloc, free, wait_device,
 * copy and wait_copies are required. props must satisfy alignment ≥ 1 and
 * max_page_size ≥ alignment.
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT, RELO_ERR_HOST_MEMORY.
 */
RELO_API relo_status relo_backend_create(const relo_backend_ops *ops, void *ctx,
                                         const relo_backend_props *props, relo_backend **out);

/** Destroys a backend no device has taken (calls ops->destroy). NULL is a
 *  no-op. */
RELO_API void relo_backend_destroy(relo_backend *backend);

/** The backend's properties. */
RELO_API relo_status relo_backend_props_get(const relo_backend *backend, relo_backend_props *out);

/* ------------------------------------------------------------------------ */
/* Host and simulated backends                                              */
/* ------------------------------------------------------------------------ */

/** Configuration of the host and simulated backends; zero = default. */
typedef struct relo_host_desc {
    uint64_t capacity;           /**< bytes lent before refusing; 0 = unlimited (reported unknown) */
    uint64_t alignment;          /**< 0 = 64 */
    uint64_t max_page_size;      /**< 0 = 1 GiB */
    uint64_t refuse_alloc_above; /**< refuse any buffer larger than this; 0 = never */
    uint64_t refuse_alloc_after; /**< refuse every alloc after this many; 0 = never */
    bool refuse_copies;          /**< every copy is refused */
    bool fail_wait_copies;       /**< wait_copies fails, outcome unknown */
    bool fail_wait_device;       /**< wait_device fails */
    uint64_t refuse_copy_after;  /**< refuse every copy after this many; 0 = never */
    bool no_free_fill;           /**< host: freed buffers skip the 0xDD fill (benchmarks) */
    uint64_t granule;            /**< each buffer takes its size rounded up to a multiple of this
                                       from the capacity, as a GPU driver charges; 0 = the
                                       default: 2 MiB for sim (what cudaMalloc rounds to), 1 for
                                       host; 1 = plain bytes (the sim's charge before it had a
                                       granule) */
} relo_host_desc;

/** Calls the host or simulated backend has served so far. */
typedef struct relo_host_counts {
    uint64_t allocs;
    uint64_t frees;
    uint64_t copies;
    uint64_t wait_device;
    uint64_t wait_copies;
    uint64_t bytes_held; /**< bytes of buffers currently allocated, each rounded up to the granule
                                (what counts against the capacity) */
    uint64_t flushes;
} relo_host_counts;

/**
 * A backend over host memory: real bytes, for tests and debugging. Fresh
 * buffers are filled with 0xA5 and freed ones with 0xDD before they go, so
 * a lost byte or a use after free shows (desc->no_free_fill skips the
 * second, for benchmarks that time relo rather than the fill; fresh buffers
 * are always filled, which also makes them resident as device memory is).
 * Copies are memmove, done at once.
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT (max page < alignment, NULL
 * out), RELO_ERR_HOST_MEMORY.
 */
RELO_API relo_status relo_backend_host_create(const relo_host_desc *desc, relo_backend **out);

/**
 * A backend that keeps bookkeeping only: buffers have distinct addresses but
 * no bytes, so traces far larger than RAM replay. write and read are
 * unsupported; copies succeed at once. Fault injection as for host. Each
 * buffer takes its size rounded up to desc->granule (default 2 MiB, as a
 * GPU driver charges) from the capacity, and props report that granule.
 */
RELO_API relo_status relo_backend_sim_create(const relo_host_desc *desc, relo_backend **out);

/**
 * Fills *out with the calls a host or sim backend served so far.
 * Returns RELO_ERR_INVALID_ARGUMENT for another kind of backend or NULLs.
 * Thread-safe only while no device call is in flight.
 */
RELO_API relo_status relo_backend_host_counts(const relo_backend *backend, relo_host_counts *out);

/**
 * Changes the fault injection of a host or sim backend in place (tests turn
 * faults on after a setup phase). Only the refuse_* and fail_* fields are
 * read. Returns RELO_ERR_INVALID_ARGUMENT for another kind of backend.
 */
RELO_API relo_status relo_backend_host_set_faults(relo_backend *backend, const relo_host_desc *desc);

#ifdef __cplusplus
}
#endif

#endif /* RELO_BACKEND_H */
