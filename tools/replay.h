/*
 * replay.h — replays one trace on a fresh relo device and measures it:
 * peaks, relocation counters, time per event, reserve latencies, and a
 * bounded timeline.
 */
#ifndef RELO_TOOLS_REPLAY_H
#define RELO_TOOLS_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "progress.h"
#include "relo.h"
#include "replay_backend.h"
#include "samples.h"
#include "trace.h"

/** The most timeline points a replay keeps. */
#define REPLAY_MAX_SAMPLES 2000u

/** What an observer sees after each event of a recording replay. */
typedef struct replay_view {
    uint64_t event; /**< 0-based index of the event just done */
    const trace *t;
    relo_device *device;
    relo_stream *const *streams; /**< by dense stream index */
    const relo_handle *handles;  /**< by allocation number; id 0 = not live */
    const relo_stats *stats;     /**< device stats after the event */
} replay_view;

/** Watches a recording replay (the HTML report's page maps and relocations). */
typedef struct replay_observer {
    void *ctx;
    /** Called after every event that succeeded. Must not change the device. */
    void (*after_event)(void *ctx, const replay_view *view);
} replay_observer;

typedef struct replay_config {
    replay_backend_kind backend;
    uint64_t capacity;        /**< backend and device capacity; 0 = unlimited */
    uint64_t granule;         /**< sim, host: what the backend charges buffers in; 0 = its default */
    relo_placement placement; /**< relo_device_desc.placement; 0 = relo's default */
    relo_relocation relocation;
    uint64_t cache_limit;            /**< relo_device_desc.cache_limit; 0 = relo's default */
    bool record;                     /**< keep samples and latencies (off inside a fit search) */
    bool verify_full;                /**< host: check every byte, not the sparse windows */
    progress *progress;              /**< may be NULL */
    const replay_observer *observer; /**< may be NULL; called only when record */
} replay_config;

typedef struct replay_result {
    relo_status status;    /**< RELO_OK, or what stopped the replay */
    uint64_t failed_event; /**< 0-based event index where it stopped */
    char error[320];       /**< a sentence when status != RELO_OK */
    uint64_t events_done;
    uint64_t peak_live;     /**< highest bytes_in_use seen after an event */
    uint64_t peak_reserved; /**< stats.peak_bytes_reserved at the end */
    uint64_t peak_outdated;
    uint64_t peak_event;       /**< event of the live peak */
    double live_event_sum;     /**< when recording: bytes in use summed over events */
    double reserved_event_sum; /**< ... bytes reserved summed over events (memory-time product) */
    uint64_t end_live;         /**< bytes in use after the last event done */
    uint64_t end_reserved;     /**< bytes reserved then, before teardown */
    relo_stats stats;          /**< device stats after the last event, before teardown */
    uint64_t call_ns;          /**< time spent inside relo_reserve / relo_release */
    uint64_t reserve_p50_ns;
    uint64_t reserve_p99_ns;
    uint64_t longest_call_ns;
    uint64_t longest_call_event;
    uint64_t verified; /**< host: allocations checked */
    sampler samples;   /**< when record */
} replay_result;

/**
 * Replays t with cfg. Always fills *out (free it with replay_result_free).
 * Returns true when every event succeeded and, on host, every check
 * passed; false otherwise, with out->status and out->error saying why
 * (RELO_ERR_OUT_OF_MEMORY is what a fit search looks for).
 */
bool replay_run(const trace *t, const replay_config *cfg, replay_result *out);

/** Frees what a result holds. */
void replay_result_free(replay_result *r);

/** The largest allocation size in t. */
uint64_t replay_max_alloc(const trace *t);

/** Nanoseconds on the monotonic clock. */
uint64_t replay_now_ns(void);

#endif /* RELO_TOOLS_REPLAY_H */
