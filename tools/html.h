/*
 * html.h — relo-replay's interactive report: one self-contained HTML page
 * (inline script, style and data; nothing fetched) with the timeline of
 * several runs, page maps at kept events, and the relocations.
 */
#ifndef RELO_TOOLS_HTML_H
#define RELO_TOOLS_HTML_H

#include <stdbool.h>
#include <stdint.h>

#include "baseline.h"
#include "html_record.h"
#include "replay.h"
#include "trace.h"

/** One relo replay on the timeline. */
typedef struct html_run {
    char name[64];              /**< e.g. "relo seed, unlimited" */
    const replay_result *r;
} html_run;

typedef struct html_report {
    const trace *t;
    uint64_t capacity;          /**< of the first run; 0 = unlimited */
    const html_run *runs;       /**< runs[0] is the reported replay, recorded by rec */
    int run_count;
    const baseline_measure *baselines;
    int baseline_count;
    const html_record *rec;
} html_report;

/** Writes the page to path. Returns false (errno set) when it cannot be written. */
bool html_write(const char *path, const html_report *rep);

#endif /* RELO_TOOLS_HTML_H */
