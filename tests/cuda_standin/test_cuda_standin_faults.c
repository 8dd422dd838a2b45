/*
 * test_cuda_standin_faults.c — the CUDA backend when the driver fails: each
 * driver call src/backend/cuda.c makes is made to fail once through the
 * stand-in's fault injection (tests/cuda_standin), and the backend must
 * report the right status, remember the CUresult, and leave nothing behind
 * (no range, no stream, no half-made backend). Only the stand-in can do
 * this, so these cases have no real-driver twin; test_cuda covers the paths
 * that work.
 */
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "cuda_standin.h"
#include "base/hostmem.h"
#include "relo.h"
#include "relo_cuda.h"
#include "testing/testing.h"

/* The relocation cases grow a stream's arena (1 MiB, then 10 MiB) and count
 * on the adaptive placement's outdated page; the default placement packs instead. */
static const relo_device_desc seed_placement = {.placement = RELO_PLACEMENT_ADAPTIVE};

#define MiB (UINT64_C(1) << 20)

typedef struct env {
    CUcontext ctx;
    CUstream stream;
} env;

static void env_open(env *e)
{
    memset(e, 0, sizeof *e);
    printf("driver: the CUDA stand-in (tests/cuda_standin, host memory), not a GPU\n");
    cuda_standin_reset();
    require_eq(cuInit(0), CUDA_SUCCESS);
    require_eq(cuDevicePrimaryCtxRetain(&e->ctx, 0), CUDA_SUCCESS);
    require_eq(cuCtxPushCurrent(e->ctx), CUDA_SUCCESS);
    require_eq(cuStreamCreate(&e->stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
}

static void env_close(env *e)
{
    expect_eq(cuStreamDestroy(e->stream), CUDA_SUCCESS);
    expect_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
    expect_eq(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    cuda_standin_reset();
}

/* Device bytes free now, as the driver counts them. */
static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    return cuMemGetInfo(&f, &t) == CUDA_SUCCESS ? f : 0;
}

static CUresult last_error(const relo_backend *b)
{
    CUresult r = CUDA_ERROR_UNKNOWN;
    return relo_backend_cuda_last_error(b, &r) == RELO_OK ? r : CUDA_ERROR_UNKNOWN;
}

/* True when this thread's current context is ctx, and only once pushed:
 * a failed op must not leave its push behind. */
static int current_is(CUcontext ctx)
{
    CUcontext cur = NULL, popped = NULL;
    if (cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != ctx) return 0;
    if (cuCtxPopCurrent(&popped) != CUDA_SUCCESS) return 0;
    CUcontext below = NULL;
    int ok = cuCtxGetCurrent(&below) == CUDA_SUCCESS && below == NULL;
    return cuCtxPushCurrent(popped) == CUDA_SUCCESS && ok;
}

CHECK_TEST(create_fails_cleanly_at_each_driver_call)
{
    env e;
    env_open(&e);
    static const char *const calls[] = {"cuCtxPushCurrent", "cuCtxGetDevice", "cuStreamCreate",
                                        "cuCtxPopCurrent"};
    size_t before = free_bytes(), streams = cuda_standin_streams();
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        cuda_standin_fail(calls[i], 0, CUDA_ERROR_UNKNOWN);
        relo_backend *b = NULL;
        expect_status(relo_backend_cuda_create(e.ctx, 0, NULL, &b), RELO_ERR_BACKEND);
        expect_true(b == NULL);
        /* A failed pop leaves its push; every other failure leaves none. */
        if (strcmp(calls[i], "cuCtxPopCurrent") == 0) require_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
        expect_true(current_is(e.ctx));
        /* The copy stream made before a failed pop goes again. */
        expect_eq(cuda_standin_streams(), streams);
        cuda_standin_reset();
    }
    expect_eq(free_bytes(), before);

    /* The memory query falls back to cuDeviceTotalMem; both failing fails. */
    cuda_standin_fail("cuMemGetInfo", 0, CUDA_ERROR_UNKNOWN);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    expect_eq(b->props.capacity, CUDA_STANDIN_DEFAULT_MEMORY);
    relo_backend_destroy(b);
    b = NULL;
    cuda_standin_fail("cuMemGetInfo", 0, CUDA_ERROR_UNKNOWN);
    cuda_standin_fail("cuDeviceTotalMem", 0, CUDA_ERROR_INVALID_DEVICE);
    expect_status(relo_backend_cuda_create(e.ctx, 0, NULL, &b), RELO_ERR_BACKEND);
    expect_true(b == NULL);
    env_close(&e);
}

CHECK_TEST(create_refuses_a_device_smaller_than_one_alignment)
{
    env e;
    env_open(&e);
    cuda_standin_set_memory(255);
    relo_backend *b = NULL;
    expect_status(relo_backend_cuda_create(e.ctx, 0, NULL, &b), RELO_ERR_BACKEND);
    expect_true(b == NULL);
    /* A device that says it has nothing: the fallback says so too. */
    cuda_standin_set_memory(0);
    expect_status(relo_backend_cuda_create(e.ctx, 0, NULL, &b), RELO_ERR_BACKEND);
    expect_true(b == NULL);
    cuda_standin_set_memory(256);
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    expect_eq(b->props.max_page_size, 256);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(create_without_host_memory_leaves_nothing)
{
    env e;
    env_open(&e);
    size_t streams = cuda_standin_streams();
    /* The first host allocation is the backend's own record, the second
     * relo's backend wrapper, made after the copy stream. */
    for (uint64_t n = 1; n <= 2; n++) {
        relo_backend *b = NULL;
        relo__testing_hostmem_fail_at(n, 0);
        expect_status(relo_backend_cuda_create(e.ctx, 0, NULL, &b), RELO_ERR_HOST_MEMORY);
        relo__testing_hostmem_fail_at(0, 0);
        expect_true(b == NULL);
        expect_eq(cuda_standin_streams(), streams);
        expect_true(current_is(e.ctx));
    }
    env_close(&e);
}

CHECK_TEST(alloc_and_free_report_and_leave_nothing)
{
    env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.ctx, 0, e.stream, &b));
    expect_eq(last_error(b), CUDA_SUCCESS);
    expect_status(relo_backend_cuda_last_error(b, NULL), RELO_ERR_INVALID_ARGUMENT);
    size_t before = free_bytes();
    void *x = NULL;
    uint64_t a = 0;
    expect_status(b->ops.alloc(b->ctx, 0, &x, &a), RELO_ERR_BACKEND);

    cuda_standin_fail("cuCtxPushCurrent", 0, CUDA_ERROR_INVALID_CONTEXT);
    expect_status(b->ops.alloc(b->ctx, 4096, &x, &a), RELO_ERR_BACKEND);
    expect_eq(last_error(b), CUDA_ERROR_INVALID_CONTEXT);

    cuda_standin_fail("cuMemAlloc", 0, CUDA_ERROR_OUT_OF_MEMORY);
    expect_status(b->ops.alloc(b->ctx, 4096, &x, &a), RELO_ERR_OUT_OF_MEMORY);
    cuda_standin_fail("cuMemAlloc", 0, CUDA_ERROR_UNKNOWN);
    expect_status(b->ops.alloc(b->ctx, 4096, &x, &a), RELO_ERR_BACKEND);
    expect_eq(last_error(b), CUDA_ERROR_UNKNOWN);

    /* Served, then the pop fails: the range must not leak. */
    cuda_standin_fail("cuCtxPopCurrent", 0, CUDA_ERROR_INVALID_CONTEXT);
    expect_status(b->ops.alloc(b->ctx, 4096, &x, &a), RELO_ERR_BACKEND);
    expect_true(x == NULL);
    expect_eq(free_bytes(), before);
    /* The failed pop left the push in place; take it off. */
    require_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
    expect_true(current_is(e.ctx));

    /* A free that cannot push leaks the range and says why. */
    require_ok(b->ops.alloc(b->ctx, 4096, &x, &a));
    cuda_standin_fail("cuCtxPushCurrent", 0, CUDA_ERROR_INVALID_CONTEXT);
    b->ops.free(b->ctx, x, 4096);
    expect_eq(free_bytes(), before - 4096);
    b->ops.free(b->ctx, x, 4096);
    expect_eq(free_bytes(), before);
    /* A refused free says why too. */
    cuda_standin_fail("cuMemFree", 0, CUDA_ERROR_INVALID_VALUE);
    require_ok(b->ops.alloc(b->ctx, 4096, &x, &a));
    b->ops.free(b->ctx, x, 4096);
    expect_eq(last_error(b), CUDA_ERROR_INVALID_VALUE);
    b->ops.free(b->ctx, x, 4096);
    relo_backend_destroy(b);
    /* A copy stream given stays the caller's. */
    expect_eq(cuStreamSynchronize(e.stream), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(transfers_report_each_failure)
{
    env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    void *x = NULL, *y = NULL;
    uint64_t ax = 0, ay = 0;
    require_ok(b->ops.alloc(b->ctx, 4096, &x, &ax));
    require_ok(b->ops.alloc(b->ctx, 4096, &y, &ay));
    unsigned char data[256];
    memset(data, 1, sizeof data);

    expect_ok(b->ops.write(b->ctx, x, 0, data, 0));
    expect_ok(b->ops.read(b->ctx, x, 0, data, 0));
    expect_ok(b->ops.copy(b->ctx, x, 0, y, 0, 0));
    expect_eq(cuda_standin_pending(), 0);

    static const struct {
        const char *call;
        int op; /* 0 write, 1 read, 2 copy, 3 wait_copies, 4 wait_device */
    } cases[] = {
        {"cuCtxPushCurrent", 0},    {"cuMemcpyHtoD", 0},      {"cuStreamSynchronize", 0},
        {"cuCtxPopCurrent", 0},     {"cuCtxPushCurrent", 1},  {"cuMemcpyDtoH", 1},
        {"cuCtxPushCurrent", 2},    {"cuMemcpyDtoDAsync", 2}, {"cuCtxPushCurrent", 3},
        {"cuStreamSynchronize", 3}, {"cuCtxPushCurrent", 4},  {"cuCtxSynchronize", 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cuda_standin_fail(cases[i].call, 0, CUDA_ERROR_LAUNCH_FAILED);
        relo_status s = RELO_OK;
        switch (cases[i].op) {
        case 0: s = b->ops.write(b->ctx, x, 16, data, sizeof data); break;
        case 1: s = b->ops.read(b->ctx, x, 16, data, sizeof data); break;
        case 2: s = b->ops.copy(b->ctx, x, 0, y, 0, 4096); break;
        case 3: s = b->ops.wait_copies(b->ctx); break;
        default: s = b->ops.wait_device(b->ctx); break;
        }
        if (s != RELO_ERR_BACKEND || last_error(b) != CUDA_ERROR_LAUNCH_FAILED)
            fprintf(stderr, "case %zu: %s failing\n", i, cases[i].call);
        expect_status(s, RELO_ERR_BACKEND);
        expect_eq(last_error(b), CUDA_ERROR_LAUNCH_FAILED);
        /* A failed pop leaves its push; every other failure leaves none. */
        if (strcmp(cases[i].call, "cuCtxPopCurrent") == 0) require_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
        expect_true(current_is(e.ctx));
        cuda_standin_reset();
    }
    expect_ok(b->ops.wait_device(b->ctx));
    b->ops.free(b->ctx, x, 4096);
    b->ops.free(b->ctx, y, 4096);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(streams_of_another_context_are_refused)
{
    env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    relo_device *d = NULL;
    require_ok(relo_device_create(&seed_placement, b, &d));

    CUcontext other = NULL;
    CUstream foreign = NULL;
    require_eq(cuDevicePrimaryCtxRetain(&other, 1), CUDA_SUCCESS);
    require_eq(cuCtxPushCurrent(other), CUDA_SUCCESS);
    require_eq(cuStreamCreate(&foreign, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    require_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);

    relo_stream *s = NULL;
    expect_status(relo_stream_create(d, foreign, &s), RELO_ERR_BACKEND);
    expect_true(s == NULL);
    cuda_standin_fail("cuStreamGetCtx", 0, CUDA_ERROR_INVALID_HANDLE);
    expect_status(relo_stream_create(d, e.stream, &s), RELO_ERR_BACKEND);
    expect_eq(last_error(b), CUDA_ERROR_INVALID_HANDLE);
    cuda_standin_fail("cuCtxPushCurrent", 0, CUDA_ERROR_INVALID_CONTEXT);
    expect_status(relo_stream_create(d, e.stream, &s), RELO_ERR_BACKEND);
    expect_true(current_is(e.ctx));
    /* The special handles are the current context's, which is ours. */
    require_ok(relo_stream_create(d, CU_STREAM_LEGACY, &s));
    require_ok(relo_stream_destroy(s));
    require_ok(relo_stream_create(d, e.stream, &s));
    require_ok(relo_stream_destroy(s));
    expect_ok(b->ops.stream_add(b->ctx, NULL));

    require_ok(relo_device_destroy(d));
    require_eq(cuCtxPushCurrent(other), CUDA_SUCCESS);
    require_eq(cuStreamDestroy(foreign), CUDA_SUCCESS);
    require_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
    require_eq(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(destroy_without_the_context_still_frees_the_backend)
{
    env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    /* The copy stream cannot be destroyed without the context: it is left
     * to the context, the backend's memory still goes (LeakSanitizer
     * checks the second). */
    size_t streams = cuda_standin_streams();
    cuda_standin_fail("cuCtxPushCurrent", 0, CUDA_ERROR_INVALID_CONTEXT);
    relo_backend_destroy(b);
    expect_true(current_is(e.ctx));
    expect_eq(cuda_standin_streams(), streams);
    /* With the context, the stream the backend made goes with it. */
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    expect_eq(cuda_standin_streams(), streams + 1);
    relo_backend_destroy(b);
    expect_eq(cuda_standin_streams(), streams);
    env_close(&e);
}

/* The relocation gives up when the device wait fails: nothing moves, the
 * bytes stay where they were, and the next reclaim moves them. */
CHECK_TEST(failed_device_wait_abandons_the_relocation)
{
    env e;
    env_open(&e);
    relo_backend *b = NULL;
    require_ok(relo_backend_cuda_create(e.ctx, 0, NULL, &b));
    relo_device *d = NULL;
    require_ok(relo_device_create(&seed_placement, b, &d));
    relo_stream *s = NULL;
    require_ok(relo_stream_create(d, e.stream, &s));
    relo_handle h, big;
    require_ok(relo_reserve(s, MiB, &h));
    relo_binding before;
    require_ok(relo_resolve(s, h, &before));
    require_eq(cuMemsetD8Async((CUdeviceptr)before.address, 8, MiB, e.stream), CUDA_SUCCESS);
    require_ok(relo_reserve(s, 10 * MiB, &big));

    cuda_standin_fail("cuCtxSynchronize", 0, CUDA_ERROR_LAUNCH_FAILED);
    relo_status st = relo_reclaim(s);
    expect_true(st == RELO_OK || st == RELO_ERR_BACKEND);
    relo_stats stats;
    require_ok(relo_device_stats(d, &stats));
    expect_eq(stats.allocations_moved, 0);
    relo_binding still;
    require_ok(relo_resolve(s, h, &still));
    expect_eq(still.address, before.address);

    require_ok(relo_reclaim(s));
    require_ok(relo_device_stats(d, &stats));
    expect_eq(stats.allocations_moved, 1);
    unsigned char back[64];
    require_ok(relo_read(d, h, MiB - sizeof back, back, sizeof back));
    for (size_t i = 0; i < sizeof back; i++) expect_eq(back[i], 8);

    require_ok(relo_release(d, h));
    require_ok(relo_release(d, big));
    require_ok(relo_stream_destroy(s));
    require_ok(relo_device_destroy(d));
    env_close(&e);
}

CHECK_MAIN()
