/*
 * The trace: Chrome trace-event JSON, written at fini. Events go to per-thread buffers
 * (no lock on the hot path) and are formatted only at the end, so tracing costs nothing
 * when off (callers test ctx->trace) and little when on. Internal to convoy.
 *
 * Processes: pid 0 is the CPUs (one thread per worker, plus the inserting threads),
 * pid 1 + i is accelerator i (one thread per stream, plus its progress thread). The
 * writer adds 1 to every pid and tid (trace_write.c says why).
 */
#ifndef CONVOY_TRACE_H
#define CONVOY_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "convoy.h"

typedef struct convoy__trace convoy__trace_t;

/* Event kinds: each becomes one trace event with the fields its kind needs. */
typedef enum convoy__trace_kind {
    CONVOY__EV_SUBMISSION, /* X: a copy submission (stage, ring, copies, bytes, method, split) */
    CONVOY__EV_LAUNCH,     /* X: a chore or batch chore launch on an accelerator (ring, tasks) */
    CONVOY__EV_CPU_TASK,   /* X: a chore run on a CPU worker (task, ring) */
    CONVOY__EV_TASK,       /* i: a task's lifecycle step (task, ring, step) */
    CONVOY__EV_COUNTER,    /* C: a counter sample (name, value in bytes) */
    CONVOY__EV_FLOW,       /* s/f: an arrow from a task to a successor (task, other) */
    CONVOY__EV_MESSAGE,    /* i: a message of the distributed mode posted to MPI (stage 0:
                              sent, 1: received; count: flows; bytes: the message's; other:
                              the peer rank) */
    CONVOY__EV_PROGRESS,   /* X: a step of an accelerator's progress thread on the host (name:
                              the step; ring; count: its tasks or copies) */
} convoy__trace_kind_t;

/* Stages of a submission and lifecycle steps of a task. */
typedef enum convoy__trace_stage {
    CONVOY__STAGE_IN = 0,
    CONVOY__STAGE_OUT = 1,
    CONVOY__STAGE_EVICT = 2,
} convoy__trace_stage_t;

typedef enum convoy__trace_step {
    CONVOY__STEP_INSERTED = 0,
    CONVOY__STEP_READY,
    CONVOY__STEP_STAGED_IN,
    CONVOY__STEP_EXECUTED,
    CONVOY__STEP_COMPLETED,
    CONVOY__STEP_FAILED,
    CONVOY__STEP_CANCELLED,
} convoy__trace_step_t;

typedef struct convoy__trace_event {
    uint8_t kind;  /* convoy__trace_kind_t */
    uint8_t stage; /* convoy__trace_stage_t (submissions) or convoy__trace_step_t (tasks) */
    int8_t method; /* convoy__copy_method_t (submissions) */
    uint8_t split; /* submissions: a large copy sent alone */
    int16_t pid;
    int16_t tid;
    int32_t count;     /* copies (submissions) or tasks (launches) */
    uint64_t ts_ns;    /* start, CLOCK_MONOTONIC */
    uint64_t dur_ns;   /* for X events */
    uint64_t bytes;    /* submissions: payload; counters: value */
    uint64_t task_id;  /* tasks, CPU tasks; flows: the source */
    uint64_t other_id; /* flows: the successor */
    int64_t ring_id;   /* -1 when none */
    const char *name;  /* a static string: class name, counter name */
} convoy__trace_event_t;

/* Open a trace that will be written to path at close. Checks at once that the path's
 * folder is writable (an unwritable path fails init, not fini). */
convoy_status_t convoy__trace_open(convoy_context_t *ctx, const char *path, int flows,
                                   convoy__trace_t **trace_p);
/* Write the file (through a temporary file and a rename) and free everything.
 * Accepts NULL. */
convoy_status_t convoy__trace_close(convoy__trace_t *trace);

/* Free a trace without writing it (init failed). Accepts NULL. */
void convoy__trace_discard(convoy__trace_t *trace);

void convoy__trace_emit(convoy__trace_t *trace, const convoy__trace_event_t *ev);
/* Record n events equal to tmpl but for their task_id, ids[0..n): one name lookup and one
 * publication per chunk they fill, for the lifecycle steps of a group of tasks. */
void convoy__trace_emit_tasks(convoy__trace_t *trace, const convoy__trace_event_t *tmpl,
                              const uint64_t *task_ids, int n);
/* Name a process or a thread (copied). */
void convoy__trace_name(convoy__trace_t *trace, int pid, int tid, const char *name);
/* Whether flow arrows were asked for (CONVOY_TRACE_FLOWS). */
int convoy__trace_flows(const convoy__trace_t *trace);
/* The feeder of pre-touched chunks (trace_feed.c), for tests: the chunks it has handed
 * out, and in *ready (when not NULL) how many it holds ready now; 0 once stopped. */
uint64_t convoy__trace_fed(const convoy__trace_t *trace, int *ready);
/* Stop the feeder: the emitting threads then allocate every chunk themselves. Done by
 * close; tests call it earlier. No thread may be emitting into trace meanwhile. */
void convoy__trace_stop_feed(convoy__trace_t *trace);
/* How many events were recorded so far (tests). */
uint64_t convoy__trace_count(const convoy__trace_t *trace, convoy__trace_kind_t kind);

#endif /* CONVOY_TRACE_H */
