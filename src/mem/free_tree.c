/*
 * mem/free_tree.c — a treap of free slices with subtree-maximum lengths (see
 * mem/free_index.h). Recursion depth is the treap's depth, O(log n) expected.
 */
#include "mem/free_index.h"

#include <stddef.h>

static uint64_t max_of(const relo_slice *s)
{
    return s ? s->max_length : 0;
}

static void update(relo_slice *s)
{
    uint64_t m = s->length;
    if (max_of(s->left) > m) m = max_of(s->left);
    if (max_of(s->right) > m) m = max_of(s->right);
    s->max_length = m;
}

/* a before b in the tree's order: lower page, lower offset. */
static int before(const relo_slice *a, const relo_slice *b)
{
    if (a->page->order != b->page->order) return a->page->order < b->page->order;
    return a->offset < b->offset;
}

static relo_slice *rotate_right(relo_slice *s)
{
    relo_slice *l = s->left;
    s->left = l->right;
    l->right = s;
    update(s);
    update(l);
    return l;
}

static relo_slice *rotate_left(relo_slice *s)
{
    relo_slice *r = s->right;
    s->right = r->left;
    r->left = s;
    update(s);
    update(r);
    return r;
}

static relo_slice *insert(relo_slice *root, relo_slice *n)
{
    if (!root) return n;
    if (before(n, root)) {
        root->left = insert(root->left, n);
        if (root->left->priority > root->priority) return rotate_right(root);
    } else {
        root->right = insert(root->right, n);
        if (root->right->priority > root->priority) return rotate_left(root);
    }
    update(root);
    return root;
}

void relo__free_tree_insert(relo_slice **root, relo_slice *slice)
{
    slice->left = slice->right = NULL;
    slice->max_length = slice->length;
    *root = insert(*root, slice);
}

/* Joins two treaps where every key of a precedes every key of b. */
static relo_slice *merge(relo_slice *a, relo_slice *b)
{
    if (!a) return b;
    if (!b) return a;
    if (a->priority > b->priority) {
        a->right = merge(a->right, b);
        update(a);
        return a;
    }
    b->left = merge(a, b->left);
    update(b);
    return b;
}

static relo_slice *remove_node(relo_slice *root, relo_slice *n)
{
    if (!root) return NULL; /* not present: harmless, the tree is unchanged */
    if (root == n) return merge(root->left, root->right);
    if (before(n, root))
        root->left = remove_node(root->left, n);
    else
        root->right = remove_node(root->right, n);
    update(root);
    return root;
}

void relo__free_tree_remove(relo_slice **root, relo_slice *slice)
{
    *root = remove_node(*root, slice);
    slice->left = slice->right = NULL;
}

/* Restores the maxima from node down to target; returns whether node's
 * changed. Only target's length changed, so once a node's maximum is as it
 * was, every maximum above it is too. */
static bool refresh(relo_slice *node, relo_slice *target)
{
    if (!node) return false; /* not present: nothing to restore */
    if (node != target && !refresh(before(target, node) ? node->left : node->right, target)) return false;
    uint64_t was = node->max_length;
    update(node);
    return node->max_length != was;
}

void relo__free_tree_refresh(relo_slice *root, relo_slice *slice, relo_slice *const *path, uint32_t *path_len)
{
    uint32_t n = path_len ? *path_len : 0;
    if (n == 0 || path[n - 1] != slice) {
        if (path_len) *path_len = 0;
        (void)refresh(root, slice);
        return;
    }
    while (n-- > 0) {
        relo_slice *s = path[n];
        uint64_t m = s->length, l = max_of(s->left), r = max_of(s->right);
        if (l > m) m = l;
        if (r > m) m = r;
        if (m == s->max_length) return; /* and so is every maximum above */
        s->max_length = m;
    }
}

relo_slice *relo__free_tree_first_fit(relo_slice *root, uint64_t length, relo_slice **path,
                                      uint32_t *path_len)
{
    uint32_t depth = 0;
    relo_slice *s = root;
    if (path_len) *path_len = 0;
    if (!s || s->max_length < length) return NULL;
    for (;;) {
        if (path && depth < RELO_FREE_PATH_MAX) path[depth] = s;
        depth++;
        if (s->left && s->left->max_length >= length)
            s = s->left;
        else if (s->length >= length)
            break;
        else
            s = s->right; /* max_length guarantees a fit on this side */
    }
    if (path && path_len && depth <= RELO_FREE_PATH_MAX) *path_len = depth;
    return s;
}

bool relo__free_tree_fits_before(const relo_slice *root, const relo_slice *slice, uint64_t length)
{
    for (const relo_slice *s = root; s;) {
        if (s == slice) return max_of(s->left) >= length;
        if (before(slice, s)) {
            s = s->left;
        } else {
            /* s and everything left of it come before slice. */
            if (s->length >= length || max_of(s->left) >= length) return true;
            s = s->right;
        }
    }
    return false;
}

static bool check(const relo_slice *s, const relo_slice *lo, const relo_slice *hi, uint64_t *count)
{
    if (!s) return true;
    (*count)++;
    if (s->state != RELO_SLICE_FREE) return false;
    if (lo && !before(lo, s)) return false;
    if (hi && !before(s, hi)) return false;
    if (s->left && s->left->priority > s->priority) return false;
    if (s->right && s->right->priority > s->priority) return false;
    uint64_t m = s->length;
    if (max_of(s->left) > m) m = max_of(s->left);
    if (max_of(s->right) > m) m = max_of(s->right);
    if (m != s->max_length) return false;
    return check(s->left, lo, s, count) && check(s->right, s, hi, count);
}

bool relo__free_tree_check(const relo_slice *root, uint64_t *count)
{
    *count = 0;
    return check(root, NULL, NULL, count);
}
