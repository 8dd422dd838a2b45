/*
 * free_tree.h — the free slices of one sliced pool, in a treap ordered by
 * (page order, offset) and augmented with the largest length in each
 * subtree. Finding the lowest page and lowest address that fits — address-
 * ordered first fit, which keeps later pages empty so they can go back — is
 * then one walk down the tree: O(log n) expected, never a scan.
 *
 * Protected by: the device lock.
 */
#ifndef RELO_FREE_TREE_H
#define RELO_FREE_TREE_H

#include <stdint.h>

#include "page.h"

/** Inserts a free slice (its links are overwritten). */
void relo__free_tree_insert(relo_slice **root, relo_slice *slice);

/** Removes a slice that is in the tree. */
void relo__free_tree_remove(relo_slice **root, relo_slice *slice);

/** The first slice in (page order, offset) order with length ≥ length, or
 *  NULL. */
relo_slice *relo__free_tree_first_fit(relo_slice *root, uint64_t length);

/** Checks order, heap and max_length invariants; counts nodes. Returns
 *  false on the first broken one. */
bool relo__free_tree_check(const relo_slice *root, uint64_t *count);

#endif /* RELO_FREE_TREE_H */
