/*
 * relo_format.c — the parser of relo trace format 1 (docs/trace-format.md).
 *
 * Ids are checked as they come: each maps to the event that allocated it
 * and whether it is still live, so a duplicate id or a free of a dead one is
 * caught on its own line rather than as a mystery in the replay.
 */
#include <string.h>

#include "id_map.h"
#include "parse_util.h"
#include "trace_reader.h"

/* What the id map stores: the allocation's event index and a live bit. */
#define LIVE_BIT 1u

typedef struct relo_parser {
    const char *name;
    line_reader *r;
    trace *t;
    trace_error *err;
    id_map ids;
} relo_parser;

static bool fail_number(relo_parser *p, const char *what, parse_field f, parse_result pr)
{
    char q[48];
    parse_quote(f.s, f.n, q, sizeof q);
    if (pr == PARSE_OVERFLOW)
        return trace_fail(p->err, p->name, p->r->line_no, "%s '%s' does not fit in 64 bits", what, q);
    if (f.n > 1 && f.s[0] == '-' && parse_u64_dec(f.s + 1, f.n - 1, &(uint64_t){0}) != PARSE_NOT_NUMBER)
        return trace_fail(p->err, p->name, p->r->line_no,
                          "%s '%s' is negative (expected a whole number from 0 to 2^64-1)", what, q);
    return trace_fail(p->err, p->name, p->r->line_no, "%s '%s' is not a number", what, q);
}

/* Reads a header value's leading number ("# events: 182344"). */
static bool header_number(relo_parser *p, const char *key, const char *v, size_t n, uint64_t *out)
{
    size_t digits = 0;
    while (digits < n && v[digits] >= '0' && v[digits] <= '9') digits++;
    parse_result pr = parse_u64_dec(v, digits, out);
    if (pr == PARSE_OK) return true;
    parse_field f = {v, n};
    return fail_number(p, key, f, pr == PARSE_EMPTY ? PARSE_NOT_NUMBER : pr);
}

/* A line starting with '#': the version line, a "key: value" header, or a comment. */
static bool parse_comment(relo_parser *p, const char *line, size_t n)
{
    const char *s = line + 1;
    size_t k = n - 1;
    while (k > 0 && (*s == ' ' || *s == '\t')) s++, k--;
    static const char version_key[] = "relo-trace";
    size_t vk = sizeof version_key - 1;
    if (k >= vk && memcmp(s, version_key, vk) == 0 && (k == vk || s[vk] == ' ' || s[vk] == '\t')) {
        parse_field f[3];
        size_t count = parse_split_blank(s, k, f, 3);
        if (count != 2 || !parse_field_is(f[1], "1")) {
            char q[48];
            parse_quote(count >= 2 ? f[1].s : "", count >= 2 ? f[1].n : 0, q, sizeof q);
            return trace_fail(p->err, p->name, p->r->line_no,
                              "unsupported trace format version '%s' (this reader reads version 1)", q);
        }
        return true;
    }
    const char *colon = memchr(s, ':', k);
    if (!colon) return true; /* a plain comment */
    size_t key_n = (size_t)(colon - s);
    const char *v = colon + 1;
    size_t vn = k - key_n - 1;
    while (vn > 0 && (*v == ' ' || *v == '\t')) v++, vn--;
    parse_field key = {s, key_n};
    trace *t = p->t;
    if (parse_field_is(key, "peak_live_bytes")) {
        if (!header_number(p, "header peak_live_bytes", v, vn, &t->header_peak_live_bytes)) return false;
        t->header_peak_known = true;
    } else if (parse_field_is(key, "events")) {
        if (!header_number(p, "header events", v, vn, &t->header_events)) return false;
        t->header_events_known = true;
    } else if (parse_field_is(key, "workload") && t->workload[0] == '\0') {
        /* The first word names the workload; the rest describes it. */
        size_t w = 0;
        while (w < vn && v[w] != ' ' && v[w] != '\t' && w + 1 < sizeof t->workload) w++;
        memcpy(t->workload, v, w);
        t->workload[w] = '\0';
    }
    return true; /* unknown keys are ignored, as the format asks */
}

/* Reads an id field: a positive decimal number. */
static bool parse_id(relo_parser *p, parse_field f, uint64_t *id)
{
    parse_result pr = parse_u64_dec(f.s, f.n, id);
    if (pr != PARSE_OK) return fail_number(p, "id", f, pr);
    if (*id == 0) return trace_fail(p->err, p->name, p->r->line_no, "id 0 is not allowed (ids are positive)");
    return true;
}

static bool parse_alloc(relo_parser *p, const parse_field *f, size_t count)
{
    uint64_t line = p->r->line_no;
    if (count < 2)
        return trace_fail(p->err, p->name, line, "allocation without an id (expected 'a ID SIZE [STREAM]')");
    if (count < 3)
        return trace_fail(p->err, p->name, line, "allocation without a size (expected 'a ID SIZE [STREAM]')");
    if (count > 4)
        return trace_fail(p->err, p->name, line,
                          "too many fields for an allocation (expected 'a ID SIZE [STREAM]')");
    uint64_t id, size, stream = 0;
    if (!parse_id(p, f[1], &id)) return false;
    parse_result pr = parse_u64_dec(f[2].s, f[2].n, &size);
    if (pr != PARSE_OK) return fail_number(p, "size", f[2], pr);
    if (count == 4) {
        pr = parse_u64_dec(f[3].s, f[3].n, &stream);
        if (pr != PARSE_OK) return fail_number(p, "stream", f[3], pr);
    }
    uint64_t prior;
    if (id_map_get(&p->ids, id, &prior))
        return trace_fail(p->err, p->name, line, "duplicate id %llu (%s; ids are never reused)",
                          (unsigned long long)id, (prior & LIVE_BIT) ? "still live" : "already freed");
    trace *t = p->t;
    if (t->alloc_count == UINT32_MAX)
        return trace_fail(p->err, p->name, line, "more than %u allocations", UINT32_MAX - 1u);
    t->reader_bytes = id_map_bytes_after_put(&p->ids);
    if (trace_full(t)) return trace_fail_full(p->err, p->name, line, t);
    uint16_t si;
    if (!trace_stream_index(t, stream, &si))
        return trace_fail(p->err, p->name, line, "more than %u distinct streams", TRACE_MAX_STREAMS);
    uint64_t event = t->event_count;
    if (!id_map_put(&p->ids, id, event << 1 | LIVE_BIT) ||
        !trace_push(t, TRACE_ALLOC, t->alloc_count, si, size))
        return trace_fail(p->err, p->name, line, "out of host memory");
    t->alloc_count++;
    return true;
}

static bool parse_free(relo_parser *p, const parse_field *f, size_t count)
{
    uint64_t line = p->r->line_no;
    if (count < 2) return trace_fail(p->err, p->name, line, "free without an id (expected 'f ID')");
    if (count > 2) return trace_fail(p->err, p->name, line, "too many fields for a free (expected 'f ID')");
    uint64_t id, value;
    if (!parse_id(p, f[1], &id)) return false;
    if (!id_map_get(&p->ids, id, &value))
        return trace_fail(p->err, p->name, line, "free of id %llu, which is not live (never allocated)",
                          (unsigned long long)id);
    if (!(value & LIVE_BIT))
        return trace_fail(p->err, p->name, line, "free of id %llu, which is not live (already freed)",
                          (unsigned long long)id);
    trace *t = p->t;
    t->reader_bytes = id_map_bytes(&p->ids);
    if (trace_full(t)) return trace_fail_full(p->err, p->name, line, t);
    const trace_event *a = &t->events[value >> 1];
    /* Copy before pushing: the push may move the event array. */
    uint32_t alloc = a->alloc;
    uint16_t stream = a->stream;
    uint64_t size = a->size;
    if (!id_map_put(&p->ids, id, value & ~(uint64_t)LIVE_BIT) ||
        !trace_push(t, TRACE_FREE, alloc, stream, size))
        return trace_fail(p->err, p->name, line, "out of host memory");
    return true;
}

static bool parse_line(relo_parser *p, const char *line, size_t n)
{
    if (memchr(line, '\0', n)) return trace_fail(p->err, p->name, p->r->line_no, "line contains a NUL byte");
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i == n) return true; /* blank lines are allowed */
    if (line[i] == '#') return parse_comment(p, line + i, n - i);
    parse_field f[5];
    size_t count = parse_split_blank(line + i, n - i, f, 5);
    if (parse_field_is(f[0], "a")) return parse_alloc(p, f, count);
    if (parse_field_is(f[0], "f")) return parse_free(p, f, count);
    char q[48];
    parse_quote(f[0].s, f[0].n, q, sizeof q);
    if (memchr(line + i, ',', n - i))
        return trace_fail(p->err, p->name, p->r->line_no,
                          "unknown event '%s' (expected 'a' or 'f'): this line has commas, an RMM log? "
                          "try --format rmm",
                          q);
    return trace_fail(p->err, p->name, p->r->line_no,
                      "unknown event '%s' (expected 'a' or 'f'): an RMM log needs --format rmm, a "
                      "PyTorch snapshot relo-torch-snapshot-to-trace first",
                      q);
}

bool trace_parse_relo(line_reader *r, const char *name, trace *t, trace_error *err)
{
    relo_parser p = {name, r, t, err, {0}};
    id_map_init(&p.ids);
    bool ok = true;
    for (;;) {
        int rc = line_reader_next(r);
        if (rc < 0) {
            ok = trace_fail(err, name, r->line_no + 1, "%s", r->error);
            break;
        }
        if (rc == 0) break;
        if (!parse_line(&p, r->line, r->line_len)) {
            ok = false;
            break;
        }
    }
    id_map_free(&p.ids);
    if (ok && t->event_count == 0) {
        if (r->bytes == 0) return trace_fail(err, name, 0, "empty file");
        return trace_fail(err, name, 0, "no events (a trace needs at least one 'a' line)");
    }
    return ok;
}
