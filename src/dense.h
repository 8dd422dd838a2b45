/*
 * dense.h — the dense policy (RELO_POLICY_DENSE, docs/policy.md): dynamic
 * memory carved like a fine-grained caching allocator — best fit in three
 * pools by size class — and compacted when the device refuses a page, on
 * relo_reclaim, and before a pool takes a new page while its free room is
 * scattered. Compaction is what a caching allocator cannot do: it places
 * everything as such an allocator would until the moment it would fail,
 * and then still has a move to make.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_DENSE_H
#define RELO_DENSE_H

#include <stdbool.h>
#include <stdint.h>

#include "relo.h"
#include "util.h"

struct relo_stream;
struct relo_slice;

#define RELO_DENSE_POOLS 2
#define RELO_DENSE_FINE_MAX (1 * RELO_MiB)       /* fine pool: sizes up to this */
#define RELO_DENSE_FINE_PAGE (2 * RELO_MiB)      /* ... on pages of at most this */
#define RELO_DENSE_FINE_GRANULE (64 * RELO_KiB)  /* ... in multiples of this */
#define RELO_DENSE_MEDIUM_MAX (10 * RELO_MiB)    /* large pool: a new page for sizes up to this */
#define RELO_DENSE_MEDIUM_PAGE (20 * RELO_MiB)   /* ... is this big */
#define RELO_DENSE_LARGE_GRANULE (2 * RELO_MiB)  /* ... else its request rounded to this */
#define RELO_DENSE_PASS_MAX_BYTES (64 * RELO_MiB) /* default bound of one compaction pass */
#define RELO_DENSE_SLACK_DIVISOR 16u  /* pack before a new page past live + live/16 */
#define RELO_DENSE_QUIET_PAGES 8u     /* new pages before packing is tried again in vain */
#define RELO_DENSE_PAGE_DIVISOR 64u   /* small pages ≤ peak live / 64 (within floor and base) */

/** Sets up the dense pools of a stream. */
void relo__dense_init(struct relo_stream *stream);

/** The dense pool of stream that serves padded (size rounded to the
 *  device's alignment) bytes. */
struct relo_pool *relo__dense_pool_for(struct relo_stream *stream, uint64_t padded);

/**
 * Reserves size (> 0) bytes for slot in the dense pools. Statuses as
 * relo__sliced_reserve.
 */
relo_status relo__dense_reserve(struct relo_stream *stream, uint64_t size, uint32_t slot,
                                bool allow_new_page, struct relo_slice **out);

#endif /* RELO_DENSE_H */
