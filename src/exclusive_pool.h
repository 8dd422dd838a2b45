/*
 * exclusive_pool.h — one slice per page, pages reused whole (design §3.2).
 * Page size follows a running average of request sizes; free pages that
 * stay unused through enough periodic checks go back (the suspicion rule).
 * The tiny pool of the ADAPTIVE layout and the 24 buckets of the EXCLUSIVE
 * layout are exclusive pools.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_EXCLUSIVE_POOL_H
#define RELO_EXCLUSIVE_POOL_H

#include <stdbool.h>

#include "pool.h"

/** Sets up an exclusive pool taking sizes up to max_size. periodic: the
 *  suspicion rule gives unused pages back. */
void relo__exclusive_init(relo_pool *pool, const relo_pool_home *home, const char *name,
                          uint64_t max_size, bool periodic);

/** True when a free, unguarded page of the pool fits size. */
bool relo__exclusive_has_fit(const relo_pool *pool, uint64_t size);

/**
 * Reserves size bytes for slot: the least suspected free page that fits,
 * else a new page of max(average, size) when allow_new_page.
 * Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG; RELO_ERR_PAGE_UPDATE_FORBIDDEN;
 * the backend's refusal; RELO_ERR_HOST_MEMORY. Nothing changes on failure.
 */
relo_status relo__exclusive_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                    bool allow_new_page, relo_slice **out);

/** The periodic check: raises the suspicion of free pages and gives back
 *  those that reach 5. Returns pages released. */
uint32_t relo__exclusive_check(relo_pool *pool);

#endif /* RELO_EXCLUSIVE_POOL_H */
