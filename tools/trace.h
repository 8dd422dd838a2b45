/*
 * trace.h — an allocation trace held in memory, whatever format it was read
 * from: the events, the streams they name, and what the header said.
 *
 * Readers turn the ids of a file (trace ids, RMM pointers) into dense
 * allocation numbers 0..allocations-1, so a replayer keeps one array of
 * handles indexed by them instead of a hash map on its hot path.
 */
#ifndef RELO_TOOLS_TRACE_H
#define RELO_TOOLS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** The most distinct streams one trace may name (each becomes a relo stream). */
#define TRACE_MAX_STREAMS 256u

/** The longest name (workload, file) a trace keeps; longer ones are cut. */
#define TRACE_NAME_MAX 256u

typedef enum trace_event_kind { TRACE_ALLOC = 0, TRACE_FREE, TRACE_EVENT_KIND_COUNT } trace_event_kind;

/** One event. For a free, size and stream repeat the allocation's. */
typedef struct trace_event {
    uint64_t size;   /**< bytes requested */
    uint32_t alloc;  /**< dense allocation number, 0..allocations-1 */
    uint16_t stream; /**< dense stream index, 0..stream_count-1 */
    uint8_t kind;    /**< trace_event_kind */
} trace_event;

/** A whole trace. Zero-initialise, or use trace_init. */
typedef struct trace {
    trace_event *events;
    size_t event_count;
    size_t event_capacity;
    uint32_t alloc_count;                /**< distinct allocations */
    uint64_t streams[TRACE_MAX_STREAMS]; /**< stream number of each dense index */
    uint32_t stream_count;
    uint64_t peak_live_bytes;   /**< computed from the events */
    uint64_t live_at_end_bytes; /**< computed from the events */
    uint32_t live_at_end;       /**< allocations never freed */
    bool header_peak_known;     /**< the header gave peak_live_bytes */
    uint64_t header_peak_live_bytes;
    bool header_events_known; /**< the header gave events */
    uint64_t header_events;
    char workload[TRACE_NAME_MAX]; /**< header "workload", first word; may be "" */
    char name[TRACE_NAME_MAX];     /**< file name without directories and extensions */
    uint64_t max_events;           /**< readers refuse more; 0 = the memory bound (trace_full) */
    uint64_t reader_bytes;         /**< memory the reader holds beside the events (its map of
                                           ids), as it will be after the event being read */
    uint64_t source_bytes;         /**< bytes decoded from the source, gunzipped */
    /* What a reader let pass with a warning (trace_print_warnings). */
    uint64_t skipped_frees; /**< RMM frees of pointers never seen allocated */
    uint64_t first_skipped_free_line;
    uint64_t size_mismatches; /**< RMM frees whose size differs from the allocation's */
    uint64_t first_size_mismatch_line;
} trace;

/** A reader's complaint: where, and what. */
typedef struct trace_error {
    char file[TRACE_NAME_MAX];
    uint64_t line; /**< 1-based; 0 when the problem is not one line */
    char message[256];
} trace_error;

/** Makes an empty trace. */
void trace_init(trace *t);

/** Frees the events; the trace is empty afterwards. NULL is a no-op. */
void trace_free(trace *t);

/**
 * Appends an event; keeps peak and live-at-end figures up to date.
 * Returns false when host memory ran out (the trace is unchanged).
 */
bool trace_push(trace *t, trace_event_kind kind, uint32_t alloc, uint16_t stream, uint64_t size);

/**
 * The memory a reader may hold when trace.max_events is 0: an eighth of
 * this machine's physical memory (1 GiB when its size is unknown), so a
 * small gzip file of billions of events is refused with a message instead
 * of exhausting memory.
 */
uint64_t trace_memory_budget(void);

/** Sets trace_memory_budget for the whole process (0: back to the
 *  default), for tests that check the bound on small inputs. */
void trace_memory_budget_set(uint64_t bytes);

/**
 * The most events that fit in trace_memory_budget at 16 bytes each: the
 * count no trace may pass when max_events is 0, whatever its ids cost.
 */
uint64_t trace_default_max_events(void);

/** The count limit in force for t: t->max_events, or the default when 0. */
uint64_t trace_event_limit(const trace *t);

/**
 * The bytes t's reader holds once one more event is pushed: the event
 * array (grown, if the push grows it) and reader_bytes. What each event
 * costs depends on the format and the trace: 16 bytes in the array, plus
 * the reader's map of ids (a relo trace keeps every id, as ids are never
 * reused; an RMM log only the pointers live), 17 bytes per slot, 2 to 8
 * slots per id.
 */
uint64_t trace_held_bytes_after_push(const trace *t);

/**
 * Whether one more event must be refused: t holds max_events when that is
 * set; when it is 0, holding one more would take more than
 * trace_memory_budget (measured, so right for every format), or t holds
 * trace_default_max_events. A reader sets reader_bytes first.
 */
bool trace_full(const trace *t);

/**
 * Prints one line per kind of input a reader accepted with a warning
 * (frees skipped, sizes that differ), prefixed by path (escaped as
 * trace_escape_name does), to f. Prints nothing for a trace without any.
 */
void trace_print_warnings(const trace *t, const char *path, FILE *f);

/**
 * The dense index of stream number `number`, adding it if new.
 * Returns false when the trace already names TRACE_MAX_STREAMS streams.
 */
bool trace_stream_index(trace *t, uint64_t number, uint16_t *index);

/** Sets t->name from a path: the base name without ".gz", ".trace", ".csv",
 *  escaped as trace_escape_name does. */
void trace_set_name_from_path(trace *t, const char *path);

/**
 * Copies name to out (cap bytes, always NUL-terminated, cut at cap) with
 * every byte a terminal would act on written as \xHH: control bytes
 * (below 0x20, 0x7f), C1 controls (U+0080 to U+009F, which some terminals
 * obey), and bytes that are not valid UTF-8. Valid UTF-8 text is kept as
 * is. Every message that prints a file name prints it through this, so
 * a name cannot send an escape sequence to the terminal or split a line.
 * Returns out.
 */
char *trace_escape_name(const char *name, char *out, size_t cap);

/**
 * Fills err (file, line, printf-style message). Always returns false, so a
 * reader can write `return trace_fail(err, ...)`.
 */
bool trace_fail(trace_error *err, const char *file, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** trace_fail with the message for a trace that reached its event limit. */
bool trace_fail_full(trace_error *err, const char *file, uint64_t line, const trace *t);

/** Prints "file:line: message" (or "file: message" for line 0) to stderr. */
void trace_error_print(const trace_error *err);

#endif /* RELO_TOOLS_TRACE_H */
