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
    TRACE_SOURCE_FILE, /**< a FILE* read as is */
    TRACE_SOURCE_ZLIB, /**< a gzip file through zlib */
    TRACE_SOURCE_PIPE, /**< a gzip file through `gzip -dc` */
    TRACE_SOURCE_KIND_COUNT
} trace_source_kind;

typedef struct trace_source {
    trace_source_kind kind;
    bool owns_file;   /* close the FILE* on trace_source_close */
    FILE *file;       /* FILE and PIPE */
    void *gz;         /* ZLIB: a gzFile */
    const char *data; /* MEMORY */
    size_t size;
    size_t pos;
    uint64_t bytes; /* bytes handed out by trace_source_read, drain included */
    bool failed;    /* a read failed: error says why */
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

/**
 * Opens standard input: gzip or plain text where zlib is built in (zlib
 * reads both), plain text otherwise (gzip data is then refused with a
 * message naming `gzip -dc`). Returns false with a sentence in msg.
 */
bool trace_source_open_stdin(trace_source *s, char *msg, size_t msg_cap);

/** Reads from an open FILE* (plain text), which the caller keeps. */
void trace_source_open_file(trace_source *s, FILE *f);

/** Reads size bytes at data (plain text), which must outlive the source. */
void trace_source_open_memory(trace_source *s, const void *data, size_t size);

/** The line_reader read callback for a source passed as ctx. */
long trace_source_read(void *ctx, char *buf, size_t cap, char *msg, size_t msg_cap);

/** The most bytes trace_source_close decodes after the parser stopped. */
#define TRACE_SOURCE_DRAIN_MAX (64u << 20)

/**
 * Closes the source. With drain, gzip data is first decoded a little
 * further (at most TRACE_SOURCE_DRAIN_MAX bytes) so that truncated or
 * corrupt data shows even when the parser stopped early on what may be
 * its garbage; a pipe is drained as far and gzip's exit status checked
 * when it reached the end. Without drain (the parser refused something
 * for what it is, such as an overlong line) nothing more is decoded: a
 * hostile file costs no more time than it took to find it bad. Returns
 * false with a sentence in msg when any read failed; true otherwise.
 */
bool trace_source_close(trace_source *s, bool drain, char *msg, size_t msg_cap);

#endif /* RELO_TOOLS_TRACE_SOURCE_H */
