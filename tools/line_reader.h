/*
 * line_reader.h — splits a byte source into lines, a chunk at a time, so a
 * trace of any length is read in bounded memory.
 *
 * A source is a read callback (a file, a gzip stream, a pipe, a buffer).
 * Lines end at '\n'; a final line without one is still a line. A UTF-8
 * byte-order mark at the start of the data is dropped. A line
 * longer than LINE_READER_MAX bytes is an error rather than a reason to
 * allocate without bound.
 */
#ifndef RELO_TOOLS_LINE_READER_H
#define RELO_TOOLS_LINE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The longest line accepted, in bytes, without its newline. */
#define LINE_READER_MAX 65536u

/**
 * Reads up to cap bytes into buf. Returns the count read, 0 at the end of
 * the data, or -1 on an error after writing a sentence to msg (msg_cap
 * bytes, NUL-terminated).
 */
typedef long (*line_read_fn)(void *ctx, char *buf, size_t cap, char *msg, size_t msg_cap);

typedef struct line_reader {
    line_read_fn read;
    void *ctx;
    char chunk[16384];
    size_t chunk_len;
    size_t chunk_pos;
    char *line; /* the current line, NUL-terminated, owned */
    size_t line_len;
    size_t line_cap;
    uint64_t line_no; /* 1-based number of the current line */
    uint64_t bytes;   /* bytes read from the source so far */
    bool at_end;
    bool pushed_back; /* the next call returns the current line again */
    bool failed;      /* an error happened: every later call repeats it */
    char error[256];  /* set when next returns -1 */
} line_reader;

/** Prepares r to read from (read, ctx). Allocates nothing. */
void line_reader_init(line_reader *r, line_read_fn read, void *ctx);

/** Frees the line buffer. */
void line_reader_free(line_reader *r);

/**
 * Reads the next line into r->line / r->line_len (newline removed, and a
 * '\r' before it). The line may contain NUL bytes: use line_len.
 * Returns 1 for a line, 0 at the end, -1 on an error (r->error says what;
 * a source error, a line over LINE_READER_MAX, or host memory).
 */
int line_reader_next(line_reader *r);

/** Makes the next line_reader_next return the current line again. */
void line_reader_unget(line_reader *r);

/**
 * Points *head at the bytes not yet split into lines (reading the first
 * chunk, up to 16 KiB, if none is held) without consuming them, so a
 * reader can tell what kind of file it was given before splitting a line
 * that may have no end. Returns how many bytes *head holds: 0 at the end
 * of the data, or -1 on a source error (r->error says what).
 */
long line_reader_peek(line_reader *r, const char **head);

#endif /* RELO_TOOLS_LINE_READER_H */
