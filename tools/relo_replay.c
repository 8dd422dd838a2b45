/*
 * relo_replay.c — relo-replay: replays allocation traces on a relo device
 * and reports memory, relocation and time (see options.c for the usage).
 *
 * Each trace is read whole (events in memory, text streamed), replayed
 * once with full recording, and, with --fit, replayed again on smaller
 * devices by bisection.
 */
#include <errno.h>
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
#include "trace_reader.h"

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
    if (same > 0) snprintf(out, cap, "%.*s-%s-%d%s", (int)(dot - file), file, name, same + 1, dot);
    else snprintf(out, cap, "%.*s-%s%s", (int)(dot - file), file, name, dot);
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
    cfg.layout = o->layout;
    cfg.relocation = o->relocation;
    cfg.policy = o->policy;
    cfg.verify_full = o->verify_full;
    cfg.progress = bar->enabled ? bar : NULL;
    return cfg;
}

/* Replays one trace as the options ask; returns the exit status it earns. */
static int replay_one(const options *o, const char *path, const trace *t, int same, bool *first_json)
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
    if (!have_main) {
        replay_config run = cfg;
        run.capacity = capacity;
        run.record = true;
        if (run.progress) progress_begin(run.progress, t->name, t->event_count);
        replay_run(t, &run, &main_run);
        if (run.progress) progress_end(run.progress);
    }
    report rep = {path, t, o, have_main && o->fit ? 0 : capacity, &main_run, o->fit ? &fit : NULL,
                  (double)(replay_now_ns() - start) / 1e9};
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
    replay_result_free(&main_run);
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
    int status = 0;
    bool first_json = true;
    if (o.json) fputs("{\"tool\":\"relo-replay\",\"version\":\"" RELO_VERSION_STRING "\",\"traces\":[\n", stdout);
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
        int s = replay_one(&o, o.traces[i], &t, same_name_before(o.traces, i), &first_json);
        if (s > status) status = s;
        trace_free(&t);
    }
    if (o.json) fputs("\n]}\n", stdout);
    return status;
}
