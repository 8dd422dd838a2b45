/*
 * progress.c — the stderr progress bar. It redraws about 100 times per
 * phase, so its cost never shows in a replay's timings, and fits the
 * terminal's width, read at each phase so a resized window is followed.
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

void progress_init(progress *p, bool wanted)
{
    memset(p, 0, sizeof *p);
    p->enabled = wanted && isatty(STDERR_FILENO);
}

unsigned progress_columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *env = getenv("COLUMNS");
    long n = env ? strtol(env, NULL, 10) : 0;
    return n > 0 && n < 10000 ? (unsigned)n : 80;
}

void progress_begin(progress *p, const char *label, uint64_t total)
{
    if (!p->enabled) return;
    p->columns = progress_columns();
    snprintf(p->label, sizeof p->label, "%s", label);
    p->total = total ? total : 1;
    p->next = 0;
    progress_update(p, 0);
}

size_t progress_format(const progress *p, uint64_t done, char *out, size_t cap)
{
    /* "label [####....] 100%" in at most columns - 1 characters (the last
     * column would wrap on some terminals): the bar keeps 10 at least. */
    unsigned cols = p->columns > 30 ? p->columns - 1 : 29;
    unsigned label_w = (unsigned)strlen(p->label);
    if (label_w > cols - 18) label_w = cols - 18;
    unsigned width = cols - label_w - 8; /* " [", "] ", "100%" */
    if (width > 60) width = 60;
    char bar[64];
    uint64_t total = p->total ? p->total : 1;
    uint64_t filled = done >= total ? width : done * width / total;
    for (uint64_t i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    unsigned pct = (unsigned)(done >= total ? 100 : done * 100 / total);
    int n = snprintf(out, cap, "%-*.*s [%s] %3u%%", (int)label_w, (int)label_w, p->label, bar, pct);
    return n < 0 ? 0 : (size_t)n;
}

void progress_update(progress *p, uint64_t done)
{
    if (!p->enabled || done < p->next) return;
    char line[512];
    progress_format(p, done, line, sizeof line);
    fprintf(stderr, "\r%s", line);
    fflush(stderr);
    p->drawn = true;
    p->next = done + (p->total / 100 ? p->total / 100 : 1);
}

void progress_end(progress *p)
{
    if (!p->enabled || !p->drawn) return;
    unsigned cols = p->columns > 30 ? p->columns - 1 : 29;
    fprintf(stderr, "\r%*s\r", (int)cols, "");
    fflush(stderr);
    p->drawn = false;
}
