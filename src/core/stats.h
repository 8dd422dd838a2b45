/*
 * core/stats.h — the functions that count events per stream and per device
 * (the counters themselves, relo_counters, are pool/pool.h's) and fill
 * relo_stats and write reports from one X-macro list (RELO_STATS_LIST in
 * relo.h), so the struct, the text and the JSON cannot drift apart.
 */
#ifndef RELO_STATS_H
#define RELO_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "pool/pool.h"
#include "relo.h"

struct relo_stream;
struct relo_device;

/** Counts a reservation of size bytes on stream (and its device) and
 *  raises the peaks of bytes in use. The device lock is held. */
void relo__stats_allocated(struct relo_stream *stream, uint64_t size);

/** Counts the free of an allocation of size bytes on stream. The device
 *  lock is held. Never fails. */
void relo__stats_freed(struct relo_stream *stream, uint64_t size);


/** Fills out for the device: gauges summed over streams, the device's own
 *  counters (which outlive destroyed streams) and peak. */
void relo__device_stats(const struct relo_device *device, relo_stats *out);


#endif /* RELO_STATS_H */
