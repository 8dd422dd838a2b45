/*
 * fuzz_ops_pass.c — fuzz_ops' second thread and the passes the harness
 * drives: the model of the open pass (which move each call skips), the
 * jobs handed to the second thread in lockstep (posted, held at a gate of
 * the backend or waiting inside relo, joined), the checks that run inside
 * passes (the backend's device wait and the streams' finishes, with the
 * one-shot action the input arms), and the operations on passes and jobs.
 * fuzz_ops.c opens with the whole story.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fuzz_ops.h"

/* ---- the open pass, as the model sees it --------------------------------- */

NO_COVERAGE pmove *move_of(relo_handle h)
{
    if (!M.P.pass) return NULL;
    for (uint32_t i = 0; i < M.P.count; i++)
        if (M.P.moves[i].handle.id == h.id && M.P.moves[i].state != RELO_MOVE_RELEASED) return &M.P.moves[i];
    return NULL;
}

/* A resolve, pin, read or write of h that skips its move (from the thread
 * that opened the pass, the one in relo_pass_copy, or a read or resolve from
 * any thread). */
void veto(relo_handle h)
{
    pmove *mv = move_of(h);
    if (mv && mv->state == RELO_MOVE_PENDING) mv->state = RELO_MOVE_SKIPPED;
}

/* Whether a pin or write of h from the second thread waits for the pass
 * to end: h is a source of the open pass that is not being released. */
static bool waits_for_pass(relo_handle h)
{
    return move_of(h) != NULL;
}

/* ---- the second thread --------------------------------------------------- */

static const char *const JOB_NAMES[J_KIND_COUNT] = {"none",    "read",    "write", "pin",      "unpin",
                                                    "release", "resolve", "check", "pass_copy"};

helper H = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static bool on_helper(void)
{
    return H.started && pthread_equal(pthread_self(), H.thread);
}

static void run_job(job *j)
{
    switch (j->kind) {
    case J_READ: j->st = relo_read(M.device, j->handle, j->off, j->buf, j->len); break;
    case J_WRITE: {
        uint64_t off[3], len[3];
        int n = windows(j->size, off, len);
        j->st = RELO_OK;
        for (int w = 0; w < n && j->st == RELO_OK; w++) {
            fill_pattern(j->buf, j->seed, off[w], len[w]);
            j->st = relo_write(M.device, j->handle, off[w], j->buf, len[w]);
        }
        break;
    }
    case J_PIN: j->st = relo_pin(j->stream, j->handle, &j->bind); break;
    case J_UNPIN: j->st = relo_unpin(M.device, j->handle); break;
    case J_RELEASE: j->st = relo_release(M.device, j->handle); break;
    case J_RESOLVE: j->st = relo_resolve(j->stream, j->handle, &j->bind); break;
    case J_CHECK:
        j->st = relo_device_check(M.device);
        if (j->in_pass) atomic_fetch_add(&T.checks_other_thread_in_pass, 1);
        break;
    case J_PASS_COPY:
        M.copying = true;
        j->st = relo_pass_copy(M.P.pass, &j->outcome);
        M.copying = false;
        break;
    case J_NONE:
    case J_KIND_COUNT: break;
    }
}

static void *helper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&H.mu);
    for (;;) {
        while (!H.posted) pthread_cond_wait(&H.cv, &H.mu);
        H.posted = false;
        H.entered = true;
        pthread_cond_broadcast(&H.cv);
        pthread_mutex_unlock(&H.mu);
        run_job(&H.j);
        pthread_mutex_lock(&H.mu);
        H.done = true;
        pthread_cond_broadcast(&H.cv);
    }
    return NULL;
}

/* The backend's gate tells the harness a job stopped there. */
void on_park(void *user)
{
    (void)user;
    pthread_mutex_lock(&H.mu);
    H.parked = true;
    pthread_cond_broadcast(&H.cv);
    pthread_mutex_unlock(&H.mu);
}

static void start_helper(void)
{
    if (H.started) return;
    if (pthread_create(&H.thread, NULL, helper_main, NULL) != 0) die("pthread_create failed");
    H.started = true;
}

/* Waits (H.mu held) until cond holds, at most 10 s. */
#define WAIT_FOR(cond, what)                                                             \
    do {                                                                                 \
        struct timespec until_;                                                          \
        clock_gettime(CLOCK_REALTIME, &until_);                                          \
        until_.tv_sec += 10;                                                             \
        while (!(cond))                                                                  \
            if (pthread_cond_timedwait(&H.cv, &H.mu, &until_) != 0 && !(cond))           \
                die("the second thread's %s %s within 10 s", JOB_NAMES[H.j.kind], what); \
    } while (0)

/* The model's side of a job that returned. */
static void apply_job(void)
{
    job *j = &H.j;
    int i = find_live(j->handle.id);
    live *l = i >= 0 ? &M.lives[i] : NULL;
    if (l) l->job = J_NONE;
    switch (j->kind) {
    case J_READ:
        if (j->st != RELO_OK) die("relo_read on the second thread gave %s", sn(j->st));
        if (!l) die("model: a read's allocation went");
        if (l->patterned)
            expect_pattern(j->buf, l->handle, l->seed, j->off, j->len, "read on the second thread");
        break;
    case J_WRITE:
        if (j->st != RELO_OK) die("relo_write on the second thread gave %s", sn(j->st));
        if (!l) die("model: a write's allocation went");
        l->seed = j->seed;
        l->patterned = true;
        break;
    case J_PIN:
        if (j->st != RELO_OK) die("relo_pin on the second thread gave %s", sn(j->st));
        if (!l) die("model: a pin's allocation went");
        if (j->bind.size != l->size)
            die("pin binding of %llu bytes for %llu", (unsigned long long)j->bind.size,
                (unsigned long long)l->size);
        if (l->pins && !same_place(l->pinned_at, j->bind)) die("a pinned allocation moved");
        if (!l->pins++) l->pinned_at = j->bind;
        break;
    case J_UNPIN:
        if (!l) die("model: an unpin's allocation went");
        if (j->st != (l->pins ? RELO_OK : RELO_ERR_INVALID_ARGUMENT))
            die("relo_unpin with %u pins on the second thread gave %s", l->pins, sn(j->st));
        if (l->pins) l->pins--;
        break;
    case J_RELEASE:
        if (j->st != RELO_OK) die("relo_release on the second thread gave %s", sn(j->st));
        if (!l) die("model: a release's allocation went");
        released(i);
        break;
    case J_RESOLVE:
        if (j->st != RELO_OK) die("relo_resolve on the second thread gave %s", sn(j->st));
        if (!l || j->bind.size != l->size) die("resolve on the second thread: wrong size");
        break;
    case J_CHECK:
        if (j->st != RELO_OK) die("relo_device_check on the second thread gave %s", sn(j->st));
        break;
    case J_PASS_COPY:
        if (j->st != RELO_OK) die("relo_pass_copy on the second thread gave %s", sn(j->st));
        M.P.relo_copy_done = true;
        M.P.copy_outcome = j->outcome;
        break;
    case J_NONE:
    case J_KIND_COUNT: break;
    }
    j->kind = J_NONE;
    H.in_flight = false;
}

/* Opens every gate and waits for the job to return. */
void join(void)
{
    if (!H.in_flight) return;
    if (H.j.waits && M.P.pass) die("model: joining a job that waits for the open pass");
    sparse_gates_open(M.sb);
    pthread_mutex_lock(&H.mu);
    WAIT_FOR(H.done, "did not return");
    pthread_mutex_unlock(&H.mu);
    apply_job();
}

/* Hands j to the second thread, with gate armed for it (or none, -1), and
 * waits until it returned, stopped at the gate, or (a job expected to wait
 * for the pass) entered relo. What returned is applied at once; the rest
 * stays in flight until join. */
static void post(const job *j, int gate)
{
    start_helper();
    join();
    if (gate >= 0) sparse_gate_arm(M.sb, (sparse_op)gate, H.thread);
    pthread_mutex_lock(&H.mu);
    H.j = *j;
    H.done = H.parked = H.entered = false;
    H.posted = true;
    H.in_flight = true;
    atomic_fetch_add(&T.jobs, 1);
    pthread_cond_broadcast(&H.cv);
    if (j->waits) {
        WAIT_FOR(H.entered, "never started");
        pthread_mutex_unlock(&H.mu);
        /* Let it reach the wait inside relo (a guess: nothing says when). */
        for (int i = 0; i < 20; i++) sched_yield();
        pthread_mutex_lock(&H.mu);
    } else {
        WAIT_FOR(H.done || H.parked, "neither returned nor reached its gate");
    }
    bool done = H.done, parked = H.parked;
    pthread_mutex_unlock(&H.mu);
    if (trace_ops)
        fprintf(stderr, "  second thread: %s %s\n", JOB_NAMES[j->kind],
                done     ? "returned"
                : parked ? "held at a gate"
                         : "waits for the pass");
    if (done) {
        sparse_gates_open(M.sb); /* disarm a gate it never reached */
        apply_job();
        return;
    }
    atomic_fetch_add(parked ? &T.jobs_held : &T.jobs_waited, 1);
    int i = find_live(j->handle.id);
    if (i >= 0 && j->kind != J_PASS_COPY && j->kind != J_CHECK) M.lives[i].job = j->kind;
}


/* ---- checks inside passes ------------------------------------------------ */

static void hook_action(void)
{
    hook_kind kind = M.hook;
    relo_handle h = M.hook_handle;
    M.hook = HOOK_NONE;
    int i = find_live(h.id);
    if (kind == HOOK_OTHER_CHECK) {
        /* The second thread checks while this one waits inside the pass. */
        if (on_helper() || H.in_flight) return;
        job j;
        memset(&j, 0, sizeof j);
        j.kind = J_CHECK;
        j.in_pass = true;
        post(&j, -1);
        return;
    }
    if (i < 0 || M.lives[i].job != J_NONE) return;
    live *l = &M.lives[i];
    int q = quiet_stream();
    if (kind == HOOK_PIN && q >= 0) {
        relo_binding b;
        relo_status s = relo_pin(M.streams[q], h, &b);
        if (s != RELO_OK) die("relo_pin inside a pass gave %s", sn(s));
        if (M.copying) veto(h);
        if (l->pins && !same_place(b, l->pinned_at)) die("a pinned allocation moved (pin inside a pass)");
        if ((s = relo_unpin(M.device, h)) != RELO_OK) die("relo_unpin inside a pass gave %s", sn(s));
    } else if (kind == HOOK_READ && l->patterned) {
        uint8_t buf[WINDOW_MAX];
        uint64_t off[3], len[3];
        int n = windows(l->size, off, len);
        for (int w = 0; w < n; w++) {
            relo_status s = relo_read(M.device, h, off[w], buf, len[w]);
            if (s != RELO_OK) die("relo_read inside a pass gave %s", sn(s));
            expect_pattern(buf, h, l->seed, off[w], len[w], "read inside a pass");
        }
        if (n && M.copying) veto(h);
    } else if (kind == HOOK_RELEASE) {
        relo_status s = relo_release(M.device, h);
        if (s != RELO_OK) die("relo_release inside a pass gave %s", sn(s));
        released(i);
    }
}

/* Called while a pass waits for the device: in the backend's device wait
 * and in every stream's finish, on the thread that copies. */
static void check_in_pass(const char *where)
{
    relo_status s = relo_device_check(M.device);
    if (trace_ops)
        fprintf(stderr, "  relo_device_check %s%s: %s\n", where, on_helper() ? " (second thread)" : "",
                sn(s));
    if (s != RELO_OK) die("relo_device_check %s gave %s", where, sn(s));
    if (M.hook != HOOK_NONE) hook_action();
}

void on_wait_device(void *user)
{
    (void)user;
    atomic_fetch_add(&T.checks_in_pass_hook, 1);
    check_in_pass("in the backend's device wait");
}

static relo_status on_finish(void *user)
{
    int mode = *(const int *)user;
    atomic_fetch_add(&T.checks_in_finish, 1);
    check_in_pass("in a stream's finish");
    return mode == 2 ? RELO_ERR_BACKEND : RELO_OK;
}


/* ---- runtime-driven passes ------------------------------------------------ */

void op_pass_begin(cursor *c)
{
    static const uint64_t bytes[] = {0, 0, 1, 64 * KIB, MIB, 4 * MIB, 16 * MIB, 0};
    uint8_t scope = take8(c), bound = take8(c);
    relo_pass_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.stream = scope & 1 ? M.streams[(scope >> 1) % STREAMS] : NULL;
    desc.max_bytes = bytes[bound % 8];
    desc.max_moves = (uint32_t)(bound >> 3) % 4;
    relo_pass *pass = NULL;
    relo_status s = relo_pass_begin(M.device, &desc, &pass);
    relo_status want = any_recording()    ? RELO_ERR_RECORDING
                       : M.P.pass         ? RELO_ERR_BUSY
                       : !M.relocation_on ? RELO_ERR_UNSUPPORTED
                                          : RELO_OK;
    if (s != want) die("relo_pass_begin gave %s, expected %s", sn(s), sn(want));
    if (s != RELO_OK) return;
    if (!pass) die("relo_pass_begin gave no pass");
    memset(&M.P, 0, sizeof M.P);
    M.P.pass = pass;
    M.P.count = relo_pass_move_count(pass);
    if (M.P.count > (uint32_t)M.nlive) die("a pass of %u moves over %d live allocations", M.P.count, M.nlive);
    atomic_fetch_add(&T.passes, 1);
    atomic_fetch_add(&T.moves, M.P.count);
    for (uint32_t i = 0; i < M.P.count; i++) {
        relo_pass_move mv;
        if ((s = relo_pass_move_get(pass, i, &mv)) != RELO_OK) die("relo_pass_move_get gave %s", sn(s));
        int k = find_live(mv.handle.id);
        if (k < 0) die("move %u names handle %#llx, not live", i, (unsigned long long)mv.handle.id);
        live *l = &M.lives[k];
        if (mv.state != RELO_MOVE_PENDING) die("move %u begins %s", i, relo_move_state_name(mv.state));
        if (l->pins) die("move %u moves a pinned allocation", i);
        if (l->job == J_READ || l->job == J_WRITE) die("move %u moves an allocation in transfer", i);
        if (desc.stream && mv.stream != desc.stream) die("move %u is of another stream", i);
        if (mv.stream != M.streams[l->stream]) die("move %u names another stream than its own", i);
        if (mv.from.size != l->size || mv.to.size != l->size) die("move %u has the wrong size", i);
        if (!same_place(mv.from, l->bind)) die("move %u starts elsewhere than the allocation is", i);
        if (mv.to.offset % M.alignment) die("move %u's target is not aligned", i);
        if (move_of(mv.handle)) die("two moves of handle %#llx", (unsigned long long)mv.handle.id);
        pmove *p = &M.P.moves[i];
        p->handle = mv.handle;
        p->size = l->size;
        p->from = mv.from;
        p->to = mv.to;
        p->state = RELO_MOVE_PENDING;
    }
    relo_pass_move none;
    if (relo_pass_move_get(pass, M.P.count, &none) != RELO_ERR_INVALID_ARGUMENT)
        die("relo_pass_move_get past the end did not refuse");
}

void op_pass_skip(cursor *c)
{
    uint8_t k = take8(c);
    if (!M.P.pass) return;
    uint32_t i = M.P.count ? k % (M.P.count + 1) : 0;
    relo_status s = relo_pass_skip(M.P.pass, i);
    if (i >= M.P.count) {
        if (s != RELO_ERR_INVALID_ARGUMENT)
            die("relo_pass_skip(%u) of %u moves gave %s", i, M.P.count, sn(s));
        return;
    }
    if (s != RELO_OK) die("relo_pass_skip gave %s", sn(s));
    if (M.P.moves[i].state == RELO_MOVE_PENDING) M.P.moves[i].state = RELO_MOVE_SKIPPED;
}

/* The runtime copies one move, or every pending one (high bit). */
void op_pass_own_copy(cursor *c)
{
    uint8_t k = take8(c);
    if (!M.P.pass || !M.P.count || M.P.relo_copy) return;
    for (uint32_t i = 0; i < M.P.count; i++) {
        pmove *mv = &M.P.moves[i];
        if (!(k & 0x80) && i != k % M.P.count) continue;
        if (mv->state == RELO_MOVE_RELEASED) continue;
        sparse_runtime_copy(M.sb, &mv->from, &mv->to, mv->size);
        mv->copied = true;
    }
}

static bool faults_on(void)
{
    const sparse_faults *f = &M.faults;
    bool finish_fails = false;
    for (int i = 0; i < STREAMS; i++) finish_fails |= M.finish[i] == 2;
    return f->refuse_copies || f->refuse_copy_after || f->fail_wait_copies || f->fail_wait_device ||
           finish_fails;
}

/* relo_pass_copy on this thread, or (bit 0) on the second one, held at a
 * gate the input picks. */
void op_pass_copy(cursor *c)
{
    static const int gates[] = {-1, SPARSE_WAIT_DEVICE, SPARSE_COPY, SPARSE_WAIT_COPIES};
    uint8_t how = take8(c);
    if (!M.P.pass) return;
    relo_pass_outcome outcome;
    if (M.P.relo_copy) {
        /* A second call is refused, also while the first still runs. */
        relo_status s = relo_pass_copy(M.P.pass, &outcome);
        if (s != RELO_ERR_INVALID_ARGUMENT) die("a second relo_pass_copy gave %s", sn(s));
        return;
    }
    M.P.relo_copy = true;
    bool faults = faults_on();
    /* (Not while a job waits for this pass: the second thread is taken.) */
    if ((how & 1) && !(H.in_flight && H.j.waits)) {
        job j;
        memset(&j, 0, sizeof j);
        j.kind = J_PASS_COPY;
        post(&j, gates[(how >> 1) % 4]);
    } else {
        M.copying = true;
        relo_status s = relo_pass_copy(M.P.pass, &outcome);
        M.copying = false;
        if (s != RELO_OK) die("relo_pass_copy gave %s", sn(s));
        M.P.relo_copy_done = true;
        M.P.copy_outcome = outcome;
    }
    if (M.P.relo_copy_done && !faults && M.P.copy_outcome != RELO_PASS_LANDED)
        die("relo_pass_copy without faults ended %d", (int)M.P.copy_outcome);
}

/* Ends the pass: outcome LANDED, ABANDONED or UNKNOWN by the low bits
 * (3 = LANDED). LANDED copies what the runtime did not (bit 2) or, if it may
 * not, becomes ABANDONED: a runtime says LANDED only when every pending
 * move landed. Bit 3 first tries a bad outcome, which leaves the pass
 * open. */
void op_pass_end(cursor *c)
{
    uint8_t how = take8(c);
    if (!M.P.pass) return;
    relo_status s;
    if (how & 8) {
        s = relo_pass_end(M.P.pass, (relo_pass_outcome)(RELO_PASS_OUTCOME_COUNT + (how >> 4)));
        if (s != RELO_ERR_INVALID_ARGUMENT) die("relo_pass_end with a bad outcome gave %s", sn(s));
    }
    if (H.in_flight && H.j.kind == J_PASS_COPY) {
        s = relo_pass_end(M.P.pass, RELO_PASS_ABANDONED);
        if (s != RELO_ERR_BUSY) die("relo_pass_end while relo_pass_copy runs gave %s", sn(s));
        join();
        if (!faults_on() && M.P.copy_outcome != RELO_PASS_LANDED)
            die("relo_pass_copy without faults ended %d", (int)M.P.copy_outcome);
    }
    relo_pass_outcome outcome = (relo_pass_outcome)((how & 3) % 3);
    if (outcome == RELO_PASS_LANDED && !M.P.relo_copy) {
        for (uint32_t i = 0; i < M.P.count && outcome == RELO_PASS_LANDED; i++) {
            pmove *mv = &M.P.moves[i];
            if (mv->state != RELO_MOVE_PENDING || mv->copied) continue;
            if (how & 4)
                sparse_runtime_copy(M.sb, &mv->from, &mv->to, mv->size);
            else
                outcome = RELO_PASS_ABANDONED;
        }
    }
    relo_pass_outcome final = outcome;
    if (M.P.relo_copy_done && M.P.copy_outcome > final) final = M.P.copy_outcome;
    s = relo_pass_end(M.P.pass, outcome);
    if (s != RELO_OK) die("relo_pass_end(%d) gave %s", (int)outcome, sn(s));
    pass_model P = M.P;
    memset(&M.P, 0, sizeof M.P);
    if (H.in_flight && H.j.waits) join(); /* a pin or write that waited for the end */

    /* Each allocation is where its move's fate says. */
    int q = quiet_stream();
    for (uint32_t i = 0; i < P.count && q >= 0; i++) {
        const pmove *mv = &P.moves[i];
        int k = find_live(mv->handle.id);
        if (mv->state == RELO_MOVE_RELEASED || k < 0) continue;
        bool moved = final == RELO_PASS_LANDED && mv->state == RELO_MOVE_PENDING;
        relo_binding b;
        if ((s = relo_resolve(M.streams[q], mv->handle, &b)) != RELO_OK)
            die("resolve after the pass gave %s", sn(s));
        if (!same_place(b, moved ? mv->to : mv->from))
            die("move %u (%s, outcome %d) left handle %#llx %s", i, relo_move_state_name(mv->state),
                (int) final, (unsigned long long)mv->handle.id, moved ? "behind" : "moved");
        if (moved) atomic_fetch_add(&T.committed, 1);
    }
}


/* ---- jobs of the second thread ----------------------------------------------- */

/* A job by the input: kind, allocation, gate, seed. */
void op_job(cursor *c)
{
    uint8_t kind = take8(c), k = take8(c), g = take8(c), seed = take8(c);
    if (H.in_flight) {
        if (H.j.waits && M.P.pass) return;
        join();
    }
    job j;
    memset(&j, 0, sizeof j);
    j.kind = (job_kind)(1 + kind % (J_KIND_COUNT - 2)); /* J_PASS_COPY goes through op_pass_copy */
    j.in_pass = M.P.pass != NULL;
    int gate = -1;
    if (j.kind != J_CHECK) {
        if (!M.nlive) return;
        live *l = &M.lives[k % M.nlive];
        if (l->job != J_NONE) return;
        int q = quiet_stream();
        if ((j.kind == J_PIN || j.kind == J_RESOLVE) && q < 0) return;
        j.handle = l->handle;
        j.size = l->size;
        j.seed = seed;
        j.stream = q >= 0 ? M.streams[q] : NULL;
        if (j.kind == J_READ) {
            uint64_t off[3], len[3];
            int n = windows(l->size, off, len);
            if (!n) return;
            j.off = off[g % n];
            j.len = len[g % n];
            if (g & 0x10) gate = SPARSE_READ;
            veto(l->handle); /* a read from any thread skips the move */
        } else if (j.kind == J_RESOLVE) {
            veto(l->handle);
        } else if (j.kind == J_WRITE) {
            if (g & 0x10) gate = SPARSE_WRITE;
            j.waits = waits_for_pass(l->handle);
        } else if (j.kind == J_PIN) {
            j.waits = waits_for_pass(l->handle);
        }
    }
    post(&j, gate);
}

void op_join(cursor *c)
{
    (void)take8(c);
    if (H.in_flight && !(H.j.waits && M.P.pass)) join();
}

/* A stream's finish: none, one that checks, or one that checks and fails
 * (the relocation that asked is then abandoned). */
void op_set_finish(cursor *c)
{
    int si = take8(c) % STREAMS;
    int mode = take8(c) % 3;
    if (H.in_flight && H.j.kind == J_PASS_COPY) return; /* it reads the modes */
    M.finish[si] = mode;
    relo_status s = relo_stream_set_finish(M.streams[si], mode ? on_finish : NULL, &M.finish[si]);
    if (s != RELO_OK) die("relo_stream_set_finish gave %s", sn(s));
}

/* Arms the action the next check inside a pass takes. */
void op_arm_hook(cursor *c)
{
    uint8_t kind = take8(c), k = take8(c);
    if (H.in_flight && H.j.kind == J_PASS_COPY) return;
    M.hook = (hook_kind)(1 + kind % (HOOK_KIND_COUNT - 1));
    M.hook_handle.id = M.nlive ? M.lives[k % M.nlive].handle.id : 0;
}
