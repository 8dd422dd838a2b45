/*
 * fuzz_ops.h — what the two files of fuzz_ops share: the shadow model of
 * the device (fuzz_ops.c, which also holds the operations on allocations,
 * streams, modes and capture, the checks, and the entry point) and the
 * second thread with the runtime-driven passes and the checks inside
 * passes (fuzz_ops_pass.c). fuzz_ops.c opens with the whole story.
 */
#ifndef RELO_FUZZ_OPS_H
#define RELO_FUZZ_OPS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "relo.h"
#include "relo_backend.h"
#include "sparse_backend.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

enum { STREAMS = 2, MAX_LIVE = 64, MAX_STALE = 32, MAX_GRAPHS = 8, MAX_MODES = 64, WINDOW_MAX = 4096 };

/* The harness's own checking loops are not instrumented for coverage: what
 * guides the fuzzer is which branches of relo (and which operations) an
 * input reaches, and per-byte comparisons traced in a pattern check would
 * cost more than relo's own work. */
#if defined(__clang__)
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))
/* The pattern loops touch only the harness's own stack buffers. */
#define NO_CHECKS __attribute__((no_sanitize("coverage", "address", "undefined")))
#else
#define NO_COVERAGE
#define NO_CHECKS
#endif

/* Bytes the backend may hold when the device was told nothing about its
 * capacity: reservations beyond are skipped so a run stays small. */
#define UNKNOWN_CAPACITY_BUDGET (128 * MIB)

/* What the second thread does (job.kind). */
typedef enum job_kind {
    J_NONE = 0,
    J_READ,
    J_WRITE,
    J_PIN,
    J_UNPIN,
    J_RELEASE,
    J_RESOLVE,
    J_CHECK,
    J_PASS_COPY,
    J_KIND_COUNT
} job_kind;

/* A live allocation as the model knows it. */
typedef struct live {
    relo_handle handle;
    uint64_t size;
    uint32_t refs;
    uint32_t pins;
    relo_binding pinned_at; /* where it was when pinned (while pins > 0) */
    relo_binding bind;      /* where the last check found it */
    int stream;             /* the stream it was reserved on */
    uint8_t seed;           /* pattern seed */
    bool patterned;         /* the pattern was written */
    job_kind job;           /* the second thread's job on it, J_NONE if none */
} live;

/* One move of the open pass, as the model predicts it. */
typedef struct pmove {
    relo_handle handle;
    uint64_t size;
    relo_binding from, to;
    relo_move_state state;
    bool copied; /* the harness copied it itself */
} pmove;

/* The open runtime-driven pass. */
typedef struct pass_model {
    relo_pass *pass; /* NULL when none is open */
    uint32_t count;
    pmove moves[MAX_LIVE];
    bool relo_copy;      /* relo_pass_copy was called */
    bool relo_copy_done; /* and returned */
    relo_pass_outcome copy_outcome;
    uint32_t dropped; /* sources released while open */
    uint64_t dropped_bytes;
} pass_model;

typedef enum cap_state { CAP_IDLE, CAP_PREPARED, CAP_RECORDING } cap_state;

/* A one-shot action the next check inside a pass carries out (op_arm_hook). */
typedef enum hook_kind {
    HOOK_NONE = 0,
    HOOK_PIN,
    HOOK_READ,
    HOOK_RELEASE,
    HOOK_OTHER_CHECK,
    HOOK_KIND_COUNT
} hook_kind;

typedef struct model {
    relo_device *device;
    relo_backend *backend; /* owned by device */
    sparse_backend *sb;    /* its state: faults, gates, peeks */
    relo_stream *streams[STREAMS];
    cap_state cap[STREAMS];
    bool doomed[STREAMS];
    int modes[STREAMS]; /* open mode windows */
    relo_mode mode_stack[STREAMS][MAX_MODES];
    int finish[STREAMS]; /* 0 none, 1 checks, 2 checks and fails */
    live lives[MAX_LIVE];
    int nlive;
    relo_handle stale[MAX_STALE];
    int nstale, stale_next;
    relo_graph *graphs[MAX_GRAPHS];
    int ngraphs;
    uint64_t alignment, max_page, capacity;
    sparse_faults faults;
    bool relocation_on; /* not the exclusive placement, relocation AUTO */
    bool packed;        /* RELO_PLACEMENT_PACKED */
    pass_model P;
    bool copying; /* this run's relo_pass_copy runs (its thread copies) */
    hook_kind hook;
    relo_handle hook_handle;
    uint64_t op_index;
    const char *op_name;
} model;

typedef struct cursor {
    const uint8_t *p;
    size_t n;
} cursor;

static inline uint8_t take8(cursor *c)
{
    if (!c->n) return 0;
    c->n--;
    return *c->p++;
}

static inline uint64_t take_n(cursor *c, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)take8(c) << (8 * i);
    return v;
}

/* ---- the second thread --------------------------------------------------- */

typedef struct job {
    job_kind kind;
    relo_handle handle;
    relo_stream *stream;
    uint64_t size;
    uint8_t seed;
    uint64_t off, len; /* J_READ's window */
    bool waits;        /* the model expects it to wait for the pass */
    bool in_pass;      /* J_CHECK: a pass is open meanwhile */
    /* Results. */
    relo_status st;
    relo_binding bind;
    relo_pass_outcome outcome;
    uint8_t buf[WINDOW_MAX];
} job;

typedef struct helper {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool posted, entered, done, parked; /* mu */
    bool in_flight;                     /* main thread only */
    job j;
} helper;

/* Counts over the whole process, printed at exit with FUZZ_OPS_STATS=1. */
typedef struct totals {
    _Atomic uint64_t runs, ops, passes, moves, committed, jobs, jobs_held, jobs_waited;
    _Atomic uint64_t checks_in_pass_hook, checks_in_finish, checks_other_thread_in_pass,
        checks_opener_in_pass;
} totals;

extern model M;
extern helper H;
extern totals T;
extern int trace_ops;

/* fuzz_ops.c */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
const char *sn(relo_status s);
bool any_recording(void);
bool same_place(relo_binding a, relo_binding b);
int windows(uint64_t size, uint64_t off[3], uint64_t len[3]);
void fill_pattern(uint8_t *buf, uint8_t seed, uint64_t off, uint64_t len);
void expect_pattern(const uint8_t *buf, relo_handle h, uint8_t seed, uint64_t off, uint64_t len,
                    const char *how);
int find_live(uint64_t id);
void released(int i);
int quiet_stream(void);

/* fuzz_ops_pass.c: the open pass as the model sees it */
pmove *move_of(relo_handle h);
void veto(relo_handle h);

/* fuzz_ops_pass.c: the second thread */
void join(void);
void on_park(void *user);

/* fuzz_ops_pass.c: checks inside passes (the backend's device wait hook) */
void on_wait_device(void *user);

/* fuzz_ops_pass.c: operations */
void op_pass_begin(cursor *c);
void op_pass_skip(cursor *c);
void op_pass_own_copy(cursor *c);
void op_pass_copy(cursor *c);
void op_pass_end(cursor *c);
void op_job(cursor *c);
void op_join(cursor *c);
void op_set_finish(cursor *c);
void op_arm_hook(cursor *c);

#endif /* RELO_FUZZ_OPS_H */
