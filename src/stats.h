/*
 * stats.h — event counters kept per stream and per device, and the
 * functions that fill relo_stats and write reports from one X-macro list
 * (RELO_STATS_LIST in relo.h), so the struct, the text and the JSON cannot
 * drift apart.
 */
#ifndef RELO_STATS_H
#define RELO_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "relo.h"

/* Counters of events (monotonic; longest_pass_ns is a maximum). Gauges
 * are summed from the pools. */
#define RELO_COUNTER_LIST(X)                                                   \
    X(relocations) X(relocations_abandoned) X(allocations_moved) X(bytes_moved) \
    X(bytes_leaked) X(pages_released) X(backend_allocs) X(backend_frees) X(longest_pass_ns) \
    X(allocations_total) X(bytes_allocated_total) X(frees_total) X(bytes_freed_total)

typedef struct relo_counters {
#define RELO_X_(name) uint64_t name;
    RELO_COUNTER_LIST(RELO_X_)
#undef RELO_X_
} relo_counters;

struct relo_stream;
struct relo_device;

/** Counts a reservation of size bytes on stream (and its device) and
 *  raises the peaks of bytes in use. The device lock is held. */
void relo__stats_allocated(struct relo_stream *stream, uint64_t size);

/** Counts the free of an allocation of size bytes on stream. The device
 *  lock is held. Never fails. */
void relo__stats_freed(struct relo_stream *stream, uint64_t size);

/** Fills out for one stream (gauges from its pools, its counters). */
void relo__stream_stats(const struct relo_stream *stream, relo_stats *out);

/** Fills out for the device: gauges summed over streams, the device's own
 *  counters (which outlive destroyed streams) and peak. */
void relo__device_stats(const struct relo_device *device, relo_stats *out);

/** Writes stats as a JSON object (no trailing newline). */
void relo__stats_json(const relo_stats *stats, FILE *f);

#endif /* RELO_STATS_H */
