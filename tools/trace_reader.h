/*
 * trace_reader.h — reads an allocation trace into memory: the relo trace
 * format (docs/trace-format.md, plain or gzip) or a RAPIDS RMM memory-event CSV log.
 *
 * Every reader validates as it goes and stops at the first bad line with
 * the file name, the line number and a sentence; it never crashes, hangs
 * or reads out of bounds on any input (a libFuzzer harness checks that).
 */
#ifndef RELO_TOOLS_TRACE_READER_H
#define RELO_TOOLS_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "line_reader.h"
#include "trace.h"

typedef enum trace_format {
    TRACE_FORMAT_AUTO = 0, /**< RMM when the first line is its CSV header, else relo */
    TRACE_FORMAT_RELO,     /**< docs/trace-format.md, version 1 */
    TRACE_FORMAT_RMM,      /**< Thread,Time,Action,Pointer,Size,Stream */
    TRACE_FORMAT_COUNT
} trace_format;

/** "auto", "relo", "rmm"; "?" for a value outside the enum. */
const char *trace_format_name(trace_format format);

/**
 * Reads the file at path into *out (which the call initialises; trace_free
 * it after use, also after a failure). gzip data is recognised by its magic
 * bytes. Returns true on success; false with *err filled (file, line,
 * message) for an unreadable file, an empty one, truncated or corrupt gzip
 * data, or the first malformed line.
 */
bool trace_read_file(const char *path, trace_format format, trace *out, trace_error *err);

/**
 * As trace_read_file, with path "-" meaning standard input (named "stdin"
 * in messages) and max_events the most events held (0: the default of
 * trace_default_max_events; more are refused with a message).
 */
bool trace_read_path(const char *path, trace_format format, uint64_t max_events, trace *out,
                     trace_error *err);

/** As trace_read_file, from an open FILE* of plain text; name is used in
 *  messages and as the trace's name. The caller keeps f. */
bool trace_read_stream(FILE *f, const char *name, trace_format format, trace *out, trace_error *err);

/** As trace_read_file, from size bytes of plain text at data (for fuzzing
 *  and tests). data need not be NUL-terminated. */
bool trace_read_buffer(const void *data, size_t size, const char *name, trace_format format, trace *out,
                       trace_error *err);

/**
 * The relo-format parser: reads every line of r into t. name is for
 * messages. Returns true, or false with *err filled. Used by the functions
 * above; t must be initialised.
 */
bool trace_parse_relo(line_reader *r, const char *name, trace *t, trace_error *err);

/** The RMM CSV parser, as trace_parse_relo. */
bool trace_parse_rmm(line_reader *r, const char *name, trace *t, trace_error *err);

#endif /* RELO_TOOLS_TRACE_READER_H */
