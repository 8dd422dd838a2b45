/*
 * api/stats.c — relo_stats from pool gauges and event counters, the text and
 * JSON writers, and relo_device_report_json. All of them walk the same
 * X-macro list from relo.h.
 */
#include "core/stats.h"

#include <inttypes.h>
#include <string.h>

#include "core/device.h"

static void add_pool(relo_pool *p, void *user)
{
    relo_stats *out = user;
    out->allocations += p->allocations;
    out->bytes_in_use += p->bytes_in_use;
    out->bytes_padding += p->bytes_padding;
    out->bytes_reserved += p->bytes_reserved;
    out->pages += p->page_count;
    out->guarded_pages += p->guarded_pages;
    if (p->outdated) {
        out->outdated_pages += p->page_count;
        out->bytes_outdated += p->bytes_reserved;
    }
}

static void add_gauges(const struct relo_stream *s, relo_stats *out)
{
    relo__stream_each_pool((struct relo_stream *)s, add_pool, out);
}

static void set_counters(const relo_counters *c, relo_stats *out)
{
#define RELO_X_(name) out->name = c->name;
    RELO_COUNTER_LIST(RELO_X_)
#undef RELO_X_
}

/* Fills out for one stream (gauges from its pools, its counters). */
static void stream_stats(const struct relo_stream *s, relo_stats *out)
{
    memset(out, 0, sizeof *out);
    out->size = (uint32_t)sizeof *out;
    out->version = RELO_STATS_VERSION;
    add_gauges(s, out);
    set_counters(&s->held.counters, out);
    out->peak_bytes_reserved = s->held.peak_bytes_reserved;
    out->peak_bytes_in_use = s->peak_bytes_in_use;
}

void relo__device_stats(const struct relo_device *d, relo_stats *out)
{
    memset(out, 0, sizeof *out);
    out->size = (uint32_t)sizeof *out;
    out->version = RELO_STATS_VERSION;
    for (uint32_t i = 0; i < d->stream_count; i++) add_gauges(d->streams[i], out);
    set_counters(&d->held.counters, out);
    out->peak_bytes_reserved = d->held.peak_bytes_reserved;
    out->peak_bytes_in_use = d->peak_bytes_in_use;
}

/* Bytes in use follow from the totals, so the peak needs no gauge walk. */
relo_status relo_device_stats(relo_device *device, relo_stats *out)
{
    if (!device || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo__device_stats(device, out);
    relo__device_unlock(device);
    return RELO_OK;
}

relo_status relo_stream_stats(relo_stream *stream, relo_stats *out)
{
    if (!stream || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    stream_stats(stream, out);
    relo__device_unlock(stream->device);
    return RELO_OK;
}

relo_status relo_stats_print(const relo_stats *stats, FILE *f)
{
    if (!stats || !f) return RELO_ERR_INVALID_ARGUMENT;
#define RELO_X_(name, text) fprintf(f, "%-22s %20" PRIu64 "  %s\n", #name ":", stats->name, text);
    RELO_STATS_LIST(RELO_X_)
#undef RELO_X_
    return ferror(f) ? RELO_ERR_BACKEND : RELO_OK;
}

/* Writes stats as a JSON object (no trailing newline). */
static void stats_json(const relo_stats *stats, FILE *f)
{
    const char *sep = "";
    fputc('{', f);
#define RELO_X_(name, text)                                    \
    fprintf(f, "%s\"%s\": %" PRIu64, sep, #name, stats->name); \
    sep = ", ";
    RELO_STATS_LIST(RELO_X_)
#undef RELO_X_
    fputc('}', f);
}

/* One page: its place, its marks, and every slice in address order. */
static uint64_t page_json(const relo_device *d, const relo_pool *p, const relo_page *pg, FILE *f)
{
    uint64_t largest = 0;
    fprintf(f,
            "{\"index\": %" PRIu32 ", \"size\": %" PRIu64 ", \"address\": %" PRIu64 ", \"order\": %" PRIu64
            ", \"outdated\": %s, \"guards\": %" PRIu32
            ", \"fenced\": %s, \"pending\": %s"
            ", \"occupied_bytes\": %" PRIu64 ", \"slices\": [",
            pg->index, pg->size, pg->address, pg->order, p->outdated ? "true" : "false", pg->guards,
            pg->fenced ? "true" : "false", pg->pending ? "true" : "false", pg->occupied_bytes);
    for (const relo_slice *sl = pg->first; sl; sl = sl->next) {
        fprintf(f,
                "%s{\"offset\": %" PRIu64 ", \"length\": %" PRIu64 ", \"size\": %" PRIu64
                ", \"state\": \"%s\", \"handle\": ",
                sl == pg->first ? "" : ", ", sl->offset, sl->length, sl->size,
                relo__slice_state_name((relo_slice_state)sl->state));
        if (sl->state == RELO_SLICE_LIVE)
            fprintf(f, "%" PRIu64 "}", relo__handle_of(&d->handles, sl->slot).id);
        else
            fputs("null}", f);
        if (sl->state == RELO_SLICE_FREE && sl->length > largest) largest = sl->length;
    }
    fprintf(f, "], \"largest_free\": %" PRIu64 "}", largest);
    return largest;
}

static void pool_json(const relo_device *d, const relo_pool *p, FILE *f)
{
    uint64_t outdated = p->outdated ? p->page_count : 0;
    fprintf(f,
            "{\"name\": \"%s\", \"kind\": \"%s\", \"slot\": %d, \"page_size\": %" PRIu64
            ", \"pages\": %" PRIu32 ", \"outdated\": %s, \"outdated_pages\": %" PRIu64
            ", \"guarded_pages\": %" PRIu64 ", \"allocations\": %" PRIu64 ", \"bytes_in_use\": %" PRIu64
            ", \"bytes_padding\": %" PRIu64 ", \"bytes_reserved\": %" PRIu64 ", \"page_map\": [",
            p->name, relo__pool_kind_name(p->kind), p->slot, p->page_size, p->page_count,
            p->outdated ? "true" : "false", outdated, p->guarded_pages, p->allocations, p->bytes_in_use,
            p->bytes_padding, p->bytes_reserved);
    uint64_t largest = 0;
    for (uint32_t i = 0; i < p->page_count; i++) {
        if (i) fputs(", ", f);
        uint64_t l = page_json(d, p, p->pages[i], f);
        if (l > largest) largest = l;
    }
    fprintf(f, "], \"largest_free\": %" PRIu64 "}", largest);
}

/* The pools of one stream as the items of a JSON array. */
typedef struct pool_json_list {
    const relo_device *d;
    FILE *f;
    uint32_t written;
} pool_json_list;

static void pool_json_item(relo_pool *p, void *user)
{
    pool_json_list *list = user;
    if (list->written++) fputs(", ", list->f);
    pool_json(list->d, p, list->f);
}

relo_status relo_device_report_json(relo_device *device, FILE *f)
{
    if (!device || !f) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo_stats st;
    relo__device_stats(device, &st);
    fputs("{\"version\": \"" RELO_VERSION_STRING "\", \"stats\": ", f);
    stats_json(&st, f);
    fprintf(f, ", \"capacity\": %" PRIu64 ", \"alignment\": %" PRIu64 ", \"max_page_size\": %" PRIu64,
            device->capacity, device->alignment, device->max_page);
    fputs(", \"streams\": [", f);
    for (uint32_t i = 0; i < device->stream_count; i++) {
        const struct relo_stream *s = device->streams[i];
        relo_stats ss;
        stream_stats(s, &ss);
        fprintf(f, "%s{\"index\": %" PRIu32 ", \"stats\": ", i ? ", " : "", i);
        stats_json(&ss, f);
        const relo_arena *arena = relo__layout_arena(&s->layout);
        fprintf(f, ", \"arena_page_size\": %" PRIu64 ", \"pools\": [", arena ? arena->page_size : 0);
        pool_json_list list = {device, f, 0};
        relo__stream_each_pool(device->streams[i], pool_json_item, &list);
        fputs("]}", f);
    }
    fputs("]}\n", f);
    relo__device_unlock(device);
    return ferror(f) ? RELO_ERR_BACKEND : RELO_OK;
}
