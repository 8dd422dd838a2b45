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

typedef struct options {
    replay_backend_kind backend;
    trace_format format;
    uint64_t capacity;          /**< 0 = unlimited */
    bool capacity_auto;         /**< --capacity auto: replay at the fit capacity */
    bool fit;
    relo_layout layout;
    relo_relocation relocation;
    relo_policy policy;
    bool json;
    bool quiet;
    bool verify_full;
    uint64_t max_events;        /**< --max-events; 0 = the reader's default */
    const char *svg;
    const char *html;           /**< --html: the interactive report's file */
    bool baselines[BASELINE_KIND_COUNT]; /**< --baseline: models replayed beside relo */
    char **traces;              /**< points into argv */
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

/** Prints the help text to f. */
void options_usage(FILE *f);

#endif /* RELO_TOOLS_OPTIONS_H */
