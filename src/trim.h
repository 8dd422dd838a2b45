/*
 * trim.h — the release threshold (relo_device_desc.release_threshold):
 * which empty pages stay cached with their pools for later reservations,
 * and which go back to the backend. Empty pages are counted as they come
 * and go (relo_pool.bytes_empty, relo_device.bytes_empty), so deciding
 * that nothing needs to go back costs O(1); giving pages back walks the
 * pools of the streams.
 *
 * Called with the device lock held.
 */
#ifndef RELO_TRIM_H
#define RELO_TRIM_H

#include <stdint.h>

#include "device.h"

#define RELO_TRIM_LIVE_DIVISOR 16u /* RELO_RELEASE_THRESHOLD_PROPORTIONAL: live / 16, ... */
#define RELO_TRIM_POOLS 2u          /* ... at least a granule per dynamic pool (dense: fine, large;
                                       seed: small, arena) of each stream */

/** Bytes live on the device (requested sizes of live allocations). */
uint64_t relo__trim_live(const relo_device *device);

/** The threshold in force now, in bytes (the proportional rule resolved
 *  against the bytes live now); UINT64_MAX when nothing goes back. */
uint64_t relo__trim_threshold(const relo_device *device);

/**
 * Gives back empty pages of the sliced pools of one stream (only
 * non-NULL) or of every stream while the device holds more than
 * live + keep bytes. Pages that are guarded, fenced, queued to go back,
 * or in a transfer stay. Returns the bytes given back. Does nothing while
 * a stream records. The device lock is held; it is dropped while the
 * backend frees the buffers (relo__device_free_buffers), so other threads
 * may run meanwhile.
 */
uint64_t relo__trim(relo_device *device, struct relo_stream *only, uint64_t keep);

/**
 * The threshold's own rule, run at the end of relo_reserve: relo__trim to
 * the threshold in force, when the device holds more than that above live
 * and has empty pages that did not refuse to go last time. O(1) otherwise.
 */
void relo__trim_auto(relo_device *device);

#endif /* RELO_TRIM_H */
