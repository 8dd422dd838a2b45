/*
 * testing/testing.h — internal queries and hooks for relo's own tests, benchmarks
 * and fuzzers. Not part of the public API: names may change. Every function
 * takes the device lock itself.
 */
#ifndef RELO_TESTING_H
#define RELO_TESTING_H

#include <stdbool.h>
#include <stdint.h>

#include "core/device.h"
#include "base/reason.h"
#include "relo.h"
#include "pass/relocation.h"

/** What the trigger would answer before the next reservation on stream,
 *  without acting on it (may count one sum of held bytes). */
relo_reason relo__testing_trigger(relo_stream *stream);

/** How many times the bytes held across every stream were summed. */
uint64_t relo__testing_held_sums(relo_device *device);

/** Pages compaction planning (*plan) and the release of empty pages
 *  (*empty) took from the occupancy indexes of stream's sliced pools since
 *  it was created: what a reclaim looks at, as against the pages held. */
void relo__testing_occupancy_visits(relo_stream *stream, uint64_t *plan, uint64_t *empty);

/** The arena's current page size; 0 before the arena made a pool. */
uint64_t relo__testing_page_size(relo_stream *stream);

/** Arena slots holding a pool (current and outdated). */
uint32_t relo__testing_arena_pools(relo_stream *stream);

/** The reason of the last relocation that ran on the device (moved or not). */
relo_reason relo__testing_last_reason(relo_device *device);

/** Runs relocation with the given reason now, as the device would. */
relo_status relo__testing_relocate(relo_stream *stream, relo_reason reason);

/** The capacity the device judges pressure against (0 = unknown). */
uint64_t relo__testing_capacity(relo_device *device);

/** Callback for every committed move, in commit order (tests of plan order). */
void relo__testing_set_move_hook(relo_device *device, relo__move_hook hook, void *user);

/** Sets the generation of every free handle slot (1..2^26-1), so a test
 *  reaches the end of the generation range without 2^26 reuses. Returns how
 *  many slots it changed. */
uint32_t relo__testing_age_free_slots(relo_device *device, uint32_t generation);

/** Handle slots retired because their generations ran out. */
uint64_t relo__testing_retired_slots(relo_device *device);

/** Adds n pins to the live allocation h, exactly as n relo_pin calls would
 *  (its own count may not pass UINT32_MAX), so a test reaches counts that
 *  billions of calls would take. Returns RELO_ERR_NOT_FOUND or
 *  RELO_ERR_INVALID_ARGUMENT (past the bound) as relo_pin would. */
relo_status relo__testing_add_pins(relo_device *device, relo_handle h, uint32_t n);

/** Holds (true) or lets go of the process-wide registry of device tags,
 *  as a device creation on another thread holds it for a moment. */
void relo__testing_hold_tag_registry(bool hold);

/** Host-memory fault injection (base/hostmem.h): the nth relo__malloc,
 *  relo__calloc or relo__realloc from now fails (0 = none), and every one
 *  after it when sticky. */
void relo__testing_hostmem_fail_at(uint64_t n, int sticky);

/** Host-memory allocations made so far (base/hostmem.h). */
uint64_t relo__testing_hostmem_calls(void);

/** Initialises lock as the exchange-released mutex, even where a release
 *  by store is on offer (base/lock.h), so a test runs its cases both ways. */
bool relo__testing_lock_init_exchange(relo_lock *lock);

/** Whether lock's release is a plain store (base/lock.h). */
bool relo__testing_lock_releases_by_store(const relo_lock *lock);

/** The adaptive placement's pressure rule (pass/relocation.c): held + page >
 *  capacity - page, saturating. */
bool relo__testing_pressure_high(uint64_t capacity, uint64_t held, uint64_t page);

#endif /* RELO_TESTING_H */
