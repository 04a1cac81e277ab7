/*
 * The CUDA device's events (the event ops of device.h), polled by the progress thread.
 *
 * cudaEventQuery costs the H200 host 1.4-1.7 us (bench/copy_paths' host calls), and the
 * progress thread polls every event it waits for once a pass: in mixed_latency it spent
 * 40% of its time there (doc/results.md, 2026-12-04). So each event also has a flag in
 * mapped pinned host memory, and recording the event enqueues behind it a write of the
 * flag's next count (cuStreamWriteValue32, whose default fences the stream's earlier
 * writes, as __threadfence_system does). A poll reads the flag: a load, no call. The flag
 * says nothing of failures (after a fault the write never runs, and a fault ends the
 * whole context), so while flags are short the device asks CUDA about one of them every
 * FLAG_ASK_NS (looking at the clock every FLAG_POLLS_PER_CLOCK polls of an event), each
 * event at least every FLAG_ASK_EVENT_NS, and an event whose write could not be enqueued
 * is asked every time. CUDA also answers for an event whose flag may never say so: a
 * slot's earlier owner's write still on its way on another stream can land after this
 * event's and leave the flag older. Asking at every 64th poll
 * of each event came to a query every few us with a 64 MiB copy and a ring's events
 * pending.
 *
 * Flags are 64 bytes apart (a line each: the GPU's write to one flag does not evict
 * another's), in pages of cudaHostAlloc memory kept until the device closes. A flag's
 * count only grows, over every event that ever held it: the host keeps in its slot the
 * last count it enqueued, and an event waits for a count above every earlier one. So a
 * write still on its way from an earlier record, of this event or of the slot's
 * earlier owner, on this stream or another, can only ever look older, and a slot is
 * reused as soon as its event is destroyed. The GPU writes nothing but the flags (the
 * free list is in the host's own memory).
 *
 * One thread polls an event at a time (the progress thread: device.h); the slots' free
 * list has a lock, because tests and benchmarks create events from their own threads.
 * cuda_event_flags=0, a runtime older than 12.5, a driver without cuStreamWriteValue32
 * or a GPU that cannot map host memory leave every query to CUDA.
 */
#include "config.h"

#include <stdlib.h>

#include "device/cuda/cuda_dev.h"

#define FLAG_STRIDE 64          /* bytes between two flags: a cache line */
#define FLAG_PAGE 65536         /* bytes of pinned memory taken at a time: 1024 flags */
#define FLAG_ASK_NS 50000 /* ns between two cudaEventQuery calls for short flags, per device:
                            a fault shows within it, at 1.4-1.7 us a query (3% at most) */
#define FLAG_POLLS_PER_CLOCK 64 /* polls of a short flag between two looks at the clock:
                                   a read of it on every poll cost tiny_tasks 0.1-0.3 ms */
#define FLAG_ASK_EVENT_NS 1000000 /* each short event is asked at least this often, whatever
                                     the device's asks: polled in a fixed order, one event
                                     could otherwise find the gate shut at every look */

/* A flag and what the host knows of it. */
struct convoy__cuda_flag_slot {
    struct convoy__cuda_flag_slot *next; /* the free list */
    uint32_t *flag;                      /* in a page: the GPU's writes land here */
    void *flag_dev;                      /* its device pointer */
    uint32_t issued;                     /* the last count enqueued to it, by any event */
};

/* One page of flags and its slots, for the teardown. */
struct convoy__cuda_flag_page {
    struct convoy__cuda_flag_page *next;
    void *host;
    convoy__cuda_flag_slot_t slots[FLAG_PAGE / FLAG_STRIDE];
};

typedef struct convoy__cuda_event {
    cudaEvent_t ev;
    convoy__cuda_flag_slot_t *slot; /* NULL: no flag, CUDA answers every query */
    uint32_t seq;                   /* the count the last armed record's write leaves */
    uint32_t polls;                 /* short-flag polls since the clock was last read */
    uint64_t asked_ns;              /* when CUDA was last asked about it (or it was armed) */
    int armed;                      /* the last record enqueued the flag's write */
} convoy__cuda_event_t;

static convoy__cuda_event_t *event_of(convoy__event_t *e)
{
    return (convoy__cuda_event_t *)(void *)e;
}

/* Say once per device why its events go without flags from now on (or in part). */
static void flags_warn_once(convoy__cuda_dev_t *dev, const char *what, int code)
{
    if (__atomic_exchange_n(&dev->flags_warned, 1, __ATOMIC_RELAXED))
        return;
    convoy__log_warn("%s: %s (%d): some events are polled through cudaEventQuery (1.4-1.7 us "
                     "a poll on the H200 host) instead of their flag",
                     dev->base.name, what, code);
}

/* The device's record comes zeroed (cuda_open): no flags, no pages, nothing counted. */
void convoy__cuda_events_init(convoy__cuda_dev_t *dev, int want_flags)
{
    pthread_mutex_init(&dev->flags_lock, NULL);
    if (!want_flags || !dev->can_map_host)
        return;
#if CUDART_VERSION >= 12050
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t rc = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000,
                                                      cudaEnableDefault, &found);
    if (rc == cudaSuccess && found == cudaDriverEntryPointSuccess && fn != NULL)
        dev->write_flag = (convoy__cuda_write32_fn)fn;
    else
        convoy__log_info("%s: events polled through cudaEventQuery: the driver offers no "
                         "cuStreamWriteValue32 (%s, entry point query result %d)",
                         dev->base.name, cudaGetErrorName(rc), (int)found);
    if (rc != cudaSuccess)
        (void)cudaGetLastError(); /* a runtime error of this call only: not sticky */
#else
    convoy__log_info("%s: events polled through cudaEventQuery: the CUDA runtime is older "
                     "than 12.5",
                     dev->base.name);
#endif
}

void convoy__cuda_events_fini(convoy__cuda_dev_t *dev)
{
    if (dev->write_flag != NULL)
        convoy__log_debug("%s: %llu event polls answered by their flag", dev->base.name,
                          (unsigned long long)dev->flag_answers);
    /* A flag's write may still be on its way (a stream destroyed with work in it, an
     * event reused on another stream): the pages go only once the device is quiet. */
    if (dev->flag_pages != NULL)
        CONVOY_CUDA_CALL(NULL, dev->base.name, cudaDeviceSynchronize());
    for (convoy__cuda_flag_page_t *p = dev->flag_pages, *pn; p != NULL; p = pn) {
        pn = p->next;
        CONVOY_CUDA_CALL(NULL, dev->base.name, cudaFreeHost(p->host));
        free(p);
    }
    dev->flag_pages = NULL;
    pthread_mutex_destroy(&dev->flags_lock);
}

/* A page of slots onto the free list, under the lock; 0 when CUDA or the host has no
 * memory for it (said once). */
static int flags_grow(convoy__cuda_dev_t *dev)
{
    convoy__cuda_flag_page_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        flags_warn_once(dev, "out of host memory for a page of event flags", 0);
        return 0;
    }
    void *dbase = NULL;
    cudaError_t rc =
        cudaHostAlloc(&p->host, FLAG_PAGE, cudaHostAllocMapped | cudaHostAllocPortable);
    if (rc == cudaSuccess)
        rc = cudaHostGetDevicePointer(&dbase, p->host, 0);
    if (rc != cudaSuccess) {
        flags_warn_once(dev, cudaGetErrorName(rc), (int)rc);
        if (p->host != NULL)
            cudaFreeHost(p->host);
        (void)cudaGetLastError(); /* not sticky: a failed allocation or lookup */
        free(p);
        return 0;
    }
    for (int i = FLAG_PAGE / FLAG_STRIDE - 1; i >= 0; i--) {
        convoy__cuda_flag_slot_t *s = &p->slots[i];
        s->flag = (uint32_t *)(void *)((char *)p->host + (size_t)i * FLAG_STRIDE);
        s->flag_dev = (char *)dbase + (size_t)i * FLAG_STRIDE;
        *s->flag = 0;
        s->issued = 0;
        s->next = dev->free_slots;
        dev->free_slots = s;
    }
    p->next = dev->flag_pages;
    dev->flag_pages = p;
    return 1;
}

/* A flag for a new event, or NULL (the event then goes without: never an error). */
static convoy__cuda_flag_slot_t *slot_take(convoy__cuda_dev_t *dev)
{
    pthread_mutex_lock(&dev->flags_lock);
    convoy__cuda_flag_slot_t *s = NULL;
    if (dev->free_slots != NULL || flags_grow(dev)) {
        s = dev->free_slots;
        dev->free_slots = s->next;
    }
    pthread_mutex_unlock(&dev->flags_lock);
    return s;
}

static void slot_put(convoy__cuda_dev_t *dev, convoy__cuda_flag_slot_t *s)
{
    pthread_mutex_lock(&dev->flags_lock);
    s->next = dev->free_slots;
    dev->free_slots = s;
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
    if (dev->write_flag != NULL)
        e->slot = slot_take(dev);
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
    if (e->slot != NULL) /* a write still on its way stays older than the next owner's */
        slot_put(dev, e->slot);
    free(e);
}

/* cudaEventRecord, and behind it the flag's write unless quiet (device.h). A quiet record
 * is cudaEventRecord alone, 0.4 us of the 2.4 us a record with its flag costs the H200
 * host (doc/results.md, 2026-12-04 late); a query of it goes to CUDA, as for an event
 * whose flag's write failed. */
static convoy_status_t event_record(convoy__device_t *d, convoy__event_t *event,
                                    convoy__stream_t *stream, int quiet)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    convoy__cuda_event_t *e = event_of(event);
    e->armed = 0;
    e->polls = 0;
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st == CONVOY_SUCCESS)
        st = CONVOY_CUDA_CALL(d->ctx, d->name, cudaEventRecord(e->ev, convoy__cuda_stream(stream)));
    if (st != CONVOY_SUCCESS || e->slot == NULL || quiet)
        return st;
    convoy__cuda_flag_slot_t *s = e->slot;
    CUresult rc =
        dev->write_flag((CUstream)convoy__cuda_stream(stream), (CUdeviceptr)(uintptr_t)s->flag_dev,
                        s->issued + 1, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (rc == CUDA_SUCCESS) {
        e->seq = ++s->issued;
        e->armed = 1;
        e->asked_ns = convoy__now_ns();
    } else {
        /* The event stands (CUDA answers its queries); the driver's error is not the
         * runtime's last error, so nothing is left to clear. */
        flags_warn_once(dev, "cuStreamWriteValue32 failed", (int)rc);
    }
    return CONVOY_SUCCESS;
}

convoy_status_t convoy__cuda_event_record(convoy__device_t *d, convoy__event_t *event,
                                          convoy__stream_t *stream)
{
    return event_record(d, event, stream, 0);
}

convoy_status_t convoy__cuda_event_record_quiet(convoy__device_t *d, convoy__event_t *event,
                                                convoy__stream_t *stream)
{
    return event_record(d, event, stream, 1);
}

/* Polled often by the progress thread: no cudaSetDevice (an event query does not depend
 * on the current device). NotReady is not an error and leaves the last error alone. */
int convoy__cuda_event_query(convoy__device_t *d, convoy__event_t *event)
{
    convoy__cuda_event_t *e = event_of(event);
    if (e->armed) {
        convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
        uint32_t v = __atomic_load_n(e->slot->flag, __ATOMIC_ACQUIRE);
        if ((int32_t)(v - e->seq) >= 0) {
            dev->flag_answers++;
            return 1;
        }
        if (++e->polls < FLAG_POLLS_PER_CLOCK)
            return 0;
        e->polls = 0;
        uint64_t now = convoy__now_ns();
        if (now - __atomic_load_n(&dev->flag_asked_ns, __ATOMIC_RELAXED) < FLAG_ASK_NS &&
            now - e->asked_ns < FLAG_ASK_EVENT_NS)
            return 0;
        __atomic_store_n(&dev->flag_asked_ns, now, __ATOMIC_RELAXED);
        e->asked_ns = now;
        dev->flag_asks++;
    }
    cudaError_t rc = cudaEventQuery(e->ev);
    if (rc == cudaSuccess)
        return 1;
    if (rc == cudaErrorNotReady)
        return 0;
    return (int)convoy__cuda_check(rc, "cudaEventQuery", d->ctx, d->name);
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
