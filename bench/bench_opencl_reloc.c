/*
 * bench_opencl_reloc.c — relocation bandwidth on the OpenCL backend, as a
 * ratio to a plain clEnqueueCopyBuffer + clFinish of the same size on the
 * same device, measured in the same run (target ≥ 0.8).
 *
 * One relocation run: a fresh device holds an allocation of S bytes on an
 * outdated page and an empty current page with room for it (reserve S,
 * reserve a larger block that grows the arena, release that block); the
 * timed part is relo_reclaim, which waits for the device, copies S bytes,
 * commits and gives the old page back (that release is part of the cost).
 * Every buffer is written in full before the clock starts, so lazy
 * allocation and first-touch page faults are charged to neither side. Runs of both kinds alternate
 * after a warm-up; medians and spreads are printed.
 *
 * The same relocation is also driven as a pass (relo_pass_begin,
 * relo_pass_copy, relo_pass_end), each step timed, to show where the time
 * goes: planning, waiting and copying, or committing and giving the
 * emptied page back.
 *
 * Each relocation runs twice: with the emptied page freed by the calling
 * thread (the default) and on the device's own thread
 * (RELO_PAGE_FREE_THREAD); the exit status judges the second.
 *
 * A second baseline adds the release of a committed buffer as large as the
 * page relocation gives back, the work relocation must do beyond the copy;
 * the ratio to it shows relo's own overhead. On drivers where giving memory
 * back is slow (unmapping host memory on a CPU device) the first ratio
 * falls for large sizes while the second stays near 1.
 *
 * Usage: bench_opencl_reloc [runs]   (default 15)
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "relo.h"
#include "relo_opencl.h"

#define MiB (UINT64_C(1) << 20)
#define MAX_RUNS 101

typedef struct env {
    cl_device_id device;
    cl_context context;
    cl_command_queue copy_queue;
    cl_command_queue queue;
} env;

static int env_open(env *e)
{
    memset(e, 0, sizeof *e);
    cl_platform_id plats[16];
    cl_uint n = 0;
    if (clGetPlatformIDs(16, plats, &n) != CL_SUCCESS || n == 0) return 0;
    for (cl_uint i = 0; i < n && i < 16 && !e->device; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &e->device, NULL) != CL_SUCCESS)
            e->device = NULL;
    if (!e->device) return 0;
    cl_int err = CL_SUCCESS;
    e->context = clCreateContext(NULL, 1, &e->device, NULL, NULL, &err);
    if (err == CL_SUCCESS) e->copy_queue = clCreateCommandQueue(e->context, e->device, 0, &err);
    if (err == CL_SUCCESS) e->queue = clCreateCommandQueue(e->context, e->device, 0, &err);
    return err == CL_SUCCESS;
}

static void env_close(env *e)
{
    if (e->queue) clReleaseCommandQueue(e->queue);
    if (e->copy_queue) clReleaseCommandQueue(e->copy_queue);
    if (e->context) clReleaseContext(e->context);
}

/* Writes every byte of the allocation, so its page is committed on
 * implementations that allocate lazily or fault pages in at first touch: a
 * relocation target lies in room a workload already used. */
static relo_status touch(relo_device *d, relo_handle h, uint64_t n)
{
    unsigned char *zero = calloc(1, (size_t)n);
    if (!zero) return RELO_ERR_HOST_MEMORY;
    relo_status s = relo_write(d, h, 0, zero, n);
    free(zero);
    return s;
}

/* A fresh device holding an allocation of `size` bytes on an outdated page,
 * and an empty current page with room for it. */
typedef struct reloc_setup {
    relo_device *d;
    relo_stream *s;
    relo_handle h;
} reloc_setup;

static void reloc_teardown(reloc_setup *x)
{
    if (x->h.id) relo_release(x->d, x->h);
    if (x->s) relo_stream_destroy(x->s);
    relo_device_destroy(x->d);
}

static int reloc_prepare(env *e, uint64_t size, const unsigned char *fill, relo_page_free page_free,
                         reloc_setup *x)
{
    relo_backend *b = NULL;
    relo_handle grow = {0};
    memset(x, 0, sizeof *x);
    if (relo_backend_opencl_create(e->context, e->device, e->copy_queue, &b) != RELO_OK) return 0;
    /* The seed policy: the scenario is its outdated page after growth. */
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.policy = RELO_POLICY_SEED;
    dd.page_free = page_free;
    if (relo_device_create(&dd, b, &x->d) != RELO_OK) {
        relo_backend_destroy(b);
        return 0;
    }
    if (relo_stream_create(x->d, e->queue, &x->s) != RELO_OK) goto fail;
    if (relo_reserve(x->s, size, &x->h) != RELO_OK) goto fail;
    if (relo_write(x->d, x->h, 0, fill, size) != RELO_OK) goto fail;
    /* A block larger than the first page grows the arena; once released,
     * its page is held, empty, with room for the relocated allocation. */
    relo_stats st;
    relo_device_stats(x->d, &st);
    uint64_t grow_size = st.bytes_reserved + MiB;
    if (relo_reserve(x->s, grow_size, &grow) != RELO_OK) goto fail;
    if (touch(x->d, grow, grow_size) != RELO_OK) goto fail;
    relo_release(x->d, grow);
    clFinish(e->copy_queue);
    return 1;
fail:
    if (grow.id) relo_release(x->d, grow);
    reloc_teardown(x);
    return 0;
}

/* One timed relocation of `size` bytes; returns seconds, or < 0 on error. */
static double reloc_once(env *e, uint64_t size, const unsigned char *fill, relo_page_free page_free)
{
    reloc_setup x;
    if (!reloc_prepare(e, size, fill, page_free, &x)) return -1;
    double t = -1;
    relo_stats st;
    relo_device_stats(x.d, &st);
    uint64_t moved_before = st.bytes_moved;
    uint64_t t0 = bench_now_ns();
    relo_status rs = relo_reclaim(x.s);
    uint64_t t1 = bench_now_ns();
    relo_device_stats(x.d, &st);
    if (rs == RELO_OK && st.bytes_moved - moved_before == size) t = (double)(t1 - t0) * 1e-9;
    reloc_teardown(&x);
    return t;
}

/* The same relocation as a pass the runtime drives, each step timed
 * (seconds): plan (relo_pass_begin), wait and copy (relo_pass_copy: device
 * wait, clEnqueueCopyBuffer, clFinish), and end (relo_pass_end: commit and
 * giving the emptied page back). Returns 0 on error. */
static int reloc_phases_once(env *e, uint64_t size, const unsigned char *fill, double phase[3])
{
    reloc_setup x;
    if (!reloc_prepare(e, size, fill, RELO_PAGE_FREE_INLINE, &x)) return 0;
    int ok = 0;
    relo_pass *pass = NULL;
    relo_pass_desc desc = {x.s, 0, 0};
    relo_pass_outcome out = RELO_PASS_ABANDONED;
    uint64_t t0 = bench_now_ns();
    if (relo_pass_begin(x.d, &desc, &pass) == RELO_OK) {
        uint64_t t1 = bench_now_ns();
        relo_status cs = relo_pass_copy(pass, &out);
        uint64_t t2 = bench_now_ns();
        uint32_t moves = relo_pass_move_count(pass);
        relo_status es = relo_pass_end(pass, out);
        uint64_t t3 = bench_now_ns();
        relo_stats st;
        relo_device_stats(x.d, &st);
        ok = cs == RELO_OK && es == RELO_OK && out == RELO_PASS_LANDED && moves == 1 && st.bytes_moved == size;
        phase[0] = (double)(t1 - t0) * 1e-9;
        phase[1] = (double)(t2 - t1) * 1e-9;
        phase[2] = (double)(t3 - t2) * 1e-9;
    }
    reloc_teardown(&x);
    return ok;
}

/* One timed plain copy plus the release of a committed buffer as large as
 * the page relocation gives back: the same work without relo's bookkeeping. */
static double copy_release_once(env *e, cl_mem src, cl_mem dst, uint64_t size,
                                const unsigned char *fill)
{
    cl_int err = CL_SUCCESS;
    size_t page = (size_t)(size + MiB);
    cl_mem old = clCreateBuffer(e->context, CL_MEM_READ_WRITE, page, NULL, &err);
    if (err != CL_SUCCESS) return -1;
    for (size_t off = 0; err == CL_SUCCESS && off < page; off += (size_t)size) {
        size_t n = page - off < (size_t)size ? page - off : (size_t)size;
        err = clEnqueueWriteBuffer(e->copy_queue, old, CL_TRUE, off, n, fill, 0, NULL, NULL);
    }
    uint64_t t0 = bench_now_ns();
    if (err == CL_SUCCESS)
        err = clEnqueueCopyBuffer(e->copy_queue, src, dst, 0, 0, (size_t)size, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(e->copy_queue);
    clReleaseMemObject(old);
    uint64_t t1 = bench_now_ns();
    return err == CL_SUCCESS ? (double)(t1 - t0) * 1e-9 : -1;
}

/* One timed plain copy of `size` bytes between two committed buffers. */
static double copy_once(env *e, cl_mem src, cl_mem dst, uint64_t size)
{
    uint64_t t0 = bench_now_ns();
    cl_int err = clEnqueueCopyBuffer(e->copy_queue, src, dst, 0, 0, (size_t)size, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(e->copy_queue);
    uint64_t t1 = bench_now_ns();
    return err == CL_SUCCESS ? (double)(t1 - t0) * 1e-9 : -1;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 15;
    if (runs < 3) runs = 3;
    if (runs > MAX_RUNS) runs = MAX_RUNS;
    env e;
    if (!env_open(&e)) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    char name[256] = "";
    cl_ulong max_alloc = 0, global = 0;
    clGetDeviceInfo(e.device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    clGetDeviceInfo(e.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(e.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    printf("bench_opencl_reloc: %s, %d runs per size\n", name, runs);

    static const uint64_t sizes[] = {1 * MiB, 8 * MiB, 64 * MiB, 256 * MiB};
    int below_target = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t size = sizes[i];
        /* Room for source page, grown page and the baseline's two buffers. */
        if (2 * size + 8 * MiB > max_alloc || 6 * size + 32 * MiB > global) continue;
        unsigned char *fill = malloc((size_t)size);
        if (!fill) break;
        for (uint64_t j = 0; j < size; j++) fill[j] = (unsigned char)(j * 31);

        cl_int err = CL_SUCCESS;
        cl_mem src = clCreateBuffer(e.context, CL_MEM_READ_WRITE, (size_t)size, NULL, &err);
        cl_mem dst = clCreateBuffer(e.context, CL_MEM_READ_WRITE, (size_t)size, NULL, &err);
        if (err != CL_SUCCESS) {
            free(fill);
            break;
        }
        clEnqueueWriteBuffer(e.copy_queue, src, CL_TRUE, 0, (size_t)size, fill, 0, NULL, NULL);
        clEnqueueWriteBuffer(e.copy_queue, dst, CL_TRUE, 0, (size_t)size, fill, 0, NULL, NULL);

        /* Warm-up: one of each, not recorded. */
        (void)copy_once(&e, src, dst, size);
        (void)reloc_once(&e, size, fill, RELO_PAGE_FREE_INLINE);
        (void)reloc_once(&e, size, fill, RELO_PAGE_FREE_THREAD);
        double ph[3];
        (void)reloc_phases_once(&e, size, fill, ph);

        double rel[MAX_RUNS], relt[MAX_RUNS], base[MAX_RUNS], base2[MAX_RUNS];
        double plan_us[MAX_RUNS], copy_ms[MAX_RUNS], end_ms[MAX_RUNS], copy_bw[MAX_RUNS];
        int nr = 0, nrt = 0, nb = 0, nb2 = 0, np = 0;
        for (int r = 0; r < runs; r++) {
            double tb = copy_once(&e, src, dst, size);
            double tb2 = copy_release_once(&e, src, dst, size, fill);
            double tr = reloc_once(&e, size, fill, RELO_PAGE_FREE_INLINE);
            double trt = reloc_once(&e, size, fill, RELO_PAGE_FREE_THREAD);
            if (reloc_phases_once(&e, size, fill, ph)) {
                plan_us[np] = ph[0] * 1e6;
                copy_ms[np] = ph[1] * 1e3;
                end_ms[np] = ph[2] * 1e3;
                copy_bw[np++] = (double)size / ph[1] / 1e9;
            }
            if (tb > 0) base[nb++] = (double)size / tb / 1e9;
            if (tb2 > 0) base2[nb2++] = (double)size / tb2 / 1e9;
            if (tr > 0) rel[nr++] = (double)size / tr / 1e9;
            if (trt > 0) relt[nrt++] = (double)size / trt / 1e9;
        }
        clReleaseMemObject(src);
        clReleaseMemObject(dst);
        free(fill);
        if (nr == 0 || nrt == 0 || nb == 0 || nb2 == 0 || np == 0) {
            printf("  %llu MiB: a run failed\n", (unsigned long long)(size / MiB));
            below_target++;
            continue;
        }
        char what[96];
        bench_summary sr = bench_summarize(rel, nr), sb = bench_summarize(base, nb);
        snprintf(what, sizeof what, "%4llu MiB relocation (relo_reclaim)",
                 (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sr);
        snprintf(what, sizeof what, "%4llu MiB clEnqueueCopyBuffer",
                 (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sb);
        bench_summary sb2 = bench_summarize(base2, nb2);
        snprintf(what, sizeof what, "%4llu MiB copy + clReleaseMemObject(page)",
                 (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sb2);
        snprintf(what, sizeof what, "%4llu MiB ratio to plain copy", (unsigned long long)(size / MiB));
        bench_ratio(what, sr.median / sb.median, ">= 0.8");
        snprintf(what, sizeof what, "%4llu MiB ratio to copy + release",
                 (unsigned long long)(size / MiB));
        bench_ratio(what, sr.median / sb2.median, "~1: relo's own overhead");
        /* The same relocation with the emptied page freed on the device's
         * own thread (RELO_PAGE_FREE_THREAD): the caller's time is the wait,
         * the copy and the commit. */
        bench_summary srt = bench_summarize(relt, nrt);
        snprintf(what, sizeof what, "%4llu MiB relocation, free on relo's thread", (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", srt);
        snprintf(what, sizeof what, "%4llu MiB   its ratio to plain copy", (unsigned long long)(size / MiB));
        double ratio = srt.median / sb.median;
        bench_ratio(what, ratio, ">= 0.8");
        if (ratio < 0.8) below_target++;
        /* Where a relocation's time goes, from the same relocation driven
         * as a pass. */
        snprintf(what, sizeof what, "%4llu MiB pass: relo_pass_begin (plan)", (unsigned long long)(size / MiB));
        bench_print(what, "us", bench_summarize(plan_us, np));
        snprintf(what, sizeof what, "%4llu MiB pass: relo_pass_copy (wait+copy)", (unsigned long long)(size / MiB));
        bench_print(what, "ms", bench_summarize(copy_ms, np));
        snprintf(what, sizeof what, "%4llu MiB pass: relo_pass_end (commit+give back)",
                 (unsigned long long)(size / MiB));
        bench_print(what, "ms", bench_summarize(end_ms, np));
        bench_summary sc = bench_summarize(copy_bw, np);
        snprintf(what, sizeof what, "%4llu MiB pass: copy step alone", (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sc);
        snprintf(what, sizeof what, "%4llu MiB copy step / plain copy", (unsigned long long)(size / MiB));
        bench_ratio(what, sc.median / sb.median, "~1: the copy itself");
    }
    env_close(&e);
    return below_target ? 1 : 0;
}
