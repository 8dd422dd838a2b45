/*
 * id_map.h — a hash map from 64-bit keys to 64-bit values, for the trace
 * readers: trace ids (or RMM pointers) to the allocation they name.
 *
 * Open addressing with linear probing and tombstones; keys are arbitrary
 * (0 included), so occupancy is kept in a separate state byte. Not
 * thread-safe; one map per reader.
 */
#ifndef RELO_TOOLS_ID_MAP_H
#define RELO_TOOLS_ID_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct id_map {
    uint64_t *keys;
    uint64_t *values;
    uint8_t *state;  /* 0 empty, 1 full, 2 deleted */
    size_t capacity; /* a power of two, or 0 before the first insert */
    size_t count;    /* full entries */
    size_t used;     /* full and deleted entries: what probing walks over */
} id_map;

/** Makes an empty map (no allocation until the first put). */
void id_map_init(id_map *map);

/** Frees the map's memory; the map is empty and reusable afterwards. */
void id_map_free(id_map *map);

/**
 * Looks key up. Returns true and writes *value (if value is not NULL) when
 * present; false otherwise, *value untouched.
 */
bool id_map_get(const id_map *map, uint64_t key, uint64_t *value);

/**
 * Inserts key → value, or overwrites the value of a present key.
 * Returns false only when host memory ran out (the map is unchanged).
 */
bool id_map_put(id_map *map, uint64_t key, uint64_t value);

/** Removes key if present; returns whether it was. Never allocates. */
bool id_map_remove(id_map *map, uint64_t key);

/** The bytes the map's table takes now (keys, values and states). */
uint64_t id_map_bytes(const id_map *map);

/** The bytes the table will take once one more key is put: more than now
 *  when that put grows it. For a reader's memory bound (trace_full). */
uint64_t id_map_bytes_after_put(const id_map *map);

#endif /* RELO_TOOLS_ID_MAP_H */
