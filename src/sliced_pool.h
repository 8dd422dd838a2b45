/*
 * sliced_pool.h — pages of one fixed size carved into slices (design §3.1),
 * with address-ordered first fit through the pool's free tree.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_SLICED_POOL_H
#define RELO_SLICED_POOL_H

#include <stdbool.h>

#include "pool.h"

/**
 * Carves size bytes (padded to the alignment) for slot, with state LIVE or
 * TARGET, from the lowest page and lowest address that fits; takes a new
 * page only when allow_new_page.
 * Returns RELO_OK; RELO_ERR_BUFFER_TOO_BIG (padded size > page size);
 * RELO_ERR_PAGE_UPDATE_FORBIDDEN (no room held and no new page allowed);
 * the backend's refusal; RELO_ERR_HOST_MEMORY. On failure nothing changed.
 */
relo_status relo__sliced_reserve(relo_pool *pool, uint64_t size, uint32_t slot,
                                 relo_slice_state state, bool allow_new_page, relo_slice **out);

/** Whether a reservation may add a page, and of which size. */
typedef enum relo_new_page {
    RELO_NEW_PAGE_NONE = 0,   /* only room already held */
    RELO_NEW_PAGE_POOL_RULE,  /* a page as the pool makes them */
    RELO_NEW_PAGE_EXACT,      /* variable pages: the request rounded to the granule */
    RELO_NEW_PAGE_COUNT
} relo_new_page;

/** relo__sliced_reserve with the new-page rule spelled out. */
relo_status relo__sliced_reserve_in(relo_pool *pool, uint64_t size, uint32_t slot, relo_slice_state state,
                                    relo_new_page new_page, relo_slice **out);

/** The size of the page a reservation of length (padded) bytes would add:
 *  the pool's page size, or for variable pages the request's own rule. */
uint64_t relo__sliced_new_page_size(const relo_pool *pool, uint64_t length);

#endif /* RELO_SLICED_POOL_H */
