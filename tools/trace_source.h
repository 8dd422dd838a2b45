/*
 * trace_source.h — where a trace's bytes come from: a plain file, a gzip
 * file (through zlib when the build found it, else through a `gzip -dc`
 * pipe), an open FILE*, or a buffer in memory.
 *
 * A source feeds a line_reader. Closing it reports errors that only show
 * at the end, such as a gzip pipe whose decompressor failed.
 */
#ifndef RELO_TOOLS_TRACE_SOURCE_H
#define RELO_TOOLS_TRACE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "line_reader.h"

typedef enum trace_source_kind {
    TRACE_SOURCE_MEMORY = 0,
    TRACE_SOURCE_FILE,       /**< a FILE* read as is */
    TRACE_SOURCE_ZLIB,       /**< a gzip file through zlib */
    TRACE_SOURCE_PIPE,       /**< a gzip file through `gzip -dc` */
    TRACE_SOURCE_KIND_COUNT
} trace_source_kind;

typedef struct trace_source {
    trace_source_kind kind;
    bool owns_file;          /* close the FILE* on trace_source_close */
    FILE *file;              /* FILE and PIPE */
    void *gz;                /* ZLIB: a gzFile */
    const char *data;        /* MEMORY */
    size_t size;
    size_t pos;
    bool failed;             /* a read failed: error says why */
    char error[256];
} trace_source;

/** Whether this build reads gzip through zlib (else through a pipe). */
bool trace_source_has_zlib(void);

/**
 * Opens path: gzip data (recognised by its magic bytes, not its name) is
 * decompressed on the fly. Returns false and writes a sentence to msg
 * (msg_cap bytes) when the file cannot be opened.
 */
bool trace_source_open_path(trace_source *s, const char *path, char *msg, size_t msg_cap);

/** Reads from an open FILE* (plain text), which the caller keeps. */
void trace_source_open_file(trace_source *s, FILE *f);

/** Reads size bytes at data (plain text), which must outlive the source. */
void trace_source_open_memory(trace_source *s, const void *data, size_t size);

/** The line_reader read callback for a source passed as ctx. */
long trace_source_read(void *ctx, char *buf, size_t cap, char *msg, size_t msg_cap);

/**
 * Closes the source. For gzip data, first decodes what is left so that
 * truncated or corrupt data shows even when the parser stopped early (a
 * pipe is drained and gzip's exit status checked). Returns false with a
 * sentence in msg when any read failed; true otherwise.
 */
bool trace_source_close(trace_source *s, char *msg, size_t msg_cap);

#endif /* RELO_TOOLS_TRACE_SOURCE_H */
