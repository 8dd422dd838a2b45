/*
 * trace_reader.c — the entry points of the trace readers: opens the bytes,
 * picks the format, runs its parser, and reports source errors (truncated
 * gzip) in preference to the parse error they may have caused.
 */
#include "trace_reader.h"

#include <string.h>

#include "parse_util.h"
#include "trace_source.h"

const char *trace_format_name(trace_format format)
{
    switch (format) {
    case TRACE_FORMAT_AUTO: return "auto";
    case TRACE_FORMAT_RELO: return "relo";
    case TRACE_FORMAT_RMM: return "rmm";
    case TRACE_FORMAT_COUNT: break;
    }
    return "?";
}

/* Decides AUTO from the first non-blank line: RMM's CSV header, or relo. */
static trace_format detect(line_reader *r)
{
    trace_format f = TRACE_FORMAT_RELO;
    for (;;) {
        if (line_reader_next(r) != 1) return f; /* the parser meets the error or the end */
        size_t i = 0;
        while (i < r->line_len && (r->line[i] == ' ' || r->line[i] == '\t')) i++;
        if (i == r->line_len) continue;
        parse_field fields[8];
        size_t n = parse_split_comma(r->line + i, r->line_len - i, fields, 8);
        for (size_t k = 0; k < n && k < 8; k++)
            if (parse_field_is(fields[k], "Action")) f = TRACE_FORMAT_RMM;
        line_reader_unget(r);
        return f;
    }
}

/* The converter's name in messages: the script and its installed name. */
#define CONVERTER \
    "tools/torch_snapshot_to_trace.py FILE -o out.trace.gz (installed as relo-torch-snapshot-to-trace)"

/* What the first bytes of the data say the file is, when it is something
 * a trace reader does not read or the format asked does not fit: a
 * sentence naming what to do, or NULL. head holds n bytes. */
static const char *foreign(const char *head, size_t n, trace_format format)
{
    const unsigned char *s = (const unsigned char *)head;
    if (n >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf) s += 3, n -= 3;
    /* A pickle of protocol 2 on opens with PROTO and its number. */
    if (n >= 2 && s[0] == 0x80 && s[1] >= 2 && s[1] <= 5)
        return "a Python pickle, not a trace: a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) "
               "becomes a trace with " CONVERTER;
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) i++;
    if (i < n && (s[i] == '{' || s[i] == '['))
        return "JSON, not a trace: a PyTorch memory snapshot saved as JSON becomes a trace with " CONVERTER;
    /* The first line, for a trace read in the other format. */
    const unsigned char *nl = memchr(s + i, '\n', n - i);
    size_t line = nl ? (size_t)(nl - s) - i : n - i;
    if (format == TRACE_FORMAT_RELO) {
        parse_field fields[8];
        size_t count = parse_split_comma((const char *)s + i, line, fields, 8);
        for (size_t k = 0; k < count && k < 8; k++)
            if (parse_field_is(fields[k], "Action"))
                return "an RMM memory-event log (its CSV header names an Action column), read as a relo "
                       "trace: use --format rmm, or --format auto";
    } else if (format == TRACE_FORMAT_RMM) {
        static const char magic[] = "# relo-trace";
        if (line >= sizeof magic - 1 && memcmp(s + i, magic, sizeof magic - 1) == 0)
            return "a relo trace (its '# relo-trace' line), read as an RMM log: use --format relo, or "
                   "--format auto";
    }
    return NULL;
}

/* Reads every line of src with the chosen parser. */
static bool read_source(trace_source *src, const char *name, trace_format format, uint64_t max_events,
                        trace *out, trace_error *err)
{
    trace_init(out);
    out->max_events = max_events;
    trace_set_name_from_path(out, name);
    line_reader r;
    line_reader_init(&r, trace_source_read, src);
    const char *head = NULL;
    long peeked = line_reader_peek(&r, &head);
    const char *why = peeked > 0 ? foreign(head, (size_t)peeked, format) : NULL;
    if (!why && format == TRACE_FORMAT_AUTO) format = detect(&r);
    bool ok;
    if (why)
        ok = trace_fail(err, name, 0, "%s", why);
    else if (format == TRACE_FORMAT_RMM)
        ok = trace_parse_rmm(&r, name, out, err);
    else if (format == TRACE_FORMAT_RELO)
        ok = trace_parse_relo(&r, name, out, err);
    else
        ok = trace_fail(err, name, 0, "unknown trace format");
    /* A line the reader refused (too long) is bad whatever follows it, and
     * so is a file of another kind; a line the parser refused may be
     * garbage from corrupt data. */
    bool drain = !r.failed && !why;
    line_reader_free(&r);
    char msg[256];
    bool closed = trace_source_close(src, drain, msg, sizeof msg);
    out->source_bytes = src->bytes;
    if (!closed) {
        /* A truncated pipe explains whatever the parser tripped on. */
        trace_fail(err, name, 0, "%s", msg);
        return false;
    }
    return ok;
}

bool trace_read_path(const char *path, trace_format format, uint64_t max_events, trace *out, trace_error *err)
{
    trace_source src;
    char msg[256];
    bool in = strcmp(path, "-") == 0;
    const char *name = in ? "stdin" : path;
    if (!(in ? trace_source_open_stdin(&src, msg, sizeof msg)
             : trace_source_open_path(&src, path, msg, sizeof msg))) {
        trace_init(out);
        return trace_fail(err, name, 0, "%s", msg);
    }
    return read_source(&src, name, format, max_events, out, err);
}

bool trace_read_file(const char *path, trace_format format, trace *out, trace_error *err)
{
    trace_source src;
    char msg[256];
    if (!trace_source_open_path(&src, path, msg, sizeof msg)) {
        trace_init(out);
        return trace_fail(err, path, 0, "%s", msg);
    }
    return read_source(&src, path, format, 0, out, err);
}

bool trace_read_stream(FILE *f, const char *name, trace_format format, trace *out, trace_error *err)
{
    trace_source src;
    trace_source_open_file(&src, f);
    return read_source(&src, name, format, 0, out, err);
}

bool trace_read_buffer(const void *data, size_t size, const char *name, trace_format format, trace *out,
                       trace_error *err)
{
    trace_source src;
    trace_source_open_memory(&src, data, size);
    return read_source(&src, name, format, 0, out, err);
}
