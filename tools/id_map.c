/*
 * id_map.c — open-addressing hash map of 64-bit keys (see id_map.h).
 *
 * Trace ids are often sequential and pointers are aligned, so keys are
 * mixed with a strong finaliser before probing; otherwise linear probing
 * would cluster badly.
 */
#include "id_map.h"

#include <stdlib.h>

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_DELETED = 2 };

static size_t mix(uint64_t key)
{
    /* splitmix64's finaliser: every key bit affects every hash bit. */
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebull;
    key ^= key >> 31;
    return (size_t)key;
}

void id_map_init(id_map *map)
{
    map->keys = NULL;
    map->values = NULL;
    map->state = NULL;
    map->capacity = 0;
    map->count = 0;
    map->used = 0;
}

void id_map_free(id_map *map)
{
    free(map->keys);
    free(map->values);
    free(map->state);
    id_map_init(map);
}

/* The slot holding key, or SIZE_MAX when absent. */
static size_t find(const id_map *map, uint64_t key)
{
    if (map->capacity == 0) return SIZE_MAX;
    size_t mask = map->capacity - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        if (map->state[i] == SLOT_EMPTY) return SIZE_MAX;
        if (map->state[i] == SLOT_FULL && map->keys[i] == key) return i;
    }
}

bool id_map_get(const id_map *map, uint64_t key, uint64_t *value)
{
    size_t i = find(map, key);
    if (i == SIZE_MAX) return false;
    if (value) *value = map->values[i];
    return true;
}

/* Rebuilds the table with new_capacity slots, dropping tombstones. */
static bool rehash(id_map *map, size_t new_capacity)
{
    id_map bigger;
    bigger.keys = malloc(new_capacity * sizeof *bigger.keys);
    bigger.values = malloc(new_capacity * sizeof *bigger.values);
    bigger.state = calloc(new_capacity, 1);
    if (!bigger.keys || !bigger.values || !bigger.state) {
        free(bigger.keys);
        free(bigger.values);
        free(bigger.state);
        return false;
    }
    bigger.capacity = new_capacity;
    bigger.count = 0;
    bigger.used = 0;
    size_t mask = new_capacity - 1;
    for (size_t s = 0; s < map->capacity; s++) {
        if (map->state[s] != SLOT_FULL) continue;
        size_t i = mix(map->keys[s]) & mask;
        while (bigger.state[i] != SLOT_EMPTY) i = (i + 1) & mask;
        bigger.state[i] = SLOT_FULL;
        bigger.keys[i] = map->keys[s];
        bigger.values[i] = map->values[s];
        bigger.count++;
        bigger.used++;
    }
    id_map_free(map);
    *map = bigger;
    return true;
}

/* The capacity a put rehashes to when the table is too full, or the
 * present one when it is not. */
static size_t capacity_for_put(const id_map *map)
{
    /* Keep probing chains short: at most half the slots full or deleted. */
    if ((map->used + 1) * 2 <= map->capacity) return map->capacity;
    size_t cap = map->capacity ? map->capacity : 64;
    while ((map->count + 1) * 4 > cap) cap *= 2;
    return cap;
}

uint64_t id_map_bytes(const id_map *map)
{
    return (uint64_t)map->capacity * (2 * sizeof(uint64_t) + 1);
}

uint64_t id_map_bytes_after_put(const id_map *map)
{
    return (uint64_t)capacity_for_put(map) * (2 * sizeof(uint64_t) + 1);
}

bool id_map_put(id_map *map, uint64_t key, uint64_t value)
{
    size_t i = find(map, key);
    if (i != SIZE_MAX) {
        map->values[i] = value;
        return true;
    }
    if ((map->used + 1) * 2 > map->capacity) {
        /* Too full or too many tombstones: rebuilt, grown if need be. */
        size_t cap = capacity_for_put(map);
        if (cap > SIZE_MAX / sizeof(uint64_t) / 2) return false;
        if (!rehash(map, cap)) return false;
    }
    size_t mask = map->capacity - 1;
    i = mix(key) & mask;
    while (map->state[i] == SLOT_FULL) i = (i + 1) & mask;
    if (map->state[i] == SLOT_EMPTY) map->used++;
    map->state[i] = SLOT_FULL;
    map->keys[i] = key;
    map->values[i] = value;
    map->count++;
    return true;
}

bool id_map_remove(id_map *map, uint64_t key)
{
    size_t i = find(map, key);
    if (i == SIZE_MAX) return false;
    map->state[i] = SLOT_DELETED;
    map->count--;
    return true;
}
