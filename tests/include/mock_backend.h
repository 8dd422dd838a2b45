/*
 * mock_backend.h — a backend for unit tests, built through
 * relo_backend_create: buffers are malloc'ed blocks, every call is counted
 * and logged in order, copies are held back until wait_copies (as a real
 * device's asynchronous copies are, landing in the order enqueued), a copy
 * whose source and target overlap is refused (as OpenCL refuses one), and
 * any call of alloc, copy, wait_device or wait_copies can be refused from
 * its Nth occurrence on. Each call can also be held at a gate (mock_gate_arm):
 * its next occurrence stops there until the test opens it, so a test holds a
 * race window open on purpose instead of hoping a scheduler finds it.
 *
 * The mock's state (mock_ctx) belongs to the test, not to the device: it
 * outlives relo_device_destroy so a test can read the log afterwards.
 */
#ifndef RELO_TEST_MOCK_BACKEND_H
#define RELO_TEST_MOCK_BACKEND_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relo_backend.h"

typedef enum mock_op {
    MOCK_ALLOC = 0,
    MOCK_FREE,
    MOCK_FLUSH,
    MOCK_WRITE,
    MOCK_READ,
    MOCK_WAIT_DEVICE,
    MOCK_COPY,
    MOCK_WAIT_COPIES,
    MOCK_STREAM_ADD,
    MOCK_STREAM_REMOVE,
    MOCK_DESTROY,
    MOCK_OP_COUNT
} mock_op;

static inline const char *mock_op_name(mock_op op)
{
    static const char *const names[MOCK_OP_COUNT] = {"alloc",      "free",          "flush",  "write",
                                                     "read",       "wait_device",   "copy",   "wait_copies",
                                                     "stream_add", "stream_remove", "destroy"};
    return op < MOCK_OP_COUNT ? names[op] : "?";
}

/** One logged call: which, its size argument (alloc, free, copy), what it
 *  returned, and for a copy where it wrote. */
typedef struct mock_event {
    mock_op op;
    uint64_t size;
    relo_status result;
    void *dst;
    uint64_t dst_offset;
} mock_event;

typedef struct mock_copy {
    void *src, *dst;
    uint64_t src_offset, dst_offset, n;
} mock_copy;

/** A gate one call of an op stops at (see mock_gate_arm). */
typedef struct mock_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool armed;      /* the op's next call stops here */
    bool arrived;    /* a call is stopped here now */
    bool open;       /* the stopped call may go on */
    uint64_t passed; /* calls that stopped here and went on */
} mock_gate;

#define MOCK_LOG_MAX 4096
#define MOCK_PENDING_MAX 1024

typedef struct mock_ctx {
    mock_event log[MOCK_LOG_MAX];
    size_t n_log;                      /* events logged (saturates at MOCK_LOG_MAX) */
    uint64_t calls[MOCK_OP_COUNT];     /* every call, also beyond the log */
    uint64_t refuse_at[MOCK_OP_COUNT]; /* refuse the call whose count reaches this (0 = never) */
    bool refuse_sticky[MOCK_OP_COUNT]; /* and every later one */
    relo_status refuse_with[MOCK_OP_COUNT];
    mock_copy pending[MOCK_PENDING_MAX];
    size_t n_pending;
    uint64_t buffers_live;
    uint64_t bytes_held;
    uint64_t capacity;           /* an alloc past this many bytes held is refused (0 = none) */
    uint64_t overlapping_copies; /* copies whose source and target overlap
                                       (relo_backend.h forbids it): refused */
    bool destroyed;
    /* Called first thing in wait_device, on the thread that relocates
     * (tests of what other threads may do meanwhile). */
    void (*wait_device_hook)(void *user);
    void *wait_device_user;
    /* Called first thing in alloc, which relo calls with the device lock
     * held (tests of what other threads may do meanwhile). */
    void (*alloc_hook)(void *user);
    void *alloc_user;
    /* Called first thing in free, on whatever thread frees. */
    void (*free_hook)(void *user);
    void *free_user;
    /* Held by alloc and free, which a device with a release thread calls
     * from two threads. */
    pthread_mutex_t lock;
    mock_gate gates[MOCK_OP_COUNT];
} mock_ctx;

/* Called first thing by every op that has a gate: stops there when armed. */
static inline void mock_gate_pass_(mock_ctx *m, mock_op op)
{
    mock_gate *g = &m->gates[op];
    pthread_mutex_lock(&g->mu);
    if (g->armed) {
        g->armed = false;
        g->arrived = true;
        pthread_cond_broadcast(&g->cv);
        while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
        g->arrived = false;
        g->passed++;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
}

/** Arms op's gate: the next call of op (alloc, free, read, write,
 *  wait_device, copy or wait_copies), on whatever thread, stops at it until
 *  mock_gate_open. */
static inline void mock_gate_arm(mock_ctx *m, mock_op op)
{
    mock_gate *g = &m->gates[op];
    pthread_mutex_lock(&g->mu);
    g->armed = true;
    g->open = false;
    pthread_mutex_unlock(&g->mu);
}

/** Waits until a call stopped at op's gate; false after seconds without one
 *  (the window the test wanted never opened). */
static inline bool mock_gate_await(mock_ctx *m, mock_op op, int seconds)
{
    mock_gate *g = &m->gates[op];
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    pthread_mutex_lock(&g->mu);
    int r = 0;
    while (!g->arrived && r != ETIMEDOUT) r = pthread_cond_timedwait(&g->cv, &g->mu, &until);
    bool arrived = g->arrived;
    pthread_mutex_unlock(&g->mu);
    return arrived;
}

/** Arms op's gate, starts fn(arg) on a thread of its own (*t), and waits
 *  until that thread's call stops at the gate: false when the thread could
 *  not start or no call stopped there within seconds. */
static inline bool mock_gate_start(mock_ctx *m, mock_op op, void *(*fn)(void *), void *arg, pthread_t *t,
                                   int seconds)
{
    mock_gate_arm(m, op);
    return pthread_create(t, NULL, fn, arg) == 0 && mock_gate_await(m, op, seconds);
}

/** Lets the call stopped at op's gate (or the next one, if none has come
 *  yet) go on, and disarms the gate. */
static inline void mock_gate_open(mock_ctx *m, mock_op op)
{
    mock_gate *g = &m->gates[op];
    pthread_mutex_lock(&g->mu);
    g->open = true;
    g->armed = false;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static inline void mock_log_(mock_ctx *m, mock_op op, uint64_t size, relo_status r)
{
    if (m->n_log < MOCK_LOG_MAX) {
        m->log[m->n_log].op = op;
        m->log[m->n_log].size = size;
        m->log[m->n_log].result = r;
        m->log[m->n_log].dst = NULL;
        m->log[m->n_log].dst_offset = 0;
        m->n_log++;
    }
}

/* Counts a call and says whether it is to be refused. */
static inline bool mock_refused_(mock_ctx *m, mock_op op)
{
    uint64_t n = ++m->calls[op];
    uint64_t at = m->refuse_at[op];
    return at && (n == at || (m->refuse_sticky[op] && n > at));
}

static inline void mock_land_(mock_ctx *m)
{
    for (size_t i = 0; i < m->n_pending; i++) {
        mock_copy *c = &m->pending[i];
        memcpy((char *)c->dst + c->dst_offset, (char *)c->src + c->src_offset, (size_t)c->n);
    }
    m->n_pending = 0;
}

static relo_status mock_alloc_(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_ALLOC);
    relo_status r = RELO_OK;
    void *p = NULL;
    if (m->alloc_hook) m->alloc_hook(m->alloc_user);
    pthread_mutex_lock(&m->lock);
    if (mock_refused_(m, MOCK_ALLOC)) {
        r = m->refuse_with[MOCK_ALLOC] ? m->refuse_with[MOCK_ALLOC] : RELO_ERR_OUT_OF_MEMORY;
    } else if (m->capacity && size > m->capacity - m->bytes_held) {
        r = RELO_ERR_OUT_OF_MEMORY;
    } else {
        p = malloc((size_t)size);
        if (!p) r = RELO_ERR_OUT_OF_MEMORY;
    }
    mock_log_(m, MOCK_ALLOC, size, r);
    if (r == RELO_OK) {
        m->buffers_live++;
        m->bytes_held += size;
    }
    pthread_mutex_unlock(&m->lock);
    if (r != RELO_OK) return r;
    memset(p, 0xA5, (size_t)size);
    *buffer = p;
    *address = (uint64_t)(uintptr_t)p;
    return RELO_OK;
}

static void mock_free_(void *ctx, void *buffer, uint64_t size)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_FREE);
    if (m->free_hook) m->free_hook(m->free_user);
    memset(buffer, 0xDD, (size_t)size);
    free(buffer);
    pthread_mutex_lock(&m->lock);
    m->calls[MOCK_FREE]++;
    mock_log_(m, MOCK_FREE, size, RELO_OK);
    m->buffers_live--;
    m->bytes_held -= size;
    pthread_mutex_unlock(&m->lock);
}

static void mock_flush_(void *ctx)
{
    mock_ctx *m = ctx;
    m->calls[MOCK_FLUSH]++;
    mock_log_(m, MOCK_FLUSH, 0, RELO_OK);
}

static relo_status mock_write_(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_WRITE);
    m->calls[MOCK_WRITE]++;
    /* Writes and reads are not logged: tests check the order of device
     * calls around relocation, and pattern checks would drown them. */
    memcpy((char *)buffer + offset, src, (size_t)n);
    return RELO_OK;
}

static relo_status mock_read_(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_READ);
    m->calls[MOCK_READ]++;
    memcpy(dst, (char *)buffer + offset, (size_t)n);
    return RELO_OK;
}

static relo_status mock_wait_device_(void *ctx)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_WAIT_DEVICE);
    relo_status r = RELO_OK;
    if (m->wait_device_hook) m->wait_device_hook(m->wait_device_user);
    if (mock_refused_(m, MOCK_WAIT_DEVICE))
        r = m->refuse_with[MOCK_WAIT_DEVICE] ? m->refuse_with[MOCK_WAIT_DEVICE] : RELO_ERR_BACKEND;
    mock_log_(m, MOCK_WAIT_DEVICE, 0, r);
    return r;
}

static relo_status mock_copy_(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                              uint64_t n)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_COPY);
    relo_status r = RELO_OK;
    if (mock_refused_(m, MOCK_COPY))
        r = m->refuse_with[MOCK_COPY] ? m->refuse_with[MOCK_COPY] : RELO_ERR_BACKEND;
    /* As OpenCL's clEnqueueCopyBuffer does, a copy within one buffer whose
     * ranges overlap is refused (and counted: a core bug). */
    if (r == RELO_OK && src == dst && src_offset < dst_offset + n && dst_offset < src_offset + n) {
        m->overlapping_copies++;
        r = RELO_ERR_INVALID_ARGUMENT;
    }
    mock_log_(m, MOCK_COPY, n, r);
    if (m->n_log && m->n_log <= MOCK_LOG_MAX && m->log[m->n_log - 1].op == MOCK_COPY) {
        m->log[m->n_log - 1].dst = dst;
        m->log[m->n_log - 1].dst_offset = dst_offset;
    }
    if (r != RELO_OK) return r;
    if (m->n_pending == MOCK_PENDING_MAX) mock_land_(m);
    mock_copy c = {src, dst, src_offset, dst_offset, n};
    m->pending[m->n_pending++] = c;
    return RELO_OK;
}

static relo_status mock_wait_copies_(void *ctx)
{
    mock_ctx *m = ctx;
    mock_gate_pass_(m, MOCK_WAIT_COPIES);
    relo_status r = RELO_OK;
    if (mock_refused_(m, MOCK_WAIT_COPIES))
        r = m->refuse_with[MOCK_WAIT_COPIES] ? m->refuse_with[MOCK_WAIT_COPIES] : RELO_ERR_BACKEND;
    mock_log_(m, MOCK_WAIT_COPIES, 0, r);
    /* A failed wait leaves the outcome unknown; the mock lands the copies
     * anyway, as a device that reported late would. */
    mock_land_(m);
    return r;
}

static relo_status mock_stream_add_(void *ctx, void *backend_stream)
{
    mock_ctx *m = ctx;
    (void)backend_stream;
    m->calls[MOCK_STREAM_ADD]++;
    mock_log_(m, MOCK_STREAM_ADD, 0, RELO_OK);
    return RELO_OK;
}

static void mock_stream_remove_(void *ctx, void *backend_stream)
{
    mock_ctx *m = ctx;
    (void)backend_stream;
    m->calls[MOCK_STREAM_REMOVE]++;
    mock_log_(m, MOCK_STREAM_REMOVE, 0, RELO_OK);
}

static void mock_destroy_(void *ctx)
{
    mock_ctx *m = ctx;
    m->calls[MOCK_DESTROY]++;
    mock_log_(m, MOCK_DESTROY, 0, RELO_OK);
    m->destroyed = true;
}

/** Initialises *m and wraps it in a backend with props (NULL = the
 *  test defaults: alignment 32, max page 128 MiB, capacity unknown). */
static inline relo_status mock_backend_create(mock_ctx *m, const relo_backend_props *props,
                                              relo_backend **out)
{
    static const relo_backend_ops ops = {
        .alloc = mock_alloc_,
        .free = mock_free_,
        .flush = mock_flush_,
        .write = mock_write_,
        .read = mock_read_,
        .wait_device = mock_wait_device_,
        .copy = mock_copy_,
        .wait_copies = mock_wait_copies_,
        .stream_add = mock_stream_add_,
        .stream_remove = mock_stream_remove_,
        .destroy = mock_destroy_,
    };
    relo_backend_props def = {32, UINT64_C(128) << 20, 0, 0};
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    for (int op = 0; op < MOCK_OP_COUNT; op++) {
        pthread_mutex_init(&m->gates[op].mu, NULL);
        pthread_cond_init(&m->gates[op].cv, NULL);
    }
    return relo_backend_create(&ops, m, props ? props : &def, out);
}

/** Refuses the nth call of op from now (1 = the next one), and every later
 *  one if sticky; with status (0 = the op's usual refusal). n = 0 stops
 *  refusing. */
static inline void mock_refuse(mock_ctx *m, mock_op op, uint64_t n, bool sticky, relo_status status)
{
    m->refuse_at[op] = n ? m->calls[op] + n : 0;
    m->refuse_sticky[op] = sticky;
    m->refuse_with[op] = status;
}

/** Forgets the log (the counts stay). */
static inline void mock_clear_log(mock_ctx *m)
{
    m->n_log = 0;
}

/** How many logged events are op. */
static inline size_t mock_count(const mock_ctx *m, mock_op op)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_log; i++) n += m->log[i].op == op;
    return n;
}

/** Index of the first (or last) logged op; -1 if none. */
static inline long mock_first(const mock_ctx *m, mock_op op)
{
    for (size_t i = 0; i < m->n_log; i++)
        if (m->log[i].op == op) return (long)i;
    return -1;
}

static inline long mock_last(const mock_ctx *m, mock_op op)
{
    for (size_t i = m->n_log; i-- > 0;)
        if (m->log[i].op == op) return (long)i;
    return -1;
}

/** Prints the log to stderr (for a failing test). */
static inline void mock_dump(const mock_ctx *m)
{
    for (size_t i = 0; i < m->n_log; i++)
        fprintf(stderr, "  #%zu %s size %llu -> %s\n", i, mock_op_name(m->log[i].op),
                (unsigned long long)m->log[i].size, relo_status_name(m->log[i].result));
}

#endif /* RELO_TEST_MOCK_BACKEND_H */
