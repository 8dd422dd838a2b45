/*
 * baseline_model.h — what an allocator model offers the baseline replayer
 * (baseline.c): a caching allocator other than relo, simulated on
 * bookkeeping only, that a trace is replayed through for comparison.
 *
 * A model is a table of functions over an opaque state. The replayer owns
 * the loop over events, live bytes and the timeline; the model owns its
 * segments and blocks and counts the bytes it holds from the device.
 */
#ifndef RELO_TOOLS_BASELINE_MODEL_H
#define RELO_TOOLS_BASELINE_MODEL_H

#include <stdint.h>

#include "trace.h"

/** A request above this many bytes is out of memory in every model. */
#define BASELINE_MAX_REQUEST (UINT64_C(1) << 62)

/** What one model step did. */
typedef enum baseline_step {
    BASELINE_STEP_OK = 0,
    BASELINE_STEP_OUT_OF_MEMORY, /**< the device capacity refused the request */
    BASELINE_STEP_FAILED,        /**< host memory ran out, or a model limit was hit */
    BASELINE_STEP_COUNT
} baseline_step;

typedef struct baseline_model_ops {
    /**
     * A fresh allocator for the allocations and streams of t on a device
     * of `capacity` bytes (0 = unlimited). NULL when host memory ran out.
     */
    void *(*create)(const trace *t, uint64_t capacity);
    /** Serves allocation number `alloc` of `size` bytes on dense stream `stream`. */
    baseline_step (*alloc)(void *model, uint32_t alloc, uint16_t stream, uint64_t size);
    /** Frees allocation number `alloc`, which the model served. */
    baseline_step (*release)(void *model, uint32_t alloc);
    /** Bytes the model holds from the device now. */
    uint64_t (*reserved)(const void *model);
    /** The most bytes it held at once so far. */
    uint64_t (*peak_reserved)(const void *model);
    /** Device calls so far: buffers (or pages) it took and gave back. */
    void (*device_calls)(const void *model, uint64_t *allocs, uint64_t *frees);
    /** Frees the model; NULL is a no-op. */
    void (*destroy)(void *model);
} baseline_model_ops;

#endif /* RELO_TOOLS_BASELINE_MODEL_H */
