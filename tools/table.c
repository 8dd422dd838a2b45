/*
 * table.c — relo-replay --table (see table.h): measuring a row with the
 * replayer's parts, writing it as text, Markdown or JSON, and expanding
 * folders into the traces they hold.
 *
 * Text and Markdown show each figure once, rounded as people read it;
 * JSON gives the exact values, and null for what was not measured.
 */
#include "table.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "baseline.h"
#include "fit.h"
#include "hold_bound.h"
#include "report.h"
#include "units.h"

const char *table_run_kind_name(table_run_kind k)
{
    static const char *const names[TABLE_RUN_COUNT] = {"packed", "adaptive", "pytorch", "pytorch-expandable"};
    return (unsigned)k < TABLE_RUN_COUNT ? names[k] : "unknown";
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* relo under one placement: an unlimited replay, recorded for memory over
 * time, whose peak reserved bounds the fit search from above, as
 * relo-replay --fit does. */
static void measure_relo(const trace *t, const replay_config *base, relo_placement placement, table_run *out)
{
    replay_config cfg = *base;
    cfg.placement = placement;
    cfg.capacity = 0;
    cfg.record = true;
    cfg.observer = NULL;
    if (cfg.progress) progress_begin(cfg.progress, t->name, t->event_count);
    replay_result r;
    bool ok = replay_run(t, &cfg, &r);
    if (cfg.progress) progress_end(cfg.progress);
    out->completed = ok;
    out->peak_live = r.peak_live;
    out->peak_reserved = r.peak_reserved;
    out->time_avg_ratio = report_time_avg_ratio(&r);
    out->allocs_per_1k = report_per_1k_events(r.stats.backend_allocs, r.events_done);
    out->bytes_moved = r.stats.bytes_moved;
    out->moved_ratio = report_moved_ratio(&r);
    if (!ok) {
        snprintf(out->error, sizeof out->error, "the unlimited replay failed at event %" PRIu64 ": %.240s",
                 r.failed_event + 1, r.error);
        replay_result_free(&r);
        return;
    }
    fit_result fit;
    fit_search(t, &cfg, r.peak_reserved, &fit);
    replay_result_free(&r);
    out->fit_found = fit.found;
    out->fit_capacity = fit.capacity;
    if (!fit.found) snprintf(out->error, sizeof out->error, "no fit capacity: %.280s", fit.error);
}

/* A model of PyTorch's allocator: unlimited replay and fit search, by
 * baseline_measure_run as --baseline does. */
static void measure_baseline(const trace *t, baseline_kind k, table_run *out)
{
    baseline_measure m;
    baseline_measure_run(k, t, 0, true, 0, &m);
    const baseline_run *r = &m.run;
    out->completed = r->status == BASELINE_COMPLETED;
    out->peak_live = r->peak_live;
    out->peak_reserved = r->peak_reserved;
    out->time_avg_ratio = r->live_event_sum > 0 ? r->reserved_event_sum / r->live_event_sum : 0.0;
    out->allocs_per_1k = report_per_1k_events(r->device_allocs, r->events_done);
    out->fit_found = m.fit.found;
    out->fit_capacity = m.fit.capacity;
    if (!out->completed)
        snprintf(out->error, sizeof out->error, "the unlimited replay stopped at event %" PRIu64 ": %s",
                 r->failed_event + 1, baseline_status_name(r->status));
    else if (!m.fit.found)
        snprintf(out->error, sizeof out->error, "no fit capacity: %s", baseline_status_name(m.fit.status));
    baseline_measure_free(&m);
}

bool table_measure(const trace *t, const char *path, const replay_config *base, table_row *out)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    snprintf(out->name, sizeof out->name, "%s", t->name);
    out->events = t->event_count;
    out->peak_live = t->peak_live_bytes;
    hold_bound hb;
    if (hold_bound_init(&hb, t, fit_capacity_step(base), 1)) {
        out->floor_ratio = hold_bound_fit_floor(&hb);
        hold_bound_free(&hb);
    }
    measure_relo(t, base, RELO_PLACEMENT_DEFAULT, &out->runs[TABLE_RUN_PACKED]);
    measure_relo(t, base, RELO_PLACEMENT_ADAPTIVE, &out->runs[TABLE_RUN_ADAPTIVE]);
    for (int k = 0; k < BASELINE_KIND_COUNT; k++)
        measure_baseline(t, (baseline_kind)k, &out->runs[TABLE_RUN_PYTORCH + k]);
    bool ok = true;
    for (int k = 0; k < TABLE_RUN_COUNT; k++) ok = ok && out->runs[k].completed && out->runs[k].fit_found;
    return ok;
}

/* ---- the columns of text and Markdown ---- */

/* Calls per 1,000 events to three significant digits (0.180, 6.12, 36.6, 144). */
static void format_per_1k(double v, char *out, size_t cap)
{
    if (v >= 99.95)
        snprintf(out, cap, "%.0f", v);
    else if (v >= 9.995)
        snprintf(out, cap, "%.1f", v);
    else
        snprintf(out, cap, "%.2f", v);
}

static void format_fit(const table_row *row, table_run_kind k, char *out, size_t cap)
{
    const table_run *r = &row->runs[k];
    if (r->fit_found && row->peak_live)
        snprintf(out, cap, "%.3f", ratio(r->fit_capacity, row->peak_live));
    else
        snprintf(out, cap, "-");
}

typedef enum column_id {
    COL_TRACE = 0,
    COL_PEAK_LIVE,
    COL_FIT_PACKED,
    COL_FIT_ADAPTIVE,
    COL_FIT_PYTORCH,
    COL_FIT_PYTORCH_EXPANDABLE,
    COL_FLOOR,
    COL_UNLIMITED,
    COL_TIME_AVG,
    COL_ALLOCS_RELO,
    COL_ALLOCS_PYTORCH,
    COL_BYTES_MOVED,
    COL_COUNT
} column_id;

typedef struct column {
    const char *md;   /* the Markdown header */
    const char *text; /* the text header */
    int width;        /* the text column's width */
} column;

static const column columns[COL_COUNT] = {
    {"trace", "trace", -26},
    {"peak live", "peak live", 10},
    {"fit: packed (default)", "packed", 6},
    {"fit: adaptive", "adaptive", 8},
    {"fit: PyTorch", "pytorch", 7},
    {"fit: PyTorch expandable", "expand.", 7},
    {"floor", "floor", 6},
    {"unlimited peak / live", "unlim.", 6},
    {"time-avg held / live", "t-avg", 6},
    {"device allocs / 1k events: relo", "allocs", 7},
    {"device allocs / 1k events: PyTorch", "pt-alloc", 8},
    {"bytes moved", "moved", 10},
};

/* Cell c of row into out. */
static void format_cell(const table_row *row, column_id c, char *out, size_t cap)
{
    const table_run *packed = &row->runs[TABLE_RUN_PACKED];
    const table_run *pytorch = &row->runs[TABLE_RUN_PYTORCH];
    switch (c) {
    case COL_TRACE: snprintf(out, cap, "%s", row->name); break;
    case COL_PEAK_LIVE: units_format_bytes(row->peak_live, out, cap); break;
    case COL_FIT_PACKED: format_fit(row, TABLE_RUN_PACKED, out, cap); break;
    case COL_FIT_ADAPTIVE: format_fit(row, TABLE_RUN_ADAPTIVE, out, cap); break;
    case COL_FIT_PYTORCH: format_fit(row, TABLE_RUN_PYTORCH, out, cap); break;
    case COL_FIT_PYTORCH_EXPANDABLE: format_fit(row, TABLE_RUN_PYTORCH_EXPANDABLE, out, cap); break;
    case COL_FLOOR: snprintf(out, cap, "%.3f", row->floor_ratio); break;
    case COL_UNLIMITED:
        if (packed->completed)
            snprintf(out, cap, "%.3f", ratio(packed->peak_reserved, packed->peak_live));
        else
            snprintf(out, cap, "-");
        break;
    case COL_TIME_AVG:
        if (packed->completed)
            snprintf(out, cap, "%.3f", packed->time_avg_ratio);
        else
            snprintf(out, cap, "-");
        break;
    case COL_ALLOCS_RELO:
        if (packed->completed)
            format_per_1k(packed->allocs_per_1k, out, cap);
        else
            snprintf(out, cap, "-");
        break;
    case COL_ALLOCS_PYTORCH:
        if (pytorch->completed)
            format_per_1k(pytorch->allocs_per_1k, out, cap);
        else
            snprintf(out, cap, "-");
        break;
    case COL_BYTES_MOVED:
        if (packed->completed)
            units_format_bytes(packed->bytes_moved, out, cap);
        else
            snprintf(out, cap, "-");
        break;
    default: snprintf(out, cap, "?"); break;
    }
}

/* A Markdown cell: '|' would end it, so it is escaped. */
static void md_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s, f);
    }
}

/* ---- JSON ---- */

static void json_run(FILE *f, const table_row *row, table_run_kind k)
{
    const table_run *r = &row->runs[k];
    fprintf(f, "%s\"%s\":{\"completed\":%s", k ? "," : "", table_run_kind_name(k),
            r->completed ? "true" : "false");
    if (r->fit_found)
        fprintf(f, ",\"fit_capacity\":%" PRIu64 ",\"fit_ratio\":%.6f", r->fit_capacity,
                ratio(r->fit_capacity, row->peak_live));
    else
        fputs(",\"fit_capacity\":null,\"fit_ratio\":null", f);
    if (r->completed)
        fprintf(f,
                ",\"peak_reserved_bytes\":%" PRIu64
                ",\"reserved_ratio\":%.6f,\"time_avg_reserved_ratio\":%.6f"
                ",\"device_allocs_per_1k_events\":%.3f,\"bytes_moved\":%" PRIu64
                ",\"bytes_moved_ratio\":%.6f",
                r->peak_reserved, ratio(r->peak_reserved, r->peak_live), r->time_avg_ratio, r->allocs_per_1k,
                r->bytes_moved, r->moved_ratio);
    else
        fputs(
            ",\"peak_reserved_bytes\":null,\"reserved_ratio\":null,\"time_avg_reserved_ratio\":null"
            ",\"device_allocs_per_1k_events\":null,\"bytes_moved\":null,\"bytes_moved_ratio\":null",
            f);
    fputs(",\"error\":", f);
    if (r->error[0])
        report_json_string(f, r->error);
    else
        fputs("null", f);
    fputc('}', f);
}

static void json_row(FILE *f, const table_row *row)
{
    bool ok = true;
    for (int k = 0; k < TABLE_RUN_COUNT; k++) ok = ok && row->runs[k].completed && row->runs[k].fit_found;
    fputs("{\"trace\":", f);
    report_json_string(f, row->name);
    fputs(",\"file\":", f);
    report_json_string(f, row->path);
    fprintf(f,
            ",\"ok\":%s,\"events\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64
            ",\"floor_ratio\":%.6f,\"runs\":{",
            ok ? "true" : "false", row->events, row->peak_live, row->floor_ratio);
    for (int k = 0; k < TABLE_RUN_COUNT; k++) json_run(f, row, (table_run_kind)k);
    fputs("}}", f);
}

/* ---- writing ---- */

void table_begin(FILE *f, const options *o)
{
    if (o->table == OPTIONS_TABLE_JSON) {
        fprintf(
            f,
            "{\"tool\":\"relo-replay\",\"version\":\"%s\",\"table\":{\"backend\":\"%s\",\"granule\":%" PRIu64
            "},\"traces\":[\n",
            RELO_VERSION_STRING, replay_backend_name(o->backend), o->granule);
        return;
    }
    for (int c = 0; c < COL_COUNT; c++) {
        if (o->table == OPTIONS_TABLE_MD)
            fprintf(f, "| %s ", columns[c].md);
        else
            fprintf(f, "%s%*s", c ? "  " : "", columns[c].width, columns[c].text);
    }
    if (o->table == OPTIONS_TABLE_MD) {
        fputs("|\n", f);
        for (int c = 0; c < COL_COUNT; c++) fputs(c == COL_TRACE ? "|---" : "|---:", f);
    }
    fputs(o->table == OPTIONS_TABLE_MD ? "|\n" : "\n", f);
}

void table_write_row(FILE *f, const options *o, const table_row *row, int row_index)
{
    if (o->table == OPTIONS_TABLE_JSON) {
        if (row_index) fputs(",\n", f);
        json_row(f, row);
        return;
    }
    char cell[TRACE_NAME_MAX + 8];
    for (int c = 0; c < COL_COUNT; c++) {
        format_cell(row, (column_id)c, cell, sizeof cell);
        if (o->table == OPTIONS_TABLE_MD) {
            fputs("| ", f);
            md_text(f, cell);
            fputc(' ', f);
        } else {
            fprintf(f, "%s%*s", c ? "  " : "", columns[c].width, cell);
        }
    }
    fputs(o->table == OPTIONS_TABLE_MD ? "|\n" : "\n", f);
}

void table_write_unreadable(FILE *f, const options *o, const char *path, const trace_error *err,
                            int row_index)
{
    if (o->table != OPTIONS_TABLE_JSON) return;
    if (row_index) fputs(",\n", f);
    report_json_unreadable(f, path, err);
}

void table_end(FILE *f, const options *o)
{
    if (o->table == OPTIONS_TABLE_JSON) {
        fputs("\n]}\n", f);
    } else if (o->table == OPTIONS_TABLE_TEXT) {
        fputs(
            "fit ratios (smallest device the trace completes on / peak live): packed, adaptive, pytorch and\n"
            "expand. (PyTorch with expandable segments); floor: peak live rounded up to the granule / peak\n"
            "live; on an unlimited device: unlim. (peak reserved / peak live), t-avg (time-averaged\n"
            "reserved / live), allocs and pt-alloc (device allocations per 1,000 events, relo's packed\n"
            "placement and PyTorch's), moved (bytes relocation copied)\n",
            f);
    }
}

/* ---- folders ---- */

static bool is_trace_name(const char *name)
{
    size_t n = strlen(name);
    return (n > 6 && strcmp(name + n - 6, ".trace") == 0) ||
           (n > 9 && strcmp(name + n - 9, ".trace.gz") == 0);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends a copy of s (or of dir/s) to p. */
static bool add_path(table_paths *p, int *cap, const char *dir, const char *s)
{
    if (p->count == *cap) {
        int grown = *cap ? *cap * 2 : 16;
        char **more = realloc(p->paths, (size_t)grown * sizeof *more);
        if (!more) return false;
        p->paths = more;
        *cap = grown;
    }
    size_t dir_n = dir ? strlen(dir) : 0;
    bool slash = dir_n > 0 && dir[dir_n - 1] != '/';
    size_t n = dir_n + (slash ? 1 : 0) + strlen(s) + 1;
    char *copy = malloc(n);
    if (!copy) return false;
    snprintf(copy, n, "%s%s%s", dir ? dir : "", slash ? "/" : "", s);
    p->paths[p->count++] = copy;
    return true;
}

/* Adds the traces in folder dir, sorted; returns false when it holds none. */
static bool add_folder(table_paths *p, int *cap, const char *dir, bool *oom)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    int first = p->count;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_trace_name(e->d_name)) continue;
        if (!add_path(p, cap, dir, e->d_name)) {
            *oom = true;
            break;
        }
    }
    closedir(d);
    if (p->count == first) return false; /* none (and maybe no list yet) */
    qsort(p->paths + first, (size_t)(p->count - first), sizeof *p->paths, by_name);
    return true;
}

bool table_paths_expand(char *const *args, int count, table_paths *out)
{
    memset(out, 0, sizeof *out);
    int cap = 0;
    bool oom = false;
    for (int i = 0; i < count && !oom; i++) {
        struct stat st;
        if (strcmp(args[i], "-") != 0 && stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (!add_folder(out, &cap, args[i], &oom) && !oom) {
                fprintf(stderr, "relo-replay: no traces (*.trace, *.trace.gz) in %s\n", args[i]);
                table_paths_free(out);
                return false;
            }
        } else if (!add_path(out, &cap, NULL, args[i])) {
            oom = true;
        }
    }
    if (oom) {
        fprintf(stderr, "relo-replay: out of host memory listing the traces\n");
        table_paths_free(out);
        return false;
    }
    return true;
}

void table_paths_free(table_paths *p)
{
    for (int i = 0; i < p->count; i++) free(p->paths[i]);
    free(p->paths);
    memset(p, 0, sizeof *p);
}
