/*
 * svg.h — a timeline picture of one replay: live, reserved and outdated
 * bytes over the events, relocation ticks, the peaks annotated, axes in
 * human units, the trace's name as title.
 */
#ifndef RELO_TOOLS_SVG_H
#define RELO_TOOLS_SVG_H

#include <stdbool.h>

#include "report.h"

/**
 * Writes the picture of rep (whose replay recorded samples) to path.
 * Returns false, with errno from the failing call, when the file cannot be
 * written.
 */
bool svg_write(const char *path, const report *rep);

#endif /* RELO_TOOLS_SVG_H */
