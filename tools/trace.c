/*
 * trace.c — the in-memory trace: growth of the event array, the stream
 * table, the running peak, and error messages.
 */
#include "trace.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void trace_init(trace *t)
{
    memset(t, 0, sizeof *t);
}

void trace_free(trace *t)
{
    if (!t) return;
    free(t->events);
    trace_init(t);
}

/* The event array's capacity after one more push. Growth doubles and
 * stops at the limit, the count's or the memory budget's, so the last
 * doubling cannot ask for twice the memory the limit allows. */
static uint64_t capacity_after_push(const trace *t)
{
    if (t->event_count < t->event_capacity) return t->event_capacity;
    uint64_t cap = t->event_capacity ? (uint64_t)t->event_capacity * 2 : 4096;
    uint64_t limit = trace_event_limit(t);
    if (!t->max_events) {
        uint64_t budget = trace_memory_budget();
        uint64_t room = budget > t->reader_bytes ? (budget - t->reader_bytes) / sizeof(trace_event) : 0;
        if (room < limit) limit = room;
    }
    if (cap > limit) cap = limit > t->event_count ? limit : t->event_count + 1;
    return cap;
}

bool trace_push(trace *t, trace_event_kind kind, uint32_t alloc, uint16_t stream, uint64_t size)
{
    if (t->event_count == t->event_capacity) {
        uint64_t cap = capacity_after_push(t);
        if (cap > SIZE_MAX / sizeof *t->events) return false;
        trace_event *grown = realloc(t->events, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        t->events = grown;
        t->event_capacity = (size_t)cap;
    }
    trace_event *e = &t->events[t->event_count++];
    e->size = size;
    e->alloc = alloc;
    e->stream = stream;
    e->kind = (uint8_t)kind;
    /* Readers reject sizes whose sum could wrap only if a trace held 2^64
     * live bytes; saturate rather than trust that. */
    if (kind == TRACE_ALLOC) {
        t->live_at_end_bytes = t->live_at_end_bytes + size < size ? UINT64_MAX : t->live_at_end_bytes + size;
        t->live_at_end++;
        if (t->live_at_end_bytes > t->peak_live_bytes) t->peak_live_bytes = t->live_at_end_bytes;
    } else {
        t->live_at_end_bytes -= size <= t->live_at_end_bytes ? size : t->live_at_end_bytes;
        t->live_at_end--;
    }
    return true;
}

/* The budget in force: set, or known from the machine; 0 = not yet asked. */
static _Atomic uint64_t known;

void trace_memory_budget_set(uint64_t bytes)
{
    atomic_store_explicit(&known, bytes, memory_order_relaxed);
}

uint64_t trace_memory_budget(void)
{
    /* Asked once: every event a reader parses checks the limit, and
     * sysconf(_SC_PHYS_PAGES) is a system call. */
    uint64_t bytes = atomic_load_explicit(&known, memory_order_relaxed);
    if (bytes) return bytes;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) {
        bytes = 1ull << 30;
    } else {
        bytes = (uint64_t)pages * (uint64_t)page / 8;
        if (bytes < 4096 * sizeof(trace_event)) bytes = 4096 * sizeof(trace_event);
    }
    atomic_store_explicit(&known, bytes, memory_order_relaxed);
    return bytes;
}

uint64_t trace_default_max_events(void)
{
    return trace_memory_budget() / sizeof(trace_event);
}

uint64_t trace_event_limit(const trace *t)
{
    return t->max_events ? t->max_events : trace_default_max_events();
}


uint64_t trace_held_bytes_after_push(const trace *t)
{
    return capacity_after_push(t) * sizeof(trace_event) + t->reader_bytes;
}

bool trace_full(const trace *t)
{
    if (t->event_count >= trace_event_limit(t)) return true;
    return !t->max_events && trace_held_bytes_after_push(t) > trace_memory_budget();
}

void trace_print_warnings(const trace *t, const char *file, FILE *f)
{
    char path[TRACE_NAME_MAX];
    trace_escape_name(file, path, sizeof path);
    if (t->skipped_frees)
        fprintf(f,
                "%s:%llu: warning: skipped %llu free%s of pointers the log never allocated (the first\n"
                "  here): normal when logging started mid-run\n",
                path, (unsigned long long)t->first_skipped_free_line, (unsigned long long)t->skipped_frees,
                t->skipped_frees == 1 ? "" : "s");
    if (t->size_mismatches)
        fprintf(f,
                "%s:%llu: warning: %llu free%s a size other than the allocation's (the first here);\n"
                "  the allocation's size was replayed\n",
                path, (unsigned long long)t->first_size_mismatch_line, (unsigned long long)t->size_mismatches,
                t->size_mismatches == 1 ? " gives" : "s give");
}

bool trace_stream_index(trace *t, uint64_t number, uint16_t *index)
{
    /* Traces name a handful of streams: a linear scan beats a map here. */
    for (uint32_t i = 0; i < t->stream_count; i++) {
        if (t->streams[i] == number) {
            *index = (uint16_t)i;
            return true;
        }
    }
    if (t->stream_count == TRACE_MAX_STREAMS) return false;
    t->streams[t->stream_count] = number;
    *index = (uint16_t)t->stream_count++;
    return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

void trace_set_name_from_path(trace *t, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (ends_with(base, n, ".gz")) n -= 3;
    if (ends_with(base, n, ".trace"))
        n -= 6;
    else if (ends_with(base, n, ".csv"))
        n -= 4;
    char raw[TRACE_NAME_MAX];
    if (n >= sizeof raw) n = sizeof raw - 1;
    memcpy(raw, base, n);
    raw[n] = '\0';
    trace_escape_name(raw, t->name, sizeof t->name);
}

/* The length of the valid UTF-8 sequence at s that is not a control, or 0:
 * a lead byte, its continuation bytes, no overlong form, no surrogate,
 * nothing past U+10FFFF, and no C1 control (U+0080 to U+009F). */
static size_t utf8_printable(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c == 0xc2)
        lo = 0xa0; /* U+0080..U+009F are C1 controls */
    else if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xf4)
        hi = 0x8f; /* past U+10FFFF */
    return n && s[1] >= lo && s[1] <= hi ? n : 0;
}

char *trace_escape_name(const char *name, char *out, size_t cap)
{
    if (cap == 0) return out;
    const unsigned char *s = (const unsigned char *)name;
    size_t o = 0;
    while (*s) {
        size_t n = *s >= 0x20 && *s < 0x7f ? 1 : *s >= 0x80 ? utf8_printable(s) : 0;
        if (n) {
            if (o + n >= cap) break;
            memcpy(out + o, s, n);
            o += n;
            s += n;
        } else {
            if (o + 4 >= cap) break;
            snprintf(out + o, 5, "\\x%02x", *s++);
            o += 4;
        }
    }
    out[o] = '\0';
    return out;
}

bool trace_fail(trace_error *err, const char *file, uint64_t line, const char *fmt, ...)
{
    if (!err) return false;
    trace_escape_name(file ? file : "(trace)", err->file, sizeof err->file);
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return false;
}

bool trace_fail_full(trace_error *err, const char *file, uint64_t line, const trace *t)
{
    if (t->max_events)
        return trace_fail(err, file, line, "more than %llu events, the most held in memory (--max-events)",
                          (unsigned long long)t->max_events);
    uint64_t held = trace_held_bytes_after_push(t);
    uint64_t count = t->event_count ? t->event_count : 1;
    return trace_fail(err, file, line,
                      "more than %llu events, the most held in memory: %llu MiB, an eighth of this "
                      "machine's, at %llu bytes per event here (the events and the map of their ids); "
                      "relo-replay --max-events N raises the limit",
                      (unsigned long long)t->event_count, (unsigned long long)(trace_memory_budget() >> 20),
                      (unsigned long long)((held + count - 1) / count));
}

void trace_error_print(const trace_error *err)
{
    if (err->line)
        fprintf(stderr, "%s:%llu: %s\n", err->file, (unsigned long long)err->line, err->message);
    else
        fprintf(stderr, "%s: %s\n", err->file, err->message);
}
