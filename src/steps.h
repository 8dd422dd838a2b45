/*
 * steps.h — when memory moves, and in which order (steps.c): one call per
 * occasion, the one place the order of relocation steps lives.
 *
 * Called with the device lock held; a call that moves memory drops it
 * while it waits and copies, so other threads may run meanwhile.
 */
#ifndef RELO_STEPS_H
#define RELO_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"

/** Before a reservation: queued pages go back; with may_relocate (an AUTO
 *  reservation of some bytes) the seed policy's trigger may relocate. */
void relo__steps_before_reserve(relo_device *device, relo_stream *stream, bool may_relocate);

/** A layout that packs before a new page asked to (layout.h want_pack):
 *  packs every stream's dense pools for page bytes. Returns true when
 *  pages went back (or, within a release threshold, were emptied). */
bool relo__steps_pack_before_page(relo_device *device, uint64_t page);

/**
 * A reservation of size bytes on stream was refused with st. For
 * RELO_ERR_PAGE_SIZES_EXHAUSTED and RELO_ERR_OUT_OF_MEMORY (while no stream
 * records) makes room in order and tries again through retry(ctx), which
 * routes the same reservation; room_pool, when not NULL, is the pool the
 * request goes to (dense), where a hole is cleared or pages are packed in
 * place as the last steps. Returns retry's last status, or st untouched
 * when nothing applies.
 */
relo_status relo__steps_refused(relo_device *device, relo_stream *stream, uint64_t size, relo_status st,
                                relo_pool *room_pool, relo_status (*retry)(void *ctx), void *ctx);

/** After a served reservation: the release threshold (trim.h). */
void relo__steps_after_reserve(relo_device *device);

/**
 * Explicit cleanup of one stream (only non-NULL) or of every stream:
 * relocates with reason EXPLICIT (when relocation is on and no pass is
 * open), packs dense pools, gives back every empty unguarded page of those
 * streams' pools, flushes the backend. Skipped while any stream records.
 */
void relo__steps_explicit(relo_device *device, relo_stream *only);

/** Before a capture is prepared: outdated pages emptied and given back,
 *  so none of them gets guarded. */
void relo__steps_before_capture(relo_device *device);

#endif /* RELO_STEPS_H */
