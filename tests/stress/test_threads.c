/*
 * test_threads.c — four threads on two streams of one device.
 *
 * Each thread reserves allocations of mixed sizes on its stream, writes its
 * own pattern into them, resolves them, reads them back, releases them and
 * now and then reclaims, for a bounded time (RELO_STRESS_SECONDS, default
 * 3). Relocation may move any allocation while another thread works, so
 * every read-back proves relocation and locking keep bytes where the handle
 * says. Under ThreadSanitizer (RELO_SANITIZE=thread) it must report no race.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "relo.h"
#include "relo_backend.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

enum { THREADS = 4, HELD = 24, WINDOW = 512 };

typedef struct worker {
    relo_device *device;
    relo_stream *stream;
    relo_stream *other;      /* the other stream: cross-stream resolves */
    int id;
    uint64_t rng;
    double seconds;
    atomic_int *failures;
    uint64_t ops, reclaims, bytes_checked;
} worker;

typedef struct held {
    relo_handle handle;
    uint64_t size;
    uint8_t seed;
} held;

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t pat(uint8_t seed, uint64_t off) { return (uint8_t)(seed + off * 7u + (off >> 8)); }

/* Mixed sizes: mostly small, some in the arena's range, a few growing it. */
static uint64_t pick(uint64_t *rng)
{
    uint64_t r = next_rand(rng);
    switch (r % 16) {
    case 0: return 0;
    case 1: case 2: case 3: case 4: case 5: return 1 + (r >> 8) % 4096;
    case 6: case 7: case 8: return 4096 + (r >> 8) % (64 * KIB);
    case 9: case 10: case 11: return 64 * KIB + (r >> 8) % MIB;
    case 12: case 13: return MIB + (r >> 8) % (3 * MIB);
    case 14: return 4 * MIB + (r >> 8) % (6 * MIB);
    default: return (r >> 8) % 256;
    }
}

#define FAIL(w, ...)                                                           \
    do {                                                                       \
        fprintf(stderr, "thread %d: ", (w)->id);                               \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        atomic_fetch_add((w)->failures, 1);                                    \
    } while (0)

/* Writes (or checks) the head and tail windows of an allocation. */
static bool pattern(worker *w, const held *h, bool write)
{
    uint8_t buf[WINDOW];
    uint64_t offs[2] = {0, h->size > WINDOW ? h->size - WINDOW : 0};
    int n = h->size > WINDOW ? 2 : 1;
    uint64_t len = h->size < WINDOW ? h->size : WINDOW;
    if (!len) return true;
    for (int i = 0; i < n; i++) {
        relo_status s;
        if (write) {
            for (uint64_t j = 0; j < len; j++) buf[j] = pat(h->seed, offs[i] + j);
            s = relo_write(w->device, h->handle, offs[i], buf, len);
        } else {
            s = relo_read(w->device, h->handle, offs[i], buf, len);
        }
        if (s != RELO_OK) {
            FAIL(w, "%s gave %s", write ? "relo_write" : "relo_read", relo_status_name(s));
            return false;
        }
        if (!write) {
            for (uint64_t j = 0; j < len; j++)
                if (buf[j] != pat(h->seed, offs[i] + j)) {
                    FAIL(w, "allocation of %llu B: byte %llu is %#x, expected %#x",
                         (unsigned long long)h->size, (unsigned long long)(offs[i] + j), buf[j],
                         pat(h->seed, offs[i] + j));
                    return false;
                }
            w->bytes_checked += len;
        }
    }
    return true;
}

static void *run(void *arg)
{
    worker *w = arg;
    held h[HELD];
    int n = 0;
    double end = now_s() + w->seconds;
    while (now_s() < end && atomic_load(w->failures) == 0) {
        for (int burst = 0; burst < 64; burst++) {
            uint64_t r = next_rand(&w->rng);
            w->ops++;
            if (n < HELD && (r % 3 != 0 || n == 0)) {
                held *x = &h[n];
                x->size = pick(&w->rng);
                x->seed = (uint8_t)(r >> 24);
                relo_status s = relo_reserve(w->stream, x->size, &x->handle);
                if (s == RELO_ERR_OUT_OF_MEMORY) continue;  /* the shared capacity ran out */
                if (s != RELO_OK) {
                    FAIL(w, "reserve(%llu) gave %s", (unsigned long long)x->size, relo_status_name(s));
                    goto out;
                }
                n++;
                if (!pattern(w, x, true)) goto out;
            } else {
                int i = (int)((r >> 8) % (uint64_t)n);
                relo_binding b;
                relo_stream *on = (r >> 40) & 1 ? w->other : w->stream;
                relo_status s = relo_resolve(on, h[i].handle, &b);
                if (s != RELO_OK || b.size != h[i].size) {
                    FAIL(w, "resolve gave %s, size %llu for %llu", relo_status_name(s),
                         (unsigned long long)b.size, (unsigned long long)h[i].size);
                    goto out;
                }
                if (!pattern(w, &h[i], false)) goto out;
                s = relo_release(w->device, h[i].handle);
                if (s != RELO_OK) {
                    FAIL(w, "release gave %s", relo_status_name(s));
                    goto out;
                }
                s = relo_resolve(w->stream, h[i].handle, &b);
                if (s != RELO_ERR_NOT_FOUND) {
                    FAIL(w, "released handle resolves: %s", relo_status_name(s));
                    goto out;
                }
                h[i] = h[--n];
            }
            if (r % 97 == 0) {
                relo_status s = relo_reclaim(w->stream);
                if (s != RELO_OK) {
                    FAIL(w, "reclaim gave %s", relo_status_name(s));
                    goto out;
                }
                w->reclaims++;
            }
        }
        /* Everything still held reads back after whatever moved meanwhile. */
        for (int i = 0; i < n; i++)
            if (!pattern(w, &h[i], false)) goto out;
    }
out:
    for (int i = 0; i < n; i++) {
        if (atomic_load(w->failures) == 0) pattern(w, &h[i], false);
        relo_release(w->device, h[i].handle);
    }
    return NULL;
}

static double stress_seconds(void)
{
    const char *env = getenv("RELO_STRESS_SECONDS");
    double s = env ? atof(env) : 3.0;
    return s > 0 ? s : 3.0;
}

static void run_threads(uint64_t capacity, relo_layout layout)
{
    relo_host_desc hd = {0};
    hd.alignment = 256;
    hd.max_page_size = 32 * MIB;
    hd.capacity = capacity;
    relo_backend *be = NULL;
    require_ok(relo_backend_host_create(&hd, &be));
    relo_device_desc dd = {0};
    dd.layout = layout;
    relo_device *dev = NULL;
    require_ok(relo_device_create(&dd, be, &dev));
    relo_stream *s[2];
    require_ok(relo_stream_create(dev, NULL, &s[0]));
    require_ok(relo_stream_create(dev, NULL, &s[1]));

    atomic_int failures = 0;
    worker w[THREADS];
    pthread_t t[THREADS];
    uint64_t seed = check_seed();
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].device = dev;
        w[i].stream = s[i % 2];
        w[i].other = s[(i + 1) % 2];
        w[i].id = i;
        w[i].rng = seed * 2654435761u + (uint64_t)i * 0x9E3779B97F4A7C15u + 1;
        w[i].seconds = stress_seconds();
        w[i].failures = &failures;
        require_eq(pthread_create(&t[i], NULL, run, &w[i]), 0);
    }
    uint64_t ops = 0, reclaims = 0, checked = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ops += w[i].ops;
        reclaims += w[i].reclaims;
        checked += w[i].bytes_checked;
    }
    expect_eq(atomic_load(&failures), 0);

    relo_stats st;
    expect_ok(relo_device_check(dev));
    expect_ok(relo_device_stats(dev, &st));
    expect_eq(st.allocations, 0);
    printf("%llu operations, %llu reclaims, %llu bytes checked, %llu allocations moved\n",
           (unsigned long long)ops, (unsigned long long)reclaims, (unsigned long long)checked,
           (unsigned long long)st.allocations_moved);
    expect_ok(relo_reclaim_device(dev));
    expect_ok(relo_device_stats(dev, &st));
    expect_eq(st.pages, 0);
    expect_ok(relo_stream_destroy(s[0]));
    expect_ok(relo_stream_destroy(s[1]));
    expect_ok(relo_device_destroy(dev));
}

/* Capacity unknown: relocation on explicit reclaims only. */
CHECK_TEST(threads_unbounded) { run_threads(0, RELO_LAYOUT_ADAPTIVE); }
/* Capacity 160 MiB: pressure relocations on reservations too. */
CHECK_TEST(threads_pressure) { run_threads(160 * MIB, RELO_LAYOUT_ADAPTIVE); }
/* The EXCLUSIVE layout. */
CHECK_TEST(threads_exclusive) { run_threads(0, RELO_LAYOUT_EXCLUSIVE); }

CHECK_MAIN()
