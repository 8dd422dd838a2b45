/*
 * core/counters.c — the allocation counters every stream and the device keep
 * (bytes and allocations in all, peaks), updated as allocations come and go.
 */
#include "core/device.h"

static void raise_peak(const relo_counters *c, uint64_t *peak)
{
    uint64_t in_use = c->bytes_allocated_total - c->bytes_freed_total;
    if (in_use > *peak) *peak = in_use;
}

void relo__stats_allocated(struct relo_stream *s, uint64_t size)
{
    relo_device *d = s->device;
    s->held.counters.allocations_total++;
    s->held.counters.bytes_allocated_total += size;
    d->held.counters.allocations_total++;
    d->held.counters.bytes_allocated_total += size;
    raise_peak(&s->held.counters, &s->peak_bytes_in_use);
    raise_peak(&d->held.counters, &d->peak_bytes_in_use);
}

void relo__stats_freed(struct relo_stream *s, uint64_t size)
{
    relo_device *d = s->device;
    s->held.counters.frees_total++;
    s->held.counters.bytes_freed_total += size;
    d->held.counters.frees_total++;
    d->held.counters.bytes_freed_total += size;
}
