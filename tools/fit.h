/*
 * fit.h — the smallest device a trace runs on: bisection over capacity.
 *
 * A replay at capacity C uses a fresh device whose backend lends C bytes
 * and whose relo_device_desc.capacity is C, so relocation under pressure
 * acts as it would on such a device. Only RELO_ERR_OUT_OF_MEMORY counts as
 * "does not fit"; any other failure stops the search as an error.
 *
 * relo is not guaranteed monotonic in capacity (a larger device may
 * relocate differently), so the answer is the boundary the bisection
 * finds between a capacity that failed and one that completed.
 *
 * The sim and host backends charge each buffer its size rounded up to the
 * granule, so a capacity lends what the multiple of the granule below it
 * lends: the search tries multiples only, and stops at one granule apart
 * where that is finer than FIT_TOLERANCE. On a trace of tens of MiB the
 * answer is then exact: the fewest granules the trace runs in.
 */
#ifndef RELO_TOOLS_FIT_H
#define RELO_TOOLS_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "replay.h"

/** The search stops when (high - low) ≤ low × FIT_TOLERANCE. */
#define FIT_TOLERANCE 0.001

typedef struct fit_result {
    bool found;
    uint64_t capacity;     /**< smallest capacity seen to complete */
    uint64_t failed_below; /**< largest capacity seen to run out (0 = none) */
    unsigned replays;
    uint64_t elapsed_ns;
    relo_status status; /**< RELO_OK, or the failure that stopped the search */
    char error[320];
} fit_result;

/** What capacities the search steps by: the granule for the sim and host
 *  backends, 1 byte for the others. */
uint64_t fit_capacity_step(const replay_config *cfg);

/**
 * Searches capacities between t's peak live bytes and above `upper_hint`
 * (peak reserved of an unlimited replay; doubled by steps of 25 % while it
 * does not fit). cfg gives backend, placement and relocation; its
 * capacity and record fields are ignored. Returns true with out->capacity
 * when found.
 */
bool fit_search(const trace *t, const replay_config *cfg, uint64_t upper_hint, fit_result *out);

#endif /* RELO_TOOLS_FIT_H */
