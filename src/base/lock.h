/*
 * base/lock.h — relo's own mutex and condition wait, used for the device lock
 * and the wait for an open pass to close (core/device.h: lock, pass_done).
 *
 * Every public call takes the device lock, almost always uncontended; with
 * glibc's pthread_mutex_lock + unlock that pair cost about 33 instructions,
 * two pairs per reserve + release, a tenth of an event. Here an uncontended
 * acquire is one compare-exchange, inlined, and a release a plain store.
 *
 * On Linux (RELO_LOCK_FUTEX 1) the lock is a futex word: 0 free, 1 held.
 * A thread that finds it held spins a little, then counts itself among
 * the lock's sleepers and sleeps in the kernel (FUTEX_WAIT_PRIVATE) while
 * the word reads 1; a release stores 0 and, when it sees a sleeper
 * counted, wakes one. A locked instruction costs about 6 ns on the
 * machines relo was measured on (a compare-exchange and an exchange were
 * 12.6 ns a pair, the same compare-exchange and a store 6.7), and the
 * store is what saves the second one.
 *
 * A store and then a load of another word may be reordered by the core
 * (its store buffer): on its own, a release could read "no sleeper" while
 * its 0 is not yet visible, and the thread that counted itself in between
 * would sleep on a 1 nobody clears again. The sleeper pays for both
 * sides: between counting itself and sleeping it calls membarrier
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running thread of
 * the process execute a full barrier. A release on another core then
 * either reads the count after that barrier (and wakes the sleeper) or
 * made its 0 visible before it (and the kernel, checking the word, does
 * not let the sleeper sleep). That asymmetric pair is the technique
 * userspace RCU and some JVM locks use: the frequent side pays nothing,
 * the rare side a system call, which a sleeper pays anyway.
 *
 * Where the kernel does not offer it (before Linux 4.14, or a sandbox that
 * refuses the call; found once per process) the lock is the classic
 * three-state futex mutex instead: 2 means held and a sleeper may wait, a
 * release exchanges 0 in and wakes one sleeper when it found 2. Should the
 * barrier fail later (the process is registered again first, in case a
 * kernel dropped the registration, say in a child after fork: the kernels
 * measured keep it), the sleeper sleeps a millisecond at a time instead
 * of until woken, so a missed wake delays it and never hangs it.
 *
 * The barrier's price: each time a thread goes to sleep on a lock, every
 * CPU then running a thread of the process takes an interrupt. Where many
 * threads contend for one device, define RELO_LOCK_BY_STORE to 0 on the
 * compiler's command line to build the exchange-released mutex only.
 *
 * The condition wait is a sequence counter: a waiter notes it, releases
 * the lock and sleeps while the counter still reads what it noted; a
 * broadcast bumps it and wakes every sleeper. Elsewhere (RELO_LOCK_FUTEX
 * 0) both are thin wrappers of pthread_mutex_t and pthread_cond_t. Define
 * RELO_LOCK_FUTEX to 0 on the compiler's command line to build the
 * fallback on Linux too.
 *
 * Everything is built from C11 atomics with acquire and release order, so
 * ThreadSanitizer sees the happens-before edges the lock makes. The lock is
 * not recursive, has no owner check, and is not fair: a releasing thread
 * may take it again before a woken sleeper runs.
 */
#ifndef RELO_LOCK_H
#define RELO_LOCK_H

#include <stdbool.h>

#ifndef RELO_LOCK_BY_STORE
#define RELO_LOCK_BY_STORE 1
#endif

#ifndef RELO_LOCK_FUTEX
#if defined(__linux__)
#define RELO_LOCK_FUTEX 1
#else
#define RELO_LOCK_FUTEX 0
#endif
#endif

#if RELO_LOCK_FUTEX

#include <stdatomic.h>

typedef struct relo_lock {
    atomic_uint state;    /* 0 free, 1 held; by exchange, also 2: held and a
                             sleeper may wait (atomic) */
    atomic_uint sleepers; /* by store: threads counted to sleep on state (atomic) */
    bool by_store;        /* released by a plain store; set at init, never changed */
} relo_lock;

typedef struct relo_cond {
    atomic_uint seq;  /* bumped by every broadcast; waiters sleep on it (atomic) */
    unsigned waiters; /* threads between noting seq and retaking the lock;
                          protected by the lock the waits pass */
} relo_cond;

/* The paths that may sleep or wake, out of line (base/lock.c). */
void relo__lock_acquire_slow(relo_lock *lock);
void relo__lock_wake(relo_lock *lock);

#else

#include <pthread.h>

typedef struct relo_lock {
    pthread_mutex_t mutex;
} relo_lock;

typedef struct relo_cond {
    pthread_cond_t cond;
} relo_cond;

#endif

/**
 * Makes lock free. Returns true, or false where the system refuses one
 * (only the pthread fallback can); lock is then left uninitialised. Not
 * thread-safe: nothing else may use lock meanwhile.
 */
bool relo__lock_init(relo_lock *lock);

/**
 * As relo__lock_init, but the lock is released by an exchange (the
 * three-state mutex) even where the system offers the barrier a release by
 * store needs. For tests, which run their cases both ways.
 */
bool relo__lock_init_exchange(relo_lock *lock);

/** Whether lock's release is a plain store (see the top of this file).
 *  Always false for the pthread fallback. */
bool relo__lock_releases_by_store(const relo_lock *lock);

/** Ends lock, which must be free and waited on by nobody. Never fails. */
void relo__lock_destroy(relo_lock *lock);

/**
 * Takes lock, waiting (spinning briefly, then asleep in the kernel) while
 * another thread holds it. Everything the previous holder wrote before its
 * relo__lock_release is visible afterwards (acquire order). The calling
 * thread must not hold lock already (not recursive: it would deadlock).
 */
static inline void relo__lock_acquire(relo_lock *lock)
{
#if RELO_LOCK_FUTEX
    unsigned free_state = 0;
    if (!atomic_compare_exchange_strong_explicit(&lock->state, &free_state, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        relo__lock_acquire_slow(lock);
#else
    pthread_mutex_lock(&lock->mutex);
#endif
}

/**
 * Gives lock up (release order) and wakes one sleeping thread, if any may
 * sleep. Uncontended, no locked instruction where the lock releases by
 * store. The calling thread must hold lock; any thread that holds it may
 * release it (no owner is recorded).
 */
static inline void relo__lock_release(relo_lock *lock)
{
#if RELO_LOCK_FUTEX
    if (lock->by_store) {
        atomic_store_explicit(&lock->state, 0, memory_order_release);
        /* Keeps the compiler from reading the count before the store; the
         * core's own reordering is what the sleeper's barrier answers. */
        atomic_signal_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&lock->sleepers, memory_order_relaxed) != 0) relo__lock_wake(lock);
    } else if (atomic_exchange_explicit(&lock->state, 0, memory_order_release) == 2) {
        relo__lock_wake(lock);
    }
#else
    pthread_mutex_unlock(&lock->mutex);
#endif
}

/**
 * Makes cond ready, nobody waiting. Returns true, or false where the
 * system refuses one (only the pthread fallback can). Not thread-safe.
 */
bool relo__cond_init(relo_cond *cond);

/** Ends cond, which nobody may wait on. Never fails. */
void relo__cond_destroy(relo_cond *cond);

/**
 * Releases lock, which the calling thread holds, sleeps until a
 * relo__cond_broadcast on cond made after this call began (or spuriously),
 * and takes lock again before returning. Callers wait in a loop on their
 * condition: a return says only that it may have changed. Every waiter and
 * broadcaster of one cond must use the same lock.
 */
void relo__cond_wait(relo_cond *cond, relo_lock *lock);

/**
 * Wakes every thread waiting on cond. The calling thread must hold the
 * lock the waits use, so a waiter that has checked its condition cannot
 * miss the broadcast. Cheap when nobody waits (no system call).
 */
void relo__cond_broadcast(relo_cond *cond);

#endif /* RELO_LOCK_H */
