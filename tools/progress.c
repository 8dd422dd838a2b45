/*
 * progress.c — the stderr progress bar. It redraws about 100 times per
 * phase, so its cost never shows in a replay's timings.
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void progress_init(progress *p, bool wanted)
{
    memset(p, 0, sizeof *p);
    p->enabled = wanted && isatty(STDERR_FILENO);
}

void progress_begin(progress *p, const char *label, uint64_t total)
{
    if (!p->enabled) return;
    snprintf(p->label, sizeof p->label, "%s", label);
    p->total = total ? total : 1;
    p->next = 0;
    progress_update(p, 0);
}

void progress_update(progress *p, uint64_t done)
{
    if (!p->enabled || done < p->next) return;
    enum { WIDTH = 30 };
    uint64_t filled = done >= p->total ? WIDTH : done * WIDTH / p->total;
    char bar[WIDTH + 1];
    for (uint64_t i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[WIDTH] = '\0';
    unsigned pct = (unsigned)(done >= p->total ? 100 : done * 100 / p->total);
    fprintf(stderr, "\r%-40.40s [%s] %3u%%", p->label, bar, pct);
    fflush(stderr);
    p->drawn = true;
    p->next = done + (p->total / 100 ? p->total / 100 : 1);
}

void progress_end(progress *p)
{
    if (!p->enabled || !p->drawn) return;
    fprintf(stderr, "\r%80s\r", "");
    fflush(stderr);
    p->drawn = false;
}
