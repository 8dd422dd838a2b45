/*
 * base/hostmem.c — the one path for relo's own host allocations, with a
 * process-wide fault injector for tests (see base/hostmem.h).
 */
#include "base/hostmem.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_uint_fast64_t calls;   /* allocations attempted */
static atomic_uint_fast64_t fail_at; /* call number that fails; 0 = off */
static atomic_int fail_sticky;       /* fail every call from fail_at on */

static int injected_failure(void)
{
    /* A plain increment, not a locked one: the count serves single-threaded
     * tests, and every host allocation of every thread passes here. Two
     * threads at once may be counted once. */
    uint64_t n = (uint64_t)atomic_load_explicit(&calls, memory_order_relaxed) + 1;
    atomic_store_explicit(&calls, n, memory_order_relaxed);
    uint64_t at = (uint64_t)atomic_load_explicit(&fail_at, memory_order_relaxed);
    if (at == 0) return 0;
    return n == at || (atomic_load(&fail_sticky) && n > at);
}

void *relo__malloc(size_t size)
{
    if (injected_failure()) return NULL;
    return malloc(size ? size : 1);
}

void *relo__calloc(size_t size)
{
    if (injected_failure()) return NULL;
    return calloc(1, size ? size : 1);
}

void *relo__realloc(void *ptr, size_t size)
{
    if (injected_failure()) return NULL;
    return realloc(ptr, size ? size : 1);
}

void relo__free(void *ptr)
{
    free(ptr);
}

void relo__hostmem_fail_at(uint64_t n, int sticky)
{
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_at, n ? (uint64_t)atomic_load(&calls) + n : 0);
}

uint64_t relo__hostmem_calls(void)
{
    return (uint64_t)atomic_load(&calls);
}
