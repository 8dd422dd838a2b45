/*
 * test_launch_threads.c — the launch path of a multi-threaded runtime, under
 * relocation: eight threads on four streams of one device, plus a thread
 * that drives relocation passes.
 *
 * Every allocation is written once, by its owner, with a pattern of its own
 * key, and shared in a table. Any thread may "launch" on any allocation the
 * way a runtime does: take a reference (relo_retain), pin it (relo_pin),
 * read its bytes straight through the binding as a kernel would, unpin,
 * drop the reference. Owners also release, reserve anew and reclaim their
 * stream. The mover thread alternates passes it copies itself (memcpy of
 * each pending move, the runtime's copy) with relo_pass_copy and
 * relo_reclaim_device. Meanwhile relocation may move any allocation that is
 * not pinned: a binding used after its allocation moved would read the
 * page relo gave back (filled with 0xDD by the host backend before it goes)
 * or another allocation's bytes, and the pattern check fails.
 *
 * relo_device_check runs inside passes from three places: the mover
 * itself while its pass is open, the streams' finishes (on the thread that
 * copies, while relo_pass_copy or a reclaim waits for the device), and a
 * checker thread that checks over and over and, every fourth pass, while
 * the mover holds the pass open for it. Every check must pass, and each
 * place must have checked inside a pass.
 *
 * The run asserts a minimum number of moved allocations, at least one move
 * copied by the runtime, and every byte of every allocation at the end.
 * Under ThreadSanitizer it must show no race. The run lasts
 * RELO_STRESS_SECONDS (default 3) and until MIN_MOVED allocations moved and
 * the runtime copied a move, at most 60 times as long (a sanitizer on a
 * loaded machine runs few passes); RELO_SEED sets the seed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fixture.h"

enum { WORKERS = 8, STREAMS = 4, SLOTS = 64, MIN_MOVED = 1000 };

/* One shared allocation slot: its handle and key, published by the owner.
 * The owner writes the bytes before it publishes the handle. */
typedef struct shared {
    _Atomic uint64_t id; /* relo_handle.id, 0 = empty */
    _Atomic uint64_t key;
    _Atomic uint64_t size;
} shared;

typedef struct stress {
    relo_device *dev;
    relo_stream *streams[STREAMS];
    shared table[WORKERS][SLOTS];
    atomic_int failures;
    atomic_bool stop;
    fx_pass_checks in_pass;    /* the streams' finishes */
    _Atomic uint64_t pass_seq; /* odd while the mover's pass is open */
    atomic_bool check_wanted;  /* the mover waits for a check inside its pass */
    _Atomic uint64_t checks, checks_in_open_pass, checks_by_mover;
    _Atomic uint64_t launches, pins_refused, bytes_checked, passes, runtime_copied;
    _Atomic uint64_t largest; /* the next growing request */
    double seconds;
    relo_placement placement;
} stress;

typedef struct worker {
    stress *st;
    int id;
    uint64_t rng;
} worker;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(stress *st, const char *what, uint64_t key)
{
    if (atomic_fetch_add(&st->failures, 1) < 10)
        fprintf(stderr, "FAILED: %s (key %llu)\n", what, (unsigned long long)key);
}

/* The kernel: checks key's pattern where the binding says the bytes are. */
static bool bytes_hold(const relo_binding *b, uint64_t key)
{
    const uint8_t *p = (const uint8_t *)b->buffer + b->offset;
    uint64_t off[3], len[3];
    int n = fx_regions(b->size, off, len);
    for (int r = 0; r < n; r++)
        for (uint64_t i = 0; i < len[r]; i++)
            if (p[off[r] + i] != fx_pattern_byte(key, off[r] + i)) return false;
    return true;
}

/* Launches on one published allocation of any thread, from stream s. */
static void launch(stress *st, relo_stream *s, shared *slot)
{
    relo_handle h = {atomic_load(&slot->id)};
    uint64_t key = atomic_load(&slot->key);
    if (!h.id) return;
    if (relo_retain(st->dev, h) != RELO_OK) return; /* released meanwhile */
    /* The key is the one published with this handle once retained: the
     * owner publishes the key before the id and clears the id first. */
    if (atomic_load(&slot->id) != h.id) {
        (void)relo_release(st->dev, h);
        return;
    }
    key = atomic_load(&slot->key);
    relo_binding b;
    relo_status rs = relo_pin(s, h, &b);
    if (rs != RELO_OK) {
        atomic_fetch_add(&st->pins_refused, 1);
        fail(st, "pin of a retained allocation", key);
    } else {
        if (!bytes_hold(&b, key)) fail(st, "bytes through a pinned binding", key);
        atomic_fetch_add(&st->bytes_checked, b.size);
        if (relo_unpin(st->dev, h) != RELO_OK) fail(st, "unpin", key);
    }
    atomic_fetch_add(&st->launches, 1);
    if (relo_release(st->dev, h) != RELO_OK) fail(st, "release of a retained reference", key);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    stress *st = w->st;
    relo_stream *s = st->streams[w->id % STREAMS];
    shared *mine = st->table[w->id];
    uint64_t serial = 0;
    while (!atomic_load(&st->stop)) {
        uint64_t r = fx_rand(&w->rng);
        int i = (int)(r % SLOTS);
        unsigned op = (unsigned)((r >> 8) % 100);
        if (op < 55) {
            /* A launch on anybody's allocation. */
            int t = (int)((r >> 16) % WORKERS);
            launch(st, s, &st->table[t][(r >> 24) % SLOTS]);
        } else if (op < 97) {
            /* Replace one of mine: release, reserve anew, write, publish. */
            relo_handle old = {atomic_exchange(&mine[i].id, 0)};
            if (old.id && relo_release(st->dev, old) != RELO_OK) fail(st, "release by the owner", 0);
            /* Mostly 80–256 KiB; now and then a request larger than any
             * before, as a workload whose batch grows: the arena's pages
             * grow with it and leave outdated pages full of live
             * allocations behind. */
            uint64_t size = fx_range(&w->rng, 5, 12) * 16 * KiB;
            if ((r >> 32) % 16 == 0) {
                uint64_t grown = atomic_fetch_add(&st->largest, 64 * KiB);
                size = grown < 16 * MiB ? grown : fx_range(&w->rng, 1, 16) * MiB;
            }
            relo_handle h;
            if (relo_reserve(s, size, &h) != RELO_OK) continue;
            uint64_t key = ((uint64_t)w->id << 48) | ++serial;
            if (fx_write_pattern(st->dev, h, key, size) != RELO_OK) fail(st, "write by the owner", key);
            atomic_store(&mine[i].size, size);
            atomic_store(&mine[i].key, key);
            atomic_store(&mine[i].id, h.id);
        } else {
            relo_status rs = relo_reclaim(s);
            if (rs != RELO_OK && rs != RELO_ERR_BUSY) fail(st, "reclaim", 0);
        }
    }
    return NULL;
}

/* Checks the device over and over; a check that began and ended while the
 * mover's pass stayed open counts as inside it. The mover can ask for one
 * while it holds its pass open (check_wanted). */
static void *checker_main(void *arg)
{
    stress *st = arg;
    while (!atomic_load(&st->stop)) {
        bool wanted = atomic_load(&st->check_wanted);
        uint64_t before = atomic_load(&st->pass_seq);
        relo_status rs = relo_device_check(st->dev);
        uint64_t after = atomic_load(&st->pass_seq);
        atomic_fetch_add(&st->checks, 1);
        if (rs != RELO_OK) fail(st, "relo_device_check on the checker thread", (uint64_t)rs);
        if (before == after && (before & 1)) atomic_fetch_add(&st->checks_in_open_pass, 1);
        if (wanted) atomic_store(&st->check_wanted, false);
        if (!wanted) {
            struct timespec pause = {0, 50 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    return NULL;
}

/* Drives passes: the runtime's own copy, relo's copy, and device reclaims. */
static void *mover_main(void *arg)
{
    stress *st = arg;
    uint64_t round = 0;
    double start = now_s();
    while (!atomic_load(&st->stop)) {
        round++;
        struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
        /* The run lasts its seconds and until enough moved, within a
         * bound: a loaded machine gets more time, not a weaker test. */
        relo_stats ds;
        double t = now_s() - start;
        if (relo_device_stats(st->dev, &ds) == RELO_OK &&
            ((t >= st->seconds && ds.allocations_moved >= MIN_MOVED &&
              atomic_load(&st->runtime_copied) > 0) ||
             t >= 60 * st->seconds)) {
            atomic_store(&st->stop, true);
            break;
        }
        if (round % 3 == 0) {
            relo_status rs = relo_reclaim_device(st->dev);
            if (rs != RELO_OK && rs != RELO_ERR_BUSY) fail(st, "reclaim_device", 0);
            continue;
        }
        relo_pass *pass = NULL;
        relo_pass_desc desc = {NULL, 8 * MiB, 0};
        if (relo_pass_begin(st->dev, &desc, &pass) != RELO_OK) continue;
        atomic_fetch_add(&st->pass_seq, 1); /* odd: open */
        if (relo_device_check(st->dev) != RELO_OK) fail(st, "relo_device_check by the pass's opener", 0);
        atomic_fetch_add(&st->checks_by_mover, 1);
        if (round % 4 == 1) {
            /* Hold the pass open until the checker thread has checked. */
            atomic_store(&st->check_wanted, true);
            while (atomic_load(&st->check_wanted) && !atomic_load(&st->stop)) sched_yield();
        }
        relo_pass_outcome out = RELO_PASS_LANDED;
        if (round % 3 == 1) {
            /* The runtime copies. Every thread that launched on a source
             * did so through a pin, which skipped the move; what is still
             * pending may be copied. */
            for (uint32_t i = 0; i < relo_pass_move_count(pass); i++) {
                relo_pass_move mv;
                if (relo_pass_move_get(pass, i, &mv) != RELO_OK) fail(st, "move_get", 0);
                if (mv.state != RELO_MOVE_PENDING) continue;
                memcpy((char *)mv.to.buffer + mv.to.offset, (const char *)mv.from.buffer + mv.from.offset,
                       (size_t)mv.from.size);
                atomic_fetch_add(&st->runtime_copied, 1);
            }
        } else if (relo_pass_copy(pass, &out) != RELO_OK) {
            fail(st, "pass_copy", 0);
        }
        atomic_fetch_add(&st->pass_seq, 1); /* even: closing */
        if (relo_pass_end(pass, out) != RELO_OK) fail(st, "pass_end", 0);
        atomic_fetch_add(&st->passes, 1);
    }
    return NULL;
}

static void run(relo_placement placement)
{
    static stress st;
    memset(&st, 0, sizeof st);
    st.seconds = 3;
    st.largest = 2 * MiB;
    const char *env = getenv("RELO_STRESS_SECONDS");
    if (env && atof(env) > 0) st.seconds = atof(env);
    uint64_t seed = check_seed();

    relo_host_desc hd = fx_host();
    hd.max_page_size = 32 * MiB;
    relo_backend *b = NULL;
    require_ok(relo_backend_host_create(&hd, &b));
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    require_ok(relo_device_create(&dd, b, &st.dev));
    for (int i = 0; i < STREAMS; i++) require_ok(relo_stream_create(st.dev, NULL, &st.streams[i]));
    for (int i = 0; i < STREAMS; i++) fx_check_in_passes(&st.in_pass, st.dev, st.streams[i]);

    pthread_t threads[WORKERS], mover, check_thread;
    worker w[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (worker){&st, i, seed * 0x9E3779B97F4A7C15u + (uint64_t)i + 1};
        require_eq(pthread_create(&threads[i], NULL, worker_main, &w[i]), 0);
    }
    require_eq(pthread_create(&check_thread, NULL, checker_main, &st), 0);
    require_eq(pthread_create(&mover, NULL, mover_main, &st), 0);
    pthread_join(mover, NULL);
    pthread_join(check_thread, NULL);
    for (int i = 0; i < WORKERS; i++) pthread_join(threads[i], NULL);

    /* Every allocation still holds its bytes, read through relo as well. */
    uint64_t live = 0;
    for (int t = 0; t < WORKERS; t++) {
        for (int i = 0; i < SLOTS; i++) {
            relo_handle h = {atomic_load(&st.table[t][i].id)};
            if (!h.id) continue;
            live++;
            uint64_t key = atomic_load(&st.table[t][i].key), size = atomic_load(&st.table[t][i].size);
            expect_true(fx_check_pattern(st.dev, h, key, size));
            relo_binding bd;
            expect_ok(relo_resolve(st.streams[0], h, &bd));
            expect_true(bytes_hold(&bd, key));
            expect_ok(relo_release(st.dev, h));
        }
    }
    relo_stats ds;
    expect_ok(relo_device_check(st.dev));
    expect_ok(relo_device_stats(st.dev, &ds));
    printf(
        "%s: %llu launches, %llu MiB checked through pinned bindings, %llu passes (%llu moves copied by "
        "the runtime), %llu allocations moved, %llu live at the end, seed %llu\n",
        relo_placement_name(placement), (unsigned long long)st.launches,
        (unsigned long long)(st.bytes_checked / MiB), (unsigned long long)st.passes,
        (unsigned long long)st.runtime_copied, (unsigned long long)ds.allocations_moved,
        (unsigned long long)live, (unsigned long long)seed);
    printf(
        "relo_device_check: %llu on the checker thread (%llu inside an open pass), %llu by the mover inside "
        "its passes\n",
        (unsigned long long)st.checks, (unsigned long long)st.checks_in_open_pass,
        (unsigned long long)st.checks_by_mover);
    fx_expect_pass_checks(&st.in_pass, 1);
    expect_gt(atomic_load(&st.checks_in_open_pass), 0);
    expect_gt(atomic_load(&st.checks_by_mover), 0);
    expect_eq(atomic_load(&st.failures), 0);
    expect_eq(ds.allocations, 0);
    expect_ge(ds.allocations_moved, MIN_MOVED);
    expect_gt(st.runtime_copied, 0);
    expect_ok(relo_reclaim_device(st.dev));
    for (int i = 0; i < STREAMS; i++) expect_ok(relo_stream_destroy(st.streams[i]));
    expect_ok(relo_device_destroy(st.dev));
}

CHECK_TEST(launch_threads_adaptive_placement)
{
    run(RELO_PLACEMENT_ADAPTIVE);
}

CHECK_TEST(launch_threads_packed_placement)
{
    run(RELO_PLACEMENT_PACKED);
}

CHECK_MAIN()
