/*
 * api/stream.c — the public calls on a stream's mode window: relo_mode_push and
 * relo_mode_pop.
 */
#include "core/device.h"

relo_status relo_mode_push(relo_stream *stream, relo_mode mode)
{
    if (!stream || (unsigned)mode >= RELO_MODE_COUNT) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    relo_status st = RELO_ERR_INVALID_ARGUMENT;
    if (stream->mode_depth < RELO_MODE_DEPTH) {
        stream->modes[stream->mode_depth++] = (uint8_t)mode;
        st = RELO_OK;
    }
    relo__device_unlock(stream->device);
    return st;
}

relo_status relo_mode_pop(relo_stream *stream)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    relo_status st = RELO_ERR_INVALID_ARGUMENT;
    if (stream->mode_depth > 0) {
        stream->mode_depth--;
        st = RELO_OK;
    }
    relo__device_unlock(stream->device);
    return st;
}
