/*
 * hold_bound.c — the floor of hold_bound.h: blocks, then a dynamic
 * programme over where an allocator's held bytes may rise.
 */
#include "hold_bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool hold_bound_init(hold_bound *b, const trace *t, uint64_t granule, size_t max_blocks)
{
    memset(b, 0, sizeof *b);
    if (!t || t->event_count == 0 || granule == 0 || max_blocks == 0) return false;
    size_t n = t->event_count;
    size_t per = (n + max_blocks - 1) / max_blocks;
    size_t blocks = (n + per - 1) / per;
    b->least = malloc(blocks * sizeof *b->least);
    b->weight = malloc(blocks * sizeof *b->weight);
    if (!b->least || !b->weight) {
        hold_bound_free(b);
        return false;
    }
    b->blocks = blocks;
    b->events_per_block = per;
    b->granule = granule;
    uint64_t live = 0;
    for (size_t k = 0; k < blocks; k++) {
        double least = INFINITY;
        size_t end = (k + 1) * per < n ? (k + 1) * per : n;
        for (size_t i = k * per; i < end; i++) {
            const trace_event *e = &t->events[i];
            live = e->kind == TRACE_ALLOC ? live + e->size : live - e->size;
            uint64_t over = live % granule;
            double rounded = (double)live + (over ? (double)(granule - over) : 0.0);
            if (rounded < least) least = rounded;
            if (live > b->peak_live) b->peak_live = live;
            b->live_sum += (double)live;
            b->rounded_sum += rounded;
        }
        b->least[k] = least;
        b->weight[k] = (double)(end - k * per);
    }
    return true;
}

void hold_bound_free(hold_bound *b)
{
    free(b->least);
    free(b->weight);
    memset(b, 0, sizeof *b);
}

double hold_bound_fit_floor(const hold_bound *b)
{
    if (b->peak_live == 0) return 0.0;
    uint64_t over = b->peak_live % b->granule;
    return ((double)b->peak_live + (over ? (double)(b->granule - over) : 0.0)) / (double)b->peak_live;
}

double hold_bound_time_floor(const hold_bound *b)
{
    return b->live_sum > 0 ? b->rounded_sum / b->live_sum : 0.0;
}

/* One more allocation: next[e] = the least sum of held bytes over blocks
 * 0..e-1 with one rise more than prev allows. The last rise is at some
 * block a < e; from there to e the cheapest held bytes at each block are
 * the largest least-rounded-live from it to e - 1, accumulated walking a
 * down from e - 1. */
static void add_one(const hold_bound *b, const double *prev, double *next)
{
    for (size_t e = 0; e <= b->blocks; e++) {
        double best = prev[e], high = 0.0, cost = 0.0;
        for (size_t a = e; a-- > 0;) {
            if (b->least[a] > high) high = b->least[a];
            cost += b->weight[a] * high;
            if (prev[a] + cost < best) best = prev[a] + cost;
        }
        next[e] = best;
    }
}

bool hold_bound_search(const hold_bound *b, uint64_t allocs, double target, hold_bound_result *out)
{
    out->floor_at_allocs = NAN;
    out->fewest_allocs = 0;
    if (b->blocks == 0 || b->live_sum <= 0 || allocs == 0) return true;
    double *prev = malloc((b->blocks + 1) * sizeof *prev);
    double *next = malloc((b->blocks + 1) * sizeof *next);
    if (!prev || !next) {
        free(prev);
        free(next);
        return false;
    }
    /* No allocation yet: only a prefix with nothing live costs nothing. */
    double high = 0.0;
    prev[0] = 0.0;
    for (size_t e = 1; e <= b->blocks; e++) {
        if (b->least[e - 1] > high) high = b->least[e - 1];
        prev[e] = high > 0.0 ? INFINITY : 0.0;
    }
    /* The blocks' floor falls with every allocation allowed, to below the
     * exact floor with any number of them (the blocks lose detail); both
     * are floors, so the higher one is reported. Once the blocks' floor is
     * under the exact one, or there is one allocation per block, more
     * allocations change nothing. */
    double exact = hold_bound_time_floor(b);
    double ratio = INFINITY;
    for (uint64_t k = 1; k <= (uint64_t)b->blocks && ratio > exact; k++) {
        add_one(b, prev, next);
        double *swap = prev;
        prev = next;
        next = swap;
        ratio = prev[b->blocks] / b->live_sum;
        if (k == allocs) out->floor_at_allocs = ratio > exact ? ratio : exact;
        if (out->fewest_allocs == 0 && ratio <= target && exact <= target) out->fewest_allocs = k;
        if (k >= allocs && out->fewest_allocs != 0) break;
    }
    if (isnan(out->floor_at_allocs)) out->floor_at_allocs = ratio > exact ? ratio : exact;
    free(prev);
    free(next);
    return true;
}
