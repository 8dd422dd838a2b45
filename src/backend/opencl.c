/*
 * backend/opencl.c — the OpenCL backend: a page is a cl_mem created in the
 * runtime's context; relocation copies are clEnqueueCopyBuffer on one copy
 * queue; waiting for the device finishes every queue relo_stream_create
 * registered plus the copy queue. Every cl_int error is turned into a relo
 * status here (opencl_status) and remembered for
 * relo_backend_opencl_last_error.
 *
 * The backend retains the context and the copy queue it is given, and each
 * registered queue while its stream lives, so the runtime may release its
 * own references in any order. The core calls wait_device, copy and
 * wait_copies without the device lock, while other threads may add or
 * remove streams under it: the queue list and the last error have a lock of
 * their own, and wait_device finishes a retained snapshot of the list.
 */
#include "relo_opencl.h"

#include <pthread.h>
#include <string.h>

#include "backend/backend.h"
#include "base/hostmem.h"

typedef struct opencl_ctx {
    cl_context context; /* retained */
    cl_device_id device;
    cl_command_queue copy_queue; /* retained */
    bool out_of_order;           /* the copy queue may reorder commands: each
                                    copy waits behind a barrier (set at creation) */
    pthread_mutex_t lock;        /* the four fields below */
    cl_command_queue *queues;    /* registered streams' queues, each retained */
    size_t queue_count;
    size_t queue_cap;
    cl_int last_error; /* of the last failed OpenCL call */
} opencl_ctx;

/* What an OpenCL error means to relo. Allocation refusals only count as
 * "out of memory" where the device is asked for memory: the same codes from
 * a copy or a wait mean the work failed. */
static relo_status opencl_status(opencl_ctx *c, cl_int err, int allocating)
{
    if (err == CL_SUCCESS) return RELO_OK;
    pthread_mutex_lock(&c->lock);
    c->last_error = err;
    pthread_mutex_unlock(&c->lock);
    switch (err) {
    case CL_OUT_OF_HOST_MEMORY: return RELO_ERR_HOST_MEMORY;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_INVALID_BUFFER_SIZE: return allocating ? RELO_ERR_OUT_OF_MEMORY : RELO_ERR_BACKEND;
    default: return RELO_ERR_BACKEND;
    }
}

static relo_status ocl_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    opencl_ctx *c = ctx;
    if (size == 0 || size > SIZE_MAX) return RELO_ERR_BACKEND;
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(c->context, CL_MEM_READ_WRITE, (size_t)size, NULL, &err);
    if (err != CL_SUCCESS || !mem) return opencl_status(c, err ? err : CL_INVALID_VALUE, 1);
    *buffer = mem;
    *address = 0;
    return RELO_OK;
}

static void ocl_free(void *ctx, void *buffer, uint64_t size)
{
    opencl_ctx *c = ctx;
    (void)size;
    /* The contract lets free not fail: a refused release leaks the buffer
     * and leaves its code for relo_backend_opencl_last_error. */
    (void)opencl_status(c, clReleaseMemObject((cl_mem)buffer), 0);
}

static relo_status ocl_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    opencl_ctx *c = ctx;
    /* OpenCL refuses zero-byte transfers (CL_INVALID_VALUE); there is
     * nothing to do. */
    if (n == 0) return RELO_OK;
    if (offset > SIZE_MAX || n > SIZE_MAX) return RELO_ERR_BACKEND;
    cl_int err = clEnqueueWriteBuffer(c->copy_queue, (cl_mem)buffer, CL_TRUE, (size_t)offset, (size_t)n, src,
                                      0, NULL, NULL);
    return opencl_status(c, err, 0);
}

static relo_status ocl_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    opencl_ctx *c = ctx;
    if (n == 0) return RELO_OK;
    if (offset > SIZE_MAX || n > SIZE_MAX) return RELO_ERR_BACKEND;
    cl_int err = clEnqueueReadBuffer(c->copy_queue, (cl_mem)buffer, CL_TRUE, (size_t)offset, (size_t)n, dst,
                                     0, NULL, NULL);
    return opencl_status(c, err, 0);
}

static relo_status ocl_wait_device(void *ctx)
{
    opencl_ctx *c = ctx;
    /* A retained snapshot of the queues, so streams may come and go while
     * this waits. */
    pthread_mutex_lock(&c->lock);
    size_t n = c->queue_count;
    cl_command_queue *qs = n ? relo__malloc(n * sizeof *qs) : NULL;
    if (qs) {
        for (size_t i = 0; i < n; i++) {
            qs[i] = c->queues[i];
            (void)clRetainCommandQueue(qs[i]);
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (n && !qs) return RELO_ERR_HOST_MEMORY;
    /* Finish every queue even after one fails, so that no queue is left
     * running when relo abandons the relocation; report the first error. */
    relo_status first = RELO_OK;
    for (size_t i = 0; i < n; i++) {
        relo_status s = opencl_status(c, clFinish(qs[i]), 0);
        if (first == RELO_OK) first = s;
        (void)clReleaseCommandQueue(qs[i]);
    }
    relo__free(qs);
    relo_status s = opencl_status(c, clFinish(c->copy_queue), 0);
    return first != RELO_OK ? first : s;
}

static relo_status ocl_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                            uint64_t n)
{
    opencl_ctx *c = ctx;
    if (n == 0) return RELO_OK;
    if (src_offset > SIZE_MAX || dst_offset > SIZE_MAX || n > SIZE_MAX) return RELO_ERR_BACKEND;
    /* Copies take effect in the order enqueued (relo_backend.h): a slide's
     * pieces read what the piece before wrote over. An in-order queue does
     * that by itself; an out-of-order one gets a barrier before each copy. */
    cl_int err = c->out_of_order ? clEnqueueBarrierWithWaitList(c->copy_queue, 0, NULL, NULL) : CL_SUCCESS;
    if (err == CL_SUCCESS)
        err = clEnqueueCopyBuffer(c->copy_queue, (cl_mem)src, (cl_mem)dst, (size_t)src_offset,
                                  (size_t)dst_offset, (size_t)n, 0, NULL, NULL);
    return opencl_status(c, err, 0);
}

static relo_status ocl_wait_copies(void *ctx)
{
    opencl_ctx *c = ctx;
    return opencl_status(c, clFinish(c->copy_queue), 0);
}

static relo_status ocl_stream_add(void *ctx, void *backend_stream)
{
    opencl_ctx *c = ctx;
    /* A stream without a queue gives relo nothing to wait on. */
    if (!backend_stream) return RELO_OK;
    cl_command_queue q = (cl_command_queue)backend_stream;

    /* A queue of another context could not run our buffers' kernels, and a
     * handle that is no queue at all is refused here, not at the first
     * relocation. */
    cl_context qctx = NULL;
    cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (err != CL_SUCCESS) return opencl_status(c, err, 0);
    if (qctx != c->context) return RELO_ERR_BACKEND;

    pthread_mutex_lock(&c->lock);
    relo_status st = RELO_OK;
    if (c->queue_count == c->queue_cap) {
        size_t cap = c->queue_cap ? 2 * c->queue_cap : 4;
        cl_command_queue *grown = relo__realloc(c->queues, cap * sizeof *grown);
        if (grown) {
            c->queues = grown;
            c->queue_cap = cap;
        } else {
            st = RELO_ERR_HOST_MEMORY;
        }
    }
    if (st == RELO_OK) {
        err = clRetainCommandQueue(q);
        if (err == CL_SUCCESS) c->queues[c->queue_count++] = q;
    }
    pthread_mutex_unlock(&c->lock);
    if (st != RELO_OK) return st;
    return opencl_status(c, err, 0);
}

static void ocl_stream_remove(void *ctx, void *backend_stream)
{
    opencl_ctx *c = ctx;
    if (!backend_stream) return;
    /* Two streams may share a queue: the list holds it twice and one entry
     * goes per removal. */
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->queue_count; i++) {
        if (c->queues[i] != (cl_command_queue)backend_stream) continue;
        cl_int err = clReleaseCommandQueue(c->queues[i]);
        if (err != CL_SUCCESS) c->last_error = err;
        c->queues[i] = c->queues[--c->queue_count];
        break;
    }
    pthread_mutex_unlock(&c->lock);
}

static void ocl_destroy(void *ctx)
{
    opencl_ctx *c = ctx;
    for (size_t i = 0; i < c->queue_count; i++) (void)clReleaseCommandQueue(c->queues[i]);
    relo__free(c->queues);
    (void)clReleaseCommandQueue(c->copy_queue);
    (void)clReleaseContext(c->context);
    pthread_mutex_destroy(&c->lock);
    relo__free(c);
}

static const relo_backend_ops opencl_ops = {
    .alloc = ocl_alloc,
    .free = ocl_free,
    /* clReleaseMemObject gives memory back once no command uses it; there
     * is no cache to trim. */
    .flush = NULL,
    .write = ocl_write,
    .read = ocl_read,
    .wait_device = ocl_wait_device,
    .copy = ocl_copy,
    .wait_copies = ocl_wait_copies,
    .stream_add = ocl_stream_add,
    .stream_remove = ocl_stream_remove,
    .destroy = ocl_destroy,
};

/* The status of a failed query during creation: an invalid object is the
 * caller's argument, anything else the backend's trouble. */
static relo_status create_status(cl_int err)
{
    switch (err) {
    case CL_SUCCESS: return RELO_OK;
    case CL_INVALID_CONTEXT:
    case CL_INVALID_DEVICE:
    case CL_INVALID_COMMAND_QUEUE: return RELO_ERR_INVALID_ARGUMENT;
    case CL_OUT_OF_HOST_MEMORY: return RELO_ERR_HOST_MEMORY;
    default: return RELO_ERR_BACKEND;
    }
}

/* Reads the device's limits into props. */
static relo_status query_props(cl_device_id device, relo_backend_props *props)
{
    cl_ulong global = 0, max_alloc = 0;
    cl_uint align_bits = 0;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    if (err != CL_SUCCESS) return create_status(err);

    uint64_t alignment = align_bits / 8u;
    if (alignment == 0) alignment = 1;
    if (max_alloc < alignment) return RELO_ERR_BACKEND;
    props->alignment = alignment;
    props->max_page_size = max_alloc;
    props->capacity = global;
    props->granule = 0; /* OpenCL says nothing of how a device rounds a buffer */
    return RELO_OK;
}

/* Contract in relo_opencl.h. */
relo_status relo_backend_opencl_create(cl_context context, cl_device_id device, cl_command_queue copy_queue,
                                       relo_backend **out)
{
    if (!context || !device || !copy_queue || !out) return RELO_ERR_INVALID_ARGUMENT;

    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_command_queue_properties qprops = 0;
    cl_int err = clGetCommandQueueInfo(copy_queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (err == CL_SUCCESS) err = clGetCommandQueueInfo(copy_queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(copy_queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL);
    if (err != CL_SUCCESS) return create_status(err);
    if (qctx != context || qdev != device) return RELO_ERR_INVALID_ARGUMENT;

    relo_backend_props props;
    relo_status s = query_props(device, &props);
    if (s != RELO_OK) return s;

    opencl_ctx *c = relo__calloc(sizeof *c);
    if (!c) return RELO_ERR_HOST_MEMORY;
    c->context = context;
    c->device = device;
    c->copy_queue = copy_queue;
    c->out_of_order = (qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
    c->last_error = CL_SUCCESS;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        relo__free(c);
        return RELO_ERR_HOST_MEMORY;
    }

    err = clRetainContext(context);
    if (err != CL_SUCCESS) {
        pthread_mutex_destroy(&c->lock);
        relo__free(c);
        return create_status(err);
    }
    err = clRetainCommandQueue(copy_queue);
    if (err != CL_SUCCESS) {
        (void)clReleaseContext(context);
        pthread_mutex_destroy(&c->lock);
        relo__free(c);
        return create_status(err);
    }
    s = relo_backend_create(&opencl_ops, c, &props, out);
    if (s != RELO_OK) ocl_destroy(c);
    return s;
}

/* Contract in relo_opencl.h. */
relo_status relo_backend_opencl_last_error(const relo_backend *backend, cl_int *out)
{
    if (!backend || !out || backend->ops.destroy != ocl_destroy || !backend->ctx)
        return RELO_ERR_INVALID_ARGUMENT;
    opencl_ctx *c = backend->ctx;
    pthread_mutex_lock(&c->lock);
    *out = c->last_error;
    pthread_mutex_unlock(&c->lock);
    return RELO_OK;
}
