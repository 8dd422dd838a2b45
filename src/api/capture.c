/*
 * api/capture.c — graph capture and guards (design §7). The graph that will
 * hold the guards is made at begin, and touched pages are appended to it as
 * they are resolved, so sealing a recording cannot fail.
 */
#include "core/capture.h"

#include "core/device.h"
#include "base/hostmem.h"
#include "pass/relocation.h"

/* Appends page to a growable page list. */
static relo_status list_push(relo_page ***list, uint32_t *count, uint32_t *cap, relo_page *page)
{
    if (*count == *cap) {
        uint32_t n = *cap ? *cap * 2 : 16;
        relo_page **pages = relo__realloc(*list, n * sizeof *pages);
        if (!pages) return RELO_ERR_HOST_MEMORY;
        *list = pages;
        *cap = n;
    }
    (*list)[(*count)++] = page;
    return RELO_OK;
}

relo_status relo__capture_touch(struct relo_stream *stream, relo_page *page)
{
    relo_capture *c = &stream->capture;
    if (page->touch_stamp == c->epoch) return RELO_OK;
    struct relo_graph *g = c->graph;
    relo_status st;
    if (relo__pool_stream(page->pool) == stream) {
        st = list_push(&g->pages, &g->count, &g->cap, page);
    } else {
        st = list_push(&g->foreign, &g->foreign_count, &g->foreign_cap, page);
        if (st == RELO_OK) relo__pool_page_guard(page->pool, page);
    }
    if (st == RELO_OK) page->touch_stamp = c->epoch;
    return st;
}

/* Drops the guards a graph took at touch (a recording that yields no graph,
 * or a graph being destroyed), then frees it. */
static void graph_free(struct relo_graph *g)
{
    for (uint32_t i = 0; i < g->foreign_count; i++)
        relo__pool_page_unguard(g->foreign[i]->pool, g->foreign[i]);
    relo__free(g->foreign);
    relo__free(g->pages);
    relo__free(g);
}

/* The one place a capture state changes, so the flag relo_resolve reads
 * without the lock always says whether the stream records. */
static void set_state(relo_capture *c, relo_capture_state state)
{
    c->state = state;
    atomic_store_explicit(&c->recording, state == RELO_CAPTURE_RECORDING, memory_order_relaxed);
}

void relo__capture_reset(struct relo_stream *stream)
{
    relo_capture *c = &stream->capture;
    if (c->state == RELO_CAPTURE_RECORDING) stream->device->recording--;
    if (c->graph) graph_free(c->graph);
    c->graph = NULL;
    set_state(c, RELO_CAPTURE_IDLE);
    c->doom = RELO_OK;
}

relo_status relo_capture_prepare(relo_stream *stream)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = stream->device;
    relo__device_lock(d);
    relo__pass_settle(d);
    relo_status st = RELO_ERR_CAPTURE_STATE;
    if (stream->capture.state == RELO_CAPTURE_IDLE) {
        if (d->recording) {
            st = RELO_ERR_RECORDING;
        } else if (d->open_pass) {
            st = RELO_ERR_BUSY;
        } else {
            relo__steps_before_capture(d);
            set_state(&stream->capture, RELO_CAPTURE_PREPARED);
            st = RELO_OK;
        }
    }
    relo__device_unlock(d);
    return st;
}

relo_status relo_capture_begin(relo_stream *stream)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = stream->device;
    relo__device_lock(d);
    relo__pass_settle(d);
    relo_status st = RELO_ERR_CAPTURE_STATE;
    if (stream->capture.state == RELO_CAPTURE_PREPARED && d->open_pass) {
        st = RELO_ERR_BUSY;
    } else if (stream->capture.state == RELO_CAPTURE_PREPARED) {
        struct relo_graph *g = relo__calloc(sizeof *g);
        if (!g) {
            st = RELO_ERR_HOST_MEMORY;
        } else {
            g->device = d;
            stream->capture.graph = g;
            stream->capture.epoch = ++d->capture_epoch;
            if (stream->capture.epoch == 0) stream->capture.epoch = ++d->capture_epoch;
            stream->capture.doom = RELO_OK;
            set_state(&stream->capture, RELO_CAPTURE_RECORDING);
            d->recording++;
            st = RELO_OK;
        }
    }
    relo__device_unlock(d);
    return st;
}

relo_status relo_capture_end(relo_stream *stream, relo_graph **out)
{
    if (!stream || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = stream->device;
    relo__device_lock(d);
    relo_capture *c = &stream->capture;
    relo_status st = RELO_ERR_CAPTURE_STATE;
    if (c->state == RELO_CAPTURE_RECORDING) {
        st = c->doom;
        struct relo_graph *g = c->graph;
        c->graph = NULL;
        set_state(c, RELO_CAPTURE_IDLE);
        c->doom = RELO_OK;
        d->recording--;
        if (st == RELO_OK) {
            for (uint32_t i = 0; i < g->count; i++) relo__pool_page_guard(g->pages[i]->pool, g->pages[i]);
            d->graphs++;
            *out = g;
        } else {
            graph_free(g);
            *out = NULL;
        }
        /* Pages the recording kept from going back may go now. */
        relo__device_cleanup_periodic(d);
    }
    relo__device_unlock(d);
    return st;
}

void relo_graph_destroy(relo_graph *graph)
{
    if (!graph) return;
    relo_device *d = graph->device;
    relo__device_lock(d);
    for (uint32_t i = 0; i < graph->count; i++)
        relo__pool_page_unguard(graph->pages[i]->pool, graph->pages[i]);
    d->graphs--;
    graph_free(graph);
    relo__device_unlock(d);
}
