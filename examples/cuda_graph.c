/*
 * cuda_graph.c — how a CUDA runtime records a graph over relo memory and
 * keeps it valid while relo relocates everything else.
 *
 * A graph bakes device addresses in. relo therefore guards every page a
 * recording stream resolved: the page never moves, is never released and
 * serves nothing new until the relo_graph goes. The runtime brackets its
 * CUDA capture with relo's:
 *
 *   relo_capture_prepare   relocate outdated pages first (nothing left to guard
 *                          on them), then warm up
 *   relo_capture_begin     from here no relocation, no release
 *   cuStreamBeginCapture   ... resolve handles, enqueue work ...
 *   cuStreamEndCapture
 *   relo_capture_end       the touched pages get guards, held by the relo_graph
 *
 * Here the graph is one memset node writing 0x42 over a 1 MiB allocation.
 * After the capture the workload grows (a 10 MiB reservation makes 11 MiB
 * pages, the graph's 2 MiB page becomes outdated) and relo_reclaim runs:
 * the guarded page stays, so launching the graph still writes the right
 * bytes. Once the graph is destroyed, reclaim moves the allocation and the
 * old page goes back.
 *
 * Needs a CUDA device; exits 77 (skip) without one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relo.h"
#include "relo_cuda.h"

#define MiB (UINT64_C(1) << 20)

#define CU(call)                                                                          \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                         \
            const char *n_ = NULL;                                                        \
            cuGetErrorName(r_, &n_);                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, n_ ? n_ : "?"); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define RELO(call)                                                                               \
    do {                                                                                         \
        relo_status s_ = (call);                                                                 \
        if (s_ != RELO_OK) {                                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, relo_status_name(s_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

/* True when every byte of the allocation reads v. */
static int all_bytes(relo_device *d, relo_handle h, uint64_t n, unsigned char v)
{
    unsigned char *p = malloc((size_t)n);
    int ok = p && relo_read(d, h, 0, p, n) == RELO_OK;
    for (uint64_t i = 0; ok && i < n; i++) ok = p[i] == v;
    free(p);
    return ok;
}

static void print_stats(relo_device *d, const char *when)
{
    relo_stats st;
    relo_device_stats(d, &st);
    printf("%-28s pages %llu (outdated %llu, guarded %llu), moved %llu\n", when, (unsigned long long)st.pages,
           (unsigned long long)st.outdated_pages, (unsigned long long)st.guarded_pages,
           (unsigned long long)st.allocations_moved);
}

int main(void)
{
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxPushCurrent(ctx));
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    /* relo over the CUDA context; the backend makes its own copy stream. */
    relo_backend *backend;
    relo_device *device;
    relo_stream *rs;
    RELO(relo_backend_cuda_create(ctx, dev, NULL, &backend));
    RELO(relo_device_create(NULL, backend, &device));
    RELO(relo_stream_create(device, stream, &rs));

    relo_handle data;
    RELO(relo_reserve(rs, MiB, &data));

    /* Record: relo's bracket around CUDA's. */
    RELO(relo_capture_prepare(rs));
    RELO(relo_capture_begin(rs));
    CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    relo_binding b;
    RELO(relo_resolve(rs, data, &b)); /* the page is now "touched" */
    CU(cuMemsetD8Async((CUdeviceptr)b.address, 0x42, (size_t)b.size, stream));
    CUgraph graph;
    CU(cuStreamEndCapture(stream, &graph));
    relo_graph *guards;
    RELO(relo_capture_end(rs, &guards));
    CUgraphExec exec;
    CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
    print_stats(device, "after capture:");

    /* Growth, then a reclaim: the graph's page is outdated but guarded. */
    relo_handle big;
    RELO(relo_reserve(rs, 10 * MiB, &big));
    RELO(relo_reclaim(rs));
    print_stats(device, "after growth + reclaim:");

    /* The graph still writes where the allocation is. */
    unsigned char zero[4096];
    memset(zero, 0, sizeof zero);
    for (uint64_t off = 0; off < MiB; off += sizeof zero)
        RELO(relo_write(device, data, off, zero, sizeof zero));
    CU(cuGraphLaunch(exec, stream));
    CU(cuStreamSynchronize(stream));
    int graph_ok = all_bytes(device, data, MiB, 0x42);
    printf("graph launch after reclaim:  %s\n", graph_ok ? "bytes correct" : "WRONG BYTES");

    /* Without the graph the page is ordinary: reclaim moves the allocation
     * and gives the old page back. */
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(graph));
    relo_graph_destroy(guards);
    RELO(relo_reclaim(rs));
    print_stats(device, "after graph destroy + reclaim:");
    int moved_ok = all_bytes(device, data, MiB, 0x42);
    printf("bytes after relocation:      %s\n", moved_ok ? "intact" : "LOST");

    RELO(relo_release(device, data));
    RELO(relo_release(device, big));
    RELO(relo_stream_destroy(rs));
    RELO(relo_device_destroy(device));
    CU(cuStreamDestroy(stream));
    CUcontext popped;
    CU(cuCtxPopCurrent(&popped));
    CU(cuDevicePrimaryCtxRelease(dev));
    return graph_ok && moved_ok ? 0 : 1;
}
