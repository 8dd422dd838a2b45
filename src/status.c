/*
 * status.c — names and sentences of relo_status and the other public enums,
 * generated from the X-macro lists in relo.h so they cannot drift.
 */
#include <stdio.h>
#include <stdlib.h>

#include "relo.h"
#include "util.h"

const char *relo_status_name(relo_status status)
{
    switch (status) {
#define RELO_X_(name, value, text) case name: return #name;
        RELO_STATUS_LIST(RELO_X_)
#undef RELO_X_
    case RELO_STATUS_COUNT: break;
    }
    return "RELO_STATUS_UNKNOWN";
}

const char *relo_status_string(relo_status status)
{
    switch (status) {
#define RELO_X_(name, value, text) case name: return text;
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

void relo__assert_fail(const char *expr, const char *file, int line)
{
    /* An internal invariant broke: continuing could hand one allocation's
     * bytes to another, so stop here where a debugger can see why. */
    fprintf(stderr, "relo: internal assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
