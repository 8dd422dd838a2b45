/*
 * bench_pass_latency.c — how long another thread's calls wait while a
 * relocation pass waits for a slow device.
 *
 * The backend (made here with relo_backend_create) keeps pages in host
 * memory and makes wait_device and wait_copies each sleep 100 ms, as a
 * device busy with long kernels would. Its shared state has a lock of its
 * own, since relo_backend.h lets alloc/free overlap the pass's waits and
 * copies, and reads and writes overlap everything.
 *
 * Each round, the relocating thread creates a stream, makes an outdated
 * page on it (1 MiB, then 9.5 MiB, which grows the arena) and times
 * relo_reclaim of that stream: plan, 100 ms device wait, copy, 100 ms copy
 * wait, commit. Meanwhile a second thread calls relo_resolve, relo_pin and
 * relo_unpin in a loop and times every single call. Two scenarios:
 *
 *   other stream  the second thread works on another stream's 64
 *                 allocations (the target: no call over 1 ms
 *                 during the pass; the old core made one wait 577 ms);
 *   same stream   the second thread resolves, through the relocating
 *                 stream, an allocation of that stream that does not move
 *                 (the 9.5 MiB one, on the current page). This goes beyond
 *                 relo.h's "a stream is used by one thread at a time"; it
 *                 is safe here because resolve touches the stream only
 *                 under the device lock, and shows that the pass holds no
 *                 lock of the stream's either.
 *
 * A third scenario is the first with a backend whose free also sleeps
 * 20 ms, as releasing a large buffer does on some drivers (PoCL unmaps
 * host memory): it shows whether giving the emptied page back happens
 * under the device lock, on the path other threads wait on.
 *
 * Each round has 5 ms of idle time before and after the pass, so calls
 * outside any pass are measured in the same run as a baseline: on a loaded
 * 2-core machine the scheduler alone can stretch a call past 1 ms. Printed
 * per scenario: the longest call of each round inside the pass and outside
 * (median and spread over rounds), the longest of all, the 99.9th
 * percentile and how many calls ran during the passes (a thread that were
 * blocked would make few). Each call is also classed by the thread's
 * voluntary context switches (getrusage, once per batch of 32 rounds of
 * calls and after any call over 0.1 ms): a slow call in whose batch the
 * thread switched voluntarily counts as blocked (on relo's lock, or
 * whatever relo waited for), one with no voluntary switch was preempted. Each round
 * checks the moved allocation's bytes.
 *
 * Usage: bench_pass_latency [rounds]   (default 9, after one warm-up round)
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "relo.h"
#include "relo_backend.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)
#define WAIT_NS (100 * 1000000L)
#define IDLE_NS (5 * 1000000L)
#define FREE_NS (20 * 1000000L)
#define MAX_ROUNDS 64
#define OTHER_HANDLES 64
#define BUCKETS 40 /* log2 buckets of call durations in ns */

/* ------------------------------------------------------------------------ */
/* A slow host-memory backend                                               */
/* ------------------------------------------------------------------------ */

typedef struct slow_ctx {
    long free_ns;        /* free sleeps this long (0: at once) */
    pthread_mutex_t mu;  /* protects the counters below */
    uint64_t bytes_held;
    uint64_t allocs, frees, waits, copies;
} slow_ctx;

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static relo_status slow_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    slow_ctx *c = ctx;
    void *p = malloc((size_t)size);
    if (!p) return RELO_ERR_OUT_OF_MEMORY;
    memset(p, 0xA5, (size_t)size);
    pthread_mutex_lock(&c->mu);
    c->allocs++;
    c->bytes_held += size;
    pthread_mutex_unlock(&c->mu);
    *buffer = p;
    *address = 0;
    return RELO_OK;
}

static void slow_free(void *ctx, void *buffer, uint64_t size)
{
    slow_ctx *c = ctx;
    memset(buffer, 0xDD, (size_t)size); /* a launch on a freed page shows */
    free(buffer);
    if (c->free_ns) sleep_ns(c->free_ns);
    pthread_mutex_lock(&c->mu);
    c->frees++;
    c->bytes_held -= size;
    pthread_mutex_unlock(&c->mu);
}

static relo_status slow_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    (void)ctx;
    memcpy((char *)buffer + offset, src, (size_t)n);
    return RELO_OK;
}

static relo_status slow_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    (void)ctx;
    memcpy(dst, (char *)buffer + offset, (size_t)n);
    return RELO_OK;
}

static relo_status slow_wait(void *ctx)
{
    slow_ctx *c = ctx;
    sleep_ns(WAIT_NS);
    pthread_mutex_lock(&c->mu);
    c->waits++;
    pthread_mutex_unlock(&c->mu);
    return RELO_OK;
}

/* Copies land at once; wait_copies still takes its 100 ms. */
static relo_status slow_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                             uint64_t n)
{
    slow_ctx *c = ctx;
    memmove((char *)dst + dst_offset, (char *)src + src_offset, (size_t)n);
    pthread_mutex_lock(&c->mu);
    c->copies++;
    pthread_mutex_unlock(&c->mu);
    return RELO_OK;
}

static relo_status slow_backend_create(slow_ctx *c, long free_ns, relo_backend **out)
{
    static const relo_backend_ops ops = {
        .alloc = slow_alloc,
        .free = slow_free,
        .write = slow_write,
        .read = slow_read,
        .wait_device = slow_wait,
        .copy = slow_copy,
        .wait_copies = slow_wait,
    };
    relo_backend_props props = {.alignment = 256, .max_page_size = 256 * MIB};
    memset(c, 0, sizeof *c);
    c->free_ns = free_ns;
    pthread_mutex_init(&c->mu, NULL);
    return relo_backend_create(&ops, c, &props, out);
}

/* ------------------------------------------------------------------------ */
/* The two threads                                                          */
/* ------------------------------------------------------------------------ */

static void must(relo_status s, const char *what)
{
    if (s != RELO_OK) {
        fprintf(stderr, "bench_pass_latency: %s: %s\n", what, relo_status_name(s));
        exit(1);
    }
}

/* Longest call and a histogram, inside passes and outside. A call that
 * took a voluntary context switch blocked (on relo's lock, or on anything
 * else it waits for); one with only involuntary switches was preempted by
 * the scheduler, which relo cannot help. */
typedef struct lat {
    uint64_t max_ns;
    uint64_t max_blocked_ns; /* longest call that blocked */
    uint64_t calls;
    uint64_t over_1ms;
    uint64_t over_1ms_blocked;
    uint64_t hist[BUCKETS];
} lat;

static void lat_add(lat *l, uint64_t ns, bool blocked)
{
    if (ns > l->max_ns) l->max_ns = ns;
    if (blocked && ns > l->max_blocked_ns) l->max_blocked_ns = ns;
    l->calls++;
    l->over_1ms += ns > 1000000u;
    l->over_1ms_blocked += blocked && ns > 1000000u;
    int b = 0;
    while (b < BUCKETS - 1 && (UINT64_C(1) << (b + 1)) <= ns) b++;
    l->hist[b]++;
}

/* Upper bound of the bucket holding quantile q. */
static uint64_t lat_quantile(const lat *l, double q)
{
    uint64_t want = (uint64_t)(q * (double)l->calls), seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
        seen += l->hist[b];
        if (seen > want) return UINT64_C(1) << (b + 1);
    }
    return l->max_ns;
}

typedef struct shared {
    relo_device *dev;
    pthread_barrier_t start, end;
    atomic_bool quit;       /* the resolver leaves at the next start */
    atomic_bool round_done; /* the resolver stops calling */
    atomic_bool in_pass;    /* the relocating thread is inside relo_reclaim */
    /* What the resolver calls this round (set before the start barrier). */
    relo_stream *stream;
    const relo_handle *handles;
    int handle_count;
    lat in, out;            /* this round; read after the end barrier */
    uint64_t errors;
} shared;

/* Voluntary context switches of the calling thread so far. */
static long voluntary_switches(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nvcsw;
}

#define SLOW_NS 100000u /* calls this long are classed (0.1 ms) */
#define BATCH 32

static void *resolver(void *arg)
{
    shared *sh = arg;
    for (;;) {
        pthread_barrier_wait(&sh->start);
        if (atomic_load(&sh->quit)) break;
        int i = 0;
        long v0 = voluntary_switches();
        for (uint32_t n = 1; !atomic_load(&sh->round_done); n++) {
            relo_handle h = sh->handles[i];
            i = i + 1 == sh->handle_count ? 0 : i + 1;
            relo_binding b;
            for (int k = 0; k < 3; k++) {
                bool during = atomic_load(&sh->in_pass);
                uint64_t t0 = bench_now_ns();
                relo_status st = k == 0   ? relo_resolve(sh->stream, h, &b)
                                 : k == 1 ? relo_pin(sh->stream, h, &b)
                                          : relo_unpin(sh->dev, h);
                uint64_t t1 = bench_now_ns();
                during |= atomic_load(&sh->in_pass);
                if (st != RELO_OK) sh->errors++;
                /* getrusage costs more than a resolve: it is read once per
                 * batch, and after a slow call. A slow call counts as
                 * blocked when the thread switched voluntarily anywhere in
                 * its batch so far, which errs towards blaming relo. */
                bool blocked = false;
                if (t1 - t0 > SLOW_NS) {
                    long v = voluntary_switches();
                    blocked = v != v0;
                    v0 = v;
                }
                lat_add(during ? &sh->in : &sh->out, t1 - t0, blocked);
            }
            if (n % BATCH == 0) v0 = voluntary_switches();
        }
        pthread_barrier_wait(&sh->end);
    }
    return NULL;
}

static void fill(unsigned char *p, uint64_t n, unsigned key)
{
    for (uint64_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 131u + key);
}

typedef struct scenario_result {
    double in_max_ms[MAX_ROUNDS], in_blocked_ms[MAX_ROUNDS], out_max_ms[MAX_ROUNDS], pass_ms[MAX_ROUNDS];
    int rounds;
    lat in_all, out_all;
    uint64_t moved, errors;
} scenario_result;

static void lat_merge(lat *into, const lat *l)
{
    if (l->max_ns > into->max_ns) into->max_ns = l->max_ns;
    if (l->max_blocked_ns > into->max_blocked_ns) into->max_blocked_ns = l->max_blocked_ns;
    into->calls += l->calls;
    into->over_1ms += l->over_1ms;
    into->over_1ms_blocked += l->over_1ms_blocked;
    for (int b = 0; b < BUCKETS; b++) into->hist[b] += l->hist[b];
}

/* One scenario: same_stream picks what the resolver calls. */
static void run_scenario(bool same_stream, long free_ns, int rounds, scenario_result *res)
{
    slow_ctx ctx;
    relo_backend *backend = NULL;
    relo_device *dev = NULL;
    must(slow_backend_create(&ctx, free_ns, &backend), "backend");
    /* The seed policy: the scenario is its outdated page after growth. */
    const relo_device_desc seed = {.policy = RELO_POLICY_SEED};
    must(relo_device_create(&seed, backend, &dev), "device");
    relo_stream *other = NULL;
    must(relo_stream_create(dev, NULL, &other), "stream");
    relo_handle others[OTHER_HANDLES];
    for (int i = 0; i < OTHER_HANDLES; i++) must(relo_reserve(other, 4 * KIB, &others[i]), "reserve");

    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.dev = dev;
    pthread_barrier_init(&sh.start, NULL, 2);
    pthread_barrier_init(&sh.end, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, resolver, &sh) != 0) exit(1);

    unsigned char *pattern = malloc(MIB), *back = malloc(MIB);
    if (!pattern || !back) exit(1);
    memset(res, 0, sizeof *res);
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        relo_stream *s = NULL;
        relo_handle a, big;
        must(relo_stream_create(dev, NULL, &s), "stream");
        must(relo_reserve(s, MIB, &a), "reserve");
        fill(pattern, MIB, (unsigned)r);
        must(relo_write(dev, a, 0, pattern, MIB), "write");
        must(relo_reserve(s, 19 * MIB / 2, &big), "reserve");
        relo_stats st;
        must(relo_stream_stats(s, &st), "stats");
        if (st.outdated_pages != 1) {
            fprintf(stderr, "bench_pass_latency: no outdated page to relocate\n");
            exit(1);
        }
        uint64_t moved_before = st.allocations_moved;

        sh.stream = same_stream ? s : other;
        sh.handles = same_stream ? &big : others;
        sh.handle_count = same_stream ? 1 : OTHER_HANDLES;
        memset(&sh.in, 0, sizeof sh.in);
        memset(&sh.out, 0, sizeof sh.out);
        atomic_store(&sh.round_done, false);
        pthread_barrier_wait(&sh.start);
        sleep_ns(IDLE_NS);
        atomic_store(&sh.in_pass, true);
        uint64_t t0 = bench_now_ns();
        must(relo_reclaim(s), "reclaim");
        uint64_t t1 = bench_now_ns();
        atomic_store(&sh.in_pass, false);
        sleep_ns(IDLE_NS);
        atomic_store(&sh.round_done, true);
        pthread_barrier_wait(&sh.end);

        must(relo_stream_stats(s, &st), "stats");
        must(relo_read(dev, a, 0, back, MIB), "read");
        if (st.allocations_moved != moved_before + 1 || memcmp(back, pattern, MIB) != 0) {
            fprintf(stderr, "bench_pass_latency: round %d: the allocation did not move intact\n", r);
            exit(1);
        }
        must(relo_release(dev, a), "release");
        must(relo_release(dev, big), "release");
        must(relo_stream_destroy(s), "stream destroy");
        if (r < 0) continue;
        res->in_max_ms[res->rounds] = (double)sh.in.max_ns * 1e-6;
        res->in_blocked_ms[res->rounds] = (double)sh.in.max_blocked_ns * 1e-6;
        res->out_max_ms[res->rounds] = (double)sh.out.max_ns * 1e-6;
        res->pass_ms[res->rounds] = (double)(t1 - t0) * 1e-6;
        res->rounds++;
        res->moved++;
        lat_merge(&res->in_all, &sh.in);
        lat_merge(&res->out_all, &sh.out);
    }
    atomic_store(&sh.quit, true);
    pthread_barrier_wait(&sh.start);
    pthread_join(t, NULL);
    res->errors = sh.errors;
    pthread_barrier_destroy(&sh.start);
    pthread_barrier_destroy(&sh.end);
    free(pattern);
    free(back);
    for (int i = 0; i < OTHER_HANDLES; i++) must(relo_release(dev, others[i]), "release");
    must(relo_stream_destroy(other), "stream destroy");
    must(relo_device_destroy(dev), "device destroy");
    pthread_mutex_destroy(&ctx.mu);
}

static void print_lat(const char *where, const lat *l)
{
    printf("  %s %llu calls; longest %.3f ms, longest that blocked %.3f ms; p99.9 <= %.1f us;\n"
           "      %llu over 1 ms, %llu of them blocked (the rest preempted)\n",
           where, (unsigned long long)l->calls, (double)l->max_ns * 1e-6, (double)l->max_blocked_ns * 1e-6,
           (double)lat_quantile(l, 0.999) * 1e-3, (unsigned long long)l->over_1ms,
           (unsigned long long)l->over_1ms_blocked);
}

static void report(const char *name, scenario_result *r)
{
    printf("%s (%d rounds, resolve + pin + unpin timed one by one):\n", name, r->rounds);
    bench_print("relo_reclaim (pass, 2 x 100 ms waits)", "ms", bench_summarize(r->pass_ms, r->rounds));
    bench_print("longest call during the pass, per round", "ms", bench_summarize(r->in_max_ms, r->rounds));
    bench_print("longest blocked call during the pass", "ms", bench_summarize(r->in_blocked_ms, r->rounds));
    bench_print("longest call outside passes, per round", "ms", bench_summarize(r->out_max_ms, r->rounds));
    print_lat("during passes: ", &r->in_all);
    print_lat("outside passes:", &r->out_all);
    printf("  allocations moved intact: %llu of %d; failed calls: %llu\n", (unsigned long long)r->moved,
           r->rounds, (unsigned long long)r->errors);
    printf("  target, no call over 1 ms during the pass: %s; no call that blocked over 1 ms: %s\n",
           r->in_all.max_ns <= 1000000u ? "met" : "missed",
           r->in_all.max_blocked_ns <= 1000000u ? "met" : "missed");
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    if (rounds < 3) rounds = 3;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    static scenario_result other, same, slow_free;
    printf("bench_pass_latency: wait_device and wait_copies sleep 100 ms each\n");
    run_scenario(false, 0, rounds, &other);
    run_scenario(true, 0, rounds, &same);
    run_scenario(false, FREE_NS, rounds, &slow_free);
    report("another stream", &other);
    report("the relocating stream, an allocation that does not move", &same);
    report("another stream, and giving a page back takes 20 ms", &slow_free);
    return other.errors || same.errors || slow_free.errors ? 1 : 0;
}
