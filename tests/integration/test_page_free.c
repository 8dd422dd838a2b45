/*
 * test_page_free.c — RELO_PAGE_FREE_THREAD: the buffers of pages a
 * relocation empties go back to the backend on the device's own thread, so
 * the call that emptied them returns without waiting for the free; a page
 * the backend refuses while frees are queued waits for them and is tried
 * again.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "mock_backend.h"

/* A gate the mock's free (or alloc) stops at while it is shut. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    uint32_t frees;          /* frees that reached the gate */
    uint32_t allocs;         /* allocs seen since counting began */
    uint32_t frees_at_alloc; /* frees past the gate when the last alloc came */
    mock_ctx *mock;          /* with full: */
    bool full;               /* allocs are refused until a free passes the gate */
    bool reserved;           /* the reserving thread returned */
    uint32_t at_gate;        /* frees waiting at the shut gate now */
} gate;

static gate the_gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .open = true};

static void free_hook(void *user)
{
    gate *g = user;
    pthread_mutex_lock(&g->mu);
    g->at_gate++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    g->at_gate--;
    g->frees++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void alloc_hook(void *user)
{
    gate *g = user;
    pthread_mutex_lock(&g->mu);
    g->allocs++;
    g->frees_at_alloc = g->frees;
    /* A device with no room until the held page's free: this call is refused. */
    if (g->full && g->frees == 0) mock_refuse(g->mock, MOCK_ALLOC, 1, false, RELO_ERR_OUT_OF_MEMORY);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gate_set(gate *g, bool open)
{
    pthread_mutex_lock(&g->mu);
    g->open = open;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* A mock device with the release thread, the adaptive placement, and the gate in
 * its free and alloc. */
static relo_device *open_device(mock_ctx *m, gate *g)
{
    relo_backend *b = NULL;
    if (mock_backend_create(m, NULL, &b) != RELO_OK) return NULL;
    g->open = true;
    g->frees = g->allocs = g->frees_at_alloc = 0;
    g->mock = m;
    g->full = g->reserved = false;
    m->free_hook = free_hook;
    m->free_user = g;
    m->alloc_hook = alloc_hook;
    m->alloc_user = g;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = RELO_PLACEMENT_ADAPTIVE;
    dd.page_free = RELO_PAGE_FREE_THREAD;
    relo_device *d = NULL;
    if (relo_device_create(&dd, b, &d) != RELO_OK) relo_backend_destroy(b);
    return d;
}

/* 1 MiB on a page the growth to a 19/2 MiB block outdates; a reclaim moves
 * it into the new page and empties the old one. */
static bool grow(relo_device *d, relo_stream *s, relo_handle *a, relo_handle *big)
{
    *a = fx_reserve(s, 1 * MiB);
    if (!a->id || fx_write_pattern(d, *a, 7, 1 * MiB) != RELO_OK) return false;
    *big = fx_reserve(s, 19 * MiB / 2);
    return big->id && fx_stats(s).outdated_pages == 1;
}

/* A device of open_device with one stream grown as grow says. */
static bool open_grown(mock_ctx *m, gate *g, relo_device **d, relo_stream **s, relo_handle *a,
                       relo_handle *big)
{
    *d = open_device(m, g);
    return *d && relo_stream_create(*d, NULL, s) == RELO_OK && grow(*d, *s, a, big);
}

/* The reclaim returns while the emptied page's free is still held at the
 * gate: it runs on another thread, and the allocation is in its new place
 * with every byte. */
CHECK_TEST(reclaim_returns_before_the_free)
{
    static mock_ctx m;
    gate *g = &the_gate;
    relo_device *d = NULL;
    relo_stream *s = NULL;
    relo_handle a, big;
    require_true(open_grown(&m, g, &d, &s, &a, &big));
    relo_binding before = fx_bind(s, a);

    alarm(60); /* an inline free would wait at the shut gate: die, not hang */
    gate_set(g, false);
    expect_ok(relo_reclaim(s));
    relo_binding after = fx_bind(s, a);
    expect_true(after.buffer != before.buffer);
    expect_true(fx_check_pattern(d, a, 7, 1 * MiB));
    relo_stats st = fx_stats(s);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.allocations_moved, 1);
    pthread_mutex_lock(&g->mu);
    expect_eq(g->frees, 0); /* still held */
    pthread_mutex_unlock(&g->mu);
    gate_set(g, true);
    alarm(0);

    expect_ok(relo_release(d, a));
    expect_ok(relo_release(d, big));
    /* Destroy waits for the queued free, then frees the rest. */
    expect_ok(relo_device_destroy(d));
    expect_eq(m.buffers_live, 0);
    expect_eq(m.calls[MOCK_FREE], m.calls[MOCK_ALLOC]);
}

typedef struct reserver {
    relo_stream *s;
    uint64_t size;
    relo_handle h;
    relo_status st;
} reserver;

static void *reserve_thread(void *arg)
{
    reserver *r = arg;
    r->st = relo_reserve(r->s, r->size, &r->h);
    pthread_mutex_lock(&the_gate.mu);
    the_gate.reserved = true;
    pthread_cond_broadcast(&the_gate.cv);
    pthread_mutex_unlock(&the_gate.mu);
    return NULL;
}

/* The backend has no room for a page while the emptied page's free is
 * queued: the reservation waits for the free and tries once more, and it is
 * that second try, after the free, that gives the page. The gate opens when
 * the reservation returned (it failed: without the wait every try comes
 * before the free) or, at the latest, after two seconds (it waits, as it
 * should, for the free). */
CHECK_TEST(refused_page_waits_for_queued_frees)
{
    static mock_ctx m;
    gate *g = &the_gate;
    relo_device *d = NULL;
    relo_stream *s = NULL;
    relo_handle a, big;
    require_true(open_grown(&m, g, &d, &s, &a, &big));

    alarm(60);
    gate_set(g, false);
    expect_ok(relo_reclaim(s)); /* the old page's free now waits at the gate */
    pthread_mutex_lock(&g->mu);
    g->allocs = 0;
    g->full = true;
    pthread_mutex_unlock(&g->mu);
    reserver r = {s, 64 * MiB, {0}, RELO_ERR_CORRUPT};
    pthread_t t;
    require_eq(pthread_create(&t, NULL, reserve_thread, &r), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    pthread_mutex_lock(&g->mu);
    while (!g->reserved && pthread_cond_timedwait(&g->cv, &g->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&g->mu);
    gate_set(g, true);
    require_eq(pthread_join(t, NULL), 0);
    alarm(0);
    expect_ok(r.st);
    expect_true(g->allocs >= 2);
    expect_eq(g->frees_at_alloc, 1); /* the try that gave the page came after the free */

    expect_ok(relo_release(d, r.h));
    expect_ok(relo_release(d, a));
    expect_ok(relo_release(d, big));
    expect_ok(relo_device_destroy(d));
    expect_eq(m.buffers_live, 0);
}

typedef struct trimmer {
    relo_device *d;
    uint64_t released;
    relo_status st;
} trimmer;

static void *trim_thread(void *arg)
{
    trimmer *t = arg;
    t->st = relo_trim(t->d, 0, &t->released);
    return NULL;
}

/* relo_trim (and the cache limit at the end of a reservation) free
 * page buffers without the device lock, on the calling thread by default:
 * while the backend's free waits at the gate, another thread pins. */
CHECK_TEST(trim_frees_without_the_lock)
{
    static mock_ctx m;
    gate *g = &the_gate;
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, NULL, &b));
    g->open = true;
    g->frees = g->at_gate = 0;
    g->full = false;
    m.free_hook = free_hook;
    m.free_user = g;
    relo_device *d = NULL;
    require_ok(relo_device_create(NULL, b, &d)); /* packed, frees inline */
    relo_stream *s = NULL;
    require_ok(relo_stream_create(d, NULL, &s));
    relo_handle a = fx_reserve(s, 12 * MiB), gone = fx_reserve(s, 20 * MiB); /* a page each */
    require_true(a.id && gone.id);
    expect_ok(relo_release(d, gone)); /* its page empties, and stays cached */
    relo_stats before = fx_stats(s);

    alarm(60); /* a free under the lock would keep the pin waiting: die, not hang */
    gate_set(g, false);
    trimmer t = {d, 0, RELO_ERR_CORRUPT};
    pthread_t th;
    require_eq(pthread_create(&th, NULL, trim_thread, &t), 0);
    pthread_mutex_lock(&g->mu);
    while (g->at_gate == 0) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    relo_binding bd;
    expect_ok(relo_pin(s, a, &bd));
    expect_ok(relo_unpin(d, a));
    gate_set(g, true);
    require_eq(pthread_join(th, NULL), 0);
    alarm(0);
    expect_ok(t.st);
    expect_true(t.released > 0);
    expect_eq(fx_stats(s).bytes_reserved, before.bytes_reserved - t.released);
    expect_ok(relo_release(d, a));
    expect_ok(relo_device_destroy(d));
    expect_eq(m.buffers_live, 0);
}

CHECK_TEST(page_free_in_the_desc)
{
    relo_backend *b = NULL;
    relo_host_desc hd;
    memset(&hd, 0, sizeof hd);
    require_ok(relo_backend_host_create(&hd, &b));
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.page_free = RELO_PAGE_FREE_COUNT;
    relo_device *d = NULL;
    expect_eq(relo_device_create(&dd, b, &d), RELO_ERR_INVALID_ARGUMENT);
    dd.page_free = RELO_PAGE_FREE_THREAD;
    require_ok(relo_device_create(&dd, b, &d));
    relo_device_desc got;
    expect_ok(relo_device_desc_get(d, &got));
    expect_eq(got.page_free, RELO_PAGE_FREE_THREAD);
    expect_ok(relo_device_destroy(d));
}

CHECK_MAIN()
