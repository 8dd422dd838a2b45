/*
 * threaded_runtime.c — the launch path of a multi-threaded runtime.
 *
 * Two launcher threads, each with its own stream, run "kernels" on their
 * allocations: pin the handle, use the binding (here the host backend's
 * buffers are host memory, so the kernel is a loop adding 1 to every
 * byte), unpin; as their batch grows they take ever larger scratch buffers,
 * which (under the adaptive placement) leaves their older pages outdated. A third thread keeps the device
 * tidy the way a runtime's housekeeping would: it reclaims every stream's
 * outdated pages, and every few rounds it drives a
 * relocation pass itself, copying the moves as a runtime would on its own
 * queue. relo moves allocations while the launchers work; a pinned binding
 * stays valid throughout, so no byte is lost or written twice. While its
 * pass is open it also runs relo_device_check, as a runtime's own tests
 * may anywhere: the checker accepts every state the API allows.
 *
 * At the end every byte must equal the number of kernels launched on its
 * allocation, read after a last device-wide reclaim, and something must
 * have moved; the program prints what moved while the launchers ran and in
 * all, and exits 1 otherwise.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <relo.h>
#include <relo_backend.h>

enum { LAUNCHERS = 2, BUFFERS = 8, KERNELS = 400, SIZE = 192 * 1024 };

typedef struct launcher {
    relo_device *device;
    relo_stream *stream;
    relo_handle buffers[BUFFERS];
    unsigned launched[BUFFERS];
} launcher;

static atomic_bool done;
static atomic_int passes_checked, corrupt;

/* The kernel: adds 1 to every byte of the allocation. */
static void kernel_add1(const relo_binding *b)
{
    uint8_t *p = (uint8_t *)b->buffer + b->offset;
    for (uint64_t i = 0; i < b->size; i++) p[i]++;
}

static void *launch_loop(void *arg)
{
    launcher *l = arg;
    relo_handle scratch = {0};
    for (unsigned k = 0; k < KERNELS; k++) {
        unsigned i = k % BUFFERS;
        if (k % 50 == 0) {
            /* The batch grows: a larger scratch buffer each time, so the
             * stream's pages grow and its older ones become outdated. */
            if (scratch.id) relo_release(l->device, scratch);
            if (relo_reserve(l->stream, (uint64_t)(k / 50 + 3) << 20, &scratch) != RELO_OK) scratch.id = 0;
        }
        relo_binding b;
        /* Pin, launch, unpin: the binding is valid until the unpin, even
         * while another thread relocates. */
        if (relo_pin(l->stream, l->buffers[i], &b) != RELO_OK) return NULL;
        kernel_add1(&b);
        relo_unpin(l->device, l->buffers[i]);
        l->launched[i]++;
    }
    if (scratch.id) relo_release(l->device, scratch);
    return NULL;
}

static void *housekeeping(void *arg)
{
    relo_device *device = arg;
    for (unsigned round = 0; !atomic_load(&done); round++) {
        if (round % 4 != 3) {
            relo_reclaim_device(device);
            continue;
        }
        /* A pass the runtime drives: copy each move on "its own queue". */
        relo_pass *pass;
        if (relo_pass_begin(device, NULL, &pass) != RELO_OK) continue;
        if (relo_device_check(device) != RELO_OK) atomic_fetch_add(&corrupt, 1);
        atomic_fetch_add(&passes_checked, 1);
        for (uint32_t i = 0; i < relo_pass_move_count(pass); i++) {
            relo_pass_move mv;
            relo_pass_move_get(pass, i, &mv);
            if (mv.state == RELO_MOVE_PENDING)
                memcpy((char *)mv.to.buffer + mv.to.offset, (char *)mv.from.buffer + mv.from.offset,
                       mv.from.size);
        }
        relo_pass_end(pass, RELO_PASS_LANDED);
    }
    return NULL;
}

int main(void)
{
    relo_backend *backend;
    relo_device *device;
    if (relo_backend_host_create(NULL, &backend) != RELO_OK) return 1;
    /* The adaptive placement: each growth starts a larger page and leaves the
     * older ones outdated, which is what the housekeeping thread moves. */
    relo_device_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.placement = RELO_PLACEMENT_ADAPTIVE;
    if (relo_device_create(&desc, backend, &device) != RELO_OK) return 1;

    launcher l[LAUNCHERS];
    memset(l, 0, sizeof l);
    for (int t = 0; t < LAUNCHERS; t++) {
        l[t].device = device;
        if (relo_stream_create(device, NULL, &l[t].stream) != RELO_OK) return 1;
        for (int i = 0; i < BUFFERS; i++) {
            uint8_t zero[SIZE] = {0};
            if (relo_reserve(l[t].stream, SIZE, &l[t].buffers[i]) != RELO_OK) return 1;
            relo_write(device, l[t].buffers[i], 0, zero, SIZE);
        }
    }
    pthread_t th[LAUNCHERS], keeper;
    pthread_create(&keeper, NULL, housekeeping, device);
    for (int t = 0; t < LAUNCHERS; t++) pthread_create(&th[t], NULL, launch_loop, &l[t]);
    for (int t = 0; t < LAUNCHERS; t++) pthread_join(th[t], NULL);
    atomic_store(&done, true);
    pthread_join(keeper, NULL);
    relo_stats during;
    relo_device_stats(device, &during);
    /* Whatever the housekeeping did not get to (on a busy machine the
     * launchers may finish first) moves now. */
    relo_reclaim_device(device);

    int bad = 0;
    static uint8_t bytes[SIZE];
    for (int t = 0; t < LAUNCHERS; t++) {
        for (int i = 0; i < BUFFERS; i++) {
            relo_read(device, l[t].buffers[i], 0, bytes, SIZE);
            for (int j = 0; j < SIZE; j++) bad += bytes[j] != (uint8_t)l[t].launched[i];
            relo_release(device, l[t].buffers[i]);
        }
        relo_stream_destroy(l[t].stream);
    }
    relo_stats st;
    relo_device_stats(device, &st);
    printf(
        "%d kernels on %d buffers from %d threads; %llu allocations moved while they ran, %llu in all; "
        "%d wrong bytes; %d open passes checked, %d found corrupt\n",
        LAUNCHERS * KERNELS, LAUNCHERS * BUFFERS, LAUNCHERS, (unsigned long long)during.allocations_moved,
        (unsigned long long)st.allocations_moved, bad, atomic_load(&passes_checked), atomic_load(&corrupt));
    relo_device_destroy(device);
    return bad || atomic_load(&corrupt) || st.allocations_moved == 0 ? 1 : 0;
}
