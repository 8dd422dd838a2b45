/*
 * verdict.h — what relo-replay's pictures (the HTML report and the SVG)
 * state first: for relo and for each baseline, the smallest device it
 * completes on (with --fit), whether it completed on the reported capacity
 * or where it ran out of memory, and what it held (peak, time-averaged,
 * at the end), moved and took from the device.
 *
 * Those figures compare allocators only over whole runs, so they come from
 * the run on the reported capacity where that completed, and else from a
 * run on the allocator's own fit capacity, which the verdict replays
 * itself. Both pictures read one verdict, so they cannot disagree.
 */
#ifndef RELO_TOOLS_VERDICT_H
#define RELO_TOOLS_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "baseline.h"
#include "replay.h"
#include "report.h"

/** The most allocators: relo's placement, relo's other placement, each baseline. */
#define VERDICT_MAX_ROWS (2 + BASELINE_KIND_COUNT)
/** The most runs: each allocator on the reported capacity and on its fit. */
#define VERDICT_MAX_RUNS (2 * VERDICT_MAX_ROWS)

/** One replay on one capacity. */
typedef struct verdict_run {
    char name[80];         /**< e.g. "relo packed, 94.0 MiB", "pytorch, fit 117 MiB" */
    int row;               /**< the allocator (index into verdict.rows) */
    bool relo;             /**< a relo replay (else a baseline model) */
    bool at_fit;           /**< on the allocator's fit capacity */
    uint64_t capacity;     /**< 0 = unlimited */
    bool ok;               /**< completed */
    bool out_of_memory;    /**< stopped because the device refused memory */
    uint64_t failed_event; /**< 0-based; when !ok */
    uint64_t events_done;
    uint64_t peak_held;    /**< bytes of device memory held at the peak */
    double time_avg_ratio; /**< held ÷ live, each summed over events; 0 when unknown */
    uint64_t end_held, end_live;
    uint64_t bytes_moved;   /**< 0 for a model, which never moves */
    uint64_t device_allocs; /**< buffers taken from the device */
    double allocs_per_1k;   /**< device_allocs per 1,000 events done */
    const sampler *samples; /**< its timeline; relo's carry outdated bytes and relocations */
} verdict_run;

/** One allocator. */
typedef struct verdict_row {
    char name[32]; /**< "relo packed", "relo adaptive", "pytorch", ... */
    bool relo;
    bool fitted; /**< a fit search ran */
    bool fit_found;
    uint64_t fit_capacity;
    double fit_ratio; /**< fit capacity ÷ the trace's peak live bytes */
    int reported;     /**< its run on the reported capacity (index into runs) */
    int measured;     /**< the run its figures come from; -1 when none completed */
} verdict_row;

typedef struct verdict {
    const trace *t;
    uint64_t capacity; /**< the reported capacity; 0 = unlimited */
    verdict_row rows[VERDICT_MAX_ROWS];
    int row_count;
    verdict_run runs[VERDICT_MAX_RUNS];
    int run_count;
    /* Replays the verdict made itself, freed by verdict_free. */
    replay_result relo_own[3];
    int relo_own_count;
    baseline_run model_own[BASELINE_KIND_COUNT];
    int model_own_count;
} verdict;

/**
 * Builds the verdict of rep: relo's reported replay first (runs[0] is
 * rep->r), then with other_placement relo's other placement on the same
 * device (adaptive beside packed, packed beside adaptive or exclusive; with
 * a fit search of its own when rep->fit is set, so that its fit matches
 * what --fit --placement OTHER reports), then each baseline. Where an
 * allocator did not complete on the reported capacity and a fit was found,
 * a run on its fit capacity is added (relo's own placement: rep->at_fit).
 * Always fills *v; free it with verdict_free. rep must outlive v.
 */
void verdict_build(verdict *v, const report *rep, bool other_placement);

/** Frees the replays v made. */
void verdict_free(verdict *v);

/** "out of memory at event 36,224 of 44,960 (81 %)" or "completed", into out. Returns out. */
char *verdict_outcome(const verdict *v, const verdict_run *r, char *out, size_t cap);

/** A count with thousands separators ("44,960") into out. Returns out. */
char *verdict_count(uint64_t n, char *out, size_t cap);

#endif /* RELO_TOOLS_VERDICT_H */
