/*
 * test_lock.c — relo's own lock and condition wait (src/base/lock.h), the device
 * lock's parts, driven directly by threads: the lock keeps them out of each
 * other's critical sections, and a broadcast wakes every waiter without
 * losing one. Each case runs twice, on a lock released by store and on one
 * released by exchange (base/lock.h), and the same cases pass with the pthread
 * fallback (-DRELO_LOCK_FUTEX=0), where both are the same mutex.
 *
 * Labelled "stress" too, so the ThreadSanitizer build runs it: there the
 * shared counter is a plain variable the lock alone orders, so a broken
 * acquire or release order is reported as a race. A wait that never wakes
 * would hang; each waiting case sets an alarm, whose signal ends the
 * process, so it fails within a minute instead of at ctest's timeout.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1 /* syscall() */
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "base/lock.h"
#include "testing/testing.h"

#if RELO_LOCK_FUTEX
#include <sys/syscall.h>
#if defined(SYS_membarrier)
#include <linux/membarrier.h>
#endif
#endif

#define THREADS 4
#define ITERS 50000
#define HANDOFF_ROUNDS 5000
#define ALARM_SECONDS 60

/* Sleeps ms milliseconds (nanosleep: usleep is not in POSIX 2008). */
static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct shared {
    relo_lock lock;
    relo_cond cond;
    uint64_t counter;     /* lock */
    atomic_uint inside;   /* threads inside the critical section now */
    atomic_uint overlaps; /* times a thread found another inside */
    atomic_bool start;    /* the workers wait for it, so they overlap */
    unsigned ready, woke; /* lock */
    bool go;              /* lock */
    unsigned turn;        /* lock: whose round it is in the handoff */
} shared;

/* by_exchange: the lock is released by an exchange even where a store
 * would do, so both releases are tested on a machine that offers both. */
static void shared_init(shared *s, bool by_exchange)
{
    memset(s, 0, sizeof *s);
    require_true(by_exchange ? relo__testing_lock_init_exchange(&s->lock) : relo__lock_init(&s->lock));
    require_true(relo__cond_init(&s->cond));
    atomic_init(&s->inside, 0);
    atomic_init(&s->overlaps, 0);
    atomic_init(&s->start, false);
}

static void shared_destroy(shared *s)
{
    relo__cond_destroy(&s->cond);
    relo__lock_destroy(&s->lock);
}

/* Each round reads the counter, lingers (so a second thread inside would
 * read the same value and an increment would be lost) and writes it back
 * one higher, noting any other thread it finds inside. */
static void *count_worker(void *arg)
{
    shared *s = arg;
    while (!atomic_load(&s->start)) sched_yield();
    for (int i = 0; i < ITERS; i++) {
        relo__lock_acquire(&s->lock);
        if (atomic_fetch_add_explicit(&s->inside, 1, memory_order_relaxed) != 0)
            atomic_fetch_add_explicit(&s->overlaps, 1, memory_order_relaxed);
        uint64_t v = s->counter;
        for (volatile int spin = 0; spin < 20; spin++) {
        }
        s->counter = v + 1;
        atomic_fetch_sub_explicit(&s->inside, 1, memory_order_relaxed);
        relo__lock_release(&s->lock);
    }
    return NULL;
}

/* Mutual exclusion: THREADS threads (more than the machine's cores, so
 * some sleep in the kernel) each add ITERS under the lock; none is lost
 * and no two threads were ever inside together. */
static void excludes_other_threads(bool by_exchange)
{
    static shared s;
    shared_init(&s, by_exchange);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) require_eq(pthread_create(&t[i], NULL, count_worker, &s), 0);
    atomic_store(&s.start, true);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    unsigned overlaps = atomic_load(&s.overlaps);
    expect_eq(s.counter, (uint64_t)THREADS * ITERS);
    expect_eq(overlaps, 0);
    shared_destroy(&s);
}

CHECK_TEST(lock_excludes_other_threads)
{
    excludes_other_threads(false);
}

CHECK_TEST(lock_by_exchange_excludes_other_threads)
{
    excludes_other_threads(true);
}

static void *wait_worker(void *arg)
{
    shared *s = arg;
    relo__lock_acquire(&s->lock);
    s->ready++;
    while (!s->go) relo__cond_wait(&s->cond, &s->lock);
    s->woke++;
    relo__lock_release(&s->lock);
    return NULL;
}

/* A broadcast made under the lock wakes every waiter, each of which
 * returns holding the lock (its count is exact). The waiters are given
 * time to fall asleep first, so the wake, not the sequence check, is what
 * the case tests. */
static void wakes_every_waiter(bool by_exchange)
{
    static shared s;
    shared_init(&s, by_exchange);
    alarm(ALARM_SECONDS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) require_eq(pthread_create(&t[i], NULL, wait_worker, &s), 0);
    for (;;) {
        relo__lock_acquire(&s.lock);
        unsigned ready = s.ready;
        relo__lock_release(&s.lock);
        if (ready == THREADS) break;
        sleep_ms(1);
    }
    sleep_ms(20);
    relo__lock_acquire(&s.lock);
    expect_eq(s.woke, 0);
    s.go = true;
    relo__cond_broadcast(&s.cond);
    relo__lock_release(&s.lock);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    alarm(0);
    expect_eq(s.woke, THREADS);
    shared_destroy(&s);
}

CHECK_TEST(broadcast_wakes_every_waiter)
{
    wakes_every_waiter(false);
}

CHECK_TEST(broadcast_wakes_every_waiter_by_exchange)
{
    wakes_every_waiter(true);
}

typedef struct player {
    shared *s;
    unsigned me;
} player;

/* Waits for its turn, passes it to the other player, HANDOFF_ROUNDS times. */
static void *handoff_worker(void *arg)
{
    player *p = arg;
    shared *s = p->s;
    for (int i = 0; i < HANDOFF_ROUNDS; i++) {
        relo__lock_acquire(&s->lock);
        while (s->turn != p->me) relo__cond_wait(&s->cond, &s->lock);
        s->turn = 1 - p->me;
        s->counter++;
        relo__cond_broadcast(&s->cond);
        relo__lock_release(&s->lock);
    }
    return NULL;
}

/* Two threads hand a turn back and forth, each waiting for the other's
 * broadcast: every round races a wait against a broadcast, and one lost
 * wake-up would stop both (the alarm then fails the case). */
static void handoff(bool by_exchange)
{
    static shared s;
    shared_init(&s, by_exchange);
    alarm(ALARM_SECONDS);
    player p[2] = {{&s, 0}, {&s, 1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) require_eq(pthread_create(&t[i], NULL, handoff_worker, &p[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    alarm(0);
    expect_eq(s.counter, 2u * HANDOFF_ROUNDS);
    shared_destroy(&s);
}

CHECK_TEST(handoff_loses_no_wakeup)
{
    handoff(false);
}

CHECK_TEST(handoff_by_exchange_loses_no_wakeup)
{
    handoff(true);
}

/* A child after fork makes its own locks and threads: threads contending
 * there sleep and wake as in the parent (base/lock.c registers the child for
 * the barrier again should the kernel have dropped the parent's). The
 * child reports by its exit status; a lost wake-up would hang it until
 * the alarm ends it. */
CHECK_TEST(lock_works_in_a_child_after_fork)
{
    static shared warm;
    shared_init(&warm, false); /* the parent has made a lock before forking */
    shared_destroy(&warm);
    pid_t child = fork();
    require_true(child >= 0);
    if (child == 0) {
        alarm(ALARM_SECONDS);
        static shared s;
        if (!relo__lock_init(&s.lock)) _exit(3);
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
            if (pthread_create(&t[i], NULL, count_worker, &s) != 0) _exit(4);
        atomic_store(&s.start, true);
        for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
        _exit(s.counter == (uint64_t)THREADS * ITERS && atomic_load(&s.overlaps) == 0 ? 0 : 5);
    }
    int status = 0;
    require_eq(waitpid(child, &status, 0), child);
    expect_true(WIFEXITED(status));
    expect_eq(WEXITSTATUS(status), 0);
}

/* Where the kernel offers membarrier's private expedited barrier, relo's
 * locks release by store (a locked instruction fewer a call); where it
 * does not, on the pthread fallback, or built with RELO_LOCK_BY_STORE 0,
 * the case is skipped. */
CHECK_TEST(lock_releases_by_store_where_the_kernel_offers_the_barrier)
{
#if RELO_LOCK_FUTEX && RELO_LOCK_BY_STORE && defined(SYS_membarrier)
    long offered = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (offered <= 0 || !(offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        check_skip("the kernel offers no private expedited membarrier");
    relo_lock lock, exchanged;
    require_true(relo__lock_init(&lock));
    require_true(relo__testing_lock_init_exchange(&exchanged));
    expect_true(relo__testing_lock_releases_by_store(&lock));
    expect_true(!relo__testing_lock_releases_by_store(&exchanged));
    relo__lock_acquire(&lock);
    relo__lock_release(&lock);
    relo__lock_destroy(&exchanged);
    relo__lock_destroy(&lock);
#else
    check_skip("built without the futex lock, without release by store, or without membarrier");
#endif
}

CHECK_MAIN()
