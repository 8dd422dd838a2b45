/*
 * free_tree.h — the free slices of an address-ordered sliced pool, in a
 * treap keyed by (page order, offset) and augmented with the largest
 * length in each subtree: finding the lowest page and lowest address that
 * fits — address-ordered first fit, which keeps later pages empty so they
 * can go back — is one walk down the tree, O(log n) expected. Only the
 * pools whose rule is first fit use it (free_index.h); best-fit pools use
 * size classes. A slice's length never changes while it is in the tree.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_FREE_TREE_H
#define RELO_FREE_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "page.h"

/** Inserts a free slice (its links are overwritten). */
void relo__free_tree_insert(relo_slice **root, relo_slice *slice);

/** Removes a slice that is in the tree. */
void relo__free_tree_remove(relo_slice **root, relo_slice *slice);

/**
 * Restores the subtree maxima above a slice whose length (and, by address,
 * offset) changed in place without passing any other slice of the tree in
 * its order. Cheaper than a remove and an insert: one walk, no rotations.
 */
void relo__free_tree_refresh(relo_slice *root, relo_slice *slice);

/** The lowest-address slice with length ≥ length, or NULL. */
relo_slice *relo__free_tree_first_fit(relo_slice *root, uint64_t length);

/** Checks order, heap and max_length invariants; counts nodes. Returns
 *  false on the first broken one. */
bool relo__free_tree_check(const relo_slice *root, uint64_t *count);

#endif /* RELO_FREE_TREE_H */
