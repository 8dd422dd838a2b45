/*
 * lock.h — relo's own mutex and condition wait, used for the device lock
 * and the wait for an open pass to close (device.h: lock, pass_done).
 *
 * Every public call takes the device lock, almost always uncontended; with
 * glibc's pthread_mutex_lock + unlock that pair cost about 33 instructions,
 * two pairs per reserve + release, a tenth of an event. Here an uncontended
 * acquire is one compare-exchange and a release one exchange, inlined.
 *
 * On Linux (RELO_LOCK_FUTEX 1) the lock is the classic three-state futex
 * mutex: 0 free, 1 held, 2 held and a thread may sleep on it. A thread that
 * finds it held spins a little, then marks it 2 and sleeps in the kernel
 * (FUTEX_WAIT_PRIVATE); a release that finds 2 wakes one sleeper. The
 * condition wait is a sequence counter: a waiter notes it, releases the
 * lock and sleeps while the counter still reads what it noted; a broadcast
 * bumps it and wakes every sleeper. Elsewhere (RELO_LOCK_FUTEX 0) both are
 * thin wrappers of pthread_mutex_t and pthread_cond_t. Define
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
    atomic_uint state; /* 0 free, 1 held, 2 held and a sleeper may wait (atomic) */
} relo_lock;

typedef struct relo_cond {
    atomic_uint seq;   /* bumped by every broadcast; waiters sleep on it (atomic) */
    unsigned waiters;  /* threads between noting seq and retaking the lock;
                          protected by the lock the waits pass */
} relo_cond;

/* The paths that may sleep or wake, out of line (lock.c). */
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
 * sleep. The calling thread must hold lock; any thread that holds it may
 * release it (no owner is recorded).
 */
static inline void relo__lock_release(relo_lock *lock)
{
#if RELO_LOCK_FUTEX
    if (atomic_exchange_explicit(&lock->state, 0, memory_order_release) == 2) relo__lock_wake(lock);
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
