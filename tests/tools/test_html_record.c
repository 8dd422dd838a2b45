/*
 * test_html_record.c — the HTML report's recorder (tools/html_record.c) on
 * a replay that grows the arena and relocates: the move it logs, the page
 * maps it keeps, and the pools it copies from relo_device_report_json. The
 * page itself is tested in a browser by html_report_browser.py.
 */
#include <string.h>

#include "check.h"
#include "html_record.h"
#include "replay.h"

#define MiB (UINT64_C(1) << 20)

/* The events of tests/tools/data/tiny.trace: a kept 1 MiB, a 10 MiB that
 * grows the arena's pages, then more work under pressure. */
static void tiny(trace *t)
{
    static const struct {
        char kind;
        uint32_t id;
        uint64_t size;
    } ev[] = {
        {'a', 0, MiB},     {'a', 1, 4096},     {'a', 2, 10 * MiB}, {'f', 1, 4096}, {'a', 3, MiB},
        {'a', 4, 2 * MiB}, {'f', 2, 10 * MiB}, {'a', 5, 3 * MiB},  {'a', 6, 0},    {'f', 3, MiB},
        {'f', 4, 2 * MiB}, {'f', 5, 3 * MiB},  {'f', 6, 0},        {'f', 0, MiB},
    };
    trace_init(t);
    trace_set_name_from_path(t, "tiny.trace");
    uint16_t s = 0;
    trace_stream_index(t, 0, &s);
    for (size_t i = 0; i < sizeof ev / sizeof *ev; i++) {
        trace_push(t, ev[i].kind == 'a' ? TRACE_ALLOC : TRACE_FREE, ev[i].id, s, ev[i].size);
        if (ev[i].kind == 'a') t->alloc_count++;
    }
}

CHECK_TEST(records_moves_and_page_maps)
{
    trace t;
    tiny(&t);
    html_record rec;
    require_true(html_record_init(&rec, &t));
    replay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capacity = 40 * MiB;
    cfg.placement = RELO_PLACEMENT_ADAPTIVE; /* its growth relocates on this trace, */
    cfg.granule = 1;                         /* on a device that charges plain bytes */
    cfg.record = true;
    cfg.observer = &rec.observer;
    replay_result r;
    expect_true(replay_run(&t, &cfg, &r));
    expect_true(!rec.failed);
    /* One relocation, at event 5: allocation 0 (1 MiB) left the outdated page. */
    require_eq(rec.relocation_count, 1);
    const html_relocation *x = &rec.relocations[0];
    expect_eq(x->event, 4);
    expect_eq(x->allocations_moved, r.stats.allocations_moved);
    require_eq(x->move_count, 1);
    expect_eq(x->moves_seen, 1); /* every move seen is listed here */
    expect_eq(rec.relocations_unlisted, 0);
    const html_move *m = &rec.moves[x->first_move];
    expect_eq(m->alloc, 0);
    expect_eq(m->size, MiB);
    expect_ne(m->from_page, m->to_page);
    /* A map at every event of this short trace, the relocation's marked. */
    expect_eq(rec.snapshot_count, t.event_count);
    bool saw_outdated = false, saw_relocation = false;
    for (size_t i = 0; i < rec.snapshot_count; i++) {
        const html_snapshot *s = &rec.snapshots[i];
        expect_eq(s->event, i);
        expect_eq(s->slice_count, s->stats.allocations);
        require_true(s->pools_json != NULL);
        expect_true(strstr(s->pools_json, "\"pools\"") != NULL);
        if (s->stats.outdated_pages) saw_outdated = strstr(s->pools_json, "\"outdated\": true") != NULL;
        if (strcmp(s->why, "relocation") == 0) {
            saw_relocation = true;
            expect_eq(s->event, 4);
            /* Allocation 0 now sits where the move put it. */
            for (size_t k = 0; k < s->slice_count; k++) {
                const html_slice *sl = &rec.slices[s->first_slice + k];
                if (sl->alloc == 0) {
                    expect_eq(sl->page, m->to_page);
                    expect_eq(sl->offset, m->to_offset);
                }
            }
        }
    }
    expect_true(saw_outdated);
    expect_true(saw_relocation);
    replay_result_free(&r);
    html_record_free(&rec);
    trace_free(&t);
}

CHECK_MAIN()
