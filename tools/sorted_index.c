/*
 * sorted_index.c — the sorted array behind the models' block sets (see
 * sorted_index.h).
 */
#include "sorted_index.h"

#include <stdlib.h>
#include <string.h>

void sorted_index_init(sorted_index *s)
{
    memset(s, 0, sizeof *s);
}

void sorted_index_free(sorted_index *s)
{
    free(s->v);
    sorted_index_init(s);
}

static bool less(const sorted_entry *e, uint64_t major, uint64_t minor)
{
    return e->major < major || (e->major == major && e->minor < minor);
}

size_t sorted_index_lower_bound(const sorted_index *s, uint64_t major, uint64_t minor)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (less(&s->v[mid], major, minor))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool sorted_index_insert(sorted_index *s, uint64_t major, uint64_t minor, uint32_t id)
{
    if (s->count == s->capacity) {
        size_t cap = s->capacity ? s->capacity * 2 : 16;
        if (cap > SIZE_MAX / sizeof *s->v) return false;
        sorted_entry *grown = realloc(s->v, cap * sizeof *grown);
        if (!grown) return false;
        s->v = grown;
        s->capacity = cap;
    }
    size_t i = sorted_index_lower_bound(s, major, minor);
    memmove(&s->v[i + 1], &s->v[i], (s->count - i) * sizeof *s->v);
    s->v[i].major = major;
    s->v[i].minor = minor;
    s->v[i].id = id;
    s->count++;
    return true;
}

void sorted_index_remove_at(sorted_index *s, size_t i)
{
    memmove(&s->v[i], &s->v[i + 1], (s->count - i - 1) * sizeof *s->v);
    s->count--;
}

bool sorted_index_remove(sorted_index *s, uint64_t major, uint64_t minor)
{
    size_t i = sorted_index_lower_bound(s, major, minor);
    if (i == s->count || s->v[i].major != major || s->v[i].minor != minor) return false;
    sorted_index_remove_at(s, i);
    return true;
}
