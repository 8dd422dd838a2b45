/*
 * base/lock.c — the paths of relo's lock (base/lock.h) that are not inlined: the
 * contended acquire, which spins and then sleeps on a futex, the wake of
 * a sleeper, and the condition wait; or, without futexes, the pthread
 * fallback's set-up and waits.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1 /* syscall() */
#endif

#include "base/lock.h"

#if RELO_LOCK_FUTEX

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(SYS_membarrier)
#include <linux/membarrier.h>
#endif

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
 * with going to sleep), until a wake, a signal or, unless timeout is NULL,
 * that long. Returns whatever happened; callers check their own condition
 * again. */
static void futex_wait(atomic_uint *word, unsigned expected, const struct timespec *timeout)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expected, timeout, NULL, 0);
}

/* Wakes up to count threads sleeping on word. */
static void futex_wake(atomic_uint *word, int count)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* Whether this process's locks release by store: the kernel offers
 * membarrier's private expedited command and registered the process for
 * it. Found once, before the first lock is made. */
static pthread_once_t barrier_once = PTHREAD_ONCE_INIT;
static bool barrier_ready;

static bool register_barrier(void)
{
#if defined(SYS_membarrier)
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}

static void find_barrier(void)
{
#if defined(SYS_membarrier) && RELO_LOCK_BY_STORE
    long offered = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    barrier_ready = offered > 0 && (offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED) && register_barrier();
#endif
}

/* Makes every running thread of the process execute a full memory
 * barrier before it returns (a thread not running passes one when it is
 * next scheduled). False where it could not, even after registering the
 * process again (a kernel that dropped the registration, say across a
 * fork). */
static bool barrier_on_every_thread(void)
{
#if defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return true;
    return register_barrier() && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}

bool relo__lock_init(relo_lock *lock)
{
    pthread_once(&barrier_once, find_barrier);
    atomic_init(&lock->state, 0);
    atomic_init(&lock->sleepers, 0);
    lock->by_store = barrier_ready;
    return true;
}

bool relo__lock_init_exchange(relo_lock *lock)
{
    relo__lock_init(lock);
    lock->by_store = false;
    return true;
}

bool relo__lock_releases_by_store(const relo_lock *lock)
{
    return lock->by_store;
}

void relo__lock_destroy(relo_lock *lock)
{
    (void)lock;
}

/* Reached after the inline compare-exchange found the lock held. First a
 * short spin while nobody sleeps on it: the lock usually comes free within
 * it. Then the thread sleeps until it takes the lock.
 *
 * Released by store, the thread counts itself among the sleepers, makes
 * every other thread pass a barrier (base/lock.h says why that cannot lose the
 * wake), and sleeps while the word reads 1, taking the lock by a
 * compare-exchange each time it wakes. Any release after the count reads
 * it and wakes a sleeper; a release that read it before wrote its 0 before
 * the barrier, and the kernel then finds 0 and does not let it sleep. If
 * the barrier failed, each sleep lasts a millisecond at most.
 *
 * Released by exchange, once a sleeper may exist (2), or the spin ran out,
 * the thread marks the lock 2 and sleeps until it takes it by that very
 * exchange (which found 0). Taking it as 2 even when nobody else sleeps
 * costs at most one needless wake at release; marking it 1 instead could
 * leave another sleeper unwoken. */
void relo__lock_acquire_slow(relo_lock *lock)
{
    for (int i = 0; i < SPIN_COUNT; i++) {
        unsigned s = atomic_load_explicit(&lock->state, memory_order_relaxed);
        if (s == 2 || (lock->by_store && atomic_load_explicit(&lock->sleepers, memory_order_relaxed) != 0))
            break;
        if (s == 0 && atomic_compare_exchange_weak_explicit(&lock->state, &s, 1, memory_order_acquire,
                                                            memory_order_relaxed))
            return;
        spin_pause();
    }
    if (!lock->by_store) {
        while (atomic_exchange_explicit(&lock->state, 2, memory_order_acquire) != 0)
            futex_wait(&lock->state, 2, NULL);
        return;
    }
    static const struct timespec millisecond = {0, 1000000};
    atomic_fetch_add_explicit(&lock->sleepers, 1, memory_order_seq_cst);
    const struct timespec *limit = barrier_on_every_thread() ? NULL : &millisecond;
    for (;;) {
        unsigned free_state = 0;
        if (atomic_compare_exchange_strong_explicit(&lock->state, &free_state, 1, memory_order_acquire,
                                                    memory_order_relaxed))
            break;
        futex_wait(&lock->state, 1, limit);
    }
    atomic_fetch_sub_explicit(&lock->sleepers, 1, memory_order_relaxed);
}

/* The release found a sleeper counted, or 2: one sleeper (if any) wakes
 * and competes for the lock. By exchange it marks the lock 2 again when it
 * takes it, so the next release wakes the next one; by store the others
 * stay counted until they take it. */
void relo__lock_wake(relo_lock *lock)
{
    futex_wake(&lock->state, 1);
}

bool relo__cond_init(relo_cond *cond)
{
    atomic_init(&cond->seq, 0);
    cond->waiters = 0;
    return true;
}

void relo__cond_destroy(relo_cond *cond)
{
    (void)cond;
}

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
    futex_wait(&cond->seq, seq, NULL);
    relo__lock_acquire(lock);
    cond->waiters--;
}

void relo__cond_broadcast(relo_cond *cond)
{
    atomic_fetch_add_explicit(&cond->seq, 1, memory_order_release);
    if (cond->waiters > 0) futex_wake(&cond->seq, INT_MAX);
}

#else /* RELO_LOCK_FUTEX */

bool relo__lock_init(relo_lock *lock)
{
    return pthread_mutex_init(&lock->mutex, NULL) == 0;
}

bool relo__lock_init_exchange(relo_lock *lock)
{
    return relo__lock_init(lock);
}

bool relo__lock_releases_by_store(const relo_lock *lock)
{
    (void)lock;
    return false;
}

void relo__lock_destroy(relo_lock *lock)
{
    pthread_mutex_destroy(&lock->mutex);
}

bool relo__cond_init(relo_cond *cond)
{
    return pthread_cond_init(&cond->cond, NULL) == 0;
}

void relo__cond_destroy(relo_cond *cond)
{
    pthread_cond_destroy(&cond->cond);
}

void relo__cond_wait(relo_cond *cond, relo_lock *lock)
{
    pthread_cond_wait(&cond->cond, &lock->mutex);
}

void relo__cond_broadcast(relo_cond *cond)
{
    pthread_cond_broadcast(&cond->cond);
}

#endif /* RELO_LOCK_FUTEX */
