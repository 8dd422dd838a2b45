/*
 * baseline.c — the replay loop, the fit search and the names of the
 * baseline models (see baseline.h). The loop owns live bytes and the
 * timeline; each model (torch_classic.c, torch_expandable.c) owns its
 * blocks and its reserved bytes.
 */
#include "baseline.h"

#include <string.h>

#include "baseline_model.h"
#include "torch_classic.h"
#include "torch_expandable.h"

#define MIB (UINT64_C(1) << 20)

/* The most times the fit search raises an upper bound that did not complete. */
#define MAX_RAISES 1000

static const char *const kind_names[BASELINE_KIND_COUNT] = {"pytorch", "pytorch-expandable"};

const char *baseline_kind_name(baseline_kind k)
{
    return (unsigned)k < BASELINE_KIND_COUNT ? kind_names[k] : "?";
}

const char *baseline_status_name(baseline_status s)
{
    static const char *const names[BASELINE_STATUS_COUNT] = {"completed", "out_of_memory", "failed"};
    return (unsigned)s < BASELINE_STATUS_COUNT ? names[s] : "?";
}

bool baseline_kind_parse(const char *name, baseline_kind *out)
{
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (baseline_kind)k;
            return true;
        }
    }
    return false;
}

static const baseline_model_ops *ops_of(baseline_kind k)
{
    return k == BASELINE_PYTORCH_EXPANDABLE ? &torch_expandable_ops : &torch_classic_ops;
}

bool baseline_replay(baseline_kind k, const trace *t, uint64_t capacity, size_t samples_max,
                     baseline_run *out)
{
    memset(out, 0, sizeof *out);
    out->kind = k;
    out->capacity = capacity;
    out->status = BASELINE_FAILED;
    const baseline_model_ops *ops = ops_of(k);
    if (samples_max && !sampler_init(&out->samples, t->event_count, samples_max)) return false;
    void *m = ops->create(t, capacity);
    if (!m) return false;
    uint64_t live = 0;
    baseline_step step = BASELINE_STEP_OK;
    size_t i;
    for (i = 0; i < t->event_count; i++) {
        const trace_event *e = &t->events[i];
        if (e->kind == TRACE_ALLOC) {
            step = ops->alloc(m, e->alloc, e->stream, e->size);
            if (step != BASELINE_STEP_OK) break;
            live += e->size;
            if (live > out->peak_live) out->peak_live = live;
        } else {
            step = ops->release(m, e->alloc);
            if (step != BASELINE_STEP_OK) break;
            live -= e->size <= live ? e->size : live;
        }
        uint64_t held = ops->reserved(m);
        out->live_event_sum += (double)live;
        out->reserved_event_sum += (double)held;
        if (samples_max) sampler_add(&out->samples, i, live, held, 0);
    }
    out->events_done = i;
    out->peak_reserved = ops->peak_reserved(m);
    out->end_live = live;
    out->end_reserved = ops->reserved(m);
    ops->device_calls(m, &out->device_allocs, &out->device_frees);
    if (samples_max) sampler_finish(&out->samples);
    ops->destroy(m);
    if (step == BASELINE_STEP_OK) {
        out->status = BASELINE_COMPLETED;
        return true;
    }
    out->status = step == BASELINE_STEP_OUT_OF_MEMORY ? BASELINE_OUT_OF_MEMORY : BASELINE_FAILED;
    out->failed_event = i;
    return false;
}

void baseline_run_free(baseline_run *r)
{
    sampler_free(&r->samples);
}

/* One replay at capacity without a timeline: its status. */
static baseline_status try_capacity(baseline_kind k, const trace *t, uint64_t capacity, baseline_fit *out)
{
    baseline_run r;
    baseline_replay(k, t, capacity, 0, &r);
    out->replays++;
    baseline_run_free(&r);
    return r.status;
}

bool baseline_fit_search(baseline_kind k, const trace *t, uint64_t upper, baseline_fit *out)
{
    memset(out, 0, sizeof *out);
    uint64_t live = t->peak_live_bytes;
    uint64_t lo = live, hi = upper > live ? upper : live;
    /* A capacity of 0 would mean unlimited: the smallest tried is 1 byte. */
    if (hi == 0) hi = 1;
    /* The unlimited peak need not complete once the device is finite (an
     * expandable segment's address range is sized from the capacity). */
    for (int raise = 0;; raise++) {
        baseline_status s = try_capacity(k, t, hi, out);
        if (s == BASELINE_COMPLETED) break;
        if (s == BASELINE_FAILED || raise == MAX_RAISES || hi > UINT64_MAX / 2) {
            out->status = s;
            return false;
        }
        lo = out->failed_below = hi;
        hi += hi / 50 > 2 * MIB ? hi / 50 : 2 * MIB;
    }
    uint64_t tolerance = live / 200 > 2 * MIB ? live / 200 : 2 * MIB;
    while (hi - lo > tolerance) {
        uint64_t mid = lo + (hi - lo) / 2;
        baseline_status s = try_capacity(k, t, mid, out);
        if (s == BASELINE_FAILED) {
            out->status = s;
            return false;
        }
        if (s == BASELINE_COMPLETED)
            hi = mid;
        else
            lo = out->failed_below = mid;
    }
    out->found = true;
    out->capacity = hi;
    out->status = BASELINE_COMPLETED;
    return true;
}

bool baseline_measure_run(baseline_kind k, const trace *t, uint64_t capacity, bool fit, size_t samples_max,
                          baseline_measure *out)
{
    memset(out, 0, sizeof *out);
    out->kind = k;
    out->fitted = fit;
    baseline_replay(k, t, capacity, samples_max, &out->run);
    if (out->run.status == BASELINE_FAILED) return false;
    if (!fit) return true;
    uint64_t upper = out->run.peak_reserved;
    if (capacity != 0) {
        baseline_run unlimited;
        baseline_replay(k, t, 0, 0, &unlimited);
        upper = unlimited.peak_reserved;
        baseline_run_free(&unlimited);
        if (unlimited.status != BASELINE_COMPLETED) {
            out->fit.status = unlimited.status;
            return unlimited.status != BASELINE_FAILED;
        }
    } else if (out->run.status != BASELINE_COMPLETED) {
        out->fit.status = out->run.status;
        return true;
    }
    return baseline_fit_search(k, t, upper, &out->fit) || out->fit.status != BASELINE_FAILED;
}

void baseline_measure_free(baseline_measure *m)
{
    baseline_run_free(&m->run);
}
