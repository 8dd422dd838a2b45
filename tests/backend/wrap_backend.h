/*
 * wrap_backend.h — a test-local backend around a real device backend
 * (OpenCL, Vulkan), for the behaviours a real device cannot be made to
 * show on demand: it refuses copies, fails the copy wait after really
 * waiting (as a lost device would), answers out of memory past a number of
 * buffers, and logs the order of wait_device, copy and wait_copies.
 * Everything else goes to the real device unchanged.
 *
 * The wrapper's state (wrap) is freed with the backend, so a test reads it
 * only while the device that owns the backend lives.
 */
#ifndef RELO_TEST_WRAP_BACKEND_H
#define RELO_TEST_WRAP_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "relo_backend.h"

typedef struct wrap {
    relo_backend *inner;
    bool refuse_copies;    /* copy answers RELO_ERR_BACKEND */
    bool fail_wait_copies; /* wait_copies waits, then answers RELO_ERR_BACKEND */
    uint32_t max_buffers;  /* alloc answers out of memory past this many; 0 = no limit */
    uint32_t buffers;      /* buffers held */
    char log[1024];        /* 'D' wait_device, 'C' copy, 'W' wait_copies */
    size_t log_len;
    /* Where set, asked right after each wait_device returns whether the
     * work the test gave the device is done; the answer lands in
     * streams_done. */
    bool (*work_done)(void *user);
    void *work_done_user;
    bool streams_done;
} wrap;

static void wrap_note(wrap *w, char c)
{
    if (w->log_len + 1 < sizeof w->log) w->log[w->log_len++] = c;
    w->log[w->log_len] = '\0';
}

/** Empties the call log (before the calls a test means to look at). */
static inline void wrap_clear_log(wrap *w)
{
    w->log_len = 0;
    w->log[0] = '\0';
}

static relo_status wrap_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    wrap *w = ctx;
    if (w->max_buffers && w->buffers >= w->max_buffers) return RELO_ERR_OUT_OF_MEMORY;
    relo_status st = w->inner->ops.alloc(w->inner->ctx, size, buffer, address);
    if (st == RELO_OK) w->buffers++;
    return st;
}

static void wrap_free(void *ctx, void *buffer, uint64_t size)
{
    wrap *w = ctx;
    w->buffers--;
    w->inner->ops.free(w->inner->ctx, buffer, size);
}

static relo_status wrap_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    wrap *w = ctx;
    return w->inner->ops.write(w->inner->ctx, buffer, offset, src, n);
}

static relo_status wrap_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    wrap *w = ctx;
    return w->inner->ops.read(w->inner->ctx, buffer, offset, dst, n);
}

static relo_status wrap_wait_device(void *ctx)
{
    wrap *w = ctx;
    wrap_note(w, 'D');
    relo_status s = w->inner->ops.wait_device(w->inner->ctx);
    /* What the wait promises: the work given to the device is done. */
    if (w->work_done) w->streams_done = w->work_done(w->work_done_user);
    return s;
}

static relo_status wrap_copy(void *ctx, void *src, uint64_t so, void *dst, uint64_t dof, uint64_t n)
{
    wrap *w = ctx;
    wrap_note(w, 'C');
    if (w->refuse_copies) return RELO_ERR_BACKEND;
    return w->inner->ops.copy(w->inner->ctx, src, so, dst, dof, n);
}

static relo_status wrap_wait_copies(void *ctx)
{
    wrap *w = ctx;
    wrap_note(w, 'W');
    /* Really wait, so that the device is idle, then claim the outcome is
     * unknown as a lost device would. */
    relo_status s = w->inner->ops.wait_copies(w->inner->ctx);
    return w->fail_wait_copies ? RELO_ERR_BACKEND : s;
}

static relo_status wrap_stream_add(void *ctx, void *q)
{
    wrap *w = ctx;
    return w->inner->ops.stream_add(w->inner->ctx, q);
}

static void wrap_stream_remove(void *ctx, void *q)
{
    wrap *w = ctx;
    w->inner->ops.stream_remove(w->inner->ctx, q);
}

static void wrap_destroy(void *ctx)
{
    wrap *w = ctx;
    relo_backend_destroy(w->inner);
    free(w);
}

/** Wraps inner (taken: destroyed with the wrapper, or here on failure;
 *  NULL gives NULL) with no fault on; *w_out is the wrapper's state, which
 *  stays readable until the device that takes the result goes. Returns the
 *  wrapping backend, with inner's properties, or NULL. */
static inline relo_backend *wrap_backend(relo_backend *inner, wrap **w_out)
{
    static const relo_backend_ops ops = {
        .alloc = wrap_alloc,
        .free = wrap_free,
        .write = wrap_write,
        .read = wrap_read,
        .wait_device = wrap_wait_device,
        .copy = wrap_copy,
        .wait_copies = wrap_wait_copies,
        .stream_add = wrap_stream_add,
        .stream_remove = wrap_stream_remove,
        .destroy = wrap_destroy,
    };
    if (!inner) return NULL;
    wrap *w = calloc(1, sizeof *w);
    if (!w) {
        relo_backend_destroy(inner);
        return NULL;
    }
    w->inner = inner;
    relo_backend *b = NULL;
    if (relo_backend_create(&ops, w, &inner->props, &b) != RELO_OK) {
        wrap_destroy(w);
        return NULL;
    }
    *w_out = w;
    return b;
}

#endif /* RELO_TEST_WRAP_BACKEND_H */
