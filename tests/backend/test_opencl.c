/*
 * test_opencl.c — the OpenCL backend on the first OpenCL device found:
 * first its ops directly (properties, transfers, error mapping, queue
 * registration), then the relocation behaviours of acceptance.md that move
 * bytes (25–27, 36–43) through the public API, a kernel that reads and
 * writes through a binding before and after a relocation, and two command
 * queues as two streams. Without a platform or device every case is SKIP.
 *
 * OpenCL has no fault injection, so behaviours 26, 27 and 37 wrap the
 * OpenCL backend's ops in a test-local backend (relo_backend_create) that
 * refuses copies, fails the copy wait after really waiting, or logs the
 * order of calls; everything else goes to the real device unchanged.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "fixture.h"
#include "relo.h"
#include "relo_opencl.h"
#include "testing.h"

/* ------------------------------------------------------------------------ */
/* OpenCL environment                                                       */
/* ------------------------------------------------------------------------ */

typedef struct cl_env {
    cl_device_id device;
    cl_context context;
    cl_command_queue copy_queue;
    cl_command_queue queues[2]; /* two runtime queues, for two streams */
} cl_env;

static void env_close(cl_env *e);

/* Opens the first device of the first platform that has one, or ends the
 * case as skipped (with nothing left open). */
static void env_open(cl_env *e)
{
    memset(e, 0, sizeof *e);
    cl_uint nplat = 0;
    if (clGetPlatformIDs(0, NULL, &nplat) != CL_SUCCESS || nplat == 0)
        check_skip("no OpenCL platform");
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

static void env_close(cl_env *e)
{
    for (int i = 0; i < 2; i++)
        if (e->queues[i]) clReleaseCommandQueue(e->queues[i]);
    if (e->copy_queue) clReleaseCommandQueue(e->copy_queue);
    if (e->context) clReleaseContext(e->context);
}

static relo_backend *make_backend(cl_env *e)
{
    relo_backend *b = NULL;
    if (relo_backend_opencl_create(e->context, e->device, e->copy_queue, &b) != RELO_OK)
        return NULL;
    return b;
}

/* ------------------------------------------------------------------------ */
/* A test-local wrapper: real OpenCL work, injected faults, a call log      */
/* ------------------------------------------------------------------------ */

typedef struct wrap {
    relo_backend *inner;
    bool refuse_copies;
    bool fail_wait_copies;
    uint32_t max_buffers;  /* alloc answers out of memory past this many; 0 = no limit */
    uint32_t buffers;      /* buffers held */
    char log[1024]; /* 'D' wait_device, 'C' copy, 'W' wait_copies */
    size_t log_len;
} wrap;

static void wrap_note(wrap *w, char c)
{
    if (w->log_len + 1 < sizeof w->log) w->log[w->log_len++] = c;
    w->log[w->log_len] = '\0';
}

static relo_status wrap_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    wrap *w = ctx;
    if (w->max_buffers && w->buffers >= w->max_buffers) return RELO_ERR_OUT_OF_MEMORY;
    relo_status st = w->inner->ops.alloc(w->inner->ctx, size, buffer, address);
    if (st == RELO_OK) w->buffers++;
    return st;
}

static void wrap_free(void *ctx, void *buffer, uint64_t size)
{
    wrap *w = ctx;
    w->buffers--;
    w->inner->ops.free(w->inner->ctx, buffer, size);
}

static relo_status wrap_write(void *ctx, void *buffer, uint64_t offset, const void *src,
                              uint64_t n)
{
    wrap *w = ctx;
    return w->inner->ops.write(w->inner->ctx, buffer, offset, src, n);
}

static relo_status wrap_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    wrap *w = ctx;
    return w->inner->ops.read(w->inner->ctx, buffer, offset, dst, n);
}

static relo_status wrap_wait_device(void *ctx)
{
    wrap *w = ctx;
    wrap_note(w, 'D');
    return w->inner->ops.wait_device(w->inner->ctx);
}

static relo_status wrap_copy(void *ctx, void *src, uint64_t so, void *dst, uint64_t dof,
                             uint64_t n)
{
    wrap *w = ctx;
    wrap_note(w, 'C');
    if (w->refuse_copies) return RELO_ERR_BACKEND;
    return w->inner->ops.copy(w->inner->ctx, src, so, dst, dof, n);
}

static relo_status wrap_wait_copies(void *ctx)
{
    wrap *w = ctx;
    wrap_note(w, 'W');
    /* Really wait, so that the device is idle, then claim the outcome is
     * unknown as a lost device would. */
    relo_status s = w->inner->ops.wait_copies(w->inner->ctx);
    return w->fail_wait_copies ? RELO_ERR_BACKEND : s;
}

static relo_status wrap_stream_add(void *ctx, void *q)
{
    wrap *w = ctx;
    return w->inner->ops.stream_add(w->inner->ctx, q);
}

static void wrap_stream_remove(void *ctx, void *q)
{
    wrap *w = ctx;
    w->inner->ops.stream_remove(w->inner->ctx, q);
}

static void wrap_destroy(void *ctx)
{
    wrap *w = ctx;
    relo_backend_destroy(w->inner);
    free(w);
}

/* Wraps a fresh OpenCL backend; *w stays readable until the device goes. */
static relo_backend *make_wrapped(cl_env *e, wrap **w_out)
{
    static const relo_backend_ops ops = {
        .alloc = wrap_alloc,
        .free = wrap_free,
        .write = wrap_write,
        .read = wrap_read,
        .wait_device = wrap_wait_device,
        .copy = wrap_copy,
        .wait_copies = wrap_wait_copies,
        .stream_add = wrap_stream_add,
        .stream_remove = wrap_stream_remove,
        .destroy = wrap_destroy,
    };
    wrap *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->inner = make_backend(e);
    if (!w->inner) {
        free(w);
        return NULL;
    }
    relo_backend *b = NULL;
    if (relo_backend_create(&ops, w, &w->inner->props, &b) != RELO_OK) {
        wrap_destroy(w);
        return NULL;
    }
    *w_out = w;
    return b;
}

/* ------------------------------------------------------------------------ */
/* Helpers over the public API                                              */
/* ------------------------------------------------------------------------ */

static relo_stats stats_of(relo_device *d)
{
    relo_stats s;
    memset(&s, 0, sizeof s);
    (void)relo_device_stats(d, &s);
    return s;
}

static relo_binding bind(relo_stream *s, relo_handle h)
{
    relo_binding b;
    memset(&b, 0, sizeof b);
    (void)relo_resolve(s, h, &b);
    return b;
}

static relo_status fill(relo_device *d, relo_handle h, uint64_t n, unsigned char v)
{
    unsigned char *p = malloc((size_t)n);
    if (!p) return RELO_ERR_HOST_MEMORY;
    memset(p, v, (size_t)n);
    relo_status s = relo_write(d, h, 0, p, n);
    free(p);
    return s;
}

/* True when all n bytes of the allocation read v. */
static bool reads_all(relo_device *d, relo_handle h, uint64_t n, unsigned char v)
{
    unsigned char *p = malloc((size_t)n);
    if (!p) return false;
    bool ok = relo_read(d, h, 0, p, n) == RELO_OK;
    for (uint64_t i = 0; ok && i < n; i++) ok = p[i] == v;
    free(p);
    return ok;
}

/* The setup of behaviours 25–27: 1 MiB of 7s on a 2 MiB page, then 10 MiB,
 * which grows the arena to 11 MiB pages and leaves the first page outdated. */
static relo_status grow_setup(relo_device *d, relo_stream *s, relo_handle *small,
                              relo_handle *big)
{
    relo_status st = relo_reserve(s, MiB, small);
    if (st == RELO_OK) st = fill(d, *small, MiB, 7);
    if (st == RELO_OK) st = relo_reserve(s, 10 * MiB, big);
    return st;
}

/* ------------------------------------------------------------------------ */
/* A device and its streams over the environment                            */
/* ------------------------------------------------------------------------ */

/* A device over b (taken; NULL records a failure) with fx's stream s on
 * queues[0] and, where streams is 2, s2 on queues[1]. False, with the
 * failing step recorded, when any step fails. */
static bool dev_open(fx *f, cl_env *e, relo_backend *b, int streams)
{
    memset(f, 0, sizeof *f);
    expect_true(b != NULL);
    if (!b) return false;
    f->backend = b;
    relo_status st = relo_device_create(FX_SEED, b, &f->dev);
    if (st == RELO_OK) st = relo_stream_create(f->dev, e->queues[0], &f->s);
    if (st == RELO_OK && streams == 2) st = relo_stream_create(f->dev, e->queues[1], &f->s2);
    expect_ok(st);
    return st == RELO_OK;
}

/* Destroys the streams and the device (each must succeed), then closes
 * the environment. */
static void dev_close(fx *f, cl_env *e)
{
    fx_close(f);
    env_close(e);
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
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(create_checks_its_arguments)
{
    cl_env e;
    env_open(&e);
    relo_backend *b = NULL;
    expect_status(relo_backend_opencl_create(NULL, e.device, e.copy_queue, &b),
                  RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_opencl_create(e.context, NULL, e.copy_queue, &b),
                  RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_opencl_create(e.context, e.device, NULL, &b),
                  RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_opencl_create(e.context, e.device, e.copy_queue, NULL),
                  RELO_ERR_INVALID_ARGUMENT);
    /* A queue of another context cannot copy this context's buffers. */
    cl_int err = CL_SUCCESS;
    cl_context other = clCreateContext(NULL, 1, &e.device, NULL, NULL, &err);
    require_eq(err, CL_SUCCESS);
    cl_command_queue oq = clCreateCommandQueue(other, e.device, 0, &err);
    require_eq(err, CL_SUCCESS);
    expect_status(relo_backend_opencl_create(e.context, e.device, oq, &b),
                  RELO_ERR_INVALID_ARGUMENT);
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

    unsigned char data[1000], back[1000];
    for (int i = 0; i < 1000; i++) data[i] = (unsigned char)(i * 7);
    require_ok(b->ops.write(b->ctx, x, 100, data, sizeof data));
    require_ok(b->ops.copy(b->ctx, x, 100, y, 3000, sizeof data));
    require_ok(b->ops.wait_copies(b->ctx));
    require_ok(b->ops.read(b->ctx, y, 3000, back, sizeof back));
    expect_eq(memcmp(data, back, sizeof data), 0);
    expect_ok(b->ops.write(b->ctx, x, 0, data, 0)); /* zero bytes: nothing to do */
    expect_ok(b->ops.wait_device(b->ctx));

    /* A transfer past the buffer's end is an OpenCL error, not a crash. */
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
    expect_status(b->ops.alloc(b->ctx, b->props.max_page_size + 1, &x, &a),
                  RELO_ERR_OUT_OF_MEMORY);
    cl_int code = CL_SUCCESS;
    require_ok(relo_backend_opencl_last_error(b, &code));
    expect_ne(code, CL_SUCCESS);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(streams_register_queues)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 2));
    /* Two streams may share a queue. */
    relo_stream *s2 = NULL;
    require_ok(relo_stream_create(f.dev, e.queues[1], &s2));
    require_ok(relo_stream_destroy(s2));
    dev_close(&f, &e);
}

/* ------------------------------------------------------------------------ */
/* Relocation behaviours (acceptance.md)                                    */
/* ------------------------------------------------------------------------ */

CHECK_TEST(a25_reclaim_moves_and_keeps_bytes)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle small, big;
    require_ok(grow_setup(d, s, &small, &big));
    expect_eq(stats_of(d).outdated_pages, 1);

    require_ok(relo_reclaim(s));
    relo_stats st = stats_of(d);
    expect_eq(st.allocations_moved, 1);
    expect_eq(st.pages, 1);
    expect_eq(st.bytes_reserved, 11 * MiB);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.bytes_in_use, 11 * MiB);
    expect_true(reads_all(d, small, MiB, 7));
    expect_true(bind(s, small).buffer == bind(s, big).buffer);

    require_ok(relo_release(d, small));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
}

CHECK_TEST(a26_refused_copies_abandon)
{
    cl_env e;
    env_open(&e);
    wrap *w = NULL;
    relo_backend *b = make_wrapped(&e, &w);
    require_true(b != NULL);
    w->refuse_copies = true;
    fx f;
    require_true(dev_open(&f, &e, b, 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle small, big;
    require_ok(grow_setup(d, s, &small, &big));
    relo_binding before = bind(s, small);

    require_ok(relo_reclaim(s));
    relo_stats st = stats_of(d);
    expect_eq(st.allocations_moved, 0);
    expect_eq(st.relocations_abandoned, 1);
    expect_eq(st.bytes_in_use, 11 * MiB);
    relo_binding after = bind(s, small);
    expect_true(after.buffer == before.buffer);
    expect_eq(after.offset, before.offset);
    expect_true(reads_all(d, small, MiB, 7));

    /* No target stays reserved: the 11 MiB page still has 1 MiB free, and
     * the next 1 MiB lands there without a new page. */
    uint64_t pages = st.pages;
    relo_handle more;
    require_ok(relo_reserve(s, MiB, &more));
    expect_eq(stats_of(d).pages, pages);
    expect_true(bind(s, more).buffer == bind(s, big).buffer);

    require_ok(relo_release(d, more));
    require_ok(relo_release(d, small));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
}

CHECK_TEST(a27_failed_copy_wait_leaks_both_sides)
{
    cl_env e;
    env_open(&e);
    wrap *w = NULL;
    relo_backend *b = make_wrapped(&e, &w);
    require_true(b != NULL);
    w->fail_wait_copies = true;
    fx f;
    require_true(dev_open(&f, &e, b, 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle small, big;
    require_ok(grow_setup(d, s, &small, &big));
    relo_binding before = bind(s, small);

    require_ok(relo_reclaim(s));
    relo_stats st = stats_of(d);
    expect_eq(st.allocations_moved, 0);
    expect_ge(st.bytes_leaked, MiB);
    relo_binding after = bind(s, small);
    expect_true(after.buffer == before.buffer);
    expect_eq(after.offset, before.offset);
    expect_true(reads_all(d, small, MiB, 7));

    /* The target stays reserved: the 11 MiB page is full, so the next 1 MiB
     * needs a page of its own. */
    relo_handle more;
    require_ok(relo_reserve(s, MiB, &more));
    expect_true(bind(s, more).buffer != bind(s, big).buffer);
    expect_true(bind(s, more).buffer != before.buffer);

    require_ok(relo_release(d, more));
    require_ok(relo_release(d, small));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
}

/* Packing a page in place (slide.h) on the device: two pages (of the size
 * the dense policy picks on this device) each hold 12 KiB allocations with
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
        cl_command_queue q = clCreateCommandQueue(e.context, e.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
        if (err != CL_SUCCESS) {
            env_close(&e);
            check_skip("no out-of-order queue on this device");
        }
        (void)clReleaseCommandQueue(e.copy_queue);
        e.copy_queue = q;
    }
    wrap *w = NULL;
    relo_backend *b = make_wrapped(&e, &w);
    require_true(b != NULL);
    /* Pages of 64 KiB keep the scene small: four 12 KiB allocations each. */
    if (b->props.max_page_size > 64 * KiB) b->props.max_page_size = 64 * KiB;
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.policy = RELO_POLICY_DENSE;
    fx f;
    memset(&f, 0, sizeof f);
    require_ok(relo_device_create(&dd, b, &f.dev));
    f.backend = b;
    require_ok(relo_stream_create(f.dev, e.queues[0], &f.s));
    relo_handle first;
    require_ok(relo_reserve(f.s, 12 * KiB, &first));
    const int pages = 2, per_page = (int)(stats_of(f.dev).bytes_reserved / (16 * KiB)), count = pages * per_page;
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
    for (int i = 0; i < count; i++) before[i] = bind(f.s, big[i]);
    relo_stats st = stats_of(f.dev);
    require_eq(st.pages, pages);
    require_eq(before[1].offset, 16 * KiB);
    w->max_buffers = w->buffers; /* the device is full */

    relo_handle ask;
    expect_ok(relo_reserve(f.s, 16 * KiB, &ask));
    st = stats_of(f.dev);
    expect_eq(st.allocations_moved, (uint64_t)per_page - 1);
    expect_eq(st.relocations_abandoned, 0);
    for (int i = 0; i < count; i++) {
        relo_binding now = bind(f.s, big[i]);
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
    dev_close(&f, &e);
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
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 2));
    relo_device *d = f.dev;
    relo_stream *sa = f.s, *sb = f.s2;

    /* B records first, so prepare has nothing of A's to move yet. */
    require_ok(relo_capture_prepare(sb));
    require_ok(relo_capture_begin(sb));
    relo_handle small, big, more;
    require_ok(grow_setup(d, sa, &small, &big));
    expect_eq(stats_of(d).outdated_pages, 1);
    require_ok(relo_reserve(sa, MiB / 2, &more));
    expect_eq(stats_of(d).allocations_moved, 0);
    expect_status(relo_reclaim(sa), RELO_ERR_RECORDING);
    expect_eq(stats_of(d).allocations_moved, 0);
    /* Released so that the 11 MiB page has room for the 1 MiB again. */
    require_ok(relo_release(d, more));

    relo_graph *g = NULL;
    require_ok(relo_capture_end(sb, &g));
    relo_graph_destroy(g);
    require_ok(relo_reclaim(sa));
    expect_eq(stats_of(d).allocations_moved, 1);
    expect_eq(stats_of(d).outdated_pages, 0);
    expect_true(reads_all(d, small, MiB, 7));

    require_ok(relo_release(d, small));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
}

CHECK_TEST(a37_one_wait_before_copies_one_after)
{
    cl_env e;
    env_open(&e);
    wrap *w = NULL;
    relo_backend *b = make_wrapped(&e, &w);
    require_true(b != NULL);
    fx f;
    require_true(dev_open(&f, &e, b, 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    /* Two allocations on the outdated page: two copies in one submission. */
    relo_handle h1, h2, big;
    require_ok(relo_reserve(s, 512 * KiB, &h1));
    require_ok(relo_reserve(s, 512 * KiB, &h2));
    require_ok(fill(d, h1, 512 * KiB, 1));
    require_ok(fill(d, h2, 512 * KiB, 2));
    require_ok(relo_reserve(s, 10 * MiB, &big));
    w->log_len = 0;
    w->log[0] = '\0';

    require_ok(relo_reclaim(s));
    expect_eq(stats_of(d).allocations_moved, 2);
    expect_true(strcmp(w->log, "DCCW") == 0);
    if (strcmp(w->log, "DCCW") != 0) fprintf(stderr, "  call order: %s\n", w->log);
    expect_true(reads_all(d, h1, 512 * KiB, 1));
    expect_true(reads_all(d, h2, 512 * KiB, 2));

    require_ok(relo_release(d, h1));
    require_ok(relo_release(d, h2));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
}

CHECK_TEST(a38_capture_state_errors)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 1));
    relo_stream *s = f.s;
    relo_graph *g = NULL;

    expect_status(relo_capture_begin(s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(s, &g), RELO_ERR_CAPTURE_STATE);
    require_ok(relo_capture_prepare(s));
    expect_status(relo_capture_prepare(s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_end(s, &g), RELO_ERR_CAPTURE_STATE);
    require_ok(relo_capture_begin(s));
    expect_status(relo_capture_begin(s), RELO_ERR_CAPTURE_STATE);
    expect_status(relo_capture_prepare(s), RELO_ERR_CAPTURE_STATE);
    require_ok(relo_capture_end(s, &g));
    expect_true(g != NULL);
    relo_graph_destroy(g);

    /* Idle again: a second round runs. */
    g = NULL;
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    require_ok(relo_capture_end(s, &g));
    relo_graph_destroy(g);

    dev_close(&f, &e);
}

CHECK_TEST(a39_prepare_relocates_every_stream_first)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 2));
    relo_device *d = f.dev;
    relo_stream *sa = f.s, *sb = f.s2;
    relo_handle small, big;
    require_ok(grow_setup(d, sa, &small, &big));
    expect_eq(stats_of(d).outdated_pages, 1);

    /* B prepares; A's outdated page is emptied and goes back. */
    require_ok(relo_capture_prepare(sb));
    expect_eq(relo__testing_last_reason(d), RELO_REASON_CAPTURE);
    relo_stats st = stats_of(d);
    expect_eq(st.allocations_moved, 1);
    expect_eq(st.outdated_pages, 0);
    expect_true(reads_all(d, small, MiB, 7));
    expect_true(bind(sa, small).buffer == bind(sa, big).buffer);

    relo_graph *g = NULL;
    require_ok(relo_capture_begin(sb));
    require_ok(relo_capture_end(sb, &g));
    relo_graph_destroy(g);
    require_ok(relo_release(d, small));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
}

CHECK_TEST(a40_new_page_while_recording_dooms_it)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle small, big;
    require_ok(relo_reserve(s, MiB, &small));
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    expect_status(relo_reserve(s, 10 * MiB, &big), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    relo_graph *g = (relo_graph *)&g;
    expect_status(relo_capture_end(s, &g), RELO_ERR_PAGE_UPDATE_FORBIDDEN);
    expect_true(g == NULL);
    /* The stream is idle again. */
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    require_ok(relo_capture_end(s, &g));
    relo_graph_destroy(g);

    require_ok(relo_release(d, small));
    dev_close(&f, &e);
}

CHECK_TEST(a41_guarded_page_serves_nothing_new)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle h, next;
    require_ok(relo_reserve(s, MiB, &h));
    require_ok(relo_capture_prepare(s));
    require_ok(relo_capture_begin(s));
    relo_binding used = bind(s, h);
    require_true(used.buffer != NULL);
    require_ok(relo_release(d, h));
    relo_graph *g = NULL;
    require_ok(relo_capture_end(s, &g));
    require_true(g != NULL);
    expect_eq(stats_of(d).guarded_pages, 1);

    require_ok(relo_reserve(s, MiB, &next));
    expect_eq(stats_of(d).pages, 2);
    expect_true(bind(s, next).buffer != used.buffer);

    relo_graph_destroy(g);
    expect_eq(stats_of(d).guarded_pages, 0);
    require_ok(relo_release(d, next));
    dev_close(&f, &e);
}

/* The setup of 42 and 43: a guarded allocation g and an unguarded
 * neighbour n on one 2 MiB page (1 MiB together), then growth to 10 MiB. */
static relo_status guarded_setup(relo_device *d, relo_stream *s, relo_handle *g,
                                 relo_handle *n, relo_handle *big, relo_graph **graph)
{
    relo_status st = relo_reserve(s, 768 * KiB, g);
    if (st == RELO_OK) st = relo_reserve(s, 256 * KiB, n);
    if (st == RELO_OK) st = fill(d, *g, 768 * KiB, 0x11);
    if (st == RELO_OK) st = fill(d, *n, 256 * KiB, 0x22);
    if (st == RELO_OK) st = relo_capture_prepare(s);
    if (st == RELO_OK) st = relo_capture_begin(s);
    relo_binding bd;
    if (st == RELO_OK) st = relo_resolve(s, *g, &bd);
    if (st == RELO_OK) st = relo_capture_end(s, graph);
    if (st == RELO_OK) st = relo_reserve(s, 10 * MiB, big);
    return st;
}

CHECK_TEST(a42_a43_guarded_page_stays_until_graph_destroyed)
{
    cl_env e;
    env_open(&e);
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;
    relo_handle g, n, big;
    relo_graph *graph = NULL;
    require_ok(guarded_setup(d, s, &g, &n, &big, &graph));
    relo_binding g0 = bind(s, g), n0 = bind(s, n);
    expect_true(g0.buffer == n0.buffer);

    /* 42: the guarded page moves nothing, neighbour included. */
    require_ok(relo_reclaim(s));
    expect_eq(stats_of(d).allocations_moved, 0);
    expect_true(bind(s, g).buffer == g0.buffer);
    expect_eq(bind(s, g).offset, g0.offset);
    expect_true(bind(s, n).buffer == n0.buffer);
    expect_eq(bind(s, n).offset, n0.offset);

    /* 43: without the graph the same reclaim empties the page. */
    relo_graph_destroy(graph);
    uint64_t released = stats_of(d).pages_released;
    require_ok(relo_reclaim(s));
    relo_stats st = stats_of(d);
    expect_eq(st.allocations_moved, 2);
    expect_eq(st.pages, 1);
    expect_eq(st.outdated_pages, 0);
    expect_eq(st.pages_released, released + 1);
    expect_true(bind(s, g).buffer == bind(s, big).buffer);
    expect_true(reads_all(d, g, 768 * KiB, 0x11));
    expect_true(reads_all(d, n, 256 * KiB, 0x22));

    require_ok(relo_release(d, g));
    require_ok(relo_release(d, n));
    require_ok(relo_release(d, big));
    dev_close(&f, &e);
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

static cl_kernel build_add1(cl_env *e, cl_program *prog)
{
    cl_int err = CL_SUCCESS;
    *prog = clCreateProgramWithSource(e->context, 1, &add1_source, NULL, &err);
    if (err != CL_SUCCESS) return NULL;
    if (clBuildProgram(*prog, 1, &e->device, NULL, NULL, NULL) != CL_SUCCESS) return NULL;
    cl_kernel k = clCreateKernel(*prog, "add1", &err);
    return err == CL_SUCCESS ? k : NULL;
}

/* Enqueues add1 over the allocation's bytes, as a runtime launches: the
 * cl_mem and offset come from a binding resolved right before. */
static cl_int launch_add1(cl_kernel k, cl_command_queue q, relo_binding bd)
{
    cl_mem mem = (cl_mem)bd.buffer;
    cl_ulong off = bd.offset, n = bd.size;
    cl_int err = clSetKernelArg(k, 0, sizeof mem, &mem);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof off, &off);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof n, &n);
    size_t global = (size_t)n;
    if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    return err;
}

static bool reads_pattern(relo_device *d, relo_handle h, uint64_t n, unsigned add)
{
    unsigned char *p = malloc((size_t)n);
    if (!p) return false;
    bool ok = relo_read(d, h, 0, p, n) == RELO_OK;
    for (uint64_t i = 0; ok && i < n; i++) ok = p[i] == (unsigned char)(i * 13 + add);
    free(p);
    return ok;
}

static relo_status write_pattern(relo_device *d, relo_handle h, uint64_t n)
{
    unsigned char *p = malloc((size_t)n);
    if (!p) return RELO_ERR_HOST_MEMORY;
    for (uint64_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 13);
    relo_status s = relo_write(d, h, 0, p, n);
    free(p);
    return s;
}

CHECK_TEST(kernel_through_binding_across_relocation)
{
    cl_env e;
    env_open(&e);
    cl_program prog = NULL;
    cl_kernel k = build_add1(&e, &prog);
    if (!k) {
        /* The skip returns to the runner, which goes on: leave nothing open. */
        if (prog) clReleaseProgram(prog);
        env_close(&e);
        check_skip("the OpenCL compiler is not available");
    }
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 1));
    relo_device *d = f.dev;
    relo_stream *s = f.s;

    relo_handle h, big;
    require_ok(relo_reserve(s, MiB, &h));
    require_ok(write_pattern(d, h, MiB));
    relo_binding before = bind(s, h);
    require_eq(launch_add1(k, e.queues[0], before), CL_SUCCESS);
    require_eq(clFinish(e.queues[0]), CL_SUCCESS);
    expect_true(reads_pattern(d, h, MiB, 1));

    /* Growth, then reclaim: the 1 MiB moves onto the 11 MiB page. */
    require_ok(relo_reserve(s, 10 * MiB, &big));
    require_ok(relo_reclaim(s));
    expect_eq(stats_of(d).allocations_moved, 1);
    relo_binding after = bind(s, h);
    expect_true(after.buffer != before.buffer);
    expect_true(after.buffer == bind(s, big).buffer);
    require_eq(launch_add1(k, e.queues[0], after), CL_SUCCESS);
    require_eq(clFinish(e.queues[0]), CL_SUCCESS);
    expect_true(reads_pattern(d, h, MiB, 2));

    require_ok(relo_release(d, h));
    require_ok(relo_release(d, big));
    fx_close(&f);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    env_close(&e);
}

CHECK_TEST(two_queues_two_streams)
{
    cl_env e;
    env_open(&e);
    cl_program prog = NULL;
    cl_kernel k = build_add1(&e, &prog);
    if (!k) {
        /* The skip returns to the runner, which goes on: leave nothing open. */
        if (prog) clReleaseProgram(prog);
        env_close(&e);
        check_skip("the OpenCL compiler is not available");
    }
    fx f;
    require_true(dev_open(&f, &e, make_backend(&e), 2));
    relo_device *d = f.dev;
    relo_stream *sa = f.s, *sb = f.s2;

    relo_handle ha, hb, bigA, bigB;
    require_ok(relo_reserve(sa, MiB, &ha));
    require_ok(relo_reserve(sb, MiB, &hb));
    require_ok(write_pattern(d, ha, MiB));
    require_ok(write_pattern(d, hb, MiB));
    require_ok(relo_reserve(sa, 10 * MiB, &bigA));
    require_ok(relo_reserve(sb, 10 * MiB, &bigB));
    expect_eq(stats_of(d).outdated_pages, 2);

    /* Kernels run on both queues, not finished by the test: the relocation
     * must finish both queues (wait_device) before it copies a byte, even
     * the device-wide one that moves both streams' allocations. */
    cl_kernel k2 = clCreateKernel(prog, "add1", NULL);
    require_true(k2 != NULL);
    require_eq(launch_add1(k, e.queues[0], bind(sa, ha)), CL_SUCCESS);
    require_eq(launch_add1(k2, e.queues[1], bind(sb, hb)), CL_SUCCESS);
    clFlush(e.queues[0]);
    clFlush(e.queues[1]);
    require_ok(relo_reclaim_device(d));
    relo_stats st = stats_of(d);
    expect_eq(st.allocations_moved, 2);
    expect_eq(st.outdated_pages, 0);
    expect_true(reads_pattern(d, ha, MiB, 1));
    expect_true(reads_pattern(d, hb, MiB, 1));

    /* Each stream's stats count its own pages. */
    relo_stats sta, stb;
    require_ok(relo_stream_stats(sa, &sta));
    require_ok(relo_stream_stats(sb, &stb));
    expect_eq(sta.bytes_reserved, 11 * MiB);
    expect_eq(stb.bytes_reserved, 11 * MiB);

    require_ok(relo_release(d, ha));
    require_ok(relo_release(d, hb));
    require_ok(relo_release(d, bigA));
    require_ok(relo_release(d, bigB));
    fx_close(&f);
    clReleaseKernel(k2);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    env_close(&e);
}

CHECK_MAIN()
