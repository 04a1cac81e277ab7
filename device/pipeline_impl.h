/*
 * The pipeline's private structures, shared by pipeline.c (the progress thread) and
 * pipeline_ring.c (what happens to one ring). Internal to convoy.
 */
#ifndef CONVOY_PIPELINE_IMPL_H
#define CONVOY_PIPELINE_IMPL_H

#include "device/devmem.h"
#include "device/pipeline.h"

#define CONVOY__NEXEC 4       /* execute streams, used in turn by launches */
#define CONVOY__RING_CAP 4096 /* the most tasks the pipeline takes as one ring */

/* A device event shared by everything that waits for one submission or launch. */
typedef struct convoy__pev {
    convoy__event_t *ev;
    int refs;
    int done;                 /* seen complete */
    int failed;               /* the device reported an error for the work before it */
    uint64_t enqueue_ns;      /* for the trace: when the work before it was enqueued */
    convoy__trace_event_t tr; /* a submission's trace record, emitted when seen complete */
    int traced;
    struct convoy__pev *next; /* the free list */
} convoy__pev_t;

/* Why a member failed. */
enum {
    MEMBER_OK = 0,
    MEMBER_FAIL_MEMORY, /* no device memory for a flow */
    MEMBER_FAIL_STAGE_IN,
    MEMBER_FAIL_LAUNCH, /* the launch call failed */
    MEMBER_FAIL_CHORE,  /* the chore returned non-zero */
    MEMBER_FAIL_PUSHOUT,
    MEMBER_FAIL_DEVICE, /* the device reported an error for work the member needed */
};

typedef struct convoy__member {
    convoy__task_t *task;
    convoy__devcopy_t *copy[CONVOY_MAX_FLOWS];
    int ncopies; /* copies acquired (flows reserved so far) */
    int in_need; /* the last stage-in submission of this ring it needs, -1 none */
    int group;
    int fail; /* MEMBER_* */
    int fail_flow;
    int rc; /* the chore's return value */
    convoy_status_t fail_status;
    convoy__pev_t *wait[CONVOY_MAX_FLOWS]; /* stage-ins of earlier rings it waits for */
    int nwait;
    convoy__pev_t *done[2]; /* pushout (small, large) or launch events to wait for */
    int ndone;
    int completed;
} convoy__member_t;

enum { GROUP_WAIT_IN = 0, GROUP_LAUNCHED, GROUP_PUSHED, GROUP_DONE };

typedef struct convoy__group {
    int state;
    int split;            /* waits for a large stage-in: launched from the host when it lands */
    int first, count;     /* members order[first .. first + count) */
    convoy__pev_t *in_ev; /* the last stage-in submission it needs (NULL: none) */
    convoy__pev_t *in_small_ev; /* split groups: the last small stage-in of the ring */
    convoy__pev_t *exec_ev;
    convoy__stream_t *exec_stream; /* where it was launched: an event recorded later covers it */
    uint64_t record_deadline;      /* give up recording exec_ev after this (device broken) */
    void *launches;                /* launch records, alive until the ring is freed */
    int *run;                      /* members launched */
    int traced_steps;              /* lifecycle steps already in the trace (staged-in, executed) */
} convoy__group_t;

typedef struct convoy__ring {
    int64_t id;
    const convoy_class_t *cls; /* every member's: a member's task is freed once it completes */
    int n;
    convoy__member_t *m;
    int *order; /* member indices grouped */
    convoy__group_t *groups;
    int ngroups, open_members;
    convoy__pev_t **in_subs; /* one per stage-in submission */
    char *in_split;          /* per stage-in submission: 1 when split */
    int nin;
    char mem_msg[256], in_msg[256], launch_msg[256], out_msg[256]; /* first failures */
    struct convoy__pipe *pipe;
    int leak; /* a launch may still run with no event to tell when: keep what it uses */
    struct convoy__ring *next;
} convoy__ring_t;

typedef struct convoy__pipe {
    convoy__device_t *dev;
    convoy_context_t *ctx;
    int queue;
    pthread_t thread;
    int started;
    atomic_int stop;
    _Atomic int64_t load; /* tasks popped and not completed */
    convoy__stream_t *in, *in_large, *out, *out_large, *exec[CONVOY__NEXEC];
    unsigned next_exec; /* unsigned: wraps without undefined behaviour */
    convoy__devmem_t mem;
    convoy__ring_t *rings; /* in flight, oldest first */
    convoy__ring_t *kept;  /* rings a launch may still use: freed once the streams are gone */
    int nrings;
    int64_t max_inflight;     /* tasks */
    convoy__task_t *deferred; /* waiting for device memory, oldest first */
    convoy__pev_t *free_pevs;
    int method; /* copy_method: -1 auto */
    uint64_t poll_ns;
    convoy__task_t *popped[CONVOY__RING_CAP];
} convoy__pipe_t;

/* Events (pipeline.c). */
convoy__pev_t *convoy__pev_record(convoy__pipe_t *p, convoy__stream_t *stream);
int convoy__pev_poll(convoy__pipe_t *p, convoy__pev_t *e);
void convoy__pev_put(convoy__pipe_t *p, convoy__pev_t *e);

/* Rings (pipeline_ring.c). */
/* Give back what a finished ring holds; a ring marked leak is kept on p->kept instead. */
void convoy__ring_free(convoy__pipe_t *p, convoy__ring_t *r);
void convoy__ring_start(convoy__pipe_t *p, convoy__task_t **tasks, int n);
/* Advance a ring; returns 1 when something moved. Frees the ring when all is done and
 * returns 1 with *finished_p set. */
int convoy__ring_progress(convoy__pipe_t *p, convoy__ring_t *r, int *finished_p);

#endif /* CONVOY_PIPELINE_IMPL_H */
