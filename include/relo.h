/*
 * relo.h — the public API of relo, a device-memory manager for GPU compute
 * runtimes.
 *
 * A runtime asks relo for memory on a stream and gets a handle back. The
 * handle is resolved to a binding (buffer, offset, device address) right
 * before work is launched. Because the runtime holds handles rather than
 * addresses, relo may move live allocations ("relocation") so that pages a
 * growing workload left behind go back to the device now.
 *
 * Conventions:
 *   - Every fallible call returns relo_status; outputs come last, through
 *     pointers, and are written only on RELO_OK unless a comment says so.
 *   - Every call is thread-safe per device: one lock guards a device and
 *     everything hanging off it. relo never waits for the device, copies or
 *     transfers while holding it, so a relocation on one thread does not
 *     stall a resolve on another. A stream is used by one thread at a time.
 *   - What waits for a pass another thread has open (relo's own, while it
 *     waits for the device and copies): a pin or write of an allocation
 *     that pass moves (it returns the new place), a resolve or read of one
 *     it slides within its page, a reservation the device refused a page
 *     for (the pass may give the room back), relo_reclaim,
 *     relo_reclaim_device, relo_pass_begin, relo_capture_* and
 *     relo_device_destroy. Nothing else: resolve, pin, unpin, read, write,
 *     release and reserve of other allocations return without waiting; a
 *     reservation that would pack before a new page, or past the cache
 *     limit, takes the page or keeps the room instead while a pass is
 *     open, and packs only its own stream's pools (never another stream's
 *     room, and so never drains the device for it). A reclaim waits for
 *     the device once and for its copies once (one pass) unless
 *     relo_device_desc.pass_max_bytes or pass_max_ns cut it into more,
 *     and gives the pages it emptied back without the device lock.
 *   - The binding contract: a binding from relo_resolve is valid until the
 *     next call on the device, from any thread, that may move memory
 *     (relo_reserve, relo_reclaim, relo_reclaim_device,
 *     relo_capture_prepare, relo_pass_begin). A multi-threaded runtime pins
 *     instead: a binding from relo_pin stays valid until relo_unpin, whatever
 *     other threads do; unpin once the work using it is enqueued (relo drains
 *     the device, or the streams' finishes, before it copies a byte).
 *   - Descriptors are zero-initialised for defaults.
 *   - Stream or device. A call takes a stream where the stream decides
 *     what happens: where room comes from (relo_reserve takes it from the
 *     stream's pools, under the stream's mode window), which capture state
 *     applies (relo_resolve and relo_pin note the pages a recording stream
 *     touches; the relo_capture_* calls), or which memory a call covers
 *     (relo_reclaim, relo_stream_stats). A call that acts on an allocation
 *     already placed takes the device, because a handle belongs to the
 *     device and may be used on any of its streams: relo_retain,
 *     relo_release, relo_unpin, relo_read, relo_write. So do calls over the
 *     whole device (relo_reclaim_device, relo_trim, relo_pass_begin,
 *     relo_device_stats, relo_device_check). Hence relo_pin takes a stream
 *     (a pin is a resolve, and a recording stream must note the page) and
 *     relo_unpin the device (it only drops a count, from any thread, once
 *     the work is enqueued).
 *   - relo writes nothing to stdout or stderr: log lines go to the callback
 *     in the device desc (relo_log_fn), and relo_stats_print and
 *     relo_device_report_json write only to the FILE they are given. The
 *     one exception is a library built with internal assertions (CMake
 *     RELO_DEBUG=2 or 3; the default, 1, has none): a broken assertion
 *     writes one line to stderr and aborts.
 */
#ifndef RELO_H
#define RELO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "relo_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(RELO_SHARED_BUILD)
#define RELO_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define RELO_API __attribute__((visibility("default")))
#else
#define RELO_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * The version of the relo library the program runs with, "MAJOR.MINOR.PATCH"
 * (RELO_VERSION_STRING of the build that made the library). Compare it with
 * RELO_VERSION_STRING, the version the program was compiled against, to
 * catch a mismatched shared library. Never NULL, never fails, thread-safe:
 * the string is static.
 */
RELO_API const char *relo_version(void);

/* ------------------------------------------------------------------------ */
/* Objects                                                                  */
/* ------------------------------------------------------------------------ */

/** One accelerator: a backend, a handle table, streams. */
typedef struct relo_device relo_device;
/** One ordered queue of device work, with its own pools. */
typedef struct relo_stream relo_stream;
/** The guards a sealed graph holds on the pages it uses. */
typedef struct relo_graph relo_graph;
/** A relocation pass the runtime drives (relo_pass_begin). */
typedef struct relo_pass relo_pass;
/** The code that talks to the device (see relo_backend.h). */
typedef struct relo_backend relo_backend;

/**
 * What a runtime holds for one allocation. id 0 is never a valid handle.
 *
 * The 64 bits pack a slot index (26 bits, so up to 67,108,863 live
 * allocations per device), the device's tag (12 bits, up to 4,095 devices
 * alive at once) and the slot's generation (26 bits). Every call that takes
 * a handle answers RELO_ERR_NOT_FOUND for a handle of another device, a
 * made-up value, or a released one, however many times its slot has been
 * reused since:
 *  - the tag ties a handle to its device; tags of destroyed devices are
 *    recycled only with their generations moved past every one they handed
 *    out, so a later device never hands out the same value;
 *  - a slot is retired, never wrapped, when its generation runs out (after
 *    67 million reuses; it costs 24 bytes of host memory for good).
 *  - a tag is retired, for the rest of the process, once the devices that
 *    held it handed out more than half the generation range (a device that
 *    reused one slot 33 million times).
 * The trade-off, against a wider handle: a handle stays one 64-bit word
 * that fits a kernel argument and an atomic, and its lookup one array
 * index, at the price of these limits, each answered with
 * RELO_ERR_HANDLES_EXHAUSTED: a device runs out of slots only after about
 * 2^52 allocations (relo_reserve), and relo_device_create finds no tag
 * while 4,095 devices are alive, or once every tag not held is retired
 * (after 4,095 such device lifetimes). The bits are relo's business:
 * compare handles for equality, never decode them.
 */
typedef struct relo_handle {
    uint64_t id;
} relo_handle;

/* ------------------------------------------------------------------------ */
/* Status                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * The one status list: X(name, value, sentence). relo_status_name and
 * relo_status_string are generated from it, so the three cannot drift.
 */
#define RELO_STATUS_LIST(X)                                                                        \
    X(RELO_OK, 0, "success")                                                                       \
    X(RELO_ERR_INVALID_ARGUMENT, 1, "an argument is NULL, out of range or inconsistent")           \
    X(RELO_ERR_HOST_MEMORY, 2, "relo could not allocate host memory for its own bookkeeping")      \
    X(RELO_ERR_OUT_OF_MEMORY, 3, "the device refused to allocate memory")                          \
    X(RELO_ERR_BUFFER_TOO_BIG, 4, "the request is larger than the largest page the device allows") \
    X(RELO_ERR_PAGE_SIZES_EXHAUSTED, 5, "every page-size slot of the arena is taken")              \
    X(RELO_ERR_PAGE_UPDATE_FORBIDDEN, 6, "a recording stream may not add or release pages")        \
    X(RELO_ERR_NOT_FOUND, 7, "the handle is stale, released, or was never valid")                  \
    X(RELO_ERR_RECORDING, 8, "refused while a stream records a graph")                             \
    X(RELO_ERR_CAPTURE_STATE, 9, "the capture call does not fit the stream's capture state")       \
    X(RELO_ERR_BUSY, 10, "the object still holds live allocations or pages in use")                \
    X(RELO_ERR_BACKEND, 11, "the device backend reported an error")                                \
    X(RELO_ERR_UNSUPPORTED, 12, "the backend does not support this operation")                     \
    X(RELO_ERR_OUT_OF_RANGE, 13, "the byte range lies outside the allocation")                     \
    X(RELO_ERR_CORRUPT, 14, "an internal invariant does not hold")                                 \
    X(RELO_ERR_HANDLES_EXHAUSTED, 15, "no handle value is left to hand out (see relo_handle)")

typedef enum relo_status {
#define RELO_X_(name, value, text) name = value,
    RELO_STATUS_LIST(RELO_X_)
#undef RELO_X_
        RELO_STATUS_COUNT
} relo_status;

/** The enumerator's name ("RELO_ERR_NOT_FOUND"); "RELO_STATUS_UNKNOWN" for
 *  a value outside the list. Never NULL; thread-safe. */
RELO_API const char *relo_status_name(relo_status status);

/** A sentence describing the status; never NULL; thread-safe. */
RELO_API const char *relo_status_string(relo_status status);

/* ------------------------------------------------------------------------ */
/* Device                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * Placement: how dynamic (RELO_MODE_AUTO) memory is carved into pages and
 * what relo may move there (docs/placement.md). Zero asks for the default,
 * PACKED, the placement with the smallest fit on every trace measured;
 * relo_device_desc_get reports the placement in force, never DEFAULT.
 *
 * - PACKED carves pages as a caching allocator does (best fit in a pool of
 *   small and a pool of large requests, pages sized from the workload) and
 *   packs live allocations into fewer pages, before it takes a new page
 *   and when the device refuses one, so that emptied pages go back.
 * - ADAPTIVE sizes its pages from the workload as it grows (a small pool,
 *   and an arena of pages that grow with the requests); allocations left on
 *   outdated pages, those of sizes the workload outgrew, move to current
 *   ones.
 * - EXCLUSIVE gives each allocation a page of its own, reused whole in 24
 *   buckets of sizes spaced evenly in log scale; nothing ever moves.
 */
#define RELO_PLACEMENT_LIST(X)                                                              \
    X(RELO_PLACEMENT_DEFAULT, 0, "the default: PACKED")                                     \
    X(RELO_PLACEMENT_PACKED, 1, "carved like a caching allocator; live allocations packed") \
    X(RELO_PLACEMENT_ADAPTIVE, 2, "page sizes follow the workload; outdated pages emptied") \
    X(RELO_PLACEMENT_EXCLUSIVE, 3, "one allocation per page, reused whole; nothing moves")

typedef enum relo_placement {
#define RELO_X_(name, value, text) name = value,
    RELO_PLACEMENT_LIST(RELO_X_)
#undef RELO_X_
        RELO_PLACEMENT_COUNT
} relo_placement;

/** Whether relo moves live allocations on its own. */
typedef enum relo_relocation {
    RELO_RELOCATION_AUTO = 0, /**< on pressure, full arena, capture, reclaim */
    RELO_RELOCATION_OFF,      /**< never: allocations stay where born */
    RELO_RELOCATION_COUNT
} relo_relocation;

/** Severity of a log line passed to relo_log_fn. */
typedef enum relo_log_level {
    RELO_LOG_DEBUG = 0,
    RELO_LOG_INFO,
    RELO_LOG_WARN,
    RELO_LOG_ERROR,
    RELO_LOG_LEVEL_COUNT
} relo_log_level;

/** Names of the enumerators above ("RELO_PLACEMENT_PACKED", ...); an
 *  unknown value gives "..._UNKNOWN". Never NULL; thread-safe. */
RELO_API const char *relo_placement_name(relo_placement placement);
RELO_API const char *relo_relocation_name(relo_relocation relocation);
RELO_API const char *relo_log_level_name(relo_log_level level);

/**
 * A log sink (relo_device_desc.log). relo formats a line while it holds the
 * device lock and calls the sink once a call on the device ends: after it
 * dropped the lock for good, with nothing of its own in progress (a call
 * that drops the lock midway, to wait for the device, copy or free
 * buffers, keeps its lines until then). Usually that is the call that
 * logged, on its thread, just before it returns; a line can also reach the
 * sink at the end of another thread's call. So the sink may call relo on
 * the device that logged, even what moves memory or waits for a pass
 * (relo_reserve, relo_reclaim_device: tests/integration/test_log.c), but
 * not relo_device_destroy of that device. message lives for the
 * duration of the call and holds at most 255 bytes; when more than four
 * lines queue under one hold of the lock, the rest are counted and
 * reported in one warning.
 */
typedef void (*relo_log_fn)(void *user, relo_log_level level, const char *message);

/** Which thread gives the buffers of emptied pages back to the backend. */
typedef enum relo_page_free {
    RELO_PAGE_FREE_INLINE = 0, /**< the thread whose call emptied them (default) */
    RELO_PAGE_FREE_THREAD,     /**< a thread the device starts: a relocation or reclaim
                                    returns without waiting for the backend's free (on
                                    some drivers as slow as the copy). relo counts the
                                    bytes as given back at once; a page the backend then
                                    refuses waits for the queued frees and is tried
                                    once more. The backend's free may then overlap any
                                    operation, another free included */
    RELO_PAGE_FREE_COUNT
} relo_page_free;

/**
 * How to build a device. Zero everywhere means the defaults.
 *
 * size lets the struct grow without breaking callers built against an
 * older relo.h: later versions add fields only at the end, and read from a
 * caller's desc only the bytes its size says it holds, taking the defaults
 * for the rest. Set it to sizeof(relo_device_desc), or leave it 0 to mean
 * this version's size (the caller was compiled against this very header).
 */
typedef struct relo_device_desc {
    uint32_t size;              /**< sizeof(relo_device_desc) as the caller compiled it, or 0
                                      for this version's size: later versions add fields at
                                      the end and read only what a smaller desc holds */
    relo_placement placement;   /**< 0 = RELO_PLACEMENT_DEFAULT, i.e. PACKED (docs/placement.md) */
    relo_relocation relocation; /**< default RELO_RELOCATION_AUTO */
    uint64_t capacity;          /**< device bytes; 0 = what the backend reports (maybe unknown) */
    uint64_t pass_max_bytes;    /**< bytes one relocation or compaction pass plans to move (a
                                      pass always moves at least one page); 0 = no bound, so
                                      that a reclaim waits for the device once */
    uint64_t pass_max_ns;       /**< time one pass may spend planning; 0 = no bound */
    relo_log_fn log;            /**< log sink; NULL = silent */
    void *log_user;             /**< passed to log */
    uint64_t cache_limit;       /**< bytes of empty pages kept cached beyond the live bytes
                                      (see below); 0 = RELO_CACHE_LIMIT_DEFAULT */
    relo_page_free page_free;   /**< default RELO_PAGE_FREE_INLINE */
} relo_device_desc;

/*
 * The cache limit. Pages that no allocation uses any more stay with their
 * pool, cached: a later relo_reserve takes its room from them without
 * asking the backend for a new buffer. How much stays is the cache limit:
 * whenever the pages held exceed the bytes live (requested sizes) by more
 * than the limit, relo gives empty pages back to the backend until they
 * do not, or until no empty page is left. It does so at the end of every
 * relo_reserve and in relo_trim; never in relo_release, which never touches
 * the device. A page that holds any allocation never goes back this way,
 * and neither does a page a graph guards. When the device refuses a page,
 * every empty page goes back before the request is called out of memory.
 *
 * Under the packed placement, room beyond the limit inside pages that
 * still hold allocations is packed at the end of relo_reserve too (only
 * pages at most 2/3 full are emptied, as relo_reclaim does), and the pages
 * that empties go back. Such packing, which no request waits on, and the
 * packing before a new page the device would lend, copy at most 1/64 of
 * the bytes reserved so far over the device's life; once that is spent
 * nothing more moves until reservations earn more, except that packing
 * before a new page that would fill a device of known capacity past 3/4
 * is not held back. No other placement moves anything at relo_reserve for
 * the limit.
 *
 * The pools of RELO_MODE_AUTO that carve pages into slices follow the
 * limit (the packed placement's, the adaptive placement's small pool and
 * arena); the exclusive placement's buckets and the pool of size-0
 * reservations keep their own reuse rule, persistent and dedicated memory
 * their modes'.
 *
 * With a limit set, the packed placement's packing before a new page also
 * keeps the pages it empties within the limit, for the reservations that
 * follow, instead of giving them back at once.
 *
 * Values: any byte count, or one of the two below. 1 keeps no empty page
 * beyond the live bytes. relo_device_desc_get reports the value in force
 * (the default as RELO_CACHE_LIMIT_PROPORTIONAL). docs/performance.md has
 * what each costs in backend calls and saves in memory over time: the
 * proportional limit holds 1.03-1.05x the live bytes over time on the GPU
 * traces measured, and NEVER holds a workload's peak for good but asks the
 * backend for memory least often.
 */
/** Keep at most 1/16 of the bytes live (at least one allocation granule of
 *  the backend per dynamic pool of each stream) cached beyond them: the
 *  limit follows the workload. */
#define RELO_CACHE_LIMIT_PROPORTIONAL (UINT64_MAX - 1)
/** No limit: every empty page stays cached. One goes back only when
 *  relo_trim, relo_reclaim or a refused page asks for it, or when the
 *  packed placement's packing emptied it to give it back; nothing is
 *  packed for the limit. */
#define RELO_CACHE_LIMIT_NEVER UINT64_MAX
/** What 0 in relo_device_desc.cache_limit stands for. */
#define RELO_CACHE_LIMIT_DEFAULT RELO_CACHE_LIMIT_PROPORTIONAL

/**
 * Creates a device over a backend.
 *
 * desc     may be NULL for the defaults; values out of range give
 *          RELO_ERR_INVALID_ARGUMENT, and so does a desc->size larger than
 *          this version's sizeof(relo_device_desc) (the caller was built
 *          against a later relo.h) or smaller than the first version's
 *          (this version's: the first with the field). Only desc->size
 *          bytes of it are read.
 * backend  taken by the device on success: relo_device_destroy destroys it.
 *          On failure the caller still owns it.
 * out      receives the device.
 *
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT (NULL backend or out, bad desc),
 * RELO_ERR_HOST_MEMORY, RELO_ERR_HANDLES_EXHAUSTED (4,095 devices already
 * alive, or every other tag retired: see relo_handle). Thread-safe.
 */
RELO_API relo_status relo_device_create(const relo_device_desc *desc, relo_backend *backend,
                                        relo_device **out);

/**
 * Destroys a device, its streams, its pages and its backend.
 *
 * Returns RELO_ERR_BUSY and frees nothing while any allocation is live or a
 * graph still guards pages; RELO_ERR_INVALID_ARGUMENT for NULL; else RELO_OK.
 * The caller must not use the device concurrently with this call.
 */
RELO_API relo_status relo_device_destroy(relo_device *device);

/**
 * Fills *out with the effective configuration: defaults resolved (size set
 * to sizeof(relo_device_desc), placement never DEFAULT, cache_limit never
 * 0), capacity as judged (0 = unknown). Returns RELO_ERR_INVALID_ARGUMENT
 * for NULLs.
 */
RELO_API relo_status relo_device_desc_get(relo_device *device, relo_device_desc *out);

/* ------------------------------------------------------------------------ */
/* Streams                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Creates a stream on the device.
 *
 * backend_stream  the backend's queue (cl_command_queue, CUstream), or NULL
 *                 where the backend has no such notion. The backend is told
 *                 so it can wait on it before relocation.
 *
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT, RELO_ERR_HOST_MEMORY,
 * RELO_ERR_BACKEND (the backend refused the queue).
 */
RELO_API relo_status relo_stream_create(relo_device *device, void *backend_stream, relo_stream **out);

/**
 * A stream's finish: blocks until every piece of work the runtime enqueued
 * on the stream so far is done (for example cuStreamSynchronize, or waiting
 * on the runtime's last event). Returns RELO_OK, or an error that abandons
 * the relocation that asked. Called without the device lock, from the
 * thread that copies, never concurrently with itself for one pass.
 */
typedef relo_status (*relo_finish_fn)(void *user);

/**
 * Sets (fn non-NULL) or clears the stream's finish. Before a relocation
 * copies, relo waits for the device's work: when every stream of the device
 * has a finish, relo calls them instead of the backend's device-wide wait
 * (the runtime knows its queues better than a full drain); otherwise it
 * calls the backend's wait and then each finish.
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT (NULL stream).
 */
RELO_API relo_status relo_stream_set_finish(relo_stream *stream, relo_finish_fn fn, void *user);

/**
 * Destroys a stream and gives its empty pages back.
 *
 * Returns RELO_ERR_BUSY (nothing changes) while an allocation reserved on
 * the stream is live, a graph guards one of its pages, any stream of the
 * device is in a capture (a recording may have touched this stream's pages),
 * or a relocation pass is open on the device;
 * RELO_ERR_INVALID_ARGUMENT for NULL; else RELO_OK.
 */
RELO_API relo_status relo_stream_destroy(relo_stream *stream);

/* ------------------------------------------------------------------------ */
/* Allocations                                                              */
/* ------------------------------------------------------------------------ */

/**
 * Reserves size bytes on the stream and returns a handle with refcount 1.
 * Size 0 is valid (served by the tiny pool, resolves with size 0).
 *
 * Before reserving, relo may clean up (give back empty outdated pages) and
 * may relocate live allocations of this stream; bindings resolved earlier
 * are then stale.
 *
 * Returns RELO_OK;
 *   RELO_ERR_INVALID_ARGUMENT  NULL stream or out;
 *   RELO_ERR_BUFFER_TOO_BIG    larger than the largest page (never retried);
 *   RELO_ERR_OUT_OF_MEMORY     the device refused, also after one explicit
 *                              cleanup and a retry;
 *   RELO_ERR_PAGE_SIZES_EXHAUSTED  all 64 arena slots hold pools, also after
 *                              an ARENA_FULL relocation;
 *   RELO_ERR_PAGE_UPDATE_FORBIDDEN  the stream records and the request needs
 *                              a new page (the recording is doomed);
 *   RELO_ERR_HANDLES_EXHAUSTED  every handle slot is taken or retired
 *                              (see relo_handle);
 *   RELO_ERR_HOST_MEMORY, RELO_ERR_BACKEND.
 * On failure nothing changes and *out is untouched.
 */
RELO_API relo_status relo_reserve(relo_stream *stream, uint64_t size, relo_handle *out);

/**
 * Adds an owner to a live allocation.
 * Returns RELO_OK, RELO_ERR_NOT_FOUND (stale/unknown handle),
 * RELO_ERR_INVALID_ARGUMENT (NULL device, or the refcount would overflow).
 */
RELO_API relo_status relo_retain(relo_device *device, relo_handle handle);

/**
 * Drops one owner; at zero the allocation is freed and the handle value goes
 * stale forever. Never allocates, never touches the device.
 * Returns RELO_OK, RELO_ERR_NOT_FOUND (stale: double release is harmless),
 * RELO_ERR_INVALID_ARGUMENT (NULL device).
 */
RELO_API relo_status relo_release(relo_device *device, relo_handle handle);

/** Where an allocation's bytes are right now. */
typedef struct relo_binding {
    void *buffer;     /**< the backend buffer (cl_mem, host block, ...) */
    uint64_t offset;  /**< byte offset of the allocation in buffer */
    uint64_t size;    /**< requested size */
    uint64_t address; /**< device address of the first byte; 0 if the backend has none */
} relo_binding;

/**
 * Resolves a handle to where its bytes are now. The binding stays valid
 * until the next call on the device that may move memory (see the binding
 * contract at the top; relo_pin keeps it valid across threads). If the
 * allocation is a source of an open pass, its move is skipped. While the
 * stream records, the page is remembered as touched and guarded.
 *
 * Takes no lock in the common case (the allocation placed and not moving,
 * the stream not recording): it reads a copy of the binding each handle
 * slot publishes, so threads resolving at once do not wait for each other
 * or for a thread inside another relo call. The answer is the one the
 * locked path would give at some instant during the call.
 *
 * The handle may come from another stream of the same device.
 * Returns RELO_OK, RELO_ERR_NOT_FOUND, RELO_ERR_INVALID_ARGUMENT,
 * RELO_ERR_HOST_MEMORY (could not remember a touched page).
 */
RELO_API relo_status relo_resolve(relo_stream *stream, relo_handle handle, relo_binding *out);

/**
 * As relo_resolve, and pins the allocation: it is not moved until a
 * matching relo_unpin, so the binding stays valid whatever other threads do
 * (a pass moves no pinned allocation, nor the rest of its page where the
 * page moves whole). Pins count: n pins need n unpins. Like relo_resolve,
 * it takes no lock in the common case: it counts itself on the handle's
 * slot, so threads pinning different allocations do not wait for each
 * other, nor for a pass that waits for the device. If the allocation is being
 * moved by a pass another thread opened, relo_pin waits for that pass to
 * end (one pass: relo's own are bounded) and returns where the bytes are
 * then, so work it launches never races the copy; called from the thread
 * that opened the pass, it skips the move instead. Releasing the allocation
 * drops its pins.
 *
 * The launch path of a multi-threaded runtime: relo_pin, enqueue the work
 * using the binding, relo_unpin. relo waits for enqueued work before it
 * copies, so the pin need not outlive the enqueue.
 *
 * Returns as relo_resolve, and RELO_ERR_INVALID_ARGUMENT when the pin count
 * would overflow.
 */
RELO_API relo_status relo_pin(relo_stream *stream, relo_handle handle, relo_binding *out);

/**
 * Drops one pin, from any thread; takes no lock when the allocation is
 * pinned. Returns RELO_OK, RELO_ERR_NOT_FOUND (stale handle),
 * RELO_ERR_INVALID_ARGUMENT (NULL device, or the allocation is not pinned).
 */
RELO_API relo_status relo_unpin(relo_device *device, relo_handle handle);

/**
 * Copies n bytes from data into the allocation at offset (synchronously).
 * Returns RELO_OK, RELO_ERR_NOT_FOUND, RELO_ERR_INVALID_ARGUMENT (NULL data
 * with n > 0), RELO_ERR_OUT_OF_RANGE (offset + n past the size: nothing is
 * written), RELO_ERR_UNSUPPORTED (the backend holds no bytes),
 * RELO_ERR_BACKEND.
 */
RELO_API relo_status relo_write(relo_device *device, relo_handle handle, uint64_t offset, const void *data,
                                uint64_t n);

/** Copies n bytes of the allocation at offset into data; as relo_write. */
RELO_API relo_status relo_read(relo_device *device, relo_handle handle, uint64_t offset, void *data,
                               uint64_t n);

/* ------------------------------------------------------------------------ */
/* Modes                                                                    */
/* ------------------------------------------------------------------------ */

/** Where a stream's reservations go while a mode window is open. */
typedef enum relo_mode {
    RELO_MODE_AUTO = 0,   /**< dynamic memory (the placement); the mode with no window open */
    RELO_MODE_PERSISTENT, /**< exact-size slices, each its own buffer, kept until cleanup */
    RELO_MODE_DEDICATED,  /**< one buffer per allocation, returned at the next cleanup */
    RELO_MODE_COUNT
} relo_mode;

/** The mode's name ("RELO_MODE_PERSISTENT"). Never NULL. */
RELO_API const char *relo_mode_name(relo_mode mode);

/**
 * Opens a mode window; windows nest, the innermost decides.
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT (bad mode, or more than 64
 * windows open).
 */
RELO_API relo_status relo_mode_push(relo_stream *stream, relo_mode mode);

/** Closes the innermost window. RELO_ERR_INVALID_ARGUMENT if none is open. */
RELO_API relo_status relo_mode_pop(relo_stream *stream);

/* ------------------------------------------------------------------------ */
/* Giving memory back: reclaim and trim                                     */
/* ------------------------------------------------------------------------ */

/*
 * relo gives memory back by itself (the cache limit above, at the end
 * of each relo_reserve); these calls do it when the runtime asks.
 * relo_reclaim and relo_reclaim_device move live allocations first, so that
 * pages empty, and then give empty pages back; relo_trim only gives empty
 * pages back and moves nothing, so bindings and pins stay valid.
 */

/**
 * Gives back what this stream's memory no longer needs: relocates the
 * stream's allocations off its outdated pages (reason EXPLICIT, targets only
 * in room the stream already holds; the packed placement packs the stream's
 * sparse pages), releases the stream's empty unguarded pages, flushes the
 * backend. Other streams' allocations do not move and their pages stay,
 * but for empty pages already queued to go back (which any reservation
 * gives back). Bindings of the stream's
 * allocations resolved earlier (not pinned) are stale afterwards.
 *
 * Returns RELO_OK, RELO_ERR_RECORDING (a stream records: nothing happens),
 * RELO_ERR_BUSY (a pass the runtime drives is open: nothing moves, empty
 * pages still go back), RELO_ERR_INVALID_ARGUMENT. A relocation that is
 * abandoned is not an error.
 */
RELO_API relo_status relo_reclaim(relo_stream *stream);

/** As relo_reclaim, for every stream of the device (what a capture's
 *  prepare runs). Same statuses. */
RELO_API relo_status relo_reclaim_device(relo_device *device);

/**
 * Gives empty pages of every stream (of the pools that follow the cache
 * limit, above) back to the backend until the pages held exceed the
 * bytes live by at most keep bytes, or no empty page that may go is left
 * (pages a graph guards stay), then flushes the backend.
 * keep = 0 gives back every empty page; relo_device_desc_get's
 * cache_limit is the device's own rule, which relo_reserve applies by
 * itself. Nothing moves: bindings and pins stay valid (unlike
 * relo_reclaim, which packs live allocations first), so it is safe at any
 * synchronization point of the runtime, and cheap when nothing is empty.
 * RELO_CACHE_LIMIT_PROPORTIONAL as keep means the proportional rule.
 *
 * released  may be NULL; receives the bytes given back.
 *
 * Returns RELO_OK, RELO_ERR_RECORDING (a stream records: nothing is given
 * back, since the recording may still touch the room), RELO_ERR_INVALID_ARGUMENT
 * (NULL device). Thread-safe.
 */
RELO_API relo_status relo_trim(relo_device *device, uint64_t keep, uint64_t *released);

/* ------------------------------------------------------------------------ */
/* Relocation passes the runtime drives                                     */
/* ------------------------------------------------------------------------ */

/*
 * relo relocates by itself inside relo_reserve, relo_reclaim and
 * relo_capture_prepare, copying on the backend after a full wait for the
 * device. A runtime that would rather copy on its own queues, ordered by its
 * own events, drives a pass instead:
 *
 *   relo_pass_begin    plans moves (bounded by bytes and moves) and opens
 *                      the pass; targets are reserved, nothing is copied;
 *   relo_pass_move_get each move: handle, where from, where to;
 *   relo_pass_skip     vetoes a move (its allocation stays where it is);
 *   the runtime copies every move it did not skip, after the work that
 *   writes the source, and waits for its copies (or relo_pass_copy does the
 *   whole of it the way relo would);
 *   relo_pass_end      commits what landed, abandons the rest.
 *
 * While the pass is open every other call works: from the thread that
 * opened it, and from the thread running relo_pass_copy (a stream's finish
 * included), a resolve, pin or write of a source skips its move (the
 * runtime must then not count on the target); from other threads a resolve
 * or a read skips it too, while a pin or write waits for relo_pass_end; a
 * release of a source is carried out when the pass ends. A read or write
 * therefore never sees a source's place freed and handed to another
 * allocation while it runs. Automatic
 * relocation waits: nothing else moves while a pass is open, and a capture
 * cannot begin (RELO_ERR_BUSY). One pass is open per device at a time.
 */

/** Bounds and scope of a pass; zero = default. */
typedef struct relo_pass_desc {
    relo_stream *stream; /**< only this stream's memory; NULL = every stream */
    uint64_t max_bytes;  /**< bytes planned; 0 = no bound (a pass plans at least one page) */
    uint32_t max_moves;  /**< moves planned; 0 = no bound (at least one page's moves) */
} relo_pass_desc;

/** A move's state while its pass is open. */
#define RELO_MOVE_STATE_LIST(X)                                         \
    X(RELO_MOVE_PENDING, 0, "will commit if its copy landed")           \
    X(RELO_MOVE_SKIPPED, 1, "vetoed: the allocation stays where it is") \
    X(RELO_MOVE_RELEASED, 2, "the allocation was released; nothing to copy")

typedef enum relo_move_state {
#define RELO_X_(name, value, text) name = value,
    RELO_MOVE_STATE_LIST(RELO_X_)
#undef RELO_X_
        RELO_MOVE_STATE_COUNT
} relo_move_state;

/** "RELO_MOVE_SKIPPED" etc.; never NULL; thread-safe. */
RELO_API const char *relo_move_state_name(relo_move_state state);

/** One planned move. */
typedef struct relo_pass_move {
    relo_handle handle;  /**< the allocation (stale once RELEASED) */
    relo_stream *stream; /**< the stream it was reserved on */
    relo_binding from;   /**< where its bytes are */
    relo_binding to;     /**< where they go; from.size bytes */
    relo_move_state state;
} relo_pass_move;

/** How the runtime's copies ended, told to relo_pass_end. */
typedef enum relo_pass_outcome {
    RELO_PASS_LANDED = 0, /**< every move not skipped was copied and the copies are done */
    RELO_PASS_ABANDONED,  /**< nothing was copied, or no copy still runs: keep the sources */
    RELO_PASS_UNKNOWN,    /**< copies may still run: never reuse either side */
    RELO_PASS_OUTCOME_COUNT
} relo_pass_outcome;

/**
 * Plans a pass and opens it: the allocations the matching reclaim would
 * move (outdated pages, and the packed placement's sparse pages), each page all
 * or nothing, within desc's bounds. Pinned allocations and guarded pages are
 * left alone. A pass with no move is still a pass: end it.
 *
 * Returns RELO_OK (*out set), RELO_ERR_INVALID_ARGUMENT (NULL device or out,
 * a stream of another device), RELO_ERR_RECORDING (a stream records),
 * RELO_ERR_BUSY (a pass is open), RELO_ERR_UNSUPPORTED (relocation is off
 * or the placement is EXCLUSIVE), RELO_ERR_HOST_MEMORY.
 */
RELO_API relo_status relo_pass_begin(relo_device *device, const relo_pass_desc *desc, relo_pass **out);

/** Moves planned by the pass (0 for NULL). */
RELO_API uint32_t relo_pass_move_count(const relo_pass *pass);

/** Fills *out with move i. Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT (NULL,
 *  or i out of range). */
RELO_API relo_status relo_pass_move_get(relo_pass *pass, uint32_t i, relo_pass_move *out);

/** Vetoes move i: it will not commit. Skipping a skipped or released move
 *  is harmless. Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT. */
RELO_API relo_status relo_pass_skip(relo_pass *pass, uint32_t i);

/**
 * Copies the way relo does by itself, without the device lock: waits for
 * the device (the streams' finishes where set), enqueues every move's copy
 * on the backend, waits for the copies. *outcome says how that ended; hand
 * it to relo_pass_end. Call at most once, from any thread; relo_pass_end
 * answers RELO_ERR_BUSY until it returns. Returns RELO_OK,
 * RELO_ERR_INVALID_ARGUMENT (NULLs, or called twice).
 */
RELO_API relo_status relo_pass_copy(relo_pass *pass, relo_pass_outcome *outcome);

/**
 * Ends the pass: with RELO_PASS_LANDED every move still PENDING commits (its
 * handle now resolves to the target) and the targets of skipped moves are
 * freed; ABANDONED frees every target; UNKNOWN leaks both sides of every
 * move (counted in bytes_leaked). Released allocations are freed in every
 * case, and pages the pass emptied go back. When relo_pass_copy ran, its
 * outcome is used where it is worse than the one given. Frees the pass.
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT (NULL, or a bad outcome: the
 * pass stays open), RELO_ERR_BUSY (relo_pass_copy still runs on another
 * thread: the pass stays open; end it once that call returned).
 */
RELO_API relo_status relo_pass_end(relo_pass *pass, relo_pass_outcome outcome);

/* ------------------------------------------------------------------------ */
/* Graph capture                                                            */
/* ------------------------------------------------------------------------ */

/**
 * IDLE → PREPARED. Relocates every stream's outdated pages (reason CAPTURE,
 * which may take new current-size pages) so none is guarded later.
 * Returns RELO_OK, RELO_ERR_CAPTURE_STATE (not IDLE), RELO_ERR_RECORDING
 * (another stream records), RELO_ERR_BUSY (a pass the runtime drives is
 * open), RELO_ERR_INVALID_ARGUMENT.
 */
RELO_API relo_status relo_capture_prepare(relo_stream *stream);

/**
 * PREPARED → RECORDING. While any stream records nothing is relocated,
 * released or cleaned up; this stream may only use room it already holds.
 * Resolving a handle on the recording stream touches its page. A touched
 * page of another stream's pool is guarded at once: room released in it is
 * not handed out again until the graph is destroyed (or the recording ends
 * without a graph), since the graph writes there on every replay. Touched
 * pages of the recording stream's own pools keep serving that stream while
 * it records (stream order keeps reuse inside the graph safe) and are
 * guarded at the end.
 * The graph that will hold the guards is made here, so relo_capture_end
 * cannot fail for lack of memory.
 * A relocation relo runs on another thread is waited for first.
 * Returns RELO_OK, RELO_ERR_CAPTURE_STATE, RELO_ERR_INVALID_ARGUMENT,
 * RELO_ERR_BUSY (a pass the runtime drives is open; the stream stays
 * PREPARED), RELO_ERR_HOST_MEMORY (the stream stays PREPARED).
 */
RELO_API relo_status relo_capture_begin(relo_stream *stream);

/**
 * RECORDING → IDLE. Every page resolved on the stream while recording is
 * guarded by the returned graph: it never moves, is never released and
 * serves no reservation until relo_graph_destroy. A doomed recording (a
 * reservation needed a new page) returns that error
 * (RELO_ERR_PAGE_UPDATE_FORBIDDEN), drops the guards it took, guards nothing
 * and sets *out to NULL; the stream is IDLE either way.
 * Returns RELO_OK, RELO_ERR_CAPTURE_STATE, RELO_ERR_INVALID_ARGUMENT, or
 * the doom error.
 */
RELO_API relo_status relo_capture_end(relo_stream *stream, relo_graph **out);

/** Drops the graph's guards; its pages become ordinary. NULL is a no-op.
 *  Never fails. */
RELO_API void relo_graph_destroy(relo_graph *graph);

/* ------------------------------------------------------------------------ */
/* Stats and reports                                                        */
/* ------------------------------------------------------------------------ */

/*
 * The stats fields, one list: X(name, description). It generates the
 * struct, the text printer and the JSON emitter.
 */
#define RELO_STATS_LIST(X)                                                               \
    X(allocations, "live allocations")                                                   \
    X(bytes_in_use, "sum of requested sizes of live allocations")                        \
    X(bytes_padding, "alignment padding of live allocations")                            \
    X(bytes_reserved, "bytes of pages held")                                             \
    X(peak_bytes_reserved, "highest bytes_reserved seen")                                \
    X(pages, "pages held")                                                               \
    X(outdated_pages, "pages held by outdated pools")                                    \
    X(bytes_outdated, "bytes of pages held by outdated pools")                           \
    X(guarded_pages, "pages a sealed graph guards")                                      \
    X(relocations, "relocations that moved at least one allocation")                     \
    X(relocations_abandoned, "relocations abandoned: every source kept")                 \
    X(allocations_moved, "allocations moved by relocation")                              \
    X(bytes_moved, "bytes copied by relocation")                                         \
    X(bytes_leaked, "bytes never reused after a copy whose outcome is unknown")          \
    X(longest_pass_ns, "longest relocation or compaction pass, planning to commit (ns)") \
    X(pages_released, "pages given back to the backend")                                 \
    X(backend_allocs, "buffers the backend allocated")                                   \
    X(backend_frees, "buffers given back to the backend")                                \
    X(peak_bytes_in_use, "highest bytes_in_use seen")                                    \
    X(allocations_total, "allocations ever made (relo_reserve calls that succeeded)")    \
    X(bytes_allocated_total, "requested bytes of every allocation ever made")            \
    X(frees_total, "allocations freed (their last owner released them)")                 \
    X(bytes_freed_total, "requested bytes of every allocation freed")

/** Counters of a stream or a whole device (the sum of its streams). */
typedef struct relo_stats {
    uint32_t size;    /**< sizeof(relo_stats), filled by the call */
    uint32_t version; /**< RELO_STATS_VERSION, filled by the call */
#define RELO_X_(name, text) uint64_t name;
    RELO_STATS_LIST(RELO_X_)
#undef RELO_X_
} relo_stats;

#define RELO_STATS_VERSION 2u /* 2: peak_bytes_in_use and the totals */

/** Fills every field of *out for the whole device. Never fails for valid
 *  arguments; RELO_ERR_INVALID_ARGUMENT for NULLs. */
RELO_API relo_status relo_device_stats(relo_device *device, relo_stats *out);

/** Fills every field of *out for one stream; as relo_device_stats. */
RELO_API relo_status relo_stream_stats(relo_stream *stream, relo_stats *out);

/** Writes the stats as "name: value" lines to f. */
RELO_API relo_status relo_stats_print(const relo_stats *stats, FILE *f);

/**
 * Writes one JSON object to f: {"stats": {...}, "streams": [{"pools":
 * [{"kind", "page_size", "pages", "outdated_pages", "guarded_pages",
 * "bytes_in_use", "bytes_reserved", "largest_free", "page_map": [...]}]}]}.
 * The page map lists each page of the pool ("index", "size", "address",
 * "outdated", "guards", "fenced", "pending", "largest_free") with every
 * slice in address order: "offset", "length" (bytes of the page it
 * covers), "size" (requested), "state" (FREE, LIVE, TARGET, LEAKED) and
 * "handle" (the id of a LIVE slice, else null). "largest_free" is the
 * longest FREE slice of the page or pool: the largest request it can
 * serve without a new page. Costs time linear in the slices held.
 * Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT, RELO_ERR_BACKEND (f failed).
 */
RELO_API relo_status relo_device_report_json(relo_device *device, FILE *f);

/**
 * Runs every invariant checker of docs/design.md §9 over the device: slices never
 * overlap, stats add up, outdated pools serve nothing, guards hold.
 * Costs time linear in the slices held. Returns RELO_OK or RELO_ERR_CORRUPT
 * (the first broken invariant is logged).
 */
RELO_API relo_status relo_device_check(relo_device *device);

#ifdef __cplusplus
}
#endif

#endif /* RELO_H */
