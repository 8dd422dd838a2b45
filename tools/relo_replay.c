/*
 * relo_replay.c — relo-replay: replays allocation traces on a relo device
 * and reports memory, relocation and time (see options.c for the usage).
 *
 * Each trace is read whole (events in memory, text streamed), replayed
 * once with full recording, and, with --fit, replayed again on smaller
 * devices by bisection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "options.h"
#include "progress.h"
#include "relo.h"
#include "replay.h"
#include "report.h"
#include "svg.h"
#include "sweep.h"
#include "trace_reader.h"

/* Events past which a single replay earns a progress bar. */
#define PROGRESS_MIN_EVENTS 50000u

/* FILE with "-name" inserted before its extension, for several traces. */
static void svg_path_for(const char *file, const char *name, int many, char *out, size_t cap)
{
    if (!many) {
        snprintf(out, cap, "%s", file);
        return;
    }
    const char *slash = strrchr(file, '/');
    const char *dot = strrchr(file, '.');
    if (!dot || (slash && dot < slash)) dot = file + strlen(file);
    snprintf(out, cap, "%.*s-%s%s", (int)(dot - file), file, name, dot);
}

static replay_config base_config(const options *o, progress *bar)
{
    replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = o->backend;
    cfg.layout = o->layout;
    cfg.relocation = o->relocation;
    cfg.policy = o->policy;
    cfg.granule = o->granule;
    cfg.verify_full = o->verify_full;
    cfg.progress = bar->enabled ? bar : NULL;
    return cfg;
}

/* The sweep's range in bytes: multiples of peak live, from the fit
 * capacity when asked. Returns false (with a sentence) when it has none. */
static bool sweep_range(const options *o, const trace *t, const fit_result *fit, uint64_t *from,
                        uint64_t *to, uint64_t *step, char *msg, size_t cap)
{
    double peak = (double)(t->peak_live_bytes ? t->peak_live_bytes : 1);
    if (o->sweep_from_fit) {
        if (!fit->found) {
            snprintf(msg, cap, "no fit capacity to start from: %.260s", fit->error);
            return false;
        }
        *from = fit->capacity;
    } else {
        *from = (uint64_t)(peak * o->sweep_from + 0.5);
    }
    *to = (uint64_t)(peak * o->sweep_to + 0.5);
    *step = (uint64_t)(peak * o->sweep_step + 0.5);
    if (*step == 0) *step = 1;
    return true;
}

/* Replays one trace as the options ask; returns the exit status it earns. */
static int replay_one(const options *o, const char *path, const trace *t, bool *first_json)
{
    progress bar;
    progress_init(&bar, !o->quiet && (o->fit || t->event_count >= PROGRESS_MIN_EVENTS));
    replay_config cfg = base_config(o, &bar);
    uint64_t start = replay_now_ns();
    fit_result fit;
    memset(&fit, 0, sizeof fit);
    uint64_t capacity = o->capacity;
    replay_result main_run;
    bool have_main = false;

    if (o->fit) {
        /* An unlimited replay bounds the search from above; when the
         * report is of an unlimited replay too, it is the reported one. */
        replay_config first = cfg;
        first.capacity = 0;
        first.record = !o->capacity_auto && o->capacity == 0;
        if (first.progress) progress_begin(first.progress, t->name, t->event_count);
        replay_run(t, &first, &main_run);
        if (first.progress) progress_end(first.progress);
        uint64_t hint = main_run.peak_reserved;
        if (main_run.status == RELO_OK) {
            fit_search(t, &cfg, hint, &fit);
        } else {
            fit.status = main_run.status;
            snprintf(fit.error, sizeof fit.error, "the unlimited replay failed: %.260s", main_run.error);
        }
        if (first.record || main_run.status != RELO_OK) {
            have_main = true;
        } else {
            replay_result_free(&main_run);
        }
        if (o->capacity_auto) {
            if (!fit.found) {
                fprintf(stderr, "%s: no fit capacity: %s\n", path, fit.error);
            } else {
                capacity = fit.capacity;
            }
        }
    }
    sweep_result sweep;
    memset(&sweep, 0, sizeof sweep);
    bool swept = false;
    if (o->sweep) {
        uint64_t from, to, step;
        if (sweep_range(o, t, &fit, &from, &to, &step, sweep.error, sizeof sweep.error)) {
            swept = sweep_run(t, &cfg, from, to, step, &sweep);
        } else {
            sweep.status = RELO_ERR_INVALID_ARGUMENT;
        }
    }
    if (!have_main) {
        replay_config run = cfg;
        run.capacity = capacity;
        run.record = true;
        if (run.progress) progress_begin(run.progress, t->name, t->event_count);
        replay_run(t, &run, &main_run);
        if (run.progress) progress_end(run.progress);
    }
    report rep = {path, t, o, have_main && o->fit ? 0 : capacity, &main_run, o->fit ? &fit : NULL,
                  o->sweep ? &sweep : NULL, (double)(replay_now_ns() - start) / 1e9};
    if (o->json) {
        if (!*first_json) fputs(",\n", stdout);
        report_json(stdout, &rep);
        *first_json = false;
    } else if (!o->quiet) {
        report_text(stdout, &rep);
    }
    int status = 0;
    if (main_run.status != RELO_OK) {
        fprintf(stderr, "%s: replay failed at event %llu: %s\n", path,
                (unsigned long long)main_run.failed_event + 1, main_run.error);
        status = 1;
    }
    if (o->fit && !fit.found) {
        if (fit.status != RELO_OK && main_run.status == RELO_OK)
            fprintf(stderr, "%s: fit search failed: %s\n", path, fit.error);
        status = 1;
    }
    if (o->sweep && !swept) {
        if (sweep.status != RELO_OK)
            fprintf(stderr, "%s: sweep stopped: %s\n", path, sweep.error);
        for (unsigned i = 0; i < sweep.failed && i < SWEEP_MAX_NAMED; i++)
            fprintf(stderr, "%s: out of memory at capacity %llu (%.4f x peak live)\n", path,
                    (unsigned long long)sweep.failed_at[i],
                    (double)sweep.failed_at[i] / (double)(t->peak_live_bytes ? t->peak_live_bytes : 1));
        status = 1;
    }
    if (o->svg) {
        char file[4096];
        svg_path_for(o->svg, t->name, o->trace_count > 1, file, sizeof file);
        if (!main_run.samples.points) {
            fprintf(stderr, "%s: no timeline recorded, %s not written\n", path, file);
        } else if (!svg_write(file, &rep)) {
            perror(file);
            status = 1;
        }
    }
    replay_result_free(&main_run);
    return status;
}

int main(int argc, char **argv)
{
    options o;
    options_result parsed = options_parse(argc, argv, &o);
    if (parsed == OPTIONS_EXIT_OK) return 0;
    if (parsed != OPTIONS_RUN) return 2;
    if (!replay_backend_available(o.backend)) {
        fprintf(stderr, "relo-replay: the %s backend was not built into this relo-replay\n",
                replay_backend_name(o.backend));
        return 2;
    }
    int status = 0;
    bool first_json = true;
    if (o.json) fputs("{\"tool\":\"relo-replay\",\"version\":\"" RELO_VERSION_STRING "\",\"traces\":[\n", stdout);
    for (int i = 0; i < o.trace_count; i++) {
        trace t;
        trace_error err;
        if (!trace_read_file(o.traces[i], o.format, &t, &err)) {
            trace_error_print(&err);
            trace_free(&t);
            status = 2;
            continue;
        }
        if (!o.json && !o.quiet && i > 0) fputc('\n', stdout);
        int s = replay_one(&o, o.traces[i], &t, &first_json);
        if (s > status) status = s;
        trace_free(&t);
    }
    if (o.json) fputs("\n]}\n", stdout);
    return status;
}
