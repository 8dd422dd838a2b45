/*
 * base/util.h — small arithmetic helpers shared by every module: overflow-safe
 * rounding, min/max, and the graded debug level (RELO_DEBUG 0–3, a CMake
 * cache variable) exposed as a constant so debug code stays type-checked in every
 * build.
 */
#ifndef RELO_UTIL_H
#define RELO_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#ifndef RELO_DEBUG_LEVEL
#define RELO_DEBUG_LEVEL 1
#endif

/** 0 none, 1 API misuse, 2 internal asserts, 3 expensive invariants. */
static const int relo__debug = RELO_DEBUG_LEVEL;

#define RELO_KiB ((uint64_t)1 << 10)
#define RELO_MiB ((uint64_t)1 << 20)
#define RELO_GiB ((uint64_t)1 << 30)

/* Marks a function of a rare path (growing a table, a trim that gives
 * pages back) so the compiler keeps it out of the reservation and release
 * paths that call it: inlined, it would crowd them out of the inlining
 * their own steps get, for work most calls never do. */
#if defined(__GNUC__) || defined(__clang__)
#define RELO_COLD __attribute__((noinline, cold))
#else
#define RELO_COLD
#endif

/* Marks a function of a less common path (a new page, a mode's pool) that
 * is not rare enough to be cold: kept out of line so that the common path
 * that calls it keeps a small frame and can itself be inlined. */
#if defined(__GNUC__) || defined(__clang__)
#define RELO_NOINLINE __attribute__((noinline))
#else
#define RELO_NOINLINE
#endif

/* Asks the core to start loading the cache line at p for a write soon, so
 * that a miss overlaps the work before the write instead of stalling it.
 * A hint only: p need not be valid, and nothing changes where it is not
 * supported. */
#if defined(__GNUC__) || defined(__clang__)
#define RELO_PREFETCH_WRITE(p) __builtin_prefetch((p), 1)
#else
#define RELO_PREFETCH_WRITE(p) ((void)(p))
#endif

static inline uint64_t relo__min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}
static inline uint64_t relo__max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/** Rounds v up to a multiple of align (≥ 1). Returns false on overflow. */
static inline bool relo__round_up(uint64_t v, uint64_t align, uint64_t *out)
{
    /* Every granule and alignment so far is a power of two: a mask, not
     * a 64-bit division, on the path of every new page. */
    uint64_t rem = (align & (align - 1)) == 0 ? v & (align - 1) : v % align;
    if (rem == 0) {
        *out = v;
        return true;
    }
    uint64_t add = align - rem;
    if (v > UINT64_MAX - add) return false;
    *out = v + add;
    return true;
}

/** floor(log2(v)), the index of the highest set bit, for v > 0. */
static inline uint32_t relo__log2(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return 63u - (uint32_t)__builtin_clzll(v);
#else
    uint32_t r = 0;
    while (v >>= 1) r++;
    return r;
#endif
}

/** Rounds v down to a multiple of align (≥ 1). */
static inline uint64_t relo__round_down(uint64_t v, uint64_t align)
{
    return v - ((align & (align - 1)) == 0 ? v & (align - 1) : v % align);
}

/** a - b, or 0 when b > a. */
static inline uint64_t relo__sub_sat(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/** a + b, or UINT64_MAX on overflow. */
static inline uint64_t relo__add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Internal assertion, compiled in at RELO_DEBUG ≥ 2. */
void relo__assert_fail(const char *expr, const char *file, int line);
#define RELO_ASSERT(e)                                                           \
    do {                                                                         \
        if (relo__debug >= 2 && !(e)) relo__assert_fail(#e, __FILE__, __LINE__); \
    } while (0)

#endif /* RELO_UTIL_H */
