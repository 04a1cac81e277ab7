/*
 * The CUDA device's events (the event ops of device.h), polled by the progress thread.
 *
 * cudaEventQuery costs the H200 host 1.4-1.7 us (bench/copy_paths' host calls), and the
 * progress thread polls every event it waits for once a pass: in mixed_latency it spent
 * 40% of its time there (doc/results.md, 2026-12-04). So each event also has a flag in
 * mapped pinned host memory, and recording the event enqueues behind it a write of the
 * flag's next value (cuStreamWriteValue32, whose default fences the stream's earlier
 * writes, as __threadfence_system does). A poll reads the flag: a load, no call. The flag
 * says nothing of failures (after a fault the write never runs), so a poll that finds
 * it unset asks CUDA itself every FLAG_POLLS_PER_QUERY polls, and an event whose write
 * could not be enqueued is asked every time.
 *
 * Flags are 64 bytes apart (a line each: the GPU's write to one event's flag does not
 * evict another's), carved from pages of cudaHostAlloc memory kept until the device
 * closes, and reused through a free list. cuda_event_flags=off, or a driver without
 * cuStreamWriteValue32, leaves every query to CUDA.
 */
#include "config.h"

#include <stdlib.h>

#include <cuda.h>

#include "device/cuda/cuda_dev.h"

#define FLAG_STRIDE 64          /* bytes between two flags: a cache line */
#define FLAG_PAGE 4096          /* bytes of pinned memory taken at a time */
#define FLAG_POLLS_PER_QUERY 64 /* unset flag polls between two cudaEventQuery calls */

typedef CUresult (*write32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                               unsigned int flags);

/* One page of flags, for the teardown. */
struct convoy__cuda_flag_page {
    struct convoy__cuda_flag_page *next;
    void *host;
};

/* A free flag: its slot holds the next free one's address. */
typedef struct free_flag {
    struct free_flag *next;
} free_flag_t;

typedef struct convoy__cuda_event {
    cudaEvent_t ev;
    uint32_t *flag; /* NULL: no flag, CUDA answers every query */
    void *flag_dev; /* its device pointer */
    uint32_t seq;   /* the value the last armed record's write leaves */
    uint32_t polls; /* unset flag polls since CUDA was last asked */
    int armed;      /* the last record enqueued the flag's write */
} convoy__cuda_event_t;

static convoy__cuda_event_t *event_of(convoy__event_t *e)
{
    return (convoy__cuda_event_t *)(void *)e;
}

convoy_status_t convoy__cuda_events_init(convoy__cuda_dev_t *dev, int want_flags)
{
    pthread_mutex_init(&dev->flags_lock, NULL);
    dev->flag_pages = NULL;
    dev->free_flags = NULL;
    dev->write_flag = NULL;
    dev->flags_unlanded = 0;
    if (!want_flags || !dev->can_map_host)
        return CONVOY_SUCCESS;
#if CUDART_VERSION >= 12050
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t rc = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000,
                                                      cudaEnableDefault, &found);
    if (rc == cudaSuccess && found == cudaDriverEntryPointSuccess && fn != NULL)
        dev->write_flag = fn;
    else
        convoy__log_info("%s: events polled through CUDA: cuStreamWriteValue32 not found (%s)",
                         dev->base.name, cudaGetErrorName(rc));
    if (rc != cudaSuccess)
        (void)cudaGetLastError();
#else
    convoy__log_info("%s: events polled through CUDA: the runtime is older than 12.5",
                     dev->base.name);
#endif
    return CONVOY_SUCCESS;
}

void convoy__cuda_events_fini(convoy__cuda_dev_t *dev)
{
    /* Writes of destroyed events still on their way must land before the pages go. */
    if (dev->flags_unlanded > 0 && dev->flag_pages != NULL)
        CONVOY_CUDA_CALL(NULL, dev->base.name, cudaDeviceSynchronize());
    for (struct convoy__cuda_flag_page *p = dev->flag_pages, *pn; p != NULL; p = pn) {
        pn = p->next;
        CONVOY_CUDA_CALL(NULL, dev->base.name, cudaFreeHost(p->host));
        free(p);
    }
    dev->flag_pages = NULL;
    pthread_mutex_destroy(&dev->flags_lock);
}

/* A flag for a new event, or NULL (the event then goes without: never an error). */
static uint32_t *flag_take(convoy__cuda_dev_t *dev)
{
    pthread_mutex_lock(&dev->flags_lock);
    if (dev->free_flags == NULL) {
        struct convoy__cuda_flag_page *p = calloc(1, sizeof(*p));
        void *host = NULL;
        if (p != NULL &&
            cudaHostAlloc(&host, FLAG_PAGE, cudaHostAllocMapped | cudaHostAllocPortable) ==
                cudaSuccess) {
            p->host = host;
            p->next = dev->flag_pages;
            dev->flag_pages = p;
            for (size_t off = FLAG_PAGE; off >= FLAG_STRIDE; off -= FLAG_STRIDE) {
                free_flag_t *f = (free_flag_t *)(void *)((char *)host + off - FLAG_STRIDE);
                f->next = dev->free_flags;
                dev->free_flags = f;
            }
        } else {
            free(p);
            (void)cudaGetLastError();
        }
    }
    free_flag_t *f = dev->free_flags;
    if (f != NULL)
        dev->free_flags = f->next;
    pthread_mutex_unlock(&dev->flags_lock);
    return (uint32_t *)(void *)f;
}

static void flag_put(convoy__cuda_dev_t *dev, uint32_t *flag)
{
    free_flag_t *f = (free_flag_t *)(void *)flag;
    pthread_mutex_lock(&dev->flags_lock);
    f->next = dev->free_flags;
    dev->free_flags = f;
    pthread_mutex_unlock(&dev->flags_lock);
}

convoy_status_t convoy__cuda_event_create(convoy__device_t *d, convoy__event_t **event_p)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    convoy__cuda_event_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for an event",
                             d->name);
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st == CONVOY_SUCCESS)
        st = CONVOY_CUDA_CALL(d->ctx, d->name,
                              cudaEventCreateWithFlags(&e->ev, cudaEventDisableTiming));
    if (st != CONVOY_SUCCESS) {
        free(e);
        return st;
    }
    if (dev->write_flag != NULL && (e->flag = flag_take(dev)) != NULL) {
        *e->flag = 0;
        if (cudaHostGetDevicePointer(&e->flag_dev, e->flag, 0) != cudaSuccess) {
            (void)cudaGetLastError();
            flag_put(dev, e->flag);
            e->flag = NULL;
        }
    }
    *event_p = (convoy__event_t *)(void *)e;
    return CONVOY_SUCCESS;
}

void convoy__cuda_event_destroy(convoy__device_t *d, convoy__event_t *event)
{
    if (event == NULL)
        return;
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    convoy__cuda_event_t *e = event_of(event);
    if (convoy__cuda_enter(dev) == CONVOY_SUCCESS)
        CONVOY_CUDA_CALL(d->ctx, d->name, cudaEventDestroy(e->ev));
    /* A write still on its way would land in the slot's next owner: such a slot is kept
     * out of use until the device closes. */
    if (e->flag != NULL) {
        if (!e->armed || (int32_t)(__atomic_load_n(e->flag, __ATOMIC_ACQUIRE) - e->seq) >= 0)
            flag_put(dev, e->flag);
        else
            __atomic_fetch_add(&dev->flags_unlanded, 1, __ATOMIC_RELAXED);
    }
    free(e);
}

convoy_status_t convoy__cuda_event_record(convoy__device_t *d, convoy__event_t *event,
                                          convoy__stream_t *stream)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    convoy__cuda_event_t *e = event_of(event);
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st == CONVOY_SUCCESS)
        st = CONVOY_CUDA_CALL(d->ctx, d->name, cudaEventRecord(e->ev, convoy__cuda_stream(stream)));
    e->armed = 0;
    e->polls = 0;
    if (st != CONVOY_SUCCESS || e->flag == NULL)
        return st;
    write32_fn write = (write32_fn)dev->write_flag;
    if (write((CUstream)convoy__cuda_stream(stream), (CUdeviceptr)(uintptr_t)e->flag_dev,
              e->seq + 1, CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS) {
        e->seq++;
        e->armed = 1;
    } else {
        (void)cudaGetLastError(); /* the runtime's copy of a driver error, if any */
    }
    return CONVOY_SUCCESS;
}

/* Polled often by the progress thread: no cudaSetDevice (an event query does not depend
 * on the current device). NotReady is not an error and leaves the last error alone. */
int convoy__cuda_event_query(convoy__device_t *d, convoy__event_t *event)
{
    convoy__cuda_event_t *e = event_of(event);
    if (e->armed) {
        uint32_t v = __atomic_load_n(e->flag, __ATOMIC_ACQUIRE);
        if ((int32_t)(v - e->seq) >= 0)
            return 1;
        if (++e->polls < FLAG_POLLS_PER_QUERY)
            return 0;
        e->polls = 0;
    }
    cudaError_t rc = cudaEventQuery(e->ev);
    if (rc == cudaSuccess)
        return 1;
    if (rc == cudaErrorNotReady)
        return 0;
    return (int)CONVOY_CUDA_CALL(d->ctx, d->name, rc);
}

convoy_status_t convoy__cuda_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                               convoy__event_t *event)
{
    convoy_status_t st = convoy__cuda_enter(convoy__cuda_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_CUDA_CALL(
        d->ctx, d->name, cudaStreamWaitEvent(convoy__cuda_stream(stream), event_of(event)->ev, 0));
}
