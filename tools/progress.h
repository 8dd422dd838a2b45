/*
 * progress.h — a one-line progress bar on stderr, for long replays and
 * fit searches when a person watches a terminal.
 */
#ifndef RELO_TOOLS_PROGRESS_H
#define RELO_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct progress {
    bool enabled;
    uint64_t total;
    uint64_t next;       /* the count at which the bar is redrawn */
    char label[96];
    bool drawn;
} progress;

/** Enables the bar when `wanted` and stderr is a terminal. */
void progress_init(progress *p, bool wanted);

/** Starts a phase of total steps, labelled (e.g. "fit 3: 40.2 GiB"). */
void progress_begin(progress *p, const char *label, uint64_t total);

/** Redraws the bar for done steps (cheap unless a redraw is due). */
void progress_update(progress *p, uint64_t done);

/** Clears the bar's line. */
void progress_end(progress *p);

#endif /* RELO_TOOLS_PROGRESS_H */
