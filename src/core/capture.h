/*
 * core/capture.h — graph capture (design §7): per-stream states IDLE → PREPARED
 * → RECORDING → IDLE, the pages a recording touches, and the guards a
 * sealed graph holds on them.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_CAPTURE_H
#define RELO_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mem/page.h"
#include "relo.h"

typedef enum relo_capture_state {
    RELO_CAPTURE_IDLE = 0,
    RELO_CAPTURE_PREPARED,
    RELO_CAPTURE_RECORDING,
    RELO_CAPTURE_STATE_COUNT
} relo_capture_state;

/*
 * A recording guards a touched page of another stream's pool at once, not
 * at the end: that stream may release an allocation the recording resolved
 * and must not be handed its bytes while the graph still writes them. Pages
 * of the recording stream's own pools stay in service until the end (stream
 * order makes reuse inside the graph safe) and are guarded then.
 */
struct relo_graph {
    struct relo_device *device;
    relo_page **pages; /* touched pages of the recording stream; guarded at end */
    uint32_t count, cap;
    relo_page **foreign; /* touched pages of other streams; guarded at touch */
    uint32_t foreign_count, foreign_cap;
};

typedef struct relo_capture {
    relo_capture_state state;
    atomic_bool recording;    /* state == RECORDING, for relo_resolve's lock-free path */
    relo_status doom;         /* RELO_OK, or the error that doomed the recording */
    uint32_t epoch;           /* stamp for touched pages */
    struct relo_graph *graph; /* made at begin, so end cannot fail */
} relo_capture;

struct relo_stream;

/** Remembers that the recording stream used page, guarding it now when it
 *  belongs to another stream. RELO_ERR_HOST_MEMORY when the list cannot grow
 *  (nothing changes). */
relo_status relo__capture_touch(struct relo_stream *stream, relo_page *page);

/** Ends a stream's capture state without a graph (stream destroy). */
void relo__capture_reset(struct relo_stream *stream);

#endif /* RELO_CAPTURE_H */
