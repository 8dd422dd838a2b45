/*
 * relo_replay.c — relo-replay: replays allocation traces on a relo device
 * and reports memory, relocation and time (see options.c for the usage).
 *
 * Each trace is read whole (events in memory, text streamed), replayed
 * once with full recording, and, with --fit, replayed again on smaller
 * devices by bisection. --table measures many traces into one summary
 * table instead (table.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "fit.h"
#include "html.h"
#include "options.h"
#include "progress.h"
#include "relo.h"
#include "replay.h"
#include "report.h"
#include "svg.h"
#include "sweep.h"
#include "table.h"
#include "trace_reader.h"
#include "units.h"

/* Events past which a single replay earns a progress bar. */
#define PROGRESS_MIN_EVENTS 50000u

/* Exit statuses (documented in --help and docs/relo-replay.md). */
enum { EXIT_REPLAY_FAILED = 1, EXIT_USAGE = 2, EXIT_OUTPUT = 3 };

/* FILE with "-name" inserted before its extension, for several traces;
 * "-name-N" for the Nth trace of a name already used (same = N - 1), so
 * two traces of one name never write one file. */
static void svg_path_for(const char *file, const char *name, int many, int same, char *out, size_t cap)
{
    if (!many) {
        snprintf(out, cap, "%s", file);
        return;
    }
    const char *slash = strrchr(file, '/');
    const char *dot = strrchr(file, '.');
    if (!dot || (slash && dot < slash)) dot = file + strlen(file);
    if (same > 0)
        snprintf(out, cap, "%.*s-%s-%d%s", (int)(dot - file), file, name, same + 1, dot);
    else
        snprintf(out, cap, "%.*s-%s%s", (int)(dot - file), file, name, dot);
}

/* How many of the traces before index i have the name trace i has. */
static int same_name_before(char **paths, int i)
{
    trace a, b;
    trace_set_name_from_path(&a, strcmp(paths[i], "-") == 0 ? "stdin" : paths[i]);
    int n = 0;
    for (int j = 0; j < i; j++) {
        trace_set_name_from_path(&b, strcmp(paths[j], "-") == 0 ? "stdin" : paths[j]);
        if (strcmp(a.name, b.name) == 0) n++;
    }
    return n;
}

static replay_config base_config(const options *o, progress *bar)
{
    replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = o->backend;
    cfg.placement = o->placement;
    cfg.relocation = o->relocation;
    cfg.cache_limit = o->cache_limit;
    cfg.granule = o->granule;
    cfg.verify_full = o->verify_full;
    cfg.progress = bar->enabled ? bar : NULL;
    return cfg;
}

/* Replays t through each baseline --baseline asked for, on the capacity of
 * relo's reported replay (0 = unlimited), fit included with --fit. Returns
 * how many it filled in out. A failure other than out of memory is said on
 * stderr and sets *failed. */
static int run_baselines(const options *o, const char *path, const trace *t, uint64_t capacity,
                         baseline_measure *out, bool *failed)
{
    int n = 0;
    *failed = false;
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) {
        if (!o->baselines[k]) continue;
        if (!baseline_measure_run((baseline_kind)k, t, capacity, o->fit, REPLAY_MAX_SAMPLES, &out[n])) {
            fprintf(stderr, "%s: the %s baseline failed (host memory or a model limit)\n", path,
                    baseline_kind_name((baseline_kind)k));
            *failed = true;
        }
        n++;
    }
    return n;
}

/* Writes --html (html.h: the verdict, every run on one timeline, page maps
 * and relocations). Returns false when the file cannot be written. */
static bool write_html(const options *o, const trace *t, int same, const report *rep, const html_record *rec)
{
    char file[4096];
    svg_path_for(o->html, t->name, o->trace_count > 1, same, file, sizeof file);
    bool ok = html_write(file, rep, rec);
    if (!ok)
        perror(file);
    else if (!o->quiet && !o->json)
        printf("  %-26s %s\n", "interactive report", file);
    return ok;
}

/* The sweep's range in bytes: multiples of peak live, from the fit
 * capacity when asked. Returns false (with a sentence) when it has none. */
static bool sweep_range(const options *o, const trace *t, const fit_result *fit, uint64_t *from, uint64_t *to,
                        uint64_t *step, char *msg, size_t cap)
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
static int replay_one(const options *o, const char *path, const trace *t, int same, bool *first_json)
{
    progress bar;
    progress_init(&bar, !o->quiet && (o->fit || t->event_count >= PROGRESS_MIN_EVENTS));
    replay_config cfg = base_config(o, &bar);
    /* --html: the reported replay (the only one that records) is watched. */
    html_record rec;
    bool have_rec = o->html && html_record_init(&rec, t);
    if (o->html && !have_rec) fprintf(stderr, "%s: out of host memory for the HTML report\n", path);
    if (have_rec) cfg.observer = &rec.observer;
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
    uint64_t reported_capacity = have_main && o->fit ? 0 : capacity;
    /* With --fit, memory over time is reported at the fit capacity too. */
    replay_result fit_run;
    bool have_fit_run = false;
    if (o->fit && fit.found && fit.capacity != reported_capacity) {
        replay_config run = cfg;
        run.capacity = fit.capacity;
        run.record = true;
        run.observer = NULL;
        run.progress = NULL;
        replay_run(t, &run, &fit_run);
        have_fit_run = true;
    }
    baseline_measure baselines[BASELINE_KIND_COUNT];
    bool baseline_failed;
    int baseline_count = run_baselines(o, path, t, reported_capacity, baselines, &baseline_failed);
    report rep = {path,
                  t,
                  o,
                  reported_capacity,
                  &main_run,
                  o->fit ? &fit : NULL,
                  o->sweep ? &sweep : NULL,
                  (double)(replay_now_ns() - start) / 1e9,
                  baselines,
                  baseline_count,
                  have_fit_run ? &fit_run : (o->fit && fit.found ? &main_run : NULL)};
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
        status = EXIT_REPLAY_FAILED;
    }
    if (o->fit && !fit.found) {
        if (fit.status != RELO_OK && main_run.status == RELO_OK)
            fprintf(stderr, "%s: fit search failed: %s\n", path, fit.error);
        status = EXIT_REPLAY_FAILED;
    }
    if (o->sweep && !swept) {
        if (sweep.status != RELO_OK) fprintf(stderr, "%s: sweep stopped: %s\n", path, sweep.error);
        for (unsigned i = 0; i < sweep.failed && i < SWEEP_MAX_NAMED; i++)
            fprintf(stderr, "%s: out of memory at capacity %llu (%.4f x peak live)\n", path,
                    (unsigned long long)sweep.failed_at[i],
                    (double)sweep.failed_at[i] / (double)(t->peak_live_bytes ? t->peak_live_bytes : 1));
        status = 1;
    }
    if (o->svg) {
        char file[4096];
        svg_path_for(o->svg, t->name, o->trace_count > 1, same, file, sizeof file);
        if (!main_run.samples.points) {
            fprintf(stderr, "%s: no timeline recorded, %s not written\n", path, file);
        } else if (!svg_write(file, &rep)) {
            fprintf(stderr, "%s: cannot write the SVG: %s\n", file, strerror(errno));
            status = EXIT_OUTPUT;
        } else if (!o->quiet) {
            fprintf(stderr, "%s: timeline written to %s\n", path, file);
        }
    }
    if (have_rec) {
        if (!write_html(o, t, same, &rep, &rec) && status < EXIT_OUTPUT) status = EXIT_OUTPUT;
        html_record_free(&rec);
    }
    if (baseline_failed && status < EXIT_REPLAY_FAILED) status = EXIT_REPLAY_FAILED;
    for (int i = 0; i < baseline_count; i++) baseline_measure_free(&baselines[i]);
    if (have_fit_run) replay_result_free(&fit_run);
    replay_result_free(&main_run);
    return status;
}

/* --table: one row per trace (folders expanded), measured by table.c.
 * Returns the exit status, as replay_one's are combined in main. */
static int run_table(const options *o)
{
    table_paths list;
    if (!table_paths_expand(o->traces, o->trace_count, &list)) return EXIT_USAGE;
    progress bar;
    progress_init(&bar, !o->quiet);
    replay_config cfg = base_config(o, &bar);
    int status = 0, rows = 0;
    table_begin(stdout, o);
    for (int i = 0; i < list.count; i++) {
        const char *path = list.paths[i];
        trace t;
        trace_error err;
        if (!trace_read_path(path, o->format, o->max_events, &t, &err)) {
            trace_error_print(&err);
            table_write_unreadable(stdout, o, path, &err, rows++);
            trace_free(&t);
            if (status < EXIT_USAGE) status = EXIT_USAGE;
            continue;
        }
        trace_print_warnings(&t, strcmp(path, "-") == 0 ? "stdin" : path, stderr);
        table_row row;
        if (!table_measure(&t, path, &cfg, &row)) {
            for (int k = 0; k < TABLE_RUN_COUNT; k++)
                if (row.runs[k].error[0])
                    fprintf(stderr, "%s: %s: %s\n", path, table_run_kind_name((table_run_kind)k),
                            row.runs[k].error);
            if (status < EXIT_REPLAY_FAILED) status = EXIT_REPLAY_FAILED;
        }
        table_write_row(stdout, o, &row, rows++);
        fflush(stdout);
        trace_free(&t);
    }
    table_end(stdout, o);
    table_paths_free(&list);
    return status;
}

int main(int argc, char **argv)
{
    options o;
    options_result parsed = options_parse(argc, argv, &o);
    if (parsed == OPTIONS_EXIT_OK) return 0;
    if (parsed != OPTIONS_RUN) return EXIT_USAGE;
    if (!replay_backend_available(o.backend)) {
        fprintf(stderr, "relo-replay: the %s backend was not built into this relo-replay\n",
                replay_backend_name(o.backend));
        return EXIT_USAGE;
    }
    if (o.table != OPTIONS_TABLE_NONE) return run_table(&o);
    int status = 0;
    bool first_json = true;
    if (o.json)
        fputs("{\"tool\":\"relo-replay\",\"version\":\"" RELO_VERSION_STRING "\",\"traces\":[\n", stdout);
    for (int i = 0; i < o.trace_count; i++) {
        trace t;
        trace_error err;
        if (!trace_read_path(o.traces[i], o.format, o.max_events, &t, &err)) {
            trace_error_print(&err);
            if (o.json) {
                if (!first_json) fputs(",\n", stdout);
                report_json_unreadable(stdout, o.traces[i], &err);
                first_json = false;
            }
            trace_free(&t);
            if (status < EXIT_USAGE) status = EXIT_USAGE;
            continue;
        }
        trace_print_warnings(&t, strcmp(o.traces[i], "-") == 0 ? "stdin" : o.traces[i], stderr);
        if (!o.json && !o.quiet && i > 0) fputc('\n', stdout);
        /* Messages name the file escaped: its name may hold control bytes. */
        char shown[4 * TRACE_NAME_MAX];
        trace_escape_name(o.traces[i], shown, sizeof shown);
        int s = replay_one(&o, shown, &t, same_name_before(o.traces, i), &first_json);
        if (s > status) status = s;
        trace_free(&t);
    }
    if (o.json) fputs("\n]}\n", stdout);
    return status;
}
