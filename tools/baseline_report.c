/*
 * baseline_report.c — text rows and JSON of the baselines (see
 * baseline_report.h). As in report.c, a ratio whose denominator is unknown
 * is not printed, and JSON says null for what was not measured.
 */
#include "baseline_report.h"

#include <inttypes.h>

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* Device calls per 1,000 events done. */
static double per_1k(uint64_t calls, const baseline_run *r)
{
    return r->events_done ? 1000.0 * (double)calls / (double)r->events_done : 0.0;
}

/* One row; the ratio of a replay that stopped early is not shown, since its
 * live bytes never reached the trace's peak. */
static void row(FILE *f, const trace *t, const char *name, bool ok, uint64_t peak_live,
                uint64_t peak_reserved, bool fitted, bool fit_found, uint64_t fit_capacity, const char *note)
{
    fprintf(f, "    %-20s %16" PRIu64, name, peak_reserved);
    if (ok)
        fprintf(f, " %14.3f", ratio(peak_reserved, peak_live));
    else
        fprintf(f, " %14s", "-");
    if (fitted && fit_found)
        fprintf(f, " %16" PRIu64 " %10.3f", fit_capacity, ratio(fit_capacity, t->peak_live_bytes));
    else if (fitted)
        fprintf(f, " %16s %10s", "not found", "-");
    fprintf(f, "%s%s\n", note[0] ? "  " : "", note);
}

void baseline_report_text(FILE *f, const trace *t, const baseline_relo_row *relo, const baseline_measure *b,
                          int count)
{
    if (count == 0) return;
    fprintf(f, "  %-22s %16s %14s", "allocator", "peak reserved", "reserved/live");
    if (relo->fitted) fprintf(f, " %16s %10s", "fit capacity", "fit ratio");
    fputc('\n', f);
    row(f, t, "relo", relo->ok, relo->peak_live, relo->peak_reserved, relo->fitted, relo->fit_found,
        relo->fit_capacity, relo->ok ? "" : "(failed)");
    for (int i = 0; i < count; i++) {
        const baseline_run *r = &b[i].run;
        char note[96] = "";
        if (r->status != BASELINE_COMPLETED)
            snprintf(note, sizeof note, "%s at event %" PRIu64,
                     r->status == BASELINE_OUT_OF_MEMORY ? "out of memory" : "failed", r->failed_event + 1);
        row(f, t, baseline_kind_name(b[i].kind), r->status == BASELINE_COMPLETED, r->peak_live,
            r->peak_reserved, b[i].fitted, b[i].fit.found, b[i].fit.capacity, note);
    }
    /* What relo's own rows say of itself (backend calls, memory over
     * time), for each baseline. */
    for (int i = 0; i < count; i++) {
        const baseline_run *r = &b[i].run;
        fprintf(f, "    %-20s device allocs / frees per 1,000 events %.2f / %.2f",
                baseline_kind_name(b[i].kind), per_1k(r->device_allocs, r), per_1k(r->device_frees, r));
        if (r->live_event_sum > 0)
            fprintf(f, ", time-avg reserved / live %.3f", r->reserved_event_sum / r->live_event_sum);
        fputc('\n', f);
    }
}

static void json_fit(FILE *f, const trace *t, const baseline_measure *m)
{
    if (!m->fitted) {
        fputs(",\"fit\":null", f);
    } else if (m->fit.found) {
        fprintf(f, ",\"fit\":{\"capacity\":%" PRIu64 ",\"ratio\":", m->fit.capacity);
        if (t->peak_live_bytes)
            fprintf(f, "%.6f", ratio(m->fit.capacity, t->peak_live_bytes));
        else
            fputs("null", f);
        fprintf(f, ",\"failed_below\":%" PRIu64 ",\"replays\":%u}", m->fit.failed_below, m->fit.replays);
    } else {
        fprintf(f, ",\"fit\":{\"capacity\":null,\"ratio\":null,\"status\":\"%s\",\"replays\":%u}",
                baseline_status_name(m->fit.status), m->fit.replays);
    }
}

void baseline_report_json(FILE *f, const trace *t, const baseline_measure *b, int count)
{
    fputs(",\"baselines\":[", f);
    for (int i = 0; i < count; i++) {
        const baseline_run *r = &b[i].run;
        fprintf(f, "%s{\"name\":\"%s\"", i ? "," : "", baseline_kind_name(b[i].kind));
        if (r->capacity)
            fprintf(f, ",\"capacity\":%" PRIu64, r->capacity);
        else
            fputs(",\"capacity\":null", f);
        fprintf(f, ",\"ok\":%s,\"status\":\"%s\"", r->status == BASELINE_COMPLETED ? "true" : "false",
                baseline_status_name(r->status));
        if (r->status == BASELINE_COMPLETED)
            fputs(",\"failed_event\":null", f);
        else
            fprintf(f, ",\"failed_event\":%" PRIu64, r->failed_event);
        fprintf(f,
                ",\"events_done\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64
                ",\"peak_reserved_bytes\":%" PRIu64 ",\"reserved_ratio\":%.6f",
                r->events_done, r->peak_live, r->peak_reserved, ratio(r->peak_reserved, r->peak_live));
        fprintf(f,
                ",\"device_allocs\":%" PRIu64 ",\"device_frees\":%" PRIu64
                ",\"device_allocs_per_1k_events\":%.3f,\"device_frees_per_1k_events\":%.3f"
                ",\"time_avg_reserved_ratio\":",
                r->device_allocs, r->device_frees, per_1k(r->device_allocs, r), per_1k(r->device_frees, r));
        if (r->live_event_sum > 0)
            fprintf(f, "%.6f", r->reserved_event_sum / r->live_event_sum);
        else
            fputs("null", f);
        fprintf(f, ",\"end_live_bytes\":%" PRIu64 ",\"end_reserved_bytes\":%" PRIu64, r->end_live,
                r->end_reserved);
        json_fit(f, t, &b[i]);
        fputs(",\"samples\":[", f);
        for (size_t k = 0; k < r->samples.count; k++) {
            const sample *p = &r->samples.points[k];
            fprintf(f, "%s{\"event\":%" PRIu64 ",\"live\":%" PRIu64 ",\"reserved\":%" PRIu64 "}",
                    k ? "," : "", p->event, p->live, p->reserved);
        }
        fputs("]}", f);
    }
    fputc(']', f);
}
