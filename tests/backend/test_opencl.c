/*
 * test_opencl.c — the OpenCL backend on the first OpenCL device found:
 * first its ops directly (properties, transfers, error mapping, queue
 * registration), then the relocation and capture cases that move bytes
 * (device_cases.h) through the public API, a kernel that reads and
 * writes through a binding before and after a relocation, and two command
 * queues as two streams. Without a platform or device every case is SKIP.
 *
 * The relocation behaviours and the kernel case are written once for every
 * real device in device_cases.h; this file gives them the OpenCL
 * environment. OpenCL has no fault injection, so the cases of a refused
 * copy, a failed wait, the count of waits and the slides wrap the OpenCL backend's ops (wrap_backend.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "device_cases.h"
#include "fixture.h"
#include "relo.h"
#include "relo_opencl.h"
#include "round_trip.h"
#include "testing/testing.h"
#include "wrap_backend.h"

/* ------------------------------------------------------------------------ */
/* OpenCL environment                                                       */
/* ------------------------------------------------------------------------ */

typedef struct cl_env {
    cl_device_id device;
    cl_context context;
    cl_command_queue copy_queue;
    cl_command_queue queues[2]; /* two runtime queues, for two streams */
    cl_program prog;            /* the add1 program, where built */
    cl_kernel kernels[2];       /* add1, one per queue, where made */
} cl_env;

static void env_close(void *env);

/* Opens the first device of the first platform that has one, or ends the
 * case as skipped (with nothing left open). */
static void env_open(cl_env *e)
{
    memset(e, 0, sizeof *e);
    cl_uint nplat = 0;
    if (clGetPlatformIDs(0, NULL, &nplat) != CL_SUCCESS || nplat == 0) check_skip("no OpenCL platform");
    cl_platform_id plats[16];
    if (nplat > 16) nplat = 16;
    if (clGetPlatformIDs(nplat, plats, NULL) != CL_SUCCESS) check_skip("no OpenCL platform");
    for (cl_uint i = 0; i < nplat && !e->device; i++) {
        cl_uint ndev = 0;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &e->device, &ndev) != CL_SUCCESS)
            e->device = NULL;
    }
    if (!e->device) check_skip("no OpenCL device");
    cl_int err = CL_SUCCESS;
    e->context = clCreateContext(NULL, 1, &e->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) check_skip("cannot create an OpenCL context");
    e->copy_queue = clCreateCommandQueue(e->context, e->device, 0, &err);
    if (err == CL_SUCCESS) e->queues[0] = clCreateCommandQueue(e->context, e->device, 0, &err);
    if (err == CL_SUCCESS) e->queues[1] = clCreateCommandQueue(e->context, e->device, 0, &err);
    if (err != CL_SUCCESS) {
        env_close(e);
        check_skip("cannot create OpenCL queues");
    }
}

/* Releases whatever env (a cl_env, void * as dc_env calls it) holds. */
static void env_close(void *env)
{
    cl_env *e = env;
    for (int i = 0; i < 2; i++)
        if (e->kernels[i]) clReleaseKernel(e->kernels[i]);
    if (e->prog) clReleaseProgram(e->prog);
    for (int i = 0; i < 2; i++)
        if (e->queues[i]) clReleaseCommandQueue(e->queues[i]);
    if (e->copy_queue) clReleaseCommandQueue(e->copy_queue);
    if (e->context) clReleaseContext(e->context);
}

/* An OpenCL backend on env (a cl_env, void * as dc_env calls it); NULL
 * where creation fails. */
static relo_backend *make_backend(void *env)
{
    cl_env *e = env;
    relo_backend *b = NULL;
    if (relo_backend_opencl_create(e->context, e->device, e->copy_queue, &b) != RELO_OK) return NULL;
    return b;
}

/* ------------------------------------------------------------------------ */
/* The environment as the shared cases see it (device_cases.h)              */
/* ------------------------------------------------------------------------ */

static void *cases_stream(void *env, int i)
{
    cl_env *e = env;
    return e->queues[i];
}

/* Enqueues add1 over the allocation's bytes on queue i, as a runtime
 * launches: the cl_mem and offset come from a binding resolved right
 * before. */
static int cases_launch_add1(void *env, int i, relo_binding bd)
{
    cl_env *e = env;
    cl_mem mem = (cl_mem)bd.buffer;
    cl_ulong off = bd.offset, n = bd.size;
    cl_kernel k = e->kernels[i];
    cl_int err = clSetKernelArg(k, 0, sizeof mem, &mem);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof off, &off);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof n, &n);
    size_t global = (size_t)n;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(e->queues[i], k, 1, NULL, &global, NULL, 0, NULL, NULL);
    return err;
}

static int cases_finish(void *env, int i)
{
    cl_env *e = env;
    return clFinish(e->queues[i]);
}

/* Opens the environment (or ends the case as skipped) and describes it to
 * the shared cases. */
static dc_env open_cases(cl_env *e)
{
    env_open(e);
    dc_env c = {
        .env = e,
        .make_backend = make_backend,
        .stream = cases_stream,
        .close = env_close,
        .launch_add1 = cases_launch_add1,
        .finish = cases_finish,
        .add1_width = 1,
    };
    return c;
}

/* ------------------------------------------------------------------------ */
/* The backend's ops                                                        */
/* ------------------------------------------------------------------------ */

CHECK_TEST(props_come_from_the_device)
{
    cl_env e;
    env_open(&e);
    relo_backend *b = make_backend(&e);
    require_true(b != NULL);
    cl_ulong global = 0, max_alloc = 0;
    cl_uint bits = 0;
    clGetDeviceInfo(e.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(e.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(e.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    relo_backend_props p;
    require_ok(relo_backend_props_get(b, &p));
    expect_eq(p.capacity, global);
    expect_eq(p.max_page_size, max_alloc);
    expect_eq(p.alignment, bits / 8 ? bits / 8 : 1);
    expect_eq(p.granule, 0); /* OpenCL reports none: each buffer is its size */
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(create_checks_its_arguments)
{
    cl_env e;
    env_open(&e);
    relo_backend *b = NULL;
    expect_status(relo_backend_opencl_create(NULL, e.device, e.copy_queue, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_opencl_create(e.context, NULL, e.copy_queue, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_opencl_create(e.context, e.device, NULL, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_opencl_create(e.context, e.device, e.copy_queue, NULL),
                  RELO_ERR_INVALID_ARGUMENT);
    /* A queue of another context cannot copy this context's buffers. */
    cl_int err = CL_SUCCESS;
    cl_context other = clCreateContext(NULL, 1, &e.device, NULL, NULL, &err);
    require_eq(err, CL_SUCCESS);
    cl_command_queue oq = clCreateCommandQueue(other, e.device, 0, &err);
    require_eq(err, CL_SUCCESS);
    expect_status(relo_backend_opencl_create(e.context, e.device, oq, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_true(b == NULL);

    /* The same queue registered as a stream is refused too. */
    b = make_backend(&e);
    require_true(b != NULL);
    expect_status(b->ops.stream_add(b->ctx, oq), RELO_ERR_BACKEND);
    expect_ok(b->ops.stream_add(b->ctx, NULL));
    relo_backend_destroy(b);
    clReleaseCommandQueue(oq);
    clReleaseContext(other);

    /* last_error refuses backends of another kind. */
    relo_backend *h = NULL;
    require_ok(relo_backend_host_create(NULL, &h));
    cl_int code = 0;
    expect_status(relo_backend_opencl_last_error(h, &code), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(h);
    env_close(&e);
}

CHECK_TEST(ops_write_copy_read)
{
    cl_env e;
    env_open(&e);
    relo_backend *b = make_backend(&e);
    require_true(b != NULL);
    void *x = NULL, *y = NULL;
    uint64_t ax = 1, ay = 1;
    require_ok(b->ops.alloc(b->ctx, 4096, &x, &ax));
    require_ok(b->ops.alloc(b->ctx, 4096, &y, &ay));
    expect_true(x != NULL && y != NULL && x != y);
    expect_eq(ax, 0); /* OpenCL buffers have no device address */

    round_trip_ops(b, x, y);
    expect_ok(b->ops.write(b->ctx, x, 0, "", 0)); /* zero bytes: nothing to do */
    expect_ok(b->ops.wait_device(b->ctx));

    /* A transfer past the buffer's end is an OpenCL error, not a crash. */
    unsigned char back[1000];
    expect_status(b->ops.read(b->ctx, y, 4000, back, sizeof back), RELO_ERR_BACKEND);
    cl_int code = CL_SUCCESS;
    require_ok(relo_backend_opencl_last_error(b, &code));
    expect_eq(code, CL_INVALID_VALUE);

    b->ops.free(b->ctx, x, 4096);
    b->ops.free(b->ctx, y, 4096);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(refused_buffer_is_out_of_memory)
{
    cl_env e;
    env_open(&e);
    relo_backend *b = make_backend(&e);
    require_true(b != NULL);
    /* One byte above the device's largest buffer: the device refuses it at
     * creation (CL_INVALID_BUFFER_SIZE), eagerly even where allocation is
     * otherwise lazy. */
    void *x = NULL;
    uint64_t a = 0;
    expect_status(b->ops.alloc(b->ctx, b->props.max_page_size + 1, &x, &a), RELO_ERR_OUT_OF_MEMORY);
    cl_int code = CL_SUCCESS;
    require_ok(relo_backend_opencl_last_error(b, &code));
    expect_ne(code, CL_SUCCESS);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(streams_register_queues)
{
    cl_env e;
    dc_env c = open_cases(&e);
    fx f;
    require_true(dc_open(&f, &c, make_backend(&e), 2));
    /* Two streams may share a queue. */
    relo_stream *s2 = NULL;
    require_ok(relo_stream_create(f.dev, e.queues[1], &s2));
    require_ok(relo_stream_destroy(s2));
    dc_close(&f, &c);
}

/* ------------------------------------------------------------------------ */
/* Relocation and capture cases (device_cases.h)                            */
/* ------------------------------------------------------------------------ */

CHECK_TEST(a25_reclaim_moves_and_keeps_bytes)
{
    cl_env e;
    dc_a25_reclaim_moves_and_keeps_bytes(open_cases(&e));
}

CHECK_TEST(a26_refused_copies_abandon)
{
    cl_env e;
    dc_failed_copy_keeps_bytes(open_cases(&e), true);
}

CHECK_TEST(a27_failed_copy_wait_leaks_both_sides)
{
    cl_env e;
    dc_failed_copy_keeps_bytes(open_cases(&e), false);
}

/* Packing a page in place (src/pass/slide.c) on the device: two pages (of the size
 * the packed placement picks on this device) each hold 12 KiB allocations with
 * a released 4 KiB hole after each; the device then refuses a third
 * buffer, and a 16 KiB request fits only once the first page's
 * allocations slide down, the k-th by 4k KiB. Each slide
 * overlaps its own bytes: clEnqueueCopyBuffer refuses overlapping ranges
 * of one buffer (CL_MEM_COPY_OVERLAP), so the request succeeds only if
 * every piece is no longer than its slide, and the bytes are right only if
 * the pieces ran in order. With out_of_order, relo's copy queue may reorder
 * commands (the backend must then put barriers between them). */
static void slide_on_device(bool out_of_order)
{
    cl_env e;
    env_open(&e);
    if (out_of_order) {
        cl_int err = CL_SUCCESS;
        cl_command_queue q = clCreateCommandQueue(e.context, e.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                                  &err);
        if (err != CL_SUCCESS) {
            env_close(&e);
            check_skip("no out-of-order queue on this device");
        }
        (void)clReleaseCommandQueue(e.copy_queue);
        e.copy_queue = q;
    }
    wrap *w = NULL;
    relo_backend *b = wrap_backend(make_backend(&e), &w);
    require_true(b != NULL);
    /* Pages of 64 KiB keep the scene small: four 12 KiB allocations each. */
    if (b->props.max_page_size > 64 * KiB) b->props.max_page_size = 64 * KiB;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = RELO_PLACEMENT_PACKED;
    fx f;
    memset(&f, 0, sizeof f);
    require_ok(relo_device_create(&dd, b, &f.dev));
    f.backend = b;
    require_ok(relo_stream_create(f.dev, e.queues[0], &f.s));
    relo_handle first;
    require_ok(relo_reserve(f.s, 12 * KiB, &first));
    const int pages = 2, per_page = (int)(fx_dev_stats(f.dev).bytes_reserved / (16 * KiB)),
              count = pages * per_page;
    require_ok(relo_release(f.dev, first));
    relo_handle *big = calloc((size_t)count, sizeof *big), *small = calloc((size_t)count, sizeof *small);
    relo_binding *before = calloc((size_t)count, sizeof *before);
    require_true(big && small && before);
    for (int i = 0; i < count; i++) {
        require_ok(relo_reserve(f.s, 12 * KiB, &big[i]));
        require_ok(relo_reserve(f.s, 4 * KiB, &small[i]));
        require_ok(fx_write_pattern(f.dev, big[i], (uint64_t)i + 1, 12 * KiB));
    }
    for (int i = 0; i < count; i++) require_ok(relo_release(f.dev, small[i]));
    for (int i = 0; i < count; i++) before[i] = fx_bind(f.s, big[i]);
    relo_stats st = fx_dev_stats(f.dev);
    require_eq(st.pages, pages);
    require_eq(before[1].offset, 16 * KiB);
    w->max_buffers = w->buffers; /* the device is full */

    relo_handle ask;
    expect_ok(relo_reserve(f.s, 16 * KiB, &ask));
    st = fx_dev_stats(f.dev);
    expect_eq(st.allocations_moved, (uint64_t)per_page - 1);
    expect_eq(st.relocations_abandoned, 0);
    for (int i = 0; i < count; i++) {
        relo_binding now = fx_bind(f.s, big[i]);
        expect_true(now.buffer == before[i].buffer);
        expect_eq(now.offset, i < per_page ? (uint64_t)i * 12 * KiB : before[i].offset);
        expect_true(fx_check_pattern(f.dev, big[i], (uint64_t)i + 1, 12 * KiB));
    }
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_release(f.dev, ask));
    for (int i = 0; i < count; i++) expect_ok(relo_release(f.dev, big[i]));
    free(big);
    free(small);
    free(before);
    fx_close(&f);
    env_close(&e);
}

CHECK_TEST(slide_in_place_copies_in_order_pieces)
{
    slide_on_device(false);
}

CHECK_TEST(slide_in_place_on_an_out_of_order_copy_queue)
{
    slide_on_device(true);
}

CHECK_TEST(a36_recording_stream_blocks_relocation)
{
    cl_env e;
    dc_a36_recording_stream_blocks_relocation(open_cases(&e));
}

CHECK_TEST(a37_one_wait_before_copies_one_after)
{
    cl_env e;
    dc_a37_one_wait_before_copies_one_after(open_cases(&e));
}

CHECK_TEST(a38_capture_state_errors)
{
    cl_env e;
    dc_a38_capture_state_errors(open_cases(&e));
}

CHECK_TEST(a39_prepare_relocates_every_stream_first)
{
    cl_env e;
    dc_a39_prepare_relocates_every_stream_first(open_cases(&e));
}

CHECK_TEST(a40_new_page_while_recording_dooms_it)
{
    cl_env e;
    dc_a40_new_page_while_recording_dooms_it(open_cases(&e));
}

CHECK_TEST(a41_guarded_page_serves_nothing_new)
{
    cl_env e;
    dc_a41_guarded_page_serves_nothing_new(open_cases(&e));
}

CHECK_TEST(a42_a43_guarded_page_stays_until_graph_destroyed)
{
    cl_env e;
    dc_a42_a43_guarded_page_stays_until_graph_destroyed(open_cases(&e));
}

/* ------------------------------------------------------------------------ */
/* Kernels through bindings                                                 */
/* ------------------------------------------------------------------------ */

static const char *add1_source =
    "__kernel void add1(__global uchar *base, ulong offset, ulong n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n) base[offset + i] += (uchar)1;\n"
    "}\n";

/* Builds add1 into e (the program and a kernel per queue), or ends the
 * case as skipped with nothing left open. */
static void kernel_open(cl_env *e)
{
    cl_int err = CL_SUCCESS;
    e->prog = clCreateProgramWithSource(e->context, 1, &add1_source, NULL, &err);
    if (err == CL_SUCCESS && clBuildProgram(e->prog, 1, &e->device, NULL, NULL, NULL) != CL_SUCCESS)
        err = CL_BUILD_PROGRAM_FAILURE;
    if (err == CL_SUCCESS) e->kernels[0] = clCreateKernel(e->prog, "add1", &err);
    if (err == CL_SUCCESS) e->kernels[1] = clCreateKernel(e->prog, "add1", &err);
    if (err != CL_SUCCESS) {
        /* The skip returns to the runner, which goes on: leave nothing open. */
        env_close(e);
        check_skip("the OpenCL compiler is not available");
    }
}

CHECK_TEST(kernel_through_binding_across_relocation)
{
    cl_env e;
    dc_env c = open_cases(&e);
    kernel_open(&e);
    dc_kernel_through_binding_across_relocation(c);
}

CHECK_TEST(two_queues_two_streams)
{
    cl_env e;
    dc_env c = open_cases(&e);
    kernel_open(&e);
    fx f;
    require_true(dc_open(&f, &c, make_backend(&e), 2));
    relo_handle h[4]; /* a, b, bigA, bigB */
    require_ok(dc_two_streams_setup(&c, &f, h));

    /* Kernels run on both queues, not finished by the test: the relocation
     * must finish both queues (wait_device) before it copies a byte, even
     * the device-wide one that moves both streams' allocations. */
    require_eq(cases_launch_add1(&e, 0, fx_bind(f.s, h[0])), CL_SUCCESS);
    require_eq(cases_launch_add1(&e, 1, fx_bind(f.s2, h[1])), CL_SUCCESS);
    clFlush(e.queues[0]);
    clFlush(e.queues[1]);
    require_ok(relo_reclaim_device(f.dev));
    dc_two_streams_moved(&c, &f, h);

    /* Each stream's stats count its own pages. */
    expect_eq(fx_stats(f.s).bytes_reserved, 11 * MiB);
    expect_eq(fx_stats(f.s2).bytes_reserved, 11 * MiB);

    dc_release(f.dev, h, 4);
    dc_close(&f, &c);
}

CHECK_MAIN()
