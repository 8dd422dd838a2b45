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
 * 2. Planning cost per moved allocation, simulated backend (copies cost
 *    nothing, so what is timed is analysis, planning, commit and page
 *    release): (a) 100,000 live allocations all on outdated pages, all
 *    moving; (b) 100,000 live allocations on current pages and one outdated
 *    page's worth (20) moving, next to the same with 1,000 live, to show the
 *    cost does not grow with what stays put. Target: <= 1 us per moved
 *    allocation.
 * Parts 1 and 2 relocate outdated pages, which only the seed policy has:
 * their devices ask for it by name.
 * 3. Compaction planning per moved allocation, dense policy (the
 *    default), sim backend: 1,000, 100,000 and 1,000,000 live allocations
 *    of 64 KiB, of which every other one on the first 256 is released, and
 *    relo_reclaim packs those half-full pages. What is timed is the whole
 *    reclaim (choosing pages, planning, commit, release) per allocation it
 *    moves. Targets: <= 1 us per moved allocation at 100,000 live, and
 *    1,000,000 live <= 1.2x 1,000 live.
 *
 * Options: bench_relocation [runs] [MiB of live data in part 1]
 *          (defaults 9, 192)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "relo.h"
#include "relo_backend.h"
#include "testing.h"

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
    dd.policy = RELO_POLICY_SEED; /* outdated pages to relocate */
    must(relo_device_create(&dd, be, &x.dev), "device");
    must(relo_stream_create(x.dev, NULL, &x.s), "stream");

    relo_handle anchor, grow;
    must(relo_reserve(x.s, 40 * MIB, &anchor), "anchor");     /* 41 MiB pages */
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
    must(relo_reserve(x.s, 100 * MIB, &grow), "grow");          /* 101 MiB pages */
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
    for (int r = -1; r < runs; r++) {              /* r = -1: warm-up */
        for (int fresh = 0; fresh < 2; fresh++) {
            setup x = bandwidth_setup(total, !fresh);
            relo_stats before, after;
            must(relo_device_stats(x.dev, &before), "stats");
            uint64_t t0 = bench_now_ns();
            must(relo__testing_relocate(x.s, fresh ? RELO_REASON_CAPTURE : RELO_REASON_EXPLICIT),
                 "relocate");
            double secs = (double)(bench_now_ns() - t0) * 1e-9;
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
                                 ? before.bytes_reserved - after.bytes_reserved : 0;
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
                    printf("  (%s: %llu backend allocs, %llu pages released, %.3f s)\n",
                           fresh ? "CAPTURE" : "EXPLICIT",
                           (unsigned long long)(after.backend_allocs - before.backend_allocs),
                           (unsigned long long)(after.pages_released - before.pages_released), secs);
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
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]\n", "ratio EXPLICIT / memcpy alone", rs.median,
           rs.p10, rs.p90);
    bench_summary rl = bench_summarize(ratio_fill, runs);
    printf("  %-44s %.3f  [p10 %.3f, p90 %.3f]   (target >= 0.8)\n", "ratio EXPLICIT / (memcpy + pages given back)",
           rl.median, rl.p10, rl.p90);
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

static setup sim_device_with(relo_policy policy)
{
    setup x;
    memset(&x, 0, sizeof x);
    relo_host_desc hd = {0};
    hd.alignment = 256;
    relo_backend *be = NULL;
    must(relo_backend_sim_create(&hd, &be), "sim backend");
    relo_device_desc dd = {0};
    dd.policy = policy;
    must(relo_device_create(&dd, be, &x.dev), "device");
    must(relo_stream_create(x.dev, NULL, &x.s), "stream");
    return x;
}

static setup sim_device(void) { return sim_device_with(RELO_POLICY_SEED); }

static void reserve_n(setup *x, size_t n, uint64_t lo, uint64_t hi, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t size = lo + bench_rand(&seed) % (hi - lo + 1);
        relo_handle h;
        must(relo_reserve(x->s, size, &h), "reserve");
        push_live(x, h, size);
    }
}

/* ns per moved allocation of one relocation. */
static double timed_relocation(setup *x, relo_reason reason, uint64_t *moved_out)
{
    relo_stats before, after;
    must(relo_device_stats(x->dev, &before), "stats");
    uint64_t t0 = bench_now_ns();
    must(relo__testing_relocate(x->s, reason), "relocate");
    uint64_t ns = bench_now_ns() - t0;
    must(relo_device_stats(x->dev, &after), "stats");
    uint64_t moved = after.allocations_moved - before.allocations_moved;
    if (moved == 0) {
        fprintf(stderr, "relocation moved nothing\n");
        exit(1);
    }
    *moved_out = moved;
    return (double)ns / (double)moved;
}

static void planning(int runs)
{
    double *all = malloc((size_t)runs * sizeof(double));
    double *one_big = malloc((size_t)runs * sizeof(double));
    double *one_small = malloc((size_t)runs * sizeof(double));
    uint64_t moved_all = 0, moved_one = 0;
    if (!all || !one_big || !one_small) exit(1);
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

        /* (b) one outdated 2 MiB page with 20 allocations, then `live`
         *     allocations on current 11 MiB pages. */
        for (int big = 0; big < 2; big++) {
            setup y = sim_device();
            reserve_n(&y, 20, 90 * KIB, 90 * KIB, 1);
            must(relo_reserve(y.s, 10 * MIB, &grow), "grow");
            push_live(&y, grow, 10 * MIB);
            reserve_n(&y, big ? 100000 : 1000, 65 * KIB, 256 * KIB, 7);
            v = timed_relocation(&y, RELO_REASON_CAPTURE, &moved_one);
            if (r >= 0) (big ? one_big : one_small)[r] = v;
            setup_free(&y);
        }
    }
    printf("\n2. relocation cost per moved allocation, sim backend (copies free)\n");
    bench_summary a = bench_summarize(all, runs);
    char what[96];
    snprintf(what, sizeof what, "100,000 live, all %llu move", (unsigned long long)moved_all);
    bench_print(what, "ns", a);
    bench_summary b = bench_summarize(one_big, runs), c = bench_summarize(one_small, runs);
    snprintf(what, sizeof what, "100,000 live, one page (%llu) moves", (unsigned long long)moved_one);
    bench_print(what, "ns", b);
    snprintf(what, sizeof what, "1,000 live, one page (%llu) moves", (unsigned long long)moved_one);
    bench_print(what, "ns", c);
    printf("  %-44s %.0f ns / %.0f ns   (target <= 1000 ns)\n", "per moved allocation (a) / (b)", a.median,
           b.median);
    bench_ratio("ratio (b) 100,000 live / 1,000 live", b.median / c.median, "close to 1");
    free(all);
    free(one_big);
    free(one_small);
}

/* ---- 3. compaction planning, dense policy ------------------------------ */

/* ns per moved allocation of one relo_reclaim over `live` 64 KiB
 * allocations whose first 256 have every other one released. */
static double timed_compaction(size_t live, uint64_t *moved_out)
{
    setup x = sim_device_with(RELO_POLICY_DENSE);
    reserve_n(&x, live, 64 * KIB, 64 * KIB, 5);
    size_t holes = live < 256 ? live : 256;
    for (size_t i = 0; i < holes; i += 2) {
        must(relo_release(x.dev, x.live[i]), "release");
        x.live[i] = x.live[--x.nlive];
    }
    relo_stats before, after;
    must(relo_device_stats(x.dev, &before), "stats");
    uint64_t t0 = bench_now_ns();
    must(relo_reclaim(x.s), "reclaim");
    uint64_t ns = bench_now_ns() - t0;
    must(relo_device_stats(x.dev, &after), "stats");
    uint64_t moved = after.allocations_moved - before.allocations_moved;
    if (moved == 0) {
        fprintf(stderr, "compaction moved nothing at %zu live\n", live);
        exit(1);
    }
    *moved_out = moved;
    setup_free(&x);
    return (double)ns / (double)moved;
}

static void compaction(int runs)
{
    static const size_t lives[3] = {1000, 100000, 1000000};
    bench_summary s[3];
    uint64_t moved[3] = {0, 0, 0};
    double *v = malloc((size_t)runs * sizeof(double));
    if (!v) exit(1);
    for (int k = 0; k < 3; k++) {
        for (int r = -1; r < runs; r++) {
            double x = timed_compaction(lives[k], &moved[k]);
            if (r >= 0) v[r] = x;
        }
        s[k] = bench_summarize(v, runs);
    }
    printf("\n3. compaction (relo_reclaim, dense) cost per moved allocation, sim backend\n");
    for (int k = 0; k < 3; k++) {
        char what[96];
        snprintf(what, sizeof what, "%zu live, %llu move", lives[k], (unsigned long long)moved[k]);
        bench_print(what, "ns", s[k]);
    }
    printf("  %-44s %.0f ns   (target <= 1000 ns)\n", "per moved allocation at 100,000 live", s[1].median);
    bench_ratio("ratio 1,000,000 live / 1,000 live", s[2].median / s[0].median, "<= 1.2");
    free(v);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 9;
    uint64_t total = (argc > 2 ? (uint64_t)atoll(argv[2]) : 192) * MIB;
    if (runs < 3) runs = 3;
    printf("bench_relocation: %d runs after one warm-up\n", runs);
    bandwidth(runs, total);
    planning(runs);
    compaction(runs);
    return 0;
}
