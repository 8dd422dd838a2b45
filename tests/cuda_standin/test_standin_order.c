/*
 * test_standin_order.c — the CUDA driver stand-in's own behaviour, checked
 * on its own (no relo): work runs only when waited for; the legacy default
 * stream orders itself with blocking streams both ways and not with
 * non-blocking ones; cuMemcpyHtoD lands after it returns; events, queries,
 * context synchronize, capture and graphs, illegal addresses, memory
 * accounting and fault injection. relo's CUDA tests trust these rules, so
 * each is shown here with both outcomes where there are two.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "cuda_standin.h"

#define N 4096u
#define FRESH 0xCA /* what a fresh range holds (cuda_standin.c) */

typedef struct env {
    CUcontext ctx;
    CUdeviceptr a, b;
} env;

static void env_open(env *e)
{
    memset(e, 0, sizeof *e);
    cuda_standin_reset();
    require_eq(cuInit(0), CUDA_SUCCESS);
    require_eq(cuDevicePrimaryCtxRetain(&e->ctx, 0), CUDA_SUCCESS);
    require_eq(cuCtxPushCurrent(e->ctx), CUDA_SUCCESS);
    require_eq(cuMemAlloc(&e->a, N), CUDA_SUCCESS);
    require_eq(cuMemAlloc(&e->b, N), CUDA_SUCCESS);
}

static void env_close(env *e)
{
    expect_eq(cuMemFree(e->a), CUDA_SUCCESS);
    expect_eq(cuMemFree(e->b), CUDA_SUCCESS);
    CUcontext popped = NULL;
    expect_eq(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    expect_true(popped == e->ctx);
    expect_eq(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    cuda_standin_reset();
}

/* The byte at p (read through the legacy stream, which waits as it must). */
static int byte_at(CUdeviceptr p)
{
    unsigned char v = 0;
    if (cuMemcpyDtoH(&v, p, 1) != CUDA_SUCCESS) return -1;
    return v;
}

/* Starting from fresh bytes in a and b, sets a on `first`, then copies a
 * to b on `second`, waits for `second` only, and says what b got. */
static int copy_after(env *e, CUstream first, CUstream second)
{
    if (cuMemsetD8Async(e->a, FRESH, N, NULL) != CUDA_SUCCESS ||
        cuMemsetD8Async(e->b, FRESH, N, NULL) != CUDA_SUCCESS || cuCtxSynchronize() != CUDA_SUCCESS)
        return -1;
    if (cuMemsetD8Async(e->a, 0x11, N, first) != CUDA_SUCCESS) return -1;
    if (cuMemcpyDtoDAsync(e->b, e->a, N, second) != CUDA_SUCCESS) return -1;
    if (cuStreamSynchronize(second) != CUDA_SUCCESS) return -1;
    int v = byte_at(e->b);
    if (cuCtxSynchronize() != CUDA_SUCCESS) return -1;
    return v;
}

CHECK_TEST(work_runs_only_when_waited_for)
{
    env e;
    env_open(&e);
    CUstream s;
    require_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    require_eq(cuMemsetD8Async(e.a, 3, N, s), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 1);
    /* A query reports the work not done, and lets it run. */
    expect_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    expect_eq(cuda_standin_pending(), 0);
    expect_eq(cuStreamQuery(s), CUDA_SUCCESS);
    expect_eq(byte_at(e.a), 3);
    require_eq(cuStreamDestroy(s), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(legacy_and_blocking_streams_order_each_other)
{
    env e;
    env_open(&e);
    CUstream blocking, nonblocking;
    require_eq(cuStreamCreate(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    require_eq(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    /* legacy → blocking and blocking → legacy: ordered. */
    expect_eq(copy_after(&e, NULL, blocking), 0x11);
    expect_eq(copy_after(&e, blocking, CU_STREAM_LEGACY), 0x11);
    /* legacy → non-blocking and non-blocking → legacy: not ordered, so
     * the copy reads a before the memset lands. */
    expect_eq(copy_after(&e, NULL, nonblocking), FRESH);
    expect_eq(copy_after(&e, nonblocking, NULL), FRESH);
    /* Two non-blocking streams: not ordered either. */
    CUstream other;
    require_eq(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    expect_eq(copy_after(&e, other, nonblocking), FRESH);
    require_eq(cuStreamDestroy(other), CUDA_SUCCESS);
    require_eq(cuStreamDestroy(blocking), CUDA_SUCCESS);
    require_eq(cuStreamDestroy(nonblocking), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(host_to_device_copy_lands_after_it_returns)
{
    env e;
    env_open(&e);
    CUstream s;
    require_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    unsigned char data[N];
    memset(data, 0x22, sizeof data);
    require_eq(cuMemcpyHtoD(e.a, data, sizeof data), CUDA_SUCCESS);
    memset(data, 0, sizeof data); /* staged: the source may change now */
    expect_eq(cuda_standin_pending(), 1);
    require_eq(cuMemcpyDtoDAsync(e.b, e.a, N, s), CUDA_SUCCESS);
    require_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
    expect_eq(byte_at(e.b), FRESH);
    /* The legacy stream's synchronize is what waits for it. */
    require_eq(cuMemcpyHtoD(e.a, (unsigned char[1]){0x33}, 1), CUDA_SUCCESS);
    require_eq(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 0);
    require_eq(cuMemcpyDtoDAsync(e.b, e.a, N, s), CUDA_SUCCESS);
    require_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
    expect_eq(byte_at(e.b), 0x33);
    expect_eq(byte_at(e.b + 1), 0x22);
    require_eq(cuStreamDestroy(s), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(context_synchronize_finishes_every_stream)
{
    env e;
    env_open(&e);
    CUstream s1, s2;
    require_eq(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    require_eq(cuStreamCreate(&s2, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    require_eq(cuMemsetD8Async(e.a, 1, 16, s1), CUDA_SUCCESS);
    require_eq(cuMemsetD8Async(e.a + 16, 2, 16, s2), CUDA_SUCCESS);
    require_eq(cuMemsetD8Async(e.a + 32, 3, 16, NULL), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 3);
    require_eq(cuCtxSynchronize(), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 0);
    require_eq(cuMemsetD8Async(e.b, 9, N, s1), CUDA_SUCCESS);
    /* Another stream's synchronize leaves s1's work queued. */
    require_eq(cuStreamSynchronize(s2), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 1);
    require_eq(cuStreamDestroy(s1), CUDA_SUCCESS); /* runs it first */
    expect_eq(cuda_standin_pending(), 0);
    expect_eq(byte_at(e.b), 9);
    require_eq(cuStreamDestroy(s2), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(events_order_streams)
{
    env e;
    env_open(&e);
    CUstream s1, s2;
    CUevent ev;
    require_eq(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    require_eq(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    require_eq(cuEventCreate(&ev, 0), CUDA_SUCCESS);
    expect_eq(cuEventQuery(ev), CUDA_SUCCESS);              /* never recorded */
    require_eq(cuStreamWaitEvent(s2, ev, 0), CUDA_SUCCESS); /* nothing to wait for */
    expect_eq(cuda_standin_pending(), 0);

    require_eq(cuMemsetD8Async(e.a, 0x44, N, s1), CUDA_SUCCESS);
    require_eq(cuEventRecord(ev, s1), CUDA_SUCCESS);
    require_eq(cuStreamWaitEvent(s2, ev, 0), CUDA_SUCCESS);
    require_eq(cuMemcpyDtoDAsync(e.b, e.a, N, s2), CUDA_SUCCESS);
    require_eq(cuStreamSynchronize(s2), CUDA_SUCCESS);
    expect_eq(byte_at(e.b), 0x44);

    require_eq(cuMemsetD8Async(e.a, 0x55, N, s1), CUDA_SUCCESS);
    require_eq(cuEventRecord(ev, s1), CUDA_SUCCESS);
    expect_eq(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
    expect_eq(cuEventQuery(ev), CUDA_SUCCESS);
    require_eq(cuMemsetD8Async(e.a, 0x66, N, s1), CUDA_SUCCESS);
    require_eq(cuEventRecord(ev, s1), CUDA_SUCCESS);
    require_eq(cuEventSynchronize(ev), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 0);
    expect_eq(byte_at(e.a), 0x66);
    require_eq(cuEventDestroy(ev), CUDA_SUCCESS);
    require_eq(cuStreamDestroy(s1), CUDA_SUCCESS);
    require_eq(cuStreamDestroy(s2), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(capture_records_and_graphs_replay)
{
    env e;
    env_open(&e);
    CUstream s;
    require_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    expect_eq(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

    /* A wait inside a capture ends it badly. */
    require_eq(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    expect_eq(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    expect_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    expect_true(g == NULL);
    expect_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);

    require_eq(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    require_eq(cuMemsetD8Async(e.a, 0x77, N, s), CUDA_SUCCESS);
    require_eq(cuMemcpyDtoDAsync(e.b, e.a, N, s), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 0); /* recorded, not run */
    require_eq(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    expect_eq(byte_at(e.b), FRESH);
    CUgraphExec x;
    require_eq(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
    require_eq(cuGraphLaunch(x, s), CUDA_SUCCESS);
    expect_eq(cuda_standin_pending(), 2);
    require_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
    expect_eq(byte_at(e.b), 0x77);

    /* Baked-in addresses: after the range goes, a launch is an illegal
     * address when it runs, and the context keeps the error. */
    require_eq(cuMemFree(e.b), CUDA_SUCCESS);
    require_eq(cuGraphLaunch(x, s), CUDA_SUCCESS);
    expect_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    expect_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    require_eq(cuMemAlloc(&e.b, N), CUDA_SUCCESS);
    require_eq(cuGraphExecDestroy(x), CUDA_SUCCESS);
    require_eq(cuGraphDestroy(g), CUDA_SUCCESS);
    require_eq(cuStreamDestroy(s), CUDA_SUCCESS);
    env_close(&e); /* the last release ends the context and its error */
}

CHECK_TEST(legacy_stream_cannot_join_a_capturing_blocking_stream)
{
    env e;
    env_open(&e);
    CUstream s;
    require_eq(cuStreamCreate(&s, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    require_eq(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    expect_eq(cuMemsetD8Async(e.a, 1, N, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CUgraph g = NULL;
    expect_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    require_eq(cuStreamDestroy(s), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(ranges_are_checked)
{
    env e;
    env_open(&e);
    expect_eq(cuMemsetD8Async(e.a + 1, 0, N, NULL), CUDA_ERROR_INVALID_VALUE);
    expect_eq(cuMemcpyDtoDAsync(e.b, e.a, N + 1, NULL), CUDA_ERROR_INVALID_VALUE);
    expect_eq(cuMemFree(e.a + 256), CUDA_ERROR_INVALID_VALUE);
    expect_eq(cuMemsetD8Async(e.a, 0, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    expect_eq(cuMemsetD8Async(e.a, 0, N, CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_SUPPORTED);
    expect_eq(cuStreamSynchronize((CUstream)&e), CUDA_ERROR_INVALID_HANDLE);
    expect_eq(cuCtxSynchronize(), CUDA_SUCCESS);
    env_close(&e);
}

CHECK_TEST(memory_is_counted)
{
    env e;
    env_open(&e);
    size_t free_bytes = 0, total = 0;
    require_eq(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
    expect_eq(total, CUDA_STANDIN_DEFAULT_MEMORY);
    expect_eq(free_bytes, total - CUDA_STANDIN_CONTEXT_BYTES - 2 * N);
    size_t dev_total = 0;
    require_eq(cuDeviceTotalMem(&dev_total, 0), CUDA_SUCCESS);
    expect_eq(dev_total, total);
    CUdeviceptr p = 0;
    expect_eq(cuMemAlloc(&p, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    require_eq(cuMemAlloc(&p, 1), CUDA_SUCCESS);
    expect_eq(p % 256, 0);
    size_t after = 0;
    require_eq(cuMemGetInfo(&after, &total), CUDA_SUCCESS);
    expect_eq(after, free_bytes - 256);
    require_eq(cuMemFree(p), CUDA_SUCCESS);
    cuda_standin_set_memory(1 << 20);
    require_eq(cuDeviceTotalMem(&dev_total, 0), CUDA_SUCCESS);
    expect_eq(dev_total, 1 << 20);
    env_close(&e);
}

CHECK_TEST(contexts_are_current_per_thread_stack)
{
    env e;
    env_open(&e);
    CUcontext other = NULL, cur = NULL;
    CUdevice dev = -1;
    require_eq(cuDevicePrimaryCtxRetain(&other, 1), CUDA_SUCCESS);
    expect_true(other != e.ctx);
    require_eq(cuCtxPushCurrent(other), CUDA_SUCCESS);
    require_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    expect_true(cur == other);
    require_eq(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    expect_eq(dev, 1);
    CUstream s;
    require_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUcontext sctx = NULL;
    require_eq(cuStreamGetCtx(s, &sctx), CUDA_SUCCESS);
    expect_true(sctx == other);
    /* Device 0's ranges are not device 1's. */
    expect_eq(cuMemsetD8Async(e.a, 0, N, s), CUDA_ERROR_INVALID_VALUE);
    require_eq(cuStreamDestroy(s), CUDA_SUCCESS);
    require_eq(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
    require_eq(cuStreamGetCtx(CU_STREAM_LEGACY, &sctx), CUDA_SUCCESS);
    expect_true(sctx == e.ctx);
    require_eq(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
    expect_eq(cuCtxPushCurrent(other), CUDA_ERROR_INVALID_CONTEXT);
    expect_eq(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
    CUdevice d = 0;
    expect_eq(cuDeviceGet(&d, CUDA_STANDIN_DEVICES), CUDA_ERROR_INVALID_DEVICE);
    env_close(&e);
    expect_eq(cuCtxPopCurrent(NULL), CUDA_ERROR_INVALID_CONTEXT);
    expect_eq(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
}

CHECK_TEST(faults_fire_once_after_the_calls_given)
{
    env e;
    env_open(&e);
    cuda_standin_fail("cuMemAlloc", 1, CUDA_ERROR_UNKNOWN);
    CUdeviceptr p = 0, q = 0;
    require_eq(cuMemAlloc(&p, 64), CUDA_SUCCESS);
    expect_eq(cuMemAlloc(&q, 64), CUDA_ERROR_UNKNOWN);
    require_eq(cuMemAlloc(&q, 64), CUDA_SUCCESS);
    require_eq(cuMemFree(p), CUDA_SUCCESS);
    require_eq(cuMemFree(q), CUDA_SUCCESS);
    const char *name = NULL;
    require_eq(cuGetErrorName(CUDA_ERROR_UNKNOWN, &name), CUDA_SUCCESS);
    expect_eq(strcmp(name, "CUDA_ERROR_UNKNOWN"), 0);
    env_close(&e);
}

CHECK_MAIN()
