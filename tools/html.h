/*
 * html.h — relo-replay's interactive report: one self-contained HTML page
 * (inline script, style and data; nothing fetched) that opens with the
 * verdict (verdict.h: each allocator's fit, where the baselines ran out of
 * memory, what each held, moved and took from the device), then the
 * timeline of every run, page maps at kept events, and the relocations.
 */
#ifndef RELO_TOOLS_HTML_H
#define RELO_TOOLS_HTML_H

#include <stdbool.h>

#include "html_record.h"
#include "report.h"

/**
 * Writes the page of rep to path. rec recorded rep->r (relo's reported
 * replay). Replays what the verdict needs beyond rep: relo's other placement
 * on the same device (and, with --fit, its fit search), and each allocator
 * that ran out of memory on its own fit capacity. Returns false (errno set)
 * when the file cannot be written.
 */
bool html_write(const char *path, const report *rep, const html_record *rec);

#endif /* RELO_TOOLS_HTML_H */
