/*
 * pass/relocation.h — moving live allocations off outdated pages (design §6):
 * plan (analyse, order, reserve targets all-or-nothing per page), copy
 * (wait for the device, enqueue, always wait for the copies), commit only
 * from landed copies, or abandon / leak on failure. The order across streams
 * (§6.4) lives here and nowhere else.
 *
 * Called with the device lock held.
 */
#ifndef RELO_RELOCATION_H
#define RELO_RELOCATION_H

#include <pthread.h>
#include <stdbool.h>

#include "core/device.h"
#include "core/stream.h"
#include "base/reason.h"

/** What became of one move while its pass was open. */
typedef enum relo_move_fate {
    RELO_FATE_PLANNED = 0, /* commits if the copies landed */
    RELO_FATE_SKIPPED,     /* vetoed (the runtime, or a resolve, pin or write of the
                               source while the pass was open): the source stays */
    RELO_FATE_DROPPED,     /* the allocation was released while the pass was open:
                               both sides are freed when it closes */
    RELO_FATE_COUNT
} relo_move_fate;

/** One move of a pass: an allocation's slot, its source and its target.
 *  A slide (dst NULL, pass/slide.c) moves the allocation down its own page to
 *  offset slide_to, over free room and possibly over its own bytes; its
 *  slice node stays and takes the new offset when the pass commits.
 *  src, dst, slide_to and slot never change while the pass is open; fate
 *  may (device lock). */
typedef struct relo_move {
    relo_slice *src;
    relo_slice *dst;   /* NULL: a slide */
    uint64_t slide_to; /* a slide's new offset in src's page (< src->offset) */
    uint32_t slot;
    uint8_t fate; /* relo_move_fate */
} relo_move;

/** How the copies of a pass ended. */
typedef enum relo_copy_outcome {
    RELO_COPY_LANDED = 0, /* every copy done: commit */
    RELO_COPY_ABANDONED,  /* nothing was (or may still be) written: free targets */
    RELO_COPY_UNKNOWN,    /* the final wait failed: leak both sides */
    RELO_COPY_OUTCOME_COUNT
} relo_copy_outcome;

/** A stream's finish, taken when a pass opens (streams may come and go
 *  while it is open). */
typedef struct relo_finish {
    relo_finish_fn fn;
    void *user;
} relo_finish;

/**
 * One relocation or compaction pass: the plan (targets reserved as TARGET
 * slices, sources fenced by compaction), its bounds, and what it moved.
 * Plan pages with relo__pass_plan_page; then either relo__pass_finish
 * (relo copies, with the device lock dropped for the device wait and the
 * copies, and commits), or relo__pass_open and later relo__pass_close (a
 * pass the runtime drives). While a pass is open its sources carry their
 * move index, so a release, resolve, pin or write of one reaches the move.
 * At most one pass is open per device.
 */
struct relo_pass {
    struct relo_device *device;
    relo_reason reason;
    uint64_t id; /* counts streams once per pass in their stats */
    relo_move *moves;
    uint32_t count, cap;
    uint64_t bytes; /* requested bytes planned */
    uint64_t started_ns;
    uint64_t max_bytes; /* 0 = no bound */
    uint64_t max_ns;    /* 0 = no bound */
    uint32_t max_moves; /* 0 = no bound */
    uint64_t budget;    /* requested bytes the pass may plan, its first page
                               included (unlike max_bytes); UINT64_MAX = no bound */
    relo_page **fences; /* compaction sources, or the pages a slide pass packs;
                               unfenced when the pass closes */
    bool slides;        /* a slide pass (pass/slide.c): every move is a slide, every
                               fenced page is packed on commit */
    bool cut;           /* planning stopped at the pass's bounds: a later pass
                               may plan what this one left */
    uint32_t fence_count, fence_cap;
    relo_finish *finishes; /* the streams' finishes, taken at open */
    uint32_t finish_count;
    bool all_finish;           /* every stream had one: no backend device wait */
    bool runtime;              /* driven by the runtime (relo_pass_begin) */
    struct relo_stream *scope; /* a runtime pass: the stream it covers, NULL = every one */
    pthread_t owner;           /* the thread that opened it */
    bool copied;               /* relo_pass_copy ran, or runs */
    bool copying;              /* relo_pass_copy runs now, on thread copier */
    pthread_t copier;
    uint8_t copy_outcome; /* its relo_copy_outcome */
};

void relo__pass_begin(relo_pass *pass, relo_device *device, relo_reason reason);

/** True when planning next_bytes more would break the pass's bounds; the
 *  first page of a pass always fits max_bytes, max_moves and max_ns, never
 *  more than its budget. */
bool relo__pass_full(const relo_pass *pass, uint64_t next_bytes);

/** Reserves targets in target for every allocation of page, or none
 *  (all-or-nothing per page; none when one of them is pinned). new_page:
 *  whether and how targets may take new pages. */
bool relo__pass_plan_page(relo_pass *pass, relo_pool *target, relo_page *page, relo_new_page new_page);

/** As relo__pass_plan_page for the allocations of the slices from first up
 *  to (not including) end, in one page's address order; end NULL = to the
 *  page's end. All or nothing. */
bool relo__pass_plan_slices(relo_pass *pass, relo_pool *target, struct relo_slice *first,
                            const struct relo_slice *end, relo_new_page new_page);

/** As relo__pass_plan_slices; with RELO_NEW_PAGE_EXACT or _EXACT_OR_COPIES
 *  a new page taken for the run also has room for `after` more bytes (of
 *  runs the caller plans next, which then land in it). */
bool relo__pass_plan_run(relo_pass *pass, relo_pool *target, struct relo_slice *first,
                         const struct relo_slice *end, relo_new_page new_page, uint64_t after);

/** Sorts n slices of one page larger size first, lower offset among
 *  equals (a total order): the order in which a run's allocations pack
 *  best into a best-fit pool's holes. */
void relo__slices_largest_first(struct relo_slice **order, uint32_t n);

/** Gives back every target planned in pass: nothing of it will move. */
void relo__pass_drop_moves(relo_pass *pass);

/** Adds a slide of slice (LIVE, on a page fenced in this slide pass) down
 *  to offset to. False: the allocation is pinned, or host memory ran out
 *  (nothing added). */
bool relo__pass_add_slide(relo_pass *pass, relo_slice *slice, uint64_t to);

/** Plans the outdated pages of one stream's arena (only non-NULL) or of
 *  every stream's, fewest live bytes first, within the pass's bounds. */
void relo__relocation_plan(relo_pass *pass, struct relo_stream *only);

/** Fences page (a compaction source) until the pass closes. False: host
 *  memory ran out (the page is not fenced). */
bool relo__pass_fence(relo_pass *pass, relo_page *page);

/** Drops the last fence taken (its page was not planned after all). */
void relo__pass_unfence_last(relo_pass *pass);

/**
 * Copies, then commits from landed copies, or abandons (sources kept) or
 * leaks (outcome unknown). The device lock is dropped while relo waits for
 * the device and copies, and held again for the commit; other threads may
 * call relo meanwhile (the pass is open). Frees the plan. Returns true when
 * something moved.
 */
bool relo__pass_finish(relo_pass *pass);

/** Opens a planned pass: marks its sources and makes it the device's open
 *  pass; a move whose allocation was pinned since it was planned (a pin
 *  takes no lock) is skipped. Returns RELO_ERR_HOST_MEMORY when the
 *  streams' finishes cannot be noted, RELO_ERR_BUSY when a slide's
 *  allocation was pinned (a slide cannot be skipped); the pass is then not
 *  open and nothing of it has changed but its withdrawn bindings, which
 *  the next locked resolve publishes again. */
relo_status relo__pass_open(relo_pass *pass);

/**
 * Waits for the device (the streams' finishes, else the backend), enqueues
 * every move's copy and waits for the copies. Reads only what an open pass
 * never changes, so it runs without the device lock.
 */
relo_copy_outcome relo__pass_copy(relo_pass *pass);

/**
 * Closes an open pass (device lock held) with the outcome of its copies:
 * LANDED commits every move still PLANNED and frees the targets of skipped
 * ones; ABANDONED frees every target; UNKNOWN leaks both sides of every
 * move. Dropped allocations are freed in every case. Fences come off, the
 * sources lose their marks, threads waiting for the pass wake. Pages that
 * emptied go back, their buffers freed with the lock dropped for a moment
 * (relo__device_cleanup_off_lock). Frees the plan (not the pass). Returns
 * true when something moved.
 */
bool relo__pass_close(relo_pass *pass, relo_copy_outcome outcome);

/** Waits (dropping the device lock) while a pass relo itself drives is open
 *  on another thread. A pass the runtime drives may stay open. */
void relo__pass_settle(relo_device *device);

/**
 * When slice is a source of the open pass and this thread neither opened it
 * nor runs its copies (relo_pass_copy, and the streams' finishes it calls):
 * waits (dropping the device lock) until the pass closes and returns true;
 * the caller looks the allocation up again. False otherwise (the pass's own
 * threads skip the move instead of waiting for themselves).
 */
bool relo__pass_wait_for_move(relo_device *device, const relo_slice *slice);

/** A resolve, pin or write is about to use slice's bytes where they are: a
 *  move of it in the open pass is skipped. A slide is never skipped: its
 *  copies overwrite the source, so every other thread waits it out
 *  (relo__pass_is_slide) and only the pass's own thread could get here. */
static inline void relo__pass_veto(relo_device *device, relo_slice *slice);

/** The allocation on slice is released while its move is open: the move is
 *  dropped and the slice stays until the pass closes. False when slice is
 *  no source of the open pass (free it now). */
bool relo__pass_drop(relo_device *device, relo_slice *slice);

/** Requested bytes on a page whose every occupied slice is a LIVE
 *  allocation, that no graph guards and no transfer uses; 0 otherwise.
 *  O(1): the page counts its LIVE slices and their sizes. Pins are not
 *  looked at: planning a move checks its allocation's. */
uint64_t relo__page_movable_bytes(const relo_page *page);

/** Whether an allocation on page is pinned (a look at each of its slots:
 *  pages keep no count of their own, since pins take no lock). */
bool relo__page_has_pins(const relo_page *page);

/** A page a pass may empty, with its movable bytes. */
typedef struct relo_candidate {
    relo_page *page;
    uint64_t live_bytes;
} relo_candidate;

/** Arranges n candidates as a binary heap in the order passes take them
 *  (fewest live bytes first, then lower page order), in O(n), so that a
 *  pass that stops early never sorts them all. */
void relo__candidates_heapify(relo_candidate *c, uint32_t n);

/** Takes the first candidate in that order out of a heap of *n (> 0) made
 *  by relo__candidates_heapify; *n shrinks by one. O(log n). */
relo_candidate relo__candidates_pop(relo_candidate *c, uint32_t *n);

/** No stream records, no pass is open, relocation is on, the layout is
 *  ADAPTIVE. */
bool relo__relocation_allowed(const relo_device *device);

/**
 * Relocate-when-wanted, before a reservation on stream: asks the trigger,
 * and relocates the stream's arena when it says so. Does nothing while any
 * stream records or relocation is off.
 */
void relo__relocate_when_wanted(struct relo_stream *stream);

/**
 * Relocates the outdated pages of one stream's arena (stream non-NULL) or
 * of every stream's (NULL) with reason. Nothing happens while any stream
 * records, with the exclusive placement, or with relocation off. Stalls the
 * trigger on arenas where nothing moved. Returns true when something moved.
 */
bool relo__relocate(relo_device *device, struct relo_stream *stream, relo_reason reason);

static inline void relo__pass_veto(relo_device *device, relo_slice *slice)
{
    if (slice->move == 0) return;
    relo_move *mv = &device->open_pass->moves[slice->move - 1];
    if (mv->fate == RELO_FATE_PLANNED && mv->dst) mv->fate = RELO_FATE_SKIPPED;
}

/** Whether slice is the source of a slide of the open pass: its bytes are
 *  overwritten while the pass is open, so a resolve or read waits for the
 *  pass (relo__pass_wait_for_move) instead of using them. */
static inline bool relo__pass_is_slide(const relo_device *device, const relo_slice *slice)
{
    return slice->move != 0 && device->open_pass->moves[slice->move - 1].dst == NULL;
}

/* ---- the adaptive placement's trigger (pass/relocation.c) ------------------------
 * When relocation is wanted (design §6.1): a cheap question
 * asked before a reservation that may add pages. The bytes held across the
 * device are summed only when the answer depends on them.
 */

/** The trigger's answer for the stream's arena: NONE, ARENA_FULL or
 *  MEMORY_PRESSURE. */
relo_reason relo__trigger(struct relo_stream *stream);


/** The pressure rule: held + page > capacity - page (saturating). */
bool relo__pressure_high(uint64_t capacity, uint64_t held, uint64_t page);

/* ---- packing (pass/compaction.c) -------------------------------------------
 * Packing live allocations of the packed placement's pools (docs/design.md
 * §6.5, docs/placement.md): the pages with the fewest live bytes are
 * emptied into the free room of denser pages of the same pool, each page
 * all-or-nothing, through the relocation pass machinery (same copy,
 * abandon, leak and commit path; nothing moves while a stream records;
 * guarded pages are never a source nor a target).
 *
 * Called with the device lock held.
 */

/**
 * Plans compaction of the packed layout's pools of one stream (only
 * non-NULL) or of every stream into pass, fencing its sources in the pass, until want bytes
 * of pages would empty or the pass is full. Returns the bytes planned.
 */
uint64_t relo__compact_plan(struct relo_pass *pass, struct relo_stream *only, uint64_t want, bool repaginate);

/**
 * Compacts the packed layout's pools of one stream (only non-NULL) or of
 * every stream until want bytes of pages are empty and given back, moving at most budget
 * requested bytes in all (UINT64_MAX: no bound). Everything is planned in
 * one pass, which waits for the device once and for its copies once; a
 * further pass runs only where the pass's bounds (pass_max_bytes,
 * pass_max_ns) cut the plan short, or, for a page the device refused
 * (RELO_REASON_MEMORY_PRESSURE), while passes still give room back (at
 * most a bounded number of them). Packing for a new page
 * (RELO_REASON_COMPACT) within a budget drops a pass that would empty less
 * than what is still wanted, before anything moves. Packing nobody waits on
 * (RELO_REASON_COMPACT, RELO_REASON_CACHE_LIMIT) never waits for another
 * thread's pass: while one is open it moves nothing. Returns bytes given
 * back.
 */
uint64_t relo__compact_and_release(relo_device *device, struct relo_stream *only, uint64_t want,
                                   bool repaginate, relo_reason reason, uint64_t budget);

/**
 * Makes one hole of at least length bytes in pool without a new page, for
 * a request the device refused a page for: in the page where the fewest
 * live bytes stand in the way, the allocations of the run of slices that
 * would cover length move to the free room of the pool's other pages
 * (all or none, one window per call). Returns whether anything moved.
 * Nothing moves while relocation is not allowed. Device lock held.
 */
bool relo__compact_make_room(relo_device *device, relo_pool *pool, uint64_t length);

/**
 * Makes one hole of at least length bytes in pool, without a new page, where
 * relo__compact_make_room found none because each window's allocations
 * have no room elsewhere: for the windows with the fewest live bytes, a
 * hole is first made for the largest allocation standing in each (one
 * relo__compact_make_room of that size), then for the request, whose
 * window's allocation can now move there. Two moves deep, at most a few
 * sizes tried; each move is a pass of its own, all or nothing. Returns
 * whether anything moved (the caller retries the request). Nothing moves
 * while relocation is not allowed. Device lock held.
 */
bool relo__compact_make_room_chained(relo_device *device, relo_pool *pool, uint64_t length);

/** Notes size among the sizes a chained make-room clears a hole for first
 *  (sizes[0 .. *n), distinct, at most cap): not when it is 0, at least
 *  length (no smaller hole helps the request), already noted, or the list
 *  is full. */
void relo__note_blocking_size(uint64_t *sizes, uint32_t *n, uint32_t cap, uint64_t size, uint64_t length);

/**
 * Gives back a granule or more of the tails that rounding strands, for a
 * request the device refused a page for: a page of a variable-page pool
 * holds its allocations rounded up to the granule, so each may strand up
 * to a granule less a byte, too little for anything to move into, while
 * the tails of several pages together make whole granules. The
 * allocations of such pages (most free room first, fewest live bytes among
 * equals) move together into one new page of their combined size, which
 * the device must lend first, and the pages they leave go back. Pages are
 * taken while the new page stays within what the device may still lend
 * (relo_device_desc.capacity less the bytes held; any size when the
 * capacity is not known) and until the pages given back pass it by what a
 * page for a request of length bytes lacks (at least a granule). One pass,
 * all or nothing. Returns whether anything moved. Nothing moves while
 * relocation is not allowed. Device lock held.
 */
bool relo__compact_merge_tails(relo_device *device, relo_pool *pool, uint64_t length);

/* ---- packing a page in place (pass/slide.c) --------------------------------
 * Packing pages in place (docs/design.md §6.5, docs/placement.md):
 * the live allocations of a packed-layout pool's page slide toward its start, so its
 * scattered free room becomes one run at its end. This is the move left when
 * no other page has room to take a page's allocations: a request of the
 * coalesced size then fits, and compaction finds whole holes to empty other
 * pages into. A slide may land on its own bytes; its copies go in pieces no
 * longer than the distance it slides, in order (relo_backend.h), and a
 * refused piece has the landed ones played back before the pass abandons.
 * Slides run as passes of their own, through the relocation pass
 * (above): never while a stream records, guarded, pinned or
 * transferring pages untouched, all or nothing.
 *
 * Called with the device lock held.
 */


/**
 * For a request of length bytes the device refused a page for, in pool (a
 * pool of the packed layout): when one page could hold the request once packed, packs the
 * one that copies the fewest bytes; otherwise packs every page whose free
 * room is scattered, fewest bytes to copy first, within the pass's bounds,
 * so compaction can fill the runs that open. One pass, all or nothing.
 * Nothing moves while relocation is not allowed. Returns whether anything
 * moved. Device lock held.
 */
bool relo__slide_make_room(relo_device *device, relo_pool *pool, uint64_t length);

/**
 * For a request of length bytes the device refused a page for, in pool (a
 * pool of the packed layout), when no page has that much free room: a page that would
 * hold it once a few of its allocations moved to other pages' holes has
 * them moved (the fewest bytes; one pass, all or nothing, the page fenced)
 * and is then packed in place (relo__slide_make_room, unless the request
 * fits already). On a device of known capacity, what the holes do not
 * take may go to one new page of what the device can still lend, in whole
 * granules (less than the request needed). Where no page's allocations
 * fit, a hole of the size that blocked them is first made the same way,
 * for up to four such sizes. Nothing moves while relocation is not
 * allowed. Returns whether anything moved. Device lock held; dropped while
 * passes copy.
 */
bool relo__slide_make_room_evicting(relo_device *device, relo_pool *pool, uint64_t length);

/* ---- the cache limit (pass/trim.c) ----------------------------------------
 * The cache limit (relo_device_desc.cache_limit): which empty pages stay
 * cached with their pools for later reservations, and which go back to the
 * backend. Empty pages are counted as they come and go
 * (relo_pool.bytes_empty, and the streams' and the device's relo_held), so
 * deciding that nothing needs to go back costs O(1); giving pages back
 * takes them from each sliced pool's empty list (pool/occupancy.h).
 *
 * Called with the device lock held.
 */

#define RELO_TRIM_LIVE_DIVISOR 16u /* RELO_CACHE_LIMIT_PROPORTIONAL: live / 16, ... */
#define RELO_TRIM_POOLS \
    2u /* ... at least a granule per dynamic pool (packed: fine, large;
                                       adaptive: small, arena) of each stream */

/** Bytes live on the device (requested sizes of live allocations). */
uint64_t relo__trim_live(const relo_device *device);

/** A cache limit (a byte count, or RELO_CACHE_LIMIT_PROPORTIONAL
 *  or _NEVER) in bytes, against the bytes live now. */
uint64_t relo__trim_resolve(const relo_device *device, uint64_t value);

/** The cache limit in force now, in bytes (the proportional rule resolved
 *  against the bytes live now); UINT64_MAX when nothing goes back. */
uint64_t relo__cache_limit(const relo_device *device);

/**
 * Gives back empty pages of the sliced pools of one stream (only
 * non-NULL) or of every stream while the device holds more than
 * live + keep bytes. Pages that are guarded, fenced, queued to go back,
 * or in a transfer stay. Returns the bytes given back. Does nothing while
 * a stream records. The device lock is held; it is dropped while the
 * backend frees the buffers (relo__device_free_batch), so other threads
 * may run meanwhile.
 */
uint64_t relo__trim(relo_device *device, struct relo_stream *only, uint64_t keep);

/** relo__trim's work on one pool: its empty pages that nothing holds go
 *  into batch (relo__pool_page_collect), while the device holds more than
 *  live + keep bytes; their bytes are returned. The caller frees the batch
 *  (relo__device_free_batch). */
uint64_t relo__trim_pool(relo_device *device, relo_pool *pool, uint64_t keep, relo_buffer_batch *batch);

/**
 * The cache limit's own rule, run at the end of relo_reserve: relo__trim
 * to the limit in force, when the device holds more than that above live
 * and has empty pages that did not refuse to go last time. O(1) otherwise.
 */
void relo__trim_auto(relo_device *device);

/* ---- when memory moves, and in which order (policy/steps.c) ----------------
 * When memory moves, and in which order (policy/steps.c): one call per
 * occasion, the one place the order of relocation steps lives.
 *
 * Called with the device lock held; a call that moves memory drops it
 * while it waits and copies, so other threads may run meanwhile.
 */

/** Before a reservation: queued pages go back; with may_relocate (an AUTO
 *  reservation of some bytes) the adaptive placement's trigger may relocate. */
void relo__steps_before_reserve(relo_device *device, relo_stream *stream, bool may_relocate);

#define RELO_PACK_BUDGET_DIVISOR \
    64u                           /* packing nothing waits on copies at most 1/64
                                         of the bytes reserved so far ... */
#define RELO_PACK_FREE_DIVISOR 4u /* ... while the device stays over 1/4 free */
#define RELO_PACK_MIN_GAIN \
    (UINT64_C(1) << 20) /* packing past the cache limit
                                                  starts once as much again, and at least
                                                  a granule or 1 MiB, is held past it */

/** A layout that packs before a new page for stream asked to (layout/layout.h
 *  want_pack): packs the stream's own packed-layout pools for page bytes, within
 *  the copy budget (RELO_PACK_BUDGET_DIVISOR; nothing moves once it is
 *  spent), or every stream's, with no budget, where the page would leave
 *  less than 1/RELO_PACK_FREE_DIVISOR of a device of known capacity free.
 *  Returns true when pages went back (or, within a cache limit, were
 *  emptied). */
bool relo__steps_pack_before_page(relo_device *device, relo_stream *stream, uint64_t page);

/**
 * A reservation of size bytes on stream was refused with st. For
 * RELO_ERR_PAGE_SIZES_EXHAUSTED and RELO_ERR_OUT_OF_MEMORY (while no stream
 * records) makes room in order and tries again through retry(ctx), which
 * routes the same reservation; room_pool, when not NULL, is the pool the
 * request goes to (packed layout), where a hole is cleared or pages are packed in
 * place as the last steps. Returns retry's last status, or st untouched
 * when nothing applies.
 */
relo_status relo__steps_refused(relo_device *device, relo_stream *stream, uint64_t size, relo_status st,
                                relo_pool *room_pool, relo_status (*retry)(void *ctx), void *ctx);

/** After a served reservation on stream: the cache limit (pass/trim.c);
 *  then, in a layout that packs, room held past live + cache limit on the
 *  stream's pages that hold allocations is packed and given back, within
 *  the copy budget. */
void relo__steps_after_reserve(relo_device *device, relo_stream *stream);

/**
 * Explicit cleanup of one stream (only non-NULL) or of every stream:
 * relocates with reason EXPLICIT (when relocation is on and no pass is
 * open), packs the packed layout's pools, gives back every empty unguarded page of those
 * streams' pools, flushes the backend. Skipped while any stream records.
 */
void relo__steps_explicit(relo_device *device, relo_stream *only);

/** Before a capture is prepared: outdated pages emptied and given back,
 *  so none of them gets guarded. */
void relo__steps_before_capture(relo_device *device);

#endif /* RELO_RELOCATION_H */
