/*
 * fit.c — capacity bisection (see fit.h).
 */
#include "fit.h"

#include <stdio.h>
#include <string.h>

#include "units.h"

/* Replays bisection needs to bring [lo, hi] within tolerance. */
static unsigned halvings(uint64_t lo, uint64_t hi, uint64_t grain)
{
    unsigned n = 0;
    double gap = (double)(hi - lo);
    while (gap > (double)grain && gap > (double)lo * FIT_TOLERANCE && n < 64) {
        gap /= 2;
        n++;
    }
    return n;
}

/* One replay at capacity: 1 = completed, 0 = out of memory, -1 = error.
 * expected is the number of replays the search is now expected to take. */
static int try_capacity(const trace *t, const replay_config *base, uint64_t capacity, unsigned expected,
                        fit_result *out)
{
    replay_config cfg = *base;
    cfg.capacity = capacity;
    cfg.record = false;
    if (cfg.progress) {
        char label[96], cap[32];
        unsigned k = out->replays + 1;
        /* What changes first, so a narrow terminal cuts the name instead. */
        snprintf(label, sizeof label, "fit try %u of %s%u, %s: %.40s", k, expected > k ? "~" : "",
                 expected > k ? expected : k, units_format_bytes(capacity, cap, sizeof cap), t->name);
        progress_begin(cfg.progress, label, t->event_count);
    }
    replay_result r;
    bool ok = replay_run(t, &cfg, &r);
    out->replays++;
    int verdict = ok ? 1 : r.status == RELO_ERR_OUT_OF_MEMORY ? 0 : -1;
    if (verdict < 0) {
        out->status = r.status;
        snprintf(out->error, sizeof out->error, "at capacity %llu, event %llu: %.240s",
                 (unsigned long long)capacity, (unsigned long long)r.failed_event + 1, r.error);
    }
    replay_result_free(&r);
    return verdict;
}

uint64_t fit_capacity_step(const replay_config *cfg)
{
    if (cfg->backend != REPLAY_BACKEND_SIM && cfg->backend != REPLAY_BACKEND_HOST) return 1;
    return cfg->granule ? cfg->granule : 1;
}

/* x rounded up to a multiple of step, or x when that would wrap. */
static uint64_t up_to(uint64_t x, uint64_t step)
{
    uint64_t r = x % step;
    return r == 0 || x > UINT64_MAX - (step - r) ? x : x + (step - r);
}

bool fit_search(const trace *t, const replay_config *cfg, uint64_t upper_hint, fit_result *out)
{
    memset(out, 0, sizeof *out);
    uint64_t start = replay_now_ns();
    /* On a device that charges buffers in granules, a capacity between two
     * multiples lends what the lower one does: only multiples are tried,
     * and the search ends at one granule when that is finer than the
     * tolerance (an exact answer for a small trace). */
    uint64_t grain = fit_capacity_step(cfg);
    uint64_t lo = up_to(t->peak_live_bytes ? t->peak_live_bytes : 1, grain);
    uint64_t hi = up_to(upper_hint > lo ? upper_hint : lo + lo / 4 + 1, grain);
    if (hi <= lo) hi = lo + grain;
    /* The expected count: peak live, the hint, then the halvings between. */
    int v = try_capacity(t, cfg, lo, 2 + halvings(lo, hi, grain), out);
    if (v < 0) goto done;
    if (v == 1) {
        out->found = true;
        out->capacity = lo;
        goto done;
    }
    out->failed_below = lo;
    for (int step = 0;; step++) {
        v = try_capacity(t, cfg, hi, out->replays + 1 + halvings(lo, hi, grain), out);
        if (v < 0) goto done;
        if (v == 1) break;
        lo = hi;
        out->failed_below = lo;
        if (step == 12 || hi > UINT64_MAX / 2) {
            out->status = RELO_ERR_OUT_OF_MEMORY;
            snprintf(out->error, sizeof out->error, "ran out of memory even at capacity %llu",
                     (unsigned long long)hi);
            goto done;
        }
        hi = up_to(hi + hi / 4, grain);
    }
    /* lo failed and hi completed: halve the gap until it is within
     * tolerance, or one grain. */
    while (hi - lo > grain && (double)(hi - lo) > (double)lo * FIT_TOLERANCE) {
        uint64_t mid = lo + (hi - lo) / grain / 2 * grain;
        v = try_capacity(t, cfg, mid, out->replays + halvings(lo, hi, grain), out);
        if (v < 0) goto done;
        if (v == 1)
            hi = mid;
        else
            lo = mid;
    }
    out->found = true;
    out->capacity = hi;
    out->failed_below = lo;
done:
    if (cfg->progress) progress_end(cfg->progress);
    out->elapsed_ns = replay_now_ns() - start;
    return out->found;
}
