/*
 * baseline_report.h — the baselines' part of relo-replay's report: rows of
 * the text table beside relo's own, and the "baselines" array of the JSON
 * object.
 */
#ifndef RELO_TOOLS_BASELINE_REPORT_H
#define RELO_TOOLS_BASELINE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "baseline.h"
#include "trace.h"

/** relo's figures for the first row of the comparison table. */
typedef struct baseline_relo_row {
    bool ok; /**< relo's reported replay completed */
    uint64_t peak_live;
    uint64_t peak_reserved;
    bool fitted; /**< --fit was asked for */
    bool fit_found;
    uint64_t fit_capacity;
} baseline_relo_row;

/**
 * Writes the comparison table (relo, then each baseline: peak reserved,
 * reserved / live, fit capacity and ratio, how the replay ended) to f.
 * Writes nothing when count is 0.
 */
void baseline_report_text(FILE *f, const trace *t, const baseline_relo_row *relo, const baseline_measure *b,
                          int count);

/**
 * Writes `,"baselines":[...]` (one object per baseline, timeline included)
 * to f, for the inside of a trace's JSON object.
 */
void baseline_report_json(FILE *f, const trace *t, const baseline_measure *b, int count);

#endif /* RELO_TOOLS_BASELINE_REPORT_H */
