/*
 * verdict.c — the allocators' summary both pictures state (see verdict.h):
 * which runs there are, and the figures of each.
 */
#include "verdict.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "units.h"

static double per_1k(uint64_t calls, uint64_t events_done)
{
    return events_done ? 1000.0 * (double)calls / (double)events_done : 0.0;
}

/* "94.0 MiB", "fit 94.0 MiB" or "unlimited", for a run's name. */
static void capacity_name(uint64_t capacity, bool at_fit, char *out, size_t cap)
{
    char b[32];
    if (!capacity)
        snprintf(out, cap, "unlimited");
    else
        snprintf(out, cap, "%s%s", at_fit ? "fit " : "", units_format_bytes(capacity, b, sizeof b));
}

static verdict_run *add_run(verdict *v, int row, bool at_fit, uint64_t capacity)
{
    verdict_run *x = &v->runs[v->run_count++];
    memset(x, 0, sizeof *x);
    char cap[40], who[sizeof v->rows[row].name];
    capacity_name(capacity, at_fit, cap, sizeof cap);
    memcpy(who, v->rows[row].name, sizeof who);
    snprintf(x->name, sizeof x->name, "%s, %s", who, cap);
    x->row = row;
    x->relo = v->rows[row].relo;
    x->at_fit = at_fit;
    x->capacity = capacity;
    return x;
}

static void relo_run(verdict *v, int row, bool at_fit, uint64_t capacity, const replay_result *r)
{
    verdict_run *x = add_run(v, row, at_fit, capacity);
    x->ok = r->status == RELO_OK;
    x->out_of_memory = r->status == RELO_ERR_OUT_OF_MEMORY;
    x->failed_event = r->failed_event;
    x->events_done = r->events_done;
    x->peak_held = r->peak_reserved;
    x->time_avg_ratio = r->live_event_sum > 0 ? r->reserved_event_sum / r->live_event_sum : 0.0;
    x->end_held = r->end_reserved;
    x->end_live = r->end_live;
    x->bytes_moved = r->stats.bytes_moved;
    x->device_allocs = r->stats.backend_allocs;
    x->allocs_per_1k = per_1k(r->stats.backend_allocs, r->events_done);
    x->samples = &r->samples;
}

static void model_run(verdict *v, int row, bool at_fit, const baseline_run *r)
{
    verdict_run *x = add_run(v, row, at_fit, r->capacity);
    x->ok = r->status == BASELINE_COMPLETED;
    x->out_of_memory = r->status == BASELINE_OUT_OF_MEMORY;
    x->failed_event = r->failed_event;
    x->events_done = r->events_done;
    x->peak_held = r->peak_reserved;
    x->time_avg_ratio = r->live_event_sum > 0 ? r->reserved_event_sum / r->live_event_sum : 0.0;
    x->end_held = r->end_reserved;
    x->end_live = r->end_live;
    x->device_allocs = r->device_allocs;
    x->allocs_per_1k = per_1k(r->device_allocs, r->events_done);
    x->samples = &r->samples;
}

static verdict_row *add_row(verdict *v, const char *name, bool relo)
{
    verdict_row *w = &v->rows[v->row_count++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->relo = relo;
    w->reported = v->run_count;
    w->measured = -1;
    return w;
}

static void set_fit(verdict *v, verdict_row *w, bool fitted, bool found, uint64_t capacity)
{
    w->fitted = fitted;
    w->fit_found = found;
    w->fit_capacity = found ? capacity : 0;
    w->fit_ratio = found && v->t->peak_live_bytes ? (double)capacity / (double)v->t->peak_live_bytes : 0.0;
}

/* The replay settings relo-replay gives its own runs. */
static replay_config config_of(const options *o, relo_placement placement, uint64_t capacity)
{
    replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = o->backend;
    cfg.placement = placement;
    cfg.relocation = o->relocation;
    cfg.cache_limit = o->cache_limit;
    cfg.granule = o->granule;
    cfg.verify_full = o->verify_full;
    cfg.capacity = capacity;
    cfg.record = true;
    return cfg;
}

static replay_result *own_replay(verdict *v, const replay_config *cfg)
{
    replay_result *r = &v->relo_own[v->relo_own_count++];
    replay_run(v->t, cfg, r);
    return r;
}

/* relo's other placement (adaptive beside packed, the default beside any
 * other): on the reported device, and with --fit, its own fit (searched as
 * relo-replay --fit searches: from an unlimited replay's peak) and a run
 * there when the reported device was too small. */
static void other_placement(verdict *v, const report *rep)
{
    const options *o = rep->o;
    relo_placement own = o->placement == RELO_PLACEMENT_DEFAULT ? RELO_PLACEMENT_PACKED : o->placement;
    relo_placement p = own == RELO_PLACEMENT_PACKED ? RELO_PLACEMENT_ADAPTIVE : RELO_PLACEMENT_PACKED;
    char name[32];
    snprintf(name, sizeof name, "relo %s", options_placement_word(p));
    int row = v->row_count;
    verdict_row *w = add_row(v, name, true);
    replay_config cfg = config_of(o, p, v->capacity);
    const replay_result *at_report = own_replay(v, &cfg);
    relo_run(v, row, false, v->capacity, at_report);
    if (!rep->fit) return;
    fit_result fit;
    uint64_t hint = at_report->peak_reserved;
    if (v->capacity) {
        replay_config unlimited = config_of(o, p, 0);
        unlimited.record = false;
        replay_result u;
        replay_run(v->t, &unlimited, &u);
        hint = u.peak_reserved;
        bool ok = u.status == RELO_OK;
        replay_result_free(&u);
        if (!ok) {
            set_fit(v, w, true, false, 0);
            return;
        }
    } else if (at_report->status != RELO_OK) {
        set_fit(v, w, true, false, 0);
        return;
    }
    fit_search(v->t, &cfg, hint, &fit);
    set_fit(v, w, true, fit.found, fit.capacity);
    if (fit.found && at_report->status != RELO_OK) {
        cfg.capacity = fit.capacity;
        relo_run(v, row, true, fit.capacity, own_replay(v, &cfg));
    }
}

static void baselines(verdict *v, const report *rep)
{
    for (int i = 0; i < rep->baseline_count; i++) {
        const baseline_measure *m = &rep->baselines[i];
        int row = v->row_count;
        verdict_row *w = add_row(v, baseline_kind_name(m->kind), false);
        set_fit(v, w, m->fitted, m->fit.found, m->fit.capacity);
        model_run(v, row, false, &m->run);
        if (m->run.status != BASELINE_COMPLETED && m->fit.found) {
            baseline_run *r = &v->model_own[v->model_own_count++];
            baseline_replay(m->kind, v->t, m->fit.capacity, REPLAY_MAX_SAMPLES, r);
            model_run(v, row, true, r);
        }
    }
}

void verdict_build(verdict *v, const report *rep, bool other)
{
    memset(v, 0, sizeof *v);
    v->t = rep->t;
    v->capacity = rep->capacity;
    char name[32];
    snprintf(name, sizeof name, "relo %s", options_placement_word(rep->o->placement));
    verdict_row *w = add_row(v, name, true);
    set_fit(v, w, rep->fit != NULL, rep->fit && rep->fit->found, rep->fit ? rep->fit->capacity : 0);
    relo_run(v, 0, false, rep->capacity, rep->r);
    if (rep->at_fit && rep->at_fit != rep->r) relo_run(v, 0, true, rep->fit->capacity, rep->at_fit);
    if (other) other_placement(v, rep);
    baselines(v, rep);
    /* Each allocator's figures: its first run that completed, which is the
     * reported one where that did, else the one on its fit capacity. */
    for (int i = 0; i < v->run_count; i++) {
        verdict_row *row = &v->rows[v->runs[i].row];
        if (v->runs[i].ok && row->measured < 0) row->measured = i;
    }
}

void verdict_free(verdict *v)
{
    for (int i = 0; i < v->relo_own_count; i++) replay_result_free(&v->relo_own[i]);
    for (int i = 0; i < v->model_own_count; i++) baseline_run_free(&v->model_own[i]);
    memset(v, 0, sizeof *v);
}

char *verdict_count(uint64_t n, char *out, size_t cap)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, n);
    size_t k = 0;
    for (int i = 0; i < len && k + 1 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0 && k + 2 < cap) out[k++] = ',';
        out[k++] = digits[i];
    }
    if (cap) out[k < cap ? k : cap - 1] = '\0';
    return out;
}

char *verdict_outcome(const verdict *v, const verdict_run *r, char *out, size_t cap)
{
    if (r->ok) {
        snprintf(out, cap, "completed");
        return out;
    }
    char at[32], of[32];
    size_t events = v->t->event_count ? v->t->event_count : 1;
    snprintf(out, cap, "%s at event %s of %s (%.0f %%)", r->out_of_memory ? "out of memory" : "failed",
             verdict_count(r->failed_event + 1, at, sizeof at),
             verdict_count(v->t->event_count, of, sizeof of),
             100.0 * (double)r->failed_event / (double)events);
    return out;
}
