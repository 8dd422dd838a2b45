/*
 * baseline.h — replays a trace through a model of another allocator (a
 * "baseline"), so relo-replay can show what the same trace needs under the
 * allocator a user has today: peak reserved bytes, whether it completes on
 * a given capacity, and the smallest capacity it completes on.
 *
 * The models are bookkeeping only (no memory is touched) and follow the
 * rules written in docs/baselines.md.
 */
#ifndef RELO_TOOLS_BASELINE_H
#define RELO_TOOLS_BASELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "samples.h"
#include "trace.h"

typedef enum baseline_kind {
    BASELINE_PYTORCH = 0,        /**< PyTorch's caching allocator, default settings */
    BASELINE_PYTORCH_EXPANDABLE, /**< the same with expandable_segments:True */
    BASELINE_KIND_COUNT
} baseline_kind;

/** How a baseline replay ended. */
typedef enum baseline_status {
    BASELINE_COMPLETED = 0,
    BASELINE_OUT_OF_MEMORY, /**< the capacity refused a request */
    BASELINE_FAILED,        /**< host memory ran out, or a model limit */
    BASELINE_STATUS_COUNT
} baseline_status;

/** The name used on the command line and in reports ("pytorch", "pytorch-expandable"). */
const char *baseline_kind_name(baseline_kind k);

/** The status's name ("completed", "out_of_memory", "failed"). */
const char *baseline_status_name(baseline_status s);

/** Parses a name of baseline_kind_name. Returns false for an unknown one. */
bool baseline_kind_parse(const char *name, baseline_kind *out);

typedef struct baseline_run {
    baseline_kind kind;
    uint64_t capacity; /**< 0 = unlimited */
    baseline_status status;
    uint64_t failed_event; /**< 0-based; when status != COMPLETED */
    uint64_t events_done;
    uint64_t peak_live;
    uint64_t peak_reserved;
    uint64_t device_allocs;    /**< buffers (expandable: pages) the model took from the device */
    uint64_t device_frees;     /**< ... and gave back */
    double live_event_sum;     /**< live bytes summed over events (memory-time product) */
    double reserved_event_sum; /**< reserved bytes summed over events */
    uint64_t end_live;         /**< live bytes after the last event done */
    uint64_t end_reserved;     /**< reserved bytes after it */
    sampler samples;           /**< live and reserved; empty unless asked for */
} baseline_run;

/**
 * Replays t through model k on a device of `capacity` bytes (0 =
 * unlimited). With samples_max > 0, keeps a timeline of at most that many
 * points (live, reserved; outdated is always 0). Always fills *out (free
 * it with baseline_run_free); returns whether the replay completed.
 */
bool baseline_replay(baseline_kind k, const trace *t, uint64_t capacity, size_t samples_max,
                     baseline_run *out);

/** Frees the timeline of a run. */
void baseline_run_free(baseline_run *r);

typedef struct baseline_fit {
    bool found;
    uint64_t capacity;     /**< smallest capacity seen to complete */
    uint64_t failed_below; /**< largest capacity seen to run out (0 = none) */
    unsigned replays;
    baseline_status status; /**< COMPLETED when found; else what stopped the search */
} baseline_fit;

/**
 * The smallest capacity t completes on under model k, by bisection between
 * t's peak live bytes and `upper` (the peak reserved of an unlimited
 * replay; raised by max(2 %, 2 MiB) while it does not complete) until the
 * gap is at most max(peak live / 200, 2 MiB). Returns out->found.
 */
bool baseline_fit_search(baseline_kind k, const trace *t, uint64_t upper, baseline_fit *out);

/** Everything relo-replay reports for one baseline on one trace. */
typedef struct baseline_measure {
    baseline_kind kind;
    baseline_run run; /**< the replay at the reported capacity, with its timeline */
    bool fitted;      /**< a fit search was asked for */
    baseline_fit fit;
} baseline_measure;

/**
 * Replays t through k at `capacity` (0 = unlimited) keeping a timeline of
 * samples_max points, and with `fit`, searches the fit capacity too.
 * Returns false only when a replay failed for a reason other than out of
 * memory (out->run.status or out->fit.status says so).
 */
bool baseline_measure_run(baseline_kind k, const trace *t, uint64_t capacity, bool fit, size_t samples_max,
                          baseline_measure *out);

/** Frees what a measure holds. */
void baseline_measure_free(baseline_measure *m);

#endif /* RELO_TOOLS_BASELINE_H */
