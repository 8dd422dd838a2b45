/*
 * test_integrity.c — what a hostile caller cannot break: a read never
 * returns another allocation's bytes while a pass moves the allocation,
 * relo_device_check accepts every state the API allows (open passes from
 * any thread, a reservation waiting on its own pass, a device with no page
 * limit), a page's pin count never wraps, the end of handle values is a
 * status of its own, relo_pass_end refuses while relo_pass_copy runs,
 * a stream's finish may pin a source from the copying thread, a pin that
 * lands while a pass plans (without the device lock) keeps its allocation
 * in place, and a fork never inherits the device-tag registry locked.
 *
 * Every race is opened on purpose: the mock backend holds one call (a read,
 * a device wait, an allocation made while a pass plans) at a gate or hook
 * while the test does what another thread would.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "mem/handle.h"
#include "mock_backend.h"
#include "testing/testing.h"

#define COUNT 256
#define SIZE (16 * KiB)
#define GATE_SECONDS 10

/* A packed-placement device on the mock backend: COUNT allocations of SIZE, each with
 * its own pattern, of which one in four is kept, so every page is sparse
 * and a reclaim packs them. */
typedef struct scene {
    mock_ctx m;
    fx f;
    relo_handle h[COUNT];
    bool kept[COUNT];
} scene;

static bool keep_quarter(int i)
{
    return i % 4 == 0;
}

static bool scene_open_keeping(scene *sc, const relo_backend_props *props, bool (*keep)(int))
{
    memset(sc, 0, sizeof *sc);
    relo_backend *b = NULL;
    if (mock_backend_create(&sc->m, props, &b) != RELO_OK) return false;
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_DEFAULT);
    if (fx_open_backend(&sc->f, b, &dd) != RELO_OK) return false;
    for (int i = 0; i < COUNT; i++) {
        sc->h[i] = fx_reserve(sc->f.s, SIZE);
        if (!sc->h[i].id || fx_write_pattern(sc->f.dev, sc->h[i], (uint64_t)i + 1, SIZE) != RELO_OK)
            return false;
    }
    for (int i = 0; i < COUNT; i++) {
        sc->kept[i] = keep(i);
        if (!sc->kept[i]) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    }
    return true;
}

static bool scene_open(scene *sc, const relo_backend_props *props)
{
    return scene_open_keeping(sc, props, keep_quarter);
}

/* Sleeps about us microseconds. */
static void nap(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

static void scene_close(scene *sc)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->kept[i]) expect_ok(relo_release(sc->f.dev, sc->h[i]));
    fx_close(&sc->f);
}

/* The index of the kept allocation a handle names; -1 if none. */
static int scene_index(const scene *sc, relo_handle h)
{
    for (int i = 0; i < COUNT; i++)
        if (sc->kept[i] && sc->h[i].id == h.id) return i;
    return -1;
}

/* Opens a pass the runtime drives over the scene and names its first move
 * and the index of the kept allocation it moves; false when the pass plans
 * nothing or the move is of no kept allocation. */
static bool open_pass(scene *sc, relo_pass **pass, relo_pass_move *mv, int *victim)
{
    if (relo_pass_begin(sc->f.dev, NULL, pass) != RELO_OK) return false;
    if (relo_pass_move_count(*pass) == 0 || relo_pass_move_get(*pass, 0, mv) != RELO_OK) return false;
    *victim = scene_index(sc, mv->handle);
    return *victim >= 0;
}

/* The first move a reclaim of the scene makes, and its allocation's index:
 * the plan of a runtime pass, which is then abandoned (nothing moves). */
static bool first_move(scene *sc, relo_pass_move *mv, int *victim)
{
    relo_pass *probe = NULL;
    bool found = open_pass(sc, &probe, mv, victim);
    if (probe) expect_ok(relo_pass_end(probe, RELO_PASS_ABANDONED));
    return found;
}

/* ------------------------------------------------------------------------ */
/* Reads across a pass                                                      */
/* ------------------------------------------------------------------------ */

typedef struct reader {
    relo_device *dev;
    relo_handle h;
    uint8_t *bytes;
    relo_status st;
} reader;

static void *read_all(void *arg)
{
    reader *r = arg;
    r->st = relo_read(r->dev, r->h, 0, r->bytes, SIZE);
    return NULL;
}

static bool bytes_are_pattern(const uint8_t *bytes, uint64_t key)
{
    for (uint64_t off = 0; off < SIZE; off++)
        if (bytes[off] != fx_pattern_byte(key, off)) return false;
    return true;
}

/* Reserves allocations of SIZE, each written with 0x5C, until one lands
 * where `where` was or 64 were tried (the room a commit freed goes to the
 * next request of its size); their handles go to out. Returns how many. */
static int reserve_over(scene *sc, relo_binding where, relo_handle *out)
{
    int n = 0;
    while (n < 64) {
        relo_handle h = fx_reserve(sc->f.s, SIZE);
        if (!h.id) break;
        out[n++] = h;
        expect_ok(fx_fill(sc->f.dev, h, 0x5C, SIZE));
        if (fx_same_place(fx_bind(sc->f.s, h), where)) break;
    }
    return n;
}

/* A read that starts while a pass the runtime drives is open, of an
 * allocation the pass moves, returns that allocation's bytes, even when the
 * pass commits during the read and the room the allocation would leave is
 * reserved again and written. */
CHECK_TEST(read_across_a_runtime_pass_returns_its_own_bytes)
{
    scene sc;
    require_true(scene_open(&sc, NULL));
    relo_pass *pass = NULL;
    relo_pass_move mv;
    int victim;
    require_true(open_pass(&sc, &pass, &mv, &victim));

    uint8_t *bytes = malloc(SIZE);
    require_true(bytes != NULL);
    reader r = {sc.f.dev, mv.handle, bytes, RELO_ERR_CORRUPT};
    pthread_t t;
    require_true(mock_gate_start(&sc.m, MOCK_READ, read_all, &r, &t, GATE_SECONDS));

    /* The read is under way on the other thread: the pass lands and ends,
     * and the place the allocation was planned to leave is taken. */
    relo_pass_outcome outcome;
    expect_ok(relo_pass_copy(pass, &outcome));
    expect_ok(relo_pass_end(pass, outcome));
    relo_handle over[64];
    int n = reserve_over(&sc, mv.from, over);

    mock_gate_open(&sc.m, MOCK_READ);
    pthread_join(t, NULL);
    expect_ok(r.st);
    expect_true(bytes_are_pattern(bytes, (uint64_t)victim + 1));
    expect_true(fx_check_pattern(sc.f.dev, sc.h[victim], (uint64_t)victim + 1, SIZE));
    expect_ok(relo_device_check(sc.f.dev));
    for (int i = 0; i < n; i++) expect_ok(relo_release(sc.f.dev, over[i]));
    free(bytes);
    scene_close(&sc);
}

/* The same with relo's own reclaim: reads of every kept allocation start
 * while its pass waits for the device; the pass then commits, every place
 * it freed is reserved and written, and only then do the reads go on. */
CHECK_TEST(read_across_a_reclaim_returns_its_own_bytes)
{
    scene sc;
    require_true(scene_open(&sc, NULL));
    /* Which allocation the reclaim moves first, and from where. */
    relo_pass_move first;
    int victim;
    require_true(first_move(&sc, &first, &victim));

    fx_reclaimer rc = {sc.f.s, RELO_ERR_CORRUPT};
    pthread_t tr;
    require_true(mock_gate_start(&sc.m, MOCK_WAIT_DEVICE, fx_reclaim_thread, &rc, &tr, GATE_SECONDS));

    uint8_t *bytes = malloc(SIZE);
    require_true(bytes != NULL);
    reader r = {sc.f.dev, first.handle, bytes, RELO_ERR_CORRUPT};
    pthread_t t;
    require_true(mock_gate_start(&sc.m, MOCK_READ, read_all, &r, &t, GATE_SECONDS));

    mock_gate_open(&sc.m, MOCK_WAIT_DEVICE);
    pthread_join(tr, NULL);
    expect_ok(rc.st);
    relo_handle over[64];
    int n = reserve_over(&sc, first.from, over);

    mock_gate_open(&sc.m, MOCK_READ);
    pthread_join(t, NULL);
    expect_ok(r.st);
    expect_true(bytes_are_pattern(bytes, (uint64_t)victim + 1));
    for (int i = 0; i < COUNT; i++)
        if (sc.kept[i]) expect_true(fx_check_pattern(sc.f.dev, sc.h[i], (uint64_t)i + 1, SIZE));
    expect_ok(relo_device_check(sc.f.dev));
    for (int i = 0; i < n; i++) expect_ok(relo_release(sc.f.dev, over[i]));
    free(bytes);
    scene_close(&sc);
}

/* ------------------------------------------------------------------------ */
/* The checker in legal states                                              */
/* ------------------------------------------------------------------------ */

/* A runtime pass is open and one of its sources is released: the source
 * stays allocated until the pass ends, and the checker accepts that. */
CHECK_TEST(check_accepts_a_released_source_of_an_open_pass)
{
    scene sc;
    require_true(scene_open(&sc, NULL));
    relo_pass *pass = NULL;
    relo_pass_move mv;
    int victim;
    require_true(open_pass(&sc, &pass, &mv, &victim));
    expect_ok(relo_release(sc.f.dev, mv.handle));
    sc.kept[victim] = false;
    expect_ok(relo_device_check(sc.f.dev));
    relo_pass_outcome outcome;
    expect_ok(relo_pass_copy(pass, &outcome));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_pass_end(pass, outcome));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* relo's own pass, on another thread, waits for the device while one of
 * its sources is released and the checker runs. */
CHECK_TEST(check_accepts_a_released_source_of_a_reclaim)
{
    scene sc;
    require_true(scene_open(&sc, NULL));
    relo_pass_move first;
    int victim;
    require_true(first_move(&sc, &first, &victim));

    fx_reclaimer rc = {sc.f.s, RELO_ERR_CORRUPT};
    pthread_t tr;
    require_true(mock_gate_start(&sc.m, MOCK_WAIT_DEVICE, fx_reclaim_thread, &rc, &tr, GATE_SECONDS));
    expect_ok(relo_release(sc.f.dev, first.handle));
    sc.kept[victim] = false;
    expect_ok(relo_device_check(sc.f.dev));
    mock_gate_open(&sc.m, MOCK_WAIT_DEVICE);
    pthread_join(tr, NULL);
    expect_ok(rc.st);
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

typedef struct reserver {
    relo_stream *s;
    uint64_t size;
    relo_handle h;
    relo_status st;
} reserver;

static void *reserve_one(void *arg)
{
    reserver *r = arg;
    r->st = relo_reserve(r->s, r->size, &r->h);
    return NULL;
}

/* A reservation the device refuses a page for packs to make room, and
 * waits for the device in that pass with its handle slot taken: the
 * checker, called meanwhile, accepts that. */
CHECK_TEST(check_accepts_a_reservation_waiting_on_its_pass)
{
    mock_ctx m;
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, NULL, &b));
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_DEFAULT);
    fx f;
    require_ok(fx_open_backend(&f, b, &dd));
    enum { N = 64 };
    relo_handle h[N];
    for (int i = 0; i < N; i++) {
        h[i] = fx_reserve(f.s, SIZE);
        require_ne(h[i].id, 0);
    }
    for (int i = 0; i < N; i++)
        if (i % 2) expect_ok(relo_release(f.dev, h[i]));
    /* Nothing more is lent: the next request needs room made by packing. */
    m.capacity = m.bytes_held;
    mock_gate_arm(&m, MOCK_WAIT_DEVICE);
    reserver r = {f.s, 2 * SIZE, {0}, RELO_ERR_CORRUPT};
    pthread_t t;
    require_true(pthread_create(&t, NULL, reserve_one, &r) == 0);
    require_true(mock_gate_await(&m, MOCK_WAIT_DEVICE, GATE_SECONDS));
    expect_ok(relo_device_check(f.dev));
    mock_gate_open(&m, MOCK_WAIT_DEVICE);
    pthread_join(t, NULL);
    expect_ok(r.st);
    expect_ok(relo_device_check(f.dev));
    if (r.st == RELO_OK) expect_ok(relo_release(f.dev, r.h));
    for (int i = 0; i < N; i += 2) expect_ok(relo_release(f.dev, h[i]));
    fx_close(&f);
}

/* A backend that says "no limit" with a largest page of UINT64_MAX. */
CHECK_TEST(check_accepts_a_device_without_a_page_limit)
{
    relo_backend_props props = {32, UINT64_MAX, 0, 0};
    scene sc;
    require_true(scene_open(&sc, &props));
    expect_ok(relo_device_check(sc.f.dev));
    relo_handle big = fx_reserve(sc.f.s, 64 * MiB);
    require_ne(big.id, 0);
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_release(sc.f.dev, big));
    expect_ok(relo_reclaim(sc.f.s));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* ------------------------------------------------------------------------ */
/* Counts at their ends                                                     */
/* ------------------------------------------------------------------------ */

/* The first page holds allocations 0 and 1 of its four; the next three
 * pages three of theirs, with room for the first page's two. */
static bool keep_two_then_threes(int i)
{
    return i < 4 ? i < 2 : i < 16 && i % 4 != 3;
}

/* Two allocations on one page pinned 2^31 times each: the page still
 * counts every pin, and no reclaim moves either (unpinned, a reclaim
 * empties that page). */
CHECK_TEST(a_page_counts_every_pin_of_its_allocations)
{
    scene sc;
    require_true(scene_open_keeping(&sc, NULL, keep_two_then_threes));
    relo_binding at0 = fx_bind(sc.f.s, sc.h[0]), at1 = fx_bind(sc.f.s, sc.h[1]);
    require_true(at0.buffer == at1.buffer);
    expect_ok(relo__testing_add_pins(sc.f.dev, sc.h[0], UINT32_C(1) << 31));
    expect_ok(relo__testing_add_pins(sc.f.dev, sc.h[1], UINT32_C(1) << 31));
    expect_ok(relo_device_check(sc.f.dev));
    expect_ok(relo_reclaim_device(sc.f.dev));
    expect_true(fx_same_place(fx_bind(sc.f.s, sc.h[0]), at0));
    expect_true(fx_same_place(fx_bind(sc.f.s, sc.h[1]), at1));
    expect_eq(fx_dev_stats(sc.f.dev).allocations_moved, 0);
    expect_ok(relo_device_check(sc.f.dev));
    /* An allocation's own count is bounded. */
    expect_status(relo__testing_add_pins(sc.f.dev, sc.h[0], UINT32_MAX), RELO_ERR_INVALID_ARGUMENT);
    scene_close(&sc);
}

/* Creates and destroys devices, each of which hands out a generation past
 * half the range, until relo_device_create refuses; *created counts them. */
static relo_status use_up_device_tags(int *created)
{
    relo_status st = RELO_OK;
    *created = 0;
    while (*created <= (int)RELO_HANDLE_TAG_MAX + 1) {
        relo_backend *b = NULL;
        if (relo_backend_sim_create(NULL, &b) != RELO_OK) return RELO_ERR_HOST_MEMORY;
        relo_device *d = NULL;
        st = relo_device_create(NULL, b, &d);
        if (st != RELO_OK) {
            relo_backend_destroy(b);
            return st;
        }
        (*created)++;
        relo_stream *s = NULL;
        relo_handle h;
        if (relo_stream_create(d, NULL, &s) != RELO_OK || relo_reserve(s, 64, &h) != RELO_OK ||
            relo_release(d, h) != RELO_OK)
            return RELO_ERR_CORRUPT;
        /* The slot's next allocation takes a generation past half the
         * range, as 33 million reuses of it would. */
        if (relo__testing_age_free_slots(d, RELO_HANDLE_GEN_MAX / 2 + 1) != 1 ||
            relo_reserve(s, 64, &h) != RELO_OK || relo_release(d, h) != RELO_OK ||
            relo_device_destroy(d) != RELO_OK)
            return RELO_ERR_CORRUPT;
    }
    return st;
}

/* A device whose lifetime used up the generations of its tag retires the
 * tag; once every tag is retired, relo_device_create says so with a status
 * of its own, not a host-memory failure. Run in a child process: the tags
 * it retires stay retired for the rest of the process. */
CHECK_TEST(exhausted_device_tags_are_a_status_of_their_own)
{
    int fds[2];
    require_true(pipe(fds) == 0);
    pid_t pid = fork();
    require_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        int out[2];
        out[1] = (int)use_up_device_tags(&out[0]);
        _exit(write(fds[1], out, sizeof out) == (ssize_t)sizeof out ? 0 : 1);
    }
    close(fds[1]);
    int got[2] = {0, 0};
    ssize_t n = read(fds[0], got, sizeof got);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    require_true(n == (ssize_t)sizeof got && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    expect_eq(got[0], (int)RELO_HANDLE_TAG_MAX);
    expect_status((relo_status)got[1], RELO_ERR_HANDLES_EXHAUSTED);
    expect_true(strstr(relo_status_string(RELO_ERR_HANDLES_EXHAUSTED), "handle") != NULL);
}

/* ------------------------------------------------------------------------ */
/* The pass API across threads                                              */
/* ------------------------------------------------------------------------ */

typedef struct copier {
    relo_pass *pass;
    relo_pass_outcome outcome;
    relo_status st;
    atomic_bool done;
} copier;

static void *copy_pass(void *arg)
{
    copier *c = arg;
    c->st = relo_pass_copy(c->pass, &c->outcome);
    atomic_store(&c->done, true);
    return NULL;
}

/* relo_pass_end refuses while relo_pass_copy runs on another thread (the
 * copy still reads the plan), and ends the pass once it returned. */
CHECK_TEST(pass_end_refuses_while_its_copy_runs)
{
    scene sc;
    require_true(scene_open(&sc, NULL));
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(sc.f.dev, NULL, &pass));
    require_true(relo_pass_move_count(pass) > 0);
    copier c = {pass, RELO_PASS_ABANDONED, RELO_ERR_CORRUPT, false};
    pthread_t t;
    require_true(mock_gate_start(&sc.m, MOCK_WAIT_DEVICE, copy_pass, &c, &t, GATE_SECONDS));
    relo_status early = relo_pass_end(pass, RELO_PASS_ABANDONED);
    expect_status(early, RELO_ERR_BUSY);
    mock_gate_open(&sc.m, MOCK_WAIT_DEVICE);
    pthread_join(t, NULL);
    expect_ok(c.st);
    if (early == RELO_ERR_BUSY) {
        expect_ok(relo_pass_end(pass, c.outcome));
        for (int i = 0; i < COUNT; i++)
            if (sc.kept[i]) expect_true(fx_check_pattern(sc.f.dev, sc.h[i], (uint64_t)i + 1, SIZE));
        expect_gt(fx_dev_stats(sc.f.dev).allocations_moved, 0);
    }
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* A stream's finish that pins a source runs on the thread that copies. */
typedef struct pin_finish {
    relo_stream *s;
    relo_handle h;
    relo_status st;
    relo_binding b;
} pin_finish;

static relo_status finish_pins(void *user)
{
    pin_finish *p = user;
    p->st = relo_pin(p->s, p->h, &p->b);
    return RELO_OK;
}

/* relo_pass_copy on a thread other than the one that opened the pass calls
 * a stream's finish that pins a source: the pin skips the move, as the
 * owner's own would, instead of waiting for a pass its own thread holds. */
CHECK_TEST(finish_on_the_copying_thread_may_pin_a_source)
{
    scene sc;
    require_true(scene_open(&sc, NULL));
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(sc.f.dev, NULL, &pass));
    require_true(relo_pass_move_count(pass) > 0);
    relo_pass_move mv;
    require_ok(relo_pass_move_get(pass, 0, &mv));
    pin_finish pf = {sc.f.s, mv.handle, RELO_ERR_CORRUPT, {0}};
    require_ok(relo_stream_set_finish(sc.f.s, finish_pins, &pf));
    /* The finish is taken when a pass opens: open this one again. */
    expect_ok(relo_pass_end(pass, RELO_PASS_ABANDONED));
    require_ok(relo_pass_begin(sc.f.dev, NULL, &pass));
    require_ok(relo_pass_move_get(pass, 0, &mv));
    pf.h = mv.handle;

    copier c = {pass, RELO_PASS_ABANDONED, RELO_ERR_CORRUPT, false};
    pthread_t t;
    require_true(pthread_create(&t, NULL, copy_pass, &c) == 0);
    uint64_t until = fx_now_ns() + (uint64_t)GATE_SECONDS * 1000000000u;
    while (!atomic_load(&c.done) && fx_now_ns() < until) nap(1000);
    if (!atomic_load(&c.done)) {
        check_fail_(__FILE__, __LINE__, "relo_pass_copy returns: the finish's pin waits for its own pass");
        _exit(1); /* the copying thread is stuck for good */
    }
    pthread_join(t, NULL);
    expect_ok(c.st);
    expect_ok(pf.st);
    expect_true(fx_same_place(pf.b, mv.from));
    expect_ok(relo_pass_end(pass, c.outcome));
    expect_true(fx_same_place(fx_bind(sc.f.s, mv.handle), mv.from)); /* pinned: it stayed */
    expect_ok(relo_unpin(sc.f.dev, mv.handle));
    expect_ok(relo_stream_set_finish(sc.f.s, NULL, NULL));
    for (int i = 0; i < COUNT; i++)
        if (sc.kept[i]) expect_true(fx_check_pattern(sc.f.dev, sc.h[i], (uint64_t)i + 1, SIZE));
    expect_ok(relo_device_check(sc.f.dev));
    scene_close(&sc);
}

/* Pins while a pass is planned. */
typedef struct planning_pin {
    relo_stream *s;
    relo_handle h[4];
    relo_binding at[4];
    atomic_int done; /* pins returned */
    bool fired;
    bool waited; /* a pin did not return while the lock was held */
    pthread_t t;
} planning_pin;

static void *pin_all(void *arg)
{
    planning_pin *pp = arg;
    for (int i = 0; i < 4; i++) {
        if (relo_pin(pp->s, pp->h[i], &pp->at[i]) == RELO_OK) atomic_fetch_add(&pp->done, 1);
    }
    return NULL;
}

/* The mock calls this in alloc, which relo calls with the device lock
 * held: here, while the pass plans a target page. Another thread pins
 * every allocation the pass may move, and must get its pins without the
 * lock. */
static void pin_while_planning(void *user)
{
    planning_pin *pp = user;
    if (pp->fired) return;
    pp->fired = true;
    if (pthread_create(&pp->t, NULL, pin_all, pp) != 0) return;
    uint64_t until = fx_now_ns() + 2000000000u;
    while (atomic_load(&pp->done) < 4 && fx_now_ns() < until) nap(1000);
    pp->waited = atomic_load(&pp->done) < 4;
}

/* Four allocations of 12.5 MiB alone on 20 MiB pages (2 MiB granule): a
 * pass moves them to pages of their own size. While it plans (the device
 * lock held), another thread pins all four: the pins return without the
 * lock, and the pass, when it opens, leaves every pinned allocation where
 * it is. */
CHECK_TEST(a_pin_while_a_pass_plans_keeps_its_allocation_in_place)
{
    mock_ctx m;
    relo_backend_props props = {32, 128 * MiB, 0, 2 * MiB};
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, &props, &b));
    relo_device_desc dd = fx_desc(RELO_PLACEMENT_DEFAULT);
    dd.cache_limit = RELO_CACHE_LIMIT_NEVER;
    fx f;
    require_ok(fx_open_backend(&f, b, &dd));
    const uint64_t size = 25 * MiB / 2;
    relo_handle first = fx_reserve(f.s, size), big[4];
    for (int i = 0; i < 4; i++) big[i] = fx_reserve(f.s, 20 * MiB);
    for (int i = 0; i < 4; i++) expect_ok(relo_release(f.dev, big[i]));
    planning_pin pp;
    memset(&pp, 0, sizeof pp);
    pp.s = f.s;
    relo_binding before[4];
    for (int i = 0; i < 4; i++) {
        pp.h[i] = fx_reserve(f.s, size);
        require_ne(pp.h[i].id, 0);
        expect_ok(fx_write_pattern(f.dev, pp.h[i], (uint64_t)i + 1, size));
        before[i] = fx_bind(f.s, pp.h[i]); /* resolved: pins may take no lock */
    }
    m.alloc_hook = pin_while_planning;
    m.alloc_user = &pp;
    relo_pass *pass = NULL;
    require_ok(relo_pass_begin(f.dev, NULL, &pass));
    m.alloc_hook = NULL;
    relo_pass_outcome outcome;
    expect_ok(relo_pass_copy(pass, &outcome));
    expect_ok(relo_pass_end(pass, outcome));
    require_true(pp.fired); /* the pass planned a new page */
    if (pp.fired) pthread_join(pp.t, NULL);
    expect_true(!pp.waited);
    expect_eq(atomic_load(&pp.done), 4);
    for (int i = 0; i < 4; i++) {
        expect_true(fx_same_place(pp.at[i], before[i]));
        expect_true(fx_same_place(fx_bind(f.s, pp.h[i]), before[i]));
        expect_true(fx_check_pattern(f.dev, pp.h[i], (uint64_t)i + 1, size));
        expect_ok(relo_unpin(f.dev, pp.h[i]));
    }
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);
    expect_ok(relo_device_check(f.dev));
    for (int i = 0; i < 4; i++) expect_ok(relo_release(f.dev, pp.h[i]));
    expect_ok(relo_release(f.dev, first));
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* fork                                                                     */
/* ------------------------------------------------------------------------ */

/* The registry's holder: 1 once it holds it, 2 once it let go. */
static void *hold_registry_briefly(void *arg)
{
    atomic_int *stage = arg;
    relo__testing_hold_tag_registry(true);
    atomic_store(stage, 1);
    nap(100 * 1000);
    relo__testing_hold_tag_registry(false);
    atomic_store(stage, 2);
    return NULL;
}

/* A fork while another thread holds the device-tag registry (as a device
 * creation does for a moment) gives a child that can create devices. */
CHECK_TEST(fork_during_device_creation_leaves_the_child_usable)
{
    /* A device first, as a program that forks has. */
    relo_backend *b0 = NULL;
    require_ok(relo_backend_sim_create(NULL, &b0));
    relo_device *d0 = NULL;
    require_ok(relo_device_create(NULL, b0, &d0));

    /* Detached: a child of a fork would otherwise inherit it as a thread
     * nobody joins. */
    atomic_int stage = 0;
    pthread_t t;
    require_true(pthread_create(&t, NULL, hold_registry_briefly, &stage) == 0);
    pthread_detach(t);
    while (atomic_load(&stage) == 0) nap(100);
    pid_t pid = fork();
    require_true(pid >= 0);
    if (pid == 0) {
        relo_backend *b = NULL;
        relo_device *d = NULL;
        if (relo_backend_sim_create(NULL, &b) != RELO_OK) _exit(2);
        if (relo_device_create(NULL, b, &d) != RELO_OK) _exit(3);
        _exit(relo_device_destroy(d) == RELO_OK ? 0 : 4);
    }
    int status = 0;
    pid_t got = 0;
    for (int i = 0; i < GATE_SECONDS * 100 && got == 0; i++) {
        got = waitpid(pid, &status, WNOHANG);
        if (got == 0) nap(10 * 1000);
    }
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        check_fail_(__FILE__, __LINE__, "the child creates a device (it hung)");
    } else {
        expect_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    while (atomic_load(&stage) != 2) nap(100);
    expect_ok(relo_device_destroy(d0));
}

CHECK_MAIN()
