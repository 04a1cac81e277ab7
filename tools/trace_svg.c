/*
 * The SVG timeline of a trace (convoy-trace plot): one lane per (pid, tid) with its
 * process and thread names, X events as rectangles colored by stage or category, a time
 * axis and a legend. Events of one color that fall within MERGE_PX pixels of each other
 * are drawn as one rectangle whose opacity is the fraction of its time they were busy,
 * so the file's size follows the picture's width, not the trace's length, and a
 * full-run view shows density rather than solid bars.
 *
 * Times on the axis and in --from/--to count from the first event's start: a window
 * read off the axis of the full view selects what it showed there.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_read.h"

#define LABEL_W 280 /* pixels left of the plot for lane names */
#define RIGHT_W 20
#define LANE_H 16
#define LANE_GAP 3
#define TOP 56        /* title and axis */
#define MAX_LANES 512 /* more lanes are left out (and said so) */
#define MERGE_PX 3    /* the widest rectangle that merges several events */
#define MIN_OPACITY 0.15

enum { COL_IN, COL_OUT, COL_EVICT, COL_LAUNCH, COL_CPU, COL_OTHER, NCOLORS };
static const char *const colors[NCOLORS] = {"#4e79a7", "#f28e2b", "#e15759",
                                            "#59a14f", "#b07aa1", "#9c9c9c"};
static const char *const color_names[NCOLORS] = {"stage-in", "pushout", "evict",
                                                 "launch",   "cpu",     "other"};

static int color_of(const convoy__tr_event_t *e)
{
    switch (e->cat) {
    case CONVOY__TR_COPY: return e->stage; /* COL_IN, COL_OUT, COL_EVICT */
    case CONVOY__TR_LAUNCH: return COL_LAUNCH;
    case CONVOY__TR_CPU: return COL_CPU;
    default: return COL_OTHER;
    }
}

/* s as XML character data: markup characters escaped, control characters as '?',
 * at most max characters. */
static void put_xml(FILE *out, const char *s, size_t max)
{
    for (size_t i = 0; s != NULL && s[i] != '\0' && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: putc(c < 0x20 || c == 0x7f ? '?' : c, out); break;
        }
    }
}

static int cmp_lane(const void *pa, const void *pb)
{
    const convoy__tr_event_t *a = *(convoy__tr_event_t *const *)pa;
    const convoy__tr_event_t *b = *(convoy__tr_event_t *const *)pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about n ticks over span. */
static double tick_step(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void put_time(FILE *out, double us, double step)
{
    if (step >= 1e5)
        fprintf(out, "%g s", us / 1e6);
    else if (step >= 100)
        fprintf(out, "%g ms", us / 1e3);
    else
        fprintf(out, "%g us", us);
}

/* A rectangle being extended by the events that fall on the same pixels. */
typedef struct pending {
    double x0, x1;
    double busy; /* pixels covered by the events themselves */
    int color;
    size_t count;
    const convoy__tr_event_t *first;
} pending_t;

static void flush(FILE *out, const pending_t *p, double y)
{
    if (p->count == 0)
        return;
    double w = p->x1 - p->x0 < 1 ? 1 : p->x1 - p->x0;
    fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"", p->x0, y,
            w, LANE_H, colors[p->color]);
    double density = p->busy / w;
    if (density < 0.995)
        fprintf(out, " fill-opacity=\"%.2f\"", density > MIN_OPACITY ? density : MIN_OPACITY);
    fputs("><title>", out);
    const convoy__tr_event_t *e = p->first;
    if (p->count > 1) {
        fprintf(out, "%zu events, busy %.0f%%", p->count, 100 * (density < 1 ? density : 1));
    } else {
        put_xml(out, e->name, 200);
        fprintf(out, ": %.3f us at %.3f us", e->dur, e->ts);
        if (e->cat == CONVOY__TR_COPY)
            fprintf(out, ", %lld copies, %llu bytes, %s%s", (long long)e->count,
                    (unsigned long long)e->bytes, convoy__tr_method_names[e->method],
                    e->split ? ", split" : "");
        if (e->ring >= 0)
            fprintf(out, ", ring %lld", (long long)e->ring);
    }
    fputs("</title></rect>\n", out);
}

/* Draw the lanes' events (xs sorted by lane, then start). */
static void put_lanes(FILE *out, const convoy__tr_trace_t *t, convoy__tr_event_t **xs, size_t nx,
                      size_t nlanes, double from, double to, double scale)
{
    size_t lane = 0;
    for (size_t i = 0, j; i < nx && lane < nlanes; i = j, lane++) {
        for (j = i + 1; j < nx && xs[j]->pid == xs[i]->pid && xs[j]->tid == xs[i]->tid; j++) {
        }
        double y = TOP + (double)lane * (LANE_H + LANE_GAP);
        char label[256];
        convoy__tr_lane_label(t, xs[i]->pid, xs[i]->tid, label, sizeof(label));
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL_W - 8, y + LANE_H - 4);
        put_xml(out, label, 48);
        fputs("</text>\n", out);
        pending_t p = {0};
        for (size_t k = i; k < j; k++) {
            const convoy__tr_event_t *e = xs[k];
            double a = fmax(e->ts, from), b = fmin(e->ts + e->dur, to);
            if (b < a || e->ts > to || e->ts + e->dur < from)
                continue;
            double x0 = LABEL_W + (a - from) * scale, x1 = LABEL_W + (b - from) * scale;
            int c = color_of(e);
            if (p.count > 0 && c == p.color && x0 <= p.x1 + 0.5 &&
                fmax(p.x1, x1) - p.x0 <= MERGE_PX) {
                p.x1 = fmax(p.x1, x1);
                p.busy += x1 - x0;
                p.count++;
                continue;
            }
            flush(out, &p, y);
            p = (pending_t){
                .x0 = x0, .x1 = x1, .busy = x1 - x0, .color = c, .count = 1, .first = e};
        }
        flush(out, &p, y);
    }
}

int convoy__tr_plot(FILE *out, const convoy__tr_trace_t *t, const convoy__tr_plot_opts_t *opts,
                    char *err, size_t errlen)
{
    size_t nx = 0;
    for (size_t i = 0; i < t->nev; i++)
        nx += t->ev[i].ph == 'X';
    convoy__tr_event_t **xs = malloc((nx ? nx : 1) * sizeof(*xs));
    if (xs == NULL) {
        snprintf(err, errlen, "%s: out of memory plotting it", t->label);
        return -1;
    }
    nx = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].ph == 'X') {
            xs[nx++] = &t->ev[i];
            lo = fmin(lo, t->ev[i].ts);
            hi = fmax(hi, t->ev[i].ts + t->ev[i].dur);
        }
    qsort(xs, nx, sizeof(*xs), cmp_lane);
    size_t nlanes = 0;
    for (size_t i = 0; i < nx; i++)
        nlanes += i == 0 || xs[i]->pid != xs[i - 1]->pid || xs[i]->tid != xs[i - 1]->tid;
    size_t shown = nlanes < MAX_LANES ? nlanes : MAX_LANES;

    double origin = nx ? lo : 0; /* the axis's 0 */
    double from = origin, to = nx ? hi : 1;
    if (opts != NULL && opts->to_us > opts->from_us) {
        from = origin + opts->from_us;
        to = origin + opts->to_us;
        size_t inside = 0;
        for (size_t i = 0; i < nx && inside == 0; i++)
            inside += xs[i]->ts <= to && xs[i]->ts + xs[i]->dur >= from;
        if (inside == 0) {
            snprintf(err, errlen,
                     "%s: no event between %g and %g us (times from the first event; the "
                     "events span 0 .. %g us)",
                     t->label, opts->from_us, opts->to_us, nx ? hi - lo : 0);
            free(xs);
            return -2;
        }
    }
    if (!(to > from))
        to = from + 1; /* one event of no duration, or none */
    int width = opts != NULL && opts->width >= LABEL_W + RIGHT_W + 100 ? opts->width : 1600;
    double plot_w = width - LABEL_W - RIGHT_W, scale = plot_w / (to - from);
    int height = TOP + (int)shown * (LANE_H + LANE_GAP) + 60;

    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"8\" y=\"18\" font-size=\"14\">",
            width, height, width, height);
    put_xml(out, t->label, 200);
    fprintf(out, ": %zu events on %zu lanes%s</text>\n", nx, nlanes,
            shown < nlanes ? " (the first 512 shown)" : "");

    /* Axis: ticks and grid lines every step, in time from the origin. */
    double step = tick_step(to - from, 10);
    double bottom = TOP + (double)shown * (LANE_H + LANE_GAP);
    double first_tick = step > 0 ? ceil((from - origin) / step - 1e-9) * step : 0;
    if (first_tick == 0)
        first_tick = 0; /* not -0, which prints as "-0" */
    for (double v = first_tick; v <= to - origin + step * 1e-9 && step > 0; v += step) {
        double x = LABEL_W + (origin + v - from) * scale;
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n"
                "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">",
                x, TOP - 14, x, bottom, x, TOP - 18);
        put_time(out, v, step);
        fputs("</text>\n", out);
    }
    put_lanes(out, t, xs, nx, shown, from, to, scale);

    for (int c = 0; c < NCOLORS; c++) {
        double x = LABEL_W + c * 100;
        fprintf(out,
                "<rect x=\"%.0f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.1f\">%s</text>\n",
                x, bottom + 20, colors[c], x + 16, bottom + 30, color_names[c]);
    }
    fputs("</svg>\n", out);
    free(xs);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "writing the plot of %s failed", t->label);
        return -1;
    }
    return 0;
}
