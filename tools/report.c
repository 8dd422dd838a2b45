/*
 * report.c — the text table and the JSON object of one replay.
 *
 * Ratios are printed only where their denominator is known, and JSON uses
 * null for what was not measured, so a reader never mistakes 0 for data.
 */
#include "report.h"

#include <inttypes.h>

#include "baseline_report.h"
#include "units.h"

double report_per_1k_events(uint64_t calls, uint64_t events_done)
{
    return events_done ? 1000.0 * (double)calls / (double)events_done : 0.0;
}

/* Backend calls per 1,000 events of r: what a driver would be asked. */
static double per_1k_events(uint64_t calls, const replay_result *r)
{
    return report_per_1k_events(calls, r->events_done);
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

static double ns_per_event(const report *rep)
{
    return rep->r->events_done ? (double)rep->r->call_ns / (double)rep->r->events_done : 0.0;
}

/* Time-averaged reserved ÷ time-averaged live: the memory-time product of
 * the pages held over that of the allocations, both summed over events. */
double report_time_avg_ratio(const replay_result *r)
{
    return r->live_event_sum > 0 ? r->reserved_event_sum / r->live_event_sum : 0.0;
}

double report_moved_ratio(const replay_result *r)
{
    return ratio(r->stats.bytes_moved, r->stats.bytes_allocated_total);
}

static void row_bytes(FILE *f, const char *label, uint64_t v)
{
    char h[32];
    fprintf(f, "  %-26s %20" PRIu64 "  (%s)\n", label, v, units_format_bytes(v, h, sizeof h));
}

/* Memory over time of one recorded replay: the rows both the reported
 * replay and the one at the fit capacity get, labels indented by indent. */
static void text_over_time(FILE *f, const char *indent, const replay_result *r)
{
    char label[48], res[32], live[32];
    snprintf(label, sizeof label, "%stime-avg reserved / live", indent);
    fprintf(f, "  %-26s %20.3f\n", label, report_time_avg_ratio(r));
    snprintf(label, sizeof label, "%send reserved / live", indent);
    fprintf(f, "  %-26s %20s  (%s / %s)\n", label, "", units_format_bytes(r->end_reserved, res, sizeof res),
            units_format_bytes(r->end_live, live, sizeof live));
    snprintf(label, sizeof label, "%sbytes moved / allocated", indent);
    fprintf(f, "  %-26s %19.3f%%\n", label, 100.0 * report_moved_ratio(r));
}

void report_text(FILE *f, const report *rep)
{
    const trace *t = rep->t;
    const replay_result *r = rep->r;
    const options *o = rep->o;
    char cap[32];
    fprintf(f, "%s\n", t->name);
    fprintf(f, "  %-26s %s, placement %s, relocation %s, capacity %s\n", "replay",
            replay_backend_name(o->backend), options_placement_word(o->placement),
            o->relocation == RELO_RELOCATION_OFF ? "off" : "auto",
            rep->capacity ? units_format_bytes(rep->capacity, cap, sizeof cap) : "unlimited");
    fprintf(f, "  %-26s %20zu  (%u allocations, %u stream%s)\n", "events", t->event_count, t->alloc_count,
            t->stream_count, t->stream_count == 1 ? "" : "s");
    if (r->status != RELO_OK)
        fprintf(f, "  %-26s FAILED at event %" PRIu64 ": %s\n", "status", r->failed_event + 1, r->error);
    row_bytes(f, "peak live (replay)", r->peak_live);
    if (t->header_peak_known) {
        row_bytes(f, "peak live (header)", t->header_peak_live_bytes);
        if (t->header_peak_live_bytes != r->peak_live && r->status == RELO_OK)
            fprintf(f, "  %-26s the replay's peak differs from the header's\n", "WARNING");
    }
    row_bytes(f, "peak reserved", r->peak_reserved);
    fprintf(f, "  %-26s %20.3f\n", "reserved / live", ratio(r->peak_reserved, r->peak_live));
    if (rep->fit) {
        const fit_result *fit = rep->fit;
        if (fit->found) {
            row_bytes(f, "fit capacity", fit->capacity);
            fprintf(f, "  %-26s %20.3f  (%u replays, %.2f s)\n", "fit ratio",
                    ratio(fit->capacity, t->peak_live_bytes), fit->replays, (double)fit->elapsed_ns / 1e9);
        } else {
            fprintf(f, "  %-26s not found: %s\n", "fit capacity", fit->error);
        }
    }
    if (rep->baseline_count) {
        baseline_relo_row relo = {r->status == RELO_OK,
                                  r->peak_live,
                                  r->peak_reserved,
                                  rep->fit != NULL,
                                  rep->fit && rep->fit->found,
                                  rep->fit ? rep->fit->capacity : 0};
        baseline_report_text(f, t, &relo, rep->baselines, rep->baseline_count);
    }
    if (rep->sweep) {
        const sweep_result *sw = rep->sweep;
        double peak = (double)(t->peak_live_bytes ? t->peak_live_bytes : 1);
        fprintf(f, "  %-26s %20u  (%.4f to %.4f x peak live by %.4f; %.2f s)\n", "sweep replays", sw->replays,
                (double)sw->from / peak, (double)sw->to / peak, (double)sw->step / peak,
                (double)sw->elapsed_ns / 1e9);
        if (sw->status != RELO_OK) fprintf(f, "  %-26s %s\n", "sweep stopped", sw->error);
        fprintf(f, "  %-26s %20u\n", "sweep out of memory", sw->failed);
    }
    fprintf(f, "  %-26s %20" PRIu64 "\n", "relocations", r->stats.relocations);
    fprintf(f, "  %-26s %20" PRIu64 "\n", "allocations moved", r->stats.allocations_moved);
    row_bytes(f, "bytes moved", r->stats.bytes_moved);
    fprintf(f, "  %-26s %20" PRIu64 "\n", "longest pass (ns)", r->stats.longest_pass_ns);
    fprintf(f, "  %-26s %20" PRIu64 " / %" PRIu64 "\n", "backend allocs / frees", r->stats.backend_allocs,
            r->stats.backend_frees);
    fprintf(f, "  %-26s %20.2f / %.2f\n", "  per 1,000 events", per_1k_events(r->stats.backend_allocs, r),
            per_1k_events(r->stats.backend_frees, r));
    if (r->samples.points) text_over_time(f, "", r);
    if (rep->at_fit && rep->at_fit != r) {
        const replay_result *fr = rep->at_fit;
        if (fr->status != RELO_OK) {
            fprintf(f, "  %-26s FAILED at event %" PRIu64 ": %s\n", "at fit", fr->failed_event + 1,
                    fr->error);
        } else {
            fprintf(f, "  %s\n", "at the fit capacity");
            row_bytes(f, "  peak reserved", fr->peak_reserved);
            text_over_time(f, "  ", fr);
            fprintf(f, "  %-26s %20.2f / %.2f\n", "  allocs / frees per 1,000",
                    per_1k_events(fr->stats.backend_allocs, fr), per_1k_events(fr->stats.backend_frees, fr));
        }
    }
    fprintf(f, "  %-26s %20.1f\n", "ns per event", ns_per_event(rep));
    fprintf(f, "  %-26s %20" PRIu64 " / %" PRIu64 "\n", "reserve p50 / p99 (ns)", r->reserve_p50_ns,
            r->reserve_p99_ns);
    fprintf(f, "  %-26s %20" PRIu64 "  (event %" PRIu64 ")\n", "longest call (ns)", r->longest_call_ns,
            r->longest_call_event + 1);
    if (replay_backend_has_bytes(o->backend))
        fprintf(f, "  %-26s %20" PRIu64 "  (%s)\n", "byte checks", r->verified,
                o->verify_full ? "every byte" : "sparse windows");
}

void report_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_u64_or_null(FILE *f, const char *key, bool known, uint64_t v)
{
    if (known)
        fprintf(f, ",\"%s\":%" PRIu64, key, v);
    else
        fprintf(f, ",\"%s\":null", key);
}

void report_json(FILE *f, const report *rep)
{
    const trace *t = rep->t;
    const replay_result *r = rep->r;
    const options *o = rep->o;
    fputs("{\"trace\":", f);
    report_json_string(f, t->name);
    fputs(",\"file\":", f);
    report_json_string(f, rep->path);
    fprintf(f, ",\"backend\":\"%s\",\"placement\":\"%s\",\"relocation\":\"%s\"",
            replay_backend_name(o->backend), options_placement_word(o->placement),
            o->relocation == RELO_RELOCATION_OFF ? "off" : "auto");
    json_u64_or_null(f, "capacity", rep->capacity != 0, rep->capacity);
    json_u64_or_null(f, "granule", o->backend != REPLAY_BACKEND_OPENCL, o->granule);
    fprintf(f, ",\"ok\":%s,\"status\":\"%s\"", r->status == RELO_OK ? "true" : "false",
            relo_status_name(r->status));
    fputs(",\"error\":", f);
    if (r->status == RELO_OK)
        fputs("null", f);
    else
        report_json_string(f, r->error);
    json_u64_or_null(f, "failed_event", r->status != RELO_OK, r->failed_event);
    fprintf(f, ",\"events\":%zu,\"events_done\":%" PRIu64 ",\"allocations\":%u,\"streams\":%u",
            t->event_count, r->events_done, t->alloc_count, t->stream_count);
    fprintf(f, ",\"peak_live_bytes\":%" PRIu64, r->peak_live);
    fprintf(f, ",\"trace_peak_live_bytes\":%" PRIu64, t->peak_live_bytes);
    json_u64_or_null(f, "header_peak_live_bytes", t->header_peak_known, t->header_peak_live_bytes);
    fprintf(f, ",\"peak_reserved_bytes\":%" PRIu64 ",\"reserved_ratio\":%.6f", r->peak_reserved,
            ratio(r->peak_reserved, r->peak_live));
    fprintf(f, ",\"peak_outdated_bytes\":%" PRIu64, r->peak_outdated);
    if (rep->fit && rep->fit->found)
        fprintf(f,
                ",\"fit\":{\"capacity\":%" PRIu64 ",\"ratio\":%.6f,\"failed_below\":%" PRIu64
                ",\"replays\":%u,\"seconds\":%.3f}",
                rep->fit->capacity, ratio(rep->fit->capacity, t->peak_live_bytes), rep->fit->failed_below,
                rep->fit->replays, (double)rep->fit->elapsed_ns / 1e9);
    else if (rep->fit) {
        fputs(",\"fit\":{\"capacity\":null,\"ratio\":null,\"error\":", f);
        report_json_string(f, rep->fit->error);
        fputc('}', f);
    } else
        fputs(",\"fit\":null", f);
    if (rep->sweep) {
        const sweep_result *sw = rep->sweep;
        fprintf(f,
                ",\"sweep\":{\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"step\":%" PRIu64
                ",\"replays\":%u,\"failed\":%u,\"failed_at\":[",
                sw->from, sw->to, sw->step, sw->replays, sw->failed);
        for (unsigned i = 0; i < sw->failed && i < SWEEP_MAX_NAMED; i++)
            fprintf(f, "%s%" PRIu64, i ? "," : "", sw->failed_at[i]);
        fputs("],\"error\":", f);
        if (sw->status == RELO_OK)
            fputs("null", f);
        else
            report_json_string(f, sw->error);
        fputc('}', f);
    } else {
        fputs(",\"sweep\":null", f);
    }
    const relo_stats *s = &r->stats;
    fprintf(f,
            ",\"relocations\":%" PRIu64 ",\"relocations_abandoned\":%" PRIu64
            ",\"allocations_moved\":%" PRIu64 ",\"bytes_moved\":%" PRIu64 ",\"backend_allocs\":%" PRIu64
            ",\"backend_frees\":%" PRIu64 ",\"longest_pass_ns\":%" PRIu64,
            s->relocations, s->relocations_abandoned, s->allocations_moved, s->bytes_moved, s->backend_allocs,
            s->backend_frees, s->longest_pass_ns);
    fprintf(f, ",\"backend_allocs_per_1k_events\":%.3f,\"backend_frees_per_1k_events\":%.3f",
            per_1k_events(s->backend_allocs, r), per_1k_events(s->backend_frees, r));
    if (r->samples.points) {
        fprintf(f, ",\"time_avg_reserved_ratio\":%.6f", report_time_avg_ratio(r));
    } else {
        fputs(",\"time_avg_reserved_ratio\":null", f);
    }
    fprintf(f,
            ",\"end_live_bytes\":%" PRIu64 ",\"end_reserved_bytes\":%" PRIu64 ",\"bytes_moved_ratio\":%.6f",
            r->end_live, r->end_reserved, report_moved_ratio(r));
    if (rep->at_fit) {
        const replay_result *fr = rep->at_fit;
        fprintf(f,
                ",\"at_fit\":{\"capacity\":%" PRIu64 ",\"ok\":%s,\"peak_reserved_bytes\":%" PRIu64
                ",\"time_avg_reserved_ratio\":%.6f,\"end_live_bytes\":%" PRIu64
                ",\"end_reserved_bytes\":%" PRIu64 ",\"bytes_moved\":%" PRIu64
                ",\"bytes_moved_ratio\":%.6f,\"backend_allocs_per_1k_events\":%.3f"
                ",\"backend_frees_per_1k_events\":%.3f}",
                rep->fit->capacity, fr->status == RELO_OK ? "true" : "false", fr->peak_reserved,
                report_time_avg_ratio(fr), fr->end_live, fr->end_reserved, fr->stats.bytes_moved,
                report_moved_ratio(fr), per_1k_events(fr->stats.backend_allocs, fr),
                per_1k_events(fr->stats.backend_frees, fr));
    } else {
        fputs(",\"at_fit\":null", f);
    }
    fprintf(f,
            ",\"ns_per_event\":%.1f,\"reserve_p50_ns\":%" PRIu64 ",\"reserve_p99_ns\":%" PRIu64
            ",\"longest_call_ns\":%" PRIu64 ",\"longest_call_event\":%" PRIu64 ",\"wall_seconds\":%.3f",
            ns_per_event(rep), r->reserve_p50_ns, r->reserve_p99_ns, r->longest_call_ns,
            r->longest_call_event, rep->wall_s);
    if (replay_backend_has_bytes(o->backend)) fprintf(f, ",\"byte_checks\":%" PRIu64, r->verified);
    fprintf(f, ",\"skipped_frees\":%" PRIu64 ",\"size_mismatches\":%" PRIu64, t->skipped_frees,
            t->size_mismatches);
    baseline_report_json(f, t, rep->baselines, rep->baseline_count);
    fputs(",\"samples\":[", f);
    for (size_t i = 0; i < r->samples.count; i++) {
        const sample *p = &r->samples.points[i];
        fprintf(f,
                "%s{\"event\":%" PRIu64 ",\"live\":%" PRIu64 ",\"reserved\":%" PRIu64 ",\"outdated\":%" PRIu64
                ",\"relocations\":%" PRIu64 "}",
                i ? "," : "", p->event, p->live, p->reserved, p->outdated, p->relocations);
    }
    fputs("]}", f);
}

void report_json_unreadable(FILE *f, const char *path, const trace_error *err)
{
    fputs("{\"trace\":null,\"file\":", f);
    report_json_string(f, path);
    fputs(",\"ok\":false,\"status\":\"unreadable\",\"error\":", f);
    report_json_string(f, err->message);
    if (err->line)
        fprintf(f, ",\"line\":%" PRIu64 "}", err->line);
    else
        fputs(",\"line\":null}", f);
}
