/*
 * api/device.c — the public calls on the device: creation and destruction,
 * streams, the life of a handle (reserve, retain, release, resolve, pin,
 * read, write). Each takes the device lock once and calls into the layers
 * below, which own the work (HACKING.md).
 */
#include "core/device.h"

#include <string.h>

#include "core/capture.h"
#include "base/hostmem.h"
#include "core/log.h"
#include "pass/relocation.h"

/* The size of the first relo_device_desc that had a size field, this
 * version's: a caller's desc may be no smaller. A later version that adds
 * fields keeps this value and reads the new fields only from a desc whose
 * size holds them. */
#define DEVICE_DESC_FIRST_SIZE ((uint32_t)sizeof(relo_device_desc))

relo_status relo_device_create(const relo_device_desc *desc, relo_backend *backend, relo_device **out)
{
    if (!backend || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo_device_desc d0;
    memset(&d0, 0, sizeof d0);
    if (desc) {
        uint32_t size = desc->size ? desc->size : (uint32_t)sizeof d0;
        if (size < DEVICE_DESC_FIRST_SIZE || size > sizeof d0) return RELO_ERR_INVALID_ARGUMENT;
        /* Only what the caller's desc holds; the rest keeps its default. */
        memcpy(&d0, desc, size);
    }
    if ((unsigned)d0.placement >= RELO_PLACEMENT_COUNT || (unsigned)d0.relocation >= RELO_RELOCATION_COUNT ||
        (unsigned)d0.page_free >= RELO_PAGE_FREE_COUNT)
        return RELO_ERR_INVALID_ARGUMENT;
    if (backend->props.alignment == 0 || backend->props.max_page_size < backend->props.alignment)
        return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = relo__calloc(sizeof *d);
    if (!d) return RELO_ERR_HOST_MEMORY;
    /* Each step undoes the ones before it when a later one fails. */
    relo_status st = RELO_ERR_HOST_MEMORY;
    if (!relo__lock_init(&d->lock)) goto no_lock;
    if (!relo__cond_init(&d->pass_done)) goto no_cond;
    if ((st = relo__handle_table_init(&d->handles)) != RELO_OK) goto no_tag;
    st = RELO_ERR_HOST_MEMORY;
    if (d0.page_free == RELO_PAGE_FREE_THREAD && relo__releaser_start(&d->releaser, backend) != RELO_OK)
        goto no_releaser;
    d->backend = backend;
    d->alignment = backend->props.alignment;
    d->max_page = relo__round_down(backend->props.max_page_size, d->alignment);
    d->granule = backend->props.granule > 1 ? backend->props.granule : 1;
    d->capacity = d0.capacity ? d0.capacity : backend->props.capacity;
    d0.capacity = d->capacity;
    d0.size = (uint32_t)sizeof d0;
    if (d0.placement == RELO_PLACEMENT_DEFAULT) d0.placement = RELO_PLACEMENT_PACKED;
    if (d0.cache_limit == 0) d0.cache_limit = RELO_CACHE_LIMIT_DEFAULT;
    d->desc = d0;
    d->layout = relo__layout_pick(d0.placement);
    *out = d;
    return RELO_OK;
no_releaser:
    relo__handle_table_destroy(&d->handles);
no_tag:
    relo__cond_destroy(&d->pass_done);
no_cond:
    relo__lock_destroy(&d->lock);
no_lock:
    relo__free(d);
    return st;
}

relo_status relo_device_destroy(relo_device *device)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo__pass_settle(device);
    if (device->handles.live > 0 || device->graphs > 0 || device->recording > 0 || device->open_pass) {
        relo__device_unlock(device);
        return RELO_ERR_BUSY;
    }
    relo__releaser_drain(&device->releaser); /* every queued free done before the backend goes */
    for (uint32_t i = 0; i < device->stream_count; i++) {
        relo_stream *s = device->streams[i];
        relo__stream_free_pages(s);
        if (s->capture.graph) relo__capture_reset(s);
        if (device->backend->ops.stream_remove && s->backend_stream)
            device->backend->ops.stream_remove(device->backend->ctx, s->backend_stream);
        relo__free(s);
    }
    relo__free(device->streams);
    if (device->backend->ops.flush) device->backend->ops.flush(device->backend->ctx);
    relo__handle_table_destroy(&device->handles);
    relo__slab_destroy(&device->slab);
    relo__device_unlock(device);
    relo__cond_destroy(&device->pass_done);
    relo__lock_destroy(&device->lock);
    relo__releaser_stop(&device->releaser);
    relo_backend_destroy(device->backend);
    relo__free(device);
    return RELO_OK;
}

relo_status relo_device_desc_get(relo_device *device, relo_device_desc *out)
{
    if (!device || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    *out = device->desc;
    relo__device_unlock(device);
    return RELO_OK;
}

relo_status relo_stream_create(relo_device *device, void *backend_stream, relo_stream **out)
{
    if (!device || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo_status st = RELO_ERR_HOST_MEMORY;
    relo_stream *s = NULL;
    if (device->stream_count == device->stream_cap) {
        uint32_t cap = device->stream_cap ? device->stream_cap * 2 : 4;
        relo_stream **streams = relo__realloc(device->streams, cap * sizeof *streams);
        if (!streams) goto done;
        device->streams = streams;
        device->stream_cap = cap;
    }
    s = relo__malloc(sizeof *s);
    if (!s) goto done;
    if (relo__stream_init(s, device, backend_stream) != RELO_OK) {
        relo__free(s);
        goto done;
    }
    if (device->backend->ops.stream_add && backend_stream) {
        st = device->backend->ops.stream_add(device->backend->ctx, backend_stream);
        if (st != RELO_OK) {
            relo__stream_free_pages(s);
            relo__free(s);
            goto done;
        }
    }
    s->index = device->stream_count;
    device->streams[device->stream_count++] = s;
    *out = s;
    st = RELO_OK;
done:
    relo__device_unlock(device);
    return st;
}

relo_status relo_stream_destroy(relo_stream *stream)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = stream->device;
    relo__device_lock(d);
    relo__pass_settle(d);
    /* While any stream records, a page this stream holds may be touched by
     * the recording: it must outlive the graph. An open pass may hold
     * targets in this stream's pages. */
    if (relo__stream_allocations(stream) > 0 || relo__stream_guarded_pages(stream) > 0 ||
        stream->capture.state != RELO_CAPTURE_IDLE || d->recording > 0 || d->open_pass) {
        relo__device_unlock(d);
        return RELO_ERR_BUSY;
    }
    /* Leaked slices go with the stream: a destroy is the user's word that
     * no work on it runs any more. */
    relo__stream_free_pages(stream);
    if (d->backend->ops.stream_remove && stream->backend_stream)
        d->backend->ops.stream_remove(d->backend->ctx, stream->backend_stream);
    uint32_t i = stream->index;
    d->streams[i] = d->streams[--d->stream_count];
    d->streams[i]->index = i;
    relo__free(stream);
    relo__device_unlock(d);
    return RELO_OK;
}

relo_status relo_reserve(relo_stream *stream, uint64_t size, relo_handle *out)
{
    if (!stream || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    relo_status st = relo__stream_reserve(stream, size, out);
    relo__device_unlock(stream->device);
    return st;
}

relo_status relo_retain(relo_device *device, relo_handle handle)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo_status st = RELO_ERR_NOT_FOUND;
    relo_slot *slot = relo__handle_lookup(&device->handles, handle);
    if (slot) {
        if (slot->refcount == UINT32_MAX) {
            st = RELO_ERR_INVALID_ARGUMENT;
        } else {
            slot->refcount++;
            st = RELO_OK;
        }
    }
    relo__device_unlock(device);
    return st;
}

relo_status relo_release(relo_device *device, relo_handle handle)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(device);
    relo_status st = RELO_ERR_NOT_FOUND;
    relo_slot *slot = relo__handle_lookup(&device->handles, handle);
    if (slot) {
        if (--slot->refcount == 0) {
            relo_slice *slice = slot->slice;
            relo__handle_free(&device->handles, slot); /* its pins go with it */
            /* A source of the open pass stays until the pass closes (a copy
             * may be reading it), and counts as freed then. */
            if (!relo__pass_drop(device, slice)) {
                relo__stats_freed(relo__pool_stream(slice->page->pool), slice->size);
                relo__pool_slice_free(slice->page->pool, slice);
            }
        }
        st = RELO_OK;
    }
    relo__device_unlock(device);
    return st;
}

/* relo_resolve, and with pin relo_pin. */
static relo_status resolve(relo_stream *stream, relo_handle handle, bool pin, relo_binding *out)
{
    if (!stream || !out) return RELO_ERR_INVALID_ARGUMENT;
    relo_device *d = stream->device;
    relo__device_lock(d);
    relo_slot *slot = relo__handle_lookup(&d->handles, handle);
    /* A pin waits out another thread's move of the allocation, so the work
     * it enqueues never races the copy; a plain resolve skips the move,
     * unless it is a slide, whose copies overwrite the bytes where they are. */
    while (slot && (pin || relo__pass_is_slide(d, slot->slice)) && relo__pass_wait_for_move(d, slot->slice))
        slot = relo__handle_lookup(&d->handles, handle);
    relo_status st = RELO_ERR_NOT_FOUND;
    if (slot) {
        relo_slice *slice = slot->slice;
        relo_page *page = slice->page;
        st = pin && relo__slot_pins(slot) == UINT32_MAX ? RELO_ERR_INVALID_ARGUMENT : RELO_OK;
        if (st == RELO_OK && stream->capture.state == RELO_CAPTURE_RECORDING)
            st = relo__capture_touch(stream, page);
        if (st == RELO_OK && pin) st = relo__slot_pin(slot, 1);
        if (st == RELO_OK) {
            relo__pass_veto(d, slice);
            out->buffer = page->buffer;
            out->offset = slice->offset;
            out->size = slice->size;
            out->address = page->address ? page->address + slice->offset : 0;
            /* From now on resolves of the allocation need no lock, until it
             * moves or goes (not while it is a source of the open pass). */
            if (!slot->published) relo__handle_publish(&d->handles, slot->index);
        }
    }
    relo__device_unlock(d);
    return st;
}

relo_status relo_resolve(relo_stream *stream, relo_handle handle, relo_binding *out)
{
    /* Without the lock where the slot publishes its binding and the stream
     * does not record (a recording resolve notes the page under the lock). */
    if (stream && out && !atomic_load_explicit(&stream->capture.recording, memory_order_relaxed) &&
        relo__handle_resolve_fast(&stream->device->handles, handle, out))
        return RELO_OK;
    return resolve(stream, handle, false, out);
}

relo_status relo_pin(relo_stream *stream, relo_handle handle, relo_binding *out)
{
    /* Without the lock as relo_resolve, on the slot's count (mem/handle.h says
     * how a pass that opens meanwhile sees it). */
    if (stream && out && !atomic_load_explicit(&stream->capture.recording, memory_order_relaxed) &&
        relo__handle_pin_fast(&stream->device->handles, handle, out))
        return RELO_OK;
    return resolve(stream, handle, true, out);
}

relo_status relo_unpin(relo_device *device, relo_handle handle)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    if (relo__handle_unpin_fast(&device->handles, handle)) return RELO_OK;
    relo__device_lock(device);
    relo_status st = RELO_ERR_NOT_FOUND;
    relo_slot *slot = relo__handle_lookup(&device->handles, handle);
    if (slot) st = relo__slot_unpin(slot);
    relo__device_unlock(device);
    return st;
}

/* Shared checks of relo_write and relo_read; returns the slice on RELO_OK. */
static relo_status access_check(relo_device *d, relo_handle handle, uint64_t offset, const void *data,
                                uint64_t n, bool has_op, relo_slice **out)
{
    relo_slot *slot = relo__handle_lookup(&d->handles, handle);
    if (!slot) return RELO_ERR_NOT_FOUND;
    if (!data && n > 0) return RELO_ERR_INVALID_ARGUMENT;
    relo_slice *slice = slot->slice;
    if (offset > slice->size || n > slice->size - offset) return RELO_ERR_OUT_OF_RANGE;
    if (!has_op) return RELO_ERR_UNSUPPORTED;
    *out = slice;
    return RELO_OK;
}

/* relo_write (to_device) and relo_read: the checks under the lock, the
 * transfer without it. The page is marked as in transfer meanwhile, so it is
 * neither a relocation source nor given back. A transfer of an allocation
 * the open pass moves skips the move: the allocation stays where the
 * transfer reads or writes it, so the pass can never commit, free that
 * place and hand it to another allocation while the transfer runs. */
static relo_status transfer(relo_device *d, relo_handle handle, uint64_t offset, void *data, uint64_t n,
                            bool to_device)
{
    relo_backend *b = d->backend;
    relo__device_lock(d);
    relo_slice *slice = NULL;
    bool has_op = to_device ? b->ops.write != NULL : b->ops.read != NULL;
    relo_status st = access_check(d, handle, offset, data, n, has_op, &slice);
    /* A write waits out another thread's move of the allocation, as a pin;
     * a read waits out a slide, which overwrites the bytes it would read. */
    while (st == RELO_OK && (to_device || relo__pass_is_slide(d, slice)) &&
           relo__pass_wait_for_move(d, slice))
        st = access_check(d, handle, offset, data, n, has_op, &slice);
    if (st != RELO_OK || n == 0) {
        relo__device_unlock(d);
        return st;
    }
    relo_page *page = slice->page;
    void *buffer = page->buffer;
    uint64_t at = slice->offset + offset;
    relo__pass_veto(d, slice);
    page->transfers++;
    relo__device_unlock_quietly(d);
    st = to_device ? b->ops.write(b->ctx, buffer, at, data, n) : b->ops.read(b->ctx, buffer, at, data, n);
    relo__device_lock(d);
    page->transfers--;
    relo__device_unlock(d);
    return st;
}

relo_status relo_write(relo_device *device, relo_handle handle, uint64_t offset, const void *data, uint64_t n)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    return transfer(device, handle, offset, (void *)(uintptr_t)data, n, true);
}

relo_status relo_read(relo_device *device, relo_handle handle, uint64_t offset, void *data, uint64_t n)
{
    if (!device) return RELO_ERR_INVALID_ARGUMENT;
    return transfer(device, handle, offset, data, n, false);
}

relo_status relo_stream_set_finish(relo_stream *stream, relo_finish_fn fn, void *user)
{
    if (!stream) return RELO_ERR_INVALID_ARGUMENT;
    relo__device_lock(stream->device);
    stream->finish = fn;
    stream->finish_user = fn ? user : NULL;
    relo__device_unlock(stream->device);
    return RELO_OK;
}
