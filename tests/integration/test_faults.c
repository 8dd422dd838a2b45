/*
 * test_faults.c — relocation when the device fails it: refused copies (all
 * or from the Nth on), a failed wait for the device, a failed wait for the
 * copies (outcome unknown: source and target leak and are never reused),
 * pages refused while a CAPTURE or ARENA_FULL relocation plans its
 * targets, and host memory running out mid-relocation.
 *
 * Faults are switched on after the set-up (relo_backend_host_set_faults),
 * so only the relocation meets them. In every case every live allocation
 * reads back its bytes and relo_device_check passes.
 */
#include "check.h"
#include "fixture.h"
#include "base/hostmem.h"
#include "mock_backend.h"
#include "testing/testing.h"

/* Three outdated pages and a current page with room for all they hold:
 *   2 MiB page  [1 MiB, 512 KiB]
 *   5 MiB page  [4 MiB, 1 MiB]
 *   5 MiB page  [3 MiB]
 *   21 MiB page [8 MiB] (current; 20 MiB was reserved to grow, then
 *                swapped for 8 MiB so 13 MiB is free)
 * Every allocation holds a pattern keyed by its index. */
enum { NSPREAD = 6 };
typedef struct spread {
    relo_handle h[NSPREAD];
    uint64_t size[NSPREAD];
    relo_binding at[NSPREAD]; /* where each was after set-up */
    relo_handle current;      /* the 8 MiB on the current page */
} spread;

static bool make_spread(fx *f, spread *t)
{
    static const uint64_t sizes[NSPREAD] = {1 * MiB, 512 * KiB, 4 * MiB, 3 * MiB, 1 * MiB, 0};
    int n = 0;
    for (int i = 0; i < 5; i++) {
        t->size[n] = sizes[i];
        t->h[n] = fx_reserve(f->s, sizes[i]);
        if (!t->h[n].id) return false;
        n++;
    }
    /* The last one is a 1 KiB small-pool allocation: not in the arena, it
     * never moves, and it must survive everything too. */
    t->size[5] = 1 * KiB;
    t->h[5] = fx_reserve(f->s, 1 * KiB);
    relo_handle grow = fx_reserve(f->s, 20 * MiB);
    if (!t->h[5].id || !grow.id) return false;
    expect_ok(relo_release(f->dev, grow));
    t->current = fx_reserve(f->s, 8 * MiB);
    if (!t->current.id) return false;
    expect_eq(relo__testing_page_size(f->s), 21 * MiB);
    expect_eq(fx_stats(f->s).outdated_pages, 3);
    for (int i = 0; i < NSPREAD; i++) {
        expect_ok(fx_write_pattern(f->dev, t->h[i], (uint64_t)i + 100, t->size[i]));
        t->at[i] = fx_bind(f->s, t->h[i]);
    }
    return true;
}

/* Every allocation of the set-up holds its pattern; returns how many of
 * the arena's five moved from where the set-up put them. */
static int check_spread(fx *f, const spread *t)
{
    int moved = 0;
    for (int i = 0; i < NSPREAD; i++) {
        expect_true(fx_check_pattern(f->dev, t->h[i], (uint64_t)i + 100, t->size[i]));
        moved += !fx_same_place(fx_bind(f->s, t->h[i]), t->at[i]);
    }
    expect_ok(relo_device_check(f->dev));
    return moved;
}

static void release_spread(fx *f, spread *t)
{
    for (int i = 0; i < NSPREAD; i++) expect_ok(relo_release(f->dev, t->h[i]));
    expect_ok(relo_release(f->dev, t->current));
}

static relo_host_desc no_faults(void)
{
    relo_host_desc d;
    memset(&d, 0, sizeof d);
    return d;
}

/* Every copy refused: the relocation is abandoned, every source stays with
 * its bytes, no target stays reserved; without the fault it then moves
 * everything. */
CHECK_TEST(f_refused_copies_abandon)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    spread t;
    require_true(make_spread(&f, &t));
    relo_stats before = fx_stats(f.s);
    relo_host_desc faults = no_faults();
    faults.refuse_copies = true;
    expect_ok(relo_backend_host_set_faults(f.backend, &faults));

    expect_ok(relo_reclaim(f.s));
    relo_stats dev = fx_dev_stats(f.dev);
    expect_eq(dev.relocations_abandoned, 1);
    expect_eq(dev.allocations_moved, 0);
    expect_eq(dev.bytes_leaked, 0);
    expect_eq(check_spread(&f, &t), 0);
    relo_stats st = fx_stats(f.s);
    expect_eq(st.bytes_in_use, before.bytes_in_use);
    expect_eq(st.pages, before.pages);
    expect_eq(st.outdated_pages, 3);

    faults = no_faults();
    expect_ok(relo_backend_host_set_faults(f.backend, &faults));
    expect_ok(relo_reclaim(f.s));
    dev = fx_dev_stats(f.dev);
    expect_eq(dev.allocations_moved, 5);
    expect_eq(dev.relocations, 1);
    expect_eq(check_spread(&f, &t), 5);
    expect_eq(fx_stats(f.s).outdated_pages, 0);
    release_spread(&f, &t);
    fx_close(&f);
}

/* The second copy refused, the first already enqueued: the whole plan is
 * abandoned (every handle still points at its source), and the copies are
 * still waited for once so no target is freed under a running copy. */
CHECK_TEST(f_second_copy_refused_abandons_whole_plan)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    spread t;
    require_true(make_spread(&f, &t));
    relo_host_counts c0 = fx_counts(&f);
    relo_host_desc faults = no_faults();
    faults.refuse_copy_after = 1;
    expect_ok(relo_backend_host_set_faults(f.backend, &faults));

    expect_ok(relo_reclaim(f.s));
    relo_host_counts c1 = fx_counts(&f);
    expect_eq(c1.copies - c0.copies, 1);
    expect_eq(c1.wait_copies - c0.wait_copies, 1);
    expect_eq(c1.wait_device - c0.wait_device, 1);
    relo_stats dev = fx_dev_stats(f.dev);
    expect_eq(dev.relocations_abandoned, 1);
    expect_eq(dev.allocations_moved, 0);
    expect_eq(check_spread(&f, &t), 0);
    expect_eq(fx_stats(f.s).outdated_pages, 3);
    release_spread(&f, &t);
    fx_close(&f);
}

/* The same through the mock backend, which lands copies only at
 * wait_copies: the refused enqueue is followed by exactly one wait, and
 * nothing is freed before it. */
CHECK_TEST(f_mock_refused_copy_still_waits)
{
    int failures = check_failures_;
    static mock_ctx m;
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, NULL, &b));
    fx f;
    require_ok(fx_open_backend(&f, b, FX_ADAPTIVE));
    spread t;
    require_true(make_spread(&f, &t));
    mock_clear_log(&m);
    mock_refuse(&m, MOCK_COPY, 3, false, RELO_OK);

    expect_ok(relo_reclaim(f.s));
    expect_eq(mock_count(&m, MOCK_COPY), 3);
    expect_eq(mock_count(&m, MOCK_WAIT_COPIES), 1);
    expect_eq(mock_count(&m, MOCK_WAIT_DEVICE), 1);
    expect_true(mock_last(&m, MOCK_COPY) < mock_first(&m, MOCK_WAIT_COPIES));
    long fr = mock_first(&m, MOCK_FREE);
    expect_true(fr < 0 || fr > mock_first(&m, MOCK_WAIT_COPIES));
    expect_eq(fx_dev_stats(f.dev).relocations_abandoned, 1);
    expect_eq(check_spread(&f, &t), 0);
    if (check_failures_ != failures) mock_dump(&m);
    release_spread(&f, &t);
    fx_close(&f);
}

/* wait_device fails: nothing is copied, the relocation is abandoned. */
CHECK_TEST(f_wait_device_fails)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    spread t;
    require_true(make_spread(&f, &t));
    relo_host_counts c0 = fx_counts(&f);
    relo_host_desc faults = no_faults();
    faults.fail_wait_device = true;
    expect_ok(relo_backend_host_set_faults(f.backend, &faults));

    expect_ok(relo_reclaim(f.s));
    relo_host_counts c1 = fx_counts(&f);
    expect_eq(c1.copies, c0.copies);
    relo_stats dev = fx_dev_stats(f.dev);
    expect_eq(dev.relocations_abandoned, 1);
    expect_eq(dev.allocations_moved, 0);
    expect_eq(dev.bytes_leaked, 0);
    expect_eq(check_spread(&f, &t), 0);
    release_spread(&f, &t);
    fx_close(&f);
}

/* The copies' wait fails, outcome unknown: bytes_leaked counts at least
 * the targets; the allocations keep their sources and bytes; no later
 * reservation lands on a leaked target (1 MiB at 10 MiB of the current
 * page, the only room there) nor, after the allocations go, on their old
 * sources. */
CHECK_TEST(f_failed_wait_copies_leaks_never_reused)
{
    fx f;
    require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
    relo_handle a1 = fx_reserve(f.s, 512 * KiB), a2 = fx_reserve(f.s, 512 * KiB);
    expect_ok(fx_write_pattern(f.dev, a1, 1, 512 * KiB));
    expect_ok(fx_write_pattern(f.dev, a2, 2, 512 * KiB));
    relo_handle big = fx_reserve(f.s, 10 * MiB);
    relo_binding s1 = fx_bind(f.s, a1), s2 = fx_bind(f.s, a2);
    relo_binding target = fx_bind(f.s, big);
    target.offset = 10 * MiB;
    target.size = 1 * MiB;
    relo_host_desc faults = no_faults();
    faults.fail_wait_copies = true;
    expect_ok(relo_backend_host_set_faults(f.backend, &faults));

    expect_ok(relo_reclaim(f.s));
    faults = no_faults();
    expect_ok(relo_backend_host_set_faults(f.backend, &faults));
    relo_stats dev = fx_dev_stats(f.dev);
    expect_ge(dev.bytes_leaked, 1 * MiB);
    expect_eq(dev.allocations_moved, 0);
    expect_true(fx_same_place(fx_bind(f.s, a1), s1));
    expect_true(fx_same_place(fx_bind(f.s, a2), s2));
    expect_true(fx_check_pattern(f.dev, a1, 1, 512 * KiB));
    expect_true(fx_check_pattern(f.dev, a2, 2, 512 * KiB));
    expect_ok(relo_device_check(f.dev));

    relo_handle more[48];
    int n = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            /* The sources are leaked too, once their allocations go. */
            expect_ok(relo_release(f.dev, a1));
            expect_ok(relo_release(f.dev, a2));
            expect_ok(relo_reclaim(f.s));
        }
        for (int i = 0; i < 24; i++, n++) {
            uint64_t size = (uint64_t)(i % 4 + 1) * 128 * KiB;
            more[n] = fx_reserve(f.s, size);
            relo_binding b = fx_bind(f.s, more[n]);
            expect_true(!fx_overlap(b, target));
            if (round == 1) {
                expect_true(!fx_overlap(b, s1));
                expect_true(!fx_overlap(b, s2));
            }
        }
    }
    expect_ok(relo_device_check(f.dev));
    /* Both sides leaked: the 1 MiB of targets and, once released, the
     * 1 MiB of sources. */
    expect_eq(fx_dev_stats(f.dev).bytes_leaked, 2 * MiB);
    for (int i = 0; i < n; i++) expect_ok(relo_release(f.dev, more[i]));
    expect_ok(relo_release(f.dev, big));
    fx_close(&f);
}

/* The same with the mock backend, where the targets are known exactly from
 * the copies it was asked for: no later reservation, of any size, lands on
 * one. */
CHECK_TEST(f_mock_failed_wait_copies_targets_never_reused)
{
    static mock_ctx m;
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, NULL, &b));
    fx f;
    require_ok(fx_open_backend(&f, b, FX_ADAPTIVE));
    spread t;
    require_true(make_spread(&f, &t));
    mock_clear_log(&m);
    mock_refuse(&m, MOCK_WAIT_COPIES, 1, false, RELO_OK);

    expect_ok(relo_reclaim(f.s));
    enum { MAXC = 16 };
    relo_binding leaked[MAXC];
    int nl = 0;
    uint64_t copied = 0;
    for (size_t i = 0; i < m.n_log && nl < MAXC; i++) {
        if (m.log[i].op != MOCK_COPY || m.log[i].result != RELO_OK) continue;
        leaked[nl].buffer = m.log[i].dst;
        leaked[nl].offset = m.log[i].dst_offset;
        leaked[nl].size = m.log[i].size;
        copied += m.log[i].size;
        nl++;
    }
    expect_eq(nl, 5);
    expect_ge(fx_dev_stats(f.dev).bytes_leaked, copied);
    expect_eq(check_spread(&f, &t), 0);

    uint64_t rng = check_seed();
    relo_handle more[64];
    for (int i = 0; i < 64; i++) {
        more[i] = fx_reserve(f.s, fx_range(&rng, 64 * KiB + 1, 3 * MiB));
        relo_binding x = fx_bind(f.s, more[i]);
        for (int k = 0; k < nl; k++) expect_true(!fx_overlap(x, leaked[k]));
    }
    expect_eq(check_spread(&f, &t), 0);
    for (int i = 0; i < 64; i++) expect_ok(relo_release(f.dev, more[i]));
    release_spread(&f, &t);
    fx_close(&f);
}

/* Two 8 MiB outdated pages [7 MiB, 512 KiB] and [7 MiB]; the current
 * 11 MiB page has 1 MiB free. The pass (CAPTURE or ARENA_FULL) needs two
 * new pages and the backend lends one more: the page it could plan ([7],
 * fewer live bytes, first) moves; the other keeps both allocations, though
 * the 512 KiB alone would have fitted. */
typedef struct two_pages {
    relo_handle a7, t, b7, g;
    relo_binding at_a7, at_t, at_b7;
} two_pages;

static bool make_two_pages(fx *f, two_pages *p)
{
    p->a7 = fx_reserve(f->s, 7 * MiB);
    p->b7 = fx_reserve(f->s, 7 * MiB);
    p->t = fx_reserve(f->s, 512 * KiB);
    p->g = fx_reserve(f->s, 10 * MiB);
    if (!p->a7.id || !p->b7.id || !p->t.id || !p->g.id) return false;
    expect_eq(relo__testing_page_size(f->s), 11 * MiB);
    expect_eq(fx_stats(f->s).outdated_pages, 2);
    expect_ok(fx_write_pattern(f->dev, p->a7, 7, 7 * MiB));
    expect_ok(fx_write_pattern(f->dev, p->b7, 8, 7 * MiB));
    expect_ok(fx_write_pattern(f->dev, p->t, 9, 512 * KiB));
    p->at_a7 = fx_bind(f->s, p->a7);
    p->at_b7 = fx_bind(f->s, p->b7);
    p->at_t = fx_bind(f->s, p->t);
    expect_true(p->at_t.buffer == p->at_a7.buffer);
    return true;
}

static void check_two_pages(fx *f, const two_pages *p)
{
    expect_true(fx_check_pattern(f->dev, p->a7, 7, 7 * MiB));
    expect_true(fx_check_pattern(f->dev, p->b7, 8, 7 * MiB));
    expect_true(fx_check_pattern(f->dev, p->t, 9, 512 * KiB));
    expect_ok(relo_device_check(f->dev));
}

CHECK_TEST(f_page_refused_while_planning_targets)
{
    for (int pass = 0; pass < 2; pass++) {
        fx f;
        require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
        two_pages p;
        require_true(make_two_pages(&f, &p));
        uint64_t allocs = fx_counts(&f).allocs;
        relo_host_desc faults = no_faults();
        faults.refuse_alloc_after = 1;
        expect_ok(relo_backend_host_set_faults(f.backend, &faults));

        relo_graph *graph = NULL;
        if (pass == 0) {
            expect_ok(relo_capture_prepare(f.s));
        } else {
            expect_ok(relo__testing_relocate(f.s, RELO_REASON_ARENA_FULL));
        }
        expect_eq(fx_counts(&f).allocs, allocs + 1);
        relo_stats dev = fx_dev_stats(f.dev);
        expect_eq(dev.allocations_moved, 1);
        expect_eq(dev.bytes_moved, 7 * MiB);
        expect_true(!fx_same_place(fx_bind(f.s, p.b7), p.at_b7));
        expect_true(fx_same_place(fx_bind(f.s, p.a7), p.at_a7));
        expect_true(fx_same_place(fx_bind(f.s, p.t), p.at_t));
        relo_stats st = fx_stats(f.s);
        expect_eq(st.outdated_pages, 1);
        expect_eq(st.pages, 3);
        expect_eq(st.bytes_reserved, 8 * MiB + 22 * MiB);
        check_two_pages(&f, &p);
        if (pass == 0) {
            expect_ok(relo_capture_begin(f.s));
            expect_ok(relo_capture_end(f.s, &graph));
            relo_graph_destroy(graph);
        }
        faults = no_faults();
        expect_ok(relo_backend_host_set_faults(f.backend, &faults));
        expect_ok(relo_release(f.dev, p.a7));
        expect_ok(relo_release(f.dev, p.b7));
        expect_ok(relo_release(f.dev, p.t));
        expect_ok(relo_release(f.dev, p.g));
        fx_close(&f);
    }
}

/* Every page refused: nothing can be planned beyond the room held, and
 * everything stays with its bytes. */
CHECK_TEST(f_every_page_refused_while_planning_targets)
{
    for (int pass = 0; pass < 2; pass++) {
        fx f;
        require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
        two_pages p;
        require_true(make_two_pages(&f, &p));
        relo_host_desc faults = no_faults();
        faults.refuse_alloc_above = 1;
        expect_ok(relo_backend_host_set_faults(f.backend, &faults));
        relo_graph *graph = NULL;
        if (pass == 0) {
            expect_ok(relo_capture_prepare(f.s));
            expect_ok(relo_capture_begin(f.s));
            expect_ok(relo_capture_end(f.s, &graph));
            relo_graph_destroy(graph);
        } else {
            expect_ok(relo__testing_relocate(f.s, RELO_REASON_ARENA_FULL));
        }
        expect_eq(fx_dev_stats(f.dev).allocations_moved, 0);
        expect_true(fx_same_place(fx_bind(f.s, p.a7), p.at_a7));
        expect_true(fx_same_place(fx_bind(f.s, p.b7), p.at_b7));
        expect_true(fx_same_place(fx_bind(f.s, p.t), p.at_t));
        expect_eq(fx_stats(f.s).pages, 3);
        check_two_pages(&f, &p);
        expect_ok(relo_release(f.dev, p.a7));
        expect_ok(relo_release(f.dev, p.b7));
        expect_ok(relo_release(f.dev, p.t));
        expect_ok(relo_release(f.dev, p.g));
        fx_close(&f);
    }
}

/* Host memory runs out at each step of a relocation in turn: the call
 * reports success (an abandoned relocation is not an error) or
 * RELO_ERR_HOST_MEMORY, and either way every allocation holds its bytes,
 * is where the stats say, and the invariants hold. */
CHECK_TEST(f_host_memory_fails_during_relocation)
{
    int completed = 0, failures = check_failures_;
    uint64_t n = 1;
    for (; n <= 40 && !completed; n++) {
        fx f;
        require_ok(fx_open(&f, NULL, FX_ADAPTIVE));
        spread t;
        require_true(make_spread(&f, &t));
        relo__testing_hostmem_fail_at(n, 1);
        relo_status st = relo_reclaim(f.s);
        relo__testing_hostmem_fail_at(0, 0);
        expect_true(st == RELO_OK || st == RELO_ERR_HOST_MEMORY);
        int moved = check_spread(&f, &t);
        relo_stats dev = fx_dev_stats(f.dev);
        expect_eq(dev.allocations_moved, (uint64_t)moved);
        expect_true(moved == 0 || moved == 5 || dev.relocations == 1);
        if (moved == 5) completed = 1;
        bool failed = check_failures_ != failures;
        if (failed) fprintf(stderr, "  (host allocation %llu failed)\n", (unsigned long long)n);
        release_spread(&f, &t);
        fx_close(&f);
        if (failed) return;
    }
    expect_true(completed);
    printf("  the relocation completed once host allocation %llu no longer failed\n",
           (unsigned long long)(n - 1));
    expect_gt(n - 1, 1); /* at least one step did fail */
}

CHECK_MAIN()
