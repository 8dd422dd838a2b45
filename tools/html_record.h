/*
 * html_record.h — what the HTML report needs from relo's own replay beyond
 * the timeline: the relocations (which allocations moved, from where to
 * where) and maps of the pages at chosen events.
 *
 * A recorder is a replay_observer. It resolves every new allocation and,
 * when relo's relocation counter rises, every live one, so it sees each
 * move; at its snapshot events it keeps every live allocation's page,
 * offset and size, and relo_device_report_json's pools (page size, page
 * count, outdated and guarded pages). Pages are numbered in the order the
 * recorder first sees their buffers.
 */
#ifndef RELO_TOOLS_HTML_RECORD_H
#define RELO_TOOLS_HTML_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "id_map.h"
#include "replay.h"
#include "trace.h"

/** The most page maps a report keeps, and the most moves listed per relocation. */
#define HTML_MAX_SNAPSHOTS 64u
#define HTML_MAX_MOVES_PER_RELOCATION 32u
/** The most relocations listed (later ones are counted, not listed). */
#define HTML_MAX_RELOCATIONS 2000u
/** The most slices one page map keeps. */
#define HTML_MAX_SLICES 40000u

/** One allocation moved by a relocation. */
typedef struct html_move {
    uint32_t alloc; /**< allocation number */
    uint32_t from_page, to_page;
    uint64_t from_offset, to_offset;
    uint64_t size;
} html_move;

/** The relocations seen after one event. */
typedef struct html_relocation {
    uint64_t event;
    uint64_t relocations; /**< relo's counter rose by this much */
    uint64_t allocations_moved;
    uint64_t bytes_moved;
    size_t first_move;   /**< into html_record.moves */
    uint32_t move_count; /**< listed moves (at most HTML_MAX_MOVES_PER_RELOCATION) */
    uint32_t moves_seen; /**< allocations seen elsewhere after the event, listed or not
                                     (one moved twice in the event counts once; relo's
                                     allocations_moved counts it twice) */
} html_relocation;

/** One live allocation in a page map. */
typedef struct html_slice {
    uint32_t page;
    uint32_t alloc;
    uint16_t stream;
    uint64_t offset;
    uint64_t size;
} html_slice;

/** The pages at one event. */
typedef struct html_snapshot {
    uint64_t event;
    const char *why;  /**< "start", "live peak", "relocation", "end", "" */
    char *pools_json; /**< relo_device_report_json's text */
    size_t first_slice;
    size_t slice_count;
    bool slices_cut; /**< more slices were live than kept */
    relo_stats stats;
} html_snapshot;

typedef struct html_record {
    const trace *t;
    id_map pages; /* buffer address → page number */
    uint32_t page_count;
    uint32_t *page_of;   /* per allocation: page where last seen */
    uint64_t *offset_of; /* per allocation: offset there */
    uint64_t relocations_seen;
    uint64_t allocations_moved_seen;
    uint64_t bytes_moved_seen;
    uint64_t *planned; /* snapshot events chosen ahead, sorted */
    size_t planned_count;
    size_t planned_next;
    uint64_t peak_event; /* the trace's first live peak */
    html_relocation *relocations;
    size_t relocation_count;
    uint64_t relocations_unlisted;
    uint64_t first_unlisted_event; /* where the first unlisted relocation happened */
    html_move *moves;
    size_t move_count, move_capacity;
    html_snapshot snapshots[HTML_MAX_SNAPSHOTS];
    size_t snapshot_count;
    html_slice *slices;
    size_t slice_count, slice_capacity;
    bool failed;              /* host memory ran out: the record is partial */
    replay_observer observer; /* points to this record */
} html_record;

/**
 * Prepares a recorder for t (snapshots spread over it). Returns false when
 * host memory ran out (nothing is left to free then).
 */
bool html_record_init(html_record *r, const trace *t);

/** Frees what the recorder holds. */
void html_record_free(html_record *r);

#endif /* RELO_TOOLS_HTML_RECORD_H */
