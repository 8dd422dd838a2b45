/*
 * runtime_pass.c — a relocation pass the runtime drives, copying on its own
 * queue.
 *
 * relo_reclaim (basic.c) moves memory by itself: it waits for the whole
 * device and copies on the backend. A runtime with copy queues and events
 * of its own drives the pass instead, in a loop of bounded passes:
 *
 *   for (;;) {
 *       relo_pass_begin         plan at most MAX_MOVES moves; their targets
 *                               are reserved, nothing is copied yet
 *       no move planned?        relo_pass_end, and stop
 *       each move (relo_pass_move_get):
 *           PENDING             the runtime copies from -> to on its queue,
 *                               after the work that last wrote the source,
 *                               or vetoes the move (relo_pass_skip)
 *           SKIPPED, RELEASED   nothing to copy
 *       wait for the copies
 *       relo_pass_end           LANDED: the copies are done, the moves commit
 *                               ABANDONED: no copy runs, keep every source
 *                               UNKNOWN: copies may still run, keep both sides
 *   }
 *
 * A runtime that has no queue of its own to copy on calls relo_pass_copy
 * between begin and end instead, which copies the way relo_reclaim does and
 * says which outcome to hand to relo_pass_end.
 *
 * The workload is basic.c's: 32 small tensors on one stream of a device
 * with the defaults (the packed placement) over the host backend, every other
 * one released, which leaves every page half empty. The host backend's
 * buffers are host memory, so the runtime's "copy queue" here is memcpy; on
 * a GPU it would be cuMemcpyDtoDAsync, clEnqueueCopyBuffer or
 * vkCmdCopyBuffer followed by a wait on an event or fence.
 *
 * In the first pass tensor 0 is still in use by a kernel the runtime will
 * not wait for, so its move is vetoed. With --fail-copy the queue also
 * refuses a copy in the first pass, which is then abandoned; the passes
 * that follow move everything.
 *
 * After each pass the program checks that every moved tensor resolves to
 * its move's target and every other one to where it was; at the end, that
 * every byte is intact, that something moved and that pages went back. It
 * exits 1 otherwise (2 for a bad argument).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <relo.h>
#include <relo_backend.h>

enum { TENSORS = 32, TENSOR_BYTES = 16 * 1024, MAX_MOVES = 4, MAX_PASSES = 16 };

/* The runtime's record of a tensor: VMA's pUserData, the runtime's side. */
typedef struct tensor {
    relo_handle handle;
    int live;
    int busy; /* a kernel the runtime will not wait for still uses it */
} tensor;

/* The runtime's copy queue. refuse_next: the next copy is refused, as a
 * real queue may refuse one (out of command buffers, a lost context). */
typedef struct copy_queue {
    int refuse_next;
    unsigned copies;
} copy_queue;

static int failed(relo_status st, const char *what)
{
    if (st == RELO_OK) return 0;
    fprintf(stderr, "%s: %s (%s)\n", what, relo_status_name(st), relo_status_string(st));
    return 1;
}

/* Enqueues the copy of one move, ordered after the work that last wrote
 * the source (on a GPU: a wait on that work's event first). Returns 0, or
 * -1 when the queue refused it (nothing of it runs). */
static int queue_copy(copy_queue *q, const relo_binding *from, const relo_binding *to)
{
    if (q->refuse_next) {
        q->refuse_next = 0;
        return -1;
    }
    memcpy((unsigned char *)to->buffer + to->offset, (const unsigned char *)from->buffer + from->offset,
           (size_t)from->size);
    q->copies++;
    return 0;
}

/* Waits until every copy enqueued is done. Returns 0, or -1 when the wait
 * itself failed (a lost device, a timeout): copies may then still run.
 * memcpy is done when it returns, so here the wait always succeeds. */
static int queue_wait(copy_queue *q)
{
    (void)q;
    return 0;
}

/* Which of the runtime's tensors a move is about (-1: none). */
static int tensor_of(const tensor *t, relo_handle h)
{
    for (int i = 0; i < TENSORS; i++)
        if (t[i].live && t[i].handle.id == h.id) return i;
    return -1;
}

static int same_place(const relo_binding *a, const relo_binding *b)
{
    return a->buffer == b->buffer && a->offset == b->offset;
}

static void fill(unsigned char *bytes, int i)
{
    memset(bytes, 0x40 + i, TENSOR_BYTES);
}

/* One pass, begin to end. Returns the moves it planned (0: nothing left to
 * move), or -1 on an error or a wrong binding after the pass. */
static int one_pass(relo_device *dev, relo_stream *stream, tensor *t, copy_queue *q, int number)
{
    relo_pass_desc bounds = {stream, 0, MAX_MOVES}; /* this stream's memory, MAX_MOVES a pass */
    relo_pass *pass;
    if (failed(relo_pass_begin(dev, &bounds, &pass), "relo_pass_begin")) return -1;
    /* A pass takes whole pages, so it may plan a few more moves than
     * MAX_MOVES. */
    uint32_t n = relo_pass_move_count(pass);
    relo_pass_move *moves = n ? malloc(n * sizeof *moves) : NULL;
    if (n == 0 || !moves) {
        /* A pass with no move is still a pass: end it. Without host memory
         * for the list, nothing was copied: abandon it. */
        relo_pass_end(pass, n ? RELO_PASS_ABANDONED : RELO_PASS_LANDED);
        if (n == 0) printf("pass %d: nothing left to move\n", number);
        return n ? -1 : 0;
    }

    /* While the pass is open the runtime launches nothing that writes a
     * source, and takes a source's bytes from its move, not from
     * relo_resolve: a resolve, pin or write of a source on this thread
     * vetoes its move. */
    unsigned copied = 0, skipped = 0, released = 0;
    int refused = 0;
    for (uint32_t i = 0; i < n; i++) {
        relo_pass_move *mv = &moves[i];
        relo_pass_move_get(pass, i, mv); /* i < n: cannot fail */
        int k = tensor_of(t, mv->handle);
        if (mv->state == RELO_MOVE_RELEASED) {
            released++; /* released while the pass is open: nothing to copy */
            continue;
        }
        if (mv->state == RELO_MOVE_PENDING && k >= 0 && t[k].busy) {
            relo_pass_skip(pass, i); /* it stays where it is; its target is freed */
            mv->state = RELO_MOVE_SKIPPED;
            printf("  tensor %d is busy: move vetoed\n", k);
        }
        if (mv->state == RELO_MOVE_SKIPPED) {
            skipped++;
            continue;
        }
        /* After a refused copy the pass is abandoned (below): enqueue no
         * more. */
        if (refused || queue_copy(q, &mv->from, &mv->to) != 0) {
            if (!refused) printf("  the queue refused the copy of tensor %d\n", k);
            refused = 1;
            continue;
        }
        copied++;
    }

    /* The outcome: what relo may do with both sides of every move. */
    relo_pass_outcome outcome = RELO_PASS_LANDED;
    if (queue_wait(q) != 0) {
        /* Copies may still write the targets or read the sources: relo
         * then reuses neither side of any move (the bytes are counted as
         * leaked) and every handle keeps its source. */
        outcome = RELO_PASS_UNKNOWN;
    } else if (refused) {
        /* Every copy enqueued is done, but one move's copy never ran: keep
         * every source. (Skipping the moves not copied and ending LANDED
         * would commit those that were; abandoning is the simple choice.) */
        outcome = RELO_PASS_ABANDONED;
    }
    if (failed(relo_pass_end(pass, outcome), "relo_pass_end")) {
        free(moves);
        return -1;
    }
    printf("pass %d: %u moves planned, %u copied, %u vetoed, %u released -> %s\n", number, n, copied, skipped,
           released,
           outcome == RELO_PASS_LANDED      ? "LANDED"
           : outcome == RELO_PASS_ABANDONED ? "ABANDONED"
                                            : "UNKNOWN");

    /* What the handles say now: a move committed only if it was PENDING
     * and the pass LANDED. */
    for (uint32_t i = 0; i < n; i++) {
        int k = tensor_of(t, moves[i].handle);
        if (k < 0) continue;
        relo_binding now;
        int moved = moves[i].state == RELO_MOVE_PENDING && outcome == RELO_PASS_LANDED;
        if (failed(relo_resolve(stream, t[k].handle, &now), "relo_resolve") ||
            !same_place(&now, moved ? &moves[i].to : &moves[i].from)) {
            fprintf(stderr, "FAILED: tensor %d does not resolve to its %s\n", k, moved ? "target" : "source");
            free(moves);
            return -1;
        }
    }
    free(moves);
    return (int)n;
}

int main(int argc, char **argv)
{
    int fail_copy = argc == 2 && strcmp(argv[1], "--fail-copy") == 0;
    if (argc > 2 || (argc == 2 && !fail_copy)) {
        fprintf(stderr, "usage: %s [--fail-copy]\n", argv[0]);
        return 2;
    }
    relo_backend *backend;
    relo_device *dev;
    relo_stream *stream;
    if (failed(relo_backend_host_create(NULL, &backend), "backend")) return 1;
    if (failed(relo_device_create(NULL, backend, &dev), "device")) {
        relo_backend_destroy(backend);
        return 1;
    }
    if (failed(relo_stream_create(dev, NULL, &stream), "stream")) return 1;

    tensor t[TENSORS];
    unsigned char bytes[TENSOR_BYTES];
    for (int i = 0; i < TENSORS; i++) {
        if (failed(relo_reserve(stream, TENSOR_BYTES, &t[i].handle), "reserve")) return 1;
        fill(bytes, i);
        if (failed(relo_write(dev, t[i].handle, 0, bytes, TENSOR_BYTES), "write")) return 1;
        t[i].live = 1;
        t[i].busy = 0;
    }
    for (int i = 1; i < TENSORS; i += 2) {
        relo_release(dev, t[i].handle);
        t[i].live = 0;
    }
    relo_stats before;
    relo_device_stats(dev, &before);
    printf("%d tensors of %d B live on %llu pages, %llu B held\n", TENSORS / 2, TENSOR_BYTES,
           (unsigned long long)before.pages, (unsigned long long)before.bytes_reserved);

    /* The loop: passes until one plans nothing (bounded, in case a bug
     * kept planning). In the first, tensor 0 is busy, and with --fail-copy
     * the queue refuses a copy. */
    copy_queue q = {fail_copy, 0};
    t[0].busy = 1;
    int n = 1, passes = 0;
    while (n > 0 && passes < MAX_PASSES) {
        n = one_pass(dev, stream, t, &q, ++passes);
        t[0].busy = 0; /* its kernel is done by the next pass */
    }
    if (n < 0) return 1;
    if (n > 0) {
        fprintf(stderr, "FAILED: still moving after %d passes\n", MAX_PASSES);
        return 1;
    }
    relo_stats passed;
    relo_device_stats(dev, &passed);
    printf("after the passes: %llu pages, %llu B held\n", (unsigned long long)passed.pages,
           (unsigned long long)passed.bytes_reserved);

    /* Pages the passes emptied may stay cached for the reservations to
     * come, as empty pages do within the cache limit. At a
     * synchronization point the runtime gives every empty page back
     * (keep = 0); relo_trim moves nothing, so bindings stay valid. */
    uint64_t trimmed = 0;
    if (failed(relo_trim(dev, 0, &trimmed), "relo_trim")) return 1;
    printf("relo_trim: %llu B given back\n", (unsigned long long)trimmed);

    relo_stats after;
    relo_device_stats(dev, &after);
    uint64_t moved = after.allocations_moved - before.allocations_moved;
    uint64_t pages_back = after.pages_released - before.pages_released;
    printf(
        "%llu tensors moved, %u copies made, %llu abandoned pass(es); %llu pages given back (%llu B): "
        "%llu pages, %llu B held\n",
        (unsigned long long)moved, q.copies,
        (unsigned long long)(after.relocations_abandoned - before.relocations_abandoned),
        (unsigned long long)pages_back, (unsigned long long)(before.bytes_reserved - after.bytes_reserved),
        (unsigned long long)after.pages, (unsigned long long)after.bytes_reserved);

    int ok = 1;
    for (int i = 0; i < TENSORS; i += 2) {
        unsigned char want[TENSOR_BYTES];
        fill(want, i);
        if (failed(relo_read(dev, t[i].handle, 0, bytes, TENSOR_BYTES), "read")) return 1;
        if (memcmp(bytes, want, TENSOR_BYTES) != 0) {
            fprintf(stderr, "FAILED: tensor %d: bytes changed\n", i);
            ok = 0;
        }
    }
    if (moved == 0 || pages_back == 0) {
        fprintf(stderr, "FAILED: %s\n", moved == 0 ? "nothing moved" : "no page went back");
        ok = 0;
    }
    if (failed(relo_device_check(dev), "relo_device_check")) ok = 0;
    if (ok) printf("the bytes of every tensor are intact\n");

    for (int i = 0; i < TENSORS; i += 2) relo_release(dev, t[i].handle);
    relo_stream_destroy(stream);
    if (failed(relo_device_destroy(dev), "destroy")) return 1;
    return ok ? 0 : 1;
}
