/*
 * html.c — writes the interactive report (see html.h): the page template
 * (report_page.html, compiled in by CMake) with the replay's data as JSON
 * where its RELO_DATA marker is.
 *
 * The data sits inside a <script> element, so every '<' in it is written
 * as \u003c: no trace name can close the element early.
 */
#include "html.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "verdict.h"

/* The template, generated from report_page.html at build time. */
extern const unsigned char relo_report_page[];
extern const size_t relo_report_page_size;

#define MARKER "/*RELO_DATA*/"

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* JSON text from relo (numbers, names of pools) copied with '<' escaped. */
static void json_raw(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("\\u003c", f);
        else
            fputc(*s, f);
    }
}

static void run_samples(FILE *f, const sampler *s, bool relo)
{
    fputs("\"samples\":[", f);
    for (size_t i = 0; i < s->count; i++) {
        const sample *p = &s->points[i];
        fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
                i ? "," : "", p->event, p->live, p->reserved, relo ? p->outdated : 0,
                relo ? p->relocations : 0, p->reserved_max);
    }
    fputc(']', f);
}

static void write_rows(FILE *f, const verdict *v)
{
    fputs("\"rows\":[", f);
    for (int i = 0; i < v->row_count; i++) {
        const verdict_row *w = &v->rows[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_string(f, w->name);
        fprintf(f, ",\"relo\":%s,\"fitted\":%s,\"fit_capacity\":", w->relo ? "true" : "false",
                w->fitted ? "true" : "false");
        if (w->fit_found)
            fprintf(f, "%" PRIu64 ",\"fit_ratio\":%.6f", w->fit_capacity, w->fit_ratio);
        else
            fputs("null,\"fit_ratio\":null", f);
        fprintf(f, ",\"reported\":%d,\"measured\":%d}", w->reported, w->measured);
    }
    fputc(']', f);
}

static void write_runs(FILE *f, const verdict *v)
{
    fputs("\"runs\":[", f);
    for (int i = 0; i < v->run_count; i++) {
        const verdict_run *r = &v->runs[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_string(f, r->name);
        fprintf(f,
                ",\"row\":%d,\"relo\":%s,\"at_fit\":%s,\"capacity\":%" PRIu64
                ",\"ok\":%s"
                ",\"out_of_memory\":%s,\"failed_event\":%" PRIu64 ",\"events_done\":%" PRIu64
                ",\"peak_reserved\":%" PRIu64 ",\"time_avg_ratio\":%.6f,\"end_reserved\":%" PRIu64
                ",\"end_live\":%" PRIu64 ",\"bytes_moved\":%" PRIu64 ",\"device_allocs\":%" PRIu64
                ",\"allocs_per_1k\":%.3f,",
                r->row, r->relo ? "true" : "false", r->at_fit ? "true" : "false", r->capacity,
                r->ok ? "true" : "false", r->out_of_memory ? "true" : "false", r->failed_event,
                r->events_done, r->peak_held, r->time_avg_ratio, r->end_held, r->end_live, r->bytes_moved,
                r->device_allocs, r->allocs_per_1k);
        run_samples(f, r->samples, r->relo);
        fputc('}', f);
    }
    fputc(']', f);
}

static void write_relocations(FILE *f, const html_record *rec)
{
    fputs("\"relocations\":[", f);
    for (size_t i = 0; i < rec->relocation_count; i++) {
        const html_relocation *x = &rec->relocations[i];
        fprintf(f,
                "%s{\"event\":%" PRIu64 ",\"relocations\":%" PRIu64 ",\"allocations_moved\":%" PRIu64
                ",\"bytes_moved\":%" PRIu64 ",\"moves_seen\":%" PRIu32 ",\"moves\":[",
                i ? "," : "", x->event, x->relocations, x->allocations_moved, x->bytes_moved, x->moves_seen);
        for (uint32_t k = 0; k < x->move_count; k++) {
            const html_move *m = &rec->moves[x->first_move + k];
            fprintf(f, "%s[%" PRIu32 ",%" PRIu64 ",%" PRIu32 ",%" PRIu64 ",%" PRIu32 ",%" PRIu64 "]",
                    k ? "," : "", m->alloc + 1, m->size, m->from_page, m->from_offset, m->to_page,
                    m->to_offset);
        }
        fputs("]}", f);
    }
    fprintf(f, "],\"relocations_unlisted\":%" PRIu64 ",\"first_unlisted_event\":%" PRIu64,
            rec->relocations_unlisted, rec->first_unlisted_event);
}

static void write_snapshots(FILE *f, const html_record *rec)
{
    fputs(",\"snapshots\":[", f);
    for (size_t i = 0; i < rec->snapshot_count; i++) {
        const html_snapshot *s = &rec->snapshots[i];
        fprintf(f, "%s{\"event\":%" PRIu64 ",\"why\":", i ? "," : "", s->event);
        json_string(f, s->why);
        fprintf(f,
                ",\"cut\":%s,\"stats\":{\"bytes_in_use\":%" PRIu64 ",\"bytes_reserved\":%" PRIu64
                ",\"bytes_outdated\":%" PRIu64 ",\"pages\":%" PRIu64 ",\"outdated_pages\":%" PRIu64
                ",\"guarded_pages\":%" PRIu64 "},\"device\":",
                s->slices_cut ? "true" : "false", s->stats.bytes_in_use, s->stats.bytes_reserved,
                s->stats.bytes_outdated, s->stats.pages, s->stats.outdated_pages, s->stats.guarded_pages);
        if (s->pools_json && s->pools_json[0])
            json_raw(f, s->pools_json);
        else
            fputs("null", f);
        fputs(",\"slices\":[", f);
        for (size_t k = 0; k < s->slice_count; k++) {
            const html_slice *x = &rec->slices[s->first_slice + k];
            fprintf(f, "%s[%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu32 ",%u]", k ? "," : "", x->page,
                    x->offset, x->size, x->alloc + 1, (unsigned)x->stream);
        }
        fputs("]}", f);
    }
    fputc(']', f);
}

static void write_data(FILE *f, const report *rep, const verdict *v, const html_record *rec)
{
    const trace *t = rep->t;
    fputs("{\"trace\":", f);
    json_string(f, t->name);
    fprintf(f, ",\"placement\":\"%s\"", options_placement_word(rep->o->placement));
    fprintf(f,
            ",\"events\":%zu,\"peak_live\":%" PRIu64 ",\"capacity\":%" PRIu64
            ",\"capacity_auto\":%s,\"fit_asked\":%s,\"ok\":%s,\"failed_event\":%" PRIu64
            ",\"record_complete\":%s,",
            t->event_count, t->peak_live_bytes, rep->capacity, rep->o->capacity_auto ? "true" : "false",
            rep->fit ? "true" : "false", rep->r->status == RELO_OK ? "true" : "false", rep->r->failed_event,
            rec->failed ? "false" : "true");
    write_rows(f, v);
    fputc(',', f);
    write_runs(f, v);
    fputc(',', f);
    write_relocations(f, rec);
    write_snapshots(f, rec);
    fputc('}', f);
}

bool html_write(const char *path, const report *rep, const html_record *rec)
{
    const char *page = (const char *)relo_report_page;
    size_t size = relo_report_page_size, marker = strlen(MARKER), at = size;
    for (size_t i = 0; i + marker <= size; i++) {
        if (memcmp(page + i, MARKER, marker) == 0) {
            at = i;
            break;
        }
    }
    FILE *f = fopen(path, "w");
    if (!f) return false;
    verdict v;
    verdict_build(&v, rep, true);
    fwrite(page, 1, at, f);
    if (at < size) {
        write_data(f, rep, &v, rec);
        fwrite(page + at + marker, 1, size - at - marker, f);
    }
    verdict_free(&v);
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}
