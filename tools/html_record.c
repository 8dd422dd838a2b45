/*
 * html_record.c — the relocation log and page maps of a recording replay
 * (see html_record.h).
 */
#include "html_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Evenly spread snapshot events, besides the live peak, relocations and the end. */
#define SPREAD_SNAPSHOTS 24u
/* Snapshots kept for relocations at most. */
#define RELOCATION_SNAPSHOTS 24u

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void after_event(void *ctx, const replay_view *v);

bool html_record_init(html_record *r, const trace *t)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    id_map_init(&r->pages);
    size_t n = t->alloc_count ? t->alloc_count : 1;
    r->page_of = calloc(n, sizeof *r->page_of);
    r->offset_of = calloc(n, sizeof *r->offset_of);
    r->planned = calloc(SPREAD_SNAPSHOTS + 2, sizeof *r->planned);
    r->relocations = calloc(HTML_MAX_RELOCATIONS, sizeof *r->relocations);
    if (!r->page_of || !r->offset_of || !r->planned || !r->relocations) {
        html_record_free(r);
        return false;
    }
    /* The first event where live bytes reach the trace's peak. */
    uint64_t live = 0;
    for (size_t i = 0; i < t->event_count; i++) {
        const trace_event *e = &t->events[i];
        live = e->kind == TRACE_ALLOC ? live + e->size : live - (e->size <= live ? e->size : live);
        if (live == t->peak_live_bytes && e->kind == TRACE_ALLOC) {
            r->peak_event = i;
            break;
        }
    }
    if (t->event_count) {
        for (uint32_t k = 0; k < SPREAD_SNAPSHOTS; k++)
            r->planned[r->planned_count++] = (uint64_t)(t->event_count - 1) * k / (SPREAD_SNAPSHOTS - 1);
        r->planned[r->planned_count++] = r->peak_event;
        qsort(r->planned, r->planned_count, sizeof *r->planned, cmp_u64);
    }
    r->observer.ctx = r;
    r->observer.after_event = after_event;
    return true;
}

void html_record_free(html_record *r)
{
    id_map_free(&r->pages);
    free(r->page_of);
    free(r->offset_of);
    free(r->planned);
    free(r->relocations);
    free(r->moves);
    free(r->slices);
    for (size_t i = 0; i < r->snapshot_count; i++) free(r->snapshots[i].pools_json);
    memset(r, 0, sizeof *r);
}

/* The page number of a buffer, numbering new ones. */
static uint32_t page_number(html_record *r, const void *buffer)
{
    uint64_t key = (uint64_t)(uintptr_t)buffer, value;
    if (id_map_get(&r->pages, key, &value)) return (uint32_t)value;
    if (!id_map_put(&r->pages, key, r->page_count)) r->failed = true;
    return r->page_count++;
}

/* Where allocation a is now; false when it does not resolve. */
static bool locate(html_record *r, const replay_view *v, uint32_t a, uint16_t stream, uint32_t *page,
                   uint64_t *offset, uint64_t *size)
{
    relo_binding b;
    if (relo_resolve(v->streams[stream], v->handles[a], &b) != RELO_OK) return false;
    *page = page_number(r, b.buffer);
    *offset = b.offset;
    *size = b.size;
    return true;
}

static bool push_move(html_record *r, const html_move *m)
{
    if (r->move_count == r->move_capacity) {
        size_t cap = r->move_capacity ? r->move_capacity * 2 : 256;
        html_move *grown = realloc(r->moves, cap * sizeof *grown);
        if (!grown) return false;
        r->moves = grown;
        r->move_capacity = cap;
    }
    r->moves[r->move_count++] = *m;
    return true;
}

/* Allocation numbers know their stream only through their events: the
 * recorder walks the trace once per relocation, which is rare. */
static void log_relocation(html_record *r, const replay_view *v)
{
    const relo_stats *s = v->stats;
    if (r->relocation_count == HTML_MAX_RELOCATIONS) {
        if (!r->relocations_unlisted) r->first_unlisted_event = v->event;
        r->relocations_unlisted += s->relocations - r->relocations_seen;
        return;
    }
    html_relocation *x = &r->relocations[r->relocation_count++];
    x->event = v->event;
    x->relocations = s->relocations - r->relocations_seen;
    x->allocations_moved = s->allocations_moved - r->allocations_moved_seen;
    x->bytes_moved = s->bytes_moved - r->bytes_moved_seen;
    x->first_move = r->move_count;
    for (size_t i = 0; i <= v->event; i++) {
        const trace_event *e = &v->t->events[i];
        if (e->kind != TRACE_ALLOC || v->handles[e->alloc].id == 0) continue;
        uint32_t page;
        uint64_t offset, size;
        if (!locate(r, v, e->alloc, e->stream, &page, &offset, &size)) continue;
        if (page == r->page_of[e->alloc] && offset == r->offset_of[e->alloc]) continue;
        html_move m = {e->alloc, r->page_of[e->alloc], page, r->offset_of[e->alloc], offset, size};
        x->moves_seen++;
        if (x->move_count < HTML_MAX_MOVES_PER_RELOCATION) {
            if (!push_move(r, &m))
                r->failed = true;
            else
                x->move_count++;
        }
        r->page_of[e->alloc] = page;
        r->offset_of[e->alloc] = offset;
    }
}

static bool push_slice(html_record *r, const html_slice *s)
{
    if (r->slice_count == r->slice_capacity) {
        size_t cap = r->slice_capacity ? r->slice_capacity * 2 : 1024;
        html_slice *grown = realloc(r->slices, cap * sizeof *grown);
        if (!grown) return false;
        r->slices = grown;
        r->slice_capacity = cap;
    }
    r->slices[r->slice_count++] = *s;
    return true;
}

static void snapshot(html_record *r, const replay_view *v, const char *why)
{
    if (r->snapshot_count == HTML_MAX_SNAPSHOTS) return;
    if (r->snapshot_count && r->snapshots[r->snapshot_count - 1].event == v->event) return;
    html_snapshot *s = &r->snapshots[r->snapshot_count++];
    s->event = v->event;
    s->why = why;
    s->stats = *v->stats;
    s->first_slice = r->slice_count;
    for (size_t i = 0; i <= v->event; i++) {
        const trace_event *e = &v->t->events[i];
        if (e->kind != TRACE_ALLOC || v->handles[e->alloc].id == 0) continue;
        /* An allocation number is allocated once; its first event is this one. */
        html_slice sl = {0, e->alloc, e->stream, 0, 0};
        if (!locate(r, v, e->alloc, e->stream, &sl.page, &sl.offset, &sl.size)) continue;
        if (s->slice_count == HTML_MAX_SLICES) {
            s->slices_cut = true;
            break;
        }
        if (!push_slice(r, &sl)) {
            r->failed = true;
            break;
        }
        s->slice_count++;
    }
    size_t len = 0;
    FILE *f = open_memstream(&s->pools_json, &len);
    if (!f || relo_device_report_json(v->device, f) != RELO_OK) r->failed = true;
    if (f) fclose(f);
}

static void after_event(void *ctx, const replay_view *v)
{
    html_record *r = ctx;
    const trace_event *e = &v->t->events[v->event];
    if (e->kind == TRACE_ALLOC) {
        uint64_t size;
        if (!locate(r, v, e->alloc, e->stream, &r->page_of[e->alloc], &r->offset_of[e->alloc], &size))
            r->failed = true;
    }
    bool relocated = v->stats->relocations > r->relocations_seen;
    if (relocated) log_relocation(r, v);
    r->relocations_seen = v->stats->relocations;
    r->allocations_moved_seen = v->stats->allocations_moved;
    r->bytes_moved_seen = v->stats->bytes_moved;
    bool planned = false;
    while (r->planned_next < r->planned_count && r->planned[r->planned_next] <= v->event) {
        planned = planned || r->planned[r->planned_next] == v->event;
        r->planned_next++;
    }
    if (relocated && r->relocation_count <= RELOCATION_SNAPSHOTS)
        snapshot(r, v, "relocation");
    else if (planned)
        snapshot(r, v,
                 v->event == r->peak_event           ? "live peak"
                 : v->event == 0                     ? "start"
                 : v->event + 1 == v->t->event_count ? "end"
                                                     : "");
}
