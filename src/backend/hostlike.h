/*
 * backend/hostlike.h — what the host and simulated backends share: the
 * context (fault injection in force, call counts, bytes held against the
 * capacity), the admission checks that decide whether an alloc or a copy is
 * refused, and the operations that do not touch bytes (flush, the two waits,
 * destroy). host.c and sim.c differ only in what a buffer is.
 *
 * The core calls alloc, flush, write and read with the device lock held,
 * and the two waits, copy and some frees (of pages a pass emptied) from the
 * thread running a pass, without it. The capacity accounting (bytes held,
 * the alloc and free counts) is shared between alloc and free, so it has a
 * lock of its own; the copy and wait counters are written by the pass
 * thread only, and the faults change only in relo_backend_host_set_faults.
 */
#ifndef RELO_BACKEND_HOSTLIKE_H
#define RELO_BACKEND_HOSTLIKE_H

#include <stdint.h>

#include "backend/backend.h"
#include "base/lock.h"

/* The context of a host or sim backend (see above for who writes what). */
typedef struct relo__hostlike {
    relo_lock lock;               /* bytes held, the alloc and free counts, allocs_since_faults,
                                      next_address; relo's own lock (base/lock.h), whose uncontended
                                      take and give are a compare-exchange and an exchange
                                      where glibc's mutex pair costs about 33 instructions: a
                                      page the packed placement takes and gives back pays two */
    relo_host_desc faults;        /* refuse_* and fail_* in force; the rest unused */
    uint64_t capacity;            /* bytes lent before refusing; 0 = unlimited */
    uint64_t max_page_size;       /* largest buffer accepted */
    uint64_t granule;             /* each buffer is charged its size rounded up to this; ≤ 1 = bytes */
    uint64_t address_alignment;   /* power of two ≥ alignment: what addresses honour */
    relo_host_counts counts;      /* calls served so far */
    uint64_t allocs_since_faults; /* successful allocs since creation or set_faults */
    uint64_t copies_since_faults; /* successful copies since creation or set_faults */
    uint64_t next_address;        /* sim only: the next virtual address to hand out (lock) */
    bool no_free_fill;            /* host only: freed buffers skip their fill */
} relo__hostlike;

/* What the hostlike backends' granule defaults to: sim charges as CUDA
 * does, host charges bytes (it is the debugging backend, with real memory). */
#define RELO_HOSTLIKE_SIM_GRANULE (UINT64_C(2) << 20)
#define RELO_HOSTLIKE_HOST_GRANULE UINT64_C(1)

/*
 * Allocates a context with relo__malloc, initialises it from desc and wraps
 * it with ops into a backend. On failure the context is freed and *out is
 * untouched. Returns RELO_OK, RELO_ERR_INVALID_ARGUMENT, RELO_ERR_HOST_MEMORY.
 */
relo_status relo__hostlike_create(const relo_backend_ops *ops, const relo_host_desc *desc,
                                  uint64_t default_granule, relo_backend **out);

/*
 * Decides whether an alloc of size bytes may be served and, if so, counts
 * it as served at once (one critical section, so that two threads cannot
 * both be admitted into the last of the capacity). Returns RELO_OK, or
 * RELO_ERR_OUT_OF_MEMORY for an injected refusal, the capacity (which the
 * buffer's charge must fit) or, with address, the address space, or
 * RELO_ERR_BACKEND for a size the contract forbids (0, above max page),
 * and then changes nothing. With address (sim), also hands out the
 * buffer's address from next_address. A backend that then fails to make
 * the buffer calls relo__hostlike_alloc_unclaim.
 */
relo_status relo__hostlike_alloc_claim(relo__hostlike *ctx, uint64_t size, uint64_t *address);

/* Undoes a successful relo__hostlike_alloc_claim of size bytes whose
 * buffer could not be made (its address, if any, is not reused). */
void relo__hostlike_alloc_unclaim(relo__hostlike *ctx, uint64_t size);

/* Records a free of size bytes. */
void relo__hostlike_free_done(relo__hostlike *ctx, uint64_t size);

/* Decides whether a copy may be enqueued: RELO_OK or RELO_ERR_BACKEND. */
relo_status relo__hostlike_copy_admit(const relo__hostlike *ctx);

/* Records an enqueued copy. */
void relo__hostlike_copy_done(relo__hostlike *ctx);

/* The operations host and sim share; ctx is a relo__hostlike. */
void relo__hostlike_flush(void *ctx);
relo_status relo__hostlike_wait_device(void *ctx);
relo_status relo__hostlike_wait_copies(void *ctx);
void relo__hostlike_destroy(void *ctx);

#endif /* RELO_BACKEND_HOSTLIKE_H */
