/*
 * backend/releaser.c — the device's release thread (see backend/releaser.h).
 */
#include "backend/releaser.h"

#include <string.h>

#include "base/hostmem.h"

static void *release_loop(void *arg)
{
    relo_releaser *r = arg;
    relo_backend *b = r->backend;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->count == 0 && !r->stop) pthread_cond_wait(&r->work, &r->mu);
        if (r->count == 0) break; /* stop, with nothing left */
        relo_buffer_free buf = r->queue[--r->count];
        r->freeing++;
        pthread_mutex_unlock(&r->mu);
        b->ops.free(b->ctx, buf.buffer, buf.size);
        pthread_mutex_lock(&r->mu);
        r->freeing--;
        if (r->count == 0 && r->freeing == 0) pthread_cond_broadcast(&r->idle);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

relo_status relo__releaser_start(relo_releaser *r, relo_backend *backend)
{
    memset(r, 0, sizeof *r);
    r->backend = backend;
    if (pthread_mutex_init(&r->mu, NULL) != 0) return RELO_ERR_HOST_MEMORY;
    if (pthread_cond_init(&r->work, NULL) != 0) goto no_work;
    if (pthread_cond_init(&r->idle, NULL) != 0) goto no_idle;
    if (pthread_create(&r->thread, NULL, release_loop, r) != 0) goto no_thread;
    r->running = true;
    return RELO_OK;
no_thread:
    pthread_cond_destroy(&r->idle);
no_idle:
    pthread_cond_destroy(&r->work);
no_work:
    pthread_mutex_destroy(&r->mu);
    memset(r, 0, sizeof *r);
    return RELO_ERR_HOST_MEMORY;
}

bool relo__releaser_push(relo_releaser *r, const relo_buffer_free *bufs, uint32_t n)
{
    pthread_mutex_lock(&r->mu);
    if (r->count + n > r->cap) {
        uint32_t cap = r->cap ? r->cap : 16;
        while (cap < r->count + n) cap *= 2;
        relo_buffer_free *q = relo__realloc(r->queue, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&r->mu);
            return false;
        }
        r->queue = q;
        r->cap = cap;
    }
    memcpy(&r->queue[r->count], bufs, n * sizeof *bufs);
    r->count += n;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->mu);
    return true;
}

bool relo__releaser_drain(relo_releaser *r)
{
    if (!r->running) return false;
    pthread_mutex_lock(&r->mu);
    bool any = r->count > 0 || r->freeing > 0;
    while (r->count > 0 || r->freeing > 0) pthread_cond_wait(&r->idle, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return any;
}

void relo__releaser_stop(relo_releaser *r)
{
    if (!r->running) return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->idle);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->mu);
    relo__free(r->queue);
    memset(r, 0, sizeof *r);
}
