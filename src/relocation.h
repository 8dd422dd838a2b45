/*
 * relocation.h — moving live allocations off outdated pages (design §6):
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

#include "device.h"
#include "stream.h"
#include "reason.h"

/** What became of one move while its pass was open. */
typedef enum relo_move_fate {
    RELO_FATE_PLANNED = 0,  /* commits if the copies landed */
    RELO_FATE_SKIPPED,      /* vetoed (the runtime, or a resolve, pin or write of the
                               source while the pass was open): the source stays */
    RELO_FATE_DROPPED,      /* the allocation was released while the pass was open:
                               both sides are freed when it closes */
    RELO_FATE_COUNT
} relo_move_fate;

const char *relo__move_fate_name(relo_move_fate fate);

/** One move of a pass: an allocation's slot, its source and its target.
 *  A slide (dst NULL, slide.h) moves the allocation down its own page to
 *  offset slide_to, over free room and possibly over its own bytes; its
 *  slice node stays and takes the new offset when the pass commits.
 *  src, dst, slide_to and slot never change while the pass is open; fate
 *  may (device lock). */
typedef struct relo_move {
    relo_slice *src;
    relo_slice *dst;        /* NULL: a slide */
    uint64_t slide_to;      /* a slide's new offset in src's page (< src->offset) */
    uint32_t slot;
    uint8_t fate;           /* relo_move_fate */
} relo_move;

/** How the copies of a pass ended. */
typedef enum relo_copy_outcome {
    RELO_COPY_LANDED = 0,   /* every copy done: commit */
    RELO_COPY_ABANDONED,    /* nothing was (or may still be) written: free targets */
    RELO_COPY_UNKNOWN,      /* the final wait failed: leak both sides */
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
    uint64_t id;            /* counts streams once per pass in their stats */
    relo_move *moves;
    uint32_t count, cap;
    uint64_t bytes;         /* requested bytes planned */
    uint64_t started_ns;
    uint64_t max_bytes;     /* 0 = no bound */
    uint64_t max_ns;        /* 0 = no bound */
    uint32_t max_moves;     /* 0 = no bound */
    relo_page **fences;     /* compaction sources, or the pages a slide pass packs;
                               unfenced when the pass closes */
    bool slides;            /* a slide pass (slide.h): every move is a slide, every
                               fenced page is packed on commit */
    uint32_t fence_count, fence_cap;
    relo_finish *finishes;  /* the streams' finishes, taken at open */
    uint32_t finish_count;
    bool all_finish;        /* every stream had one: no backend device wait */
    bool runtime;           /* driven by the runtime (relo_pass_begin) */
    pthread_t owner;        /* the thread that opened it */
    bool copied;            /* relo_pass_copy ran */
    uint8_t copy_outcome;   /* its relo_copy_outcome */
};

void relo__pass_begin(relo_pass *pass, relo_device *device, relo_reason reason);

/** True when planning next_bytes more would break the pass's bounds; the
 *  first page of a pass always fits. */
bool relo__pass_full(const relo_pass *pass, uint64_t next_bytes);

/** Reserves targets in target for every allocation of page, or none
 *  (all-or-nothing per page). new_page: whether and how targets may take
 *  new pages. */
bool relo__pass_plan_page(relo_pass *pass, relo_pool *target, relo_page *page, relo_new_page new_page);

/** As relo__pass_plan_page for the allocations of the slices from first up
 *  to (not including) end, in one page's address order; end NULL = to the
 *  page's end. All or nothing. */
bool relo__pass_plan_slices(relo_pass *pass, relo_pool *target, struct relo_slice *first,
                            const struct relo_slice *end, relo_new_page new_page);

/** Adds a slide of slice (LIVE, on a page fenced in this slide pass) down
 *  to offset to. False: host memory ran out (nothing added). */
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
 *  pass. Returns RELO_ERR_HOST_MEMORY (nothing changes) when the streams'
 *  finishes cannot be noted. */
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
 * When slice is a source of the open pass and this thread did not open it:
 * waits (dropping the device lock) until the pass closes and returns true;
 * the caller looks the allocation up again. False otherwise (the pass
 * owner's own calls skip the move instead of waiting for themselves).
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

/** Requested bytes on a page whose every occupied slice is a movable LIVE
 *  allocation and that no graph guards; 0 otherwise. O(1): the page
 *  counts its LIVE slices and their sizes. */
uint64_t relo__page_movable_bytes(const relo_page *page);

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
 * records, with the EXCLUSIVE layout, or with relocation off. Stalls the
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

#endif /* RELO_RELOCATION_H */
