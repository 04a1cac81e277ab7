/*
 * The device module interface: what an accelerator component (sim, cuda, hip) offers
 * to the pipeline. Internal to convoy.
 *
 * A device component exports one const convoy__device_component_t. Its open() returns
 * a convoy__device_t (the component embeds it as the first member of its own struct)
 * whose ops the pipeline calls from the device's progress thread only, except where a
 * comment says otherwise. Every op that can fail returns a convoy_status_t and records
 * the message with convoy__error().
 */
#ifndef CONVOY_DEVICE_H
#define CONVOY_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "convoy.h"
#include "src/param.h"

typedef struct convoy__device convoy__device_t;
typedef struct convoy__stream convoy__stream_t; /* opaque, per component */
typedef struct convoy__event convoy__event_t;   /* opaque, per component */

typedef enum convoy__copy_dir {
    CONVOY__H2D = 0,
    CONVOY__D2H = 1,
    CONVOY__D2D = 2,
} convoy__copy_dir_t;

/* Copy flags. */
enum {
    CONVOY__COPY_HOST_PINNED = 1u << 0, /* the host side is pinned (page-locked) memory */
};

/* One copy of a submission. */
typedef struct convoy__copy {
    void *dst;
    const void *src;
    size_t bytes;
    uint8_t dir;   /* convoy__copy_dir_t */
    uint8_t flags; /* CONVOY__COPY_* */
    int32_t tag;   /* the pipeline's own index for this copy; devices ignore it */
} convoy__copy_t;

/* Copy methods (bit positions in convoy__device_t.methods). */
typedef enum convoy__copy_method {
    CONVOY__METHOD_LOOP = 0,   /* one copy call per copy */
    CONVOY__METHOD_ENGINE = 1, /* one batched copy-engine call (cudaMemcpyBatchAsync) */
    CONVOY__METHOD_SM = 2,     /* one gather/scatter kernel over mapped pinned host memory */
    CONVOY__METHOD_COUNT
} convoy__copy_method_t;

const char *convoy__copy_method_name(int method);

/* A launch runs in stream order. On devices whose chores do the work on the host
 * (sim), fn runs later on the stream's own thread; on GPUs (launch_inline) it runs at
 * once on the calling thread and enqueues kernels into native_stream. fn records the
 * chore's result where the pipeline reads it, once the event recorded after the launch
 * has completed; its return value is only logged. */
typedef int (*convoy__launch_fn)(void *arg, void *native_stream);

typedef struct convoy__device_ops {
    /* Device memory. alloc returns CONVOY_ERR_NOMEM when the device is full, without
     * logging at error level (the pipeline evicts and retries). */
    convoy_status_t (*mem_alloc)(convoy__device_t *dev, size_t bytes, void **ptr_p);
    void (*mem_free)(convoy__device_t *dev, void *ptr);

    convoy_status_t (*stream_create)(convoy__device_t *dev, convoy__stream_t **stream_p);
    void (*stream_destroy)(convoy__device_t *dev, convoy__stream_t *stream);
    /* The handle chores receive (cudaStream_t); NULL on sim. */
    void *(*stream_native)(convoy__device_t *dev, convoy__stream_t *stream);

    convoy_status_t (*event_create)(convoy__device_t *dev, convoy__event_t **event_p);
    void (*event_destroy)(convoy__device_t *dev, convoy__event_t *event);
    /* Record: the event completes when all work enqueued on stream so far has. */
    convoy_status_t (*event_record)(convoy__device_t *dev, convoy__event_t *event,
                                    convoy__stream_t *stream);
    /* Optional: record without what makes a query cheap (CUDA: the flag's write, which
     * costs the H200 host about 2 us of a 2.4 us record). The pipeline records one only
     * on a device with errors_sticky, where a later event that proves it (after it on
     * its stream, or on a stream that waited for it) will be polled instead; it is
     * queried itself only where that one failed or could not be recorded, or the host
     * must wait for it alone. */
    convoy_status_t (*event_record_quiet)(convoy__device_t *dev, convoy__event_t *event,
                                          convoy__stream_t *stream);
    /* 1 when complete, 0 when not yet, negative when the work before it failed. */
    int (*event_query)(convoy__device_t *dev, convoy__event_t *event);
    /* Later work on stream waits for event (no host round trip). */
    convoy_status_t (*stream_wait_event)(convoy__device_t *dev, convoy__stream_t *stream,
                                         convoy__event_t *event);
    /* Block until all work enqueued on stream so far has run; CONVOY_SUCCESS when it ran
     * without error. The pipeline's last resort when no event can be recorded. */
    convoy_status_t (*stream_sync)(convoy__device_t *dev, convoy__stream_t *stream);

    /* One copy, in stream order. */
    convoy_status_t (*memcpy)(convoy__device_t *dev, convoy__stream_t *stream,
                              const convoy__copy_t *copy);
    /*
     * Enqueue n independent copies (no two touch the same bytes) in stream order, as one
     * submission, with the method the device chooses (auto) unless method >= 0 forces
     * one. On success all n are enqueued and *method_p (may be NULL) says which method
     * was used. On error *submitted_p says how many leading copies were enqueued: exact
     * for the per-copy path, 0 or n for a batched call that cannot say.
     */
    convoy_status_t (*memcpy_multi)(convoy__device_t *dev, convoy__stream_t *stream,
                                    const convoy__copy_t *copies, int n, int method,
                                    int *submitted_p, int *method_p);

    /* Run a chore in stream order (see convoy__launch_fn). */
    convoy_status_t (*launch)(convoy__device_t *dev, convoy__stream_t *stream, convoy__launch_fn fn,
                              void *arg);

    /* Optional: block the progress thread until an event of this device may have
     * completed, or until deadline_ns (CLOCK_MONOTONIC) has passed. NULL: the pipeline
     * polls with short sleeps. */
    void (*idle_wait)(convoy__device_t *dev, uint64_t deadline_ns);
} convoy__device_ops_t;

/* The common part of an open accelerator. */
struct convoy__device {
    const struct convoy__device_component *component;
    const convoy__device_ops_t *ops;
    convoy_context_t *ctx;
    convoy_device_kind_t kind; /* which chores run here */
    int index;                 /* among the context's accelerators */
    char name[32];             /* "sim0", "cuda1" */
    unsigned methods;          /* 1u << convoy__copy_method_t for each method it has */
    int max_batch;             /* the most copies one memcpy_multi accepts */
    size_t mem_capacity;       /* bytes of device memory convoy may use */
    int launch_inline;         /* 1: launch() runs the chore before returning (GPUs), so its
                                  result is known at once and pushout can be enqueued behind
                                  the launch; 0: the result is known when the launch's event
                                  completes (sim) */
    int errors_sticky;         /* 1: an error of work run on the device fails every event
                                  completed after it (a GPU: a fault ends the context), so an
                                  event seen complete without error proves the same of the
                                  work enqueued before it on its stream */
    void *pipeline;            /* the pipeline's state for this device (device/pipeline.c) */
    int64_t load;              /* tasks taken and not completed, published for placement:
                                  read and written with __atomic builtins (this header is
                                  also compiled as C++) */
    /* The program's tasks pushed to its queue and not yet taken (not convoy's own flushes
     * and drops, which are not placed and may wait a while): placement weighs them with load, else
     * a device whose progress thread is busy starting a ring looks as free as one with
     * nothing queued, and takes every task placed meanwhile (two lanes of one H200 got
     * 44 and 30 rings of the same run). Pushing threads add, its progress thread takes
     * away; a line apart from load, which that thread reads at every pass (padding, not
     * alignment: devices come from calloc). */
    char queued_apart[64];
    int64_t queued;
};

/* Host memory services a GPU component offers (pinned slabs); optional. */
typedef struct convoy__host_mem_ops {
    void *(*alloc)(convoy_context_t *ctx, size_t bytes); /* pinned, mapped */
    void (*free)(convoy_context_t *ctx, void *ptr);
    /* Non-zero when [ptr, ptr+bytes) is pinned memory. */
    int (*is_pinned)(convoy_context_t *ctx, const void *ptr, size_t bytes);
    /* Where this component's chores read [ptr, ptr+bytes) of convoy_host_alloc memory in
     * place (CONVOY_CLASS_INPUTS_IN_PLACE), or NULL: outside the slabs (the program's own
     * pinned memory may be freed while a failed launch still reads it). NULL op: chores
     * never read host memory in place on this component's devices. */
    void *(*device_ptr)(convoy_context_t *ctx, const void *ptr, size_t bytes);
} convoy__host_mem_ops_t;

/*
 * A device component: one per folder under device/, exporting one of these.
 *
 * Selection (src/component.c) asks the components in decreasing priority order (host
 * last, as Open MPI sorts its null component) and logs each decision at level 'info'.
 * Where the component is a loadable module (doc/modules.md), libconvoy holds a stand-in
 * with the same name, priority, kind, doc and parameters, whose query and open load the
 * module first; a module that cannot load makes the component unavailable, with the
 * loader's message as the reason. Devices opened from a module point at the module's
 * own component (convoy__device_t.component), whose close and host_mem are the real ones.
 */
typedef struct convoy__device_component {
    const char *name;
    int priority; /* higher is asked (and opened) first; the first opened component with
                     host_mem provides convoy_host_alloc's pinned memory */
    convoy_device_kind_t kind;         /* CONVOY_DEVICE_CPU for the host component */
    const char *doc;                   /* one line for convoy-info */
    const convoy__param_def_t *params; /* its parameters, NULL-name terminated; may be NULL */
    /* How many devices this component can open with these parameters; 0 with a reason
     * in why when none. Needs no context, so that convoy-info can ask without starting
     * anything, and must leave the process able to fork: it may load a vendor library
     * but creates no vendor context (cudaGetDeviceCount, not cudaSetDevice). */
    int (*query)(const convoy__params_t *params, char *why, size_t why_len);
    /* Opens device local_index of this component as the context's accelerator
     * global_index. NULL for the host component, whose devices are the CPU workers. */
    convoy_status_t (*open)(convoy_context_t *ctx, int local_index, int global_index,
                            convoy__device_t **dev_p);
    /* Frees everything open() made; reports leaks at verbose level. Accepts NULL. */
    void (*close)(convoy__device_t *dev);
    const convoy__host_mem_ops_t *host_mem; /* may be NULL */
} convoy__device_component_t;

#endif /* CONVOY_DEVICE_H */
