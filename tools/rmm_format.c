/*
 * rmm_format.c — the parser of RAPIDS RMM memory-event logs (CSV with the
 * header Thread,Time,Action,Pointer,Size,Stream).
 *
 * RMM names allocations by pointer, and a pointer comes back after its
 * free, so the map goes from pointer to the *current* allocation, and each
 * allocate makes a new dense allocation number. "allocate failure" lines
 * record requests that got nothing; they are skipped. "deallocate" is read
 * as "free". A free of a pointer not live is skipped and counted (a log
 * started mid-run), and a free naming another size than its allocation is
 * counted; trace_print_warnings reports both.
 */
#include <string.h>

#include "id_map.h"
#include "parse_util.h"
#include "trace_reader.h"

enum { COL_ACTION, COL_POINTER, COL_SIZE, COL_STREAM, COL_COUNT };
static const char *const column_names[COL_COUNT] = {"Action", "Pointer", "Size", "Stream"};

/* The most columns a log line may have; RMM writes six. */
#define RMM_MAX_FIELDS 16u

typedef struct rmm_parser {
    const char *name;
    line_reader *r;
    trace *t;
    trace_error *err;
    id_map live;              /* pointer → event index of its live allocation */
    size_t column[COL_COUNT]; /* field index of each column; SIZE_MAX = absent */
    size_t header_fields;
} rmm_parser;

static bool fail(rmm_parser *p, const char *msg)
{
    return trace_fail(p->err, p->name, p->r->line_no, "%s", msg);
}

static bool parse_header(rmm_parser *p, const char *line, size_t n)
{
    parse_field f[RMM_MAX_FIELDS];
    size_t count = parse_split_comma(line, n, f, RMM_MAX_FIELDS);
    if (count > RMM_MAX_FIELDS) return fail(p, "RMM header has too many columns");
    p->header_fields = count;
    for (size_t c = 0; c < COL_COUNT; c++) {
        p->column[c] = SIZE_MAX;
        for (size_t i = 0; i < count; i++)
            if (parse_field_is(f[i], column_names[c])) p->column[c] = i;
    }
    for (size_t c = 0; c < COL_STREAM; c++) {
        if (p->column[c] == SIZE_MAX)
            return trace_fail(
                p->err, p->name, p->r->line_no,
                "RMM header lacks the column '%s' (expected Thread,Time,Action,Pointer,Size,Stream)",
                column_names[c]);
    }
    return true;
}

static bool number(rmm_parser *p, const parse_field *f, size_t count, int col, uint64_t *out)
{
    size_t i = p->column[col];
    if (i == SIZE_MAX) {
        *out = 0; /* only Stream may be absent */
        return true;
    }
    if (i >= count || f[i].n == 0) {
        if (col == COL_STREAM) {
            *out = 0;
            return true;
        }
        return trace_fail(p->err, p->name, p->r->line_no, "missing field '%s'", column_names[col]);
    }
    parse_result pr = col == COL_SIZE ? parse_u64_dec(f[i].s, f[i].n, out)
                                      : parse_u64_any(f[i].s, f[i].n, out);
    if (pr == PARSE_OK) return true;
    char q[48];
    parse_quote(f[i].s, f[i].n, q, sizeof q);
    if (pr != PARSE_OVERFLOW && f[i].n > 1 && f[i].s[0] == '-' &&
        parse_u64_dec(f[i].s + 1, f[i].n - 1, &(uint64_t){0}) != PARSE_NOT_NUMBER)
        return trace_fail(p->err, p->name, p->r->line_no,
                          "%s '%s' is negative (expected a whole number from 0 to 2^64-1)", column_names[col],
                          q);
    return trace_fail(p->err, p->name, p->r->line_no, "%s '%s' %s", column_names[col], q,
                      pr == PARSE_OVERFLOW ? "does not fit in 64 bits" : "is not a number");
}

static bool parse_event(rmm_parser *p, const char *line, size_t n)
{
    parse_field f[RMM_MAX_FIELDS];
    size_t count = parse_split_comma(line, n, f, RMM_MAX_FIELDS);
    if (count > RMM_MAX_FIELDS) return fail(p, "too many fields");
    size_t ai = p->column[COL_ACTION];
    if (ai >= count) return fail(p, "missing field 'Action'");
    parse_field action = f[ai];
    if (parse_field_is(action, "allocate failure")) return true;
    bool alloc = parse_field_is(action, "allocate");
    if (!alloc && !parse_field_is(action, "free") && !parse_field_is(action, "deallocate")) {
        char q[48];
        parse_quote(action.s, action.n, q, sizeof q);
        return trace_fail(p->err, p->name, p->r->line_no,
                          "unknown action '%s' (expected allocate, free, deallocate or allocate failure)", q);
    }
    uint64_t ptr, size, stream;
    if (!number(p, f, count, COL_POINTER, &ptr) || !number(p, f, count, COL_SIZE, &size) ||
        !number(p, f, count, COL_STREAM, &stream))
        return false;
    trace *t = p->t;
    uint64_t event;
    bool live = id_map_get(&p->live, ptr, &event);
    t->reader_bytes = alloc ? id_map_bytes_after_put(&p->live) : id_map_bytes(&p->live);
    if ((alloc || live) && trace_full(t)) return trace_fail_full(p->err, p->name, p->r->line_no, t);
    if (alloc) {
        if (live)
            return trace_fail(p->err, p->name, p->r->line_no,
                              "allocate of pointer 0x%llx, which is still live", (unsigned long long)ptr);
        if (t->alloc_count == UINT32_MAX) return fail(p, "too many allocations");
        uint16_t si;
        if (!trace_stream_index(t, stream, &si))
            return trace_fail(p->err, p->name, p->r->line_no, "more than %u distinct streams",
                              TRACE_MAX_STREAMS);
        if (!id_map_put(&p->live, ptr, t->event_count) ||
            !trace_push(t, TRACE_ALLOC, t->alloc_count, si, size))
            return fail(p, "out of host memory");
        t->alloc_count++;
        return true;
    }
    if (!live) {
        /* Normal when logging started mid-run: the allocation predates the
         * log. Skipped and counted, as the snapshot converter does. */
        if (t->skipped_frees++ == 0) t->first_skipped_free_line = p->r->line_no;
        return true;
    }
    /* The free's own Stream is not trusted and its Size only checked: the
     * allocation's are replayed. A free that names another size is
     * counted and warned about (trace_print_warnings), not refused: the
     * replay stays faithful to what was allocated. */
    trace_event a = t->events[event];
    if (p->column[COL_SIZE] < count && size != a.size && t->size_mismatches++ == 0)
        t->first_size_mismatch_line = p->r->line_no;
    id_map_remove(&p->live, ptr);
    if (!trace_push(t, TRACE_FREE, a.alloc, a.stream, a.size)) return fail(p, "out of host memory");
    return true;
}

bool trace_parse_rmm(line_reader *r, const char *name, trace *t, trace_error *err)
{
    rmm_parser p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.r = r;
    p.t = t;
    p.err = err;
    id_map_init(&p.live);
    bool ok = true, header = false;
    for (;;) {
        int rc = line_reader_next(r);
        if (rc < 0) {
            ok = trace_fail(err, name, r->line_no + 1, "%s", r->error);
            break;
        }
        if (rc == 0) break;
        if (memchr(r->line, '\0', r->line_len)) {
            ok = fail(&p, "line contains a NUL byte");
            break;
        }
        size_t i = 0;
        while (i < r->line_len && (r->line[i] == ' ' || r->line[i] == '\t')) i++;
        if (i == r->line_len || r->line[i] == '#') continue;
        ok = header ? parse_event(&p, r->line, r->line_len) : parse_header(&p, r->line, r->line_len);
        header = true;
        if (!ok) break;
    }
    id_map_free(&p.live);
    if (ok && t->event_count == 0) {
        if (r->bytes == 0) return trace_fail(err, name, 0, "empty file");
        return trace_fail(err, name, 0, "no events (no allocate line)");
    }
    return ok;
}
