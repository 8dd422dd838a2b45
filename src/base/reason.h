/*
 * base/reason.h — why a relocation or compaction pass runs (design §6.2). The
 * reason decides which pages a pass may take as targets, and is logged and
 * counted with it.
 */
#ifndef RELO_REASON_H
#define RELO_REASON_H

typedef enum relo_reason {
    RELO_REASON_NONE = 0,        /* the trigger's NOTHING */
    RELO_REASON_EXPLICIT,        /* relo_reclaim: room already held only */
    RELO_REASON_MEMORY_PRESSURE, /* trigger: room already held only */
    RELO_REASON_ARENA_FULL,      /* trigger or refused growth: may add current pages */
    RELO_REASON_CAPTURE,         /* relo_capture_prepare: may add current pages */
    RELO_REASON_COMPACT,         /* packed placement: pack current pages */
    RELO_REASON_RUNTIME,         /* relo_pass_begin: room already held only */
    RELO_REASON_CACHE_LIMIT,     /* packed placement, past the cache limit: room already held only */
    RELO_REASON_COUNT
} relo_reason;

/** "RELO_REASON_ARENA_FULL" etc. */
const char *relo__reason_name(relo_reason reason);

#endif /* RELO_REASON_H */
