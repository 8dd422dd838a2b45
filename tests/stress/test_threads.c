/*
 * test_threads.c — four threads on two streams of one device, checking that
 * relocation and locking keep every byte where a handle or a binding says.
 *
 * A case runs epochs for a bounded time (RELO_STRESS_SECONDS, default 3;
 * at least one epoch). Each epoch makes a fresh device with two streams and
 * four threads, and each thread does a fixed number of operations (so a
 * loaded machine runs fewer epochs, never a thinner one):
 *
 *   - reserves of mixed sizes on its stream, whose largest size ramps up
 *     over the epoch so the arena keeps growing and leaving outdated pages;
 *     each new allocation gets its thread's pattern, written either through
 *     relo_write or straight through a binding (b.buffer + b.offset: host
 *     backend buffers are host memory), then is published in a shared table;
 *   - releases, reclaims, resolves on either stream;
 *   - borrows: a thread retains an allocation another thread published,
 *     resolves it itself and reads it through that binding and through
 *     relo_read, and releases it later.
 *
 * After every reserve or reclaim that the device's moved count shows moved
 * something (on any thread), the thread checks every allocation it owns or
 * borrows, through relo_read and through a binding it resolves then. Each
 * epoch of an ADAPTIVE device must move at least EPOCH_MIN_MOVED
 * allocations: with relocation broken or off, the case fails instead of
 * checking nothing. The EXCLUSIVE layout never moves anything, and its case
 * checks exactly that.
 *
 * relo_device_check runs meanwhile inside every relocation pass, from the
 * streams' finishes (on the thread that relocates, while the pass is open
 * and waits for the device), and from a fifth thread that checks the
 * device over and over while the four work; every check must pass, and an
 * ADAPTIVE case must make checks inside passes.
 *
 * A binding is valid until the next relo_reserve or relo_reclaim on the
 * device. The threads keep that rule with a two-sided gate: reserves and
 * reclaims enter one side, reads and writes through bindings the other, so
 * either kind runs concurrently with its own kind and with every
 * handle-based call, never with the other kind. Under ThreadSanitizer
 * (RELO_SANITIZE=thread) the case must report no race.
 *
 * RELO_SEED=n fixes the threads' random choices (not their interleaving).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_backend.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

enum {
    THREADS = 4,
    HELD = 16,            /* allocations a thread owns at most */
    BORROWED = 4,         /* allocations of others a thread holds at most */
    EPOCH_OPS = 300,      /* operations of one thread in one epoch */
    WINDOW = 512,         /* bytes checked at the head and at the tail */
    EPOCH_MIN_MOVED = 10, /* allocations an ADAPTIVE epoch moves at least */
};

/* ------------------------------------------------------------------------ */
/* The gate: movers (reserve, reclaim) on one side, binding users on the    */
/* other                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum side { MOVERS = 0, BINDERS = 1 } side;

/* Any number of threads of one side may be inside at once, never both
 * sides. A thread that has to wait hands its side the next turn, so
 * neither side starves the other. */
typedef struct gate {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int inside[2];
    int waiting[2];
    int turn;
} gate;

static void gate_enter(gate *g, side s)
{
    int o = 1 - (int)s;
    pthread_mutex_lock(&g->mutex);
    g->waiting[s]++;
    while (g->inside[o] > 0 || (g->waiting[o] > 0 && g->turn == o)) {
        if (g->inside[o] > 0) g->turn = (int)s;
        pthread_cond_wait(&g->cond, &g->mutex);
    }
    g->waiting[s]--;
    g->inside[s]++;
    pthread_mutex_unlock(&g->mutex);
}

static void gate_leave(gate *g, side s)
{
    pthread_mutex_lock(&g->mutex);
    if (--g->inside[s] == 0) pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->mutex);
}

/* ------------------------------------------------------------------------ */
/* Shared state of one epoch                                                */
/* ------------------------------------------------------------------------ */

/* One published allocation. Its handle, size and seed are written by the
 * owner before it is published and never change while it is; used and
 * borrowers are guarded by the table lock. */
typedef struct entry {
    relo_handle handle;
    uint64_t size;
    uint8_t seed;
    bool used;
    int borrowers;
} entry;

typedef struct epoch {
    relo_device *device;
    relo_stream *streams[2];
    gate gate;
    pthread_mutex_t table_lock;
    entry table[THREADS][HELD];
    atomic_int failures;
    fx_pass_checks in_pass;   /* checks from the streams' finishes */
    atomic_bool workers_done; /* stops the checker thread */
    _Atomic uint64_t checks;  /* checks the checker thread made */
} epoch;

/* An allocation of another thread this thread retained. */
typedef struct loan {
    int owner, slot;
    relo_handle handle;
    uint64_t size;
    uint8_t seed;
} loan;

typedef struct worker {
    epoch *ep;
    int id;
    relo_stream *stream;
    relo_stream *other;
    uint64_t rng;
    loan loans[BORROWED];
    int n_loans;
    uint64_t moved_seen; /* the device's allocations_moved at the last check */
    /* Counts for the report. */
    uint64_t ops, reclaims, oom, borrows, bytes_checked, binding_checks, move_checks;
} worker;

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t pat(uint8_t seed, uint64_t off)
{
    return (uint8_t)(seed + off * 7u + (off >> 8));
}

/* Mixed sizes: a third in the small pool, most of the rest on arena pages,
 * and some near the top, which ramps from 2 MiB to 10 MiB over the epoch so
 * that each stream's arena grows through several page sizes. */
static uint64_t pick(uint64_t *rng, double progress)
{
    uint64_t r = next_rand(rng);
    uint64_t top = 2 * MIB + (uint64_t)(progress * (double)(8 * MIB));
    switch (r % 16) {
    case 0: return 0;
    case 1:
    case 2:
    case 3:
    case 4: return 1 + (r >> 8) % 4096;
    case 5:
    case 6: return 4096 + (r >> 8) % (60 * KIB);
    case 7:
    case 8:
    case 9:
    case 10:
    case 11: return 64 * KIB + (r >> 8) % (448 * KIB);
    case 12:
    case 13: return 512 * KIB + (r >> 8) % (512 * KIB);
    default: return top / 2 + (r >> 8) % (top / 2);
    }
}

#define FAIL(w, ...)                             \
    do {                                         \
        fprintf(stderr, "thread %d: ", (w)->id); \
        fprintf(stderr, __VA_ARGS__);            \
        fputc('\n', stderr);                     \
        atomic_fetch_add(&(w)->ep->failures, 1); \
    } while (0)

/* The head and tail windows of an allocation of size bytes. */
static int windows(uint64_t size, uint64_t off[2], uint64_t *len)
{
    *len = size < WINDOW ? size : WINDOW;
    off[0] = 0;
    off[1] = size > WINDOW ? size - WINDOW : 0;
    if (!size) return 0;
    return size > WINDOW ? 2 : 1;
}

/* Writes (write) or checks the pattern through relo_write / relo_read. */
static bool by_handle(worker *w, relo_handle h, uint64_t size, uint8_t seed, bool write)
{
    uint8_t buf[WINDOW];
    uint64_t off[2], len;
    int n = windows(size, off, &len);
    for (int i = 0; i < n; i++) {
        relo_status s;
        if (write) {
            for (uint64_t j = 0; j < len; j++) buf[j] = pat(seed, off[i] + j);
            s = relo_write(w->ep->device, h, off[i], buf, len);
        } else {
            s = relo_read(w->ep->device, h, off[i], buf, len);
        }
        if (s != RELO_OK) {
            FAIL(w, "%s gave %s", write ? "relo_write" : "relo_read", relo_status_name(s));
            return false;
        }
        if (write) continue;
        for (uint64_t j = 0; j < len; j++) {
            if (buf[j] != pat(seed, off[i] + j)) {
                FAIL(w, "relo_read of %llu B: byte %llu is %#x, expected %#x", (unsigned long long)size,
                     (unsigned long long)(off[i] + j), buf[j], pat(seed, off[i] + j));
                return false;
            }
        }
        w->bytes_checked += len;
    }
    return true;
}

/* Resolves h on stream `on` and writes or checks the pattern straight
 * through the binding, inside the gate so nothing moves meanwhile. */
static bool by_binding(worker *w, relo_stream *on, relo_handle h, uint64_t size, uint8_t seed, bool write)
{
    bool ok = true;
    gate_enter(&w->ep->gate, BINDERS);
    relo_binding b;
    relo_status s = relo_resolve(on, h, &b);
    if (s != RELO_OK || b.size != size || (size && !b.buffer)) {
        FAIL(w, "resolve gave %s, size %llu for %llu", relo_status_name(s),
             (unsigned long long)(s == RELO_OK ? b.size : 0), (unsigned long long)size);
        ok = false;
    } else {
        uint8_t *p = size ? (uint8_t *)b.buffer + b.offset : NULL;
        uint64_t off[2], len;
        int n = windows(size, off, &len);
        for (int i = 0; i < n && ok; i++) {
            for (uint64_t j = 0; j < len; j++) {
                uint8_t want = pat(seed, off[i] + j);
                if (write) {
                    p[off[i] + j] = want;
                } else if (p[off[i] + j] != want) {
                    FAIL(w, "binding of %llu B: byte %llu is %#x, expected %#x", (unsigned long long)size,
                         (unsigned long long)(off[i] + j), p[off[i] + j], want);
                    ok = false;
                    break;
                }
            }
            if (!write) w->bytes_checked += len;
        }
        if (!write) w->binding_checks++;
    }
    gate_leave(&w->ep->gate, BINDERS);
    return ok;
}

/* Checks one allocation both ways; the binding on a stream chosen by r. */
static bool check_both(worker *w, relo_handle h, uint64_t size, uint8_t seed, uint64_t r)
{
    relo_stream *on = r & 1 ? w->other : w->stream;
    return by_handle(w, h, size, seed, false) && by_binding(w, on, h, size, seed, false);
}

/* Everything this thread owns or borrows. */
static bool check_all(worker *w)
{
    epoch *ep = w->ep;
    for (int i = 0; i < HELD; i++) {
        /* Only the owner changes its own entries' used flag, so reading it
         * here needs no lock. */
        entry *e = &ep->table[w->id][i];
        if (e->used && !check_both(w, e->handle, e->size, e->seed, (uint64_t)i)) return false;
    }
    for (int i = 0; i < w->n_loans; i++) {
        loan *l = &w->loans[i];
        if (!check_both(w, l->handle, l->size, l->seed, (uint64_t)i + 1)) return false;
    }
    return true;
}

/* After a call that may move memory: if the device moved anything since
 * this thread last looked (its own call or another thread's), check all. */
static bool after_move(worker *w)
{
    relo_stats st;
    relo_status s = relo_device_stats(w->ep->device, &st);
    if (s != RELO_OK) {
        FAIL(w, "relo_device_stats gave %s", relo_status_name(s));
        return false;
    }
    if (st.allocations_moved == w->moved_seen) return true;
    w->moved_seen = st.allocations_moved;
    w->move_checks++;
    return check_all(w);
}

/* ------------------------------------------------------------------------ */
/* Operations                                                               */
/* ------------------------------------------------------------------------ */

static bool op_reserve(worker *w, uint64_t r, double progress)
{
    epoch *ep = w->ep;
    int slot = -1;
    for (int i = 0; i < HELD && slot < 0; i++)
        if (!ep->table[w->id][i].used) slot = i;
    if (slot < 0) return true;
    uint64_t size = pick(&w->rng, progress);
    relo_handle h;
    gate_enter(&ep->gate, MOVERS);
    relo_status s = relo_reserve(w->stream, size, &h);
    gate_leave(&ep->gate, MOVERS);
    if (s == RELO_ERR_OUT_OF_MEMORY) {
        w->oom++; /* the shared capacity ran out */
        return after_move(w);
    }
    if (s != RELO_OK) {
        FAIL(w, "reserve(%llu) gave %s", (unsigned long long)size, relo_status_name(s));
        return false;
    }
    uint8_t seed = (uint8_t)(r >> 24);
    bool ok = (r >> 33) & 1 ? by_binding(w, w->stream, h, size, seed, true)
                            : by_handle(w, h, size, seed, true);
    if (!ok) {
        relo_release(ep->device, h);
        return false;
    }
    pthread_mutex_lock(&ep->table_lock);
    entry *e = &ep->table[w->id][slot];
    e->handle = h;
    e->size = size;
    e->seed = seed;
    e->borrowers = 0;
    e->used = true;
    pthread_mutex_unlock(&ep->table_lock);
    return after_move(w);
}

static bool op_release(worker *w, uint64_t r)
{
    epoch *ep = w->ep;
    int start = (int)((r >> 8) % HELD), slot = -1;
    pthread_mutex_lock(&ep->table_lock);
    for (int k = 0; k < HELD && slot < 0; k++) {
        entry *e = &ep->table[w->id][(start + k) % HELD];
        if (e->used && e->borrowers == 0) slot = (start + k) % HELD;
    }
    entry copy;
    memset(&copy, 0, sizeof copy);
    if (slot >= 0) {
        copy = ep->table[w->id][slot];
        ep->table[w->id][slot].used = false; /* nobody can borrow it now */
    }
    pthread_mutex_unlock(&ep->table_lock);
    if (slot < 0) return true;
    if (!check_both(w, copy.handle, copy.size, copy.seed, r >> 40)) return false;
    relo_status s = relo_release(ep->device, copy.handle);
    if (s != RELO_OK) {
        FAIL(w, "release gave %s", relo_status_name(s));
        return false;
    }
    relo_binding b;
    s = relo_resolve(w->stream, copy.handle, &b);
    if (s != RELO_ERR_NOT_FOUND) {
        FAIL(w, "released handle resolves: %s", relo_status_name(s));
        return false;
    }
    return true;
}

/* Retains an allocation another thread published and checks it. */
static bool op_borrow(worker *w, uint64_t r)
{
    epoch *ep = w->ep;
    if (w->n_loans == BORROWED) return true;
    int owner = (w->id + 1 + (int)((r >> 8) % (THREADS - 1))) % THREADS;
    int start = (int)((r >> 16) % HELD);
    loan l = {-1, -1, {0}, 0, 0};
    pthread_mutex_lock(&ep->table_lock);
    for (int k = 0; k < HELD && l.slot < 0; k++) {
        entry *e = &ep->table[owner][(start + k) % HELD];
        if (!e->used) continue;
        relo_status s = relo_retain(ep->device, e->handle);
        if (s != RELO_OK) {
            pthread_mutex_unlock(&ep->table_lock);
            FAIL(w, "retain of a published allocation gave %s", relo_status_name(s));
            return false;
        }
        e->borrowers++;
        l = (loan){owner, (start + k) % HELD, e->handle, e->size, e->seed};
    }
    pthread_mutex_unlock(&ep->table_lock);
    if (l.slot < 0) return true;
    w->loans[w->n_loans++] = l;
    w->borrows++;
    return check_both(w, l.handle, l.size, l.seed, r >> 41);
}

static bool give_back(worker *w, int i)
{
    epoch *ep = w->ep;
    loan l = w->loans[i];
    w->loans[i] = w->loans[--w->n_loans];
    bool ok = check_both(w, l.handle, l.size, l.seed, (uint64_t)i);
    relo_status s = relo_release(ep->device, l.handle);
    if (s != RELO_OK) {
        FAIL(w, "release of a borrowed allocation gave %s", relo_status_name(s));
        ok = false;
    }
    pthread_mutex_lock(&ep->table_lock);
    ep->table[l.owner][l.slot].borrowers--;
    pthread_mutex_unlock(&ep->table_lock);
    return ok;
}

static bool op_reclaim(worker *w)
{
    gate_enter(&w->ep->gate, MOVERS);
    relo_status s = relo_reclaim(w->stream);
    gate_leave(&w->ep->gate, MOVERS);
    if (s != RELO_OK) {
        FAIL(w, "reclaim gave %s", relo_status_name(s));
        return false;
    }
    w->reclaims++;
    return after_move(w);
}

/* The fifth thread: relo_device_check over and over, whatever the four
 * others do (relocation included), until they are done. */
static void *checker(void *arg)
{
    epoch *ep = arg;
    while (!atomic_load(&ep->workers_done)) {
        relo_status s = relo_device_check(ep->device);
        atomic_fetch_add(&ep->checks, 1);
        if (s != RELO_OK) {
            fprintf(stderr, "checker thread: relo_device_check gave %s\n", relo_status_name(s));
            atomic_fetch_add(&ep->failures, 1);
        }
        struct timespec pause = {0, 20 * 1000};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void *run(void *arg)
{
    worker *w = arg;
    epoch *ep = w->ep;
    for (int op = 0; op < EPOCH_OPS && atomic_load(&ep->failures) == 0; op++) {
        uint64_t r = next_rand(&w->rng);
        double progress = (double)op / EPOCH_OPS;
        bool ok = true;
        w->ops++;
        switch (r % 20) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4:
        case 5:
        case 6:
        case 7:
        case 8: ok = op_reserve(w, r, progress); break;
        case 9:
        case 10:
        case 11:
        case 12:
        case 13: ok = op_release(w, r); break;
        case 14:
        case 15: ok = op_borrow(w, r); break;
        case 16:
            if (w->n_loans) ok = give_back(w, (int)((r >> 8) % (uint64_t)w->n_loans));
            break;
        case 17: {
            int i = (int)((r >> 8) % HELD);
            entry *e = &ep->table[w->id][i];
            if (e->used) ok = check_both(w, e->handle, e->size, e->seed, r >> 20);
            break;
        }
        default:
            if (r % 3 == 0) ok = op_reclaim(w);
            break;
        }
        if (!ok) break;
    }
    /* Loans go back; the owners' allocations are checked and released
     * once every thread has finished. */
    while (w->n_loans) give_back(w, w->n_loans - 1);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Epochs and cases                                                         */
/* ------------------------------------------------------------------------ */

typedef struct totals {
    uint64_t epochs, ops, reclaims, oom, borrows, bytes_checked, binding_checks, move_checks;
    uint64_t moved, relocations, min_epoch_moved, checks_in_pass, checks_beside;
} totals;

static double stress_seconds(void)
{
    const char *env = getenv("RELO_STRESS_SECONDS");
    double s = env ? atof(env) : 3.0;
    return s > 0 ? s : 3.0;
}

/* One epoch: a fresh device, four threads, every allocation checked and
 * released at the end. */
static void run_epoch(uint64_t capacity, relo_placement placement, uint64_t seed, totals *t)
{
    relo_host_desc hd = {0};
    hd.alignment = 256;
    hd.max_page_size = 16 * MIB;
    hd.capacity = capacity;
    /* Filling freed pages would only show reads after a free, which this
     * test does not look for; skipping it halves the bytes the backend
     * writes (ThreadSanitizer checks each one). Fresh pages are still
     * filled, so a copy that never landed leaves a pattern broken. */
    hd.no_free_fill = true;
    relo_backend *be = NULL;
    require_ok(relo_backend_host_create(&hd, &be));
    relo_device_desc dd = {0};
    dd.placement = placement;
    epoch *ep = calloc(1, sizeof *ep);
    require_true(ep != NULL);
    require_ok(relo_device_create(&dd, be, &ep->device));
    require_ok(relo_stream_create(ep->device, NULL, &ep->streams[0]));
    require_ok(relo_stream_create(ep->device, NULL, &ep->streams[1]));
    require_eq(pthread_mutex_init(&ep->gate.mutex, NULL), 0);
    require_eq(pthread_cond_init(&ep->gate.cond, NULL), 0);
    require_eq(pthread_mutex_init(&ep->table_lock, NULL), 0);
    atomic_init(&ep->failures, 0);
    fx_check_in_passes(&ep->in_pass, ep->device, ep->streams[0]);
    fx_check_in_passes(&ep->in_pass, ep->device, ep->streams[1]);
    pthread_t check_thread;
    require_eq(pthread_create(&check_thread, NULL, checker, ep), 0);

    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].ep = ep;
        w[i].id = i;
        w[i].stream = ep->streams[i % 2];
        w[i].other = ep->streams[(i + 1) % 2];
        w[i].rng = seed * 2654435761u + (uint64_t)i * 0x9E3779B97F4A7C15u + 1;
        require_eq(pthread_create(&th[i], NULL, run, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        t->ops += w[i].ops;
        t->reclaims += w[i].reclaims;
        t->oom += w[i].oom;
        t->borrows += w[i].borrows;
        t->bytes_checked += w[i].bytes_checked;
        t->binding_checks += w[i].binding_checks;
        t->move_checks += w[i].move_checks;
    }
    atomic_store(&ep->workers_done, true);
    pthread_join(check_thread, NULL);
    t->checks_beside += atomic_load(&ep->checks);
    t->checks_in_pass += atomic_load(&ep->in_pass.checks);
    expect_eq(atomic_load(&ep->in_pass.corrupt), 0);
    int thread_failures = atomic_load(&ep->failures);
    expect_eq(thread_failures, 0);

    /* Every allocation still published holds its pattern, both ways, then
     * goes; nothing is borrowed any more. */
    worker main_w;
    memset(&main_w, 0, sizeof main_w);
    main_w.ep = ep;
    main_w.id = THREADS;
    main_w.stream = ep->streams[0];
    main_w.other = ep->streams[1];
    for (int i = 0; i < THREADS; i++) {
        for (int k = 0; k < HELD; k++) {
            entry *e = &ep->table[i][k];
            if (!e->used) continue;
            expect_eq(e->borrowers, 0);
            expect_true(check_both(&main_w, e->handle, e->size, e->seed, (uint64_t)k));
            expect_ok(relo_release(ep->device, e->handle));
        }
    }
    int final_failures = atomic_load(&ep->failures) - thread_failures;
    expect_eq(final_failures, 0);

    relo_stats st;
    expect_ok(relo_device_check(ep->device));
    expect_ok(relo_device_stats(ep->device, &st));
    expect_eq(st.allocations, 0);
    if (t->epochs == 0 || st.allocations_moved < t->min_epoch_moved)
        t->min_epoch_moved = st.allocations_moved;
    t->moved += st.allocations_moved;
    t->relocations += st.relocations;
    t->epochs++;
    if (placement == RELO_PLACEMENT_EXCLUSIVE) {
        expect_eq(st.allocations_moved, 0); /* the placement never moves */
    } else if (thread_failures == 0) {
        /* (Threads that failed stopped early: their epoch moved less.) */
        expect_ge(st.allocations_moved, EPOCH_MIN_MOVED);
    }
    expect_ok(relo_reclaim_device(ep->device));
    expect_ok(relo_device_stats(ep->device, &st));
    expect_eq(st.pages, 0);
    expect_ok(relo_stream_destroy(ep->streams[0]));
    expect_ok(relo_stream_destroy(ep->streams[1]));
    expect_ok(relo_device_destroy(ep->device));
    pthread_mutex_destroy(&ep->table_lock);
    pthread_cond_destroy(&ep->gate.cond);
    pthread_mutex_destroy(&ep->gate.mutex);
    free(ep);
}

static void run_threads(uint64_t capacity, relo_placement placement)
{
    totals t;
    memset(&t, 0, sizeof t);
    uint64_t seed = check_seed();
    double end = now_s() + stress_seconds();
    do {
        int failures = check_failures_;
        run_epoch(capacity, placement, seed + t.epochs, &t);
        if (check_failures_ != failures) {
            fprintf(stderr, "epoch %llu failed\n", (unsigned long long)t.epochs);
            break;
        }
    } while (now_s() < end);
    printf(
        "%llu epochs, %llu operations, %llu reclaims, %llu refused, %llu borrows; "
        "%llu allocations moved in %llu relocations (fewest in one epoch %llu); "
        "%llu bytes checked, %llu checks through bindings, %llu checks after moves; "
        "relo_device_check: %llu inside passes, %llu on the checker thread\n",
        (unsigned long long)t.epochs, (unsigned long long)t.ops, (unsigned long long)t.reclaims,
        (unsigned long long)t.oom, (unsigned long long)t.borrows, (unsigned long long)t.moved,
        (unsigned long long)t.relocations, (unsigned long long)t.min_epoch_moved,
        (unsigned long long)t.bytes_checked, (unsigned long long)t.binding_checks,
        (unsigned long long)t.move_checks, (unsigned long long)t.checks_in_pass,
        (unsigned long long)t.checks_beside);
    expect_gt(t.checks_beside, 0);
    /* The default placement relocates, and each relocation checks inside
     * its pass. */
    if (placement != RELO_PLACEMENT_EXCLUSIVE) expect_gt(t.checks_in_pass, 0);
}

/* Capacity unknown: relocation on explicit reclaims only. */
CHECK_TEST(threads_unbounded)
{
    run_threads(0, RELO_PLACEMENT_DEFAULT);
}
/* Capacity 96 MiB: pressure relocations and refused pages too. */
CHECK_TEST(threads_pressure)
{
    run_threads(96 * MIB, RELO_PLACEMENT_DEFAULT);
}
/* The exclusive placement: locking only, nothing may move. */
CHECK_TEST(threads_exclusive)
{
    run_threads(0, RELO_PLACEMENT_EXCLUSIVE);
}

CHECK_MAIN()
