/*
 * replay.c — one replay of a trace on a fresh device (see replay.h).
 *
 * Only the relo calls are timed; stats, sampling and host checks sit
 * outside the timed spans, so ns per event measures relo and not the tool.
 */
#include "replay.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"

uint64_t replay_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t replay_max_alloc(const trace *t)
{
    uint64_t m = 0;
    for (size_t i = 0; i < t->event_count; i++)
        if (t->events[i].kind == TRACE_ALLOC && t->events[i].size > m) m = t->events[i].size;
    return m;
}

/* Everything one replay owns, torn down in one place. */
typedef struct replay_state {
    const trace *t;
    const replay_config *cfg;
    replay_result *out;
    relo_device *device;
    relo_stream **streams;
    relo_handle *handles; /* by allocation number; id 0 = not live */
    uint64_t *latencies;  /* reserve times, when recording */
    size_t latency_count;
    size_t *live_list;  /* host: the allocating event of each live allocation */
    uint32_t *live_pos; /* host: index of each in live_list */
    size_t live_count;
} replay_state;

static bool failf(replay_state *s, relo_status st, uint64_t event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool failf(replay_state *s, relo_status st, uint64_t event, const char *fmt, ...)
{
    s->out->status = st;
    s->out->failed_event = event;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->out->error, sizeof s->out->error, fmt, ap);
    va_end(ap);
    return false;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool setup(replay_state *s)
{
    const trace *t = s->t;
    const replay_config *cfg = s->cfg;
    char msg[256] = "";
    relo_backend *backend = NULL;
    relo_status st = replay_backend_create(cfg->backend, cfg->capacity, cfg->granule, replay_max_alloc(t),
                                           &backend, msg, sizeof msg);
    if (st != RELO_OK) return failf(s, st, 0, "%s", msg);
    relo_device_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.size = sizeof desc;
    desc.placement = cfg->placement;
    desc.relocation = cfg->relocation;
    desc.capacity = cfg->capacity;
    desc.cache_limit = cfg->cache_limit;
    st = relo_device_create(&desc, backend, &s->device);
    if (st != RELO_OK) {
        relo_backend_destroy(backend);
        return failf(s, st, 0, "relo_device_create: %s", relo_status_string(st));
    }
    s->streams = calloc(t->stream_count ? t->stream_count : 1, sizeof *s->streams);
    s->handles = calloc(t->alloc_count ? t->alloc_count : 1, sizeof *s->handles);
    if (!s->streams || !s->handles) return failf(s, RELO_ERR_HOST_MEMORY, 0, "out of host memory");
    for (uint32_t i = 0; i < t->stream_count; i++) {
        st = relo_stream_create(s->device, NULL, &s->streams[i]);
        if (st != RELO_OK) return failf(s, st, 0, "relo_stream_create: %s", relo_status_string(st));
    }
    if (cfg->record) {
        s->latencies = malloc((t->alloc_count ? t->alloc_count : 1) * sizeof *s->latencies);
        if (!s->latencies || !sampler_init(&s->out->samples, t->event_count, REPLAY_MAX_SAMPLES))
            return failf(s, RELO_ERR_HOST_MEMORY, 0, "out of host memory");
    }
    if (replay_backend_has_bytes(cfg->backend)) {
        s->live_list = malloc((t->alloc_count ? t->alloc_count : 1) * sizeof *s->live_list);
        s->live_pos = malloc((t->alloc_count ? t->alloc_count : 1) * sizeof *s->live_pos);
        if (!s->live_list || !s->live_pos) return failf(s, RELO_ERR_HOST_MEMORY, 0, "out of host memory");
    }
    return true;
}

/* Releases whatever is live and destroys the device; reports a device that
 * stays busy, which would be a relo bug. */
static void teardown(replay_state *s, bool ok)
{
    if (s->device) {
        for (uint32_t a = 0; s->handles && a < s->t->alloc_count; a++)
            if (s->handles[a].id) relo_release(s->device, s->handles[a]);
        for (uint32_t i = 0; s->streams && i < s->t->stream_count; i++) {
            if (!s->streams[i]) continue;
            relo_status st = relo_stream_destroy(s->streams[i]);
            if (st != RELO_OK && ok)
                ok = failf(s, st, s->t->event_count, "relo_stream_destroy after releasing everything: %s",
                           relo_status_name(st));
        }
        relo_status st = relo_device_destroy(s->device);
        if (st != RELO_OK && ok)
            failf(s, st, s->t->event_count, "relo_device_destroy after releasing everything: %s",
                  relo_status_name(st));
    }
    free(s->streams);
    free(s->handles);
    free(s->latencies);
    free(s->live_list);
    free(s->live_pos);
}

/* Host: checks every live allocation's pattern (after a relocation). */
static bool verify_all(replay_state *s, uint64_t event)
{
    for (size_t k = 0; k < s->live_count; k++) {
        const trace_event *e = &s->t->events[s->live_list[k]];
        uint32_t a = e->alloc;
        uint64_t size = e->size, bad = 0;
        relo_status st = pattern_check(s->device, s->handles[a], a + 1ull, size, s->cfg->verify_full, &bad);
        s->out->verified++;
        if (st != RELO_OK)
            return failf(s, st == RELO_ERR_CORRUPT ? RELO_ERR_CORRUPT : st, event,
                         "allocation %u: %s at offset %llu after a relocation", a + 1u,
                         st == RELO_ERR_CORRUPT ? "bytes differ" : relo_status_name(st),
                         (unsigned long long)bad);
    }
    return true;
}

static bool run_events(replay_state *s)
{
    const trace *t = s->t;
    const replay_config *cfg = s->cfg;
    replay_result *out = s->out;
    /* Backends that hold bytes get every allocation checked. */
    bool host = replay_backend_has_bytes(cfg->backend);
    bool watch = cfg->record || host; /* read stats after every event */
    uint64_t relocations = 0;
    for (size_t i = 0; i < t->event_count; i++) {
        const trace_event *e = &t->events[i];
        relo_status st;
        uint64_t t0, t1;
        if (e->kind == TRACE_ALLOC) {
            relo_handle h = {0};
            t0 = replay_now_ns();
            st = relo_reserve(s->streams[e->stream], e->size, &h);
            t1 = replay_now_ns();
            if (st != RELO_OK)
                return failf(s, st, i, "relo_reserve(%llu bytes) of allocation %u: %s",
                             (unsigned long long)e->size, e->alloc + 1u, relo_status_string(st));
            s->handles[e->alloc] = h;
            if (s->latencies) s->latencies[s->latency_count++] = t1 - t0;
            if (host) {
                s->live_pos[e->alloc] = (uint32_t)s->live_count;
                s->live_list[s->live_count++] = i;
                st = pattern_write(s->device, h, e->alloc + 1ull, e->size, cfg->verify_full);
                if (st != RELO_OK)
                    return failf(s, st, i, "relo_write into allocation %u: %s", e->alloc + 1u,
                                 relo_status_name(st));
            }
        } else {
            relo_handle h = s->handles[e->alloc];
            if (host) {
                uint64_t bad = 0;
                st = pattern_check(s->device, h, e->alloc + 1ull, e->size, cfg->verify_full, &bad);
                out->verified++;
                if (st != RELO_OK)
                    return failf(s, st, i, "allocation %u: %s at offset %llu when freed", e->alloc + 1u,
                                 st == RELO_ERR_CORRUPT ? "bytes differ" : relo_status_name(st),
                                 (unsigned long long)bad);
                uint32_t pos = s->live_pos[e->alloc];
                size_t last = s->live_list[--s->live_count];
                s->live_list[pos] = last;
                s->live_pos[t->events[last].alloc] = pos;
            }
            t0 = replay_now_ns();
            st = relo_release(s->device, h);
            t1 = replay_now_ns();
            if (st != RELO_OK)
                return failf(s, st, i, "relo_release of allocation %u: %s", e->alloc + 1u,
                             relo_status_string(st));
            s->handles[e->alloc].id = 0;
        }
        uint64_t dt = t1 - t0;
        out->call_ns += dt;
        if (dt > out->longest_call_ns) {
            out->longest_call_ns = dt;
            out->longest_call_event = i;
        }
        out->events_done = i + 1;
        if (watch) {
            relo_stats st_now;
            relo_device_stats(s->device, &st_now);
            if (st_now.bytes_in_use > out->peak_live) {
                out->peak_live = st_now.bytes_in_use;
                out->peak_event = i;
            }
            if (st_now.bytes_outdated > out->peak_outdated) out->peak_outdated = st_now.bytes_outdated;
            out->live_event_sum += (double)st_now.bytes_in_use;
            out->reserved_event_sum += (double)st_now.bytes_reserved;
            if (cfg->record)
                sampler_add(&out->samples, i, st_now.bytes_in_use, st_now.bytes_reserved,
                            st_now.bytes_outdated);
            if (st_now.relocations > relocations) {
                if (cfg->record) sampler_relocation(&out->samples, st_now.relocations - relocations);
                relocations = st_now.relocations;
                if (host && !verify_all(s, i)) return false;
            }
            if (cfg->record && cfg->observer) {
                replay_view v = {i, t, s->device, s->streams, s->handles, &st_now};
                cfg->observer->after_event(cfg->observer->ctx, &v);
            }
        }
        if (cfg->progress) progress_update(cfg->progress, i + 1);
    }
    return true;
}

bool replay_run(const trace *t, const replay_config *cfg, replay_result *out)
{
    memset(out, 0, sizeof *out);
    out->status = RELO_OK;
    replay_state s;
    memset(&s, 0, sizeof s);
    s.t = t;
    s.cfg = cfg;
    s.out = out;
    bool ok = setup(&s) && run_events(&s);
    if (s.device) relo_device_stats(s.device, &out->stats);
    out->peak_reserved = out->stats.peak_bytes_reserved;
    out->end_live = out->stats.bytes_in_use;
    out->end_reserved = out->stats.bytes_reserved;
    if (!cfg->record && !replay_backend_has_bytes(cfg->backend)) out->peak_live = t->peak_live_bytes;
    if (cfg->record) sampler_finish(&out->samples);
    if (s.latencies && s.latency_count) {
        qsort(s.latencies, s.latency_count, sizeof *s.latencies, cmp_u64);
        out->reserve_p50_ns = s.latencies[(s.latency_count - 1) / 2];
        out->reserve_p99_ns = s.latencies[(s.latency_count - 1) * 99 / 100];
    }
    teardown(&s, ok);
    return ok && out->status == RELO_OK;
}

void replay_result_free(replay_result *r)
{
    sampler_free(&r->samples);
}
