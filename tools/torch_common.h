/*
 * torch_common.h — the rules both PyTorch allocator models share: request
 * rounding, the small/large pool split, and how a (stream, pool) pair is
 * numbered.
 */
#ifndef RELO_TOOLS_TORCH_COMMON_H
#define RELO_TOOLS_TORCH_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#define TORCH_MIB (UINT64_C(1) << 20)
/** Every request is rounded up to a multiple of this, and is at least this. */
#define TORCH_MIN_BLOCK UINT64_C(512)
/** Rounded requests up to this size come from the small pool. */
#define TORCH_SMALL_MAX TORCH_MIB

/** The request size rounded as PyTorch does. size must be ≤ BASELINE_MAX_REQUEST. */
static inline uint64_t torch_round_size(uint64_t size)
{
    return size < TORCH_MIN_BLOCK ? TORCH_MIN_BLOCK
                                  : (size + TORCH_MIN_BLOCK - 1) / TORCH_MIN_BLOCK * TORCH_MIN_BLOCK;
}

/** Whether a rounded size is served from the small pool. */
static inline bool torch_is_small(uint64_t rounded)
{
    return rounded <= TORCH_SMALL_MAX;
}

/** The number of stream `stream`'s small or large pool: pools never share blocks. */
static inline uint32_t torch_pool(uint16_t stream, bool small)
{
    return (uint32_t)stream * 2u + (small ? 1u : 0u);
}

/** Whether pool number p is a small pool. */
static inline bool torch_pool_is_small(uint32_t p)
{
    return (p & 1u) != 0;
}

#endif /* RELO_TOOLS_TORCH_COMMON_H */
