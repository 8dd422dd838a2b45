/*
 * persistent_pool.h — exact-size slices, each its own backend buffer
 * (design §3.3): a request reuses a free buffer of exactly its padded size,
 * else takes a new one. Freed buffers stay until an explicit cleanup. Weights
 * live here, and so do a graph capture's allocations.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_PERSISTENT_POOL_H
#define RELO_PERSISTENT_POOL_H

#include <stdbool.h>

#include "pool.h"

/** Reserves size bytes for slot. Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG;
 *  RELO_ERR_PAGE_UPDATE_FORBIDDEN (a new buffer needed, not allowed); the
 *  backend's refusal; RELO_ERR_HOST_MEMORY. Nothing changes on failure. */
relo_status relo__persistent_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                     bool allow_new_page, relo_slice **out);

#endif /* RELO_PERSISTENT_POOL_H */
