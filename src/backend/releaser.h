/*
 * backend/releaser.h — a thread of the device's own that gives page buffers
 * back to the backend (RELO_PAGE_FREE_THREAD). Freeing a large buffer can cost as
 * much as copying it (a driver unmapping host pages, cuMemFree's implicit
 * synchronisation); with the releaser, the thread whose relocation or
 * reclaim emptied the pages goes on while they go back.
 *
 * relo's bookkeeping counts a queued buffer as given back already; the
 * device may not have the room yet. So a page allocation the backend
 * refuses while buffers are queued waits for them (relo__releaser_drain)
 * and tries once more.
 *
 * Protected by: its own mutex (queue, counts, stop); the device lock is
 * never taken by the thread, so draining with the device lock held cannot
 * deadlock.
 */
#ifndef RELO_RELEASER_H
#define RELO_RELEASER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/** A backend buffer whose page is gone, waiting to be freed. */
typedef struct relo_buffer_free {
    void *buffer;
    uint64_t size;
} relo_buffer_free;

typedef struct relo_releaser {
    relo_backend *backend;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work; /* buffers queued, or stop */
    pthread_cond_t idle; /* the queue emptied and no free runs */
    relo_buffer_free *queue;
    uint32_t count, cap;
    uint32_t freeing; /* buffers being freed now */
    bool stop;
    bool running; /* the thread exists */
} relo_releaser;

/** Starts the thread. RELO_ERR_HOST_MEMORY when it or its locks cannot be
 *  made (nothing is left behind). */
relo_status relo__releaser_start(relo_releaser *r, relo_backend *backend);

/** Queues n buffers for the thread. Returns false, queuing none, when the
 *  queue cannot grow: the caller frees them itself. */
bool relo__releaser_push(relo_releaser *r, const relo_buffer_free *bufs, uint32_t n);

/** Waits until every queued buffer has been freed. Returns true when any
 *  was queued or being freed at the call. Safe with the device lock held. */
bool relo__releaser_drain(relo_releaser *r);

/** Drains, stops and joins the thread. A releaser never started is left
 *  alone. */
void relo__releaser_stop(relo_releaser *r);

#endif /* RELO_RELEASER_H */
