/*
 * svg.c — the replay timeline as a standalone SVG 1.1 file.
 *
 * Reserved is drawn from each bucket's highest value and live from its
 * peak moment, both as steps (a value holds until the next sample), so the
 * picture keeps every short peak the samples saw and reserved never dips
 * below live on screen. The x axis ends at the last sample: where the
 * replay stopped when it failed, and the title says so. The legend sits
 * above the plot, so no label can fall under it; relocations are ticks
 * under the axis, with a faint line across the plot only while they are
 * few enough not to cover it. Above the legend, the verdict (verdict.h)
 * is a table of its own: relo and each baseline, their fit, where each ran
 * out of memory, and what each held, moved and took from the device.
 */
#include "svg.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "units.h"
#include "verdict.h"

enum { WIDTH = 960, LEFT = 86, RIGHT = 28, PLOT_HEIGHT = 374, BOTTOM = 70 };

/* Where the verdict's table starts, and the height of its rows. */
#define VERDICT_TOP 92.0
#define VERDICT_ROW 16.0

/* Relocation ticks past which no line crosses the plot. */
#define RELOC_LINES_MAX 12


#define COLOR_RESERVED "#9ecae1"
#define STROKE_RESERVED "#3182bd"
#define COLOR_LIVE "#fd8d3c"
#define STROKE_LIVE "#d94801"
#define COLOR_OUTDATED "#c51b8a"
#define COLOR_RELOC "#54278f"
#define COLOR_FAILED "#cb181d"

typedef struct frame {
    double x0, y0, w, h; /* plot area: x0,y0 is the top-left corner */
    double max_event;
    double max_bytes;
    uint64_t unit; /* bytes per axis unit */
    const char *unit_name;
} frame;

static double fx(const frame *fr, double event)
{
    return fr->x0 + (fr->max_event > 0 ? event / fr->max_event : 0) * fr->w;
}

static double fy(const frame *fr, double bytes)
{
    return fr->y0 + fr->h - (fr->max_bytes > 0 ? bytes / fr->max_bytes : 0) * fr->h;
}

/* A "nice" step (1, 2, 2.5 or 5 × 10^k) giving about `want` ticks over span. */
static double nice_step(double span, int want)
{
    if (span <= 0) return 1;
    double raw = span / want;
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    double step = m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10;
    return step * p;
}

static void text_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

static void choose_unit(frame *fr, double max_bytes)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    uint64_t unit = 1;
    while (i < 4 && max_bytes >= (double)unit * 1024.0 * 1.5) {
        unit *= 1024;
        i++;
    }
    fr->unit = unit;
    fr->unit_name = names[i];
}

static void axes(FILE *f, const frame *fr)
{
    /* Horizontal grid lines with byte labels. */
    double span_units = fr->max_bytes / (double)fr->unit;
    double step = nice_step(span_units, 6);
    for (double v = 0; v <= span_units + 1e-9; v += step) {
        double y = fy(fr, v * (double)fr->unit);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", fr->x0, y,
                fr->x0 + fr->w, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">%g %s</text>\n",
                fr->x0 - 6, y + 4, v, fr->unit_name);
    }
    double estep = nice_step(fr->max_event, 8);
    if (estep < 1) estep = 1;
    for (double e = 0; e <= fr->max_event + 1e-9; e += estep) {
        double x = fx(fr, e);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>\n", x, fr->y0,
                x, fr->y0 + fr->h);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"tick\">%.0f</text>\n", x,
                fr->y0 + fr->h + 30, e);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n",
            fr->x0, fr->y0, fr->w, fr->h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"axis\">event</text>\n",
            fr->x0 + fr->w / 2, fr->y0 + fr->h + 52);
    fprintf(f,
            "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\" class=\"axis\">"
            "device memory (%s)</text>\n",
            fr->y0 + fr->h / 2, fr->unit_name);
}

/* The value a series shows at sample p: 0 live (never above the bucket's
 * reserved), 1 reserved (bucket max), 2 outdated (bucket max). */
static double series(const sample *p, int which)
{
    if (which == 0) return (double)(p->live < p->reserved_max ? p->live : p->reserved_max);
    return (double)(which == 1 ? p->reserved_max : p->outdated_max);
}

/* One series as steps: each value holds from its sample to the next. */
static void steps(FILE *f, const frame *fr, const sampler *s, int which)
{
    for (size_t i = 0; i < s->count; i++) {
        double y = fy(fr, series(&s->points[i], which));
        if (i > 0) fprintf(f, " H%.1f", fx(fr, (double)s->points[i].event));
        fprintf(f, " V%.1f", y);
    }
}

/* The filled area under one series (0 live, 1 reserved), drawn as steps. */
static void area(FILE *f, const frame *fr, const sampler *s, int which, const char *fill, const char *stroke)
{
    double x0 = fx(fr, (double)s->points[0].event), x1 = fx(fr, (double)s->points[s->count - 1].event);
    fprintf(f, "<path fill=\"%s\" stroke=\"%s\" stroke-width=\"1.2\" d=\"M%.1f %.1f", fill, stroke, x0,
            fy(fr, 0));
    steps(f, fr, s, which);
    fprintf(f, " H%.1f V%.1f Z\"/>\n", x1 + (s->count == 1 ? 1.5 : 0), fy(fr, 0));
}

static void outdated_line(FILE *f, const frame *fr, const sampler *s)
{
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" d=\"M%.1f %.1f", COLOR_OUTDATED,
            fx(fr, (double)s->points[0].event), fy(fr, 0));
    steps(f, fr, s, 2);
    fputs("\"/>\n", f);
}

/* The x of each relocation tick, at most one per 1.5 pixels; returns the count. */
static size_t tick_positions(const frame *fr, const sampler *s, double *xs)
{
    size_t n = 0;
    double last_x = -10;
    for (size_t i = 0; i < s->count; i++) {
        if (!s->points[i].relocations) continue;
        double x = fx(fr, (double)s->points[i].event);
        if (x - last_x < 1.5) continue;
        last_x = x;
        xs[n++] = x;
    }
    return n;
}

static void relocation_ticks(FILE *f, const frame *fr, const sampler *s, size_t relocations)
{
    double base = fr->y0 + fr->h;
    double xs[WIDTH];
    size_t n = tick_positions(fr, s, xs);
    bool lines = n <= RELOC_LINES_MAX;
    fprintf(f, "<g stroke=\"%s\" stroke-width=\"%s\">\n", COLOR_RELOC, lines ? "2.2" : "1");
    for (size_t i = 0; i < n; i++) {
        /* While few, a faint line across the plot ties a tick to what it
         * changed; many would cover the plot, so then ticks stay thin. */
        if (lines)
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"1.4\" "
                    "stroke-opacity=\"0.35\" stroke-dasharray=\"3 3\"/>\n",
                    xs[i], fr->y0, xs[i], base);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", xs[i], base + 2, xs[i],
                base + 14);
    }
    fputs("</g>\n", f);
    (void)relocations;
}

/* The legend: one row above the plot, never over the data or a label. */
static void legend(FILE *f, const frame *fr, bool capacity, uint64_t relocations)
{
    double y = fr->y0 - 14;
    char reloc_label[48];
    snprintf(reloc_label, sizeof reloc_label, "relocation (%" PRIu64 ")", relocations);
    struct {
        const char *fill, *stroke, *label;
        int kind;
        double width;
    } items[] = {
        {COLOR_RESERVED, STROKE_RESERVED, "reserved (pages held)", 0, 168},
        {COLOR_LIVE, STROKE_LIVE, "live (in use)", 0, 112},
        {"none", COLOR_OUTDATED, "outdated pages", 1, 130},
        {"none", COLOR_RELOC, reloc_label, 2, 140},
        {"none", "#555", "capacity", 3, 90},
    };
    int rows = capacity ? 5 : 4;
    double x = fr->x0;
    for (int i = 0; i < rows; i++) {
        if (items[i].kind == 0)
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"10\" fill=\"%s\" stroke=\"%s\"/>\n",
                    x, y - 5, items[i].fill, items[i].stroke);
        else if (items[i].kind == 2)
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"2.2\"/>\n",
                    x + 8, y - 6, x + 8, y + 6, items[i].stroke);
        else
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"1.6\"%s/>\n",
                    x, y, x + 16, y, items[i].stroke, items[i].kind == 3 ? " stroke-dasharray=\"5 3\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"legend\">%s</text>\n", x + 22, y + 4, items[i].label);
        x += items[i].width;
    }
}

/* Where a label's text lies: its box on the picture. */
typedef struct box {
    double x0, y0, x1, y1;
} box;

static bool boxes_overlap(box a, box b)
{
    return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/* A marker with a label above it (below when that would meet `avoid` or
 * leave the plot), inside the plot, on a white ground so no line or area
 * runs through its letters. Returns the label's box. */
static box mark(FILE *f, const frame *fr, double event, double bytes, const char *color, const char *label,
                const box *avoid)
{
    double x = fx(fr, event), y = fy(fr, bytes);
    double width = 7.2 * (double)strlen(label), height = 15;
    bool right_side = x + 7 + width > fr->x0 + fr->w;
    box b;
    b.x0 = right_side ? x - 7 - width : x + 7;
    b.x1 = b.x0 + width;
    b.y1 = y - 6;
    b.y0 = b.y1 - height;
    if (b.y0 < fr->y0 + 2 || (avoid && boxes_overlap(b, *avoid))) {
        b.y0 = y + 6;
        b.y1 = b.y0 + height;
    }
    if (avoid && boxes_overlap(b, *avoid)) {
        b.y0 = avoid->y1 + 2;
        b.y1 = b.y0 + height;
    }
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"3\" fill=\"white\" "
            "fill-opacity=\"0.9\"/>\n",
            b.x0 - 3, b.y0, width + 6, height);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" stroke=\"white\"/>\n", x, y, color);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"note\" fill=\"%s\">",
            right_side ? b.x1 : b.x0, b.y1 - 3.5, right_side ? "end" : "start", color);
    text_escaped(f, label);
    fputs("</text>\n", f);
    return b;
}

/* One column of the verdict's table: its heading, the key its cells carry
 * (class k-KEY), and the x its text starts at, or ends at when `end`. */
typedef struct column {
    const char *head, *key;
    double x;
    bool end;
} column;

static void cell(FILE *f, const column *c, double y, const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"verdict k-%s\">", c->x, y,
            c->end ? "end" : "start", c->key);
    text_escaped(f, text);
    fputs("</text>\n", f);
}

/* The cell of column key for allocator w, into out. */
static void verdict_cell(const verdict *v, const verdict_row *w, const char *key, char *out, size_t cap)
{
    const verdict_run *rr = &v->runs[w->reported];
    const verdict_run *m = w->measured >= 0 ? &v->runs[w->measured] : NULL;
    char b[32], n[32];
    if (strcmp(key, "name") == 0)
        snprintf(out, cap, "%s", w->name);
    else if (strcmp(key, "fit") == 0) {
        if (w->fit_found)
            snprintf(out, cap, "%s (%.3f)", units_format_bytes(w->fit_capacity, b, sizeof b), w->fit_ratio);
        else
            snprintf(out, cap, "not found");
    } else if (strcmp(key, "outcome") == 0) {
        if (rr->ok)
            snprintf(out, cap, "completed");
        else
            snprintf(out, cap, "%s at event %s (%.0f %%)", rr->out_of_memory ? "out of memory" : "failed",
                     verdict_count(rr->failed_event + 1, n, sizeof n),
                     100.0 * (double)rr->failed_event / (double)(v->t->event_count ? v->t->event_count : 1));
    } else if (!m)
        snprintf(out, cap, "-");
    else if (strcmp(key, "peak") == 0)
        units_format_bytes(m->peak_held, out, cap);
    else if (strcmp(key, "avg") == 0)
        snprintf(out, cap, "%.3f", m->time_avg_ratio);
    else if (strcmp(key, "end") == 0)
        units_format_bytes(m->end_held, out, cap);
    else if (strcmp(key, "moved") == 0) {
        if (w->relo)
            units_format_bytes(m->bytes_moved, out, cap);
        else
            snprintf(out, cap, "never");
    } else
        snprintf(out, cap, "%.2f", m->allocs_per_1k);
}

/* Whether some allocator's figures come from its run on its fit capacity. */
static bool from_fit(const verdict *v)
{
    for (int i = 0; i < v->row_count; i++)
        if (v->rows[i].measured >= 0 && v->rows[i].measured != v->rows[i].reported) return true;
    return false;
}

/* The verdict as a table under the subtitle, one row per allocator, with a
 * note when some figures come from a run on an allocator's fit capacity.
 * Returns the y below it. */
static double verdict_table(FILE *f, const verdict *v, bool fitted)
{
    char on[48], b[32];
    snprintf(on, sizeof on, "on %s",
             v->capacity ? units_format_bytes(v->capacity, b, sizeof b) : "unlimited");
    const column cols[] = {
        {"allocator", "name", LEFT, false},  {"fit (ratio)", "fit", 336, true},
        {on, "outcome", 348, false},         {"peak held", "peak", 646, true},
        {"avg held/live", "avg", 730, true}, {"end held", "end", 796, true},
        {"moved", "moved", 862, true},       {"allocs/1k ev.", "allocs", WIDTH - RIGHT, true},
    };
    double y = VERDICT_TOP;
    fputs("<g class=\"verdict-head\">\n", f);
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
        if (fitted || strcmp(cols[c].key, "fit") != 0) cell(f, &cols[c], y, cols[c].head);
    fputs("</g>\n", f);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", LEFT, y + 4,
            WIDTH - RIGHT, y + 4);
    for (int i = 0; i < v->row_count; i++) {
        const verdict_row *w = &v->rows[i];
        y += VERDICT_ROW;
        fprintf(f, "<g class=\"verdict-row\" id=\"verdict-row-%d\">\n", i);
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
            if (!fitted && strcmp(cols[c].key, "fit") == 0) continue;
            char text[96];
            verdict_cell(v, w, cols[c].key, text, sizeof text);
            cell(f, &cols[c], y, text);
        }
        fputs("</g>\n", f);
    }
    if (from_fit(v)) {
        y += VERDICT_ROW;
        fprintf(f,
                "<text x=\"%d\" y=\"%.1f\" class=\"sub\">Held, moved and allocs/1k ev. of one that ran out "
                "of memory %s: from its run on its fit capacity.</text>\n",
                LEFT, y, on);
    }
    return y;
}

bool svg_write(const char *path, const report *rep)
{
    const sampler *s = &rep->r->samples;
    FILE *f = fopen(path, "w");
    if (!f) return false;
    verdict v;
    verdict_build(&v, rep, false);
    /* The legend's row, then the plot, below the verdict's table. */
    int plot_top = (int)(VERDICT_TOP + VERDICT_ROW * (v.row_count + (from_fit(&v) ? 1 : 0)) + 34);
    int height = plot_top + PLOT_HEIGHT + BOTTOM;
    frame fr = {LEFT, plot_top, WIDTH - LEFT - RIGHT, PLOT_HEIGHT, 0, 0, 1, "B"};
    uint64_t top = rep->r->peak_reserved > rep->r->peak_live ? rep->r->peak_reserved : rep->r->peak_live;
    size_t peak_res_i = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (s->points[i].reserved_max > top) top = s->points[i].reserved_max;
        if (s->points[i].reserved_max > s->points[peak_res_i].reserved_max) peak_res_i = i;
    }
    bool show_capacity = rep->capacity && (double)rep->capacity < (double)top * 1.6;
    if (show_capacity && rep->capacity > top) top = rep->capacity;
    choose_unit(&fr, (double)top);
    double step = nice_step((double)top / (double)fr.unit, 6) * (double)fr.unit;
    fr.max_bytes = ceil((double)top * 1.04 / step) * step;
    if (fr.max_bytes <= 0) fr.max_bytes = 1;
    /* The axis ends where the data does: the last sample, which for a
     * failed replay is where it stopped, not the end of the trace. */
    fr.max_event = s->count && s->points[s->count - 1].event > 0 ? (double)s->points[s->count - 1].event : 1;
    bool failed = rep->r->status != RELO_OK;

    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            WIDTH, height, WIDTH, height);
    fputs(
        "<style>.tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}"
        ".legend{font-size:12px;fill:#222}"
        ".note{font-size:12px;font-weight:bold;paint-order:stroke;stroke:white;stroke-width:3px}"
        ".title{font-size:19px;font-weight:bold;fill:#111}.sub{font-size:12px;fill:#555}"
        ".verdict{font-size:11.5px;fill:#222}.verdict-head "
        "text{font-size:11px;font-weight:bold;fill:#444}</style>\n",
        f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", WIDTH, height);
    fprintf(f, "<text x=\"%d\" y=\"28\" class=\"title\">", LEFT);
    text_escaped(f, rep->t->name);
    if (failed)
        fprintf(f, "<tspan fill=\"%s\" dx=\"8\">· replay FAILED at event %" PRIu64 " of %zu</tspan>",
                COLOR_FAILED, rep->r->failed_event + 1, rep->t->event_count);
    fputs("</text>\n", f);

    char live[32], reserved[32], cap[32], fit[64] = "";
    const options *o = rep->o;
    if (rep->fit && rep->fit->found)
        snprintf(fit, sizeof fit, " · fit ratio %.3f",
                 (double)rep->fit->capacity / (double)rep->t->peak_live_bytes);
    fprintf(f,
            "<text x=\"%d\" y=\"50\" class=\"sub\">%s backend · %s placement · relocation %s · "
            "capacity %s · %zu events · peak reserved/live %.3f%s</text>\n",
            LEFT, replay_backend_name(o->backend), options_placement_word(o->placement),
            o->relocation == RELO_RELOCATION_OFF ? "off" : "auto",
            rep->capacity ? units_format_bytes(rep->capacity, cap, sizeof cap) : "unlimited",
            rep->t->event_count,
            rep->r->peak_live ? (double)rep->r->peak_reserved / (double)rep->r->peak_live : 0.0, fit);

    axes(f, &fr);
    if (s->count) {
        area(f, &fr, s, 1, COLOR_RESERVED, STROKE_RESERVED);
        area(f, &fr, s, 0, COLOR_LIVE, STROKE_LIVE);
        outdated_line(f, &fr, s);
        relocation_ticks(f, &fr, s, (size_t)rep->r->stats.relocations);
        if (show_capacity) {
            double y = fy(&fr, (double)rep->capacity);
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                    "stroke-width=\"1.4\" stroke-dasharray=\"5 3\"/>\n",
                    fr.x0, y, fr.x0 + fr.w, y);
        }
        char label[96];
        units_format_bytes(rep->r->peak_reserved, reserved, sizeof reserved);
        snprintf(label, sizeof label, "peak reserved %s", reserved);
        box first = mark(f, &fr, (double)s->points[peak_res_i].event,
                         (double)s->points[peak_res_i].reserved_max, STROKE_RESERVED, label, NULL);
        units_format_bytes(rep->r->peak_live, live, sizeof live);
        snprintf(label, sizeof label, "peak live %s", live);
        mark(f, &fr, (double)rep->r->peak_event, (double)rep->r->peak_live, STROKE_LIVE, label, &first);
    }
    if (failed) {
        /* Where it stopped: a line at the right edge of the data; why: a
         * line of its own under the subtitle, clear of labels and data. */
        double x = fr.x0 + fr.w;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                x, fr.y0, x, fr.y0 + fr.h, COLOR_FAILED);
        fprintf(f, "<text x=\"%d\" y=\"67\" class=\"sub\" fill=\"%s\" style=\"fill:%s\">", LEFT, COLOR_FAILED,
                COLOR_FAILED);
        char why[200];
        snprintf(why, sizeof why, "failed: %.180s", rep->r->error);
        text_escaped(f, why);
        fputs("</text>\n", f);
    }
    verdict_table(f, &v, rep->fit != NULL);
    verdict_free(&v);
    legend(f, &fr, show_capacity, rep->r->stats.relocations);
    fputs("</svg>\n", f);
    bool ok = !ferror(f);
    if (fclose(f) != 0) ok = false;
    return ok;
}
