/*
 * cuda_standin.c — a stand-in for the CUDA driver library: the entry points
 * relo's CUDA backend, its tests and the CUDA graph example call, with the
 * prototypes of the toolkit's cuda.h, over host memory. Test programs link
 * it where a real program links libcuda. What it models, and what it does
 * not, is in cuda_standin.h and docs/cuda-standin.md.
 *
 * One mutex guards every piece of state, and queued operations run on the
 * thread that waits for them, under that mutex: the stand-in needs no
 * thread of its own. The current-context stack is per thread, as in the
 * driver.
 *
 * Ordering: each stream is a FIFO of operations numbered 1, 2, ... An
 * operation carries the (stream, number) pairs it must wait for: those the
 * legacy default stream's rules add when it is enqueued, and an event a
 * stream waits on. Running an operation first runs what it waits for; every
 * pair names an operation enqueued earlier, so this always ends. Nothing
 * runs before something waits for it.
 */
#include "cuda_standin.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* cuMemAlloc's alignment guarantee; ranges are rounded up to it. */
#define ALIGNMENT 256u
/* Depth of each thread's current-context stack. */
#define STACK_DEPTH 16
/* Fresh ranges hold this byte, so a copy that ran too early shows. */
#define FRESH_BYTE 0xCA
#define MAX_FAULTS 16

typedef struct wait_for {
    size_t stream; /* id in the stream table */
    uint64_t seq;  /* the operation that must have run */
} wait_for;

typedef enum op_kind { OP_COPY, OP_SET, OP_MARK } op_kind;

/* One queued operation. Device ranges are checked when it runs; a range
 * that is no longer allocated then is an illegal address, sticky to the
 * context as on a real device. */
typedef struct op {
    op_kind kind;
    CUdeviceptr dst;       /* device target, unless host_dst */
    CUdeviceptr src;       /* device source (OP_COPY), unless staged */
    void *host_dst;        /* cuMemcpyDtoH's target */
    unsigned char *staged; /* cuMemcpyHtoD's bytes, owned */
    size_t n;
    unsigned char value; /* OP_SET */
    uint64_t seq;
    wait_for *waits; /* owned */
    size_t wait_count;
    struct op *next;
} op;

struct CUgraph_st {
    op *head, *tail; /* captured operations, without waits */
};

struct CUgraphExec_st {
    op *head, *tail;
};

struct CUstream_st {
    CUcontext ctx;
    size_t id;           /* index in the stream table */
    unsigned flags;      /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
    int legacy;          /* the context's legacy default stream */
    op *head, *tail;     /* pending operations */
    uint64_t last_seq;   /* of the last operation enqueued */
    CUgraph capture;     /* the graph being captured into, or NULL */
    int capture_invalid; /* an illegal call ended the capture */
};

struct CUctx_st {
    CUdevice device;
    int refs; /* primary-context retains; 0 = inactive */
    CUstream legacy;
    CUresult sticky; /* an error every later wait reports */
};

struct CUevent_st {
    CUcontext ctx;
    int recorded;
    size_t stream; /* where the last record went */
    uint64_t seq;
};

typedef struct range {
    CUdeviceptr base;
    size_t size;
    CUdevice device;
} range;

typedef struct fault {
    const char *entry;
    unsigned after;
    CUresult code;
} fault;

/* All of it protected by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct CUctx_st contexts[CUDA_STANDIN_DEVICES];
static size_t memory_total = CUDA_STANDIN_DEFAULT_MEMORY;
static size_t memory_used[CUDA_STANDIN_DEVICES];
static CUstream *stream_table; /* by id; NULL once destroyed */
static size_t stream_count, stream_cap;
static range *ranges;
static size_t range_count, range_cap;
static fault faults[MAX_FAULTS];
static size_t fault_count;

/* Per thread, as the driver's. */
static _Thread_local CUcontext ctx_stack[STACK_DEPTH];
static _Thread_local int ctx_depth;

/* ------------------------------------------------------------------ */
/* Controls                                                            */
/* ------------------------------------------------------------------ */

void cuda_standin_fail(const char *entry, unsigned after, CUresult code)
{
    pthread_mutex_lock(&lock);
    if (fault_count < MAX_FAULTS) faults[fault_count++] = (fault){entry, after, code};
    pthread_mutex_unlock(&lock);
}

void cuda_standin_set_memory(size_t bytes)
{
    pthread_mutex_lock(&lock);
    memory_total = bytes;
    pthread_mutex_unlock(&lock);
}

void cuda_standin_reset(void)
{
    pthread_mutex_lock(&lock);
    fault_count = 0;
    memory_total = CUDA_STANDIN_DEFAULT_MEMORY;
    pthread_mutex_unlock(&lock);
}

size_t cuda_standin_pending(void)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < stream_count; i++)
        for (op *o = stream_table[i] ? stream_table[i]->head : NULL; o; o = o->next) n++;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t cuda_standin_streams(void)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < stream_count; i++) n += stream_table[i] && !stream_table[i]->legacy;
    pthread_mutex_unlock(&lock);
    return n;
}

/* The code an armed fault gives this call of entry, or CUDA_SUCCESS. Every
 * entry point asks first, before it changes anything. */
static CUresult injected(const char *entry)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < fault_count; i++) {
        if (strcmp(faults[i].entry, entry) != 0) continue;
        if (faults[i].after > 0) {
            faults[i].after--;
            continue;
        }
        r = faults[i].code;
        faults[i] = faults[--fault_count];
        break;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

#define ENTRY(name)                                      \
    do {                                                 \
        CUresult injected_ = injected(name);             \
        if (injected_ != CUDA_SUCCESS) return injected_; \
    } while (0)

/* ------------------------------------------------------------------ */
/* State helpers; every one expects the lock held                      */
/* ------------------------------------------------------------------ */

static CUcontext current(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

static int context_live(CUcontext ctx)
{
    for (int i = 0; i < CUDA_STANDIN_DEVICES; i++)
        if (ctx == &contexts[i]) return ctx->refs > 0;
    return 0;
}

static size_t context_free_bytes(CUdevice dev)
{
    size_t held = memory_used[dev] + (contexts[dev].refs > 0 ? CUDA_STANDIN_CONTEXT_BYTES : 0);
    return held < memory_total ? memory_total - held : 0;
}

/* The range holding [p, p + n) on dev, or NULL. */
static range *range_of(CUdeviceptr p, size_t n, CUdevice dev)
{
    for (size_t i = 0; i < range_count; i++) {
        range *r = &ranges[i];
        if (r->device == dev && p >= r->base && n <= r->size && p - r->base <= r->size - n) return r;
    }
    return NULL;
}

/* A user's stream handle, NULL and CU_STREAM_LEGACY meaning the current
 * context's legacy stream. Sets *r and returns NULL when it names none. */
static CUstream stream_of(CUstream h, CUresult *r)
{
    *r = CUDA_SUCCESS;
    if (h == NULL || h == CU_STREAM_LEGACY) {
        CUcontext ctx = current();
        if (!ctx) *r = CUDA_ERROR_INVALID_CONTEXT;
        return ctx ? ctx->legacy : NULL;
    }
    if (h == CU_STREAM_PER_THREAD) {
        /* Per-thread default streams are not modelled. */
        *r = CUDA_ERROR_NOT_SUPPORTED;
        return NULL;
    }
    for (size_t i = 0; i < stream_count; i++)
        if (stream_table[i] == h && !h->legacy) return h;
    *r = CUDA_ERROR_INVALID_HANDLE;
    return NULL;
}

static CUresult stream_register(CUcontext ctx, unsigned flags, int legacy, CUstream *out)
{
    if (stream_count == stream_cap) {
        size_t cap = stream_cap ? 2 * stream_cap : 16;
        CUstream *grown = realloc(stream_table, cap * sizeof *grown);
        if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
        stream_table = grown;
        stream_cap = cap;
    }
    CUstream s = calloc(1, sizeof *s);
    if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->id = stream_count;
    s->flags = flags;
    s->legacy = legacy;
    stream_table[stream_count++] = s;
    *out = s;
    return CUDA_SUCCESS;
}

static int pending(CUstream s)
{
    return s->head != NULL;
}

static void op_free(op *o)
{
    free(o->staged);
    free(o->waits);
    free(o);
}

static void ops_free(op *head)
{
    while (head) {
        op *next = head->next;
        op_free(head);
        head = next;
    }
}

static void run_until(size_t id, uint64_t seq);

/* Runs o's effect on the memory of ctx's device. */
static void execute(op *o, CUcontext ctx)
{
    if (ctx->sticky != CUDA_SUCCESS || o->kind == OP_MARK) return;
    if ((!o->host_dst && !range_of(o->dst, o->n, ctx->device)) ||
        (o->kind == OP_COPY && !o->staged && !range_of(o->src, o->n, ctx->device))) {
        ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        return;
    }
    void *to = o->host_dst ? o->host_dst : (void *)(uintptr_t)o->dst;
    if (o->kind == OP_SET) {
        memset(to, o->value, o->n);
    } else {
        const void *from = o->staged ? (const void *)o->staged : (const void *)(uintptr_t)o->src;
        memmove(to, from, o->n);
    }
}

/* Runs the first pending operation of s, after what it waits for. */
static void run_head(CUstream s)
{
    op *o = s->head;
    for (size_t i = 0; i < o->wait_count; i++) run_until(o->waits[i].stream, o->waits[i].seq);
    execute(o, s->ctx);
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    op_free(o);
}

/* Runs stream id's operations up to and including number seq. A destroyed
 * stream ran everything first. */
static void run_until(size_t id, uint64_t seq)
{
    CUstream s = stream_table[id];
    while (s && s->head && s->head->seq <= seq) run_head(s);
}

static void run_all(CUstream s)
{
    run_until(s->id, s->last_seq);
}

static void run_context(CUcontext ctx)
{
    for (size_t i = 0; i < stream_count; i++)
        if (stream_table[i] && stream_table[i]->ctx == ctx) run_all(stream_table[i]);
}

static int add_wait(op *o, size_t stream, uint64_t seq)
{
    wait_for *grown = realloc(o->waits, (o->wait_count + 1) * sizeof *grown);
    if (!grown) return 0;
    o->waits = grown;
    o->waits[o->wait_count++] = (wait_for){stream, seq};
    return 1;
}

static void end_capture_badly(CUstream s)
{
    if (s->capture) s->capture_invalid = 1;
}

/* Queues o on s (or appends it to the graph s captures into), adding the
 * legacy stream's waits: a legacy operation waits for every blocking
 * stream's earlier work, and a blocking stream's operation for the legacy
 * stream's. On failure o is freed. */
static CUresult enqueue(CUstream s, op *o)
{
    o->next = NULL;
    if (s->capture) {
        if (s->capture_invalid) {
            op_free(o);
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        }
        CUgraph g = s->capture;
        if (g->tail)
            g->tail->next = o;
        else
            g->head = o;
        g->tail = o;
        return CUDA_SUCCESS;
    }
    CUcontext ctx = s->ctx;
    int ok = 1;
    if (s->legacy) {
        for (size_t i = 0; i < stream_count; i++) {
            CUstream b = stream_table[i];
            if (!b || b == s || b->ctx != ctx || b->flags & CU_STREAM_NON_BLOCKING) continue;
            if (b->capture) {
                /* Joining a capturing stream's work is an illegal implicit
                 * dependency; the capture is over. */
                end_capture_badly(b);
                op_free(o);
                return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
            }
            if (pending(b)) ok = ok && add_wait(o, b->id, b->last_seq);
        }
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && pending(ctx->legacy)) {
        ok = add_wait(o, ctx->legacy->id, ctx->legacy->last_seq);
    }
    if (!ok) {
        op_free(o);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->seq = ++s->last_seq;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    return CUDA_SUCCESS;
}

static op *op_new(op_kind kind)
{
    op *o = calloc(1, sizeof *o);
    if (o) o->kind = kind;
    return o;
}

static op *op_clone(const op *from)
{
    op *o = op_new(from->kind);
    if (!o) return NULL;
    *o = *from;
    o->waits = NULL;
    o->wait_count = 0;
    o->next = NULL;
    o->staged = NULL;
    if (from->staged) {
        o->staged = malloc(from->n);
        if (!o->staged) {
            free(o);
            return NULL;
        }
        memcpy(o->staged, from->staged, from->n);
    }
    return o;
}

/* Starts an entry point that needs cuInit: takes the lock, or returns the
 * error. */
#define BEGIN(name)                        \
    ENTRY(name);                           \
    pthread_mutex_lock(&lock);             \
    if (!initialized) {                    \
        pthread_mutex_unlock(&lock);       \
        return CUDA_ERROR_NOT_INITIALIZED; \
    }

static CUresult done(CUresult r)
{
    pthread_mutex_unlock(&lock);
    return r;
}

/* ------------------------------------------------------------------ */
/* Initialisation, errors, devices                                     */
/* ------------------------------------------------------------------ */

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    ENTRY("cuInit");
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    initialized = 1;
    for (int i = 0; i < CUDA_STANDIN_DEVICES; i++) contexts[i].device = i;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    ENTRY("cuDriverGetVersion");
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

static const struct {
    CUresult code;
    const char *name;
    const char *text;
} error_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation is not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_text(CUresult error, const char **pStr, int name)
{
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof error_names / sizeof error_names[0]; i++) {
        if (error_names[i].code != error) continue;
        *pStr = name ? error_names[i].name : error_names[i].text;
        return CUDA_SUCCESS;
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    ENTRY("cuGetErrorName");
    return error_text(error, pStr, 1);
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    ENTRY("cuGetErrorString");
    return error_text(error, pStr, 0);
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    BEGIN("cuDeviceGetCount");
    if (!count) return done(CUDA_ERROR_INVALID_VALUE);
    *count = CUDA_STANDIN_DEVICES;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    BEGIN("cuDeviceGet");
    if (!device) return done(CUDA_ERROR_INVALID_VALUE);
    if (ordinal < 0 || ordinal >= CUDA_STANDIN_DEVICES) return done(CUDA_ERROR_INVALID_DEVICE);
    *device = ordinal;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    BEGIN("cuDeviceTotalMem");
    if (!bytes) return done(CUDA_ERROR_INVALID_VALUE);
    if (dev < 0 || dev >= CUDA_STANDIN_DEVICES) return done(CUDA_ERROR_INVALID_DEVICE);
    *bytes = memory_total;
    return done(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    BEGIN("cuDevicePrimaryCtxRetain");
    if (!pctx) return done(CUDA_ERROR_INVALID_VALUE);
    if (dev < 0 || dev >= CUDA_STANDIN_DEVICES) return done(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx = &contexts[dev];
    if (ctx->refs == 0) {
        if (context_free_bytes(dev) < CUDA_STANDIN_CONTEXT_BYTES) return done(CUDA_ERROR_OUT_OF_MEMORY);
        CUresult r = stream_register(ctx, CU_STREAM_DEFAULT, 1, &ctx->legacy);
        if (r != CUDA_SUCCESS) return done(r);
        ctx->sticky = CUDA_SUCCESS;
    }
    ctx->refs++;
    *pctx = ctx;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    BEGIN("cuDevicePrimaryCtxRelease");
    if (dev < 0 || dev >= CUDA_STANDIN_DEVICES) return done(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx = &contexts[dev];
    if (ctx->refs == 0) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (--ctx->refs > 0) return done(CUDA_SUCCESS);
    /* The last release destroys the context: its work finishes, its memory
     * and its legacy stream go. Streams the program did not destroy stay
     * allocated but name a dead context. */
    run_context(ctx);
    for (size_t i = 0; i < range_count;) {
        if (ranges[i].device != dev) {
            i++;
            continue;
        }
        free((void *)(uintptr_t)ranges[i].base);
        ranges[i] = ranges[--range_count];
    }
    memory_used[dev] = 0;
    stream_table[ctx->legacy->id] = NULL;
    free(ctx->legacy);
    ctx->legacy = NULL;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    BEGIN("cuCtxPushCurrent");
    if (!context_live(ctx)) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (ctx_depth == STACK_DEPTH) return done(CUDA_ERROR_INVALID_VALUE);
    ctx_stack[ctx_depth++] = ctx;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    BEGIN("cuCtxPopCurrent");
    if (ctx_depth == 0) return done(CUDA_ERROR_INVALID_CONTEXT);
    CUcontext ctx = ctx_stack[--ctx_depth];
    if (pctx) *pctx = ctx;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    BEGIN("cuCtxGetCurrent");
    if (!pctx) return done(CUDA_ERROR_INVALID_VALUE);
    *pctx = current();
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    BEGIN("cuCtxGetDevice");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (!device) return done(CUDA_ERROR_INVALID_VALUE);
    *device = ctx->device;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    BEGIN("cuCtxSynchronize");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    /* A capturing stream cannot be waited for; the stand-in is strict and
     * ends the capture, so a wait relo makes during a capture shows. */
    int capturing = 0;
    for (size_t i = 0; i < stream_count; i++) {
        CUstream s = stream_table[i];
        if (s && s->ctx == ctx && s->capture) {
            end_capture_badly(s);
            capturing = 1;
        }
    }
    if (capturing) return done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    run_context(ctx);
    return done(ctx->sticky);
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

CUresult CUDAAPI cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    BEGIN("cuMemGetInfo");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (!free_bytes || !total) return done(CUDA_ERROR_INVALID_VALUE);
    *free_bytes = context_free_bytes(ctx->device);
    *total = memory_total;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    BEGIN("cuMemAlloc");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (!dptr || bytesize == 0) return done(CUDA_ERROR_INVALID_VALUE);
    size_t rounded = (bytesize + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    if (rounded < bytesize || rounded > context_free_bytes(ctx->device))
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    if (range_count == range_cap) {
        size_t cap = range_cap ? 2 * range_cap : 64;
        range *grown = realloc(ranges, cap * sizeof *grown);
        if (!grown) return done(CUDA_ERROR_OUT_OF_MEMORY);
        ranges = grown;
        range_cap = cap;
    }
    void *p = NULL;
    if (posix_memalign(&p, ALIGNMENT, rounded) != 0) return done(CUDA_ERROR_OUT_OF_MEMORY);
    memset(p, FRESH_BYTE, rounded);
    ranges[range_count++] = (range){(CUdeviceptr)(uintptr_t)p, bytesize, ctx->device};
    memory_used[ctx->device] += rounded;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
    BEGIN("cuMemFree");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    for (size_t i = 0; i < range_count; i++) {
        if (ranges[i].base != dptr || ranges[i].device != ctx->device) continue;
        /* Work queued before the free finishes first, so it never touches
         * host memory that is gone. */
        run_context(ctx);
        memory_used[ctx->device] -= (ranges[i].size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        free((void *)(uintptr_t)dptr);
        ranges[i] = ranges[--range_count];
        return done(CUDA_SUCCESS);
    }
    return done(CUDA_ERROR_INVALID_VALUE);
}

/* Queues a device-memory operation on stream h: checks the ranges now, as
 * the driver checks pointers, and again when it runs. */
static CUresult queue_op(op *o, CUstream h)
{
    CUresult r;
    CUstream s = stream_of(h, &r);
    if (!s) {
        op_free(o);
        return r;
    }
    CUdevice dev = s->ctx->device;
    if ((!o->host_dst && !range_of(o->dst, o->n, dev)) ||
        (o->kind == OP_COPY && !o->staged && !range_of(o->src, o->n, dev))) {
        op_free(o);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return enqueue(s, o);
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    BEGIN("cuMemcpyHtoD");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (!srcHost || ByteCount == 0) return done(CUDA_ERROR_INVALID_VALUE);
    /* From pageable memory: the legacy stream's earlier work finishes, the
     * bytes are staged, and the call returns before they land. */
    run_all(ctx->legacy);
    op *o = op_new(OP_COPY);
    unsigned char *staged = malloc(ByteCount);
    if (!o || !staged) {
        free(o);
        free(staged);
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    }
    memcpy(staged, srcHost, ByteCount);
    o->staged = staged;
    o->dst = dstDevice;
    o->n = ByteCount;
    CUresult r = queue_op(o, NULL);
    return done(r != CUDA_SUCCESS ? r : ctx->sticky);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    BEGIN("cuMemcpyDtoH");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (!dstHost || ByteCount == 0) return done(CUDA_ERROR_INVALID_VALUE);
    op *o = op_new(OP_COPY);
    if (!o) return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->host_dst = dstHost;
    o->src = srcDevice;
    o->n = ByteCount;
    CUresult r = queue_op(o, NULL);
    if (r != CUDA_SUCCESS) return done(r);
    /* To pageable memory: returns once the bytes are there. */
    run_all(ctx->legacy);
    return done(ctx->sticky);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    BEGIN("cuMemcpyDtoDAsync");
    if (ByteCount == 0) return done(CUDA_ERROR_INVALID_VALUE);
    op *o = op_new(OP_COPY);
    if (!o) return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->dst = dstDevice;
    o->src = srcDevice;
    o->n = ByteCount;
    return done(queue_op(o, hStream));
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    BEGIN("cuMemsetD8Async");
    if (N == 0) return done(CUDA_ERROR_INVALID_VALUE);
    op *o = op_new(OP_SET);
    if (!o) return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->dst = dstDevice;
    o->value = uc;
    o->n = N;
    return done(queue_op(o, hStream));
}

/* ------------------------------------------------------------------ */
/* Streams                                                             */
/* ------------------------------------------------------------------ */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    BEGIN("cuStreamCreate");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    if (!phStream || (Flags != CU_STREAM_DEFAULT && Flags != CU_STREAM_NON_BLOCKING))
        return done(CUDA_ERROR_INVALID_VALUE);
    return done(stream_register(ctx, Flags, 0, phStream));
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    BEGIN("cuStreamDestroy");
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s || s->legacy) return done(s ? CUDA_ERROR_INVALID_HANDLE : r);
    /* The driver lets queued work finish after the call; running it now
     * looks the same from outside. */
    run_all(s);
    if (s->capture) {
        ops_free(s->capture->head);
        free(s->capture);
    }
    stream_table[s->id] = NULL;
    free(s);
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    BEGIN("cuStreamGetCtx");
    if (!pctx) return done(CUDA_ERROR_INVALID_VALUE);
    CUresult r;
    CUstream s = hStream == CU_STREAM_PER_THREAD ? stream_of(NULL, &r) : stream_of(hStream, &r);
    if (!s) return done(r);
    *pctx = s->ctx;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    BEGIN("cuStreamSynchronize");
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    if (s->capture) {
        end_capture_badly(s);
        return done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    run_all(s);
    return done(s->ctx->sticky);
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    BEGIN("cuStreamQuery");
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    if (s->capture) {
        end_capture_badly(s);
        return done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    if (!pending(s)) return done(s->ctx->sticky);
    /* Work was pending; it runs now, so a program polling this stream sees
     * it done on its next query, as it would on a device that progresses. */
    run_all(s);
    return done(CUDA_ERROR_NOT_READY);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    BEGIN("cuStreamWaitEvent");
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    if (!hEvent || Flags != 0) return done(CUDA_ERROR_INVALID_VALUE);
    if (s->capture) return done(CUDA_ERROR_NOT_SUPPORTED);
    if (!hEvent->recorded) return done(CUDA_SUCCESS);
    op *o = op_new(OP_MARK);
    if (!o) return done(CUDA_ERROR_OUT_OF_MEMORY);
    if (!add_wait(o, hEvent->stream, hEvent->seq)) {
        op_free(o);
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return done(enqueue(s, o));
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    BEGIN("cuEventCreate");
    CUcontext ctx = current();
    if (!ctx) return done(CUDA_ERROR_INVALID_CONTEXT);
    (void)Flags; /* timing and blocking-sync flags change nothing here */
    if (!phEvent) return done(CUDA_ERROR_INVALID_VALUE);
    CUevent e = calloc(1, sizeof *e);
    if (!e) return done(CUDA_ERROR_OUT_OF_MEMORY);
    e->ctx = ctx;
    *phEvent = e;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    BEGIN("cuEventDestroy");
    if (!hEvent) return done(CUDA_ERROR_INVALID_HANDLE);
    free(hEvent);
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    BEGIN("cuEventRecord");
    if (!hEvent) return done(CUDA_ERROR_INVALID_HANDLE);
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    if (s->ctx != hEvent->ctx) return done(CUDA_ERROR_INVALID_HANDLE);
    /* Events inside a capture (graph nodes) are not modelled. */
    if (s->capture) return done(CUDA_ERROR_NOT_SUPPORTED);
    op *o = op_new(OP_MARK);
    if (!o) return done(CUDA_ERROR_OUT_OF_MEMORY);
    r = enqueue(s, o);
    if (r != CUDA_SUCCESS) return done(r);
    hEvent->recorded = 1;
    hEvent->stream = s->id;
    hEvent->seq = s->last_seq;
    return done(CUDA_SUCCESS);
}

static int event_done(CUevent e)
{
    CUstream s = stream_table[e->stream];
    return !e->recorded || !s || !s->head || s->head->seq > e->seq;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    BEGIN("cuEventQuery");
    if (!hEvent) return done(CUDA_ERROR_INVALID_HANDLE);
    if (event_done(hEvent)) return done(hEvent->ctx->sticky);
    /* As cuStreamQuery: not ready now, done by the next query. */
    run_until(hEvent->stream, hEvent->seq);
    return done(CUDA_ERROR_NOT_READY);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    BEGIN("cuEventSynchronize");
    if (!hEvent) return done(CUDA_ERROR_INVALID_HANDLE);
    if (hEvent->recorded) run_until(hEvent->stream, hEvent->seq);
    return done(hEvent->ctx->sticky);
}

/* ------------------------------------------------------------------ */
/* Capture and graphs                                                  */
/* ------------------------------------------------------------------ */

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    BEGIN("cuStreamBeginCapture");
    (void)mode; /* every mode is as strict here: see cuCtxSynchronize */
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    if (s->legacy) return done(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (s->capture) return done(CUDA_ERROR_ILLEGAL_STATE);
    s->capture = calloc(1, sizeof *s->capture);
    if (!s->capture) return done(CUDA_ERROR_OUT_OF_MEMORY);
    s->capture_invalid = 0;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    BEGIN("cuStreamEndCapture");
    if (!phGraph) return done(CUDA_ERROR_INVALID_VALUE);
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    if (!s->capture) return done(CUDA_ERROR_ILLEGAL_STATE);
    CUgraph g = s->capture;
    s->capture = NULL;
    if (s->capture_invalid) {
        ops_free(g->head);
        free(g);
        *phGraph = NULL;
        return done(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    *phGraph = g;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
    BEGIN("cuGraphInstantiateWithFlags");
    if (!phGraphExec || !hGraph || flags != 0) return done(CUDA_ERROR_INVALID_VALUE);
    CUgraphExec x = calloc(1, sizeof *x);
    if (!x) return done(CUDA_ERROR_OUT_OF_MEMORY);
    for (const op *o = hGraph->head; o; o = o->next) {
        op *c = op_clone(o);
        if (!c) {
            ops_free(x->head);
            free(x);
            return done(CUDA_ERROR_OUT_OF_MEMORY);
        }
        if (x->tail)
            x->tail->next = c;
        else
            x->head = c;
        x->tail = c;
    }
    *phGraphExec = x;
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    BEGIN("cuGraphLaunch");
    if (!hGraphExec) return done(CUDA_ERROR_INVALID_VALUE);
    CUresult r;
    CUstream s = stream_of(hStream, &r);
    if (!s) return done(r);
    /* The nodes run in capture order, after the stream's earlier work; their
     * addresses were baked in, so a range freed since is an illegal address
     * when they run. */
    for (const op *o = hGraphExec->head; o; o = o->next) {
        op *c = op_clone(o);
        if (!c) return done(CUDA_ERROR_OUT_OF_MEMORY);
        r = enqueue(s, c);
        if (r != CUDA_SUCCESS) return done(r);
    }
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    BEGIN("cuGraphExecDestroy");
    if (!hGraphExec) return done(CUDA_ERROR_INVALID_VALUE);
    ops_free(hGraphExec->head);
    free(hGraphExec);
    return done(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    BEGIN("cuGraphDestroy");
    if (!hGraph) return done(CUDA_ERROR_INVALID_VALUE);
    ops_free(hGraph->head);
    free(hGraph);
    return done(CUDA_SUCCESS);
}
