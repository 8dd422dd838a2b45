/*
 * report.h — what relo-replay tells about one replay: a table for people,
 * or a JSON object for machines (CI checks reserved ≥ live on its samples).
 */
#ifndef RELO_TOOLS_REPORT_H
#define RELO_TOOLS_REPORT_H

#include <stdio.h>

#include "baseline.h"
#include "fit.h"
#include "options.h"
#include "replay.h"
#include "sweep.h"
#include "trace.h"

typedef struct report {
    const char *path; /**< the trace's file */
    const trace *t;
    const options *o;
    uint64_t capacity;                 /**< capacity of the reported replay; 0 = unlimited */
    const replay_result *r;            /**< the reported replay */
    const fit_result *fit;             /**< NULL without --fit */
    const sweep_result *sweep;         /**< NULL without --sweep */
    double wall_s;                     /**< seconds for this trace, fit included */
    const baseline_measure *baselines; /**< --baseline runs, beside relo's */
    int baseline_count;
    const replay_result *at_fit; /**< with --fit: a recorded replay at the fit capacity (may be r) */
} report;

/** Writes the table to f. */
void report_text(FILE *f, const report *rep);

/** Writes one JSON object (no trailing newline) to f. */
void report_json(FILE *f, const report *rep);

/**
 * Writes the JSON object of a trace that could not be read (no trailing
 * newline): {"trace": null, "file", "ok": false, "status": "unreadable",
 * "error": the reader's sentence, "line": its line or null}.
 */
void report_json_unreadable(FILE *f, const char *path, const trace_error *err);

/** Writes s as a JSON string literal, quotes included. */
void report_json_string(FILE *f, const char *s);

/** Device calls per 1,000 events done (0 when no event was done): how
 *  often a real device's allocator would be asked. */
double report_per_1k_events(uint64_t calls, uint64_t events_done);

/** Time-averaged reserved ÷ live of a recorded replay: bytes reserved
 *  summed over its events ÷ bytes live summed over them (0 when nothing
 *  was live, or the replay kept no sums). */
double report_time_avg_ratio(const replay_result *r);

/** Bytes relocation copied ÷ bytes the trace allocated (0 when none were). */
double report_moved_ratio(const replay_result *r);

#endif /* RELO_TOOLS_REPORT_H */
