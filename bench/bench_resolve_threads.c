/*
 * bench_resolve_threads.c — does resolve throughput scale with threads?
 *
 * One device (host backend), two streams, each with 256 live allocations of
 * 256 bytes. A run makes OPS resolves per thread, round-robin over its
 * stream's handles:
 *
 *   1 thread    one thread on stream 1;
 *   2 threads   one thread per stream, started together (a barrier).
 *
 * Throughput is resolves per second of wall time; CPU time (the process's,
 * both threads) per resolve is printed beside it, and how many CPUs the
 * two threads actually got (CPU time over wall time: 2 on an idle 2-core
 * machine). A control runs the same
 * shape with a loop that shares nothing (each thread sums its own array,
 * about as long per step as a resolve), so the ratio the machine itself
 * allows right now is measured in the same run: on a 2-core machine other
 * processes share, that ceiling is below 2. The kinds of run are
 * interleaved after a warm-up; medians and spreads are printed, and the
 * ratio of medians against the target (>= 1.6).
 *
 * A second pair does relo_pin + relo_unpin instead of relo_resolve. The
 * device has the default (packed) placement. The last lines sum up each
 * ratio, e.g. "pin+unpin: 2 threads / 1 thread = X".
 *
 * Usage: bench_resolve_threads [runs] [ops per thread]  (defaults 15, 1000000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "relo.h"
#include "relo_backend.h"

#define HANDLES 256
#define MAX_RUNS 101

static void must(relo_status s, const char *what)
{
    if (s != RELO_OK) {
        fprintf(stderr, "bench_resolve_threads: %s: %s\n", what, relo_status_name(s));
        exit(1);
    }
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef enum work { WORK_RESOLVE, WORK_PIN, WORK_CONTROL } work;

/* Each worker on its own cache lines, and its loop counts in locals: two
 * threads writing next to what the other reads would measure the machine's
 * cache traffic, not relo. */
typedef struct worker {
    _Alignas(64) relo_device *dev;
    relo_stream *stream;
    relo_handle handles[HANDLES];
    uint64_t control[HANDLES * 8]; /* the control's private data */
    uint64_t ops;
    work kind;
    pthread_barrier_t *go;
    uint64_t sink;
    uint64_t errors;
} worker;

static void *work_loop(void *arg)
{
    worker *w = arg;
    if (w->go) pthread_barrier_wait(w->go);
    relo_binding b;
    uint64_t sum = 0, errors = 0;
    relo_device *dev = w->dev;
    relo_stream *stream = w->stream;
    for (uint64_t i = 0, j = 0; i < w->ops; i++, j = (j + 1) % HANDLES) {
        switch (w->kind) {
        case WORK_RESOLVE:
            errors += relo_resolve(stream, w->handles[j], &b) != RELO_OK;
            sum += b.offset;
            break;
        case WORK_PIN:
            errors += relo_pin(stream, w->handles[j], &b) != RELO_OK;
            errors += relo_unpin(dev, w->handles[j]) != RELO_OK;
            sum += b.offset;
            break;
        case WORK_CONTROL:
            /* A few dependent loads and a multiply, about a resolve's length. */
            for (int k = 0; k < 8; k++) sum = sum * 31 + w->control[(j * 8 + (sum & 7)) % (HANDLES * 8)];
            break;
        }
    }
    w->sink = sum;
    w->errors += errors;
    return NULL;
}

typedef struct sample {
    double ops_per_s, cpu_ns_per_op, cpus; /* cpus: CPU time / wall time */
} sample;

/* One run with n threads (1 or 2) of the given kind. */
static sample run(worker *ws, int n, work kind, uint64_t ops)
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)n + 1);
    pthread_t t[2];
    for (int i = 0; i < n; i++) {
        ws[i].kind = kind;
        ws[i].ops = ops;
        ws[i].go = &go;
        if (pthread_create(&t[i], NULL, work_loop, &ws[i]) != 0) exit(1);
    }
    uint64_t c0 = cpu_ns(), t0 = bench_now_ns();
    pthread_barrier_wait(&go);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    uint64_t t1 = bench_now_ns(), c1 = cpu_ns();
    pthread_barrier_destroy(&go);
    sample s;
    double total = (double)ops * n;
    s.ops_per_s = total / ((double)(t1 - t0) * 1e-9);
    s.cpu_ns_per_op = (double)(c1 - c0) / total;
    s.cpus = (double)(c1 - c0) / (double)(t1 - t0);
    return s;
}

/* Returns the ratio of medians, 2 threads / 1 thread. */
static double pair(worker *ws, work kind, const char *name, int runs, uint64_t ops)
{
    double one[MAX_RUNS], two[MAX_RUNS], cpu1[MAX_RUNS], cpu2[MAX_RUNS], busy2[MAX_RUNS];
    (void)run(ws, 1, kind, ops / 4); /* warm-up */
    (void)run(ws, 2, kind, ops / 4);
    for (int r = 0; r < runs; r++) {
        /* Alternate which goes first, so drift in the machine's load
         * favours neither. */
        sample a, b;
        if (r % 2 == 0) {
            a = run(ws, 1, kind, ops);
            b = run(ws, 2, kind, ops);
        } else {
            b = run(ws, 2, kind, ops);
            a = run(ws, 1, kind, ops);
        }
        one[r] = a.ops_per_s * 1e-6;
        two[r] = b.ops_per_s * 1e-6;
        cpu1[r] = a.cpu_ns_per_op;
        cpu2[r] = b.cpu_ns_per_op;
        busy2[r] = b.cpus;
    }
    char what[96];
    printf("%s:\n", name);
    bench_summary s1 = bench_summarize(one, runs), s2 = bench_summarize(two, runs);
    snprintf(what, sizeof what, "1 thread, 1 stream");
    bench_print(what, "M/s", s1);
    snprintf(what, sizeof what, "2 threads, 2 streams (total)");
    bench_print(what, "M/s", s2);
    bench_print("CPU per op, 1 thread", "ns", bench_summarize(cpu1, runs));
    bench_print("CPU per op, 2 threads", "ns", bench_summarize(cpu2, runs));
    bench_print("CPUs the 2 threads got (CPU / wall time)", "", bench_summarize(busy2, runs));
    snprintf(what, sizeof what, "ratio 2 threads / 1 thread");
    bench_ratio(what, s2.median / s1.median, kind == WORK_CONTROL ? "the machine's ceiling now" : ">= 1.6");
    return s2.median / s1.median;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 15;
    uint64_t ops = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000u;
    if (runs < 3) runs = 3;
    if (runs > MAX_RUNS) runs = MAX_RUNS;
    if (ops < 1000) ops = 1000;

    relo_host_desc hd;
    memset(&hd, 0, sizeof hd);
    relo_backend *b = NULL;
    relo_device *dev = NULL;
    must(relo_backend_host_create(&hd, &b), "backend");
    must(relo_device_create(NULL, b, &dev), "device");
    static worker ws[2];
    for (int i = 0; i < 2; i++) {
        ws[i].dev = dev;
        must(relo_stream_create(dev, NULL, &ws[i].stream), "stream");
        for (int j = 0; j < HANDLES; j++) must(relo_reserve(ws[i].stream, 256, &ws[i].handles[j]), "reserve");
        for (int j = 0; j < HANDLES * 8; j++) ws[i].control[j] = (uint64_t)j * 2654435761u;
    }
    printf("bench_resolve_threads: %d runs, %llu ops per thread\n", runs, (unsigned long long)ops);
    double control = pair(ws, WORK_CONTROL, "control (no shared state)", runs, ops);
    double resolve = pair(ws, WORK_RESOLVE, "relo_resolve", runs, ops);
    double pin = pair(ws, WORK_PIN, "relo_pin + relo_unpin", runs, ops);
    printf("\nsummary (default placement; the machine's own ceiling now: 2 threads / 1 thread = %.2f):\n",
           control);
    printf("  resolve: 2 threads / 1 thread = %.2f   (target >= 1.6)\n", resolve);
    printf("  pin+unpin: 2 threads / 1 thread = %.2f   (target >= 1.6)\n", pin);

    uint64_t errors = ws[0].errors + ws[1].errors;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < HANDLES; j++) must(relo_release(dev, ws[i].handles[j]), "release");
        must(relo_stream_destroy(ws[i].stream), "stream destroy");
    }
    must(relo_device_destroy(dev), "device destroy");
    if (errors) fprintf(stderr, "bench_resolve_threads: %llu calls failed\n", (unsigned long long)errors);
    return errors ? 1 : 0;
}
