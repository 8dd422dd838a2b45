/*
 * api/reclaim.c — the public calls that give memory back: relo_reclaim and
 * relo_reclaim_device (move live allocations, then give back what that
 * emptied: policy/steps.c) and relo_trim (give back empty pages only:
 * pass/trim.c).
 */
#include "pass/relocation.h"

/* relo_reclaim (only non-NULL) and relo_reclaim_device. */
static relo_status reclaim(relo_device *d, relo_stream *only)
{
    relo__device_lock(d);
    relo__pass_settle(d);
    relo_status st = RELO_ERR_RECORDING;
    if (d->recording == 0) {
        st = d->open_pass ? RELO_ERR_BUSY : RELO_OK;
        relo__steps_explicit(d, only);
        if (st == RELO_OK && d->recording) st = RELO_ERR_RECORDING;
    }
    relo__device_unlock(d);
    return st;
}

relo_status relo_reclaim(relo_stream *stream)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    return reclaim(stream->device, stream);
}

relo_status relo_reclaim_device(relo_device *device)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    return reclaim(device, NULL);
}

relo_status relo_trim(relo_device *device, uint64_t keep, uint64_t *released)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo_status st = RELO_OK;
    uint64_t n = 0;
    if (device->recording) {
        st = RELO_ERR_RECORDING;
    } else {
        n = relo__trim(device, NULL, relo__trim_resolve(device, keep));
        device->trim_stuck = 0;
        if (n && device->backend->ops.flush) device->backend->ops.flush(device->backend->ctx);
    }
    relo__device_unlock(device);
    if (released) *released = n;
    return st;
}
