/*
 * bench_opencl_reloc.c — relocation bandwidth on the OpenCL backend, as a
 * ratio to a plain clEnqueueCopyBuffer + clFinish of the same size on the
 * same device, measured in the same run (target ≥ 0.8), under the default
 * (packed) placement and under the adaptive placement.
 *
 * One relocation run: a fresh device holds an allocation of S bytes that
 * relo_reclaim moves, and room for it on a page it keeps. The scene per
 * placement:
 *   packed (the default) a 2S block, released, leaves a page in which the
 *                        allocation is then alone, half full; a 2S + S/8
 *                        block, released, leaves a page in which an
 *                        allocation of S + S/8 then stands with S free:
 *                        the reclaim packs the first into the second's
 *                        page and gives the emptied 2S page back;
 *   adaptive             the allocation on the arena's first page, then a
 *                        block larger than that page grows the arena and
 *                        is released: the first page is outdated, the
 *                        grown one empty.
 * The timed part is relo_reclaim, which waits for the device, copies S
 * bytes, commits and gives the emptied page back (that release is part of
 * the cost). The backend is wrapped (bench_backend.h) to count the device
 * waits (wait_device + wait_copies) of each reclaim. S starts at 2 MiB:
 * the packed placement keeps allocations of 1 MiB and less in pages of at
 * most 2 MiB, where no half-full page has a denser one with room beside
 * it. Every buffer is written in full before the clock starts, so lazy
 * allocation and first-touch page faults are charged to neither side.
 * Runs of every kind, both placements, alternate after a warm-up; medians
 * and spreads are printed.
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
#include "bench_backend.h"
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
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &e->device, NULL) != CL_SUCCESS) e->device = NULL;
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

/* A fresh device holding an allocation of `size` bytes that relo_reclaim
 * moves under the placement, and room for it on a page the device keeps
 * (the scenes of the opening comment). */
typedef struct reloc_setup {
    bench_wrap wrap;
    relo_device *d;
    relo_stream *s;
    relo_handle h, stay;
} reloc_setup;

static void reloc_teardown(reloc_setup *x)
{
    if (x->h.id) relo_release(x->d, x->h);
    if (x->stay.id) relo_release(x->d, x->stay);
    if (x->s) relo_stream_destroy(x->s);
    relo_device_destroy(x->d);
}

/* Reserves `size` bytes and writes all of them. */
static int reserve_touched(reloc_setup *x, uint64_t size, relo_handle *h)
{
    return relo_reserve(x->s, size, h) == RELO_OK && touch(x->d, *h, size) == RELO_OK;
}

static int scene_packed(reloc_setup *x, uint64_t size, const unsigned char *fill)
{
    relo_handle w1 = {0}, w2 = {0};
    int ok = reserve_touched(x, 2 * size, &w1) && reserve_touched(x, 2 * size + size / 8, &w2) &&
             relo_release(x->d, w1) == RELO_OK && relo_reserve(x->s, size, &x->h) == RELO_OK &&
             relo_write(x->d, x->h, 0, fill, size) == RELO_OK && relo_release(x->d, w2) == RELO_OK &&
             relo_reserve(x->s, size + size / 8, &x->stay) == RELO_OK;
    return ok;
}

static int scene_adaptive(reloc_setup *x, uint64_t size, const unsigned char *fill)
{
    if (relo_reserve(x->s, size, &x->h) != RELO_OK) return 0;
    if (relo_write(x->d, x->h, 0, fill, size) != RELO_OK) return 0;
    /* A block larger than the first page grows the arena; once released,
     * its page is held, empty, with room for the relocated allocation. */
    relo_stats st;
    relo_handle grow = {0};
    relo_device_stats(x->d, &st);
    uint64_t grow_size = st.bytes_reserved + MiB;
    if (!reserve_touched(x, grow_size, &grow)) return 0;
    relo_release(x->d, grow);
    return 1;
}

static int reloc_prepare(env *e, relo_placement placement, uint64_t size, const unsigned char *fill,
                         relo_page_free page_free, reloc_setup *x)
{
    relo_backend *cl = NULL, *b = NULL;
    memset(x, 0, sizeof *x);
    if (relo_backend_opencl_create(e->context, e->device, e->copy_queue, &cl) != RELO_OK) return 0;
    if (bench_wrap_create(&x->wrap, cl, 0, 0, &b) != RELO_OK) {
        relo_backend_destroy(cl);
        return 0;
    }
    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.placement = placement;
    dd.page_free = page_free;
    if (relo_device_create(&dd, b, &x->d) != RELO_OK) {
        relo_backend_destroy(b);
        return 0;
    }
    int ok = relo_stream_create(x->d, e->queue, &x->s) == RELO_OK &&
             (placement == RELO_PLACEMENT_ADAPTIVE ? scene_adaptive(x, size, fill)
                                                   : scene_packed(x, size, fill));
    clFinish(e->copy_queue);
    if (!ok) reloc_teardown(x);
    return ok;
}

/* What one timed relocation did. */
typedef struct reloc_run {
    double seconds;     /* < 0: the run failed or moved other than `size` bytes */
    uint64_t waits;     /* device waits of the reclaim */
    uint64_t page_back; /* bytes of pages the reclaim gave back */
} reloc_run;

/* One timed relocation of `size` bytes. */
static reloc_run reloc_once(env *e, relo_placement placement, uint64_t size, const unsigned char *fill,
                            relo_page_free page_free)
{
    reloc_run run = {-1, 0, 0};
    reloc_setup x;
    if (!reloc_prepare(e, placement, size, fill, page_free, &x)) return run;
    relo_stats st, after;
    relo_device_stats(x.d, &st);
    uint64_t waits = bench_wrap_waits(&x.wrap);
    uint64_t t0 = bench_now_ns();
    relo_status rs = relo_reclaim(x.s);
    uint64_t t1 = bench_now_ns();
    relo_device_stats(x.d, &after);
    run.waits = bench_wrap_waits(&x.wrap) - waits;
    run.page_back = st.bytes_reserved > after.bytes_reserved ? st.bytes_reserved - after.bytes_reserved : 0;
    if (rs == RELO_OK && after.bytes_moved - st.bytes_moved == size) run.seconds = (double)(t1 - t0) * 1e-9;
    reloc_teardown(&x);
    return run;
}

/* The same relocation as a pass the runtime drives, each step timed
 * (seconds): plan (relo_pass_begin), wait and copy (relo_pass_copy: device
 * wait, clEnqueueCopyBuffer, clFinish), and end (relo_pass_end: commit and
 * giving the emptied page back). Returns 0 on error. */
static int reloc_phases_once(env *e, relo_placement placement, uint64_t size, const unsigned char *fill,
                             double phase[3])
{
    reloc_setup x;
    if (!reloc_prepare(e, placement, size, fill, RELO_PAGE_FREE_INLINE, &x)) return 0;
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
        ok = cs == RELO_OK && es == RELO_OK && out == RELO_PASS_LANDED && moves == 1 &&
             st.bytes_moved == size;
        phase[0] = (double)(t1 - t0) * 1e-9;
        phase[1] = (double)(t2 - t1) * 1e-9;
        phase[2] = (double)(t3 - t2) * 1e-9;
    }
    reloc_teardown(&x);
    return ok;
}

/* One timed plain copy plus the release of a committed buffer of
 * page_bytes, as large as the page relocation gives back: the same work
 * without relo's bookkeeping. */
static double copy_release_once(env *e, cl_mem src, cl_mem dst, uint64_t size, uint64_t page_bytes,
                                const unsigned char *fill)
{
    cl_int err = CL_SUCCESS;
    size_t page = (size_t)page_bytes;
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


#define PLACEMENTS 2
static const relo_placement placements[PLACEMENTS] = {RELO_PLACEMENT_PACKED, RELO_PLACEMENT_ADAPTIVE};

/* One placement's samples at one size. */
typedef struct placement_samples {
    double rel[MAX_RUNS], relt[MAX_RUNS], base2[MAX_RUNS], waits[MAX_RUNS];
    double plan_us[MAX_RUNS], copy_ms[MAX_RUNS], end_ms[MAX_RUNS], copy_bw[MAX_RUNS];
    int nr, nrt, nb2, nw, np;
    uint64_t page_back; /* bytes the warm-up's reclaim gave back */
} placement_samples;

/* One run of every kind of one placement, after the shared baseline copy. */
static void placement_run(env *e, relo_placement placement, uint64_t size, const unsigned char *fill,
                          cl_mem src, cl_mem dst, placement_samples *ps)
{
    double tb2 = copy_release_once(e, src, dst, size, ps->page_back, fill);
    reloc_run tr = reloc_once(e, placement, size, fill, RELO_PAGE_FREE_INLINE);
    reloc_run trt = reloc_once(e, placement, size, fill, RELO_PAGE_FREE_THREAD);
    double ph[3];
    if (reloc_phases_once(e, placement, size, fill, ph)) {
        ps->plan_us[ps->np] = ph[0] * 1e6;
        ps->copy_ms[ps->np] = ph[1] * 1e3;
        ps->end_ms[ps->np] = ph[2] * 1e3;
        ps->copy_bw[ps->np++] = (double)size / ph[1] / 1e9;
    }
    if (tb2 > 0) ps->base2[ps->nb2++] = (double)size / tb2 / 1e9;
    if (tr.seconds > 0) {
        ps->rel[ps->nr++] = (double)size / tr.seconds / 1e9;
        ps->waits[ps->nw++] = (double)tr.waits;
    }
    if (trt.seconds > 0) ps->relt[ps->nrt++] = (double)size / trt.seconds / 1e9;
}

/* Prints one placement's lines at one size; returns 1 when it misses the
 * target (or a kind of run never succeeded). */
static int placement_report(relo_placement placement, uint64_t size, placement_samples *ps, bench_summary sb)
{
    unsigned long long mib = (unsigned long long)(size / MiB);
    printf("  %4llu MiB, %s%s:\n", mib, relo_placement_name(placement),
           placement == RELO_PLACEMENT_PACKED ? " (the default)" : "");
    if (ps->nr == 0 || ps->nrt == 0 || ps->nb2 == 0 || ps->np == 0) {
        printf("    a run failed\n");
        return 1;
    }
    char what[96];
    bench_summary sr = bench_summarize(ps->rel, ps->nr);
    bench_print("relocation (relo_reclaim)", "GB/s", sr);
    bench_print("device waits per reclaim", "", bench_summarize(ps->waits, ps->nw));
    snprintf(what, sizeof what, "copy + clReleaseMemObject(%llu MiB page)",
             (unsigned long long)(ps->page_back / MiB));
    bench_summary sb2 = bench_summarize(ps->base2, ps->nb2);
    bench_print(what, "GB/s", sb2);
    bench_ratio("ratio to plain copy", sr.median / sb.median, ">= 0.8");
    bench_ratio("ratio to copy + release", sr.median / sb2.median, "~1: relo's own overhead");
    /* The same relocation with the emptied page freed on the device's own
     * thread (RELO_PAGE_FREE_THREAD): the caller's time is the wait, the
     * copy and the commit. */
    bench_summary srt = bench_summarize(ps->relt, ps->nrt);
    bench_print("relocation, free on relo's thread", "GB/s", srt);
    double ratio = srt.median / sb.median;
    bench_ratio("  its ratio to plain copy", ratio, ">= 0.8");
    /* Where a relocation's time goes, from the same relocation driven as a
     * pass. */
    bench_print("pass: relo_pass_begin (plan)", "us", bench_summarize(ps->plan_us, ps->np));
    bench_print("pass: relo_pass_copy (wait+copy)", "ms", bench_summarize(ps->copy_ms, ps->np));
    bench_print("pass: relo_pass_end (commit+give back)", "ms", bench_summarize(ps->end_ms, ps->np));
    bench_summary sc = bench_summarize(ps->copy_bw, ps->np);
    bench_print("pass: copy step alone", "GB/s", sc);
    bench_ratio("copy step / plain copy", sc.median / sb.median, "~1: the copy itself");
    return ratio < 0.8;
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
    printf("bench_opencl_reloc: %s, %d runs per size and placement\n", name, runs);

    static const uint64_t sizes[] = {2 * MiB, 8 * MiB, 64 * MiB, 256 * MiB};
    int below_target = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t size = sizes[i];
        /* Room for the packed scene's two pages, the emptied page of the
         * baseline and its two buffers. */
        if (2 * size + size / 8 > max_alloc || 9 * size + 32 * MiB > global) continue;
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

        /* Warm-up: one of each, not recorded; it also tells each placement's
         * baseline how large a page the reclaim gives back. */
        static placement_samples ps[PLACEMENTS];
        memset(ps, 0, sizeof ps);
        (void)copy_once(&e, src, dst, size);
        for (int p = 0; p < PLACEMENTS; p++) {
            reloc_run w = reloc_once(&e, placements[p], size, fill, RELO_PAGE_FREE_INLINE);
            ps[p].page_back = w.page_back ? w.page_back : size;
            (void)reloc_once(&e, placements[p], size, fill, RELO_PAGE_FREE_THREAD);
            double ph[3];
            (void)reloc_phases_once(&e, placements[p], size, fill, ph);
        }
        double base[MAX_RUNS];
        int nb = 0;
        for (int r = 0; r < runs; r++) {
            double tb = copy_once(&e, src, dst, size);
            if (tb > 0) base[nb++] = (double)size / tb / 1e9;
            for (int p = 0; p < PLACEMENTS; p++)
                placement_run(&e, placements[p], size, fill, src, dst, &ps[p]);
        }
        clReleaseMemObject(src);
        clReleaseMemObject(dst);
        free(fill);
        if (nb == 0) {
            printf("  %llu MiB: the baseline copy failed\n", (unsigned long long)(size / MiB));
            below_target++;
            continue;
        }
        bench_summary sb = bench_summarize(base, nb);
        char what[96];
        snprintf(what, sizeof what, "%4llu MiB clEnqueueCopyBuffer (baseline)",
                 (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sb);
        for (int p = 0; p < PLACEMENTS; p++)
            below_target += placement_report(placements[p], size, &ps[p], sb);
    }
    env_close(&e);
    return below_target ? 1 : 0;
}
