/*
 * base/hostmem.h — every host allocation relo makes for its own bookkeeping goes
 * through these wrappers, so a test can make the Nth one fail and check that
 * relo reports RELO_ERR_HOST_MEMORY cleanly, leaking nothing.
 */
#ifndef RELO_HOSTMEM_H
#define RELO_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

/** malloc; NULL when the injected failure fires or malloc fails. */
void *relo__malloc(size_t size);
/** calloc(1, size); as relo__malloc. */
void *relo__calloc(size_t size);
/** realloc; on failure the old block is untouched and NULL comes back. */
void *relo__realloc(void *ptr, size_t size);
/** free; NULL is a no-op. */
void relo__free(void *ptr);

/**
 * Test hook: the n-th host allocation from now fails (1 = the next one),
 * and so does every one after it while sticky is nonzero. 0 turns injection
 * off. Process-wide (atomic), for single-threaded tests.
 */
void relo__hostmem_fail_at(uint64_t n, int sticky);
/** Host allocations made since the process started (exact on one thread;
 *  allocations on several threads at once may be counted once). */
uint64_t relo__hostmem_calls(void);

#endif /* RELO_HOSTMEM_H */
