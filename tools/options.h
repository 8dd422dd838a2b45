/*
 * options.h — relo-replay's command line.
 */
#ifndef RELO_TOOLS_OPTIONS_H
#define RELO_TOOLS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "baseline.h"
#include "relo.h"
#include "replay_backend.h"
#include "trace_reader.h"

/** --table: one summary row per trace instead of each trace's report. */
typedef enum options_table {
    OPTIONS_TABLE_NONE = 0, /**< no table: each trace's report */
    OPTIONS_TABLE_TEXT,     /**< aligned columns for a terminal */
    OPTIONS_TABLE_MD,       /**< a Markdown table */
    OPTIONS_TABLE_JSON,     /**< one JSON object */
    OPTIONS_TABLE_COUNT
} options_table;

typedef struct options {
    replay_backend_kind backend;
    trace_format format;
    uint64_t capacity;  /**< 0 = unlimited */
    bool capacity_auto; /**< --capacity auto: replay at the fit capacity */
    uint64_t granule;   /**< --granule: the backend charges buffers in these; 1 = bytes */
    bool fit;
    bool sweep;               /**< --sweep: replay at every step of a capacity range */
    bool sweep_from_fit;      /**< the range starts at the fit capacity (implies fit) */
    double sweep_from;        /**< else at this × peak live */
    double sweep_to;          /**< ... and ends at this × peak live */
    double sweep_step;        /**< ... by steps of this × peak live */
    relo_placement placement; /**< --placement; RELO_PLACEMENT_DEFAULT when not given */
    relo_relocation relocation;
    uint64_t cache_limit; /**< --cache-limit: relo_device_desc.cache_limit; 0 = default */
    bool json;
    bool quiet;
    bool verify_full;
    uint64_t max_events; /**< --max-events; 0 = the reader's default */
    const char *svg;
    const char *html;                    /**< --html: the interactive report's file */
    bool baselines[BASELINE_KIND_COUNT]; /**< --baseline: models replayed beside relo */
    options_table table;                 /**< --table: the summary table (tools/table.h) */
    char **traces;                       /**< points into argv */
    int trace_count;
} options;

/** What options_parse decided. */
typedef enum options_result {
    OPTIONS_RUN = 0,    /**< run the replay */
    OPTIONS_EXIT_OK,    /**< --help or --version was printed */
    OPTIONS_EXIT_USAGE, /**< a message was printed to stderr */
    OPTIONS_RESULT_COUNT
} options_result;

/** Parses argv into *o (defaults first). Prints help or errors itself. */
options_result options_parse(int argc, char **argv, options *o);

/** The granule relo-replay charges in unless told otherwise: CUDA's. */
#define OPTIONS_DEFAULT_GRANULE (UINT64_C(2) << 20)

/** Prints the help text to f. */
void options_usage(FILE *f);

/** The word --placement takes for a placement ("packed", "adaptive",
 *  "exclusive"), the one reports and pictures print; DEFAULT is "packed". */
const char *options_placement_word(relo_placement placement);

#endif /* RELO_TOOLS_OPTIONS_H */
