/*
 * test_backend_threads.c — the host and sim backends called from several
 * threads at once, as a release thread and the device's callers may: no
 * more buffers are admitted than the capacity holds, every sim address is
 * distinct, and the counts add up. Under ThreadSanitizer (its "stress"
 * label puts it in that stage) it also shows that the backends' shared
 * state (capacity, counts, the sim's next address) is only touched under
 * their lock.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"

#define MiB (UINT64_C(1) << 20)
#define THREADS 4
#define TRIES 64
#define FITS 40 /* buffers of 2 MiB the capacity holds */

typedef struct worker {
    relo_backend *backend;
    pthread_barrier_t *start;
    void *buffers[TRIES];
    uint64_t addresses[TRIES];
    int got;
} worker;

static void *alloc_worker(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int i = 0; i < TRIES; i++) {
        void *buf = NULL;
        uint64_t addr = 0;
        if (w->backend->ops.alloc(w->backend->ctx, 2 * MiB, &buf, &addr) == RELO_OK) {
            w->buffers[w->got] = buf;
            w->addresses[w->got++] = addr;
        }
    }
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void admit_across_threads(relo_backend *b)
{
    pthread_barrier_t start;
    require_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int k = 0; k < THREADS; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].backend = b;
        w[k].start = &start;
        require_eq(pthread_create(&t[k], NULL, alloc_worker, &w[k]), 0);
    }
    for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
    pthread_barrier_destroy(&start);

    uint64_t all[THREADS * TRIES];
    int got = 0;
    for (int k = 0; k < THREADS; k++)
        for (int i = 0; i < w[k].got; i++) all[got++] = w[k].addresses[i];
    /* Exactly what the capacity holds: each refusal came when it was full. */
    expect_eq(got, FITS);
    qsort(all, (size_t)got, sizeof *all, by_value);
    for (int i = 1; i < got; i++) expect_lt(all[i - 1], all[i]);
    relo_host_counts c;
    require_ok(relo_backend_host_counts(b, &c));
    expect_eq(c.allocs, (uint64_t)FITS);
    expect_eq(c.bytes_held, FITS * 2 * MiB);
    for (int k = 0; k < THREADS; k++)
        for (int i = 0; i < w[k].got; i++) b->ops.free(b->ctx, w[k].buffers[i], 2 * MiB);
    require_ok(relo_backend_host_counts(b, &c));
    expect_eq(c.bytes_held, 0);
}

CHECK_TEST(sim_admits_no_more_than_its_capacity_across_threads)
{
    relo_host_desc d = {.capacity = FITS * 2 * MiB};
    relo_backend *b = NULL;
    require_ok(relo_backend_sim_create(&d, &b));
    admit_across_threads(b);
    relo_backend_destroy(b);
}

CHECK_TEST(host_admits_no_more_than_its_capacity_across_threads)
{
    relo_host_desc d = {.capacity = FITS * 2 * MiB, .no_free_fill = true};
    relo_backend *b = NULL;
    require_ok(relo_backend_host_create(&d, &b));
    admit_across_threads(b);
    relo_backend_destroy(b);
}

CHECK_MAIN()
