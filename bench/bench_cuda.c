/*
 * bench_cuda.c — relo on the CUDA backend against the driver's own
 * allocators, on real traces and on relocation bandwidth.
 *
 * 1. Trace replay: each trace (relo format 1, plain or .gz) is replayed
 *    against relo (relo_reserve/relo_release, one relo stream and CUstream
 *    per trace stream), against cuMemAlloc/cuMemFree, and against the
 *    stream-ordered pool (cuMemAllocAsync/cuMemFreeAsync, release threshold
 *    raised so it caches as runtimes configure it). Printed: median time
 *    per event of each and relo's ratio to each, plus relo's peak reserved
 *    bytes and relocations.
 * 2. Relocation bandwidth: relo_reclaim moving one allocation of S bytes
 *    onto a page already held, as a ratio to cuMemcpyDtoD of S bytes
 *    between two buffers, same run (target ≥ 0.8), under the default
 *    (packed) placement and then the adaptive placement, with each reclaim's device
 *    waits (the backend wrapped by bench_backend.h counts them). The
 *    replays of part 1 use the default placement.
 *
 * Runs alternate between the candidates after a warm-up; every figure is a
 * median with its spread. Needs a CUDA device; exits 77 without one.
 *
 * Usage: bench_cuda [--runs N] [trace ...]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_backend.h"
#include "relo.h"
#include "relo_cuda.h"

#define MiB (UINT64_C(1) << 20)
#define MAX_RUNS 31
#define MAX_STREAMS 16

/* ------------------------------------------------------------------------ */
/* Trace reading (relo trace format 1)                                      */
/* ------------------------------------------------------------------------ */

typedef struct event {
    uint64_t size;  /* alloc: bytes */
    uint32_t slot;  /* dense allocation number */
    uint8_t stream; /* dense stream index */
    uint8_t alloc;  /* 1 = alloc, 0 = free */
} event;

typedef struct trace {
    event *events;
    size_t count, cap;
    uint32_t slots;
    uint32_t streams;
} trace;

/* Open addressing from trace ids to dense slots; ids are never reused. */
typedef struct id_map {
    uint64_t *keys; /* 0 = empty (ids are positive) */
    uint32_t *vals;
    size_t cap;
} id_map;

static bool map_put(id_map *m, uint64_t key, uint32_t val);

static bool map_grow(id_map *m)
{
    id_map n = {calloc(m->cap ? 2 * m->cap : 1024, sizeof(uint64_t)),
                calloc(m->cap ? 2 * m->cap : 1024, sizeof(uint32_t)), m->cap ? 2 * m->cap : 1024};
    if (!n.keys || !n.vals) return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) map_put(&n, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = n;
    return true;
}

static size_t map_find(const id_map *m, uint64_t key)
{
    size_t i = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

static bool map_put(id_map *m, uint64_t key, uint32_t val)
{
    size_t i = map_find(m, key);
    m->keys[i] = key;
    m->vals[i] = val;
    return true;
}

static bool push_event(trace *t, event e)
{
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        event *g = realloc(t->events, cap * sizeof *g);
        if (!g) return false;
        t->events = g;
        t->cap = cap;
    }
    t->events[t->count++] = e;
    return true;
}

/* Reads a trace; false (with a message) on any line it cannot use. */
static bool read_trace(const char *path, trace *t)
{
    char cmd[4096];
    memset(t, 0, sizeof *t);
    size_t len = strlen(path);
    bool gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
    FILE *f;
    if (gz) {
        snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
        f = popen(cmd, "r");
    } else {
        f = fopen(path, "r");
    }
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return false;
    }
    id_map m = {0};
    uint64_t stream_ids[MAX_STREAMS];
    char line[512];
    unsigned long long lineno = 0;
    bool ok = map_grow(&m);
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        unsigned long long id = 0, size = 0, stream = 0;
        event e = {0};
        if (line[0] == 'a' && sscanf(line + 1, "%llu %llu %llu", &id, &size, &stream) >= 2) {
            uint32_t si = 0;
            while (si < t->streams && stream_ids[si] != stream) si++;
            if (si == t->streams) {
                if (t->streams == MAX_STREAMS)
                    si = MAX_STREAMS - 1; /* fold extra streams */
                else
                    stream_ids[t->streams++] = stream;
            }
            if (2 * (t->slots + 1) > m.cap) ok = map_grow(&m);
            e.alloc = 1;
            e.size = size;
            e.slot = t->slots++;
            e.stream = (uint8_t)si;
            if (ok) map_put(&m, id, e.slot);
        } else if (line[0] == 'f' && sscanf(line + 1, "%llu", &id) == 1) {
            size_t i = map_find(&m, id);
            if (!m.keys[i]) {
                fprintf(stderr, "%s:%llu: free of an unknown id\n", path, lineno);
                ok = false;
                break;
            }
            e.slot = m.vals[i];
        } else {
            fprintf(stderr, "%s:%llu: cannot parse\n", path, lineno);
            ok = false;
            break;
        }
        if (ok) ok = push_event(t, e);
    }
    if (gz)
        pclose(f);
    else
        fclose(f);
    free(m.keys);
    free(m.vals);
    /* A free repeats its allocation's size and stream, for the replayers. */
    uint64_t *sizes = ok ? calloc(t->slots + 1u, sizeof *sizes) : NULL;
    uint8_t *streams = ok ? calloc(t->slots + 1u, 1) : NULL;
    if (ok && sizes && streams) {
        for (size_t i = 0; i < t->count; i++) {
            event *e = &t->events[i];
            if (e->alloc) {
                sizes[e->slot] = e->size;
                streams[e->slot] = e->stream;
            } else {
                e->size = sizes[e->slot];
                e->stream = streams[e->slot];
            }
        }
    } else {
        ok = false;
    }
    free(sizes);
    free(streams);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Replayers                                                                */
/* ------------------------------------------------------------------------ */

typedef struct gpu {
    CUdevice dev;
    CUcontext ctx;
    CUstream streams[MAX_STREAMS];
} gpu;

typedef struct relo_extra {
    uint64_t peak_reserved, relocations, failures;
} relo_extra;

/* Seconds for the whole trace on relo, or < 0 when a reservation failed
 * other than for memory (an out-of-memory one is counted and skipped). */
static double replay_relo(gpu *g, const trace *t, relo_extra *x)
{
    relo_backend *b = NULL;
    relo_device *d = NULL;
    relo_stream *rs[MAX_STREAMS] = {0};
    relo_handle *h = calloc(t->slots + 1u, sizeof *h);
    double secs = -1;
    memset(x, 0, sizeof *x);
    if (!h || relo_backend_cuda_create(g->ctx, g->dev, NULL, &b) != RELO_OK) goto out;
    if (relo_device_create(NULL, b, &d) != RELO_OK) {
        relo_backend_destroy(b);
        goto out;
    }
    for (uint32_t i = 0; i < t->streams; i++)
        if (relo_stream_create(d, g->streams[i], &rs[i]) != RELO_OK) goto out;

    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < t->count; i++) {
        const event *e = &t->events[i];
        if (e->alloc) {
            relo_status s = relo_reserve(rs[e->stream], e->size, &h[e->slot]);
            if (s != RELO_OK) {
                x->failures++;
                h[e->slot].id = 0;
            }
        } else if (h[e->slot].id) {
            relo_release(d, h[e->slot]);
            h[e->slot].id = 0;
        }
    }
    uint64_t t1 = bench_now_ns();
    secs = (double)(t1 - t0) * 1e-9;
    relo_stats st;
    relo_device_stats(d, &st);
    x->peak_reserved = st.peak_bytes_reserved;
    x->relocations = st.relocations;
out:
    if (d) {
        for (uint32_t i = 0; i <= t->slots && h; i++)
            if (h[i].id) relo_release(d, h[i]);
        for (uint32_t i = 0; i < t->streams; i++)
            if (rs[i]) relo_stream_destroy(rs[i]);
        relo_device_destroy(d);
    }
    free(h);
    return secs;
}

static double replay_cumemalloc(gpu *g, const trace *t, uint64_t *failures)
{
    (void)g; /* cuMemAlloc works on the current context */
    CUdeviceptr *p = calloc(t->slots + 1u, sizeof *p);
    if (!p) return -1;
    *failures = 0;
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < t->count; i++) {
        const event *e = &t->events[i];
        if (e->alloc) {
            if (cuMemAlloc(&p[e->slot], e->size ? (size_t)e->size : 1) != CUDA_SUCCESS) {
                (*failures)++;
                p[e->slot] = 0;
            }
        } else if (p[e->slot]) {
            cuMemFree(p[e->slot]);
            p[e->slot] = 0;
        }
    }
    uint64_t t1 = bench_now_ns();
    for (uint32_t i = 0; i <= t->slots; i++)
        if (p[i]) cuMemFree(p[i]);
    free(p);
    return (double)(t1 - t0) * 1e-9;
}

static double replay_async(gpu *g, const trace *t, uint64_t *failures)
{
    CUdeviceptr *p = calloc(t->slots + 1u, sizeof *p);
    if (!p) return -1;
    *failures = 0;
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < t->count; i++) {
        const event *e = &t->events[i];
        CUstream s = g->streams[e->stream];
        if (e->alloc) {
            if (cuMemAllocAsync(&p[e->slot], e->size ? (size_t)e->size : 1, s) != CUDA_SUCCESS) {
                (*failures)++;
                p[e->slot] = 0;
            }
        } else if (p[e->slot]) {
            cuMemFreeAsync(p[e->slot], s);
            p[e->slot] = 0;
        }
    }
    for (uint32_t i = 0; i < t->streams; i++) cuStreamSynchronize(g->streams[i]);
    uint64_t t1 = bench_now_ns();
    for (uint32_t i = 0; i <= t->slots; i++)
        if (p[i]) cuMemFreeAsync(p[i], g->streams[0]);
    cuStreamSynchronize(g->streams[0]);
    /* Give the pool's cached memory back so the next candidate starts from
     * an empty device. */
    CUmemoryPool pool;
    if (cuDeviceGetDefaultMemPool(&pool, g->dev) == CUDA_SUCCESS) cuMemPoolTrimTo(pool, 0);
    free(p);
    return (double)(t1 - t0) * 1e-9;
}

static void bench_trace(gpu *g, const char *path, int runs)
{
    trace t;
    if (!read_trace(path, &t)) {
        free(t.events);
        return;
    }
    printf("\n%s: %zu events, %u streams\n", path, t.count, t.streams);
    double r[MAX_RUNS], m[MAX_RUNS], a[MAX_RUNS];
    int nr = 0, nm = 0, na = 0;
    relo_extra x = {0};
    uint64_t fm = 0, fa = 0;
    (void)replay_relo(g, &t, &x); /* warm-up */
    for (int i = 0; i < runs; i++) {
        double s = replay_relo(g, &t, &x);
        if (s > 0) r[nr++] = s * 1e9 / (double)t.count;
        s = replay_cumemalloc(g, &t, &fm);
        if (s > 0) m[nm++] = s * 1e9 / (double)t.count;
        s = replay_async(g, &t, &fa);
        if (s > 0) a[na++] = s * 1e9 / (double)t.count;
    }
    if (!nr || !nm || !na) {
        printf("  a replay failed\n");
        free(t.events);
        return;
    }
    bench_summary sr = bench_summarize(r, nr), sm = bench_summarize(m, nm), sa = bench_summarize(a, na);
    bench_print("relo (CUDA backend)", "ns/ev", sr);
    bench_print("cuMemAlloc/cuMemFree", "ns/ev", sm);
    bench_print("cuMemAllocAsync/cuMemFreeAsync", "ns/ev", sa);
    printf("  relo time / cuMemAlloc time              %.3f\n", sr.median / sm.median);
    printf("  relo time / cuMemAllocAsync time         %.3f\n", sr.median / sa.median);
    printf(
        "  relo peak reserved %.2f GiB, %llu relocations, failures relo %llu, "
        "cuMemAlloc %llu, async %llu\n",
        (double)x.peak_reserved / (double)(1u << 30), (unsigned long long)x.relocations,
        (unsigned long long)x.failures, (unsigned long long)fm, (unsigned long long)fa);
    free(t.events);
}

/* ------------------------------------------------------------------------ */
/* Relocation bandwidth                                                     */
/* ------------------------------------------------------------------------ */

/* One relo_reclaim moving `size` bytes onto a held page under the placement;
 * seconds or < 0, and the reclaim's device waits in *waits. The scene per
 * placement:
 *   packed (the default) a 2S block, released, leaves a page in which the
 *                        allocation is then alone, half full; a 2S + S/8
 *                        block, released, leaves a page where an
 *                        allocation of S + S/8 stands with S free: the
 *                        reclaim packs the first into it;
 *   adaptive             the allocation on the arena's first page, then a
 *                        larger block grows the arena and is released:
 *                        the first page is outdated. */
static double reloc_once(gpu *g, relo_placement placement, uint64_t size, uint64_t *waits)
{
    relo_backend *cu = NULL, *b = NULL;
    relo_device *d = NULL;
    relo_stream *s = NULL;
    relo_handle h = {0}, stay = {0}, w1 = {0}, w2 = {0};
    static bench_wrap wrap;
    double secs = -1;
    *waits = 0;
    if (relo_backend_cuda_create(g->ctx, g->dev, NULL, &cu) != RELO_OK) return -1;
    if (bench_wrap_create(&wrap, cu, 0, 0, &b) != RELO_OK) {
        relo_backend_destroy(cu);
        return -1;
    }
    const relo_device_desc desc = {.placement = placement};
    if (relo_device_create(&desc, b, &d) != RELO_OK) {
        relo_backend_destroy(b);
        return -1;
    }
    relo_stats st;
    if (relo_stream_create(d, g->streams[0], &s) != RELO_OK) goto out;
    if (placement == RELO_PLACEMENT_ADAPTIVE) {
        if (relo_reserve(s, size, &h) != RELO_OK) goto out;
        relo_device_stats(d, &st);
        if (relo_reserve(s, st.bytes_reserved + MiB, &w1) != RELO_OK) goto out;
        relo_release(d, w1);
    } else {
        if (relo_reserve(s, 2 * size, &w1) != RELO_OK) goto out;
        if (relo_reserve(s, 2 * size + size / 8, &w2) != RELO_OK) goto out;
        relo_release(d, w1);
        if (relo_reserve(s, size, &h) != RELO_OK) goto out;
        relo_release(d, w2);
        if (relo_reserve(s, size + size / 8, &stay) != RELO_OK) goto out;
    }
    relo_device_stats(d, &st);
    uint64_t moved = st.bytes_moved, w0 = bench_wrap_waits(&wrap);
    uint64_t t0 = bench_now_ns();
    relo_status rs = relo_reclaim(s);
    uint64_t t1 = bench_now_ns();
    *waits = bench_wrap_waits(&wrap) - w0;
    relo_device_stats(d, &st);
    if (rs == RELO_OK && st.bytes_moved - moved == size) secs = (double)(t1 - t0) * 1e-9;
out:
    if (h.id) relo_release(d, h);
    if (stay.id) relo_release(d, stay);
    if (s) relo_stream_destroy(s);
    relo_device_destroy(d);
    return secs;
}

static double copy_once(CUdeviceptr src, CUdeviceptr dst, uint64_t size)
{
    uint64_t t0 = bench_now_ns();
    CUresult r = cuMemcpyDtoD(dst, src, (size_t)size);
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    uint64_t t1 = bench_now_ns();
    return r == CUDA_SUCCESS ? (double)(t1 - t0) * 1e-9 : -1;
}

static void bench_bandwidth(gpu *g, int runs)
{
    static const uint64_t sizes[] = {2 * MiB, 16 * MiB, 256 * MiB, 1024 * MiB};
    static const relo_placement placements[2] = {RELO_PLACEMENT_PACKED, RELO_PLACEMENT_ADAPTIVE};
    printf("\nrelocation bandwidth (relo_reclaim vs cuMemcpyDtoD), the default placement first\n");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t size = sizes[i];
        CUdeviceptr src = 0, dst = 0;
        if (cuMemAlloc(&src, (size_t)size) != CUDA_SUCCESS ||
            cuMemAlloc(&dst, (size_t)size) != CUDA_SUCCESS) {
            if (src) cuMemFree(src);
            printf("  %llu MiB: no room\n", (unsigned long long)(size / MiB));
            continue;
        }
        cuMemsetD8(src, 1, (size_t)size);
        cuMemsetD8(dst, 2, (size_t)size);
        uint64_t waits = 0;
        (void)copy_once(src, dst, size);
        for (int p = 0; p < 2; p++) (void)reloc_once(g, placements[p], size, &waits);
        double rel[2][MAX_RUNS], wait_n[2][MAX_RUNS], base[MAX_RUNS];
        int nr[2] = {0, 0}, nb = 0;
        for (int r = 0; r < runs; r++) {
            double tb = copy_once(src, dst, size);
            if (tb > 0) base[nb++] = (double)size / tb / 1e9;
            for (int p = 0; p < 2; p++) {
                double tr = reloc_once(g, placements[p], size, &waits);
                if (tr <= 0) continue;
                wait_n[p][nr[p]] = (double)waits;
                rel[p][nr[p]++] = (double)size / tr / 1e9;
            }
        }
        cuMemFree(src);
        cuMemFree(dst);
        if (!nb) {
            printf("  %llu MiB: the baseline copy failed\n", (unsigned long long)(size / MiB));
            continue;
        }
        char what[96];
        bench_summary sb = bench_summarize(base, nb);
        snprintf(what, sizeof what, "%5llu MiB cuMemcpyDtoD (baseline)", (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sb);
        for (int p = 0; p < 2; p++) {
            printf("  %5llu MiB, %s%s:\n", (unsigned long long)(size / MiB),
                   relo_placement_name(placements[p]), p == 0 ? " (the default)" : "");
            if (!nr[p]) {
                printf("    a run failed\n");
                continue;
            }
            bench_summary sr = bench_summarize(rel[p], nr[p]);
            bench_print("relocation", "GB/s", sr);
            bench_print("device waits per reclaim", "", bench_summarize(wait_n[p], nr[p]));
            bench_ratio("ratio of medians to the baseline", sr.median / sb.median, ">= 0.8");
        }
    }
}

int main(int argc, char **argv)
{
    int runs = 5, first = 1;
    if (argc > 2 && strcmp(argv[1], "--runs") == 0) {
        runs = atoi(argv[2]);
        first = 3;
    }
    if (runs < 1) runs = 1;
    if (runs > MAX_RUNS) runs = MAX_RUNS;
    gpu g;
    memset(&g, 0, sizeof g);
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    if (cuDeviceGet(&g.dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&g.ctx, g.dev) != CUDA_SUCCESS ||
        cuCtxPushCurrent(g.ctx) != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (cuStreamCreate(&g.streams[i], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 1;
    /* Let the stream-ordered pool cache freed memory, as runtimes do. */
    CUmemoryPool pool;
    if (cuDeviceGetDefaultMemPool(&pool, g.dev) == CUDA_SUCCESS) {
        cuuint64_t threshold = UINT64_MAX;
        cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    }
    char name[256] = "";
    cuDeviceGetName(name, sizeof name, g.dev);
    printf("bench_cuda: %s, %d runs\n", name, runs);

    for (int i = first; i < argc; i++) bench_trace(&g, argv[i], runs);
    bench_bandwidth(&g, runs);

    for (int i = 0; i < MAX_STREAMS; i++) cuStreamDestroy(g.streams[i]);
    CUcontext popped;
    cuCtxPopCurrent(&popped);
    cuDevicePrimaryCtxRelease(g.dev);
    return 0;
}
