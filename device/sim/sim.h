/*
 * The sim device: an accelerator emulated in host memory (DESIGN.md, "The sim device").
 * Internal to convoy.
 *
 * The first part of this header is what tests and benchmarks may use: a log of every
 * copy submission and thread-safe counters, read through the convoy__device_t the
 * context opened. The second part, visible only where CONVOY__SIM_INTERNAL is defined,
 * is shared by the files of device/sim/ and by nothing else.
 */
#ifndef CONVOY_SIM_H
#define CONVOY_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

extern const convoy__device_component_t convoy__device_sim;
extern const convoy__param_def_t convoy__sim_params[];

/* One copy submission (a memcpy or a memcpy_multi call that passed validation). */
typedef struct convoy__sim_record {
    uint64_t seq;         /* submission number on its device, from 1 (what faults count) */
    int dir;              /* convoy__copy_dir_t of its copies; -1 when they mix directions */
    int copies;           /* copies really enqueued (fewer than asked when it failed) */
    size_t bytes;         /* payload of those copies */
    int method;           /* convoy__copy_method_t used; LOOP for a single memcpy */
    int stream;           /* the stream's number on its device, in creation order from 0 */
    uint64_t enqueue_ns;  /* CLOCK_MONOTONIC when the call enqueued it */
    uint64_t complete_ns; /* modelled completion; 0 until its stream reaches it, or none ran */
    int failed;           /* 1: an injected failure was returned for this call */
} convoy__sim_record_t;

/* Counters since open; arrays are indexed by convoy__copy_dir_t. */
typedef struct convoy__sim_counters {
    uint64_t submissions[3]; /* calls that passed validation, injected failures included */
    uint64_t copies[3];      /* copies really enqueued (and so executed) */
    uint64_t bytes[3];       /* payload of those copies */
    uint64_t launches;       /* launches enqueued (an injected failure is not one) */
    uint64_t allocs;         /* successful mem_alloc calls */
    uint64_t alloc_failures; /* mem_alloc calls that failed: full, or injected */
    size_t bytes_in_use;     /* device memory allocated and not yet freed */
    size_t peak_bytes;       /* the most bytes_in_use has been */
    uint64_t records;        /* events recorded, quiet ones included */
    uint64_t quiet_records;  /* events recorded quiet (event_record_quiet) */
    uint64_t quiet_queries;  /* queries of an event whose latest record was quiet */
} convoy__sim_counters_t;

/* The log holds the first CONVOY__SIM_MAX_RECORDS submissions since open or the last
 * clear; later ones are only counted, so long benchmarks stay bounded in memory. */
#define CONVOY__SIM_MAX_RECORDS (1 << 20)

/* Non-zero when dev is a device opened by the sim component (NULL gives 0). */
int convoy__sim_is_sim(const convoy__device_t *dev);

/* Copy up to max records, oldest first, into out (may be NULL when max is 0) and return
 * how many the log holds. A record's complete_ns is filled when its stream executes it,
 * so read the log after the submissions' events have completed. 0 for a non-sim dev. */
int convoy__sim_records(convoy__device_t *dev, convoy__sim_record_t *out, int max);

/* Empty the log (submission numbers keep counting). */
void convoy__sim_records_clear(convoy__device_t *dev);

/* A consistent snapshot of the counters; zeroes for a non-sim dev. Valid until close. */
void convoy__sim_get_counters(convoy__device_t *dev, convoy__sim_counters_t *out);

#ifdef CONVOY__SIM_INTERNAL
/* ---- shared by the files of device/sim/ only -------------------------------------- */

#include <pthread.h>
#include <stdatomic.h>

#include "device/hostslab.h"

/* convoy_host_alloc's slabs on the sim (sim_hostmem.c). */
extern const convoy__hostslab_ops_t convoy__sim_hostslab_ops;
extern const convoy__host_mem_ops_t convoy__sim_host_mem_ops;

typedef struct convoy__sim_dev convoy__sim_dev_t;
typedef struct convoy__sim_stream convoy__sim_stream_t;
typedef struct convoy__sim_event convoy__sim_event_t;
typedef struct convoy__sim_op convoy__sim_op_t;

enum {
    CONVOY__SIM_OP_COPY,   /* a copy submission */
    CONVOY__SIM_OP_LAUNCH, /* a chore */
    CONVOY__SIM_OP_RECORD, /* an event record */
    CONVOY__SIM_OP_WAIT,   /* a wait for another stream's event */
};

/* One queued operation; the stream thread frees it once executed. */
struct convoy__sim_op {
    convoy__sim_op_t *next;
    int kind;
    uint64_t enqueue_ns;        /* no op starts (in modelled time) before its enqueue */
    uint64_t seq;               /* COPY: the submission number, to find its record */
    uint64_t overhead_ns;       /* COPY: submission, per-copy and injected delay costs */
    uint64_t end_ns;            /* COPY: modelled end, when timed at enqueue */
    int timed;                  /* COPY: timed at enqueue (nothing of unknown length ahead) */
    int fail_async;             /* COPY: accepted, but fails when run (sim_fail_async) */
    size_t dir_bytes[3];        /* COPY: payload per direction, for the link timelines */
    convoy__launch_fn fn;       /* LAUNCH */
    void *arg;                  /* LAUNCH */
    convoy__sim_event_t *event; /* RECORD, WAIT: holds a reference */
    uint64_t gen;               /* RECORD, WAIT: the event's record generation */
    int ncopies;                /* COPY */
    convoy__copy_t copies[];    /* COPY: the device's own copy of the caller's array */
};

struct convoy__sim_stream {
    convoy__sim_dev_t *dev;
    pthread_t thread;
    pthread_cond_t cond;           /* the thread sleeps here until work or closing */
    convoy__sim_op_t *head, *tail; /* queue, under dev->lock */
    uint64_t vt;                   /* modelled end of the last op the thread executed */
    uint64_t tail_vt;              /* modelled end of the last op enqueued, if untimed 0 */
    int untimed;      /* queued launches, waits and the copies behind them: ends not yet known */
    int id;           /* creation number on the device */
    int closing;      /* destroy asked: drain the queue, then exit */
    int fail_pending; /* a copy failed when run: the next record executed reports it */
    uint64_t nenqueued, nexecuted;     /* ops, for stream_sync */
    convoy__sim_stream_t *prev, *next; /* dev->streams */
};

struct convoy__sim_event {
    uint64_t gen;                     /* records issued so far (0: never recorded) */
    uint64_t exec_gen;                /* newest generation a stream has executed */
    uint64_t exec_at;                 /* modelled completion of generation exec_gen */
    _Atomic uint64_t done_at;         /* completion of generation gen; UINT64_MAX while queued */
    atomic_int failed;                /* generation gen follows work that failed when run */
    atomic_int quiet;                 /* generation gen was recorded quiet: queries count */
    int refs;                         /* the owner's, plus one per queued op naming it */
    convoy__sim_event_t *prev, *next; /* dev->events */
};

typedef struct convoy__sim_block convoy__sim_block_t; /* an allocation's header */

/* A device's link, shared by its lanes (sim_link.c). */
typedef struct convoy__sim_link {
    pthread_mutex_t lock; /* guards free_at; taken inside a lane's device lock */
    uint64_t free_at[3];  /* per direction: when the link is next free (modelled) */
    convoy_context_t *ctx;
    int local_index; /* the device it belongs to: one link per (ctx, local_index) */
    int refs;        /* lanes attached */
    struct convoy__sim_link *next;
} convoy__sim_link_t;

/* The link of device local_index of ctx, attached once per lane; NULL when out of
 * memory. Detach accepts NULL. */
convoy__sim_link_t *convoy__sim_link_attach(convoy_context_t *ctx, int local_index);
void convoy__sim_link_detach(convoy__sim_link_t *link);

struct convoy__sim_dev {
    convoy__device_t base; /* first: what the pipeline sees */
    /* Cost model and fault injection, read from the parameters at open. */
    double submit_ns, copy_ns, single_copy_ns, launch_ns, delay_ns;
    double ns_per_byte;
    double pageable_ns;          /* added per copy whose host side is not pinned */
    uint64_t launch_late_ns;     /* real time a launch waits before its chore runs */
    convoy__hostslab_t *hostmem; /* convoy_host_alloc's slabs, shared by the sim devices */
    int64_t fail_submission, fail_submissions; /* submissions fail from the n-th, this many */
    int64_t fail_submitted, fail_alloc, fail_launch, fail_every;
    int64_t fail_record, fail_records; /* records fail from the fail_record-th, this many */
    int64_t fail_sync;                 /* the n-th stream_sync fails */
    int64_t fail_wait, fail_waits;     /* stream waits fail from the fail_wait-th, this many */
    int64_t fail_async;                /* the n-th copy submission fails when run */
    int64_t fail_async_home;           /* the n-th submission device to host, likewise */
    int sticky;                        /* sim_sticky_errors (0, 1 or 2) */
    atomic_int faulted;                /* sticky: a copy failed when run; every event
                                          completed after it, and every query, fail */
    _Atomic uint64_t quiet_queries;    /* counters.quiet_queries, counted without the lock */
    uint64_t nsyncs;                   /* stream_sync calls so far (under lock) */
    uint64_t nevent_records;           /* event records so far (under lock) */
    uint64_t nstream_waits;            /* stream_wait_event calls so far (under lock) */

    pthread_mutex_t lock;     /* guards every field below and all streams and events */
    pthread_cond_t exec_cond; /* streams blocked on another stream's event sleep here */
    pthread_cond_t idle_cond; /* idle_wait sleeps here (CLOCK_MONOTONIC) */
    int exec_waiters;         /* streams asleep on exec_cond: broadcast only then */
    int idle_sleeping;        /* idle_wait callers asleep on idle_cond */
    uint64_t done_events;     /* records executed whose completion time has passed */
    uint64_t idle_seen;       /* done_events when idle_wait last returned */
    uint64_t *heap;           /* min-heap of future completion times of executed records */
    int heap_len, heap_cap;
    convoy__sim_link_t *link; /* the copies' timelines, shared with the device's other lanes */

    uint64_t nsubmissions, nallocs, nlaunches; /* what fault injection counts */
    uint64_t nsubmissions_home;                /* of them device to host (sim_fail_async_home) */
    int next_stream_id;
    convoy__sim_stream_t *streams;
    convoy__sim_event_t *events;
    convoy__sim_block_t *blocks; /* live allocations, freed at close if leaked */
    convoy__sim_counters_t counters;
    convoy__sim_record_t *records;
    int nrecords, records_cap; /* the log, sorted by seq (appended under the lock) */
};

/* sim_sticky_errors: a copy failed when it ran, which ends the device's context as a
 * fault ends a GPU's: no later copy or chore runs. */
static inline int convoy__sim_context_lost(convoy__sim_dev_t *dev)
{
    return dev->sticky && atomic_load_explicit(&dev->faulted, memory_order_relaxed);
}

/* sim_sticky_errors=2: the context is lost, and calls fail with it. */
static inline int convoy__sim_calls_fail(convoy__sim_dev_t *dev)
{
    return dev->sticky == 2 && convoy__sim_context_lost(dev);
}

/* What every call (copy, launch, record, wait, sync, allocation) returns once the context
 * is lost with sim_sticky_errors=2, as each CUDA call returns the fault that ended its
 * context. */
convoy_status_t convoy__sim_lost(convoy__sim_dev_t *dev, const char *what);

/* Streams, events and idle_wait (sim_stream.c), in the device ops table. */
convoy_status_t convoy__sim_stream_create(convoy__device_t *dev, convoy__stream_t **stream_p);
void convoy__sim_stream_destroy(convoy__device_t *dev, convoy__stream_t *stream);
void *convoy__sim_stream_native(convoy__device_t *dev, convoy__stream_t *stream);
convoy_status_t convoy__sim_event_create(convoy__device_t *dev, convoy__event_t **event_p);
void convoy__sim_event_destroy(convoy__device_t *dev, convoy__event_t *event);
convoy_status_t convoy__sim_event_record(convoy__device_t *dev, convoy__event_t *event,
                                         convoy__stream_t *stream);
convoy_status_t convoy__sim_event_record_quiet(convoy__device_t *dev, convoy__event_t *event,
                                               convoy__stream_t *stream);
int convoy__sim_event_query(convoy__device_t *dev, convoy__event_t *event);
convoy_status_t convoy__sim_stream_wait_event(convoy__device_t *dev, convoy__stream_t *stream,
                                              convoy__event_t *event);
void convoy__sim_idle_wait(convoy__device_t *dev, uint64_t deadline_ns);
convoy_status_t convoy__sim_stream_sync(convoy__device_t *dev, convoy__stream_t *stream);
/* Wait (dev->lock held) until s has executed every op enqueued so far; returns its
 * modelled clock then. Counts no sync for fault injection. */
uint64_t convoy__sim_stream_drain_locked(convoy__sim_dev_t *dev, convoy__sim_stream_t *s);

/* Append op to the stream's queue and wake its thread; times a copy at once when nothing
 * of unknown length is ahead of it. dev->lock held. */
void convoy__sim_enqueue_locked(convoy__sim_stream_t *s, convoy__sim_op_t *op);

/* Model a copy op that starts no earlier than after: take its place on the link
 * timelines, fill its record's complete_ns and return its end. dev->lock held. */
uint64_t convoy__sim_time_copy_locked(convoy__sim_dev_t *dev, uint64_t after, convoy__sim_op_t *op);

/* At close: destroy the streams and free the events the owner left. */
void convoy__sim_streams_close(convoy__sim_dev_t *dev);

#endif /* CONVOY__SIM_INTERNAL */
#endif /* CONVOY_SIM_H */
