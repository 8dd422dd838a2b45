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

#include <stdbool.h>

#include "stream.h"
#include "testing.h"

/**
 * Relocate-when-wanted, before a reservation on stream: asks the trigger,
 * and relocates the stream's arena when it says so. Does nothing while any
 * stream records or relocation is off.
 */
void relo__relocate_when_wanted(struct relo_stream *stream);

/**
 * Relocates with reason over one stream's arena (stream non-NULL) or every
 * stream's (NULL). Nothing happens while any stream records, with the
 * EXCLUSIVE layout, or with relocation off (except CAPTURE and EXPLICIT,
 * which the user asked for... still off when relocation is off).
 * Returns true when something moved.
 */
bool relo__relocate(relo_device *device, struct relo_stream *stream, relo_reason reason);

#endif /* RELO_RELOCATION_H */
