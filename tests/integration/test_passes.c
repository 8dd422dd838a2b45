/*
 * test_passes.c — the binding contract a multi-threaded runtime keeps:
 * pins, passes the runtime drives, streams' finishes, reclaim's scope, and
 * relocation that waits for the device and copies without the device lock
 * (other threads resolve, pin, write and release meanwhile).
 */
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "mock_backend.h"

/* An allocation a on an outdated page, and big on the current one: a reclaim
 * moves a into big's page (19/2 MiB takes an 11 MiB page; 1.5 MiB free). */
typedef struct grown {
    relo_handle a, big;
    relo_binding at;
} grown;

static bool grow(fx *f, relo_stream *s, grown *g, uint64_t key)
{
    g->a = fx_reserve(s, 1 * MiB);
    if (!g->a.id || fx_write_pattern(f->dev, g->a, key, 1 * MiB) != RELO_OK) return false;
    g->at = fx_bind(s, g->a);
    g->big = fx_reserve(s, 19 * MiB / 2);
    return g->big.id && fx_stats(s).outdated_pages == 1;
}

static void release_grown(fx *f, grown *g)
{
    if (g->a.id) expect_ok(relo_release(f->dev, g->a));
    expect_ok(relo_release(f->dev, g->big));
}

/* ------------------------------------------------------------------------ */
/* Pins                                                                     */
/* ------------------------------------------------------------------------ */

/* A pinned allocation is not moved, by a reclaim or a pressure relocation;
 * once unpinned it is, with its bytes. */
CHECK_TEST(pin_keeps_an_allocation_in_place)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    grown g;
    require_true(grow(&f, f.s, &g, 7));
    relo_binding pinned;
    require_ok(relo_pin(f.s, g.a, &pinned));
    expect_true(fx_same_place(pinned, g.at));
    require_ok(relo_pin(f.s, g.a, &pinned)); /* pins count */
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);
    expect_true(fx_same_place(fx_bind(f.s, g.a), g.at));
    expect_ok(relo_unpin(f.dev, g.a));
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0); /* one pin left */
    expect_ok(relo_unpin(f.dev, g.a));
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 1);
    expect_true(fx_bind(f.s, g.a).buffer == fx_bind(f.s, g.big).buffer);
    expect_true(fx_check_pattern(f.dev, g.a, 7, 1 * MiB));
    expect_ok(relo_device_check(f.dev));
    release_grown(&f, &g);
    fx_close(&f);
}

/* unpin without a pin, of a stale handle, or with NULLs is refused; a
 * release drops the pins the allocation still had. */
CHECK_TEST(unpin_misuse_and_release_of_pinned)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle h = fx_reserve(f.s, 4096);
    relo_binding b;
    expect_status(relo_unpin(f.dev, h), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_unpin(NULL, h), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_pin(NULL, h, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_pin(f.s, h, NULL), RELO_ERR_INVALID_ARGUMENT);
    require_ok(relo_pin(f.s, h, &b));
    require_ok(relo_pin(f.s, h, &b));
    expect_ok(relo_release(f.dev, h));
    expect_status(relo_unpin(f.dev, h), RELO_ERR_NOT_FOUND);
    expect_status(relo_pin(f.s, h, &b), RELO_ERR_NOT_FOUND);
    expect_ok(relo_device_check(f.dev));
    /* The page the pinned allocation was on is a source again. */
    grown g;
    require_true(grow(&f, f.s, &g, 3));
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 1);
    release_grown(&f, &g);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* Passes the runtime drives                                                */
/* ------------------------------------------------------------------------ */

/* The runtime copies the moves itself (host buffers are host memory), ends
 * the pass LANDED, and every handle resolves to its target with its bytes;
 * the emptied page goes back. */
CHECK_TEST(pass_runtime_copies_and_commits)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    grown g;
    require_true(grow(&f, f.s, &g, 11));
    uint64_t pages = fx_dev_stats(f.dev).pages;
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    require_eq(relo_pass_move_count(pass), 1);
    relo_pass_move mv;
    require_ok(relo_pass_move_get(pass, 0, &mv));
    expect_eq(mv.handle.id, g.a.id);
    expect_true(mv.stream == f.s);
    expect_eq(mv.state, RELO_MOVE_PENDING);
    expect_true(fx_same_place(mv.from, g.at));
    expect_true(mv.to.buffer == fx_bind(f.s, g.big).buffer);
    expect_eq(mv.to.size, 1 * MiB);
    /* Until the pass ends the handle still resolves where it was. */
    expect_status(relo_pass_move_get(pass, 1, &mv), RELO_ERR_INVALID_ARGUMENT);
    memcpy((char *)mv.to.buffer + mv.to.offset, (char *)mv.from.buffer + mv.from.offset,
           (size_t)mv.from.size);
    expect_ok(relo_pass_end(pass, RELO_PASS_LANDED));
    expect_true(fx_same_place(fx_bind(f.s, g.a), mv.to));
    expect_true(fx_check_pattern(f.dev, g.a, 11, 1 * MiB));
    relo_stats st = fx_dev_stats(f.dev);
    expect_eq(st.allocations_moved, 1);
    expect_eq(st.pages, pages - 1);
    expect_eq(st.outdated_pages, 0);
    expect_ok(relo_device_check(f.dev));
    release_grown(&f, &g);
    fx_close(&f);
}

/* relo_pass_copy copies the way relo does; a second call is refused. */
CHECK_TEST(pass_relo_copies)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    grown g;
    require_true(grow(&f, f.s, &g, 5));
    relo_pass *pass = NULL;
    relo_pass_desc desc = {f.s, 0, 0};
    require_ok(relo_pass_begin(f.dev, &desc, &pass));
    relo_pass_outcome out = RELO_PASS_UNKNOWN;
    expect_ok(relo_pass_copy(pass, &out));
    expect_eq(out, RELO_PASS_LANDED);
    expect_status(relo_pass_copy(pass, &out), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_pass_end(pass, out));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 1);
    expect_true(fx_check_pattern(f.dev, g.a, 5, 1 * MiB));
    release_grown(&f, &g);
    fx_close(&f);
}

/* A skipped move does not commit; an abandoned pass keeps every source; an
 * unknown outcome leaks both sides and the handle keeps its bytes. */
CHECK_TEST(pass_skip_abandon_unknown)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    grown g;
    require_true(grow(&f, f.s, &g, 9));
    relo_stats before = fx_dev_stats(f.dev);
    relo_pass *pass = NULL;
    relo_pass_move mv;

    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    expect_ok(relo_pass_skip(pass, 0));
    expect_ok(relo_pass_skip(pass, 0));
    expect_status(relo_pass_skip(pass, 5), RELO_ERR_INVALID_ARGUMENT);
    require_ok(relo_pass_move_get(pass, 0, &mv));
    expect_eq(mv.state, RELO_MOVE_SKIPPED);
    expect_ok(relo_pass_end(pass, RELO_PASS_LANDED));
    expect_true(fx_same_place(fx_bind(f.s, g.a), g.at));

    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    expect_status(relo_pass_end(pass, RELO_PASS_OUTCOME_COUNT), RELO_ERR_INVALID_ARGUMENT);
    expect_ok(relo_pass_end(pass, RELO_PASS_ABANDONED));
    expect_true(fx_same_place(fx_bind(f.s, g.a), g.at));
    relo_stats after = fx_dev_stats(f.dev);
    expect_eq(after.allocations_moved, 0);
    expect_eq(after.bytes_in_use, before.bytes_in_use);
    expect_eq(after.relocations_abandoned, 1);
    expect_ok(relo_device_check(f.dev));

    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    expect_ok(relo_pass_end(pass, RELO_PASS_UNKNOWN));
    expect_true(fx_same_place(fx_bind(f.s, g.a), g.at));
    expect_true(fx_check_pattern(f.dev, g.a, 9, 1 * MiB));
    expect_gt(fx_dev_stats(f.dev).bytes_leaked, 0);
    expect_ok(relo_device_check(f.dev));
    release_grown(&f, &g);
    fx_close(&f);
}

/* While a pass is open: resolving or writing a source skips its move;
 * releasing one is carried out at the end; other calls go on; a second
 * pass, a capture and a stream destroy are refused; automatic relocation
 * waits. */
CHECK_TEST(pass_open_while_others_call)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    grown g1, o;
    require_true(grow(&f, f.s, &g1, 1));
    require_true(grow(&f, f.s2, &o, 4));
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    uint32_t n = relo_pass_move_count(pass);
    require_eq(n, 2);

    relo_pass *second = NULL;
    expect_status(relo_pass_begin(f.dev, NULL, &second), RELO_ERR_BUSY);
    expect_status(relo_capture_prepare(f.s), RELO_ERR_BUSY);
    expect_status(relo_reclaim(f.s), RELO_ERR_BUSY);
    relo_stream *extra = NULL;
    require_ok(relo_stream_create(f.dev, NULL, &extra));
    expect_status(relo_stream_destroy(extra), RELO_ERR_BUSY);
    relo_handle other = fx_reserve(f.s2, 4096); /* reservations go on */
    require_ne(other.id, 0);

    /* g1.a is resolved: its move is skipped. o.a is released: dropped. */
    (void)fx_bind(f.s, g1.a);
    expect_ok(relo_release(f.dev, o.a));
    relo_binding b;
    expect_status(relo_resolve(f.s2, o.a, &b), RELO_ERR_NOT_FOUND);
    for (uint32_t i = 0; i < n; i++) {
        relo_pass_move mv;
        require_ok(relo_pass_move_get(pass, i, &mv));
        if (mv.stream == f.s) {
            expect_eq(mv.state, RELO_MOVE_SKIPPED);
        } else {
            expect_eq(mv.state, RELO_MOVE_RELEASED);
            expect_eq(mv.handle.id, 0);
        }
    }
    relo_pass_outcome out;
    expect_ok(relo_pass_copy(pass, &out));
    expect_ok(relo_pass_end(pass, out));
    o.a.id = 0;
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);
    expect_true(fx_same_place(fx_bind(f.s, g1.a), g1.at));
    expect_true(fx_check_pattern(f.dev, g1.a, 1, 1 * MiB));
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_stream_destroy(extra));

    /* Closed: a reclaim moves again. */
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 1);
    expect_true(fx_check_pattern(f.dev, g1.a, 1, 1 * MiB));
    expect_ok(relo_release(f.dev, other));
    release_grown(&f, &g1);
    release_grown(&f, &o);
    fx_close(&f);
}

/* A pass is refused while a stream records, with relocation off, and for a
 * stream of another device; with nothing to move it is empty. */
CHECK_TEST(pass_refusals_and_empty_pass)
{
    fx f, g;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    expect_eq(relo_pass_move_count(pass), 0);
    relo_pass_outcome out;
    expect_ok(relo_pass_copy(pass, &out));
    expect_eq(out, RELO_PASS_LANDED);
    expect_ok(relo_pass_end(pass, out));
    expect_status(relo_pass_begin(NULL, NULL, &pass), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_pass_begin(f.dev, NULL, NULL), RELO_ERR_INVALID_ARGUMENT);
    expect_eq(relo_pass_move_count(NULL), 0);
    expect_status(relo_pass_end(NULL, RELO_PASS_LANDED), RELO_ERR_INVALID_ARGUMENT);

    expect_ok(relo_capture_prepare(f.s));
    expect_ok(relo_capture_begin(f.s));
    expect_status(relo_pass_begin(f.dev, NULL, &pass), RELO_ERR_RECORDING);
    relo_graph *graph = NULL;
    expect_ok(relo_capture_end(f.s, &graph));
    relo_graph_destroy(graph);

    relo_device_desc off;
    memset(&off, 0, sizeof off);
    off.relocation = RELO_RELOCATION_OFF;
    require_ok(fx_open(&g, NULL, &off));
    expect_status(relo_pass_begin(g.dev, NULL, &pass), RELO_ERR_UNSUPPORTED);
    relo_pass_desc other = {f.s, 0, 0};
    expect_status(relo_pass_begin(g.dev, &other, &pass), RELO_ERR_INVALID_ARGUMENT);
    fx_close(&g);
    fx_close(&f);
}

/* Bounds: max_moves keeps a pass to whole pages up to the bound (at least
 * one page), and what is left moves in the next pass. Two outdated pages,
 * each with one 256 KiB allocation, and room for both in the current one. */
CHECK_TEST(pass_bounds)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle x = fx_reserve(f.s, 256 * KiB);   /* page 1: 2 MiB */
    relo_handle m = fx_reserve(f.s, 5 * MiB / 2); /* page 2: 4 MiB */
    expect_ok(relo_release(f.dev, m));
    relo_handle y = fx_reserve(f.s, 256 * KiB); /* page 2 */
    relo_handle z = fx_reserve(f.s, 5 * MiB);   /* page 3: 6 MiB, 1 MiB free */
    require_ne(z.id, 0);
    require_eq(fx_stats(f.s).outdated_pages, 2);
    relo_pass *pass = NULL;
    relo_pass_desc one = {NULL, 0, 1};
    require_ok(relo_pass_begin(f.dev, &one, &pass));
    expect_eq(relo_pass_move_count(pass), 1);
    relo_pass_outcome out;
    expect_ok(relo_pass_copy(pass, &out));
    expect_ok(relo_pass_end(pass, out));
    relo_pass_desc bytes = {NULL, 1, 0}; /* one byte: still one page */
    require_ok(relo_pass_begin(f.dev, &bytes, &pass));
    expect_eq(relo_pass_move_count(pass), 1);
    expect_ok(relo_pass_copy(pass, &out));
    expect_ok(relo_pass_end(pass, out));
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 2);
    expect_eq(fx_stats(f.s).outdated_pages, 0);
    expect_ok(relo_release(f.dev, x));
    expect_ok(relo_release(f.dev, y));
    expect_ok(relo_release(f.dev, z));
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* Finishes and scope                                                       */
/* ------------------------------------------------------------------------ */

static relo_status count_finish(void *user)
{
    (*(int *)user)++;
    return RELO_OK;
}

static relo_status refuse_finish(void *user)
{
    (*(int *)user)++;
    return RELO_ERR_BACKEND;
}

/* With a finish on every stream relo calls them instead of the backend's
 * device-wide wait; with one stream lacking a finish it calls both; a
 * failing finish abandons the relocation. */
CHECK_TEST(stream_finish_replaces_device_wait)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    int calls1 = 0, calls2 = 0;
    expect_ok(relo_stream_set_finish(f.s, count_finish, &calls1));
    expect_status(relo_stream_set_finish(NULL, count_finish, &calls1), RELO_ERR_INVALID_ARGUMENT);
    grown g;
    require_true(grow(&f, f.s, &g, 2));
    uint64_t waits = fx_counts(&f).wait_device;
    expect_ok(relo_reclaim(f.s)); /* s2 has no finish */
    expect_eq(fx_counts(&f).wait_device, waits + 1);
    expect_eq(calls1, 1);
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 1);

    /* a moves again: onto a page with exactly 1 MiB free. */
    expect_ok(relo_release(f.dev, g.big));
    relo_handle b = fx_reserve(f.s, 12 * MiB);
    require_ne(b.id, 0);
    expect_ok(relo_stream_set_finish(f.s2, count_finish, &calls2));
    waits = fx_counts(&f).wait_device;
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_counts(&f).wait_device, waits);
    expect_eq(calls1, 2);
    expect_eq(calls2, 1);
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 2);
    expect_true(fx_check_pattern(f.dev, g.a, 2, 1 * MiB));

    expect_ok(relo_release(f.dev, b));
    relo_handle c = fx_reserve(f.s, 16 * MiB);
    require_ne(c.id, 0);
    int refused = 0;
    expect_ok(relo_stream_set_finish(f.s2, refuse_finish, &refused));
    expect_ok(relo_reclaim(f.s));
    expect_eq(refused, 1);
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 2);
    expect_eq(fx_dev_stats(f.dev).relocations_abandoned, 1);
    expect_true(fx_check_pattern(f.dev, g.a, 2, 1 * MiB));
    expect_ok(relo_stream_set_finish(f.s2, NULL, NULL));
    expect_ok(relo_release(f.dev, c));
    expect_ok(relo_release(f.dev, g.a));
    fx_close(&f);
}

/* relo_reclaim moves its own stream's allocations only. */
CHECK_TEST(reclaim_moves_its_stream_only)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    grown g1, g2;
    require_true(grow(&f, f.s, &g1, 1));
    require_true(grow(&f, f.s2, &g2, 2));
    expect_ok(relo_reclaim(f.s2));
    expect_eq(fx_stats(f.s2).allocations_moved, 1);
    expect_eq(fx_stats(f.s).allocations_moved, 0);
    expect_true(fx_same_place(fx_bind(f.s, g1.a), g1.at));
    expect_eq(fx_stats(f.s).outdated_pages, 1);
    expect_ok(relo_reclaim_device(f.dev));
    expect_eq(fx_stats(f.s).allocations_moved, 1);
    expect_true(fx_check_pattern(f.dev, g1.a, 1, 1 * MiB));
    expect_true(fx_check_pattern(f.dev, g2.a, 2, 1 * MiB));
    release_grown(&f, &g1);
    release_grown(&f, &g2);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* No device wait under the lock                                            */
/* ------------------------------------------------------------------------ */

/* A gate in the mock's wait_device: the relocating thread stops there until
 * the test opens it, so what the test does meanwhile happens while relo
 * waits for the device. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered, open;
} gate;

static void gate_hook(void *user)
{
    gate *g = user;
    pthread_mutex_lock(&g->mu);
    g->entered = true;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* Waits until a thread stopped at the gate. */
static void gate_wait_entered(gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->entered) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* Lets the thread at the gate go on. */
static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

typedef struct pinner {
    relo_device *device;
    relo_stream *stream;
    relo_handle handle;
    relo_binding at;
    relo_status st;
} pinner;

static void *pin_thread(void *arg)
{
    pinner *p = arg;
    p->st = relo_pin(p->stream, p->handle, &p->at);
    if (p->st == RELO_OK) p->st = relo_unpin(p->device, p->handle);
    return NULL;
}

/* While one thread's reclaim waits for the device: another thread
 * resolves, pins, writes, reserves and releases on the device without
 * waiting; resolving a moving allocation skips its move, releasing one is
 * carried out when the pass closes, and nothing is lost. */
CHECK_TEST(device_wait_without_the_lock)
{
    static mock_ctx m;
    relo_backend *backend = NULL;
    require_ok(mock_backend_create(&m, NULL, &backend));
    fx f;
    require_ok(fx_open_backend(&f, backend, FX_ADAPTIVE));
    require_ok(relo_stream_create(f.dev, NULL, &f.s2));
    /* Three allocations on an outdated page, then the growth (a 5 MiB
     * page with 1 MiB free). */
    enum { Q = 256 * KiB };
    relo_handle keep = fx_reserve(f.s, Q), veto = fx_reserve(f.s, Q), gone = fx_reserve(f.s, Q);
    require_ok(fx_write_pattern(f.dev, keep, 1, Q));
    require_ok(fx_write_pattern(f.dev, veto, 2, Q));
    require_ok(fx_write_pattern(f.dev, gone, 3, Q));
    relo_binding veto_at = fx_bind(f.s, veto);
    relo_handle big = fx_reserve(f.s, 4 * MiB);
    relo_handle elsewhere = fx_reserve(f.s2, 4096);
    require_ok(fx_write_pattern(f.dev, elsewhere, 4, 4096));
    require_eq(fx_stats(f.s).outdated_pages, 1);

    /* With the lock held across the wait, the first resolve below would
     * wait for the gate, and the gate for the test: die instead of hang. */
    alarm(60);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};
    m.wait_device_hook = gate_hook;
    m.wait_device_user = &g;
    fx_reclaimer r = {f.s, RELO_ERR_CORRUPT};
    pthread_t t;
    require_eq(pthread_create(&t, NULL, fx_reclaim_thread, &r), 0);
    gate_wait_entered(&g);

    /* The reclaim is inside wait_device now; none of these may block. */
    relo_binding b;
    expect_ok(relo_resolve(f.s2, elsewhere, &b));
    expect_ok(relo_pin(f.s2, elsewhere, &b));
    expect_ok(relo_unpin(f.dev, elsewhere));
    expect_true(fx_check_pattern(f.dev, elsewhere, 4, 4096));
    expect_ok(relo_resolve(f.s, veto, &b)); /* skips veto's move */
    expect_true(fx_same_place(b, veto_at));
    /* Another thread pins keep, which is moving: it waits for the pass and
     * gets keep's new place (its launch must not race the copy). */
    pinner pn = {f.dev, f.s, keep, {NULL, 0, 0, 0}, RELO_ERR_CORRUPT};
    pthread_t pt;
    require_eq(pthread_create(&pt, NULL, pin_thread, &pn), 0);
    struct timespec settle = {0, 50 * 1000 * 1000};
    nanosleep(&settle, NULL);
    expect_ok(relo_release(f.dev, gone)); /* carried out at the close */
    expect_status(relo_resolve(f.s, gone, &b), RELO_ERR_NOT_FOUND);
    relo_handle more = fx_reserve(f.s2, 8192);
    require_ne(more.id, 0);
    expect_ok(relo_release(f.dev, more));

    gate_open(&g);
    require_eq(pthread_join(t, NULL), 0);
    require_eq(pthread_join(pt, NULL), 0);
    alarm(0);
    m.wait_device_hook = NULL;
    expect_ok(r.st);

    relo_stats st = fx_dev_stats(f.dev);
    expect_eq(st.allocations_moved, 1); /* keep only */
    expect_true(fx_bind(f.s, keep).buffer == fx_bind(f.s, big).buffer);
    expect_ok(pn.st);
    expect_true(fx_same_place(pn.at, fx_bind(f.s, keep))); /* the new place */
    expect_true(fx_same_place(fx_bind(f.s, veto), veto_at));
    expect_true(fx_check_pattern(f.dev, keep, 1, Q));
    expect_true(fx_check_pattern(f.dev, veto, 2, Q));
    expect_eq(st.allocations, 4); /* keep, veto, big, elsewhere */
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_release(f.dev, keep));
    expect_ok(relo_release(f.dev, veto));
    expect_ok(relo_release(f.dev, big));
    expect_ok(relo_release(f.dev, elsewhere));
    fx_close(&f);
}

/* The log callback runs without the device lock: it may call relo (here a
 * stats query from inside the warning of an abandoned relocation). */
typedef struct log_probe {
    relo_device *dev;
    int lines;
    relo_status stats;
} log_probe;

static void log_calls_relo(void *user, relo_log_level level, const char *message)
{
    log_probe *p = user;
    (void)level;
    (void)message;
    relo_stats st;
    p->stats = relo_device_stats(p->dev, &st);
    p->lines++;
}

typedef struct reserver {
    relo_stream *stream;
    uint64_t size;
    relo_handle h;
    relo_status st;
} reserver;

static void *reserve_thread(void *arg)
{
    reserver *r = arg;
    r->st = relo_reserve(r->stream, r->size, &r->h);
    return NULL;
}

/* relo_resolve answers without the device lock: another thread holds it
 * (inside the backend's alloc, called under the lock) and resolves of
 * placed allocations, on either stream, still return, with the binding
 * the lock would give. */
CHECK_TEST(resolve_without_the_lock)
{
    static mock_ctx m;
    relo_backend *backend = NULL;
    require_ok(mock_backend_create(&m, NULL, &backend));
    fx f;
    require_ok(fx_open_backend(&f, backend, NULL));
    require_ok(relo_stream_create(f.dev, NULL, &f.s2));
    relo_handle a = fx_reserve(f.s, 4096), c = fx_reserve(f.s2, 64 * KiB);
    relo_binding a_at = fx_bind(f.s, a), c_at = fx_bind(f.s2, c);

    alarm(60); /* a resolve that takes the lock waits for the gate: die, not hang */
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};
    m.alloc_hook = gate_hook;
    m.alloc_user = &g;
    reserver r = {f.s2, 64 * MiB, {0}, RELO_ERR_CORRUPT};
    pthread_t t;
    require_eq(pthread_create(&t, NULL, reserve_thread, &r), 0);
    gate_wait_entered(&g);

    relo_binding b;
    for (int i = 0; i < 1000; i++) {
        expect_ok(relo_resolve(f.s, a, &b));
        expect_true(b.buffer == a_at.buffer && b.offset == a_at.offset && b.size == a_at.size &&
                    b.address == a_at.address);
        expect_ok(relo_resolve(f.s, c, &b)); /* another stream's allocation */
        expect_true(b.buffer == c_at.buffer && b.offset == c_at.offset && b.size == c_at.size);
    }

    gate_open(&g);
    require_eq(pthread_join(t, NULL), 0);
    alarm(0);
    m.alloc_hook = NULL;
    expect_ok(r.st);
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_release(f.dev, r.h));
    expect_ok(relo_release(f.dev, a));
    expect_ok(relo_release(f.dev, c));
    /* A released handle is refused (the locked path answers it). */
    expect_eq(relo_resolve(f.s, a, &b), RELO_ERR_NOT_FOUND);
    fx_close(&f);
}

CHECK_TEST(log_callback_runs_without_the_lock)
{
    alarm(60); /* under the lock the stats query would wait forever */
    log_probe probe = {NULL, 0, RELO_ERR_CORRUPT};
    relo_host_desc hd = fx_host();
    hd.refuse_copies = true;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = RELO_PLACEMENT_ADAPTIVE;
    dd.log = log_calls_relo;
    dd.log_user = &probe;
    fx f;
    require_ok(fx_open(&f, &hd, &dd));
    probe.dev = f.dev;
    grown g;
    require_true(grow(&f, f.s, &g, 6));
    expect_ok(relo_reclaim(f.s)); /* the copy is refused: abandoned, logged */
    alarm(0);
    expect_gt(probe.lines, 0);
    expect_ok(probe.stats);
    expect_true(fx_check_pattern(f.dev, g.a, 6, 1 * MiB));
    release_grown(&f, &g);
    fx_close(&f);
}

/* Under the default placement a pass the runtime drives empties sparse pages
 * into denser ones; relo_pass_end gives the emptied pages back, as a
 * reclaim would, with every byte kept. */
CHECK_TEST(pass_end_gives_back_the_pages_it_emptied)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    enum { N = 32 };
    relo_handle h[N];
    for (int i = 0; i < N; i++) {
        h[i] = fx_reserve(f.s, 16 * KiB);
        require_ne(h[i].id, 0);
        expect_ok(fx_write_pattern(f.dev, h[i], (uint64_t)i + 1, 16 * KiB));
    }
    for (int i = 1; i < N; i += 2) expect_ok(relo_release(f.dev, h[i]));
    uint64_t held = fx_dev_stats(f.dev).bytes_reserved;
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    require_true(relo_pass_move_count(pass) > 0);
    relo_pass_outcome outcome;
    expect_ok(relo_pass_copy(pass, &outcome));
    expect_ok(relo_pass_end(pass, outcome));
    relo_stats after = fx_dev_stats(f.dev);
    expect_gt(after.allocations_moved, 0);
    expect_lt(after.bytes_reserved, held);
    for (int i = 0; i < N; i += 2) expect_true(fx_check_pattern(f.dev, h[i], (uint64_t)i + 1, 16 * KiB));
    expect_ok(relo_device_check(f.dev));
    for (int i = 0; i < N; i += 2) expect_ok(relo_release(f.dev, h[i]));
    fx_close(&f);
}

CHECK_MAIN()
