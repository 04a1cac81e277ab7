/*
 * Reading convoy traces (Chrome trace-event JSON, as src/trace_write.c writes them) and
 * summarising them, for convoy-trace and its fuzzer. Not part of the library.
 *
 * Every function that reads input validates it: malformed, truncated or hostile input
 * is reported as an error whose message names the input (its label) and what is wrong;
 * nothing here aborts or reads out of bounds, whatever the bytes.
 */
#ifndef CONVOY_TRACE_READ_H
#define CONVOY_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Categories convoy writes (cat), and OTHER for anything else. */
typedef enum convoy__tr_cat {
    CONVOY__TR_COPY = 0, /* X: a copy submission; name is its stage */
    CONVOY__TR_LAUNCH,   /* X: a chore launch on an accelerator */
    CONVOY__TR_CPU,      /* X: a chore run on a CPU worker */
    CONVOY__TR_TASK,     /* i: a task lifecycle step */
    CONVOY__TR_COUNTER,  /* C */
    CONVOY__TR_MESSAGE,  /* i: a message of the distributed mode; name send or receive */
    CONVOY__TR_PROGRESS, /* X: a step of an accelerator's progress thread; name the step */
    CONVOY__TR_OTHER,
    CONVOY__TR_NCATS
} convoy__tr_cat_t;

/* Lifecycle steps (task events' names). */
enum {
    CONVOY__TR_INSERTED = 0,
    CONVOY__TR_READY,
    CONVOY__TR_STAGED_IN,
    CONVOY__TR_EXECUTED,
    CONVOY__TR_COMPLETED,
    CONVOY__TR_FAILED,
    CONVOY__TR_CANCELLED,
    CONVOY__TR_NSTEPS
};

/* Copy stages (copy events' names) and methods (args.method). */
enum { CONVOY__TR_STAGE_IN = 0, CONVOY__TR_PUSHOUT, CONVOY__TR_EVICT, CONVOY__TR_NSTAGES };
enum { CONVOY__TR_NMETHODS = 5 }; /* loop, engine, sm, auto, other */

extern const char *const convoy__tr_step_names[CONVOY__TR_NSTEPS];
extern const char *const convoy__tr_stage_names[CONVOY__TR_NSTAGES];
extern const char *const convoy__tr_method_names[CONVOY__TR_NMETHODS];

/* One event that the summary or the plot uses (M events become lane names). */
typedef struct convoy__tr_event {
    char ph;       /* 'X', 'i', 'C', 's', 'f' */
    uint8_t cat;   /* convoy__tr_cat_t */
    int8_t step;   /* task events: CONVOY__TR_*, -1 for an unknown step */
    int8_t stage;  /* copy events: CONVOY__TR_STAGE_IN..., -1 for an unknown stage */
    int8_t method; /* copy events: index in convoy__tr_method_names */
    uint8_t split; /* copy events */
    int32_t pid, tid;
    double ts, dur;   /* microseconds; dur only for X */
    double queued;    /* copy and launch events: args.queued_us, how long the work waited
                         behind earlier work on its lane (its ts is where that ended); 0 */
    const char *name; /* owned by the trace */
    const char *cls;  /* task events: args.class (may be NULL) */
    int64_t ring;     /* -1 when none */
    int64_t task;     /* task and cpu events; message events: the peer rank */
    int64_t count;    /* copies (copy events), tasks (launch, cpu events), flows
                         (message events) or the step's tasks or copies (progress) */
    uint64_t bytes;   /* copy and message events */
} convoy__tr_event_t;

/* A process (tid -1) or thread name from an M event. */
typedef struct convoy__tr_lane_name {
    int32_t pid, tid;
    const char *name;
} convoy__tr_lane_name_t;

typedef struct convoy__tr_trace {
    char *label; /* the file name, for messages */
    convoy__tr_event_t *ev;
    size_t nev;
    convoy__tr_lane_name_t *names;
    size_t nnames;
    struct convoy__tr_block *strings; /* the strings events point to */
} convoy__tr_trace_t;

/*
 * Parse len bytes of trace JSON. label names the input in error messages. On success
 * returns 0 and sets *trace_p (free with convoy__tr_free); on error returns -1 and
 * writes "LABEL: what is wrong" into err (errlen bytes, NUL-terminated).
 */
int convoy__tr_parse(const void *data, size_t len, const char *label, convoy__tr_trace_t **trace_p,
                     char *err, size_t errlen);
/* Read and parse a file (label: its path). Same contract as convoy__tr_parse. */
int convoy__tr_load(const char *path, convoy__tr_trace_t **trace_p, char *err, size_t errlen);
void convoy__tr_free(convoy__tr_trace_t *trace); /* accepts NULL */

/* The name of a process ("sim0", "pid 3" when unnamed) and of a lane ("sim0 / stage-in",
 * "pid 3 / tid 2" when unnamed), into buf. */
void convoy__tr_proc_label(const convoy__tr_trace_t *t, int32_t pid, char *buf, size_t len);
void convoy__tr_lane_label(const convoy__tr_trace_t *t, int32_t pid, int32_t tid, char *buf,
                           size_t len);

/* ------------------------------------------------------------------------------------
 * Summary: every figure convoy-trace prints, as a list of named values so that two
 * summaries can be compared figure by figure.
 * ---------------------------------------------------------------------------------- */

typedef struct convoy__tr_figure {
    char section[24]; /* "stages", "rings", "submissions", "tasks" */
    char label[80];   /* unique within the summary */
    double value;
    const char *unit; /* "ms", "us", "GB/s", "MB", "" (a count) */
} convoy__tr_figure_t;

typedef struct convoy__tr_slow_task {
    int64_t task, ring;
    double latency_us;
    const char *cls; /* points into the trace */
    int outcome;     /* CONVOY__TR_COMPLETED, _FAILED, _CANCELLED */
} convoy__tr_slow_task_t;

#define CONVOY__TR_NSLOW 5

typedef struct convoy__tr_summary {
    convoy__tr_figure_t *fig;
    size_t nfig, capfig;
    convoy__tr_slow_task_t slow[CONVOY__TR_NSLOW]; /* the slowest tasks, slowest first */
    int nslow;
} convoy__tr_summary_t;

/*
 * Compute the summary of a parsed trace. Returns 0 and sets *sum_p (free with
 * convoy__tr_summary_free; it points into trace, which must outlive it), or -1 with a
 * message in err (only when memory runs out).
 */
int convoy__tr_summarise(const convoy__tr_trace_t *trace, convoy__tr_summary_t **sum_p, char *err,
                         size_t errlen);
void convoy__tr_summary_free(convoy__tr_summary_t *sum); /* accepts NULL */

/* The figure with this label, or NULL. */
const convoy__tr_figure_t *convoy__tr_figure(const convoy__tr_summary_t *sum, const char *label);

/* Merge n traces (trace_merge.c: input k is rank k, pids k * 1000 + pid) into out.
 * Returns 0; -1 for an input that cannot be read or merged, 1 when writing failed; err
 * says why, naming the file. */
int convoy__tr_merge(const char *const *paths, int n, FILE *out, char *err, size_t errlen);

/* Print a summary (convoy-trace summary), or two side by side with ratios b/a
 * (trace_summary.c). */
void convoy__tr_print(FILE *out, const convoy__tr_trace_t *t, const convoy__tr_summary_t *s);
void convoy__tr_print_compare(FILE *out, const convoy__tr_trace_t *ta,
                              const convoy__tr_summary_t *a, const convoy__tr_trace_t *tb,
                              const convoy__tr_summary_t *b);

/* ------------------------------------------------------------------------------------
 * Plot (trace_svg.c)
 * ---------------------------------------------------------------------------------- */

typedef struct convoy__tr_plot_opts {
    int width;             /* pixels of the whole picture; 0: 1600 */
    double from_us, to_us; /* the time window from the first event's start; to_us <=
                              from_us: the whole trace */
} convoy__tr_plot_opts_t;

/* Write an SVG timeline of the X events: one lane per (pid, tid). Returns 0; -2 with a
 * message in err, having written nothing, when the window holds no event; -1 with a
 * message when memory runs out or the stream reports a write error. */
int convoy__tr_plot(FILE *out, const convoy__tr_trace_t *t, const convoy__tr_plot_opts_t *opts,
                    char *err, size_t errlen);

#endif /* CONVOY_TRACE_READ_H */
