/*
 * free_tree.h — the free slices of one sliced pool, in a treap augmented
 * with the largest length in each subtree. Two orders serve two policies:
 *   - by address, (page order, offset): finding the lowest page and lowest
 *     address that fits — address-ordered first fit, which keeps later
 *     pages empty so they can go back — is one walk down the tree;
 *   - by size, (length, page order, offset): the smallest slice that fits
 *     (best fit, lowest address among equals) is one walk too.
 * Either way O(log n) expected, never a scan. A slice's length never
 * changes while it is in the tree.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_FREE_TREE_H
#define RELO_FREE_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "page.h"

/** Inserts a free slice (its links are overwritten). */
void relo__free_tree_insert(relo_slice **root, relo_slice *slice, bool by_size);

/** Removes a slice that is in the tree. */
void relo__free_tree_remove(relo_slice **root, relo_slice *slice, bool by_size);

/**
 * Restores the subtree maxima above a slice whose length (and, by address,
 * offset) changed in place without passing any other slice of the tree in
 * its order. Address order only: by size a new length is a new key.
 * Cheaper than a remove and an insert: one walk, no rotations.
 */
void relo__free_tree_refresh(relo_slice *root, relo_slice *slice);

/** The first slice in the tree's order with length ≥ length, or NULL: the
 *  lowest address that fits (by address) or the best fit (by size). */
relo_slice *relo__free_tree_first_fit(relo_slice *root, uint64_t length, bool by_size);

/** Checks order, heap and max_length invariants; counts nodes. Returns
 *  false on the first broken one. */
bool relo__free_tree_check(const relo_slice *root, bool by_size, uint64_t *count);

#endif /* RELO_FREE_TREE_H */
