/*
 * sweep.h — replays at every capacity of a range: the check that a trace
 * which completes on its fit capacity completes on every larger device too
 * (relo-replay --sweep).
 *
 * Each replay uses a fresh device whose backend lends the capacity, as in
 * a fit search. Only RELO_ERR_OUT_OF_MEMORY counts as "does not fit"; any
 * other failure stops the sweep as an error.
 */
#ifndef RELO_TOOLS_SWEEP_H
#define RELO_TOOLS_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "replay.h"

/** The most replays one sweep runs: a range and step asking for more (a
 *  step of 0.0000001 % over 1x to 1,000,000x peak live would ask for
 *  about 10^15) are refused before any replay. */
#define SWEEP_MAX_REPLAYS 100000u

/** How many failing capacities a result names (the count has them all). */
#define SWEEP_MAX_NAMED 16u

typedef struct sweep_result {
    uint64_t from, to, step; /**< the range replayed, in bytes */
    unsigned replays;
    unsigned failed;                     /**< replays that ran out of memory */
    uint64_t failed_at[SWEEP_MAX_NAMED]; /**< the first of them, ascending */
    uint64_t elapsed_ns;
    relo_status status; /**< RELO_OK, or the error that stopped the sweep */
    char error[320];
} sweep_result;

/**
 * Replays t at from, from + step, ... up to and including to (step ≥ 1).
 * cfg gives backend, granule, placement and relocation; its capacity
 * and record fields are ignored. Returns true when every replay completed.
 * A range of more than SWEEP_MAX_REPLAYS capacities runs nothing: false,
 * with status RELO_ERR_INVALID_ARGUMENT and a sentence in error.
 */
bool sweep_run(const trace *t, const replay_config *cfg, uint64_t from, uint64_t to, uint64_t step,
               sweep_result *out);

#endif /* RELO_TOOLS_SWEEP_H */
