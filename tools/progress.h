/*
 * progress.h — a one-line progress bar on stderr, for long replays and
 * fit searches when a person watches a terminal.
 */
#ifndef RELO_TOOLS_PROGRESS_H
#define RELO_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct progress {
    bool enabled;
    uint64_t total;
    uint64_t next; /* the count at which the bar is redrawn */
    char label[96];
    unsigned columns; /* the terminal's width at progress_begin */
    bool drawn;
} progress;

/** The terminal's width on stderr: the window's, else $COLUMNS, else 80. */
unsigned progress_columns(void);

/** Enables the bar when `wanted` and stderr is a terminal. */
void progress_init(progress *p, bool wanted);

/** Starts a phase of total steps, labelled (e.g. "fit 3: 40.2 GiB"). */
void progress_begin(progress *p, const char *label, uint64_t total);

/**
 * Writes the bar's line for done steps to out (cap bytes) without the
 * leading carriage return: at most p->columns - 1 characters (29 for a
 * narrower terminal). Returns its length.
 */
size_t progress_format(const progress *p, uint64_t done, char *out, size_t cap);

/** Redraws the bar for done steps (cheap unless a redraw is due). */
void progress_update(progress *p, uint64_t done);

/** Clears the bar's line. */
void progress_end(progress *p);

#endif /* RELO_TOOLS_PROGRESS_H */
