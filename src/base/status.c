/*
 * base/status.c — names and sentences of relo_status (generated from the X-macro
 * list in relo.h, so they cannot drift) and the names of the other public
 * enums.
 */
#include <stdio.h>
#include <stdlib.h>

#include "relo.h"
#include "base/util.h"

const char *relo_status_name(relo_status status)
{
    switch (status) {
#define RELO_X_(name, value, text) \
    case name: return #name;
        RELO_STATUS_LIST(RELO_X_)
#undef RELO_X_
    case RELO_STATUS_COUNT: break;
    }
    return "RELO_STATUS_UNKNOWN";
}

const char *relo_status_string(relo_status status)
{
    switch (status) {
#define RELO_X_(name, value, text) \
    case name: return text;
        RELO_STATUS_LIST(RELO_X_)
#undef RELO_X_
    case RELO_STATUS_COUNT: break;
    }
    return "unknown status";
}

const char *relo_mode_name(relo_mode mode)
{
    switch (mode) {
    case RELO_MODE_AUTO: return "RELO_MODE_AUTO";
    case RELO_MODE_PERSISTENT: return "RELO_MODE_PERSISTENT";
    case RELO_MODE_DEDICATED: return "RELO_MODE_DEDICATED";
    case RELO_MODE_COUNT: break;
    }
    return "RELO_MODE_UNKNOWN";
}

const char *relo_placement_name(relo_placement placement)
{
    switch (placement) {
#define RELO_X_(name, value, text) \
    case name: return #name;
        RELO_PLACEMENT_LIST(RELO_X_)
#undef RELO_X_
    case RELO_PLACEMENT_COUNT: break;
    }
    return "RELO_PLACEMENT_UNKNOWN";
}

const char *relo_relocation_name(relo_relocation relocation)
{
    switch (relocation) {
    case RELO_RELOCATION_AUTO: return "RELO_RELOCATION_AUTO";
    case RELO_RELOCATION_OFF: return "RELO_RELOCATION_OFF";
    case RELO_RELOCATION_COUNT: break;
    }
    return "RELO_RELOCATION_UNKNOWN";
}

const char *relo_log_level_name(relo_log_level level)
{
    switch (level) {
    case RELO_LOG_DEBUG: return "RELO_LOG_DEBUG";
    case RELO_LOG_INFO: return "RELO_LOG_INFO";
    case RELO_LOG_WARN: return "RELO_LOG_WARN";
    case RELO_LOG_ERROR: return "RELO_LOG_ERROR";
    case RELO_LOG_LEVEL_COUNT: break;
    }
    return "RELO_LOG_LEVEL_UNKNOWN";
}

void relo__assert_fail(const char *expr, const char *file, int line)
{
    /* An internal invariant broke: continuing could hand one allocation's
     * bytes to another, so stop here where a debugger can see why. */
    fprintf(stderr, "relo: internal assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
