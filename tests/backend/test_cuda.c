/*
 * test_cuda.c — the CUDA backend on device 0's primary context: argument
 * checks (which need no driver), then properties, transfers, the
 * out-of-memory mapping, and relocation through the public API with device
 * work (memsets through binding addresses) on one and on two streams, on
 * the legacy default stream and on a stream relo was never told of.
 * Where cuInit fails (the stub libcuda of a build machine, no driver) or no
 * device exists, the device cases report SKIP.
 *
 * The same file is built twice: test_cuda links the real driver library,
 * test_cuda_standin (RELO_CUDA_STANDIN) the driver stand-in of
 * tests/cuda_standin, which runs queued work only when something waits for
 * it, so a wait the backend forgets shows as wrong bytes every time.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_cuda.h"
#include "round_trip.h"

typedef struct cu_env {
    CUdevice device;
    CUcontext context;
    CUstream streams[2];
} cu_env;

static void env_open(cu_env *e)
{
    memset(e, 0, sizeof *e);
#ifdef RELO_CUDA_STANDIN
    printf("driver: the CUDA stand-in (tests/cuda_standin, host memory), not a GPU\n");
#endif
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS) check_skip("cuInit failed: no CUDA driver");
    if (cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) check_skip("no CUDA device");
    if (cuDeviceGet(&e->device, 0) != CUDA_SUCCESS) check_skip("no CUDA device");
    if (cuDevicePrimaryCtxRetain(&e->context, e->device) != CUDA_SUCCESS)
        check_skip("cannot retain the primary context");
    if (cuCtxPushCurrent(e->context) != CUDA_SUCCESS) check_skip("cannot make the context current");
    for (int i = 0; i < 2; i++)
        if (cuStreamCreate(&e->streams[i], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
            check_skip("cannot create CUDA streams");
}

static void env_close(cu_env *e)
{
    for (int i = 0; i < 2; i++)
        if (e->streams[i]) cuStreamDestroy(e->streams[i]);
    CUcontext popped = NULL;
    cuCtxPopCurrent(&popped);
    cuDevicePrimaryCtxRelease(e->device);
}

/* A backend on e's context, a device over it with the adaptive placement (the
 * relocation cases grow a stream's arena, 1 MiB then 10 MiB, and count on
 * its outdated page; the default placement packs instead), f->s on s0 and,
 * where two is set, f->s2 on e's second stream. False, with the failing
 * step recorded, when any step fails. */
static bool dev_open(fx *f, cu_env *e, CUstream s0, bool two)
{
    memset(f, 0, sizeof *f);
    relo_status st = relo_backend_cuda_create(e->context, e->device, NULL, &f->backend);
    if (st == RELO_OK) st = relo_device_create(FX_ADAPTIVE, f->backend, &f->dev);
    if (st == RELO_OK) st = relo_stream_create(f->dev, s0, &f->s);
    if (st == RELO_OK && two) st = relo_stream_create(f->dev, e->streams[1], &f->s2);
    expect_ok(st);
    return st == RELO_OK;
}

/* Releases the n handles, destroys the streams and the device (each must
 * succeed), then closes the environment. */
static void dev_close(fx *f, cu_env *e, const relo_handle *h, int n)
{
    for (int i = 0; i < n; i++) expect_ok(relo_release(f->dev, h[i]));
    fx_close(f);
    env_close(e);
}

/* The relocation cases' scene: 1 MiB (h[0]) that device work on stream
 * `on` sets to v, not synchronised, then 10 MiB (h[1]) that outdates its
 * page, and a reclaim that must wait for the work before it moves the
 * 1 MiB. *before is h[0]'s binding before the move. */
static void memset_then_move(fx *f, CUstream on, unsigned char v, relo_handle h[2], relo_binding *before)
{
    memset(before, 0, sizeof *before);
    require_ok(relo_reserve(f->s, MiB, &h[0]));
    *before = fx_bind(f->s, h[0]);
    require_eq(cuMemsetD8Async((CUdeviceptr)before->address, v, MiB, on), CUDA_SUCCESS);
    require_ok(relo_reserve(f->s, 10 * MiB, &h[1]));
    require_ok(relo_reclaim(f->s));
    expect_eq(fx_dev_stats(f->dev).allocations_moved, 1);
    expect_true(fx_all_bytes(f->dev, h[0], v, MiB));
}

CHECK_TEST(create_checks_arguments)
{
    /* These need no driver: they fail before the first CUDA call. */
    relo_backend *b = NULL;
    expect_status(relo_backend_cuda_create(NULL, 0, NULL, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_true(b == NULL);
    relo_backend *h = NULL;
    require_ok(relo_backend_host_create(NULL, &h));
    CUresult code = CUDA_SUCCESS;
    expect_status(relo_backend_cuda_last_error(h, &code), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_cuda_last_error(NULL, &code), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(h);
}

CHECK_TEST(create_checks_the_device)
{
    cu_env e;
    env_open(&e);
    relo_backend *b = NULL;
    expect_status(relo_backend_cuda_create(e.context, e.device, NULL, NULL), RELO_ERR_INVALID_ARGUMENT);
    int count = 0;
    cuDeviceGetCount(&count);
    if (count > 1) {
        CUdevice other = 0;
        cuDeviceGet(&other, 1);
        expect_status(relo_backend_cuda_create(e.context, other, NULL, &b), RELO_ERR_INVALID_ARGUMENT);
    }
    env_close(&e);
}

CHECK_TEST(props_come_from_the_device)
{
    cu_env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.context, e.device, e.streams[0], &b));
    size_t total = 0;
    require_eq(cuDeviceTotalMem(&total, e.device), CUDA_SUCCESS);
    relo_backend_props p;
    require_ok(relo_backend_props_get(b, &p));
    expect_eq(p.alignment, 256);
    expect_eq(p.capacity, total);
    expect_le(p.max_page_size, total);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(ops_write_copy_read)
{
    cu_env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.context, e.device, NULL, &b));
    void *x = NULL, *y = NULL;
    uint64_t ax = 0, ay = 0;
    require_ok(b->ops.alloc(b->ctx, 4096, &x, &ax));
    require_ok(b->ops.alloc(b->ctx, 4096, &y, &ay));
    expect_eq(ax, (uint64_t)(uintptr_t)x);
    expect_eq(ax % 256, 0);
    expect_ne(ax, ay);

    round_trip_ops(b, x, y);
    expect_ok(b->ops.wait_device(b->ctx));
    b->ops.free(b->ctx, x, 4096);
    b->ops.free(b->ctx, y, 4096);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(refused_buffer_is_out_of_memory)
{
    cu_env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.context, e.device, NULL, &b));
    /* The whole device at once cannot be had: the context itself holds
     * some of it. */
    void *x = NULL;
    uint64_t a = 0;
    expect_status(b->ops.alloc(b->ctx, b->props.max_page_size, &x, &a), RELO_ERR_OUT_OF_MEMORY);
    CUresult code = CUDA_SUCCESS;
    require_ok(relo_backend_cuda_last_error(b, &code));
    expect_eq(code, CUDA_ERROR_OUT_OF_MEMORY);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(reclaim_moves_bytes_written_by_the_device)
{
    cu_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, e.streams[0], false));
    relo_handle h[2]; /* h, big */
    relo_binding before;
    memset_then_move(&f, e.streams[0], 7, h, &before);
    relo_stats st = fx_dev_stats(f.dev);
    expect_eq(st.pages, 1);
    expect_eq(st.bytes_reserved, 11 * MiB);
    expect_eq(st.outdated_pages, 0);

    relo_binding after = fx_bind(f.s, h[0]);
    expect_ne(after.address, before.address);
    expect_eq(after.address, (uint64_t)(uintptr_t)after.buffer + after.offset);
    require_eq(cuMemsetD8Async((CUdeviceptr)after.address, 9, MiB, e.streams[0]), CUDA_SUCCESS);
    require_eq(cuStreamSynchronize(e.streams[0]), CUDA_SUCCESS);
    expect_true(fx_all_bytes(f.dev, h[0], 9, MiB));
    dev_close(&f, &e, h, 2);
}

CHECK_TEST(two_streams_are_both_waited_for)
{
    cu_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, e.streams[0], true));
    relo_handle h[4]; /* a, b, bigA, bigB */
    require_ok(relo_reserve(f.s, MiB, &h[0]));
    require_ok(relo_reserve(f.s2, MiB, &h[1]));
    require_ok(relo_reserve(f.s, 10 * MiB, &h[2]));
    require_ok(relo_reserve(f.s2, 10 * MiB, &h[3]));
    for (int i = 0; i < 2; i++)
        require_eq(cuMemsetD8Async((CUdeviceptr)fx_bind(i ? f.s2 : f.s, h[i]).address, (unsigned char)(3 + i),
                                   MiB, e.streams[i]),
                   CUDA_SUCCESS);
    require_ok(relo_reclaim_device(f.dev)); /* both streams move */
    expect_eq(fx_dev_stats(f.dev).allocations_moved, 2);
    expect_eq(fx_dev_stats(f.dev).outdated_pages, 0);
    expect_true(fx_all_bytes(f.dev, h[0], 3, MiB));
    expect_true(fx_all_bytes(f.dev, h[1], 4, MiB));
    dev_close(&f, &e, h, 4);
}

/* Several threads call the backend's ops at once, as relo may when it
 * copies and waits outside its device lock: each allocates, writes, copies
 * on the shared copy stream, waits and reads back its own bytes. The
 * backend keeps no state but an atomic error code, and the driver is
 * thread-safe; under ThreadSanitizer this must show no race. */
typedef struct ops_worker {
    relo_backend *backend;
    unsigned char value;
    int wrong; /* round trips that failed or read wrong bytes */
} ops_worker;

static void *ops_work(void *arg)
{
    ops_worker *w = arg;
    relo_backend *b = w->backend;
    enum { SIZE = 64 * 1024 };
    static _Thread_local unsigned char data[SIZE], back[SIZE];
    for (int round = 0; round < 16; round++) {
        void *x = NULL, *y = NULL;
        uint64_t ax = 0, ay = 0;
        if (b->ops.alloc(b->ctx, SIZE, &x, &ax) != RELO_OK) {
            w->wrong++;
            continue;
        }
        if (b->ops.alloc(b->ctx, SIZE, &y, &ay) != RELO_OK) {
            b->ops.free(b->ctx, x, SIZE);
            w->wrong++;
            continue;
        }
        memset(data, w->value + round, SIZE);
        bool ok = b->ops.write(b->ctx, x, 0, data, SIZE) == RELO_OK &&
                  b->ops.copy(b->ctx, x, 0, y, 0, SIZE) == RELO_OK && b->ops.wait_copies(b->ctx) == RELO_OK &&
                  b->ops.read(b->ctx, y, 0, back, SIZE) == RELO_OK && memcmp(data, back, SIZE) == 0 &&
                  b->ops.wait_device(b->ctx) == RELO_OK;
        if (!ok) w->wrong++;
        b->ops.free(b->ctx, x, SIZE);
        b->ops.free(b->ctx, y, SIZE);
        /* A refusal in every round: threads record errors at once too. */
        void *z = NULL;
        uint64_t az = 0;
        if (b->ops.alloc(b->ctx, b->props.max_page_size, &z, &az) != RELO_ERR_OUT_OF_MEMORY) w->wrong++;
    }
    return NULL;
}

CHECK_TEST(ops_from_several_threads_at_once)
{
    cu_env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.context, e.device, NULL, &b));
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    ops_worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (ops_worker){b, (unsigned char)(16 * (i + 1)), 0};
        require_eq(pthread_create(&threads[i], NULL, ops_work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        expect_eq(workers[i].wrong, 0);
    }
    CUresult code = CUDA_SUCCESS;
    require_ok(relo_backend_cuda_last_error(b, &code));
    expect_eq(code, CUDA_ERROR_OUT_OF_MEMORY);
    relo_backend_destroy(b);
    env_close(&e);
}

/* The runtime's work on the legacy default stream: the relo stream holds
 * NULL, which relo never hands to the backend, and the backend's copy
 * stream is non-blocking, so only a wait for the whole context orders the
 * memset before the relocation copy. */
CHECK_TEST(legacy_stream_work_lands_before_relocation)
{
    cu_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, NULL, false));
    relo_handle h[2]; /* h, big */
    relo_binding before;
    memset_then_move(&f, NULL, 5, h, &before);
    expect_ne(fx_bind(f.s, h[0]).address, before.address);
    dev_close(&f, &e, h, 2);
}

/* Work on a stream the runtime never gave relo (streams[1]) writes an
 * allocation of a relo stream on streams[0]: relocation waits for it too. */
CHECK_TEST(unregistered_stream_work_lands_before_relocation)
{
    cu_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, e.streams[0], false));
    relo_handle h[2]; /* h, big */
    relo_binding before;
    memset_then_move(&f, e.streams[1], 6, h, &before);
    dev_close(&f, &e, h, 2);
}

CHECK_MAIN()
