/*
 * api/runtime_pass.c — relocation passes the runtime drives (relo.h, "Relocation
 * passes the runtime drives"). The pass is the same object relo's own
 * relocation and compaction use (pass/relocation.h): this file plans it the way a
 * reclaim would, opens it, hands its moves to the runtime and closes it with
 * the outcome the runtime reports. Everything but the copy holds the device
 * lock; relo_pass_copy drops it, as relo's own passes do.
 */
#include <string.h>

#include "core/device.h"
#include "base/hostmem.h"
#include "pass/relocation.h"

_Static_assert((int)RELO_PASS_LANDED == (int)RELO_COPY_LANDED &&
                   (int)RELO_PASS_ABANDONED == (int)RELO_COPY_ABANDONED &&
                   (int)RELO_PASS_UNKNOWN == (int)RELO_COPY_UNKNOWN,
               "a pass outcome is a copy outcome");

const char *relo_move_state_name(relo_move_state state)
{
    switch (state) {
#define RELO_X_(name, value, text) \
    case name: return #name;
        RELO_MOVE_STATE_LIST(RELO_X_)
#undef RELO_X_
    case RELO_MOVE_STATE_COUNT: break;
    }
    return "RELO_MOVE_STATE_UNKNOWN";
}

relo_status relo_pass_begin(relo_device *d, const relo_pass_desc *desc, relo_pass **out)
{
    if (!d || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo_pass_desc bounds;
    memset(&bounds, 0, sizeof bounds);
    if (desc) bounds = *desc;
    if (bounds.stream && bounds.stream->device != d) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(d);
    relo__pass_settle(d);
    relo_status st = RELO_OK;
    if (d->recording)
        st = RELO_ERR_RECORDING;
    else if (d->open_pass)
        st = RELO_ERR_BUSY;
    else if (!relo__relocation_allowed(d))
        st = RELO_ERR_UNSUPPORTED;
    relo_pass *pass = NULL;
    if (st == RELO_OK && !(pass = relo__malloc(sizeof *pass))) st = RELO_ERR_HOST_MEMORY;
    if (st == RELO_OK) {
        relo__pass_begin(pass, d, RELO_REASON_RUNTIME);
        pass->runtime = true;
        pass->scope = bounds.stream;
        pass->max_bytes = bounds.max_bytes;
        pass->max_moves = bounds.max_moves;
        pass->max_ns = 0;
        relo__relocation_plan(pass, bounds.stream);
        relo__compact_plan(pass, bounds.stream, UINT64_MAX, true);
        st = relo__pass_open(pass);
        if (st != RELO_OK) {
            relo__pass_close(pass, RELO_COPY_ABANDONED);
            relo__free(pass);
        } else {
            *out = pass;
        }
    }
    relo__device_unlock(d);
    return st;
}

uint32_t relo_pass_move_count(const relo_pass *pass)
{
    return pass ? pass->count : 0;
}

static relo_binding binding_of(const relo_slice *sl, uint64_t size)
{
    relo_binding b;
    b.buffer = sl->page->buffer;
    b.offset = sl->offset;
    b.size = size;
    b.address = sl->page->address ? sl->page->address + sl->offset : 0;
    return b;
}

relo_status relo_pass_move_get(relo_pass *pass, uint32_t i, relo_pass_move *out)
{
    if (!pass || !out || i >= pass->count) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = pass->device;
    relo__device_lock(d);
    const relo_move *mv = &pass->moves[i];
    uint64_t size = mv->src->size;
    out->state = mv->fate == RELO_FATE_PLANNED   ? RELO_MOVE_PENDING
                 : mv->fate == RELO_FATE_SKIPPED ? RELO_MOVE_SKIPPED
                                                 : RELO_MOVE_RELEASED;
    out->handle.id = 0;
    if (mv->fate != RELO_FATE_DROPPED) out->handle = relo__handle_of(&d->handles, mv->slot);
    out->stream = relo__pool_stream(mv->src->page->pool);
    out->from = binding_of(mv->src, size);
    out->to = binding_of(mv->dst, size);
    relo__device_unlock(d);
    return RELO_OK;
}

relo_status relo_pass_skip(relo_pass *pass, uint32_t i)
{
    if (!pass || i >= pass->count) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(pass->device);
    relo_move *mv = &pass->moves[i];
    if (mv->fate == RELO_FATE_PLANNED) mv->fate = RELO_FATE_SKIPPED;
    relo__device_unlock(pass->device);
    return RELO_OK;
}

relo_status relo_pass_copy(relo_pass *pass, relo_pass_outcome *outcome)
{
    if (!pass || !outcome) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = pass->device;
    relo__device_lock(d);
    bool again = pass->copied;
    pass->copied = true;
    if (!again) {
        /* relo_pass_end refuses while the copies run; a pin or write by
         * this thread (a stream's finish) skips a move, as the owner's do. */
        pass->copying = true;
        pass->copier = pthread_self();
    }
    relo__device_unlock_quietly(d);
    if (again) return RELO_ERR_INVALID_ARGUMENT;
    /* Without the lock: an open pass's moves keep their sources and
     * targets, and only fates change under other threads. */
    relo_copy_outcome got = pass->count ? relo__pass_copy(pass) : RELO_COPY_LANDED;
    relo__device_lock(d);
    pass->copy_outcome = (uint8_t)got;
    pass->copying = false;
    relo__device_unlock(d);
    *outcome = (relo_pass_outcome)got;
    return RELO_OK;
}

relo_status relo_pass_end(relo_pass *pass, relo_pass_outcome outcome)
{
    if (!pass || (unsigned)outcome >= RELO_PASS_OUTCOME_COUNT) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = pass->device;
    relo__device_lock(d);
    if (pass->copying) {
        /* relo_pass_copy runs on another thread and reads the plan. */
        relo__device_unlock(d);
        return RELO_ERR_BUSY;
    }
    /* The outcomes are ordered from best to worst: take the worse of what
     * the runtime says and what relo's own copy saw. */
    relo_copy_outcome o = (relo_copy_outcome)outcome;
    if (pass->copied && pass->copy_outcome > o) o = (relo_copy_outcome)pass->copy_outcome;
    /* Pages the pass emptied go back, as after a reclaim (relo__pass_close
     * gives back the outdated ones; the packed layout's pools' stay cached there). */
    if (relo__pass_close(pass, o)) relo__trim(d, pass->scope, 0);
    relo__free(pass);
    relo__device_unlock(d);
    return RELO_OK;
}
