/*
 * scene.h — a device whose pages a test fills from a picture of them, for
 * the tests of a refused reservation: each page's allocations and holes in
 * address order, the holes released once every page is full. The scene
 * writes a pattern into every allocation, checks that each landed where the
 * picture puts it and records where that is, so a case reads what moved,
 * whether the bytes survived, and whether two allocations share a byte.
 *
 * Include after fixture.h. Every helper is static inline.
 */
#ifndef RELO_TEST_SCENE_H
#define RELO_TEST_SCENE_H

#include "fixture.h"

#define SCENE_PAGE (64 * KiB) /* a page of the packed placement's fine pool */
#define SCENE_MAX 64          /* allocations of a scene, at most */
#define SCENE_PAGES_MAX 16    /* pages of a scene, at most */

/**
 * A scene's pages as a picture, one string a page in the order they fill:
 * each token an allocation of that many units, or h and a hole of that
 * many, in address order ("8 20 20 h16": allocations of 8, 20 and 20 KiB,
 * then a hole of 16). The allocations are numbered in the order they
 * appear, from 0; the holes are released once every page is full.
 */
typedef struct scene_layout {
    const char *pages[SCENE_PAGES_MAX]; /* ends at the first NULL */
    uint64_t unit;                      /* of the picture's sizes; 0: KiB */
    uint64_t reserved;                  /* bytes the pages hold once filled; 0: SCENE_PAGE each */
    uint64_t empty_page;                /* 0, or before each page's first allocation a page
                                   this large is taken and given back at once, so the
                                   page's allocations land on it (kept: the device's
                                   cache limit must keep empty pages) */
} scene_layout;

/** An allocation of a scene: its size, its page (numbered from 0 in the
 *  order the pages fill) and its offset there. */
typedef struct scene_alloc {
    uint64_t size;
    int page;
    uint64_t offset;
} scene_alloc;

typedef struct scene {
    fx f;
    int count;                 /* allocations */
    scene_alloc at[SCENE_MAX]; /* where the picture puts each */
    relo_handle h[SCENE_MAX];
    relo_binding before[SCENE_MAX]; /* where each was once the pages filled */
} scene;

/* Takes l's first page now and gives it back (l->empty_page). */
static inline bool scene_empty_page_(scene *sc, const scene_layout *l)
{
    relo_handle empty = fx_reserve(sc->f.s, l->empty_page);
    return empty.id && relo_release(sc->f.dev, empty) == RELO_OK;
}

/* Reserves what l's picture shows, page by page, into sc; false on a
 * refusal or a picture that does not parse. */
static inline bool scene_fill_(scene *sc, const scene_layout *l)
{
    uint64_t unit = l->unit ? l->unit : KiB;
    relo_handle holes[SCENE_MAX];
    int n = 0;
    for (int p = 0; p < SCENE_PAGES_MAX && l->pages[p]; p++) {
        if (l->empty_page && !scene_empty_page_(sc, l)) return false;
        uint64_t offset = 0;
        for (const char *c = l->pages[p]; *c;) {
            char *end;
            bool hole = *c == 'h';
            uint64_t size = strtoull(hole ? c + 1 : c, &end, 10) * unit;
            if (end == c || size == 0 || (hole ? n : sc->count) == SCENE_MAX) return false;
            relo_handle got = fx_reserve(sc->f.s, size);
            if (!got.id) return false;
            if (hole) {
                holes[n++] = got;
            } else {
                sc->at[sc->count] = (scene_alloc){size, p, offset};
                sc->h[sc->count++] = got;
            }
            offset += size;
            for (c = end; *c == ' '; c++) continue;
        }
    }
    for (int i = 0; i < n; i++) expect_ok(relo_release(sc->f.dev, holes[i]));
    return true;
}

/* How many pages l's picture shows. */
static inline int scene_pages_(const scene_layout *l)
{
    int p = 0;
    while (p < SCENE_PAGES_MAX && l->pages[p]) p++;
    return p;
}

/** Opens a device over b (taken) with dd, fills its pages as l shows,
 *  writes the patterns and records where every allocation is. False when
 *  the pages are not as l shows (the cases rely on it). */
static inline bool scene_open_on(scene *sc, const scene_layout *l, relo_backend *b,
                                 const relo_device_desc *dd)
{
    memset(sc, 0, sizeof *sc);
    if (fx_open_backend(&sc->f, b, dd) != RELO_OK || !scene_fill_(sc, l)) return false;
    for (int i = 0; i < sc->count; i++)
        if (fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sc->at[i].size) != RELO_OK) return false;
    int pages = scene_pages_(l);
    relo_stats st = fx_stats(sc->f.s);
    if (st.pages != (uint64_t)pages ||
        st.bytes_reserved != (l->reserved ? l->reserved : (uint64_t)pages * SCENE_PAGE))
        return false;
    for (int i = 0; i < sc->count; i++) {
        sc->before[i] = fx_bind(sc->f.s, sc->h[i]);
        if (sc->before[i].offset != sc->at[i].offset) return false;
        /* Same page, same buffer; the pages apart. */
        for (int j = 0; j < i; j++)
            if ((sc->before[i].buffer == sc->before[j].buffer) != (sc->at[i].page == sc->at[j].page))
                return false;
    }
    return true;
}

/** scene_open_on over the host backend hd describes. */
static inline bool scene_open_host(scene *sc, const scene_layout *l, const relo_host_desc *hd,
                                   const relo_device_desc *dd)
{
    relo_backend *b = NULL;
    if (relo_backend_host_create(hd, &b) != RELO_OK) return false;
    return scene_open_on(sc, l, b, dd);
}

/** The usual scene: a device of the packed placement with relocation as given, on the host
 *  backend with room for exactly l's pages of SCENE_PAGE bytes. */
static inline bool scene_open(scene *sc, const scene_layout *l, relo_relocation relocation)
{
    relo_host_desc hd = fx_host();
    hd.capacity = (uint64_t)scene_pages_(l) * SCENE_PAGE;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_PACKED);
    dd.relocation = relocation;
    return scene_open_host(sc, l, &hd, &dd);
}

/** Releases every allocation and closes the device. */
static inline void scene_close(scene *sc)
{
    fx_close_releasing(&sc->f, sc->h, (size_t)sc->count);
}

/** Where allocation i is now. */
static inline relo_binding scene_bind(scene *sc, int i)
{
    return fx_bind(sc->f.s, sc->h[i]);
}

/** Whether allocation i is where it was once the pages filled. */
static inline bool scene_in_place(scene *sc, int i)
{
    return fx_same_place(sc->before[i], scene_bind(sc, i));
}

static inline bool scene_bytes_intact(scene *sc)
{
    for (int i = 0; i < sc->count; i++)
        if (!fx_check_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, sc->at[i].size)) return false;
    return true;
}

/** How many allocations are no longer where they were. */
static inline int scene_moved(scene *sc)
{
    return fx_moved_count(sc->f.s, sc->h, sc->before, sc->count);
}

/** No two of the scene's allocations, nor ask (id 0: none), share a byte. */
static inline bool scene_apart(scene *sc, relo_handle ask)
{
    relo_binding b[SCENE_MAX + 1];
    int n = 0;
    for (int i = 0; i < sc->count; i++) b[n++] = scene_bind(sc, i);
    if (ask.id) b[n++] = fx_bind(sc->f.s, ask);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (fx_overlap(b[i], b[j])) return false;
    return true;
}

/** No two allocations (ask among them unless its id is 0) share a byte,
 *  every pattern reads back, and the device's invariants hold. */
static inline void scene_expect_sound(scene *sc, relo_handle ask)
{
    expect_true(scene_apart(sc, ask));
    expect_true(scene_bytes_intact(sc));
    expect_ok(relo_device_check(sc->f.dev));
}

/** Whether h is on the page allocation i was on once the pages filled, at
 *  offset. */
static inline bool scene_at(scene *sc, relo_handle h, int i, uint64_t offset)
{
    relo_binding b = fx_bind(sc->f.s, h);
    return b.buffer == sc->before[i].buffer && b.offset == offset;
}

/** The relocations so far moved allocations allocations, bytes bytes in
 *  all, none abandoned and nothing leaked, and the device holds pages. */
static inline void scene_expect_moved(scene *sc, uint64_t allocations, uint64_t bytes, uint64_t pages)
{
    relo_stats st = fx_stats(sc->f.s);
    expect_eq(st.allocations_moved, allocations);
    expect_eq(st.bytes_moved, bytes);
    expect_eq(st.relocations_abandoned, 0);
    expect_eq(st.bytes_leaked, 0);
    expect_eq(st.pages, pages);
}

/** A reservation of size bytes is refused, and nothing has moved. */
static inline void scene_expect_refused(scene *sc, uint64_t size)
{
    relo_handle ask = {0};
    expect_status(relo_reserve(sc->f.s, size, &ask), RELO_ERR_OUT_OF_MEMORY);
    expect_eq(fx_stats(sc->f.s).allocations_moved, 0);
}

/** scene_expect_sound, then releases ask (id 0: none) and closes the
 *  scene. */
static inline void scene_close_sound(scene *sc, relo_handle ask)
{
    scene_expect_sound(sc, ask);
    if (ask.id) expect_ok(relo_release(sc->f.dev, ask));
    scene_close(sc);
}

/** A sealed graph that uses the allocations of page: they are resolved
 *  while the stream records. NULL (and a recorded failure) if capture
 *  fails. */
static inline relo_graph *scene_guard_page(scene *sc, int page)
{
    relo_graph *g = NULL;
    expect_ok(relo_capture_prepare(sc->f.s));
    expect_ok(relo_capture_begin(sc->f.s));
    for (int i = 0; i < sc->count; i++)
        if (sc->at[i].page == page) (void)scene_bind(sc, i);
    expect_ok(relo_capture_end(sc->f.s, &g));
    expect_true(g != NULL);
    expect_eq(fx_stats(sc->f.s).guarded_pages, 1);
    return g;
}

#endif /* RELO_TEST_SCENE_H */
