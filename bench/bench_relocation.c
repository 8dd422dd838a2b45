/*
 * bench_relocation.c — what moving live allocations costs.
 *
 * 1. Bandwidth, host backend: outdated pages full of 1-8 MiB allocations
 *    (fixed seed) are relocated into room the current pool already holds
 *    (reason EXPLICIT), and, separately, into new pages (reason CAPTURE,
 *    which includes allocating and filling the new pages). The host backend
 *    skips its debugging fill of freed pages here. The bytes moved per
 *    second are set against two baselines measured in the same run: memcpy
 *    of the same sizes between fresh, touched buffers, and that memcpy plus
 *    giving the same bytes of pages back to the system, which relocation
 *    must also do (on a VM whose page unmapping is slow this dominates).
 *    Target: ratio >= 0.8.
 * 2. Relocation planning per moved allocation, adaptive placement, simulated
 *    backend (copies cost nothing, so what is timed is analysis,
 *    planning, commit and page release), in CPU time: (a) 100,000 live
 *    allocations all on outdated pages, all moving; (b) one outdated
 *    page's worth (20) moving next to 1,000, 100,000 and 1,000,000 live
 *    allocations on current pages, the three run interleaved round by
 *    round, to show the cost does not grow with what stays put.
 * Parts 1 and 2 relocate outdated pages, which only the adaptive placement has:
 * their devices ask for it by name. Part 3, the default placement's, runs
 * first. Every part prints the device waits (wait_device + wait_copies
 * calls the backend served) of its relocations and reclaims.
 * 3. Compaction planning per moved allocation, packed placement (the
 *    default), sim backend, in CPU time: 1,000, 100,000 and 1,000,000 live
 *    allocations of 64 KiB; three times, every other one of 256
 *    neighbours is released (at the start, a third and two thirds of the
 *    way through) and relo_reclaim packs the pages they leave half full.
 *    What is timed is the whole reclaim (choosing pages, planning, commit,
 *    release) per allocation it moves; the three sizes run interleaved,
 *    round by round.
 * Targets of parts 2 (b) and 3: <= 1 us per moved allocation at 100,000
 * live, and the median of each round's 1,000,000-live / 1,000-live ratio
 * <= 1.2; of 2 (a): <= 1 us per moved allocation.
 *
 * Options: bench_relocation [runs] [MiB of live data in part 1] [parts]
 *          (defaults 9, 192, 123: parts is the digits of the parts to run)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "relo.h"
#include "relo_backend.h"
#include "testing/testing.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

static void must(relo_status s, const char *what)
{
    if (s != RELO_OK) {
        fprintf(stderr, "%s: %s\n", what, relo_status_name(s));
        exit(1);
    }
}

typedef struct setup {
    relo_backend *be; /* the device's backend, for its call counts */
    relo_device *dev;
    relo_stream *s;
    relo_handle *live;
    size_t nlive;
    uint64_t *sizes;
    uint64_t bytes;
} setup;

static void setup_free(setup *x)
{
    for (size_t i = 0; i < x->nlive; i++) relo_release(x->dev, x->live[i]);
    must(relo_reclaim(x->s), "reclaim");
    must(relo_stream_destroy(x->s), "stream destroy");
    must(relo_device_destroy(x->dev), "device destroy");
    free(x->live);
    free(x->sizes);
}

static void push_live(setup *x, relo_handle h, uint64_t size)
{
    x->live = realloc(x->live, (x->nlive + 1) * sizeof *x->live);
    x->sizes = realloc(x->sizes, (x->nlive + 1) * sizeof *x->sizes);
    if (!x->live || !x->sizes) exit(1);
    x->live[x->nlive] = h;
    x->sizes[x->nlive++] = size;
}

/* Device waits (wait_device + wait_copies) the backend served so far. */
static uint64_t device_waits(relo_backend *be)
{
    relo_host_counts c;
    must(relo_backend_host_counts(be, &c), "host counts");
    return c.wait_device + c.wait_copies;
}

/* Device waits of the last timed relocation of part 2. */
static uint64_t relocation_waits;

/* ---- 1. bandwidth ------------------------------------------------------ */

/* Outdated 41 MiB pages packed with 1-8 MiB allocations totalling `total`
 * bytes; the current pool has 101 MiB pages and, when prepare_room, empty
 * pages enough to take every allocation. */
static setup bandwidth_setup(uint64_t total, int prepare_room)
{
    setup x;
    memset(&x, 0, sizeof x);
    relo_host_desc hd = {0};
    hd.alignment = 256;
    hd.no_free_fill = true; /* time relo, not the debugging fill of freed pages */
    relo_backend *be = NULL;
    must(relo_backend_host_create(&hd, &be), "host backend");
    relo_device_desc dd = {0};
    dd.placement = RELO_PLACEMENT_ADAPTIVE; /* outdated pages to relocate */
    must(relo_device_create(&dd, be, &x.dev), "device");
    x.be = be;
    must(relo_stream_create(x.dev, NULL, &x.s), "stream");

    relo_handle anchor, grow;
    must(relo_reserve(x.s, 40 * MIB, &anchor), "anchor"); /* 41 MiB pages */
    must(relo_release(x.dev, anchor), "release anchor");
    uint64_t seed = 4242;
    uint8_t fill = 1;
    while (x.bytes < total) {
        uint64_t size = MIB + bench_rand(&seed) % (7 * MIB + 1);
        relo_handle h;
        must(relo_reserve(x.s, size, &h), "reserve 1-8 MiB");
        uint8_t head[64];
        memset(head, fill++, sizeof head);
        must(relo_write(x.dev, h, 0, head, sizeof head), "write");
        push_live(&x, h, size);
        x.bytes += size;
    }
    must(relo_reserve(x.s, 100 * MIB, &grow), "grow"); /* 101 MiB pages */
    if (prepare_room) {
        relo_handle room[16];
        int n = 0;
        for (uint64_t held = 0; held < x.bytes + 101 * MIB && n < 16; held += 100 * MIB)
            must(relo_reserve(x.s, 100 * MIB, &room[n++]), "room");
        for (int i = 0; i < n; i++) must(relo_release(x.dev, room[i]), "release room");
    }
    push_live(&x, grow, 100 * MIB);
    return x;
}

/* The baseline: memcpy of the same sizes between fresh, touched buffers,
 * and, when give_back > 0, returning that many bytes of touched 41 MiB
 * blocks to the system (the pages a relocation empties go back too). */
static double memcpy_seconds(const uint64_t *sizes, size_t n, uint64_t total, uint64_t give_back)
{
    uint8_t *src = malloc(total), *dst = malloc(total);
    if (!src || !dst) exit(1);
    memset(src, 0x5A, total);
    memset(dst, 0xA5, total);
    enum { MAX_BLOCKS = 64 };
    void *blocks[MAX_BLOCKS];
    size_t nblocks = 0;
    for (uint64_t left = give_back; left > 0 && nblocks < MAX_BLOCKS; nblocks++) {
        uint64_t b = left < 41 * MIB ? left : 41 * MIB;
        if (!(blocks[nblocks] = malloc(b))) exit(1);
        memset(blocks[nblocks], 0x11, b);
        left -= b;
    }
    uint64_t t0 = bench_now_ns(), off = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(dst + off, src + off, sizes[i]);
        off += sizes[i];
    }
    for (size_t i = 0; i < nblocks; i++) free(blocks[i]);
    double s = (double)(bench_now_ns() - t0) * 1e-9;
    if (dst[total / 2] != 0x5A) exit(2);
    free(src);
    free(dst);
    return s;
}

static void bandwidth(int runs, uint64_t total)
{
    double *relo_bw = malloc((size_t)runs * sizeof(double));
    double *copy_bw = malloc((size_t)runs * sizeof(double));
    double *fresh_bw = malloc((size_t)runs * sizeof(double));
    double *ratio = malloc((size_t)runs * sizeof(double));
    double *ratio_fresh = malloc((size_t)runs * sizeof(double));
    double *ratio_fill = malloc((size_t)runs * sizeof(double));
    uint64_t moved_bytes = 0, moved = 0;
    if (!relo_bw || !copy_bw || !fresh_bw || !ratio || !ratio_fresh || !ratio_fill) exit(1);
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
        for (int fresh = 0; fresh < 2; fresh++) {
            setup x = bandwidth_setup(total, !fresh);
            relo_stats before, after;
            must(relo_device_stats(x.dev, &before), "stats");
            uint64_t w0 = device_waits(x.be);
            uint64_t t0 = bench_now_ns();
            must(relo__testing_relocate(x.s, fresh ? RELO_REASON_CAPTURE : RELO_REASON_EXPLICIT), "relocate");
            double secs = (double)(bench_now_ns() - t0) * 1e-9;
            uint64_t waits = device_waits(x.be) - w0;
            must(relo_device_stats(x.dev, &after), "stats");
            uint64_t bytes = after.bytes_moved - before.bytes_moved;
            if (after.outdated_pages != 0 || bytes == 0) {
                fprintf(stderr, "relocation left %llu outdated pages, moved %llu bytes\n",
                        (unsigned long long)after.outdated_pages, (unsigned long long)bytes);
                exit(1);
            }
            /* The baseline copies exactly the sizes that moved. */
            if (bytes < x.bytes) {
                fprintf(stderr, "moved %llu bytes of %llu\n", (unsigned long long)bytes,
                        (unsigned long long)x.bytes);
                exit(1);
            }
            bytes = x.bytes;
            double base = memcpy_seconds(x.sizes, x.nlive - 1, bytes, 0);
            uint64_t freed = before.bytes_reserved > after.bytes_reserved
                                 ? before.bytes_reserved - after.bytes_reserved
                                 : 0;
            double base_release = memcpy_seconds(x.sizes, x.nlive - 1, bytes, freed);
            if (r >= 0) {
                double bw = (double)bytes / secs / (double)MIB;
                double cbw = (double)bytes / base / (double)MIB;
                if (fresh) {
                    fresh_bw[r] = bw;
                    ratio_fresh[r] = bw / cbw;
                } else {
                    relo_bw[r] = bw;
                    copy_bw[r] = cbw;
                    ratio[r] = bw / cbw;
                    ratio_fill[r] = base_release / secs;
                }
                moved_bytes = bytes;
                moved = after.allocations_moved - before.allocations_moved;
                if (r == 0)
                    printf("  (%s: %llu backend allocs, %llu pages released, %llu device waits, %.3f s)\n",
                           fresh ? "CAPTURE" : "EXPLICIT",
                           (unsigned long long)(after.backend_allocs - before.backend_allocs),
                           (unsigned long long)(after.pages_released - before.pages_released),
                           (unsigned long long)waits, secs);
            }
            setup_free(&x);
        }
    }
    printf("\n1. relocation bandwidth, host backend: %llu allocations of 1-8 MiB, %.0f MiB moved per run\n",
           (unsigned long long)moved, (double)moved_bytes / (double)MIB);
    bench_print("relocate EXPLICIT into held room", "MiB/s", bench_summarize(relo_bw, runs));
    bench_print("relocate CAPTURE into new pages", "MiB/s", bench_summarize(fresh_bw, runs));
    bench_print("memcpy, same sizes, fresh touched buffers", "MiB/s", bench_summarize(copy_bw, runs));
    bench_summary rs = bench_summarize(ratio, runs), rf = bench_summarize(ratio_fresh, runs);
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]\n", "ratio EXPLICIT / memcpy alone", rs.median, rs.p10,
           rs.p90);
    bench_summary rl = bench_summarize(ratio_fill, runs);
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]   (target >= 0.8)\n",
           "ratio EXPLICIT / (memcpy + pages given back)", rl.median, rl.p10, rl.p90);
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]\n", "ratio CAPTURE (new pages) / memcpy", rf.median, rf.p10,
           rf.p90);
    free(ratio_fill);
    free(relo_bw);
    free(copy_bw);
    free(fresh_bw);
    free(ratio);
    free(ratio_fresh);
}

/* ---- 2. planning cost -------------------------------------------------- */

static setup sim_device_with(relo_placement placement)
{
    setup x;
    memset(&x, 0, sizeof x);
    relo_host_desc hd = {0};
    hd.alignment = 256;
    relo_backend *be = NULL;
    must(relo_backend_sim_create(&hd, &be), "sim backend");
    relo_device_desc dd = {0};
    dd.placement = placement;
    must(relo_device_create(&dd, be, &x.dev), "device");
    x.be = be;
    must(relo_stream_create(x.dev, NULL, &x.s), "stream");
    return x;
}

static setup sim_device(void)
{
    return sim_device_with(RELO_PLACEMENT_ADAPTIVE);
}

static void reserve_n(setup *x, size_t n, uint64_t lo, uint64_t hi, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t size = lo + bench_rand(&seed) % (hi - lo + 1);
        relo_handle h;
        must(relo_reserve(x->s, size, &h), "reserve");
        push_live(x, h, size);
    }
}

/* CPU ns per moved allocation of one relocation. */
static double timed_relocation(setup *x, relo_reason reason, uint64_t *moved_out)
{
    relo_stats before, after;
    uint64_t w0 = device_waits(x->be);
    must(relo_device_stats(x->dev, &before), "stats");
    uint64_t t0 = bench_cpu_ns();
    must(relo__testing_relocate(x->s, reason), "relocate");
    uint64_t ns = bench_cpu_ns() - t0;
    must(relo_device_stats(x->dev, &after), "stats");
    uint64_t moved = after.allocations_moved - before.allocations_moved;
    if (moved == 0) {
        fprintf(stderr, "relocation moved nothing\n");
        exit(1);
    }
    *moved_out = moved;
    relocation_waits = device_waits(x->be) - w0;
    return (double)ns / (double)moved;
}

/* The live counts the scaling parts compare: the baseline, the point of
 * the per-move target, and the scale the ratio is asked at. */
#define SCALES 3
static const size_t scale_live[SCALES] = {1000, 100000, 1000000};

/* (b) of part 2: one outdated 2 MiB page with 20 allocations, then `live`
 * allocations on current 11 MiB pages; CPU ns per moved allocation. */
static double one_page_relocation(size_t live, uint64_t *moved)
{
    setup y = sim_device();
    relo_handle grow;
    reserve_n(&y, 20, 90 * KIB, 90 * KIB, 1);
    must(relo_reserve(y.s, 10 * MIB, &grow), "grow");
    push_live(&y, grow, 10 * MIB);
    reserve_n(&y, live, 65 * KIB, 256 * KIB, 7);
    double v = timed_relocation(&y, RELO_REASON_CAPTURE, moved);
    setup_free(&y);
    return v;
}

/* Prints the rows of a scaling part and its two targets: CPU ns per moved
 * allocation at 100,000 live, and the median over rounds of each round's
 * 1,000,000-live / 1,000-live ratio (the sizes run interleaved, round by
 * round, so drift of the machine hits them alike). */
static void print_scaling(double *v[SCALES], double *ratio, const uint64_t moved[SCALES], int runs)
{
    bench_summary s[SCALES];
    for (int k = 0; k < SCALES; k++) {
        char what[96];
        snprintf(what, sizeof what, "%zu live, %llu move", scale_live[k], (unsigned long long)moved[k]);
        s[k] = bench_summarize(v[k], runs);
        bench_print(what, "ns", s[k]);
    }
    printf("  %-44s %.0f ns   (target <= 1000 ns)\n", "CPU per moved allocation at 100,000 live",
           s[1].median);
    bench_summary r = bench_summarize(ratio, runs);
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]   (target <= 1.2)\n", "ratio 1,000,000 live / 1,000 live",
           r.median, r.p10, r.p90);
}

static void planning(int runs)
{
    double *all = malloc((size_t)runs * sizeof(double));
    double *one[SCALES], *ratio = malloc((size_t)runs * sizeof(double));
    uint64_t moved_all = 0, moved_one[SCALES] = {0};
    for (int k = 0; k < SCALES; k++)
        if (!(one[k] = malloc((size_t)runs * sizeof(double)))) exit(1);
    if (!all || !ratio) exit(1);
    for (int r = -1; r < runs; r++) {
        /* (a) 100,000 arena allocations on 2 MiB pages, then growth to
         *     11 MiB pages: every one of them moves (CAPTURE: new pages). */
        setup x = sim_device();
        reserve_n(&x, 100000, 65 * KIB, 256 * KIB, 99);
        relo_handle grow;
        must(relo_reserve(x.s, 10 * MIB, &grow), "grow");
        push_live(&x, grow, 10 * MIB);
        double v = timed_relocation(&x, RELO_REASON_CAPTURE, &moved_all);
        if (r >= 0) all[r] = v;
        setup_free(&x);
        /* (b) the same page of 20 next to 1,000 .. 1,000,000 live. */
        double round[SCALES];
        for (int k = 0; k < SCALES; k++) round[k] = one_page_relocation(scale_live[k], &moved_one[k]);
        if (r < 0) continue;
        for (int k = 0; k < SCALES; k++) one[k][r] = round[k];
        ratio[r] = round[SCALES - 1] / round[0];
    }
    printf(
        "\n2. relocation planning, adaptive placement, CPU per moved allocation, sim backend (copies "
        "free)\n");
    bench_summary a = bench_summarize(all, runs);
    char what[96];
    snprintf(what, sizeof what, "(a) 100,000 live, all %llu move", (unsigned long long)moved_all);
    bench_print(what, "ns", a);
    printf("  (b) one outdated page moves next to the live allocations of current pages:\n");
    print_scaling(one, ratio, moved_one, runs);
    printf("  %-44s %.0f ns   (target <= 1000 ns)\n", "(a) CPU per moved allocation, all moving", a.median);
    printf("  %-44s %llu\n", "device waits of the last relocation", (unsigned long long)relocation_waits);
    free(all);
    free(ratio);
    for (int k = 0; k < SCALES; k++) free(one[k]);
}

/* ---- 3. compaction planning, packed placement ------------------------------ */

/* Reclaims per device in part 3, each over holes of its own. */
#define RECLAIMS 3

/* CPU ns per moved allocation of relo_reclaim over `live` 64 KiB
 * allocations: RECLAIMS times, 256 neighbouring allocations (at
 * 0, 1/RECLAIMS, ... of the way through) have every other one released,
 * and a reclaim packs the pages they leave half full. *waits_out gets
 * the device waits per reclaim. */
static double timed_compaction(size_t live, uint64_t *moved_out, double *waits_out)
{
    setup x = sim_device_with(RELO_PLACEMENT_PACKED);
    reserve_n(&x, live, 64 * KIB, 64 * KIB, 5);
    uint64_t ns = 0, moved = 0, waits = 0;
    for (size_t j = 0; j < RECLAIMS; j++) {
        size_t base = j * (live / RECLAIMS);
        for (size_t i = base; i < base + 256 && i < live; i += 2) {
            must(relo_release(x.dev, x.live[i]), "release");
            x.live[i] = (relo_handle){0}; /* setup_free's release of it is refused, harmlessly */
        }
        relo_stats before, after;
        must(relo_device_stats(x.dev, &before), "stats");
        uint64_t w0 = device_waits(x.be);
        uint64_t t0 = bench_cpu_ns();
        must(relo_reclaim(x.s), "reclaim");
        ns += bench_cpu_ns() - t0;
        waits += device_waits(x.be) - w0;
        must(relo_device_stats(x.dev, &after), "stats");
        moved += after.allocations_moved - before.allocations_moved;
    }
    if (moved == 0) {
        fprintf(stderr, "compaction moved nothing at %zu live\n", live);
        exit(1);
    }
    *moved_out = moved;
    *waits_out = (double)waits / RECLAIMS;
    setup_free(&x);
    return (double)ns / (double)moved;
}

static void compaction(int runs)
{
    double *v[SCALES], *ratio = malloc((size_t)runs * sizeof(double));
    double *waits = malloc((size_t)runs * SCALES * sizeof(double));
    uint64_t moved[SCALES] = {0};
    for (int k = 0; k < SCALES; k++)
        if (!(v[k] = malloc((size_t)runs * sizeof(double)))) exit(1);
    if (!ratio || !waits) exit(1);
    int nw = 0;
    for (int r = -1; r < runs; r++) {
        double round[SCALES], w[SCALES];
        for (int k = 0; k < SCALES; k++) round[k] = timed_compaction(scale_live[k], &moved[k], &w[k]);
        if (r < 0) continue;
        for (int k = 0; k < SCALES; k++) waits[nw++] = w[k];
        for (int k = 0; k < SCALES; k++) v[k][r] = round[k];
        ratio[r] = round[SCALES - 1] / round[0];
    }
    printf(
        "\n3. compaction planning (relo_reclaim), packed placement (the default), CPU per moved allocation, "
        "sim backend\n");
    print_scaling(v, ratio, moved, runs);
    bench_summary ws = bench_summarize(waits, nw);
    bench_print("device waits per reclaim, every size", "", ws);
    printf("  %-44s %s\n", "target, <= 2 device waits per reclaim", ws.max <= 2 ? "met" : "missed");
    free(waits);
    free(ratio);
    for (int k = 0; k < SCALES; k++) free(v[k]);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 9;
    uint64_t total = (argc > 2 ? (uint64_t)atoll(argv[2]) : 192) * MIB;
    const char *parts = argc > 3 ? argv[3] : "123";
    if (runs < 3) runs = 3;
    printf("bench_relocation: %d runs after one warm-up\n", runs);
    /* The default placement's part first; then the parts that need the
     * adaptive placement's outdated pages. */
    if (strchr(parts, '3')) compaction(runs);
    if (strchr(parts, '1')) bandwidth(runs, total);
    if (strchr(parts, '2')) planning(runs);
    return 0;
}
