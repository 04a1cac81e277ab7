/*
 * The core objects: context, task classes, data handles and tasks. Internal to convoy.
 *
 * Threads: the program's threads insert tasks and wait; CPU workers run CPU chores;
 * each accelerator has one progress thread (device/pipeline.c). A datum's dependency
 * state (last writer, readers) is guarded by its own dep_lock; an insertion takes the
 * locks of its task's data in address order (so two insertions sharing data are ordered
 * alike on all of them) while it holds ctx->insert_lock shared. A convoy_wait takes
 * insert_lock exclusively for its cut, so that no insertion straddles it. Insertions on
 * disjoint data from several threads share no lock (one lock for all of them cost 4
 * inserting threads 11 us per task). A task's successor list has its own small lock.
 */
#ifndef CONVOY_CORE_H
#define CONVOY_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "convoy.h"
#include "device/device.h"
#include "sched/sched.h"
#include "src/param.h"
#include "src/pool.h"
#include "src/trace.h"
#include "src/util.h"

#define CONVOY__MAX_ACCEL 16
#define CONVOY__TASK_INLINE_ARGS 32 /* argument bytes stored inside the task */
#define CONVOY__TASK_INLINE_SUCC 3  /* successors stored inside the task */
#define CONVOY__WAIT_GENS 64        /* generations of the program's tasks in flight at once */

/* What an internal class does (0: a class of the program's). Internal tasks carry the
 * transfers and waits that coherence needs through the same queues and rings as the
 * program's tasks; their ids and counts are kept apart from the program's. */
enum {
    CONVOY__CLS_USER = 0,
    CONVOY__CLS_FLUSH,     /* on accelerator i: push its dirty copy of the one flow home */
    CONVOY__CLS_FLUSH_ALL, /* on accelerator i: push every dirty copy home (convoy_wait) */
    CONVOY__CLS_DROP,      /* on accelerator i: free its copy of the one flow (data_free) */
    CONVOY__CLS_HOST,      /* on the CPUs: nothing; the host side of acquire(READ) */
    CONVOY__CLS_HOST_RW,   /* the same for acquire(WRITE or RW): the host writes it */
    CONVOY__CLS_COUNT
};

struct convoy_class {
    convoy_context_t *ctx;
    char *name;
    int nflows;
    unsigned flags;
    int id;       /* index in ctx->classes */
    int internal; /* CONVOY__CLS_* */
    convoy_access_t modes[CONVOY_MAX_FLOWS];
    convoy_chore_fn chore[CONVOY_DEVICE_KIND_COUNT];
    convoy_batch_chore_fn batch_chore[CONVOY_DEVICE_KIND_COUNT];
};

struct convoy__devcopy; /* a datum's copy on one accelerator: device/devmem.c */

/* An internal bit of convoy_data.flags: convoy_data_free has run. The datum's device
 * copies hold nothing anyone will read (the newest version came home, or it was scratch):
 * never pushed home, free to evict, whatever the coherence word says. */
#define CONVOY__DATA_FREED (1u << 31)

/* Readers a datum lists without an allocation of their own: most data are read by a few
 * tasks between writes, and a list allocated per datum was a quarter of insertion's
 * instructions in tiny_tasks (callgrind, 3 fresh inputs a task). */
#define CONVOY__DATA_INLINE_READERS 4

struct convoy_data {
    /* What a progress thread reads or writes of each flow it runs, in the first 64 bytes
     * (at most two cache lines, however malloc aligns the handle), with its device copy's
     * slot: the reserve loop asks for these lines ahead (convoy__data_prefetch). The
     * dependency state that every insertion writes sits lines away: with refs on its line,
     * each copy a progress thread made pulled that line from the inserting core. */
    _Atomic uint64_t coh; /* the newest version and where it lives (coherence.h) */
    convoy_context_t *ctx;
    void *host;
    size_t bytes;
    atomic_uint flags;        /* CONVOY_DATA_* */
    uint8_t host_pinned;      /* detected once, at creation */
    uint8_t host_in_place;    /* and: convoy_host_alloc memory that the chores of
                                 ctx->host_mem's component read at its host address
                                 (CONVOY_CLASS_INPUTS_IN_PLACE) */
    atomic_int refs;          /* the user's, each pending drop's, and a device copy's that
                                 outlived its drop (device/devmem.c, data_ref) */
    atomic_int home_hint;     /* 1 + the accelerator that last wrote or staged it */
    atomic_int behind_unread; /* its version home came by write-behind and nothing has read
                                 it there yet (an acquire, a CPU task, another device) */
    struct convoy__devcopy *dev[CONVOY__MAX_ACCEL]; /* owned by accelerator i's thread */
    /* Touched on failures, write-behind, check_host_writes and the data list only. */
    atomic_int failed_writes; /* writers that failed since the last acquire */
    atomic_int pushing;       /* pushouts home of it in flight, or held to start (write-behind):
                                 convoy_data_free returns only once none is left */
    uint64_t id;
    _Atomic uint64_t host_hash;         /* check_host_writes: hash of the host bytes ... */
    _Atomic uint64_t host_hash_version; /* ... of this version + 1 (0: none noted) */
    struct convoy_data *prev, *next;    /* ctx->data_list, under data_lock */
    /* Dependency state, under dep_lock (and insert_lock shared or exclusive). */
    convoy__spin_t dep_lock;
    convoy__task_t *last_writer;     /* referenced (refs) while stored here */
    _Atomic uint64_t last_writer_id; /* 1 + the id of the last writer inserted, 0: none */
    convoy__task_t **readers;        /* readers since last_writer, referenced: readers_inline
                                        until more than CONVOY__DATA_INLINE_READERS */
    int nreaders, readers_cap;
    convoy__task_t *readers_inline[CONVOY__DATA_INLINE_READERS];
};

/* Ask ahead for the lines of d that accelerator i's progress thread touches: its first
 * 64 bytes (one line or two) and its copy's slot. A hint: it never faults. */
static inline void convoy__data_prefetch(convoy_data_t *d, int i)
{
    convoy__prefetch_w(d, CONVOY__LINE);
    convoy__prefetch_w(&d->dev[i], 1);
}

/* Task states. */
enum {
    CONVOY__TASK_PENDING = 0, /* waiting for predecessors */
    CONVOY__TASK_READY,       /* handed to the scheduler */
    CONVOY__TASK_RUNNING,     /* taken by a worker or an accelerator */
    CONVOY__TASK_DONE,        /* completed, failed or cancelled: successors released */
};

/* How a task's chore call went (task->ran), for its failure message. */
enum {
    CONVOY__RAN_BATCH = 1,    /* a batch chore ran it */
    CONVOY__RAN_NO_CHORE = 2, /* its class had no chore left for the device */
};

/* Task outcome. */
enum {
    CONVOY__OK = 0,
    CONVOY__FAILED = 1,
    CONVOY__CANCELLED = 2,
};

struct convoy__task {
    convoy_class_t *cls;
    uint64_t id;
    atomic_int pending; /* predecessors not done, +1 while being inserted */
    atomic_int refs;    /* one for the runtime until done, one per datum that stores it
                           (taken ahead while an insertion wires it: src/insert.c) */
    convoy__spin_t lock; /* guards state and the successor list */
    atomic_int cancel;  /* a predecessor failed or was cancelled */
    uint8_t state;
    uint8_t outcome;
    uint8_t fetch_rounds; /* times it waited for flushes before it could be queued */
    uint8_t ran;          /* CONVOY__RAN_*: how its chore call went, for the message */
    int16_t queue;        /* 0: CPU workers, 1 + i: accelerator i (set at creation for
                             internal tasks, by the scheduler's placement otherwise) */
    int16_t where;        /* -1: the scheduler places it; else the queue it is pinned to */
    int64_t ring_id;      /* the ring it travelled in, -1 before */
    uint64_t gen;         /* ctx->gen at insertion (its parent's when a chore inserted it) */
    int fail_code;        /* set by convoy_task_fail during its chore (0: not called) */
    uint8_t aliased;      /* two of its flows name one datum (set at creation) */
    uint16_t home_flows;  /* flows whose written version its device also brought home (a
                             pushout behind its launch): committed home as well */
    convoy_done_fn done;  /* the program's completion callback, or NULL */
    void *done_arg;
    uint64_t fail_epoch;  /* ctx->fail_epoch when it failed or was cancelled */
    convoy__task_t *next; /* queue link, owned by the queue's holder */
    convoy__pool_t *pool; /* where the record goes back (ctx->task_pools) */
    int nsucc, succ_cap;
    convoy__task_t **succ; /* succ_inline or a heap array */
    convoy__task_t *succ_inline[CONVOY__TASK_INLINE_SUCC];
    void *args; /* inline_args or a heap copy */
    size_t args_size;
    char *fetch_msg;         /* a flush it waited for failed: why (it fails with this) */
    uint64_t t_insert_ns;    /* for the trace (0 when not tracing) */
    uint64_t t_ready_ns;     /* when it became ready: ring collection closes on the oldest */
    convoy_task_view_t view; /* what chores see; flows/flow_bytes point below */
    unsigned char inline_args[CONVOY__TASK_INLINE_ARGS];
    /* Followed by: convoy_data_t *data[nflows]; void *ptr[nflows]; size_t bytes[nflows]. */
    convoy_data_t *data[];
};

/* Bytes of a task record of n flows: the task, then data[n], ptr[n] and bytes[n]. */
#define CONVOY__TASK_SIZE(n)                                                                       \
    (sizeof(struct convoy__task) +                                                                 \
     (size_t)(n) * (sizeof(convoy_data_t *) + sizeof(void *) + sizeof(size_t)))
/* Task records come from pools by whole lines (src/pool.h): one pool per line count. */
#define CONVOY__TASK_POOLS ((CONVOY__TASK_SIZE(CONVOY_MAX_FLOWS) + CONVOY__LINE - 1) / CONVOY__LINE)

static inline void **convoy__task_ptrs(convoy__task_t *t)
{
    return (void **)&t->data[t->cls->nflows];
}
static inline size_t *convoy__task_bytes(convoy__task_t *t)
{
    return (size_t *)&t->data[2 * t->cls->nflows];
}

/* Per-queue wake-up: the consumer sleeps here; the core signals after each push. On lines
 * of its own (convoy__calloc_lines): the CPU queue's poller reads `pushes` in a loop while
 * a progress thread locks its own queue's wait to sleep. */
typedef struct convoy__queue_wait {
    _Alignas(CONVOY__LINE) pthread_mutex_t lock;
    pthread_cond_t cond;
    _Atomic uint64_t pushes;   /* bumped by each push that wakes (the scheduler says which) */
    atomic_int sleepers;       /* consumers in (or entering) the wait */
    atomic_int spinners;       /* CPU workers polling `pushes`, or woken to (queue 0 only) */
    atomic_int watches;        /* wake-ups on their way, each handing a sleeper the poller's place:
                                  written under lock, read without it by workers that would poll */
    _Atomic uint64_t signals;  /* wake-ups sent by pushes (not by workers handing over) */
    _Atomic uint64_t handoffs; /* wake-ups sent by workers handing the watch over */
    int closed;                /* under lock: its consumers stop; no sleep waits any more */
} convoy__queue_wait_t;

/* The distributed layer (dist/, doc/dist.md) above the core: NULL while it is off. The
 * core calls it at three points and knows nothing else of it. */
typedef struct convoy__dist_hooks {
    /* Before a program's insertion is tracked: add what the task needs from other ranks
     * (internal tasks, tracked first) and say whether it runs here (*here_p 1) or on
     * another rank (0: the core does nothing more with it). An error is returned as is. */
    convoy_status_t (*route)(convoy_context_t *ctx, convoy_class_t *cls,
                             convoy_data_t *const *flows, const convoy_task_opts_t *opts,
                             int *here_p);
    void (*stats)(const convoy_context_t *ctx, convoy_stats_t *s); /* adds its counts */
    void (*fini)(convoy_context_t *ctx); /* first thing of convoy_fini: stop, free */
} convoy__dist_hooks_t;

typedef struct convoy__stats_atomic {
    /* tasks_inserted is ctx->next_task_id: every insertion that gets that far takes an id,
     * and one counter fewer is one line fewer that inserting threads pass between them. */
    _Alignas(CONVOY__LINE) _Atomic uint64_t tasks_completed, tasks_failed, tasks_cancelled;
    _Atomic uint64_t rings, launches;
    _Atomic uint64_t h2d_submissions, h2d_copies, h2d_bytes;
    _Atomic uint64_t d2h_submissions, d2h_copies, d2h_bytes;
    _Atomic uint64_t split_copies, retried_copies, evictions;
    _Atomic uint64_t d2d_copies, d2d_bytes, flush_copies;
    _Atomic uint64_t eviction_submissions, eviction_copies, transfers_failed;
    _Atomic uint64_t write_behind_copies;
    _Atomic uint64_t in_place_reads, in_place_bytes;
} convoy__stats_atomic_t;

struct convoy_context {
    convoy__params_t params;

    const convoy__sched_component_t *sched;
    void *sched_state;
    int nqueues; /* 1 + naccel */
    convoy__queue_wait_t *qwait;

    int naccel;
    convoy__device_t *accel[CONVOY__MAX_ACCEL];
    const convoy__host_mem_ops_t *host_mem; /* pinned memory services, or NULL */
    int use_cpu_only;                       /* devices=host */

    void *topology; /* hwloc_topology_t */
    int nworkers;
    pthread_t *workers;
    atomic_int stopping;
    int busy_poll; /* spin_busy_us > spin_us: a worker polls while accelerators are busy */

    /* What each insertion writes: the inserting threads' line(s). */
    _Alignas(CONVOY__LINE) pthread_rwlock_t insert_lock; /* shared by insertions, exclusive
                                                            for a wait's cut */
    _Atomic uint64_t next_task_id;
    /* Written by the accelerators' threads (and internal tasks' creators). */
    _Alignas(CONVOY__LINE) _Atomic uint64_t next_internal_id; /* internal tasks count apart
                                                                  from the program's */
    convoy_class_t
        *internal[CONVOY__CLS_COUNT]; /* by CONVOY__CLS_*: the classes of internal tasks */
    _Atomic int64_t ndirty;           /* data dirty on an accelerator (coherence.c) */
    atomic_int waiting;               /* threads in convoy_wait: a flush home will follow */
    atomic_uint wait_epoch;           /* convoy_wait calls begun: write-behind's phases */
    atomic_int device_writes;         /* a device task wrote data since the last wait */
    int check_host_writes;            /* the parameter, read once */
    int cpu_write_backup;             /* the parameter, read once */
    uint64_t next_data_id;

    /* Written by every insertion and every completion. */
    _Alignas(CONVOY__LINE) _Atomic int64_t inflight; /* inserted and not yet done */
    /* convoy_wait's cut: each wait starts a generation; a program task counts in the
     * slot of the generation it was inserted in, and a wait waits for the slots of its
     * generation and older ones only (src/wait.c). */
    uint64_t gen;                                    /* under insert_lock and done_lock */
    _Atomic int64_t gen_count[CONVOY__WAIT_GENS];    /* tasks not done, by gen % the size */
    _Atomic uint64_t gen_of_slot[CONVOY__WAIT_GENS]; /* the generation a slot counts now */
    atomic_int cut_waiters; /* waits sleeping on done_cond for a slot to empty */
    _Alignas(CONVOY__LINE) pthread_mutex_t done_lock;
    pthread_cond_t done_cond;
    atomic_int done_waiters; /* threads sleeping on done_cond */

    pthread_mutex_t error_lock;
    char error[1024];
    char first_failure[1024];    /* the first task failure since the last wait */
    char transfer_failure[1024]; /* the first failed transfer home since the last wait */
    uint64_t failures_since_wait, cancels_since_wait;
    _Atomic uint64_t fail_epoch; /* bumped by each convoy_wait: failures it reported stop
                                    cancelling tasks inserted after it */

    pthread_mutex_t data_lock;
    convoy_data_t *data_list;
    convoy_data_t *undropped; /* freed data an accelerator got no drop for (no memory): their
                                 copies there keep them until convoy_fini (next links them) */
    void *data_ranges; /* tsearch tree of the live data by host range (src/data.c) */
    convoy_class_t **classes;
    int nclasses, classes_cap;
    struct convoy__hostmem *hostmem; /* plain allocations tracked for fini */

    /* Data handles and task records (src/pool.h); task_pools[k] holds the records of
     * k + 1 lines. */
    convoy__pool_t data_pool;
    convoy__pool_t task_pools[CONVOY__TASK_POOLS];

    _Atomic int64_t next_ring_id;
    convoy__stats_atomic_t stats;
    convoy__trace_t *trace;                 /* NULL when tracing is off */
    const convoy__dist_hooks_t *dist_hooks; /* the distributed layer, NULL when off */
    void *dist;                             /* its state (dist/dist.h) */
};

/* Task life cycle (src/task.c). */
/* The task has run: record its outcome (CONVOY__OK/FAILED), release its successors,
 * drop its references. msg describes a failure (may be NULL). */
void convoy__task_complete(convoy__task_t *task, int outcome, const char *msg);
/*
 * Completions counted together by a thread that completes many tasks in a row (an
 * accelerator's thread, a ring's members): the counters that every insertion writes as
 * well (inflight, the wait generations' counts, the completed count) are taken once per
 * flush rather than once per task, so the line stops passing between the inserting
 * thread and this one at every task. The caller flushes before it can sleep or wait;
 * until then convoy_wait counts these tasks as in flight (they are done, and it wakes at
 * the flush), while a wait on a datum's users (acquire, free) sees each done at once.
 */
#define CONVOY__DONE_BATCH_SLOTS 4
#define CONVOY__DONE_STAMP_USES 16
typedef struct convoy__done_batch {
    convoy_context_t *ctx;
    int64_t inflight, completed; /* tasks done since the flush; of them, program tasks
                                    that succeeded */
    int nslots;
    int slot[CONVOY__DONE_BATCH_SLOTS];      /* wait-generation slots of program tasks ... */
    int64_t count[CONVOY__DONE_BATCH_SLOTS]; /* ... and how many done in each */
    /* Traced: when nonzero, the time the completions are stamped with, read again after
     * every CONVOY__DONE_STAMP_USES of them (the completer sets it, say as a group of a
     * ring is seen over, and clears it after: a clock read costs 47 ns on the H200 host) */
    uint64_t stamp_ns;
    int stamp_uses;
    /* Traced: the lifecycle events of completions that differ only in their task, kept
     * to be recorded at once (convoy__trace_emit_tasks) at the flush, or when a
     * completion's differs or the ids are full: one record per stamp, not per task. */
    int ntraced;
    convoy__trace_event_t traced;
    uint64_t traced_ids[CONVOY__DONE_STAMP_USES];
} convoy__done_batch_t;
/* convoy__task_complete, counted in b (NULL: at once). */
void convoy__task_complete_in(convoy__task_t *task, int outcome, const char *msg,
                              convoy__done_batch_t *b);
/* Take b's tasks off the shared counters, waking the waits they end. */
void convoy__done_flush(convoy__done_batch_t *b);
/* Does a task inserted so far depend on t (read or write what it wrote, or write what it
 * read)? For a running task: its successors are released only at its completion. */
int convoy__task_has_successors(convoy__task_t *t);
/* Does a successor of t inserted so far read d with no chore for devices of kind (so
 * that it will need d's version at home)? */
int convoy__task_needs_home(convoy__task_t *t, const convoy_data_t *d, convoy_device_kind_t kind);
/* Release a successor whose predecessor is done. */
void convoy__task_make_ready(convoy_context_t *ctx, convoy__task_t *task);
void convoy__task_unref(convoy__task_t *task);
/* A task record for nflows flows from ctx's pools, its header zeroed and its pool set;
 * NULL without memory. Its last convoy__task_unref gives it back. */
convoy__task_t *convoy__task_record_new(convoy_context_t *ctx, int nflows);
/* Another reference: the task stays in memory until it is dropped (convoy__task_unref). */
static inline void convoy__task_ref(convoy__task_t *task)
{
    atomic_fetch_add_explicit(&task->refs, 1, memory_order_relaxed);
}
const char *convoy__task_name(const convoy__task_t *task, char *buf, size_t len);
/* A ring took the task: it runs now (CPU worker or accelerator). */
void convoy__task_set_running(convoy__task_t *task);
/*
 * An internal task of class kind (CONVOY__CLS_*) on queue, with flows (its class's
 * nflows of them; NULL when it has none) and args copied, not yet released: the caller
 * adds it to the graph (convoy__task_track) or gives it successors, then calls
 * convoy__task_release. NULL when out of memory (recorded on ctx).
 */
convoy__task_t *convoy__task_new_internal(convoy_context_t *ctx, int kind, int queue,
                                          convoy_data_t *const *flows, const void *args,
                                          size_t args_size);
/* Wire an internal task into the graph as if inserted now (under the insert lock). */
convoy_status_t convoy__task_track(convoy_context_t *ctx, convoy__task_t *task);
/* One datum's dependency state, for a caller that holds ctx->insert_lock shared. */
void convoy__data_dep_lock(convoy_data_t *d);
void convoy__data_dep_unlock(convoy_data_t *d);
/* Drop the creation guard: the task becomes ready once its predecessors are done. */
void convoy__task_release(convoy_context_t *ctx, convoy__task_t *task);
/* Block until the task is done (completed, failed or cancelled); returns its outcome.
 * The caller holds a reference. */
int convoy__task_wait(convoy_context_t *ctx, convoy__task_t *task);
/* Around a chore's call, on the thread that makes it: convoy__chore_join for each task
 * the call runs, convoy__chore_leave after. A task the chore inserts joins the oldest
 * generation among them, so that a convoy_wait waiting for a parent waits for its
 * children too. */
void convoy__chore_join(const convoy__task_t *task);
void convoy__chore_leave(void);
/* Under insert_lock (shared): the generation of a task inserted now (src/wait.c). */
uint64_t convoy__insert_gen(const convoy_context_t *ctx);
/* The chore's result for t: rc when non-zero, else t's convoy_task_fail code (0: it
 * succeeded). */
static inline int convoy__chore_result(const convoy__task_t *t, int rc)
{
    return rc != 0 ? rc : t->fail_code;
}
/* Around a blocking call of a program's thread: rings being collected leave now (the
 * scheduler's expedite), every queue is woken; begin 0 ends it (src/worker.c). */
void convoy__queues_expedite(convoy_context_t *ctx, int begin);
/* CONVOY_ERR_STATE recorded on ctx when called on one of convoy's threads (a chore):
 * what names the call. 0 on a program's thread. */
convoy_status_t convoy__refuse_in_chore(convoy_context_t *ctx, const char *what);
/* Is this an internal task? */
static inline int convoy__task_internal(const convoy__task_t *t)
{
    return t->cls->internal != CONVOY__CLS_USER;
}

/* Queues (src/worker.c): push to the scheduler and wake the consumer. */
void convoy__queue_push(convoy_context_t *ctx, int queue, convoy__task_t *task);
/* Wait on a queue's wake-up until a push newer than seen, or deadline_ns. Returns 1 when
 * the wake-up handed the caller the poller's place (queue 0: it is counted in spinners). */
int convoy__queue_sleep(convoy_context_t *ctx, int queue, uint64_t seen, uint64_t deadline_ns);
uint64_t convoy__queue_pushes(convoy_context_t *ctx, int queue);
void convoy__queue_wake(convoy_context_t *ctx, int queue);
/* The queue's consumers stop: every sleep on it ends, now and from now on. */
void convoy__queue_close(convoy_context_t *ctx, int queue);
/* An accelerator went from idle to busy (its progress thread started a ring with nothing
 * in flight): wake a sleeping CPU worker to poll while it is busy, when every worker
 * sleeps, so that the CPU tasks its completions make ready find a worker awake
 * (src/worker.c). */
void convoy__cpu_poller_wake(convoy_context_t *ctx);
/* A CPU worker completes the last task it ran (1) or is done with it (0): the first CPU
 * task that completion makes ready runs next on this worker, unqueued (src/worker.c). */
void convoy__cpu_slot_open(int open);
/* This thread holds back the CPU tasks it makes ready (1) and pushes them together, 1,
 * 2, 4, then up to CONVOY__HOLD_MAX at a time, and the rest when it stops (0): a progress
 * thread completing a group of ring members or a ring of transfers (src/worker.c). */
#define CONVOY__HOLD_MAX 8
void convoy__queue_hold(convoy_context_t *ctx, int on);
/* Push what this thread holds and stop holding until resumed with what pause returned:
 * a completion callback runs between them, since what it inserts may wait for a task
 * held here (an edge to it without memory waits for it to complete). */
convoy_context_t *convoy__queue_hold_pause(void);
void convoy__queue_hold_resume(convoy_context_t *ctx);

convoy_status_t convoy__workers_start(convoy_context_t *ctx);
void convoy__workers_stop(convoy_context_t *ctx);

/* Data (src/data.c). */
void convoy__data_unref(convoy_data_t *data);
/* Free a handle at teardown: no task uses it and the devices are gone. */
void convoy__data_destroy(convoy_data_t *data);
/* Create the internal classes (src/class.c). */
convoy_status_t convoy__classes_init_internal(convoy_context_t *ctx);
/* Push every dirty copy home, resident data too when with_resident; returns the first
 * failure (src/data.c). */
convoy_status_t convoy__data_flush_all(convoy_context_t *ctx, int with_resident);
/* The same without waiting (non-resident data only): convoy_wait starts one when it is
 * called with work still running, so that what is already done goes home meanwhile. */
void convoy__data_flush_all_start(convoy_context_t *ctx);

/* Components (src/component.c). */
extern const convoy__sched_component_t *const convoy__sched_components[];
extern const convoy__device_component_t *const convoy__device_components[];
convoy_status_t convoy__select_sched(convoy_context_t *ctx);
convoy_status_t convoy__select_devices(convoy_context_t *ctx);
void convoy__close_devices(convoy_context_t *ctx);

/* Host memory (src/hostmem.c). */
void convoy__hostmem_fini(convoy_context_t *ctx);
int convoy__host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes);
/* ctx->host_mem's device_ptr op, or NULL without one. */
void *convoy__host_device_ptr(convoy_context_t *ctx, const void *ptr, size_t bytes);

#endif /* CONVOY_CORE_H */
