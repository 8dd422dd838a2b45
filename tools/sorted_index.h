/*
 * sorted_index.h — an ordered set of (major, minor) keys, each carrying a
 * 32-bit id, for the allocator models: free blocks by (size, address),
 * unmapped blocks by (address, 0).
 *
 * A sorted array: lookups are binary searches and positions are indices, so
 * "the next larger entry" is one step. Inserting and removing move the tail
 * of the array; the sets the models keep are the free blocks of one pool of
 * one stream, a few thousand at most on real traces. Not thread-safe.
 */
#ifndef RELO_TOOLS_SORTED_INDEX_H
#define RELO_TOOLS_SORTED_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sorted_entry {
    uint64_t major;
    uint64_t minor;
    uint32_t id;
} sorted_entry;

typedef struct sorted_index {
    sorted_entry *v;
    size_t count;
    size_t capacity;
} sorted_index;

/** Makes an empty index (no allocation until the first insert). */
void sorted_index_init(sorted_index *s);

/** Frees the entries; the index is empty and reusable afterwards. */
void sorted_index_free(sorted_index *s);

/**
 * Inserts (major, minor) → id. Keys must be distinct (the models key by
 * address, which is unique). Returns false only when host memory ran out
 * (the index is unchanged).
 */
bool sorted_index_insert(sorted_index *s, uint64_t major, uint64_t minor, uint32_t id);

/**
 * The position of the first entry whose key is ≥ (major, minor) in
 * (major, minor) order; s->count when there is none.
 */
size_t sorted_index_lower_bound(const sorted_index *s, uint64_t major, uint64_t minor);

/** Removes the entry at position i (i < s->count). */
void sorted_index_remove_at(sorted_index *s, size_t i);

/**
 * Removes the entry with exactly this key. Returns false (and changes
 * nothing) when no entry has it.
 */
bool sorted_index_remove(sorted_index *s, uint64_t major, uint64_t minor);

#endif /* RELO_TOOLS_SORTED_INDEX_H */
