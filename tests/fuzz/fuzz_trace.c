/*
 * fuzz_trace.c — libFuzzer harness for the trace readers of tools/.
 *
 * Feeds arbitrary bytes to trace_read_buffer in each format (the first
 * byte picks auto, relo or RMM, so one corpus reaches all three parsers)
 * and checks what an accepted trace promises: every free names an
 * allocation made before it and not yet freed, with the same size, and
 * the computed peak is at least every prefix's live bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

static void check_trace(const trace *t)
{
    uint8_t *live = calloc(t->alloc_count ? t->alloc_count : 1, 1);
    uint64_t *size = calloc(t->alloc_count ? t->alloc_count : 1, sizeof *size);
    if (!live || !size) abort();
    uint64_t bytes = 0;
    for (size_t i = 0; i < t->event_count; i++) {
        const trace_event *e = &t->events[i];
        if (e->alloc >= t->alloc_count || e->stream >= t->stream_count) abort();
        if (e->kind == TRACE_ALLOC) {
            if (live[e->alloc]) abort();
            live[e->alloc] = 1;
            size[e->alloc] = e->size;
            bytes = bytes + e->size < bytes ? UINT64_MAX : bytes + e->size;
            if (bytes > t->peak_live_bytes) abort();
        } else {
            if (live[e->alloc] != 1 || size[e->alloc] != e->size) abort();
            live[e->alloc] = 2; /* freed: never live again */
            if (bytes != UINT64_MAX) bytes -= e->size;
        }
    }
    free(live);
    free(size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trace_format format = TRACE_FORMAT_AUTO;
    if (size > 0 && data[0] < 3) {
        format = (trace_format)data[0];
        data++;
        size--;
    }
    trace t;
    trace_error err;
    if (trace_read_buffer(data, size, "fuzz.trace", format, &t, &err)) {
        check_trace(&t);
    } else if (err.message[0] == '\0' || strlen(err.message) >= sizeof err.message) {
        abort(); /* a rejection must say why */
    }
    trace_free(&t);
    return 0;
}
