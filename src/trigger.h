/*
 * trigger.h — when relocation is wanted (design §6.1): a cheap question
 * asked before a reservation that may add pages. The bytes held across the
 * device are summed only when the answer depends on them.
 */
#ifndef RELO_TRIGGER_H
#define RELO_TRIGGER_H

#include <stdbool.h>
#include <stdint.h>

#include "reason.h"
#include "stream.h"

/** The trigger's answer for the stream's arena: NONE, ARENA_FULL or
 *  MEMORY_PRESSURE. */
relo_reason relo__trigger(struct relo_stream *stream);

/** Records that a relocation of this arena found nothing to move. */
void relo__trigger_stall(relo_arena *arena);

/** Clears the stall (something moved). */
void relo__trigger_unstall(relo_arena *arena);

/** The pressure rule: held + page > capacity - page (saturating). */
bool relo__pressure_high(uint64_t capacity, uint64_t held, uint64_t page);

#endif /* RELO_TRIGGER_H */
