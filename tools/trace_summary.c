/*
 * Summarising a parsed trace (see trace_read.h): the figures convoy-trace prints,
 * computed in time O(n log n) in the number of events whatever the input, so that a
 * hostile trace cannot make the tool hang.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_read.h"

/* Tables are built by sorting, not hashing: no input can make them slow. */

/* A task's lifecycle event, sorted by task then by position in the trace. */
typedef struct step_ref {
    int64_t task;
    size_t order;
    const convoy__tr_event_t *ev;
} step_ref_t;

/* One task: from its first 'inserted' to its first terminal step. */
typedef struct task_rec {
    int64_t id;
    double ins, end;
    int have_ins, outcome; /* outcome: a CONVOY__TR_* terminal step, 0 while none */
    int64_t ring;
    const char *cls;
} task_rec_t;

/* A ring id and the tasks one event gives it. */
typedef struct ring_ref {
    int64_t ring;
    int64_t tasks;
} ring_ref_t;

static int cmp_step(const void *pa, const void *pb)
{
    const step_ref_t *a = pa, *b = pb;
    if (a->task != b->task)
        return a->task < b->task ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_ring(const void *pa, const void *pb)
{
    const ring_ref_t *a = pa, *b = pb;
    return a->ring < b->ring ? -1 : a->ring > b->ring;
}

static int add_fig(convoy__tr_summary_t *s, const char *section, const char *unit, double value,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Append a figure; a label seen before adds to its value. Returns -1 without memory. */
static int add_fig(convoy__tr_summary_t *s, const char *section, const char *unit, double value,
                   const char *fmt, ...)
{
    char label[sizeof(s->fig[0].label)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label, sizeof(label), fmt, ap);
    va_end(ap);
    for (size_t i = s->nfig; i-- > 0;)
        if (strcmp(s->fig[i].label, label) == 0) {
            s->fig[i].value += value;
            return 0;
        }
    if (s->nfig == s->capfig) {
        size_t cap = s->capfig ? 2 * s->capfig : 64;
        convoy__tr_figure_t *f = realloc(s->fig, cap * sizeof(*f));
        if (f == NULL)
            return -1;
        s->fig = f;
        s->capfig = cap;
    }
    convoy__tr_figure_t *f = &s->fig[s->nfig++];
    snprintf(f->section, sizeof(f->section), "%s", section);
    memcpy(f->label, label, sizeof(label));
    f->value = value;
    f->unit = unit;
    return 0;
}

const convoy__tr_figure_t *convoy__tr_figure(const convoy__tr_summary_t *s, const char *label)
{
    for (size_t i = 0; i < s->nfig; i++)
        if (strcmp(s->fig[i].label, label) == 0)
            return &s->fig[i];
    return NULL;
}

void convoy__tr_summary_free(convoy__tr_summary_t *s)
{
    if (s == NULL)
        return;
    free(s->fig);
    free(s);
}

static int pow2_bucket(int64_t v)
{
    int b = 0;
    while (b < 62 && ((int64_t)1 << (b + 1)) <= v)
        b++;
    return b; /* v in [2^b, 2^(b+1)) */
}

/* Add a power-of-two histogram of values (v >= 1) as figures "WHAT of A-B UNITS". */
static int add_hist(convoy__tr_summary_t *s, const char *section, const char *what,
                    const char *unit, const char *units, const uint64_t *buckets)
{
    for (int b = 0; b < 63; b++) {
        if (buckets[b] == 0)
            continue;
        long long lo = 1ll << b, hi = b == 62 ? INT64_MAX : (1ll << (b + 1)) - 1;
        int rc = lo == hi ? add_fig(s, section, "", (double)buckets[b], "%s of 1 %s", what, unit)
                          : add_fig(s, section, "", (double)buckets[b], "%s of %lld-%lld %s", what,
                                    lo, hi, units);
        if (rc)
            return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n); /* nearest rank, 1-based */
    return sorted[rank > 0 ? rank - 1 : 0];
}

/* Keep l among the slowest tasks (s->slow: slowest first). */
static void keep_slow(convoy__tr_summary_t *s, const task_rec_t *r, double l)
{
    if (s->nslow == CONVOY__TR_NSLOW && l <= s->slow[CONVOY__TR_NSLOW - 1].latency_us)
        return;
    int k = s->nslow < CONVOY__TR_NSLOW ? s->nslow++ : CONVOY__TR_NSLOW - 1;
    for (; k > 0 && s->slow[k - 1].latency_us < l; k--)
        s->slow[k] = s->slow[k - 1];
    s->slow[k] = (convoy__tr_slow_task_t){
        .task = r->id, .ring = r->ring, .latency_us = l, .cls = r->cls, .outcome = r->outcome};
}

/* Task counts per step, latency from inserted to completed, the slowest tasks. */
static int summarise_tasks(const convoy__tr_trace_t *t, convoy__tr_summary_t *s)
{
    size_t n = 0, nlat = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += t->ev[i].cat == CONVOY__TR_TASK;
    step_ref_t *refs = malloc((n ? n : 1) * sizeof(*refs));
    double *lat = malloc((n ? n : 1) * sizeof(*lat));
    int rc = -1;
    if (refs == NULL || lat == NULL)
        goto out;
    uint64_t steps[CONVOY__TR_NSTEPS] = {0};
    n = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].cat == CONVOY__TR_TASK) {
            refs[n++] = (step_ref_t){.task = t->ev[i].task, .order = i, .ev = &t->ev[i]};
            steps[t->ev[i].step]++;
        }
    qsort(refs, n, sizeof(*refs), cmp_step);
    for (size_t i = 0, j; i < n; i = j) {
        task_rec_t r = {.id = refs[i].task, .ring = -1};
        for (j = i; j < n && refs[j].task == r.id; j++) {
            const convoy__tr_event_t *e = refs[j].ev;
            if (e->cls != NULL)
                r.cls = e->cls;
            if (e->step == CONVOY__TR_INSERTED && !r.have_ins) {
                r.ins = e->ts;
                r.have_ins = 1;
            } else if (e->step >= CONVOY__TR_COMPLETED && r.outcome == 0) {
                r.end = e->ts;
                r.outcome = e->step;
                r.ring = e->ring;
            }
        }
        if (r.have_ins && r.outcome == CONVOY__TR_COMPLETED) {
            lat[nlat++] = r.end - r.ins;
            keep_slow(s, &r, r.end - r.ins);
        }
    }
    static const int shown[] = {CONVOY__TR_INSERTED, CONVOY__TR_COMPLETED, CONVOY__TR_FAILED,
                                CONVOY__TR_CANCELLED};
    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
        if (add_fig(s, "tasks", "", (double)steps[shown[i]], "tasks %s",
                    convoy__tr_step_names[shown[i]]))
            goto out;
    if (nlat > 0) {
        qsort(lat, nlat, sizeof(*lat), cmp_double);
        if (add_fig(s, "tasks", "us", percentile(lat, nlat, 0.50), "latency p50") ||
            add_fig(s, "tasks", "us", percentile(lat, nlat, 0.90), "latency p90") ||
            add_fig(s, "tasks", "us", percentile(lat, nlat, 0.99), "latency p99") ||
            add_fig(s, "tasks", "us", lat[nlat - 1], "latency max"))
            goto out;
    }
    rc = 0;
out:
    free(refs);
    free(lat);
    return rc;
}

/* Rings: every ring id of copy, launch and cpu events; a ring's size is the sum of the
 * tasks of its launch and cpu events (0 when it never launched). */
static int summarise_rings(const convoy__tr_trace_t *t, convoy__tr_summary_t *s)
{
    ring_ref_t *refs = malloc((t->nev ? t->nev : 1) * sizeof(*refs));
    if (refs == NULL)
        return -1;
    size_t n = 0;
    uint64_t cpu_calls = 0, cpu_tasks = 0, launches = 0, launch_tasks = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const convoy__tr_event_t *e = &t->ev[i];
        if (e->cat == CONVOY__TR_CPU) {
            cpu_calls++;
            cpu_tasks += (uint64_t)e->count;
        } else if (e->cat == CONVOY__TR_LAUNCH) {
            launches++;
            launch_tasks += (uint64_t)e->count;
        } else if (e->cat != CONVOY__TR_COPY) {
            continue;
        }
        if (e->ring >= 0)
            refs[n++] = (ring_ref_t){e->ring, e->cat == CONVOY__TR_COPY ? 0 : e->count};
    }
    qsort(refs, n, sizeof(*refs), cmp_ring);
    uint64_t hist[63] = {0}, nrings = 0, empty = 0, members = 0;
    for (size_t i = 0, j; i < n; i = j) {
        int64_t size = 0;
        for (j = i; j < n && refs[j].ring == refs[i].ring; j++)
            size += refs[j].tasks; /* each <= INT32_MAX: no overflow below 2^32 events */
        nrings++;
        if (size <= 0)
            empty++;
        else
            hist[pow2_bucket(size)]++;
        members += (uint64_t)(size > 0 ? size : 0);
    }
    free(refs);
    if (add_fig(s, "rings", "", (double)nrings, "rings") ||
        add_fig(s, "rings", "", nrings > empty ? (double)members / (double)(nrings - empty) : 0,
                "mean ring size") ||
        add_fig(s, "rings", "", (double)launches, "launches") ||
        add_fig(s, "rings", "", (double)launch_tasks, "launched tasks") ||
        add_fig(s, "rings", "", (double)cpu_calls, "cpu chore calls") ||
        add_fig(s, "rings", "", (double)cpu_tasks, "cpu tasks") ||
        (empty > 0 && add_fig(s, "rings", "", (double)empty, "rings without a launch")))
        return -1;
    return add_hist(s, "rings", "rings", "task", "tasks", hist);
}

/* The distributed mode's messages: how many each way, their flows and bytes. */
static int summarise_messages(const convoy__tr_trace_t *t, convoy__tr_summary_t *s)
{
    uint64_t n[2] = {0, 0}, flows[2] = {0, 0};
    double bytes[2] = {0, 0};
    for (size_t i = 0; i < t->nev; i++) {
        const convoy__tr_event_t *e = &t->ev[i];
        if (e->cat != CONVOY__TR_MESSAGE)
            continue;
        int k = e->stage == 1;
        n[k]++;
        flows[k] += (uint64_t)e->count;
        bytes[k] += (double)e->bytes;
    }
    if (n[0] + n[1] == 0)
        return 0;
    return add_fig(s, "messages", "", (double)n[0], "messages sent") ||
           add_fig(s, "messages", "", (double)flows[0], "flows sent") ||
           add_fig(s, "messages", "B", bytes[0], "message bytes sent") ||
           add_fig(s, "messages", "", (double)n[1], "messages received") ||
           add_fig(s, "messages", "", (double)flows[1], "flows received") ||
           add_fig(s, "messages", "B", bytes[1], "message bytes received");
}

/* Submissions: counts, copies per submission, bytes per stage, bandwidth per method. */
static int summarise_copies(const convoy__tr_trace_t *t, convoy__tr_summary_t *s)
{
    uint64_t hist[63] = {0}, subs = 0, copies = 0, split = 0, zero = 0;
    double bytes[CONVOY__TR_NSTAGES] = {0}, mbytes[CONVOY__TR_NMETHODS] = {0};
    double mdur[CONVOY__TR_NMETHODS] = {0}, mcount[CONVOY__TR_NMETHODS] = {0};
    for (size_t i = 0; i < t->nev; i++) {
        const convoy__tr_event_t *e = &t->ev[i];
        if (e->cat != CONVOY__TR_COPY)
            continue;
        subs++;
        copies += (uint64_t)e->count;
        split += e->split;
        if (e->count > 0)
            hist[pow2_bucket(e->count)]++;
        else
            zero++;
        bytes[e->stage] += (double)e->bytes;
        mbytes[e->method] += (double)e->bytes;
        mdur[e->method] += e->dur;
        mcount[e->method]++;
    }
    if (add_fig(s, "submissions", "", (double)subs, "submissions") ||
        add_fig(s, "submissions", "", (double)copies, "copies") ||
        add_fig(s, "submissions", "", subs ? (double)copies / (double)subs : 0,
                "mean copies per submission") ||
        add_fig(s, "submissions", "", (double)split, "split submissions") ||
        (zero > 0 && add_fig(s, "submissions", "", (double)zero, "submissions of 0 copies")) ||
        add_hist(s, "submissions", "submissions", "copy", "copies", hist))
        return -1;
    double total = 0;
    for (int k = 0; k < CONVOY__TR_NSTAGES; k++) {
        total += bytes[k];
        if (add_fig(s, "submissions", "B", bytes[k], "bytes %s", convoy__tr_stage_names[k]))
            return -1;
    }
    if (add_fig(s, "submissions", "B", total, "bytes total"))
        return -1;
    for (int m = 0; m < CONVOY__TR_NMETHODS; m++) {
        if (mcount[m] == 0)
            continue;
        const char *name = convoy__tr_method_names[m];
        /* bytes / us = MB/s; / 1e3 = GB/s */
        if (add_fig(s, "submissions", "", mcount[m], "%s submissions", name) ||
            add_fig(s, "submissions", "B", mbytes[m], "%s bytes", name) ||
            add_fig(s, "submissions", "ms", mdur[m] / 1e3, "%s time", name) ||
            add_fig(s, "submissions", "GB/s", mdur[m] > 0 ? mbytes[m] / mdur[m] / 1e3 : 0,
                    "%s bandwidth", name))
            return -1;
    }
    return 0;
}

typedef struct stage_sum {
    int32_t pid;
    int kind; /* a copy stage, then NSTAGES + 0: launch, + 1: cpu, + 2: progress, + 3: other */
    double time_us;
    uint64_t count;
} stage_sum_t;

static const char *kind_name(int kind)
{
    static const char *const extra[] = {"launch", "cpu", "progress", "other"};
    return kind < CONVOY__TR_NSTAGES ? convoy__tr_stage_names[kind]
                                     : extra[kind - CONVOY__TR_NSTAGES];
}

static int cmp_stage(const void *pa, const void *pb)
{
    const stage_sum_t *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->kind - b->kind;
}

#define MAX_PROCS 32 /* processes shown by name; the rest are summed as "other processes" */
#define NKINDS (CONVOY__TR_NSTAGES + 4)

static int add_stage(convoy__tr_summary_t *s, const char *proc, const stage_sum_t *sum)
{
    return add_fig(s, "stages", "ms", sum->time_us / 1e3, "%s: %s time", proc,
                   kind_name(sum->kind)) ||
           add_fig(s, "stages", "", (double)sum->count, "%s: %s events", proc,
                   kind_name(sum->kind));
}

/* Time per stage and device: the sum of X durations by (pid, stage or category). */
static int summarise_stages(const convoy__tr_trace_t *t, convoy__tr_summary_t *s)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t nx = 0;
    for (size_t i = 0; i < t->nev; i++)
        nx += t->ev[i].ph == 'X';
    stage_sum_t *x = malloc((nx ? nx : 1) * sizeof(*x));
    if (x == NULL)
        return -1;
    nx = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const convoy__tr_event_t *e = &t->ev[i];
        lo = fmin(lo, e->ts);
        hi = fmax(hi, e->ts + e->dur);
        /* A progress thread asleep is not busy: its time is the steps' alone. */
        if (e->ph != 'X' || (e->cat == CONVOY__TR_PROGRESS && strcmp(e->name, "sleep") == 0))
            continue;
        int kind = e->cat == CONVOY__TR_COPY       ? e->stage
                   : e->cat == CONVOY__TR_LAUNCH   ? CONVOY__TR_NSTAGES
                   : e->cat == CONVOY__TR_CPU      ? CONVOY__TR_NSTAGES + 1
                   : e->cat == CONVOY__TR_PROGRESS ? CONVOY__TR_NSTAGES + 2
                                                   : CONVOY__TR_NSTAGES + 3;
        x[nx++] = (stage_sum_t){.pid = e->pid, .kind = kind, .time_us = e->dur, .count = 1};
    }
    qsort(x, nx, sizeof(*x), cmp_stage);
    int rc = add_fig(s, "stages", "ms", hi > lo ? (hi - lo) / 1e3 : 0, "trace span");
    stage_sum_t other[NKINDS] = {{0}};
    int procs = 0;
    for (size_t i = 0, j; i < nx && rc == 0; i = j) {
        stage_sum_t sum = x[i];
        for (j = i + 1; j < nx && x[j].pid == sum.pid && x[j].kind == sum.kind; j++) {
            sum.time_us += x[j].time_us;
            sum.count++;
        }
        procs += i == 0 || x[i - 1].pid != sum.pid;
        if (procs > MAX_PROCS) {
            other[sum.kind].time_us += sum.time_us;
            other[sum.kind].count += sum.count;
            continue;
        }
        char proc[96];
        convoy__tr_proc_label(t, sum.pid, proc, sizeof(proc));
        rc = add_stage(s, proc, &sum);
    }
    for (int k = 0; k < NKINDS && rc == 0; k++)
        if (other[k].count > 0) {
            other[k].kind = k;
            rc = add_stage(s, "other processes", &other[k]);
        }
    free(x);
    return rc;
}

int convoy__tr_summarise(const convoy__tr_trace_t *t, convoy__tr_summary_t **sum_p, char *err,
                         size_t errlen)
{
    convoy__tr_summary_t *s = calloc(1, sizeof(*s));
    if (s == NULL || summarise_stages(t, s) || summarise_rings(t, s) || summarise_copies(t, s) ||
        summarise_tasks(t, s) || summarise_messages(t, s)) {
        convoy__tr_summary_free(s);
        snprintf(err, errlen, "%s: out of memory summarising it", t->label);
        return -1;
    }
    *sum_p = s;
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Printing
 * ---------------------------------------------------------------------------------- */

/* s with control characters shown as '?' (names come from the input: no terminal
 * escape sequences reach the screen), into buf. */
static const char *clean(const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s != NULL && s[i] != '\0' && i + 1 < len; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    return buf;
}

/* A figure's value with its unit, into buf. */
static const char *fmt_value(const convoy__tr_figure_t *f, char *buf, size_t len)
{
    if (f == NULL)
        snprintf(buf, len, "-");
    else if (strcmp(f->unit, "B") == 0 && f->value >= 1024 * 1024)
        snprintf(buf, len, "%.2f MiB", f->value / (1024.0 * 1024.0));
    else if (strcmp(f->unit, "B") == 0 && f->value >= 1024)
        snprintf(buf, len, "%.2f KiB", f->value / 1024.0);
    else if (strcmp(f->unit, "B") == 0)
        snprintf(buf, len, "%.0f B", f->value);
    else if (f->unit[0] != '\0')
        snprintf(buf, len, "%.3f %s", f->value, f->unit);
    else if (f->value == floor(f->value) && fabs(f->value) < 1e15)
        snprintf(buf, len, "%.0f", f->value);
    else
        snprintf(buf, len, "%.2f", f->value);
    return buf;
}

void convoy__tr_print(FILE *out, const convoy__tr_trace_t *t, const convoy__tr_summary_t *s)
{
    char b1[128], b2[64];
    fprintf(out, "trace %s: %zu events\n", clean(t->label, b1, sizeof(b1)), t->nev);
    for (size_t i = 0; i < s->nfig; i++) {
        const convoy__tr_figure_t *f = &s->fig[i];
        if (i == 0 || strcmp(f->section, s->fig[i - 1].section) != 0)
            fprintf(out, "\n%s\n", f->section);
        fprintf(out, "  %-44s %16s\n", clean(f->label, b1, sizeof(b1)),
                fmt_value(f, b2, sizeof(b2)));
    }
    if (s->nslow > 0)
        fprintf(out, "\nslowest tasks (inserted to completed)\n");
    for (int i = 0; i < s->nslow; i++) {
        const convoy__tr_slow_task_t *w = &s->slow[i];
        fprintf(out, "  task %-10lld ring %-8lld %12.1f us  %s\n", (long long)w->task,
                (long long)w->ring, w->latency_us, clean(w->cls ? w->cls : "?", b1, sizeof(b1)));
    }
}

static void compare_row(FILE *out, const convoy__tr_figure_t *fa, const convoy__tr_figure_t *fb)
{
    char b1[128], va[64], vb[64], ratio[32] = "-";
    const convoy__tr_figure_t *f = fa != NULL ? fa : fb;
    if (fa != NULL && fb != NULL && fa->value != 0)
        snprintf(ratio, sizeof(ratio), "%.3f", fb->value / fa->value);
    fprintf(out, "  %-44s %16s %16s %10s\n", clean(f->label, b1, sizeof(b1)),
            fmt_value(fa, va, sizeof(va)), fmt_value(fb, vb, sizeof(vb)), ratio);
}

void convoy__tr_print_compare(FILE *out, const convoy__tr_trace_t *ta,
                              const convoy__tr_summary_t *a, const convoy__tr_trace_t *tb,
                              const convoy__tr_summary_t *b)
{
    char la[128], lb[128];
    fprintf(out, "a: %s (%zu events)\nb: %s (%zu events)\n", clean(ta->label, la, sizeof(la)),
            ta->nev, clean(tb->label, lb, sizeof(lb)), tb->nev);
    fprintf(out, "\n  %-44s %16s %16s %10s\n", "", "a", "b", "b/a");
    /* Section by section (in the order they first appear in a, then b): a's figures
     * with b's, then those only b has. */
    const convoy__tr_summary_t *both[2] = {a, b};
    for (int w = 0; w < 2; w++) {
        for (size_t i = 0; i < both[w]->nfig; i++) {
            const char *sec = both[w]->fig[i].section;
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++)
                seen = strcmp(both[w]->fig[j].section, sec) == 0;
            for (size_t j = 0; w == 1 && j < a->nfig && !seen; j++)
                seen = strcmp(a->fig[j].section, sec) == 0;
            if (seen)
                continue;
            fprintf(out, "%s\n", sec);
            for (size_t j = 0; j < a->nfig; j++)
                if (strcmp(a->fig[j].section, sec) == 0)
                    compare_row(out, &a->fig[j], convoy__tr_figure(b, a->fig[j].label));
            for (size_t j = 0; j < b->nfig; j++)
                if (strcmp(b->fig[j].section, sec) == 0 &&
                    convoy__tr_figure(a, b->fig[j].label) == NULL)
                    compare_row(out, NULL, &b->fig[j]);
        }
    }
}
