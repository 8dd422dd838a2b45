/*
 * base/reason.c — the names of relo_reason (base/reason.h), for log lines.
 */
#include "base/reason.h"

const char *relo__reason_name(relo_reason reason)
{
    switch (reason) {
    case RELO_REASON_NONE: return "RELO_REASON_NONE";
    case RELO_REASON_EXPLICIT: return "RELO_REASON_EXPLICIT";
    case RELO_REASON_MEMORY_PRESSURE: return "RELO_REASON_MEMORY_PRESSURE";
    case RELO_REASON_ARENA_FULL: return "RELO_REASON_ARENA_FULL";
    case RELO_REASON_CAPTURE: return "RELO_REASON_CAPTURE";
    case RELO_REASON_COMPACT: return "RELO_REASON_COMPACT";
    case RELO_REASON_RUNTIME: return "RELO_REASON_RUNTIME";
    case RELO_REASON_CACHE_LIMIT: return "RELO_REASON_CACHE_LIMIT";
    case RELO_REASON_COUNT: break;
    }
    return "RELO_REASON_UNKNOWN";
}
