/*
 * dedicated_pool.h — one exact-size backend buffer per allocation (design
 * §3.4), given back at the first cleanup after it is freed.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_DEDICATED_POOL_H
#define RELO_DEDICATED_POOL_H

#include <stdbool.h>

#include "pool.h"

/** Reserves size bytes for slot in a buffer of its own. Returns RELO_OK;
 *  RELO_ERR_BUFFER_TOO_BIG; RELO_ERR_PAGE_UPDATE_FORBIDDEN (not allowed to
 *  add a page); the backend's refusal; RELO_ERR_HOST_MEMORY. */
relo_status relo__dedicated_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                    bool allow_new_page, relo_slice **out);

#endif /* RELO_DEDICATED_POOL_H */
