/*
 * basic.c — relo in one page: a runtime holds handles, not addresses, so
 * relo can move live allocations and give the pages they leave back.
 *
 * A device with the default settings (the packed placement) over the host
 * backend, whose buffers are host memory, and one stream. The program
 * reserves 32 small tensors; relo carves them from shared pages, several
 * to a page. Releasing every other tensor leaves every page half empty. A
 * caching allocator that never moves a live block would keep all those
 * pages until the last tensor on each is released; relo_reclaim moves the
 * tensors of the sparsest pages into the free room of the others instead,
 * and the pages that empties go back to the device.
 *
 * It shows, in order: a handle, its binding (where its bytes are), the
 * reclaim that moves it, and the binding after the move; then what moved
 * and what went back. It exits 1 if nothing moved, if the tensor followed
 * did not move, if no page went back, or if any byte changed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <relo.h>
#include <relo_backend.h>

enum { TENSORS = 32, TENSOR_BYTES = 16 * 1024 };

static int failed(relo_status st, const char *what)
{
    if (st == RELO_OK) return 0;
    fprintf(stderr, "%s: %s (%s)\n", what, relo_status_name(st), relo_status_string(st));
    return 1;
}

/* The pages seen when the tensors were placed, so that a binding can be
 * printed as "page N" rather than as a host pointer that changes from run
 * to run. Returns the page's number (remembering a new one if asked), or
 * -1 for a page not seen before. */
static const void *pages_seen[TENSORS];
static int page_count;

static int page_number(const void *buffer, int remember)
{
    for (int i = 0; i < page_count; i++)
        if (pages_seen[i] == buffer) return i;
    if (!remember || page_count == TENSORS) return -1;
    pages_seen[page_count] = buffer;
    return page_count++;
}

/* Tensor i's contents: every byte says which tensor it belongs to. */
static void fill(unsigned char *bytes, int i)
{
    memset(bytes, 0x40 + i, TENSOR_BYTES);
}

int main(void)
{
    relo_backend *backend;
    relo_device *dev;
    relo_stream *stream;
    if (failed(relo_backend_host_create(NULL, &backend), "backend")) return 1;
    /* NULL desc: every setting at its default, the packed placement included. */
    if (failed(relo_device_create(NULL, backend, &dev), "device")) {
        relo_backend_destroy(backend); /* still ours when the device was not made */
        return 1;
    }
    if (failed(relo_stream_create(dev, NULL, &stream), "stream")) return 1;
    relo_device_desc desc;
    relo_device_desc_get(dev, &desc);
    printf("device: host backend, placement %s (the default)\n", relo_placement_name(desc.placement));

    /* 1. Handles. Each tensor is reserved on the stream and written. */
    relo_handle t[TENSORS];
    unsigned char bytes[TENSOR_BYTES];
    for (int i = 0; i < TENSORS; i++) {
        if (failed(relo_reserve(stream, TENSOR_BYTES, &t[i]), "reserve")) return 1;
        fill(bytes, i);
        if (failed(relo_write(dev, t[i], 0, bytes, TENSOR_BYTES), "write")) return 1;
        relo_binding b;
        if (failed(relo_resolve(stream, t[i], &b), "resolve")) return 1;
        page_number(b.buffer, 1);
    }
    relo_stats before;
    relo_device_stats(dev, &before);
    printf("%d tensors of %d B reserved: %llu pages, %llu B held\n", TENSORS, TENSOR_BYTES,
           (unsigned long long)before.pages, (unsigned long long)before.bytes_reserved);

    /* 2. A binding: where tensor 0's bytes are right now. A runtime resolves
     *    right before each launch and passes buffer + offset (or address) to
     *    the kernel; the binding is good until the next call that may move
     *    memory (relo_reserve, relo_reclaim, ...). */
    relo_binding was;
    if (failed(relo_resolve(stream, t[0], &was), "resolve")) return 1;
    printf("tensor 0: handle 0x%016llx resolves to page %d, offset %llu\n", (unsigned long long)t[0].id,
           page_number(was.buffer, 0), (unsigned long long)was.offset);

    /* Every other tensor is released: each page keeps half of its tensors,
     * so no page is empty and none can go back without moving something. */
    for (int i = 1; i < TENSORS; i += 2) relo_release(dev, t[i]);
    relo_stats mid;
    relo_device_stats(dev, &mid);
    printf("every other tensor released: %llu B live on %llu pages, %llu B held\n",
           (unsigned long long)mid.bytes_in_use, (unsigned long long)mid.pages,
           (unsigned long long)mid.bytes_reserved);

    /* 3. The reclaim that moves: the sparsest pages' tensors are copied into
     *    the room of the others, and the emptied pages go back. Handles do
     *    not change; bindings resolved before this call are stale.
     *    (relo_reclaim_device does the same for every stream.) */
    if (failed(relo_reclaim(stream), "reclaim")) return 1;
    relo_stats after;
    relo_device_stats(dev, &after);
    uint64_t moved = after.allocations_moved - mid.allocations_moved;
    uint64_t pages_back = after.pages_released - mid.pages_released;
    printf(
        "relo_reclaim: %llu tensors moved (%llu B copied), %llu pages given back (%llu B): "
        "%llu pages, %llu B held\n",
        (unsigned long long)moved, (unsigned long long)(after.bytes_moved - mid.bytes_moved),
        (unsigned long long)pages_back, (unsigned long long)(mid.bytes_reserved - after.bytes_reserved),
        (unsigned long long)after.pages, (unsigned long long)after.bytes_reserved);

    /* 4. The binding after the move: the same handle, somewhere else. */
    relo_binding now;
    if (failed(relo_resolve(stream, t[0], &now), "resolve")) return 1;
    int now_page = page_number(now.buffer, 0);
    if (now_page >= 0)
        printf("tensor 0: the same handle now resolves to page %d, offset %llu\n", now_page,
               (unsigned long long)now.offset);
    else
        printf("tensor 0: the same handle now resolves to a new page, offset %llu\n",
               (unsigned long long)now.offset);

    /* Every tensor left, moved or not, still holds its own bytes. */
    int lost = 0;
    for (int i = 0; i < TENSORS; i += 2) {
        unsigned char want[TENSOR_BYTES];
        fill(want, i);
        if (failed(relo_read(dev, t[i], 0, bytes, TENSOR_BYTES), "read")) return 1;
        if (memcmp(bytes, want, TENSOR_BYTES) != 0) {
            fprintf(stderr, "tensor %d: bytes changed\n", i);
            lost++;
        }
    }
    int ok = 1;
    if (moved == 0 || (now.buffer == was.buffer && now.offset == was.offset)) {
        fprintf(stderr, "FAILED: %s\n", moved ? "tensor 0 did not move" : "nothing moved");
        ok = 0;
    }
    if (pages_back == 0) {
        fprintf(stderr, "FAILED: no page went back\n");
        ok = 0;
    }
    if (lost)
        ok = 0;
    else
        printf("the bytes of every tensor left are intact\n");

    for (int i = 0; i < TENSORS; i += 2) relo_release(dev, t[i]);
    relo_stream_destroy(stream);
    if (failed(relo_device_destroy(dev), "destroy")) return 1; /* RELO_ERR_BUSY if anything were live */
    return ok ? 0 : 1;
}
