/*
 * test_capture.c — docs/design.md §7, invariant 7: the capture state machine,
 * relocation before a capture, what a recording stream may reserve, and
 * guards on the pages a sealed graph uses.
 */
#include "check.h"
#include "fixture.h"
#include "testing/testing.h"

/* Records a graph on f->s that resolves each handle of h[0..n): prepare,
 * begin, resolve, end. The graph, or NULL (and a recorded failure). */
static relo_graph *record(fx *f, const relo_handle *h, int n)
{
    relo_graph *graph = NULL;
    expect_ok(relo_capture_prepare(f->s));
    expect_ok(relo_capture_begin(f->s));
    for (int i = 0; i < n; i++) (void)fx_bind(f->s, h[i]);
    expect_ok(relo_capture_end(f->s, &graph));
    expect_true(graph != NULL);
    return graph;
}

/* 38. begin before prepare, end before begin, prepare twice, begin twice →
 *     CAPTURE_STATE; prepare → begin → end returns a graph and the stream
 *     is idle again. */
CHECK_TEST(b38_capture_state_machine)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_graph *graph = NULL;
    expect_status(relo_capture_begin(f.s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(f.s, &graph), RELO_ERR_CAPTURE_STATE);
    expect_true(graph == NULL);

    expect_ok(relo_capture_prepare(f.s));
    expect_status(relo_capture_prepare(f.s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(f.s, &graph), RELO_ERR_CAPTURE_STATE);
    expect_ok(relo_capture_begin(f.s));
    expect_status(relo_capture_begin(f.s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_prepare(f.s), RELO_ERR_CAPTURE_STATE);
    expect_ok(relo_capture_end(f.s, &graph));
    expect_true(graph != NULL);

    /* Idle again: begin and end are refused, a new cycle runs. */
    relo_graph *second = NULL;
    expect_status(relo_capture_begin(f.s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(f.s, &second), RELO_ERR_CAPTURE_STATE);
    expect_ok(relo_capture_prepare(f.s));
    expect_ok(relo_capture_begin(f.s));
    expect_ok(relo_capture_end(f.s, &second));
    expect_true(second != NULL);
    relo_graph_destroy(graph);
    relo_graph_destroy(second);
    fx_close(&f);
}

/* 39. prepare relocates every stream's outdated pages first (CAPTURE):
 *     both streams grew and hold an outdated page; preparing a third stream
 *     empties both. */
CHECK_TEST(b39_prepare_relocates_every_stream)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    relo_stream *third = NULL;
    require_ok(relo_stream_create(f.dev, NULL, &third));
    relo_handle a1 = fx_reserve(f.s, 1 * MiB), b1 = fx_reserve(f.s2, 1 * MiB);
    expect_ok(fx_fill(f.dev, a1, 0xA1, 1 * MiB));
    expect_ok(fx_fill(f.dev, b1, 0xB1, 1 * MiB));
    relo_handle a10 = fx_reserve(f.s, 10 * MiB), b10 = fx_reserve(f.s2, 10 * MiB);
    expect_eq(fx_dev_stats(f.dev).outdated_pages, 2);

    expect_ok(relo_capture_prepare(third));
    expect_eq(relo__testing_last_reason(f.dev), RELO_REASON_CAPTURE);
    relo_stats dev = fx_dev_stats(f.dev);
    expect_eq(dev.allocations_moved, 2);
    expect_eq(dev.outdated_pages, 0);
    expect_eq(fx_stats(f.s).pages, 1);
    expect_eq(fx_stats(f.s2).pages, 1);
    expect_true(fx_bind(f.s, a1).buffer == fx_bind(f.s, a10).buffer);
    expect_true(fx_bind(f.s2, b1).buffer == fx_bind(f.s2, b10).buffer);
    expect_true(fx_all_bytes(f.dev, a1, 0xA1, 1 * MiB));
    expect_true(fx_all_bytes(f.dev, b1, 0xB1, 1 * MiB));

    relo_graph *graph = NULL;
    expect_ok(relo_capture_begin(third));
    expect_ok(relo_capture_end(third, &graph));
    relo_graph_destroy(graph);
    expect_ok(relo_stream_destroy(third));
    expect_ok(relo_release(f.dev, a1));
    expect_ok(relo_release(f.dev, b1));
    expect_ok(relo_release(f.dev, a10));
    expect_ok(relo_release(f.dev, b10));
    fx_close(&f);
}

/* 40. While recording, a reservation that needs a new page →
 *     PAGE_UPDATE_FORBIDDEN; relo_capture_end then returns that error and
 *     no graph. A reservation that fits room held still succeeds. */
CHECK_TEST(b40_recording_may_not_add_pages)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    expect_ok(relo_capture_prepare(f.s));
    expect_ok(relo_capture_begin(f.s));
    relo_handle fits = fx_reserve(f.s, 512 * KiB);
    relo_handle no = {0};
    expect_status(relo_reserve(f.s, 1 * MiB, &no), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    expect_eq(no.id, 0);
    expect_status(relo_reserve(f.s, 10 * MiB, &no), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    expect_eq(relo__testing_page_size(f.s), 2 * MiB); /* no growth either */
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.allocations, 2);

    relo_graph *graph = (relo_graph *)&f; /* must be overwritten with NULL */
    expect_status(relo_capture_end(f.s, &graph), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    expect_true(graph == NULL);
    expect_eq(fx_stats(f.s).guarded_pages, 0);

    /* The stream is idle: a new capture runs and the page may grow. */
    relo_handle later = fx_reserve(f.s, 1 * MiB);
    expect_eq(fx_stats(f.s).pages, 2);
    expect_ok(relo_capture_prepare(f.s));
    expect_ok(relo_capture_begin(f.s));
    expect_ok(relo_capture_end(f.s, &graph));
    expect_true(graph != NULL);
    relo_graph_destroy(graph);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, fits));
    expect_ok(relo_release(f.dev, later));
    fx_close(&f);
}

/* 41. A 1 MiB allocation resolved during a recording, then released, then
 *     the graph sealed: a new 1 MiB needs a second page (the guarded page
 *     serves nothing new, though it is empty). */
CHECK_TEST(b41_guarded_page_serves_nothing_new)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    void *page = fx_bind(f.s, a).buffer;
    relo_graph *graph = NULL;
    expect_ok(relo_capture_prepare(f.s));
    expect_ok(relo_capture_begin(f.s));
    (void)fx_bind(f.s, a);
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_capture_end(f.s, &graph));
    require_true(graph != NULL);
    expect_eq(fx_stats(f.s).guarded_pages, 1);

    relo_handle b = fx_reserve(f.s, 1 * MiB);
    expect_true(fx_bind(f.s, b).buffer != page);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 2);
    expect_eq(st.bytes_reserved, 4 * MiB);
    expect_eq(st.guarded_pages, 1);
    relo_graph_destroy(graph);
    expect_eq(fx_stats(f.s).guarded_pages, 0);
    expect_ok(relo_release(f.dev, b));
    fx_close(&f);
}

/* A guarded 2 MiB page holding g (512 KiB, resolved while recording) and
 * its unguarded neighbour n (512 KiB, never resolved), then growth to
 * 10 MiB: the 1 MiB left on the 11 MiB page would take both. */
typedef struct guarded_setup {
    relo_handle g, n, big;
    relo_binding bg, bn;
    relo_graph *graph;
} guarded_setup;

static bool make_guarded(fx *f, guarded_setup *t)
{
    t->g = fx_reserve(f->s, 512 * KiB);
    t->n = fx_reserve(f->s, 512 * KiB);
    if (!t->g.id || !t->n.id) return false;
    expect_ok(fx_fill(f->dev, t->g, 0x66, 512 * KiB));
    expect_ok(fx_fill(f->dev, t->n, 0x77, 512 * KiB));
    t->bg = fx_bind(f->s, t->g);
    t->bn = fx_bind(f->s, t->n);
    expect_true(t->bg.buffer == t->bn.buffer);
    t->graph = record(f, &t->g, 1);
    t->big = fx_reserve(f->s, 10 * MiB);
    if (!t->graph || !t->big.id) return false;
    relo_stats st = fx_stats(f->s);
    expect_eq(st.outdated_pages, 1);
    expect_eq(st.guarded_pages, 1);
    return true;
}

/* 42. A guarded page, then growth to 10 MiB: relo_reclaim moves nothing;
 *     the guarded allocation keeps its place, and so does its unguarded
 *     neighbour on the same page. */
CHECK_TEST(b42_guarded_page_is_not_relocated)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    guarded_setup t;
    require_true(make_guarded(&f, &t));
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);
    expect_true(fx_same_place(fx_bind(f.s, t.g), t.bg));
    expect_true(fx_same_place(fx_bind(f.s, t.n), t.bn));
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 2);
    expect_eq(st.outdated_pages, 1);
    expect_eq(st.guarded_pages, 1);
    expect_true(fx_all_bytes(f.dev, t.g, 0x66, 512 * KiB));
    expect_true(fx_all_bytes(f.dev, t.n, 0x77, 512 * KiB));
    relo_graph_destroy(t.graph);
    expect_ok(relo_release(f.dev, t.g));
    expect_ok(relo_release(f.dev, t.n));
    expect_ok(relo_release(f.dev, t.big));
    fx_close(&f);
}

/* 43. After relo_graph_destroy the same reclaim moves the allocations and
 *     the page goes back. */
CHECK_TEST(b43_destroyed_graph_releases_guard)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    guarded_setup t;
    require_true(make_guarded(&f, &t));
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);

    relo_graph_destroy(t.graph);
    expect_eq(fx_stats(f.s).guarded_pages, 0);
    expect_ok(relo_reclaim(f.s));
    relo_stats dev = fx_dev_stats(f.dev);
    expect_eq(dev.allocations_moved, 2);
    expect_eq(dev.relocations, 1);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.bytes_reserved, 11 * MiB);
    void *page = fx_bind(f.s, t.big).buffer;
    expect_true(fx_bind(f.s, t.g).buffer == page);
    expect_true(fx_bind(f.s, t.n).buffer == page);
    expect_true(fx_all_bytes(f.dev, t.g, 0x66, 512 * KiB));
    expect_true(fx_all_bytes(f.dev, t.n, 0x77, 512 * KiB));
    expect_ok(relo_release(f.dev, t.g));
    expect_ok(relo_release(f.dev, t.n));
    expect_ok(relo_release(f.dev, t.big));
    fx_close(&f);
}

/* 44. An explicit cleanup never releases a guarded page, even an empty one;
 *     once the graph is gone it does. */
CHECK_TEST(b44_reclaim_keeps_empty_guarded_page)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    relo_graph *graph = record(&f, &a, 1);
    require_true(graph != NULL);
    expect_ok(relo_release(f.dev, a));
    uint64_t frees = fx_counts(&f).frees;

    expect_ok(relo_reclaim(f.s));
    relo_stats st = fx_stats(f.s);
    expect_eq(st.pages, 1);
    expect_eq(st.guarded_pages, 1);
    expect_eq(st.bytes_reserved, 2 * MiB);
    expect_eq(st.allocations, 0);
    expect_eq(fx_counts(&f).frees, frees);
    /* Nor does a device destroy free it behind the graph's back. */
    expect_status(relo_device_destroy(f.dev), RELO_ERR_BUSY);

    relo_graph_destroy(graph);
    expect_ok(relo_reclaim(f.s));
    st = fx_stats(f.s);
    expect_eq(st.pages, 0);
    expect_eq(st.bytes_reserved, 0);
    expect_eq(fx_counts(&f).frees, frees + 1);
    fx_close(&f);
}

/* While any stream records no page is released: A's emptied outdated page
 * and a freed dedicated buffer stay through A's periodic cleanups until
 * B's recording ends. (B starts recording first: its prepare would
 * otherwise relocate A's outdated page.) */
CHECK_TEST(x_no_page_released_while_another_stream_records)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    relo_stream *A = f.s, *B = f.s2;
    expect_ok(relo_capture_prepare(B));
    expect_ok(relo_capture_begin(B));
    relo_handle a = fx_reserve(A, 1 * MiB);
    relo_handle big = fx_reserve(A, 10 * MiB);
    expect_ok(relo_mode_push(A, RELO_MODE_DEDICATED));
    relo_handle d = fx_reserve(A, 1 * MiB);
    expect_ok(relo_mode_pop(A));
    uint64_t frees = fx_counts(&f).frees;
    expect_ok(relo_release(f.dev, a)); /* the outdated page is empty */
    expect_ok(relo_release(f.dev, d));
    relo_handle c = fx_reserve(A, 4 * MiB); /* a periodic cleanup, and a new page */
    expect_eq(fx_counts(&f).frees, frees);
    expect_eq(fx_stats(A).outdated_pages, 1);
    expect_status(relo_reclaim(A), RELO_ERR_RECORDING);
    expect_eq(fx_counts(&f).frees, frees);

    relo_graph *graph = NULL;
    expect_ok(relo_capture_end(B, &graph));
    relo_graph_destroy(graph);
    relo_handle e = fx_reserve(A, 8 * MiB);    /* now the cleanup runs */
    expect_eq(fx_counts(&f).frees, frees + 2); /* the outdated page, the dedicated buffer */
    expect_eq(fx_stats(A).outdated_pages, 0);
    expect_ok(relo_release(f.dev, big));
    expect_ok(relo_release(f.dev, c));
    expect_ok(relo_release(f.dev, e));
    fx_close(&f);
}

/* A page resolved on the recording stream is guarded whichever stream
 * holds it: B records and resolves A's allocation; A's page then stays
 * where it is through A's growth and a reclaim, until the graph goes. */
CHECK_TEST(x_cross_stream_resolve_guards_page)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    relo_stream *A = f.s, *B = f.s2;
    relo_handle a = fx_reserve(A, 1 * MiB);
    expect_ok(fx_fill(f.dev, a, 0x42, 1 * MiB));
    relo_binding at = fx_bind(A, a);
    relo_graph *graph = NULL;
    expect_ok(relo_capture_prepare(B));
    expect_ok(relo_capture_begin(B));
    expect_true(fx_same_place(fx_bind(B, a), at));
    expect_ok(relo_capture_end(B, &graph));
    require_true(graph != NULL);
    expect_eq(fx_dev_stats(f.dev).guarded_pages, 1);

    relo_handle big = fx_reserve(A, 19 * MiB / 2); /* 11 MiB pages, 1.5 MiB free */
    relo_handle next = fx_reserve(A, 512 * KiB);
    expect_true(fx_bind(A, next).buffer != at.buffer); /* serves nothing new */
    expect_ok(relo_reclaim(A));
    expect_true(fx_same_place(fx_bind(A, a), at));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);

    relo_graph_destroy(graph);
    expect_ok(relo_reclaim(A));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 1);
    expect_true(fx_bind(A, a).buffer == fx_bind(A, big).buffer);
    expect_true(fx_all_bytes(f.dev, a, 0x42, 1 * MiB));
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, big));
    expect_ok(relo_release(f.dev, next));
    fx_close(&f);
}

/* Room a recording resolved stays the graph's: O holds a1; S records and
 * resolves a1; a1 is released during the recording. O's next reservations,
 * during the recording and after its end, never get a1's bytes, which the
 * graph writes on every replay; once the graph is destroyed they may. The
 * recording stream itself may reuse room released in its own pages while it
 * records (stream order keeps that safe inside the graph). */
CHECK_TEST(x_room_a_recording_touched_stays_the_graphs)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    relo_stream *O = f.s, *S = f.s2;
    relo_handle a1 = fx_reserve(O, 1 * MiB);
    relo_handle keep = fx_reserve(O, 1 * MiB); /* the page stays */
    relo_binding at = fx_bind(O, a1);
    relo_handle x = fx_reserve(S, 1 * MiB);

    expect_ok(relo_capture_prepare(S));
    expect_ok(relo_capture_begin(S));
    expect_true(fx_same_place(fx_bind(S, a1), at));
    relo_binding xat = fx_bind(S, x);
    expect_ok(relo_release(f.dev, a1));
    relo_handle a2 = fx_reserve(O, 1 * MiB);
    require_ne(a2.id, 0);
    expect_true(!fx_overlap(fx_bind(O, a2), at));
    /* S reuses room of its own page inside the recording. */
    expect_ok(relo_release(f.dev, x));
    relo_handle y = fx_reserve(S, 1 * MiB);
    require_ne(y.id, 0);
    expect_true(fx_same_place(fx_bind(S, y), xat));
    relo_graph *graph = NULL;
    expect_ok(relo_capture_end(S, &graph));
    require_true(graph != NULL);

    /* After the end, neither stream gets the bytes the graph writes. */
    relo_handle a3 = fx_reserve(O, 1 * MiB);
    require_ne(a3.id, 0);
    expect_true(!fx_overlap(fx_bind(O, a3), at));
    expect_ok(relo_release(f.dev, y));
    relo_handle z = fx_reserve(S, 1 * MiB);
    require_ne(z.id, 0);
    expect_true(!fx_overlap(fx_bind(S, z), xat));
    expect_ok(relo_device_check(f.dev));

    /* Destroyed, the graph hands the room back. */
    relo_graph_destroy(graph);
    relo_handle a4 = fx_reserve(O, 1 * MiB);
    expect_true(fx_same_place(fx_bind(O, a4), at));
    expect_ok(relo_device_check(f.dev));
    relo_handle all[] = {keep, a2, a3, z, a4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) expect_ok(relo_release(f.dev, all[i]));
    fx_close(&f);
}

/* A recording that yields no graph gives back the guards it took at touch:
 * the touched page of another stream serves again. */
CHECK_TEST(x_failed_recording_drops_its_guards)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    relo_stream *O = f.s, *S = f.s2;
    relo_handle a1 = fx_reserve(O, 1 * MiB);
    relo_handle keep = fx_reserve(O, 1 * MiB);
    relo_binding at = fx_bind(O, a1);
    expect_ok(relo_capture_prepare(S));
    expect_ok(relo_capture_begin(S));
    (void)fx_bind(S, a1);
    expect_eq(fx_dev_stats(f.dev).guarded_pages, 1);
    relo_handle big;
    expect_status(relo_reserve(S, 64 * MiB, &big), RELO_ERR_PAGE_UPDATE_FORBIDDEN); /* dooms it */
    relo_graph *graph = NULL;
    expect_true(relo_capture_end(S, &graph) != RELO_OK);
    expect_true(graph == NULL);
    expect_eq(fx_dev_stats(f.dev).guarded_pages, 0);
    expect_ok(relo_release(f.dev, a1));
    relo_handle a2 = fx_reserve(O, 1 * MiB);
    expect_true(fx_same_place(fx_bind(O, a2), at));
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_release(f.dev, a2));
    expect_ok(relo_release(f.dev, keep));
    fx_close(&f);
}

CHECK_MAIN()
