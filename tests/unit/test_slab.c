/*
 * test_slab.c — the slab of slice nodes and page records (src/mem/page.h,
 * relo__slab_* and the node and record calls over it) alone. A node or a
 * record comes back zeroed however it was left; one given back is the next
 * one taken, without a trip to malloc; the slab grows by a chunk only when
 * it has none free, and a growth that host memory refuses changes nothing;
 * destroying the slab frees every chunk and leaves it ready to use again.
 *
 * The slab has no checker of its own, so slab_census below is one: it walks
 * both free lists, checks that neither loops, and counts them. Each case
 * runs it after every change and checks that nodes and records are neither
 * lost nor made from nothing: those free plus those in use stay as many as
 * the chunks made.
 */
#include "check.h"
#include "base/hostmem.h"
#include "mem/page.h"

#define MANY 1000

/* Counts the free nodes and records of slab into *nodes and *records.
 * False on a list that loops (longer than every chunk could hold) or more
 * chunks than the chunk list has room for. */
static bool slab_census(const relo_slice_slab *slab, uint32_t *nodes, uint32_t *records)
{
    uint64_t bound = (uint64_t)slab->chunk_count * 65536u;
    *nodes = *records = 0;
    for (const relo_slice *s = slab->free; s; s = s->left)
        if (++*nodes > bound) return false;
    for (const relo_page *p = slab->free_pages; p; p = p->free_next)
        if (++*records > bound) return false;
    return slab->chunk_count <= slab->chunk_cap;
}

/* A slab, and what a case has taken of it and not given back; the totals
 * are what the slab's chunks made, learned at each growth: free + in use
 * must stay the made count. */
typedef struct bench {
    relo_slice_slab slab;
    uint32_t nodes_in_use, records_in_use;
    uint32_t chunks; /* chunk_count at the last look */
    uint32_t total_nodes, total_records;
} bench;

/* Looks at the slab after a change: a new chunk adds what it holds to the
 * totals; otherwise free + in use must equal them. */
static bool slab_ok(bench *b)
{
    uint32_t nodes, records;
    if (!slab_census(&b->slab, &nodes, &records)) {
        fprintf(stderr, "  slab census failed\n");
        return false;
    }
    if (b->slab.chunk_count != b->chunks) {
        b->chunks = b->slab.chunk_count;
        b->total_nodes = nodes + b->nodes_in_use;
        b->total_records = records + b->records_in_use;
        return true;
    }
    if (nodes + b->nodes_in_use != b->total_nodes || records + b->records_in_use != b->total_records) {
        fprintf(stderr, "  slab lost or made nodes: %u + %u of %u, records %u + %u of %u\n", nodes,
                b->nodes_in_use, b->total_nodes, records, b->records_in_use, b->total_records);
        return false;
    }
    return true;
}

#define require_slab(b) require_true(slab_ok(b))

/* Takes a node, or a page record, counted in use when it comes. */
static void *take_one(bench *b, bool record)
{
    void *x = record ? (void *)relo__page_new(&b->slab) : (void *)relo__slice_new(&b->slab);
    if (x) ++*(record ? &b->records_in_use : &b->nodes_in_use);
    return x;
}

/* Gives a node, or a page record, back. */
static void give_back(bench *b, void *x, bool record)
{
    if (record)
        relo__page_delete(&b->slab, x);
    else
        relo__slice_delete(&b->slab, x);
    --*(record ? &b->records_in_use : &b->nodes_in_use);
}

#define node_new(b) ((relo_slice *)take_one(b, false))
#define node_delete(b, s) give_back(b, s, false)
#define record_new(b) ((relo_page *)take_one(b, true))
#define record_delete(b, p) give_back(b, p, true)

CHECK_TEST(a_node_comes_back_zeroed_however_it_was_left)
{
    bench b = {0};
    relo_slice *s = node_new(&b);
    require_true(s != NULL);
    require_slab(&b);
    memset(s, 0x5A, sizeof *s);
    node_delete(&b, s);
    require_slab(&b);
    relo_slice *again = node_new(&b);
    require_true(again == s);
    require_slab(&b);
    expect_eq(again->offset, 0);
    expect_eq(again->length, 0);
    expect_eq(again->size, 0);
    expect_true(again->page == NULL && again->prev == NULL && again->next == NULL);
    expect_true(again->left == NULL && again->right == NULL);
    expect_eq(again->max_length, 0);
    expect_eq(again->priority, 0);
    expect_eq(again->slot, 0);
    expect_eq(again->move, 0);
    expect_eq(again->state, RELO_SLICE_FREE);
    expect_true(!again->leak_on_free);
    node_delete(&b, again);
    relo__slab_destroy(&b.slab);
}

CHECK_TEST(nodes_given_back_are_taken_again_without_malloc)
{
    bench b = {0};
    static relo_slice *held[MANY];
    for (int i = 0; i < MANY; i++) {
        require_true((held[i] = node_new(&b)) != NULL);
        require_slab(&b);
    }
    uint32_t chunks = b.slab.chunk_count;
    expect_gt(chunks, 1);
    for (int i = 0; i < MANY; i++) {
        node_delete(&b, held[i]);
        require_slab(&b);
    }
    /* Last given back, first taken; and no host allocation at all. */
    uint64_t calls = relo__hostmem_calls();
    for (int i = MANY; i-- > 0;) {
        require_true(node_new(&b) == held[i]);
        require_slab(&b);
    }
    expect_eq(relo__hostmem_calls(), calls);
    expect_eq(b.slab.chunk_count, chunks);
    relo__slab_destroy(&b.slab);
}

CHECK_TEST(a_growth_host_memory_refuses_changes_nothing)
{
    bench b = {0};
    relo__hostmem_fail_at(1, 1);
    relo_slice *s = node_new(&b);
    relo_page *p = record_new(&b);
    expect_true(!relo__slab_grow(&b.slab));
    relo__hostmem_fail_at(0, 0);
    expect_true(s == NULL && p == NULL);
    require_slab(&b);
    expect_eq(b.slab.chunk_count, 0);
    expect_true(b.slab.free == NULL && b.slab.free_pages == NULL);
    /* The chunk list can grow but the chunk cannot: still nothing. */
    relo__hostmem_fail_at(2, 1);
    s = node_new(&b);
    relo__hostmem_fail_at(0, 0);
    expect_true(s == NULL);
    require_slab(&b);
    expect_eq(b.slab.chunk_count, 0);
    expect_true(b.slab.free == NULL);
    /* With memory back, the same call is served. */
    s = node_new(&b);
    require_true(s != NULL);
    require_slab(&b);
    node_delete(&b, s);
    relo__slab_destroy(&b.slab);
}

CHECK_TEST(page_records_come_zeroed_and_are_kept_apart_from_nodes)
{
    bench b = {0};
    relo_slice *s = node_new(&b);
    relo_page *p = record_new(&b);
    require_true(s != NULL && p != NULL);
    require_slab(&b);
    p->size = 123;
    p->occupied = 7;
    p->fenced = true;
    p->pool = (struct relo_pool *)&b;
    record_delete(&b, p);
    require_slab(&b);
    uint32_t free_nodes, free_records;
    require_true(slab_census(&b.slab, &free_nodes, &free_records));
    relo_page *again = record_new(&b);
    require_true(again == p);
    require_slab(&b);
    expect_eq(again->size, 0);
    expect_eq(again->occupied, 0);
    expect_true(!again->fenced && again->pool == NULL && again->first == NULL);
    /* Taking the record took no node. */
    uint32_t nodes_now, records_now;
    require_true(slab_census(&b.slab, &nodes_now, &records_now));
    expect_eq(nodes_now, free_nodes);
    expect_eq(records_now, free_records - 1);
    record_delete(&b, again);
    node_delete(&b, s);
    relo__slab_destroy(&b.slab);
}

CHECK_TEST(a_destroyed_slab_is_empty_and_serves_again)
{
    bench b = {0};
    for (int i = 0; i < MANY; i++) require_true(node_new(&b) != NULL);
    require_true(record_new(&b) != NULL);
    require_slab(&b);
    relo__slab_destroy(&b.slab);
    bench after = {.slab = b.slab}; /* nothing in use any more */
    b = after;
    require_slab(&b);
    expect_eq(b.slab.chunk_count, 0);
    expect_true(b.slab.free == NULL && b.slab.free_pages == NULL && b.slab.chunks == NULL);
    require_true(node_new(&b) != NULL);
    require_slab(&b);
    relo__slab_destroy(&b.slab);
}

CHECK_MAIN()
