/*
 * lock.c — the paths of relo's lock (lock.h) that are not inlined: the
 * contended acquire, which spins and then sleeps on a futex, the wake of
 * a sleeper, and the condition wait; or, without futexes, the pthread
 * fallback's set-up and waits.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1 /* syscall() */
#endif

#include "lock.h"

#if RELO_LOCK_FUTEX

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Checks of the state before sleeping: long enough to cover a short
 * critical section on another core (most of relo's are well under a
 * microsecond), short against the cost of a futex round trip. */
enum { SPIN_COUNT = 100 };

/* Tells the core this is a spin-wait loop (less power, and the sibling
 * hyperthread gets the pipeline). A no-op where no such hint is known. */
static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/* Sleeps while *word still reads expected (the kernel checks, atomically
 * with going to sleep), or until a wake or a signal. Returns whatever
 * happened; callers check their own condition again. */
static void futex_wait(atomic_uint *word, unsigned expected)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

/* Wakes up to count threads sleeping on word. */
static void futex_wake(atomic_uint *word, int count)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

bool relo__lock_init(relo_lock *lock)
{
    atomic_init(&lock->state, 0);
    return true;
}

void relo__lock_destroy(relo_lock *lock) { (void)lock; }

/* Reached after the inline compare-exchange found the lock held. First a
 * short spin while the holder is alone (state 1): the lock usually comes
 * free within it. Once a sleeper may exist (2), or the spin ran out, the
 * thread marks the lock 2 and sleeps until it takes it by that very
 * exchange (which found 0). Taking it as 2 even when nobody else sleeps
 * costs at most one needless wake at release; marking it 1 instead could
 * leave another sleeper unwoken. */
void relo__lock_acquire_slow(relo_lock *lock)
{
    for (int i = 0; i < SPIN_COUNT; i++) {
        unsigned s = atomic_load_explicit(&lock->state, memory_order_relaxed);
        if (s == 2) break;
        if (s == 0 && atomic_compare_exchange_weak_explicit(&lock->state, &s, 1, memory_order_acquire,
                                                            memory_order_relaxed))
            return;
        spin_pause();
    }
    while (atomic_exchange_explicit(&lock->state, 2, memory_order_acquire) != 0) futex_wait(&lock->state, 2);
}

/* The release found 2: one sleeper (if any) wakes and competes for the
 * lock; it marks it 2 again when it takes it, so the next release wakes
 * the next one. */
void relo__lock_wake(relo_lock *lock) { futex_wake(&lock->state, 1); }

bool relo__cond_init(relo_cond *cond)
{
    atomic_init(&cond->seq, 0);
    cond->waiters = 0;
    return true;
}

void relo__cond_destroy(relo_cond *cond) { (void)cond; }

/* The sequence is noted under the lock, and a broadcast bumps it under the
 * same lock, so a broadcast after this wait began either comes before the
 * futex wait (which then finds the sequence changed and returns at once)
 * or wakes it. The count of waiters lets a broadcast skip the system call
 * when nobody waits, the usual case for relo's pass_done. */
void relo__cond_wait(relo_cond *cond, relo_lock *lock)
{
    unsigned seq = atomic_load_explicit(&cond->seq, memory_order_relaxed);
    cond->waiters++;
    relo__lock_release(lock);
    futex_wait(&cond->seq, seq);
    relo__lock_acquire(lock);
    cond->waiters--;
}

void relo__cond_broadcast(relo_cond *cond)
{
    atomic_fetch_add_explicit(&cond->seq, 1, memory_order_release);
    if (cond->waiters > 0) futex_wake(&cond->seq, INT_MAX);
}

#else /* RELO_LOCK_FUTEX */

bool relo__lock_init(relo_lock *lock) { return pthread_mutex_init(&lock->mutex, NULL) == 0; }

void relo__lock_destroy(relo_lock *lock) { pthread_mutex_destroy(&lock->mutex); }

bool relo__cond_init(relo_cond *cond) { return pthread_cond_init(&cond->cond, NULL) == 0; }

void relo__cond_destroy(relo_cond *cond) { pthread_cond_destroy(&cond->cond); }

void relo__cond_wait(relo_cond *cond, relo_lock *lock) { pthread_cond_wait(&cond->cond, &lock->mutex); }

void relo__cond_broadcast(relo_cond *cond) { pthread_cond_broadcast(&cond->cond); }

#endif /* RELO_LOCK_FUTEX */
