/*
 * samples.h — a bounded timeline of a replay: at most `max` points however
 * long the trace, for the JSON report and the SVG picture.
 *
 * Events are grouped into equal buckets. Each point is one real moment, the
 * event of its bucket with the most live bytes, so live, reserved and
 * outdated in a point were true together (CI checks reserved ≥ live on
 * them); the bucket's highest reserved and outdated bytes are kept beside
 * it so a picture does not lose a short peak between points.
 */
#ifndef RELO_TOOLS_SAMPLES_H
#define RELO_TOOLS_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sample {
    uint64_t event;        /**< 0-based index of the event after which it was taken */
    uint64_t live;         /**< bytes in use then */
    uint64_t reserved;     /**< bytes of pages held then */
    uint64_t outdated;     /**< bytes of outdated pages held then */
    uint64_t reserved_max; /**< the bucket's highest reserved */
    uint64_t outdated_max; /**< the bucket's highest outdated */
    uint64_t relocations;  /**< relocations that happened in the bucket */
} sample;

typedef struct sampler {
    sample *points;
    size_t count;
    size_t max;
    uint64_t stride; /* events per bucket */
    bool open;       /* the current bucket has a point */
    sample cur;
    uint64_t bucket_end; /* first event of the next bucket */
} sampler;

/**
 * Prepares a sampler for `events` events and at most max points.
 * Returns false when host memory ran out.
 */
bool sampler_init(sampler *s, uint64_t events, size_t max);

/** Frees the points. */
void sampler_free(sampler *s);

/** Records the state after event. Events must come in increasing order. */
void sampler_add(sampler *s, uint64_t event, uint64_t live, uint64_t reserved, uint64_t outdated);

/** Counts a relocation at event (call after sampler_add of that event). */
void sampler_relocation(sampler *s, uint64_t count);

/** Closes the last bucket. */
void sampler_finish(sampler *s);

#endif /* RELO_TOOLS_SAMPLES_H */
