/*
 * line_reader.c — chunked line splitting (see line_reader.h).
 */
#include "line_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void line_reader_init(line_reader *r, line_read_fn read, void *ctx)
{
    memset(r, 0, sizeof *r);
    r->read = read;
    r->ctx = ctx;
}

void line_reader_free(line_reader *r)
{
    free(r->line);
    r->line = NULL;
    r->line_cap = 0;
    r->line_len = 0;
}

/* Appends n bytes to the current line, growing its buffer. */
static int append(line_reader *r, const char *src, size_t n)
{
    if (r->line_len + n > LINE_READER_MAX) {
        snprintf(r->error, sizeof r->error, "line longer than %u bytes", LINE_READER_MAX);
        return -1;
    }
    if (r->line_len + n + 1 > r->line_cap) {
        size_t cap = r->line_cap ? r->line_cap : 256;
        while (cap < r->line_len + n + 1) cap *= 2;
        char *grown = realloc(r->line, cap);
        if (!grown) {
            snprintf(r->error, sizeof r->error, "out of host memory");
            return -1;
        }
        r->line = grown;
        r->line_cap = cap;
    }
    memcpy(r->line + r->line_len, src, n);
    r->line_len += n;
    r->line[r->line_len] = '\0';
    return 0;
}

static int next(line_reader *r);

int line_reader_next(line_reader *r)
{
    if (r->failed) return -1;
    int rc = next(r);
    if (rc < 0) r->failed = true;
    return rc;
}

static int next(line_reader *r)
{
    if (r->pushed_back) {
        r->pushed_back = false;
        return 1;
    }
    r->line_len = 0;
    if (append(r, "", 0) < 0) return -1; /* makes sure r->line exists */
    bool any = false;
    for (;;) {
        if (r->chunk_pos == r->chunk_len) {
            if (r->at_end) break;
            long n = r->read(r->ctx, r->chunk, sizeof r->chunk, r->error, sizeof r->error);
            if (n < 0) return -1;
            if (n == 0) {
                r->at_end = true;
                break;
            }
            r->chunk_len = (size_t)n;
            r->chunk_pos = 0;
            r->bytes += (uint64_t)n;
        }
        const char *start = r->chunk + r->chunk_pos;
        size_t avail = r->chunk_len - r->chunk_pos;
        const char *nl = memchr(start, '\n', avail);
        size_t take = nl ? (size_t)(nl - start) : avail;
        if (append(r, start, take) < 0) return -1;
        any = true;
        r->chunk_pos += take;
        if (nl) {
            r->chunk_pos++; /* the newline */
            break;
        }
    }
    if (!any) return 0;
    /* A UTF-8 byte-order mark before the first line (editors on Windows
     * write one) is no part of it. */
    if (r->line_no == 0 && r->line_len >= 3 && memcmp(r->line, "\xef\xbb\xbf", 3) == 0) {
        memmove(r->line, r->line + 3, r->line_len - 3 + 1);
        r->line_len -= 3;
    }
    r->line_no++;
    if (r->line_len > 0 && r->line[r->line_len - 1] == '\r') r->line[--r->line_len] = '\0';
    return 1;
}

void line_reader_unget(line_reader *r)
{
    r->pushed_back = true;
}

long line_reader_peek(line_reader *r, const char **head)
{
    if (r->failed) return -1;
    if (r->chunk_pos == r->chunk_len && !r->at_end) {
        long n = r->read(r->ctx, r->chunk, sizeof r->chunk, r->error, sizeof r->error);
        if (n < 0) {
            r->failed = true;
            return -1;
        }
        if (n == 0) r->at_end = true;
        r->chunk_len = (size_t)n;
        r->chunk_pos = 0;
        r->bytes += (uint64_t)n;
    }
    *head = r->chunk + r->chunk_pos;
    return (long)(r->chunk_len - r->chunk_pos);
}
