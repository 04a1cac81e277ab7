/*
 * The pipeline's private structures, shared by its files. Internal to convoy.
 *
 *   pipeline.c    the progress thread, streams, events, start and stop
 *   ring.c        a ring of the program's tasks: reserve, stage-in, groups, start, free
 *   ring_done.c   its completion: members finished, failure messages, progress
 *   push_behind.c outputs someone waits for at home, pushed behind their launch
 *   copies.c      planning and issuing one stage's copies (retry, events, sync)
 *   launch.c      launching a group's chores
 *   pushout.c     copies home: flush rings, flush-all, drop, and eviction pushouts
 */
#ifndef CONVOY_PIPELINE_IMPL_H
#define CONVOY_PIPELINE_IMPL_H

#include "device/devmem.h"
#include "device/memcpy_gang.h"
#include "device/pipeline.h"

#define CONVOY__NEXEC 4         /* execute streams, used in turn by launches */
#define CONVOY__RING_CAP 4096   /* the most tasks the pipeline takes as one ring */
#define CONVOY__SPARE_MEMBERS 4 /* member arrays kept for reuse */

/* A device event shared by everything that waits for one submission or launch. */
typedef struct convoy__pev {
    convoy__event_t *ev;
    int refs;
    int done;                 /* seen complete */
    int failed;               /* the device reported an error for the work before it */
    convoy__trace_event_t tr; /* a submission's trace record, emitted when seen complete */
    int traced;
    int quiet; /* recorded quiet (device.h) and not yet resolved: polled through
                  implied_by, pending until that is named (convoy__pev_imply) */
    struct convoy__pev *implied_by; /* quiet: an event after it on its stream, or on a
                                       stream that waited for it (one reference) */
    struct convoy__pev *next;       /* the free list */
} convoy__pev_t;

/* Why a member failed. */
enum {
    MEMBER_OK = 0,
    MEMBER_FAIL_MEMORY, /* no device memory for a flow */
    MEMBER_FAIL_STAGE_IN,
    MEMBER_FAIL_LAUNCH, /* the launch call failed */
    MEMBER_FAIL_CHORE,  /* the chore returned non-zero */
    MEMBER_FAIL_PUSHOUT,
    MEMBER_FAIL_DEVICE,     /* the device reported an error for work the member needed */
    MEMBER_FAIL_HOST_WRITE, /* check_host_writes: host memory changed without acquire */
};

typedef struct convoy__member {
    convoy__task_t *task;
    convoy__devcopy_t *copy[CONVOY_MAX_FLOWS]; /* NULL: a flow read in place (host) */
    void *fresh[CONVOY_MAX_FLOWS]; /* written flows whose copy is the only newest version:
                                      the task writes this buffer, which replaces the
                                      copy's memory only if it succeeds */
    int ncopies;                   /* copies acquired (flows reserved so far) */
    int in_need;                   /* the last stage-in submission of this ring it needs */
    int group;
    int fail; /* MEMBER_* */
    int fail_flow;
    int rc; /* the chore's return value */
    convoy_status_t fail_status;
    convoy__pev_t *wait[2 * CONVOY_MAX_FLOWS]; /* earlier rings' stage-ins and pushouts
                                                  of copies it uses */
    int nwait;
    int completed;
    uint32_t fresh_kept; /* flows whose fresh buffer a transfer may still write: kept out
                            of use for good (convoy__member_keep_fresh), never freed */
    uint16_t pushed;     /* flows whose written version left for home behind its launch */
    uint8_t pushed_again; /* a flush of one datum: it pushed its copy again (push_again) */
    uint32_t filled;     /* flows whose fresh buffer a copy on the device fills */
    int16_t fill_sub[CONVOY_MAX_FLOWS]; /* filled flows: the stage-in submission that
                                           carries the copy (read only where filled) */
} convoy__member_t;

/* Start member m for task t of nflows flows: its state zeroed, but of its per-flow arrays
 * only fresh[0..nflows) (copy[] and wait[] are read only up to ncopies and nwait).
 * Zeroing whole members (560 bytes, CONVOY_MAX_FLOWS of each array) was a sixth of the
 * progress thread's instructions in tiny_tasks (callgrind on sim). */
static inline void convoy__member_init(convoy__member_t *m, convoy__task_t *t, int nflows)
{
    m->task = t;
    m->ncopies = 0;
    m->in_need = -1;
    m->group = 0;
    m->fail = 0;
    m->fail_flow = 0;
    m->rc = 0;
    m->fail_status = CONVOY_SUCCESS;
    m->nwait = 0;
    m->completed = 0;
    m->fresh_kept = 0;
    m->pushed = 0;
    m->pushed_again = 0;
    m->filled = 0;
    for (int f = 0; f < nflows; f++)
        m->fresh[f] = NULL;
}

/* The flow of m before f with the same datum, or -1. */
static inline int convoy__member_same_datum(const convoy__member_t *m, int f)
{
    if (!m->task->aliased) /* the common case, known at insertion: no loop per flow */
        return -1;
    for (int e = 0; e < f; e++)
        if (m->task->data[e] == m->task->data[f])
            return e;
    return -1;
}

/* Does the task read (READ or RW), or write, the datum of its flow f through any flow? */
static inline int convoy__task_reads_datum(const convoy__task_t *t, int f)
{
    if (!t->aliased)
        return (t->cls->modes[f] & CONVOY_READ) != 0;
    for (int e = 0; e < t->cls->nflows; e++)
        if (t->data[e] == t->data[f] && (t->cls->modes[e] & CONVOY_READ))
            return 1;
    return 0;
}
static inline int convoy__task_writes_datum(const convoy__task_t *t, int f)
{
    if (!t->aliased)
        return (t->cls->modes[f] & CONVOY_WRITE) != 0;
    for (int e = 0; e < t->cls->nflows; e++)
        if (t->data[e] == t->data[f] && (t->cls->modes[e] & CONVOY_WRITE))
            return 1;
    return 0;
}

enum { GROUP_WAIT_IN = 0, GROUP_LAUNCHED, GROUP_DONE };

typedef struct convoy__group {
    int state;
    int split;            /* waits for a large stage-in: launched from the host when it lands */
    int first, count;     /* members order[first .. first + count) */
    convoy__pev_t *in_ev; /* the last stage-in submission it needs (NULL: none) */
    convoy__pev_t *in_small_ev; /* split groups: the last small stage-in of the ring */
    convoy__pev_t *exec_ev;     /* NULL once launched: the launch was proven over (synced) */
    convoy__pev_t *start_ev;    /* traced: recorded after the stream waits, until seen */
    void *launches;             /* launch records, alive until the ring is freed */
    int *run;                   /* members launched (nrun of them) */
    int nrun;                   /* members in run */
    int tasks_held;             /* not proven over: run's tasks referenced until ring free */
    int traced_steps;           /* lifecycle steps already in the trace (staged-in, executed) */
    convoy__pev_t **push_evs;   /* the submissions of its pushouts behind the launch */
    int npush;
    size_t push_bytes; /* theirs, counted in p->out_bytes until seen over or the ring goes */
} convoy__group_t;

/* What a ring carries: the program's tasks, or an internal transfer (core.h). */
enum { RING_TASKS = 0, RING_FLUSH, RING_FLUSH_ALL, RING_DROP };

typedef struct convoy__ring {
    int64_t id;
    int mcap;                  /* members m has room for */
    int kind;                  /* RING_* */
    const convoy_class_t *cls; /* every member's: a member's task is freed once it completes */
    int n;
    convoy__member_t *m;
    int *order; /* member indices grouped */
    convoy__group_t *groups;
    int ngroups, open_members;
    convoy__pev_t **in_subs; /* one per stage-in submission */
    char *in_split;          /* per stage-in submission: 1 when split (in in_subs' block;
                                NULL when that could not be allocated) */
    int nin;
    convoy__devcopy_t **held; /* flush-all: the copies it pushes, one user each */
    uint8_t *held_again;      /* beside held: pushed again by it (push_again) */
    int nheld;
    int own_failed; /* flush-all: a pushout it submitted itself failed (counted once) */
    char mem_msg[256], in_msg[256], launch_msg[256], out_msg[256]; /* first failures */
    struct convoy__pipe *pipe;
    int leak; /* a launch may still run with no way to tell when: keep what it uses */
    struct convoy__ring *next;
} convoy__ring_t;

/* A pinned block that carries one submission's pageable host sides (copies.c). */
typedef struct convoy__bounce {
    void *block;                 /* from convoy_host_alloc */
    size_t bytes;                /* its size, counted in the pipe's bounce_bytes */
    convoy__pev_t *ev;           /* stage-in: one reference, until the copies read the block */
    int leak;                    /* its copies may still run, unknown: kept until destroy */
    struct convoy__bounce *next; /* the pipe's stage-in blocks in flight */
} convoy__bounce_t;

/* Copies home that one submission carries, until its event is seen complete. */
typedef struct convoy__outbatch {
    convoy__pev_t *ev;        /* one reference */
    convoy__bounce_t *bounce; /* the block the copies land in first, freed at retire */
    size_t bytes;             /* of its copies, counted in p->out_bytes until it retires */
    int n;
    struct convoy__outbatch *next;
    convoy__devcopy_t *copies[];
} convoy__outbatch_t;

/* A pushout home written behind (stage_issue's stage_kind): traced as a pushout
 * (CONVOY__STAGE_OUT), counted apart in the statistics. */
#define CONVOY__STAGE_BEHIND 3

/* The parts of the progress loop that progress_profile times (pipeline.c). */
enum {
    CONVOY__PROF_OUTBOUND, /* polling pushouts home */
    CONVOY__PROF_RINGS,    /* polling rings: stages, launches, completions */
    CONVOY__PROF_EAGER,    /* pushing final versions home (a wait is pending, write-behind) */
    CONVOY__PROF_POP,      /* taking tasks from the scheduler */
    CONVOY__PROF_START,    /* starting rings: copies planned and submitted, launches */
    CONVOY__PROF_IDLE,     /* sleeping or waiting on the device */
    CONVOY__PROF_COUNT
};
/* Parts within those, timed apart (inclusive): where a ring's host time goes. */
enum {
    CONVOY__SUB_QUERY,    /* event queries (the device's event_query op) */
    CONVOY__SUB_RESERVE,  /* members' copies taken (allocated), fresh buffers */
    CONVOY__SUB_STAGE,    /* a ring's stage-in: copies taken, planned and issued */
    CONVOY__SUB_ISSUE,    /* of which: the copy submissions */
    CONVOY__SUB_LAUNCH,   /* launches of groups */
    CONVOY__SUB_FINISH,   /* members finished: versions set, copies released, completion */
    CONVOY__SUB_COMPLETE, /* of which: the core's task completion */
    CONVOY__SUB_COUNT
};
/* Run stmt, timing it into p->sub[part] when progress_profile is on. */
#define CONVOY__PROF_SUB(p, part, stmt)                                                            \
    do {                                                                                           \
        uint64_t t_sub_ = (p)->profile ? convoy__now_ns() : 0;                                     \
        stmt;                                                                                      \
        if ((p)->profile)                                                                          \
            (p)->sub[part] += convoy__now_ns() - t_sub_;                                           \
    } while (0)

/* What getrusage and the thread's clock say of the progress thread (progress_profile). */
typedef struct convoy__thread_usage {
    uint64_t cpu_ns;
    long nvcsw, nivcsw; /* context switches: voluntary (blocked), involuntary (preempted) */
    long faults;        /* page faults, minor and major */
} convoy__thread_usage_t;

/* One stage's copies (copies.c). */
typedef struct convoy__stage {
    convoy__copy_t *copies;
    int n;
    int cap; /* room in each array below: copies (tags) or submissions */
    convoy__plan_t plan;
    int *sub_of;  /* by tag: the submission that carries the copy */
    char *failed; /* by tag: 1 the copy could not be enqueued; 2 it may still run, unknown */
    convoy__pev_t **subs;
    convoy__bounce_t **bounce; /* pushouts, by submission: its block (NULL: none), which
                                  the caller owns after convoy__stage_issue */
    void **bounced;            /* pushouts, by tag: where in a block the copy lands (NULL:
                                  straight into its host memory) */
    char msg[256];             /* the first failure */
} convoy__stage_t;

typedef struct convoy__pipe {
    convoy__device_t *dev;
    convoy_context_t *ctx;
    int queue;
    pthread_t thread;
    int started;
    atomic_int stop;
    convoy__stream_t *in, *in_large, *out, *out_large, *exec[CONVOY__NEXEC];
    unsigned next_exec; /* unsigned: wraps without undefined behaviour */
    convoy__devmem_t mem;
    char ev_fail_msg[256];     /* the last failure an event reported (work failed as it ran) */
    convoy__done_batch_t done; /* members completed, flushed after each ring's progress */
    int done_load;             /* of them, ring members still counted in dev->load */
    convoy__ring_t *rings;     /* in flight, oldest first */
    convoy__ring_t *kept;      /* rings a launch may still use: freed once the streams are gone */
    int nrings;
    int64_t max_inflight;           /* tasks */
    convoy__task_t *deferred;       /* waiting for device memory, oldest first */
    convoy__outbatch_t *outbound;   /* pushouts home in flight, by submission */
    size_t out_bytes;               /* their bytes */
    size_t write_behind;            /* write_behind: out_bytes up to which final versions go home */
    int64_t fault_drop_rings;       /* fault_drop_rings: drop rings still to fail their state */
    size_t in_place_max; /* in_place_max_bytes where chores here can read convoy_host_alloc
                            memory in place (their component's slabs), else 0 */
    convoy__devcopy_t **eager;      /* final versions to push home now (a wait is pending, or */
    int neager, eager_cap;          /* write-behind), each held with one user */
    size_t eager_bytes;             /* their bytes */
    int eager_demand;               /* one of them was added for a pending wait */
    unsigned behind_epoch;          /* 1 + ctx->wait_epoch that the counts below are of */
    int behind_sent, behind_wasted; /* copies written behind; of them, overwritten here in
                                       the same epoch before anything needed them home */
    unsigned behind_off;            /* 1 + the epoch in which write-behind stopped: wasteful */
    convoy__pev_t *free_pevs;
    int method;                /* copy_method: -1 auto */
    int bounce_mode;           /* pageable_bounce, once bounce_ready (copies.c) */
    int bounce_ready;          /* the parameters were read (on first use) */
    size_t bounce_max;         /* pageable_bounce_max: auto bounces copies up to this */
    size_t bounce_limit;       /* pageable_bounce_limit: bytes of blocks held at once */
    size_t bounce_bytes;       /* bytes of blocks held now */
    convoy__bounce_t *bounces; /* stage-in blocks until their copies have landed */
    convoy__gang_t *gang;      /* pageable_bounce_threads helpers (NULL: none) */
    uint64_t gang_prime_ns;    /* how long a ring's start keeps them polling */
    int bounced;               /* the gang had a job since the last ring's start */
    convoy__span_t *spans;     /* one job's memcpys, reused */
    int spans_cap;
    uint64_t poll_ns;
    uint64_t spin_ns;      /* progress_spin_us */
    uint64_t idle_spin_ns; /* progress_idle_us */
    uint64_t idle_since;   /* when nothing last moved with work in flight (0: it moved) */
    int pop_empty;        /* the last pop found nothing: skip pops until ... */
    uint64_t empty_woken; /* ... the queue's wake-up count moves from this, or ... */
    uint64_t empty_until; /* ... the ring deadline it reported passes, or ... */
    int64_t empty_load;   /* ... the device's load changes from this (room, idleness) */
    int profile;          /* progress_profile: prof[] is kept */
    uint64_t prof[CONVOY__PROF_COUNT]; /* ns spent in each part of the progress loop */
    uint64_t sub[CONVOY__SUB_COUNT];   /* ns in parts within those */
    uint64_t prof_passes, prof_rings;  /* loop passes, rings of the program's tasks started */
    uint64_t prof_transfer_rings, prof_transfers; /* rings of internal transfers, members */
    _Atomic uint64_t drop_rings;       /* rings of drops started (convoy__pipeline_drop_rings) */
    convoy__thread_usage_t prof_usage; /* the thread's CPU time, switches, faults then */
    convoy__task_t *popped[CONVOY__RING_CAP];
    /* Member arrays of finished rings, for the next rings: one of 256 members is 140 KiB,
     * which malloc takes from and gives back to the kernel each time. */
    struct {
        convoy__member_t *m;
        int cap;
    } spare_members[CONVOY__SPARE_MEMBERS];
    /* A stage's arrays, for the next stage: a ring's stage-in, a group's push behind and
     * each pushout would otherwise allocate seven and zero four of them for their
     * largest size (in tiny_tasks ~130 instructions of memset a task, bench/host_profile). */
    convoy__stage_t spare_stage;
} convoy__pipe_t;

/* Events (pipeline.c). */
convoy__pev_t *convoy__pev_record(convoy__pipe_t *p, convoy__stream_t *stream);
/* Asks the device (or a quiet event's later event): for an e neither NULL nor done. */
int convoy__pev_poll_ask(convoy__pipe_t *p, convoy__pev_t *e);
/* 1 when the work before e is over (NULL: nothing to wait for). Inline for the events
 * already seen over, which are most: a ring's members poll each flow's arrival, and 256
 * members share a couple of submissions' events (tiny_tasks: 4-5 polls a task). */
static inline int convoy__pev_poll(convoy__pipe_t *p, convoy__pev_t *e)
{
    return e == NULL || e->done || convoy__pev_poll_ask(p, e);
}
void convoy__pev_put(convoy__pipe_t *p, convoy__pev_t *e);
/* Record an event after the work on stream, retrying a passing failure. NULL when the
 * device keeps refusing: the caller then proves the work over with convoy__sync. */
convoy__pev_t *convoy__record_event(convoy__pipe_t *p, convoy__stream_t *stream);
/* As convoy__record_event, quiet where it may be (the device records quiet events, its
 * errors are sticky, and no trace reads the event's own completion time), a record as
 * usual else. The caller names the later event that proves it with convoy__pev_imply. */
convoy__pev_t *convoy__record_event_quiet(convoy__pipe_t *p, convoy__stream_t *stream);
/* later, recorded after quiet e on the same stream (or on a stream that waited for e),
 * proves e over when it completes without error (errors_sticky): e is polled through it
 * from now on. Until then a poll of e finds it pending without asking the device, so
 * whoever records e quiet names its later event before anything waits for e; NULL for
 * later, when none could be recorded, has e asked itself. */
void convoy__pev_imply(convoy__pev_t *e, convoy__pev_t *later);
/* Quiet e was waited for by a stream whose later event completed without error
 * (errors_sticky): e is over, whatever the event it was implied by still does. Other
 * events are left to their polls: a device whose errors are not sticky reports a failure
 * only at its own stream's next event. */
void convoy__pev_proven(convoy__pipe_t *p, convoy__pev_t *e);
/* e is asked of the device itself from now on, not through a later event (a host wait,
 * which should end when e does, not when the event implying it does). */
void convoy__pev_ask_itself(convoy__pipe_t *p, convoy__pev_t *e);
/* Wait until everything enqueued on stream has run; CONVOY_SUCCESS when it all did
 * without error. The last resort when no event can be recorded: nothing enqueued is
 * ever abandoned in flight. */
convoy_status_t convoy__sync(convoy__pipe_t *p, convoy__stream_t *stream);
int convoy__stream_tid(convoy__pipe_t *p, convoy__stream_t *s);
/* Later work on stream waits for e (nothing when it is done); when the device cannot
 * queue the wait, the host waits for e instead. */
void convoy__stream_wait(convoy__pipe_t *p, convoy__stream_t *stream, convoy__pev_t *e);

/* A stage with room for cap copies, from the pipe's spare arrays when they are large
 * enough; 0, or -1 when out of host memory. Its arrays are cleared by convoy__stage_issue,
 * for the copies and submissions it has. Give it back with convoy__stage_put. */
int convoy__stage_get(convoy__pipe_t *p, convoy__stage_t *s, int cap);
void convoy__stage_put(convoy__pipe_t *p, convoy__stage_t *s);
void convoy__stage_free(convoy__stage_t *s);
/* Plan and issue the stage's copies on small and large streams; see copies.c. */
void convoy__stage_issue(convoy__pipe_t *p, int64_t ring_id, convoy__stage_t *s, int stage_kind,
                         convoy__stream_t *small, convoy__stream_t *large);

/* The pinned bounce (copies.c). Free a block, or keep it for good when its copies may
 * still run (leak); NULL is ignored. */
void convoy__bounce_put(convoy__pipe_t *p, convoy__bounce_t *b, int leak);
/* At destroy, nothing running any more: free every block held, stop the helpers. */
void convoy__bounce_drop(convoy__pipe_t *p);
/* Room for n spans in p->spans; 0, or -1 when out of host memory. */
int convoy__bounce_spans(convoy__pipe_t *p, int n);
/* A ring of tasks starts: when the gang had a job since the last one, this one likely
 * gives it one too, once its memory is reserved, so the memcpy helpers are woken now to
 * be polling by then. */
void convoy__bounce_expect(convoy__pipe_t *p);
/* pageable_bounce_threads -1: half of cores shared among naccel accelerators, less one
 * (the progress thread copies too), at most 7 (8 copiers: 45 GB/s on the H200 host). */
int convoy__bounce_auto_threads(int cores, int naccel);
/* Jobs of fewer bytes are copied by the progress thread alone: waking helpers costs
 * microseconds, which 256 KiB of memcpy (tens of us) hides. */
#define CONVOY__BOUNCE_GANG_MIN ((size_t)256 << 10)

/* Rings (ring.c; progress in ring_done.c). */
/* A ring of kind for tasks, no member set up; NULL when out of host memory (the tasks
 * then failed, and left the device's load). */
convoy__ring_t *convoy__ring_new(convoy__pipe_t *p, convoy__task_t **tasks, int n, int kind);
void convoy__ring_free(convoy__pipe_t *p, convoy__ring_t *r);
/* Free the member arrays kept for reuse (at the pipeline's end). */
void convoy__ring_spares_free(convoy__pipe_t *p);
/* Start a ring of tasks taken from the scheduler (any kind). */
void convoy__ring_start(convoy__pipe_t *p, convoy__task_t **tasks, int n);
/* Advance a ring; returns 1 when something moved. Frees the ring when all is done and
 * returns 1 with *finished_p set. */
int convoy__ring_progress(convoy__pipe_t *p, convoy__ring_t *r, int *finished_p);
/* Append a started ring to the pipeline's list. */
void convoy__ring_add(convoy__pipe_t *p, convoy__ring_t *r);
void convoy__member_fail(convoy__member_t *m, int why, int flow);
/* A transfer may still write m's fresh buffer of flow f: keep it out of use for good
 * (with every flow of m that shares it); m's copy of that datum is untouched by it.
 * Nothing when f has none. */
void convoy__member_keep_fresh(convoy__pipe_t *p, convoy__member_t *m, int f);

/* The trace's slice of one step of this progress thread (what: a static name), from t0
 * to now, on its own lane: where its time goes, one slice per step rather than per
 * task. Call only when tracing. */
void convoy__trace_step(convoy__pipe_t *p, const char *what, uint64_t t0, int64_t ring, int count);

/* Launches (launch.c). */
void convoy__launch_group(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g);
/* Traced launches: once the waits before the launch are over, its trace slice starts
 * there. Call before polling the launch's own event. */
void convoy__launch_started(convoy__pipe_t *p, convoy__group_t *g);

/* Pushouts behind a launch (push_behind.c). After g's launch (results known at once:
 * launch_inline), plan marks the versions its members write that a pending wait or a
 * successor with no chore here will need there (m->pushed) and returns how many; after
 * the launch's event is recorded, push_behind sends those n home on stream behind it. */
int convoy__push_behind_plan(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g);
void convoy__push_behind(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g,
                         convoy__stream_t *stream, int n);
/* Whether g's pushouts are over (1), with *failed_p set when one failed. */
int convoy__push_behind_over(convoy__pipe_t *p, convoy__group_t *g, int *failed_p);
/* g's pushouts behind its launch leave p->out_bytes (over, or their ring goes). */
void convoy__push_behind_uncount(convoy__pipe_t *p, convoy__group_t *g);

/* Copies home (pushout.c). */
/* Start a ring of internal transfer tasks (RING_FLUSH, RING_FLUSH_ALL, RING_DROP). */
void convoy__transfer_start(convoy__pipe_t *p, convoy__task_t **tasks, int n, int kind);
int convoy__transfer_progress(convoy__pipe_t *p, convoy__ring_t *r);
/* Push dirty unused copies home so that `want` bytes can be freed; returns how many
 * pushouts it started. */
int convoy__evict_dirty(convoy__pipe_t *p, size_t want);
/* Retire the pushouts home that have landed; returns 1 when one did. */
int convoy__outbound_poll(convoy__pipe_t *p);
/* Hold c (one user) to push it home with the others of this progress pass: its writer
 * completed while a convoy_wait is pending (demand 1) or within write_behind's window
 * (demand 0), and no later writer exists. 0 when there is no room to remember it (it
 * then waits for the wait's own flush). */
int convoy__eager_add(convoy__pipe_t *p, convoy__devcopy_t *c, int demand);
/* Push the held copies home in one plan and let them go. */
void convoy__push_eager(convoy__pipe_t *p);
/* Start counting write-behind's waste afresh when a convoy_wait has begun since. */
void convoy__behind_epoch(convoy__pipe_t *p);
/* Let go of a copy eager_add held without pushing it. */
void convoy__eager_release(convoy__pipe_t *p, convoy__devcopy_t *c);
/* At destroy: nothing runs any more; settle what was in flight. */
void convoy__outbound_drop(convoy__pipe_t *p);

#endif /* CONVOY_PIPELINE_IMPL_H */
