/*
 * convoy: a task runtime for GPUs that makes small, compute-trivial tasks cheap.
 *
 * This header is the whole public API. A program declares task classes (a chore per
 * device kind and the access mode of each data flow), registers its data, inserts
 * tasks in program order and waits; convoy infers the dependencies from the data each
 * task touches, runs tasks on CPU workers and accelerators and moves the data.
 *
 * Conventions:
 *  - Every function that can fail returns a convoy_status_t: CONVOY_SUCCESS (0) or a
 *    negative code. The message of the last error is convoy_last_error().
 *  - Output parameters come last, end in _p, and are set only on success.
 *  - Nothing aborts the process on user error.
 *
 * Copyright (c) 2026, the convoy authors. Released under the BSD 3-Clause License: see
 * the file LICENSE, which covers every file of convoy.
 */
#ifndef CONVOY_H
#define CONVOY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes: 0 is success, errors are negative. */
typedef enum convoy_status {
    CONVOY_SUCCESS = 0,
    CONVOY_ERR_INVALID = -1,     /**< a bad argument or parameter value */
    CONVOY_ERR_NOMEM = -2,       /**< host or device memory exhausted */
    CONVOY_ERR_NOT_FOUND = -3,   /**< an unknown name (parameter, component) */
    CONVOY_ERR_UNAVAILABLE = -4, /**< a component asked for cannot start here */
    CONVOY_ERR_DEVICE = -5,      /**< a device call failed */
    CONVOY_ERR_TASK_FAILED = -6, /**< at least one task failed or was cancelled */
    CONVOY_ERR_STATE = -7,       /**< the call is not allowed now (e.g. after fini) */
    CONVOY_ERR_IO = -8,          /**< a file could not be read or written */
} convoy_status_t;

/** The name of a status code ("CONVOY_ERR_INVALID"); never NULL. */
const char *convoy_status_name(convoy_status_t status);

typedef struct convoy_context convoy_context_t;
typedef struct convoy_class convoy_class_t;
typedef struct convoy_data convoy_data_t;

/**
 * The message of the last error. With a context: the last error recorded on that
 * context (any thread). With NULL: the last error of the calling thread (use it after a
 * failed convoy_init). Never NULL. With a context, the string is the calling thread's
 * copy, valid until its next call of convoy_last_error (other threads' failures do not
 * change it); with NULL, until the thread's next failing call.
 */
const char *convoy_last_error(const convoy_context_t *ctx);

/* ---------------------------------------------------------------------------------
 * Parameters
 *
 * Every knob is a parameter with a name, a type, a default and a one-line doc;
 * `convoy-info` lists them all. Values are taken, later ones winning, from: the
 * default; convoy_param_preset() calls; the environment (CONVOY_NAME, upper case); the
 * command line (--convoy-name=value, consumed by convoy_init).
 * ------------------------------------------------------------------------------ */

/**
 * Set a parameter for the next convoy_init of this process, as if from the program.
 * The name is lower case without prefix ("sched", "batch_max_tasks"). Returns
 * CONVOY_ERR_NOT_FOUND for an unknown name, CONVOY_ERR_INVALID for a value the
 * parameter does not accept; the message names the parameter, the value and what is
 * allowed. Thread-safe.
 */
convoy_status_t convoy_param_preset(const char *name, const char *value);

/** Forget every convoy_param_preset() value. */
void convoy_param_preset_clear(void);

/**
 * Copy the current value of a parameter of a running context into buf (at most len
 * bytes, NUL-terminated). CONVOY_ERR_NOT_FOUND for an unknown name.
 */
convoy_status_t convoy_param_get(const convoy_context_t *ctx, const char *name, char *buf,
                                 size_t len);

/* ---------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------ */

/**
 * Start the runtime: read parameters, select the scheduler and devices, start the CPU
 * workers and the accelerators' progress threads. argc/argv may be NULL; when given,
 * options --convoy-NAME=VALUE (or --convoy-NAME VALUE) are removed from them and the
 * rest is left for the program. On error nothing is started and *ctx_p is untouched.
 */
convoy_status_t convoy_init(int *argc, char ***argv, convoy_context_t **ctx_p);

/**
 * Wait for every inserted task, stop the runtime and free it. Data handles and classes
 * still alive are freed; host memory from convoy_host_alloc is freed. Accepts NULL.
 */
void convoy_fini(convoy_context_t *ctx);

/* ---------------------------------------------------------------------------------
 * Task classes
 * ------------------------------------------------------------------------------ */

/** Access mode of one flow of a task class. */
typedef enum convoy_access {
    CONVOY_READ = 1,
    CONVOY_WRITE = 2,
    CONVOY_RW = 3,
} convoy_access_t;

/** Where a chore runs. */
typedef enum convoy_device_kind {
    CONVOY_DEVICE_CPU = 0,  /**< the CPU workers */
    CONVOY_DEVICE_SIM = 1,  /**< the emulated accelerator: a CPU function on device pointers */
    CONVOY_DEVICE_CUDA = 2, /**< NVIDIA GPUs: the chore launches into a cudaStream_t */
    CONVOY_DEVICE_HIP = 3,  /**< AMD GPUs: the chore launches into a hipStream_t */
    CONVOY_DEVICE_ZE = 4,   /**< Intel GPUs (Level Zero): the chore appends its kernels to a
                                 ze_command_list_handle_t, an immediate command list; never
                                 run on an Intel GPU yet (doc/level-zero.md) */
    CONVOY_DEVICE_KIND_COUNT
} convoy_device_kind_t;

/** Class flags. */
enum {
    /** Tasks of this class may travel in rings (the batch scheduler). */
    CONVOY_CLASS_BATCHABLE = 1u << 0,
    /**
     * On an accelerator, the chore reads a READ flow in place, through the device's
     * mapping of host memory, when its newest version is in convoy_host_alloc memory, the
     * device holds no copy of it at that version, and it is at most in_place_max_bytes:
     * no stage-in copy, no device memory. For chores that read each input once (a
     * streaming kernel); one that reads an input many times reads it over the link each
     * time, and a datum many tasks read is copied over the link once per task.
     */
    CONVOY_CLASS_INPUTS_IN_PLACE = 1u << 1,
};

/** What a chore sees of one task. Valid only during the chore call. */
typedef struct convoy_task_view {
    void *const *flows;       /**< flow pointers, valid on the executing device */
    const size_t *flow_bytes; /**< size of each flow */
    int nflows;
    const void *args; /**< the argument block given at insertion (a private copy) */
    size_t args_size;
    uint64_t task_id; /**< insertion number, from 0 */
} convoy_task_view_t;

/**
 * A chore runs one task. stream is the device's stream to launch into (a
 * cudaStream_t/hipStream_t, a Level Zero immediate command list; NULL on CPU and sim,
 * where the chore does the work itself).
 * Return 0 on success; any other value fails the task (its successors are cancelled).
 *
 * A chore runs on one of convoy's threads (a CPU worker, an accelerator's progress
 * thread, a sim stream thread). It may insert tasks (convoy_task_insert: they count as
 * inserted with the task that runs the chore, so a convoy_wait waiting for that task
 * waits for them too), call convoy_task_fail, and read handles (convoy_data_host_ptr,
 * convoy_data_bytes). It may not call what waits for convoy's threads: convoy_wait and
 * convoy_data_acquire return CONVOY_ERR_STATE there, convoy_data_free logs the error and
 * leaves the handle alone; convoy_fini from a chore is refused the same way (logged, the
 * context left as it is).
 */
typedef int (*convoy_chore_fn)(const convoy_task_view_t *task, void *stream);

/**
 * A batch chore runs the work of several tasks of one class at once (one kernel launch
 * for n tasks). Return 0 on success (the members failed with convoy_task_fail still
 * fail, the others succeed); any other value fails all n tasks.
 */
typedef int (*convoy_batch_chore_fn)(const convoy_task_view_t *const *tasks, int ntasks,
                                     void *stream);

/**
 * Fail one task from the chore that runs it (a batch chore: one member of its batch),
 * with code (non-zero; 0 is taken as -1) in its failure message, which names that task.
 * The chore's return value of 0 then means "the others succeeded". Call it only during
 * the chore call, with a view the call was given; any other use is undefined. On an
 * accelerator the member's outputs are discarded; on the CPUs with cpu_write_backup its
 * writes are put back.
 */
void convoy_task_fail(const convoy_task_view_t *task, int code);

/**
 * Declare a task class. modes has nflows entries (1..CONVOY_MAX_FLOWS). The name is
 * copied. The class belongs to the context and is freed by convoy_fini.
 */
#define CONVOY_MAX_FLOWS 16
convoy_status_t convoy_class_new(convoy_context_t *ctx, const char *name, int nflows,
                                 const convoy_access_t *modes, unsigned flags,
                                 convoy_class_t **cls_p);

/**
 * Set the chore for one device kind (fn NULL removes it). Allowed while tasks of the
 * class are pending: a task placed before its chore was removed fails with a message
 * saying the class has no chore for that device any more (placement after the change
 * picks another device that has one).
 */
convoy_status_t convoy_class_set_chore(convoy_class_t *cls, convoy_device_kind_t kind,
                                       convoy_chore_fn fn);

/** Set the batch chore for one device kind; used only for CONVOY_CLASS_BATCHABLE classes. */
convoy_status_t convoy_class_set_batch_chore(convoy_class_t *cls, convoy_device_kind_t kind,
                                             convoy_batch_chore_fn fn);

/* ---------------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------------ */

/**
 * Host memory for data: pinned and pooled where a GPU is present (registering memory
 * costs 0.3-4 ms a call, so convoy registers large slabs once), plain memory otherwise.
 * NULL when bytes is 0 or memory is exhausted. Free with convoy_host_free before fini,
 * or let fini free it.
 */
void *convoy_host_alloc(convoy_context_t *ctx, size_t bytes);
void convoy_host_free(convoy_context_t *ctx, void *ptr);

/**
 * Register bytes of host memory at host_ptr as one datum. The memory stays the
 * caller's; it must outlive the handle. bytes must be > 0. The range may not overlap a
 * live datum's (CONVOY_ERR_INVALID naming both ranges and the other datum); adjacent
 * ranges are fine, and a freed datum's memory may be registered again.
 */
convoy_status_t convoy_data_new(convoy_context_t *ctx, void *host_ptr, size_t bytes,
                                convoy_data_t **data_p);

/*
 * Where data live (write-back). A version written on an accelerator stays there, as the
 * newest, until something needs it elsewhere: a CPU task, a task on another device, an
 * acquire, convoy_wait, convoy_data_free, or eviction when the device needs room. Each
 * such move is fused with the others of the moment into bounded multi-copy submissions.
 *
 * The host-side contract:
 *  - after convoy_wait (or convoy_data_acquire) returns, host memory holds the newest
 *    version of every datum (wait skips data marked CONVOY_DATA_RESIDENT or
 *    CONVOY_DATA_SCRATCH, whose device copies stay the newest);
 *  - a program that changes host memory of a registered datum says so first, with
 *    convoy_data_acquire(data, CONVOY_RW or CONVOY_WRITE); otherwise devices may keep
 *    using their older copy. The parameter check_host_writes finds such changes and fails
 *    the task that would read the old copy, naming the datum;
 *  - nothing convoy does writes host memory after convoy_data_acquire, convoy_wait or
 *    convoy_data_free has returned, except for tasks inserted after them;
 *  - a task's outputs become visible only once it has succeeded: a failed task's outputs
 *    are discarded, on a device and (parameter cpu_write_backup, on by default) on the
 *    CPUs, and every datum keeps its newest valid version.
 */

/** Data flags (convoy_data_set_flags). */
enum {
    /** convoy_wait does not bring it home: an iterative program that waits every
     *  iteration without reading it on the host pays no flush. acquire, CPU tasks,
     *  convoy_data_free and eviction still do. */
    CONVOY_DATA_RESIDENT = 1u << 0,
    /** Its host memory is never the result: convoy_wait and convoy_data_free never copy
     *  it home (acquire, CPU tasks and eviction still do, so that nothing is lost). */
    CONVOY_DATA_SCRATCH = 1u << 1,
};

/** Replace the datum's flags (CONVOY_DATA_*); CONVOY_ERR_INVALID for an unknown bit. */
convoy_status_t convoy_data_set_flags(convoy_data_t *data, unsigned flags);

/**
 * Wait until every task inserted so far that uses the datum has completed, and bring
 * the newest version home. With CONVOY_WRITE in mode the caller may then change the
 * host memory: device copies become stale. Returns CONVOY_ERR_TASK_FAILED when a task
 * that wrote the datum failed or was cancelled (the host copy then holds the newest
 * valid version), or when bringing it home failed (the message names the datum, the
 * device and the cause; the device copy stays the newest and a later call retries).
 * CONVOY_ERR_STATE from a chore (doc/threads.md).
 */
convoy_status_t convoy_data_acquire(convoy_data_t *data, convoy_access_t mode);

/** The host pointer and size given at creation. */
void *convoy_data_host_ptr(const convoy_data_t *data);
size_t convoy_data_bytes(const convoy_data_t *data);

/**
 * Free a handle: waits for the tasks that use it, brings the newest version home (not
 * for CONVOY_DATA_SCRATCH data), then frees its device copies. Accepts NULL. From a
 * chore it logs an error and frees nothing (it would wait for the chore's own task). A
 * handle freed already (by convoy_data_free or convoy_fini) is refused with a logged
 * error, as convoy_data_acquire and convoy_data_set_flags refuse it (CONVOY_ERR_INVALID),
 * unless its memory went to a handle made since. Other calls with a freed handle (as a
 * flow of convoy_task_insert, convoy_data_host_ptr) are undefined.
 */
void convoy_data_free(convoy_data_t *data);

/* ---------------------------------------------------------------------------------
 * Tasks
 * ------------------------------------------------------------------------------ */

/**
 * Insert a task in program order. flows holds one datum per flow of the class; the
 * task depends on earlier tasks through them (read after write, write after read,
 * write after write). args (args_size bytes, may be 0) is copied. Thread-safe; tasks
 * inserted concurrently from several threads are ordered as the calls are serialised.
 * A datum may appear in several flows of one task.
 */
convoy_status_t convoy_task_insert(convoy_context_t *ctx, convoy_class_t *cls, const void *args,
                                   size_t args_size, convoy_data_t *const *flows);

/** Where a task may run (convoy_task_opts_t.where). */
enum {
    CONVOY_WHERE_ANY = 0,  /**< where the scheduler places it (the default) */
    CONVOY_WHERE_CPU = -1, /**< on the CPU workers */
};
/** On accelerator i (0 .. convoy_accel_count - 1), as convoy_accel_name(ctx, i) names it. */
#define CONVOY_WHERE_ACCEL(i) ((i) + 1)

/**
 * Called once when a task is done, on the thread that completes it (a CPU worker, an
 * accelerator's progress thread, or the inserting thread for a task cancelled at once),
 * before a convoy_wait that waits for the task returns. outcome is CONVOY_SUCCESS or
 * CONVOY_ERR_TASK_FAILED; msg (NULL on success, valid during the call) says why, and
 * starts with "cancelled" for a task cancelled by a failure before it. The callback runs
 * on convoy's threads: it must be short and may do what a chore may (convoy_task_insert;
 * not convoy_wait, convoy_data_acquire, convoy_data_free, convoy_fini).
 */
typedef void (*convoy_done_fn)(void *arg, uint64_t task_id, convoy_status_t outcome,
                               const char *msg);

/** Per-task options of convoy_task_insert_ex; zero-initialised means none. */
typedef struct convoy_task_opts {
    int where;           /**< CONVOY_WHERE_ANY, CONVOY_WHERE_CPU or CONVOY_WHERE_ACCEL(i) */
    convoy_done_fn done; /**< NULL: no callback */
    void *done_arg;      /**< passed to done */
    int rank;            /**< distributed mode (convoy_dist_start): CONVOY_RANK(r) runs the
                              task on rank r; 0: on the owner of the datum of its first
                              written flow (of its first flow when it writes none) */
} convoy_task_opts_t;

/** The rank r for convoy_task_opts_t.rank. */
#define CONVOY_RANK(r) ((r) + 1)

/**
 * convoy_task_insert with options (opts NULL: none): where pins the task to the CPUs or
 * one accelerator, whose device kind must have a chore of the class (CONVOY_ERR_INVALID
 * otherwise, and for a where out of range); done is called when the task is done. A
 * pinned task's data move to where it runs as for any task. A call that returns an
 * error never calls done.
 */
convoy_status_t convoy_task_insert_ex(convoy_context_t *ctx, convoy_class_t *cls, const void *args,
                                      size_t args_size, convoy_data_t *const *flows,
                                      const convoy_task_opts_t *opts);

/**
 * Wait until every task inserted before the call (and every task their chores insert)
 * has completed, failed or been cancelled, then bring every datum's newest version home
 * in fused submissions (not the data marked CONVOY_DATA_RESIDENT or
 * CONVOY_DATA_SCRATCH); device copies stay valid. Returns CONVOY_SUCCESS, or
 * CONVOY_ERR_TASK_FAILED with a message naming the first failed task, its class and the
 * cause, and how many tasks failed and were cancelled. The failure count is reset, so
 * the next wait reports only new failures. Tasks other threads insert during the call
 * are not waited for: the call returns while an inserter runs on. CONVOY_ERR_NOMEM when
 * every task ran but the flush home could not start for want of host memory (a later
 * wait or acquire tries again). Rings being collected
 * by the batch scheduler leave at once while a wait (or an acquire, or a free) blocks,
 * without sitting out batch_max_wait_us. CONVOY_ERR_STATE from a chore (doc/threads.md).
 */
convoy_status_t convoy_wait(convoy_context_t *ctx);

/** Counts since init, for programs and benchmarks. */
typedef struct convoy_stats {
    uint64_t tasks_inserted;
    uint64_t tasks_completed; /**< completed successfully */
    uint64_t tasks_failed;
    uint64_t tasks_cancelled;
    uint64_t rings;           /**< rings executed on accelerators */
    uint64_t h2d_submissions; /**< stage-in submissions (one memcpy_multi or memcpy) */
    uint64_t h2d_copies;
    uint64_t h2d_bytes;
    uint64_t d2h_submissions; /**< submissions to the host: flushes and evictions */
    uint64_t d2h_copies;
    uint64_t d2h_bytes;
    uint64_t split_copies; /**< copies sent alone because they exceeded the split size */
    uint64_t retried_copies;
    uint64_t evictions;
    uint64_t launches;   /**< chore and batch chore calls on accelerators */
    uint64_t d2d_copies; /**< device-to-device copies (the only newest version saved
                              before a task overwrites it, so a failure loses nothing) */
    uint64_t d2d_bytes;
    uint64_t flush_copies;         /**< copies home on demand (wait, acquire, CPU tasks) */
    uint64_t eviction_submissions; /**< submissions pushing evicted dirty copies home */
    uint64_t eviction_copies;      /**< dirty copies pushed home to make room */
    uint64_t transfers_failed;     /**< flushes home that failed (after retries); a
                                        flush of everything (a wait's, fini's) whose own
                                        pushout failed counts here too when another push
                                        (the wait's next flush, an eviction) brought the
                                        data home before it looked and the wait succeeds */
    /* Distributed mode (convoy_dist_start; 0 otherwise). A flow is one version of one
     * datum for one rank; a message carries one flow or several fused ones. */
    uint64_t dist_messages_sent;
    uint64_t dist_messages_received;
    uint64_t dist_flows_sent; /**< failure markers included */
    uint64_t dist_flows_received;
    uint64_t dist_bytes_sent; /**< payload bytes of the flows */
    uint64_t dist_bytes_received;
    uint64_t dist_large_sent;     /**< flows over dist_large_bytes, each sent alone */
    uint64_t write_behind_copies; /**< outputs pushed home as they were written, before
                                       anything needed them there (write_behind) */
    uint64_t in_place_reads;      /**< flows an accelerator's chore read in host memory
                                       (CONVOY_CLASS_INPUTS_IN_PLACE), not staged in */
    uint64_t in_place_bytes;
} convoy_stats_t;

void convoy_get_stats(const convoy_context_t *ctx, convoy_stats_t *stats);

/** The name of the scheduler component in use ("fifo", "batch"). */
const char *convoy_sched_name(const convoy_context_t *ctx);

/** Number of accelerators in use, and the name of one ("sim0", "cuda0"). */
int convoy_accel_count(const convoy_context_t *ctx);
const char *convoy_accel_name(const convoy_context_t *ctx, int index);

/* ---------------------------------------------------------------------------------
 * Distributed mode (doc/dist.md): owner computes, over MPI.
 *
 * Every rank runs the same program and inserts the same task stream, from one thread,
 * with data created in the same order. Each datum has an owner rank (0 unless
 * convoy_data_set_owner says otherwise), whose host memory holds its first version. A
 * task runs on the rank named by convoy_task_opts_t.rank, else on the owner of the datum
 * of its first written flow; the other ranks only keep the bookkeeping of where each
 * version lives. The rank holding a datum's newest version sends it once to each rank
 * that runs a reader of it; small flows to one peer are fused into one message. A task
 * that fails cancels its successors on every rank (a failure marker travels instead of
 * the data), and convoy_dist_wait reports it on every rank. Chores do not insert tasks
 * in this mode (CONVOY_ERR_STATE): their tasks would be in one rank's stream only.
 * ------------------------------------------------------------------------------ */

/**
 * Turn the distributed mode on for ctx, before any task is inserted: a collective call
 * of every rank of the communicator. comm points to an MPI_Comm (NULL:
 * MPI_COMM_WORLD), which convoy duplicates. When MPI is not initialised yet, convoy
 * calls MPI_Init_thread (asking MPI_THREAD_MULTIPLE) and MPI_Finalize in convoy_fini;
 * otherwise the program's MPI is used as it is (MPI_THREAD_MULTIPLE or, with less,
 * every MPI call made by convoy's communication thread) and the program finalises it.
 * CONVOY_ERR_UNAVAILABLE where the library was built without MPI
 * (convoy_build_has_mpi) or MPI cannot start; CONVOY_ERR_STATE when tasks were inserted
 * already or the mode is on. convoy_fini waits for every rank (collective) and stops it.
 */
convoy_status_t convoy_dist_start(convoy_context_t *ctx, const void *comm);

/** This process's rank and the number of ranks: 0 and 1 when the mode is off. */
int convoy_dist_rank(const convoy_context_t *ctx);
int convoy_dist_size(const convoy_context_t *ctx);

/**
 * Make rank the owner of the datum: its host memory there holds the first version (the
 * other ranks' host memory is not read). Call it on every rank, before any task uses the
 * datum. CONVOY_ERR_INVALID for a rank out of [0, size) or a datum tasks used already.
 */
convoy_status_t convoy_data_set_owner(convoy_data_t *data, int rank);

/** The owner of the datum (0 when the mode is off). */
int convoy_data_owner(const convoy_data_t *data);

/**
 * The collective wait: convoy_wait, then every transfer of this rank done, then every
 * rank meets. Returns CONVOY_SUCCESS on every rank, or CONVOY_ERR_TASK_FAILED on every
 * rank when a task failed or was cancelled on any rank, the message naming the first
 * failure of the lowest rank that had one. Also CONVOY_ERR_DEVICE when a peer died or
 * MPI failed (the message says which call). Without the mode it is convoy_wait.
 */
convoy_status_t convoy_dist_wait(convoy_context_t *ctx);

/* ---------------------------------------------------------------------------------
 * Version and build
 * ------------------------------------------------------------------------------ */

/* CONVOY_VERSION_MAJOR, _MINOR, _PATCH, CONVOY_VERSION ("0.1.0") and
 * CONVOY_VERSION_NUMBER: the version of these headers. */
#include "convoy_version.h"

/**
 * The version of the library the program runs with (which may differ from the headers'
 * CONVOY_VERSION_* when a shared library was replaced). Each pointer may be NULL.
 * Thread-safe, callable before convoy_init.
 */
void convoy_version(int *major, int *minor, int *patch);

/**
 * 1 when this build of the library holds the device component of that kind (CPU and SIM
 * always; CUDA, HIP and ZE when configure found them), 0 otherwise, also for a kind out of
 * range. Whether a device of that kind is present on the machine is a separate question:
 * convoy_init with CONVOY_DEVICES=cuda answers it. Thread-safe, callable before
 * convoy_init.
 */
int convoy_build_has_device(convoy_device_kind_t kind);

/** 1 when this build of the library holds the distributed mode (MPI), else 0. */
int convoy_build_has_mpi(void);

#ifdef __cplusplus
}
#endif
#endif /* CONVOY_H */
