/*
 * table.h — relo-replay --table: one summary row per trace, over a folder
 * or a list of traces, as aligned text, a Markdown table or one JSON
 * object. The README's table is this Markdown.
 *
 * A row is measured with the replayer's own parts, exactly as the
 * per-trace report measures the same figures: an unlimited replay
 * (replay_run, recording) and a bisection (fit_search) under each placement,
 * each PyTorch model replayed and fitted (baseline_measure_run), and the
 * granule floor (hold_bound_fit_floor).
 */
#ifndef RELO_TOOLS_TABLE_H
#define RELO_TOOLS_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "replay.h"
#include "trace.h"
#include "trace_reader.h"

/** The allocators a row measures, in the order its columns give them. */
typedef enum table_run_kind {
    TABLE_RUN_PACKED = 0,         /**< relo, RELO_PLACEMENT_DEFAULT (the packed placement) */
    TABLE_RUN_ADAPTIVE,           /**< relo, RELO_PLACEMENT_ADAPTIVE */
    TABLE_RUN_PYTORCH,            /**< the model of PyTorch's caching allocator (BASELINE_PYTORCH) */
    TABLE_RUN_PYTORCH_EXPANDABLE, /**< the same with expandable segments */
    TABLE_RUN_COUNT
} table_run_kind;

/** The name a run has in JSON ("packed", "adaptive", "pytorch", "pytorch-expandable"). */
const char *table_run_kind_name(table_run_kind k);

/** One allocator on one trace: its unlimited replay and its fit. */
typedef struct table_run {
    bool completed;         /**< the unlimited replay completed */
    uint64_t peak_live;     /**< of the unlimited replay */
    uint64_t peak_reserved; /**< ... */
    double time_avg_ratio;  /**< reserved ÷ live summed over events (report_time_avg_ratio) */
    double allocs_per_1k;   /**< device (backend) allocations per 1,000 events */
    uint64_t bytes_moved;   /**< relo: bytes relocation copied; a model never moves (0) */
    double moved_ratio;     /**< bytes moved ÷ bytes allocated */
    bool fit_found;
    uint64_t fit_capacity; /**< smallest capacity seen to complete */
    char error[320];       /**< when the replay failed or no fit was found: why */
} table_run;

/** One trace's row. */
typedef struct table_row {
    const char *path; /**< the file, as given */
    char name[TRACE_NAME_MAX];
    uint64_t events;
    uint64_t peak_live; /**< the trace's peak live bytes: every ratio's denominator */
    double floor_ratio; /**< peak live rounded up to the granule ÷ peak live */
    table_run runs[TABLE_RUN_COUNT];
} table_row;

/**
 * Measures t's row. base gives the backend, granule, cache limit and
 * progress bar (its placement, capacity and record fields are set here).
 * Always fills *out; returns whether every replay completed and every fit
 * was found (else each failing run's error says why).
 */
bool table_measure(const trace *t, const char *path, const replay_config *base, table_row *out);

/** Writes what comes before the rows: a header, or the JSON's opening. */
void table_begin(FILE *f, const options *o);

/** Writes one row, in o->table's format (row_index 0 for the first). */
void table_write_row(FILE *f, const options *o, const table_row *row, int row_index);

/**
 * Writes a trace that could not be read: nothing in text and Markdown
 * (the reader has said why on stderr), an object in JSON as
 * report_json_unreadable writes it.
 */
void table_write_unreadable(FILE *f, const options *o, const char *path, const trace_error *err,
                            int row_index);

/** Writes what comes after the rows. */
void table_end(FILE *f, const options *o);

/** The traces --table replays: its arguments, folders replaced by their files. */
typedef struct table_paths {
    char **paths; /**< each owned */
    int count;
} table_paths;

/**
 * Expands args: an argument that is a folder stands for its files named
 * *.trace and *.trace.gz (not its subfolders), in strcmp order; any other
 * argument is kept as is. Returns false, having said why on stderr, when
 * a folder holds no trace or host memory runs out.
 */
bool table_paths_expand(char *const *args, int count, table_paths *out);

/** Frees what table_paths_expand made. */
void table_paths_free(table_paths *p);

#endif /* RELO_TOOLS_TABLE_H */
