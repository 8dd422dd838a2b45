/*
 * bench_replay.c — time per event replaying real traces: relo on the sim
 * and host backends against glibc malloc/free, jemalloc and mimalloc on
 * the same events.
 *
 * usage: bench_replay [--runs N] [--host-limit BYTES] TRACE...
 *
 * jemalloc and mimalloc are loaded at run time (dlopen of libjemalloc.so.2
 * and libmimalloc.so.2), so the benchmark builds without them and reports
 * "absent" where they are missing. Each allocator gets one warm-up run,
 * then N timed runs (default 7); a run replays the trace as many times as
 * fill about 30 ms (the warm-up decides), so a short trace is not timed
 * below the scheduler's noise. The table gives the median, the spread
 * ((max - min) / median) and the ratio of medians against glibc measured
 * in the same process. Only the event loop is timed: device setup and the
 * release of what a trace leaves live are not.
 *
 * Debian's jemalloc uses initial-exec TLS, which dlopen refuses once the
 * static TLS block is full; the benchmark re-executes itself once with a
 * larger block (GLIBC_TUNABLES=glibc.rtld.optional_static_tls).
 *
 * The host backend holds real bytes, so traces whose peak live bytes pass
 * the host limit (default 1 GiB: the host backend fills every fresh page, so
 * a 3.7 GiB trace costs ~25 s a replay) are skipped for it and marked so. The
 * malloc family never touches the memory it gets, so its peak stays
 * virtual and every trace runs.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relo.h"
#include "relo_backend.h"
#include "trace_reader.h"

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

typedef enum bench_kind {
    BENCH_RELO_SIM = 0,
    BENCH_RELO_HOST,
    BENCH_GLIBC,
    BENCH_JEMALLOC,
    BENCH_MIMALLOC,
    BENCH_KIND_COUNT
} bench_kind;

static const char *const kind_names[BENCH_KIND_COUNT] = {"relo sim", "relo host", "glibc malloc", "jemalloc",
                                                         "mimalloc"};

typedef struct allocator {
    malloc_fn alloc;
    free_fn release;
    const char *absent; /* why it is not there, or NULL */
} allocator;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Loads malloc/free from a shared library, trying each symbol pair. */
static allocator load(const char *lib, const char *const *names)
{
    allocator a = {NULL, NULL, "absent"};
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return a;
    for (int i = 0; names[i]; i += 2) {
        void *m = dlsym(h, names[i]);
        void *f = dlsym(h, names[i + 1]);
        if (m && f) {
            /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
            memcpy(&a.alloc, &m, sizeof m);
            memcpy(&a.release, &f, sizeof f);
            a.absent = NULL;
            return a;
        }
    }
    return a;
}

/* One timed replay through a malloc family; returns ns per event. */
static double run_malloc(const trace *t, const allocator *a, void **ptrs)
{
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < t->event_count; i++) {
        const trace_event *e = &t->events[i];
        if (e->kind == TRACE_ALLOC) {
            ptrs[e->alloc] = a->alloc((size_t)e->size);
        } else {
            a->release(ptrs[e->alloc]);
            ptrs[e->alloc] = NULL;
        }
    }
    uint64_t t1 = now_ns();
    for (uint32_t k = 0; k < t->alloc_count; k++) {
        if (ptrs[k]) a->release(ptrs[k]);
        ptrs[k] = NULL;
    }
    return (double)(t1 - t0) / (double)t->event_count;
}

/* One timed replay on a fresh relo device; returns ns per event, or -1. */
static double run_relo(const trace *t, bool host, relo_handle *handles)
{
    relo_host_desc hd;
    memset(&hd, 0, sizeof hd);
    relo_backend *backend = NULL;
    relo_device *device = NULL;
    relo_stream *streams[TRACE_MAX_STREAMS];
    relo_status st = host ? relo_backend_host_create(&hd, &backend) : relo_backend_sim_create(&hd, &backend);
    if (st != RELO_OK) return -1;
    if (relo_device_create(NULL, backend, &device) != RELO_OK) {
        relo_backend_destroy(backend);
        return -1;
    }
    for (uint32_t s = 0; s < t->stream_count; s++)
        if (relo_stream_create(device, NULL, &streams[s]) != RELO_OK) return -1;
    bool ok = true;
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < t->event_count && ok; i++) {
        const trace_event *e = &t->events[i];
        if (e->kind == TRACE_ALLOC) {
            ok = relo_reserve(streams[e->stream], e->size, &handles[e->alloc]) == RELO_OK;
        } else {
            relo_release(device, handles[e->alloc]);
            handles[e->alloc].id = 0;
        }
    }
    uint64_t t1 = now_ns();
    for (uint32_t k = 0; k < t->alloc_count; k++) {
        if (handles[k].id) relo_release(device, handles[k]);
        handles[k].id = 0;
    }
    for (uint32_t s = 0; s < t->stream_count; s++) relo_stream_destroy(streams[s]);
    relo_device_destroy(device);
    return ok ? (double)(t1 - t0) / (double)t->event_count : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct timing {
    double median, spread;
    const char *note; /* why there is no number */
} timing;

/* ns per event over reps replays of the trace, or -1 if one failed. */
static double run_reps(const trace *t, bench_kind kind, const allocator *a, void *scratch, int reps)
{
    double sum = 0;
    for (int k = 0; k < reps; k++) {
        double x = kind <= BENCH_RELO_HOST ? run_relo(t, kind == BENCH_RELO_HOST, scratch)
                                           : run_malloc(t, a, scratch);
        if (x < 0) return -1;
        sum += x;
    }
    return sum / reps;
}

static timing measure(const trace *t, bench_kind kind, const allocator *a, int runs, void *scratch)
{
    timing r = {0, 0, NULL};
    double *v = malloc((size_t)runs * sizeof *v);
    if (!v) {
        r.note = "no memory";
        return r;
    }
    double warm = run_reps(t, kind, a, scratch, 1);
    double per_replay_ms = warm * (double)t->event_count / 1e6;
    int reps = per_replay_ms > 0 ? (int)(30.0 / per_replay_ms) + 1 : 1;
    if (reps > 100) reps = 100;
    for (int i = 0; i < runs && warm >= 0; i++) {
        double x = run_reps(t, kind, a, scratch, reps);
        if (x < 0) {
            warm = -1;
            break;
        }
        v[i] = x;
    }
    if (warm < 0) {
        r.note = "failed";
        free(v);
        return r;
    }
    qsort(v, (size_t)runs, sizeof *v, cmp_double);
    r.median = runs % 2 ? v[runs / 2] : (v[runs / 2 - 1] + v[runs / 2]) / 2;
    r.spread = r.median > 0 ? (v[runs - 1] - v[0]) / r.median : 0;
    free(v);
    return r;
}

int main(int argc, char **argv)
{
    if (!getenv("RELO_BENCH_REEXEC")) {
        setenv("RELO_BENCH_REEXEC", "1", 1);
        setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=16384", 1);
        execv("/proc/self/exe", argv); /* on failure, go on without jemalloc */
    }
    int runs = 7;
    uint64_t host_limit = 1ull << 30;
    int first = 1;
    while (first < argc && strncmp(argv[first], "--", 2) == 0) {
        if (strcmp(argv[first], "--runs") == 0 && first + 1 < argc) {
            runs = atoi(argv[first + 1]);
            first += 2;
        } else if (strcmp(argv[first], "--host-limit") == 0 && first + 1 < argc) {
            host_limit = strtoull(argv[first + 1], NULL, 10);
            first += 2;
        } else {
            fprintf(stderr, "usage: bench_replay [--runs N] [--host-limit BYTES] TRACE...\n");
            return 2;
        }
    }
    if (first >= argc || runs < 1) {
        fprintf(stderr, "usage: bench_replay [--runs N] [--host-limit BYTES] TRACE...\n");
        return 2;
    }
    static const char *const je_names[] = {"malloc", "free", "je_malloc", "je_free", NULL};
    static const char *const mi_names[] = {"mi_malloc", "mi_free", "malloc", "free", NULL};
    allocator alloc[BENCH_KIND_COUNT] = {{NULL, NULL, NULL},
                                         {NULL, NULL, NULL},
                                         {malloc, free, NULL},
                                         load("libjemalloc.so.2", je_names),
                                         load("libmimalloc.so.2", mi_names)};
    printf(
        "bench_replay: ns per event, median of %d runs after 1 warm-up; spread = (max-min)/median; "
        "ratio = median / glibc median\n\n",
        runs);
    printf("| %-26s | %-12s | %12s | %7s | %8s |\n", "trace", "allocator", "ns/event", "spread", "vs glibc");
    printf("|%s|%s|%s|%s|%s|\n", "----------------------------", "--------------",
           "-------------:", "--------:", "---------:");
    int status = 0;
    for (int i = first; i < argc; i++) {
        trace t;
        trace_error err;
        if (!trace_read_file(argv[i], TRACE_FORMAT_AUTO, &t, &err)) {
            trace_error_print(&err);
            trace_free(&t);
            status = 1;
            continue;
        }
        size_t slot = sizeof(void *) > sizeof(relo_handle) ? sizeof(void *) : sizeof(relo_handle);
        void *scratch = calloc(t.alloc_count ? t.alloc_count : 1, slot);
        timing results[BENCH_KIND_COUNT];
        for (int k = 0; k < BENCH_KIND_COUNT; k++) {
            if (alloc[k].absent) {
                results[k] = (timing){0, 0, alloc[k].absent};
            } else if (k == BENCH_RELO_HOST && t.peak_live_bytes > host_limit) {
                results[k] = (timing){0, 0, "skipped: peak live > host limit"};
            } else {
                results[k] = measure(&t, (bench_kind)k, &alloc[k], runs, scratch);
            }
        }
        double base = results[BENCH_GLIBC].median;
        for (int k = 0; k < BENCH_KIND_COUNT; k++) {
            if (results[k].note)
                printf("| %-26s | %-12s | %12s | %7s | %8s |  %s\n", t.name, kind_names[k], "-", "-", "-",
                       results[k].note);
            else
                printf("| %-26s | %-12s | %12.1f | %6.1f%% | %7.2fx |\n", t.name, kind_names[k],
                       results[k].median, results[k].spread * 100, base > 0 ? results[k].median / base : 0);
        }
        fflush(stdout);
        free(scratch);
        trace_free(&t);
    }
    return status;
}
