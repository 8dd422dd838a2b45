/*
 * sparse_backend.h — the device fuzz_ops drives: a backend (made through
 * relo_backend_create) whose buffers hold bytes only where something was
 * written or copied, in chunks made on first touch. A fresh buffer reads as
 * 0xA5 everywhere, as the host backend's does, but costs a small table
 * instead of its size in touched host memory, so a device of a hundred MiB
 * in pages of 32 MiB is set up and torn down in microseconds and a run's
 * time goes to relo rather than to the kernel clearing pages.
 *
 * It also checks the contract relo_backend.h states, which the host backend
 * takes on trust: every buffer passed in is live (not freed) and the range
 * lies inside it, a copy's source and target do not overlap, no read or
 * write touches the target of a copy still in flight, and no buffer goes
 * while a copy in flight reads or writes it. A breach prints what happened
 * and aborts. Copies are held until wait_copies and land in the order
 * enqueued, as a device's asynchronous copies do.
 *
 * Fault injection follows the host backend's (relo_host_desc): refusing
 * allocs above a size or after a count, refusing copies (all, or after a
 * count), failing either wait. A hook runs first thing in wait_device, on
 * the thread that relocates, and a gate per operation can stop one thread's
 * next call of it until the harness opens it: how fuzz_ops holds a second
 * thread inside a read, a write or relo_pass_copy at a point the input
 * chose.
 *
 * Thread-safe: one mutex guards the buffers' bytes and the counts (a gate
 * waits outside it).
 */
#ifndef RELO_FUZZ_SPARSE_BACKEND_H
#define RELO_FUZZ_SPARSE_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relo.h"
#include "relo_backend.h"

typedef struct sparse_backend sparse_backend;

/** Faults in force; zero = none. As relo_host_desc: refuse_alloc_after and
 *  refuse_copy_after let that many more calls through, then refuse. */
typedef struct sparse_faults {
    uint64_t refuse_alloc_above;
    uint64_t refuse_alloc_after;
    uint64_t refuse_copy_after;
    bool refuse_copies;
    bool fail_wait_copies;
    bool fail_wait_device;
} sparse_faults;

/** Operations that have a gate. */
typedef enum sparse_op {
    SPARSE_READ = 0,
    SPARSE_WRITE,
    SPARSE_WAIT_DEVICE,
    SPARSE_COPY,
    SPARSE_WAIT_COPIES,
    SPARSE_OP_COUNT
} sparse_op;

/**
 * Makes a backend with props (alignment, max page size, capacity; granule
 * 1). *ctx receives the backend's state for the calls below; it lives until
 * the backend is destroyed (by relo_device_destroy, or relo_backend_destroy
 * where no device took it). Returns as relo_backend_create, or
 * RELO_ERR_HOST_MEMORY.
 */
relo_status sparse_backend_create(const relo_backend_props *props, sparse_backend **ctx, relo_backend **out);

/** Replaces the faults in force; the after-counts start again now. */
void sparse_set_faults(sparse_backend *sb, const sparse_faults *faults);

/** Bytes of the buffers allocated now. */
uint64_t sparse_bytes_held(sparse_backend *sb);

/** Sets the hook called first thing in every wait_device (NULL: none). */
void sparse_set_wait_hook(sparse_backend *sb, void (*hook)(void *user), void *user);

/** Sets the function told when a thread stops at a gate (NULL: none); it
 *  runs on that thread, without the backend's mutex. */
void sparse_set_park_hook(sparse_backend *sb, void (*hook)(void *user), void *user);

/** Arms op's gate for thread: its next call of op stops there until
 *  sparse_gate_open. Other threads pass. */
void sparse_gate_arm(sparse_backend *sb, sparse_op op, pthread_t thread);

/** Whether a thread stands at op's gate now. */
bool sparse_gate_parked(sparse_backend *sb, sparse_op op);

/** Whether any gate holds a thread now. */
bool sparse_any_parked(sparse_backend *sb);

/** Opens and disarms every gate: a thread stopped at one goes on. */
void sparse_gates_open(sparse_backend *sb);

/** A byte range of a buffer. */
typedef struct sparse_range {
    void *buffer;
    uint64_t offset, n;
} sparse_range;

/**
 * The targets of the copies whose wait failed since the last call (up to
 * max into out; *more set when some did not fit), then forgets them. Such
 * copies land all the same here, as on a device that reported late, so the
 * bytes there are not what relo promises for anything it kept in place: a
 * slide's allocation, whose target overlaps its source, stays at its
 * source after an unknown outcome with its bytes not promised.
 */
size_t sparse_take_unknown(sparse_backend *sb, sparse_range *out, size_t max, bool *more);

/** Reads n bytes of buffer at offset as the device holds them now (no
 *  gate, no count; the buffer must be live). */
void sparse_peek(sparse_backend *sb, void *buffer, uint64_t offset, void *dst, uint64_t n);

/** The runtime's own copy of a move: n bytes from one binding's place to
 *  another's, done at once (as a runtime's copy it waited for). */
void sparse_runtime_copy(sparse_backend *sb, const relo_binding *from, const relo_binding *to, uint64_t n);

#endif /* RELO_FUZZ_SPARSE_BACKEND_H */
