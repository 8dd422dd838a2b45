/*
 * samples.c — bucketed timeline points (see samples.h).
 */
#include "samples.h"

#include <stdlib.h>
#include <string.h>

bool sampler_init(sampler *s, uint64_t events, size_t max)
{
    memset(s, 0, sizeof *s);
    if (max == 0) max = 1;
    s->max = max;
    s->stride = events / max + (events % max != 0);
    if (s->stride == 0) s->stride = 1;
    s->points = calloc(max, sizeof *s->points);
    return s->points != NULL;
}

void sampler_free(sampler *s)
{
    free(s->points);
    memset(s, 0, sizeof *s);
}

static void flush(sampler *s)
{
    if (!s->open) return;
    if (s->count < s->max) s->points[s->count++] = s->cur;
    s->open = false;
}

void sampler_add(sampler *s, uint64_t event, uint64_t live, uint64_t reserved, uint64_t outdated)
{
    if (s->open && event >= s->bucket_end) flush(s);
    if (!s->open) {
        memset(&s->cur, 0, sizeof s->cur);
        s->cur.event = event;
        s->cur.live = live;
        s->cur.reserved = reserved;
        s->cur.outdated = outdated;
        s->bucket_end = (event / s->stride + 1) * s->stride;
        s->open = true;
    } else if (live > s->cur.live) {
        s->cur.event = event;
        s->cur.live = live;
        s->cur.reserved = reserved;
        s->cur.outdated = outdated;
    }
    if (reserved > s->cur.reserved_max) s->cur.reserved_max = reserved;
    if (outdated > s->cur.outdated_max) s->cur.outdated_max = outdated;
}

void sampler_relocation(sampler *s, uint64_t count)
{
    if (s->open) s->cur.relocations += count;
}

void sampler_finish(sampler *s)
{
    flush(s);
}
