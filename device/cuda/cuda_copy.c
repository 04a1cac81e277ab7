/*
 * Copies on a CUDA device: memcpy, and memcpy_multi with its three methods and the
 * automatic choice between them (device.h, DESIGN.md "memcpy_multi: the contract").
 *
 *   loop    one cudaMemcpyAsync per copy; on failure at copy j, j copies were enqueued.
 *   engine  one cudaMemcpyBatchAsync (CUDA 12.8 and later) per cuda_engine_max_copies
 *           copies: the copy engines carry the submission for a host call or a few.
 *   sm      one kernel (cuda_copy_kernel.cu) reading descriptors from a ring of mapped
 *           pinned host memory (or, with cuda_sm_desc=device, from a device copy of the
 *           ring's slots made just before the launch on the same stream); every host side
 *           must be pinned and mapped.
 *
 * The SM descriptor ring: each SM submission takes a contiguous run of slots, writes its
 * descriptors there, launches the kernel, and records an event behind it; the slots are
 * reused only once that event has completed (a FIFO of in-flight submissions, checked
 * oldest first, waited for only when the ring or the FIFO is full). Whatever was
 * enqueued that reads the slots (the descriptor upload, the kernel) is behind the event
 * before the slots are released: a submission that fails after enqueueing a reader waits
 * for its stream instead of handing the slots back.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_dev.h"

#define SM_SUBS 128 /* SM submissions in flight per device; the 129th waits for the oldest */

static const char *const dir_names[3] = {"H2D", "D2H", "D2D"};

static enum cudaMemcpyKind kind_of(int dir)
{
    return dir == CONVOY__H2D   ? cudaMemcpyHostToDevice
           : dir == CONVOY__D2H ? cudaMemcpyDeviceToHost
                                : cudaMemcpyDeviceToDevice;
}

static int has_method(const convoy__cuda_dev_t *dev, int method)
{
    return (dev->base.methods >> method) & 1u;
}

/* The SM submission k places after the oldest. */
static convoy__cuda_sm_sub_t *sub_at(convoy__cuda_dev_t *dev, int k)
{
    return &dev->subs[(dev->subs_first + k) % dev->subs_cap];
}

/* ---- set-up ------------------------------------------------------------------------ */

convoy_status_t convoy__cuda_copy_init(convoy__cuda_dev_t *dev)
{
    convoy__device_t *b = &dev->base;
    convoy_status_t st;
    pthread_mutex_init(&dev->copy_lock, NULL);
    if (!has_method(dev, CONVOY__METHOD_SM))
        return CONVOY_SUCCESS;
    size_t ring_bytes = (size_t)dev->ring_slots * sizeof(convoy__cuda_desc_t);
    void *ring = NULL;
    st = CONVOY_CUDA_CALL(
        b->ctx, b->name,
        cudaHostAlloc(&ring, ring_bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    if (st != CONVOY_SUCCESS)
        return st;
    dev->ring = ring;
    st = CONVOY_CUDA_CALL(b->ctx, b->name, cudaHostGetDevicePointer(&dev->ring_dev, ring, 0));
    if (st != CONVOY_SUCCESS)
        return st;
    if (dev->sm_desc_device) {
        st = CONVOY_CUDA_CALL(b->ctx, b->name, cudaMalloc(&dev->ring_devmem, ring_bytes));
        if (st != CONVOY_SUCCESS)
            return st;
    }
    dev->subs = convoy__calloc(b->ctx, SM_SUBS, sizeof(*dev->subs), "SM submission records");
    if (dev->subs == NULL)
        return CONVOY_ERR_NOMEM;
    for (int i = 0; i < SM_SUBS; i++) {
        st = CONVOY_CUDA_CALL(b->ctx, b->name,
                              cudaEventCreateWithFlags(&dev->subs[i].ev, cudaEventDisableTiming));
        if (st != CONVOY_SUCCESS)
            return st;
        dev->subs_cap = i + 1; /* what fini destroys */
    }
    return CONVOY_SUCCESS;
}

/* Frees what copy_init made, also after a partial init. The streams are gone (the
 * pipeline destroys them first), so the SM kernels have finished or will without us. */
void convoy__cuda_copy_fini(convoy__cuda_dev_t *dev)
{
    const char *name = dev->base.name;
    /* Wait for kernels that may still read the ring before freeing it (they may finish
     * in any order: they ran on different streams). */
    for (int k = 0; k < dev->subs_count; k++)
        CONVOY_CUDA_CALL(NULL, name, cudaEventSynchronize(sub_at(dev, k)->ev));
    for (int i = 0; i < dev->subs_cap; i++)
        CONVOY_CUDA_CALL(NULL, name, cudaEventDestroy(dev->subs[i].ev));
    free(dev->subs);
    if (dev->ring != NULL)
        CONVOY_CUDA_CALL(NULL, name, cudaFreeHost(dev->ring));
    if (dev->ring_devmem != NULL)
        CONVOY_CUDA_CALL(NULL, name, cudaFree(dev->ring_devmem));
    convoy__copyargs_fini(&dev->eng);
    pthread_mutex_destroy(&dev->copy_lock);
}

/* ---- messages ---------------------------------------------------------------------- */

/* Re-record the message of a failed CUDA call with the copy it concerned. */
static convoy_status_t annotate(convoy__cuda_dev_t *dev, convoy_status_t st, const char *method,
                                int i, int n, const convoy__copy_t *c)
{
    char msg[640];
    snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
    if (c == NULL)
        return convoy__error(dev->base.ctx, st, "%s [memcpy_multi %s of %d copies]", msg, method,
                             n);
    return convoy__error(dev->base.ctx, st, "%s [memcpy_multi %s, copy %d of %d: %s of %zu bytes]",
                         msg, method, i, n, dir_names[c->dir], c->bytes);
}

/* ---- loop -------------------------------------------------------------------------- */

static convoy_status_t copy_loop(convoy__cuda_dev_t *dev, cudaStream_t s,
                                 const convoy__copy_t *copies, int n, int *done_p)
{
    convoy__device_t *b = &dev->base;
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        convoy_status_t st = CONVOY_CUDA_CALL(
            b->ctx, b->name, cudaMemcpyAsync(c->dst, c->src, c->bytes, kind_of(c->dir), s));
        if (st != CONVOY_SUCCESS) {
            *done_p = i; /* exact: cudaMemcpyAsync enqueues all or nothing */
            return n > 1 ? annotate(dev, st, "loop", i, n, c) : st;
        }
    }
    *done_p = n;
    return CONVOY_SUCCESS;
}

/* ---- engine ------------------------------------------------------------------------ */

#if CONVOY_HAVE_CUDA_BATCH
/* One cudaMemcpyBatchAsync over copies[0..n): *done_p copies enqueued (0, or what 12.x's
 * failIdx names, on failure). */
static convoy_status_t engine_call(convoy__cuda_dev_t *dev, cudaStream_t s,
                                   const convoy__copy_t *copies, int n, int *done_p)
{
    convoy__device_t *b = &dev->base;
    *done_p = 0;
    convoy_status_t st = convoy__copyargs_set(&dev->eng, b, copies, n);
    if (st != CONVOY_SUCCESS)
        return st;
    /* One attribute for every copy: sources are read in stream order (the copies wait
     * for the work before them, as any stream operation). The overlap flag is only a
     * hint to the driver (cuda_engine_overlap). */
    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.flags = dev->engine_overlap ? cudaMemcpyFlagPreferOverlapWithCompute : 0;
    size_t attr_idx = 0;
#if CUDART_VERSION >= 13000
    /*
     * 13.x has no failIdx and, on failure, may already have enqueued (and run) a prefix
     * of the batch (measured: "good, oversize" ran copy 0). We report 0 enqueued, so the
     * pipeline re-issues every copy of this call one at a time; copying the same bytes
     * again is harmless, because no two copies of a submission touch the same bytes and
     * their sources do not change while they are in flight.
     */
    st = CONVOY_CUDA_CALL(b->ctx, b->name,
                          cudaMemcpyBatchAsync(dev->eng.dsts, dev->eng.srcs, dev->eng.sizes,
                                               (size_t)n, &attr, &attr_idx, 1, s));
    if (st == CONVOY_SUCCESS)
        *done_p = n;
#else
    /* 12.8/12.9: failIdx names the failing copy (SIZE_MAX: none in particular); the
     * copies before it are enqueued. The arrays' constness differs between 12.8 and
     * 12.9, hence the conversions through void *. */
    size_t fail_idx = SIZE_MAX;
    st = CONVOY_CUDA_CALL(b->ctx, b->name,
                          cudaMemcpyBatchAsync((void *)dev->eng.dsts, (void *)dev->eng.srcs,
                                               (void *)dev->eng.sizes, (size_t)n, &attr, &attr_idx,
                                               1, &fail_idx, s));
    if (st == CONVOY_SUCCESS)
        *done_p = n;
    else if (fail_idx < (size_t)n)
        *done_p = (int)fail_idx;
#endif
    return st;
}

/* The engine method: one batch call per cuda_engine_max_copies copies (PHYSICS.md s1:
 * the copy engines gain nothing past ~512 entries, and 2048-entry batches were slower
 * than 512-entry ones), so that a submission planned for the SM kernel's larger optimum
 * still reaches the engines at theirs. On failure the calls before the failing one are
 * enqueued, and *done_p counts them (plus what 12.x's failIdx names). */
static convoy_status_t copy_engine(convoy__cuda_dev_t *dev, cudaStream_t s,
                                   const convoy__copy_t *copies, int n, int *done_p)
{
    *done_p = 0;
    for (int first = 0; first < n;) {
        int k = CONVOY__MIN(n - first, dev->engine_max_copies), done = 0;
        convoy_status_t st = engine_call(dev, s, copies + first, k, &done);
        *done_p = first + done;
        if (st == CONVOY_ERR_NOMEM)
            return st;
        if (st != CONVOY_SUCCESS)
            return annotate(dev, st, "engine", -1, n, NULL);
        first += k;
    }
    return CONVOY_SUCCESS;
}
#endif /* CONVOY_HAVE_CUDA_BATCH */

/* ---- sm ---------------------------------------------------------------------------- */

/* Is the submission at position k over? 1: yes (marked done), 0: not yet, -1: CUDA
 * failed (*st_p says how). */
static int sub_over(convoy__cuda_dev_t *dev, int k, convoy_status_t *st_p)
{
    convoy__cuda_sm_sub_t *sub = sub_at(dev, k);
    if (sub->done)
        return 1;
    cudaError_t rc = cudaEventQuery(sub->ev);
    dev->subs_queries++;
    if (rc == cudaErrorNotReady)
        return 0;
    *st_p = convoy__cuda_check(rc, "cudaEventQuery (SM ring)", dev->base.ctx, dev->base.name);
    if (*st_p != CONVOY_SUCCESS)
        return -1; /* the kernel failed: the context is gone, keep its slots */
    sub->done = 1;
    return 1;
}

/*
 * Mark the completed submissions done, asking CUDA as little as it can: a stream runs in
 * order, so once a submission's event has completed, so have those before it on its
 * stream. For each stream: its newest submission not known done; if that is still
 * running, its oldest; if that is over, a binary search for the last one over. The ring
 * is reclaimed when full, mostly of completed submissions: asking each event in turn
 * took up to 128 queries of 1.4-1.7 us at once (perf of mixed_latency on the H200 host,
 * doc/results.md, 2026-12-04 evening); now it takes one a stream, and at most 2 + log2
 * of its submissions for a stream still at work. The submissions of a destroyed stream
 * (stream NULL) are asked one by one.
 */
static convoy_status_t ring_settle(convoy__cuda_dev_t *dev)
{
    int pos[SM_SUBS];                /* one stream's submissions not known done, oldest first */
    unsigned char taken[SM_SUBS] = {0}; /* position already in a stream's group */
    convoy_status_t st = CONVOY_SUCCESS;
    for (int first = 0; first < dev->subs_count; first++) {
        if (taken[first] || sub_at(dev, first)->done)
            continue;
        cudaStream_t s = sub_at(dev, first)->stream;
        int n = 0;
        for (int k = first; k < dev->subs_count && (k == first || s != NULL); k++) {
            const convoy__cuda_sm_sub_t *sub = sub_at(dev, k);
            if (!taken[k] && !sub->done && sub->stream == s) {
                taken[k] = 1;
                pos[n++] = k;
            }
        }
        int over = -1; /* pos[0..over] are over */
        int r = sub_over(dev, pos[n - 1], &st);
        if (r == 1)
            over = n - 1;
        else if (r == 0 && n > 1 && (r = sub_over(dev, pos[0], &st)) == 1) {
            int lo = 0, hi = n - 1; /* pos[lo] over, pos[hi] not */
            while (hi - lo > 1 && r >= 0) {
                int mid = lo + (hi - lo) / 2;
                r = sub_over(dev, pos[mid], &st);
                *(r == 1 ? &lo : &hi) = mid;
            }
            over = lo;
        }
        if (r < 0)
            return st;
        for (int i = 0; i <= over; i++)
            sub_at(dev, pos[i])->done = 1;
    }
    return st;
}

/* Retire completed SM submissions, oldest first; with wait_oldest, wait for the oldest
 * first. */
static convoy_status_t ring_reclaim(convoy__cuda_dev_t *dev, int wait_oldest)
{
    convoy__cuda_sm_sub_t *oldest = dev->subs_count > 0 ? sub_at(dev, 0) : NULL;
    if (wait_oldest && oldest != NULL && !oldest->done) {
        dev->subs_queries++;
        convoy_status_t st =
            convoy__cuda_check(cudaEventSynchronize(oldest->ev), "cudaEventSynchronize (SM ring)",
                               dev->base.ctx, dev->base.name);
        if (st != CONVOY_SUCCESS)
            return st;
        oldest->done = 1;
    }
    convoy_status_t st = ring_settle(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    while (dev->subs_count > 0 && sub_at(dev, 0)->done) {
        dev->ring_used -= sub_at(dev, 0)->span;
        dev->subs_first = (dev->subs_first + 1) % dev->subs_cap;
        dev->subs_count--;
    }
    if (dev->subs_count == 0)
        dev->ring_head = 0; /* nothing in flight: start over at the bottom */
    return CONVOY_SUCCESS;
}

void convoy__cuda_copy_forget_stream(convoy__cuda_dev_t *dev, cudaStream_t s)
{
    pthread_mutex_lock(&dev->copy_lock);
    for (int k = 0; k < dev->subs_count; k++)
        if (sub_at(dev, k)->stream == s)
            sub_at(dev, k)->stream = NULL;
    pthread_mutex_unlock(&dev->copy_lock);
}

/* k (1..ring_slots) contiguous free slots: *slot_p is the first, *span_p what the
 * submission holds (k plus the ring's tail when it had to skip to the bottom). Completed
 * submissions are retired only when the room is short: an event query costs 1.4-1.6 us
 * on the H200 host (bench/copy_paths' host calls, doc/results.md), a tenth of a 512-copy
 * submission's host time. */
static convoy_status_t ring_reserve(convoy__cuda_dev_t *dev, int k, int *slot_p, int *span_p)
{
    convoy_status_t st = CONVOY_SUCCESS;
    for (int polled = 0;; polled = 1) {
        if (st != CONVOY_SUCCESS)
            return st;
        int skip = k > dev->ring_slots - dev->ring_head ? dev->ring_slots - dev->ring_head : 0;
        if (dev->subs_count < dev->subs_cap && skip + k <= dev->ring_slots - dev->ring_used) {
            *slot_p = skip ? 0 : dev->ring_head;
            *span_p = skip + k;
            return CONVOY_SUCCESS;
        }
        if (dev->subs_count == 0) /* cannot happen: an empty ring starts at slot 0 */
            return convoy__error(dev->base.ctx, CONVOY_ERR_DEVICE,
                                 "%s: SM descriptor ring: %d slots asked, head %d, %d used of %d "
                                 "with nothing in flight",
                                 dev->base.name, k, dev->ring_head, dev->ring_used,
                                 dev->ring_slots);
        st = ring_reclaim(dev, polled); /* first what is over, then wait for the oldest */
    }
}

/* Make the slots of a launched submission on stream s wait for its event. */
static void ring_commit(convoy__cuda_dev_t *dev, int slot, int k, int span, cudaStream_t s)
{
    convoy__cuda_sm_sub_t *sub = sub_at(dev, dev->subs_count);
    sub->span = span;
    sub->stream = s;
    sub->done = 0;
    dev->subs_count++;
    dev->ring_used += span;
    dev->ring_head = (slot + k) % dev->ring_slots;
}

/*
 * What the SM kernel may touch: only memory whose bounds convoy knows, so that a kernel
 * can never fault (a fault on the device ends the CUDA context for the whole process):
 * device sides in this device's pool, host sides in convoy's pinned slabs (mapped; the
 * descriptor gets their device pointer). Pinned memory the program registered itself,
 * and memory of other devices, go by another method.
 */
enum {
    SM_OK = 0,
    SM_HOST = 1,   /* a host side outside convoy's slabs: carried by another method */
    SM_DEVICE = 2, /* a device side outside this device's pool */
};

/* What a submission's description reads, under the slab and pool locks: the slabs'
 * and the pool's arenas, and the slab and pool chunk of the last hits, tried first (a
 * submission's sides mostly share them; the arenas' search otherwise, the same answer as
 * convoy__devpool_contains_locked). All of it inlined into one loop: with the slab lookup
 * a call into hostslab.c, a 512-copy description took 4.2-5.3 us on the H200 host, and
 * 2.3-2.5 us inlined (doc/results.md, 2026-12-04 afternoon). */
typedef struct sm_where {
    const convoy__arena_t *slabs, *pool;
    const convoy__arena_region_t *host, *chunk;
} sm_where_t;

/* 1 when [p, p + bytes) lies in the pool. */
static inline int in_pool(sm_where_t *w, const void *p, size_t bytes)
{
    return convoy__arena_find_hinted(w->pool, p, bytes, &w->chunk) != NULL;
}

/* Fill d from c, or say why the kernel may not carry c. */
static inline int sm_describe(sm_where_t *w, const convoy__copy_t *c, convoy__cuda_desc_t *d)
{
    void *src = (void *)c->src, *dst = c->dst;
    switch (c->dir) {
    case CONVOY__H2D:
        if (!convoy__hostslab_map_locked(w->slabs, c->src, c->bytes, &src, &w->host))
            return SM_HOST;
        if (!in_pool(w, c->dst, c->bytes))
            return SM_DEVICE;
        break;
    case CONVOY__D2H:
        if (!convoy__hostslab_map_locked(w->slabs, c->dst, c->bytes, &dst, &w->host))
            return SM_HOST;
        if (!in_pool(w, c->src, c->bytes))
            return SM_DEVICE;
        break;
    default:
        if (!in_pool(w, c->src, c->bytes) || !in_pool(w, c->dst, c->bytes))
            return SM_DEVICE;
        break;
    }
    if (d != NULL) {
        d->src = (uint64_t)(uintptr_t)src;
        d->dst = (uint64_t)(uintptr_t)dst;
        d->bytes = c->bytes;
        d->pad = 0;
    }
    return SM_OK;
}

/* sm_describe over copies[0..n) into d (NULL: check only); the first failing index in
 * *bad_p and its reason, or SM_OK; *max_bytes_p the largest copy. */
static int sm_describe_all(convoy__cuda_dev_t *dev, const convoy__copy_t *copies, int n,
                           convoy__cuda_desc_t *d, int *bad_p, size_t *max_bytes_p)
{
    int why = SM_OK, j = 0;
    size_t max_bytes = 0;
    sm_where_t w = {.slabs = convoy__hostslab_lock(dev->hostmem)};
    pthread_mutex_lock(&dev->pool.lock);
    w.pool = dev->pool.arena;
    for (; j < n; j++) {
        if ((why = sm_describe(&w, &copies[j], d != NULL ? &d[j] : NULL)) != SM_OK)
            break;
        max_bytes = CONVOY__MAX(max_bytes, copies[j].bytes);
    }
    pthread_mutex_unlock(&dev->pool.lock);
    convoy__hostslab_unlock(dev->hostmem);
    *bad_p = why != SM_OK ? j : n - 1;
    *max_bytes_p = max_bytes;
    return why;
}

/*
 * The SM method: all or nothing. When a host side is not flagged pinned or lies outside
 * convoy's slabs (SM_HOST), or, unless strict, a device side lies outside the pool
 * (SM_DEVICE), *fallback_p is set and nothing is enqueued: the caller picks another
 * method. With strict (sm forced), a device side outside the pool is CONVOY_ERR_INVALID
 * naming the copy, nothing enqueued. Otherwise one launch carries the submission (n >
 * ring_slots, which auto never chooses, takes several after checking every copy first).
 * *done_p: copies enqueued.
 */
static convoy_status_t copy_sm(convoy__cuda_dev_t *dev, cudaStream_t s,
                               const convoy__copy_t *copies, int n,
                               const convoy__copy_summary_t *sum, int strict, int *done_p,
                               int *fallback_p)
{
    convoy__device_t *b = &dev->base;
    *done_p = 0;
    *fallback_p = 0;
    if (strict && sum->pageable > 0) { /* auto chose sm only for all pinned */
        *fallback_p = 1;
        return CONVOY_SUCCESS;
    }
    int bad = -1, why;
    size_t max_bytes;
    if (n > dev->ring_slots &&
        (why = sm_describe_all(dev, copies, n, NULL, &bad, &max_bytes)) != SM_OK)
        goto refuse;
    for (int first = 0; first < n;) {
        int k = CONVOY__MIN(n - first, dev->ring_slots);
        int slot = 0, span = 0;
        convoy_status_t st = ring_reserve(dev, k, &slot, &span);
        if (st != CONVOY_SUCCESS)
            return annotate(dev, st, "sm", -1, n, NULL);
        why = sm_describe_all(dev, copies + first, k, dev->ring + slot, &bad, &max_bytes);
        if (why != SM_OK) { /* only when first == 0: later chunks were checked */
            bad += first;
            goto refuse;
        }
        size_t parts = (max_bytes + dev->sm_block_bytes - 1) / dev->sm_block_bytes;
        int bpc = (int)CONVOY__MAX((size_t)1,
                                   CONVOY__MIN(parts, (size_t)CONVOY__CUDA_MAX_BLOCKS_PER_COPY));
        /* The descriptors are plain stores to host memory: make them globally visible
         * before the launch (or the upload) lets the GPU read them. */
        atomic_thread_fence(memory_order_seq_cst);
        const convoy__cuda_desc_t *desc = (const convoy__cuda_desc_t *)dev->ring_dev + slot;
        int reader = 0; /* something enqueued reads the slots */
        if (dev->ring_devmem != NULL) {
            /* cuda_sm_desc=device: the kernel reads a device copy of its slots, so that
             * no block waits a link round trip for its descriptor. */
            convoy__cuda_desc_t *ddesc = (convoy__cuda_desc_t *)dev->ring_devmem + slot;
            st = CONVOY_CUDA_CALL(b->ctx, b->name,
                                  cudaMemcpyAsync(ddesc, dev->ring + slot,
                                                  (size_t)k * sizeof(convoy__cuda_desc_t),
                                                  cudaMemcpyHostToDevice, s));
            if (st != CONVOY_SUCCESS)
                return annotate(dev, st, "sm", -1, n, NULL);
            desc = ddesc;
            reader = 1;
        }
        st = CONVOY_CUDA_CALL(b->ctx, b->name,
                              convoy__cuda_launch_copy_kernel(desc, k, dev->sm_threads, bpc, s));
        convoy_status_t launched = st;
        char launch_msg[640] = "";
        if (st == CONVOY_SUCCESS)
            reader = 1;
        else
            snprintf(launch_msg, sizeof(launch_msg), "%s", convoy_last_error(NULL));
        if (reader) {
            st = CONVOY_CUDA_CALL(b->ctx, b->name,
                                  cudaEventRecord(sub_at(dev, dev->subs_count)->ev, s));
            if (st != CONVOY_SUCCESS) {
                /* Nothing would tell when the slots are free again: wait here instead. */
                char msg[640];
                snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
                convoy_status_t sync = CONVOY_CUDA_CALL(b->ctx, b->name, cudaStreamSynchronize(s));
                if (sync != CONVOY_SUCCESS)
                    return annotate(dev, sync, "sm", -1, n, NULL); /* slots stay held */
                convoy__log_warn("%s: %s; waited for the SM copy kernel instead", b->name, msg);
            } else {
                ring_commit(dev, slot, k, span, s);
            }
        }
        if (launched != CONVOY_SUCCESS) {
            convoy__error(b->ctx, launched, "%s", launch_msg); /* not the event's */
            return annotate(dev, launched, "sm", -1, n, NULL);
        }
        first += k;
        *done_p = first;
    }
    return CONVOY_SUCCESS;

refuse:
    if (why == SM_HOST || !strict) {
        *fallback_p = 1;
        return CONVOY_SUCCESS;
    }
    const convoy__copy_t *c = &copies[bad];
    return convoy__error(b->ctx, CONVOY_ERR_INVALID,
                         "%s: memcpy_multi sm: copy %d (%s, dst %p, src %p, %zu bytes): its "
                         "device side is not in %s's memory pool, so the copy kernel may not "
                         "touch it; nothing enqueued",
                         b->name, bad, dir_names[c->dir], c->dst, (const void *)c->src, c->bytes,
                         b->name);
}

/* ---- the ops ----------------------------------------------------------------------- */

/* The method without the SM kernel (PHYSICS.md s2): batching pageable device-to-host
 * copies is 2.5-4x slower than one call each (0.20-0.39 vs 0.85-1.0 GB/s for 8 KiB), so
 * a submission with one goes by loop; batching pageable host-to-device copies gains
 * (3.4-3.7 vs 2.5 GB/s), and pinned copies gain more: the rest go by the batch call
 * where the runtime has it. */
static int fallback_method(const convoy__cuda_dev_t *dev, const convoy__copy_summary_t *sum)
{
    if (sum->pageable_d2h > 0)
        return CONVOY__METHOD_LOOP;
    return has_method(dev, CONVOY__METHOD_ENGINE) ? CONVOY__METHOD_ENGINE : CONVOY__METHOD_LOOP;
}

/*
 * auto: host memory not all pinned as fallback_method says; else the SM kernel when the mean
 * copy is at most cuda_sm_max_bytes and there are at least cuda_sm_min_copies copies
 * (PHYSICS.md s1: 45-51 GB/s for 8-64 KiB chunks against 8-13 GB/s for the batched
 * engines; from 1 MiB the engines are as good and leave the SMs free); else the batched
 * engines where the runtime has them. A single copy goes alone (loop): one call either
 * way, and the per-copy call reports failure exactly.
 */
static int auto_method(const convoy__cuda_dev_t *dev, int n, const convoy__copy_summary_t *sum)
{
    if (sum->pageable > 0)
        return fallback_method(dev, sum);
    if (n == 1)
        return CONVOY__METHOD_LOOP;
    if (has_method(dev, CONVOY__METHOD_SM) && n >= dev->sm_min_copies && n <= dev->ring_slots &&
        sum->bytes / (size_t)n <= dev->sm_max_bytes)
        return CONVOY__METHOD_SM;
    return has_method(dev, CONVOY__METHOD_ENGINE) ? CONVOY__METHOD_ENGINE : CONVOY__METHOD_LOOP;
}

static convoy_status_t run_method(convoy__cuda_dev_t *dev, cudaStream_t s,
                                  const convoy__copy_t *copies, int n, int method, int *done_p)
{
#if CONVOY_HAVE_CUDA_BATCH
    if (method == CONVOY__METHOD_ENGINE)
        return copy_engine(dev, s, copies, n, done_p);
#else
    (void)method; /* engine is never offered */
#endif
    return copy_loop(dev, s, copies, n, done_p);
}

convoy_status_t convoy__cuda_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                    const convoy__copy_t *copy)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    convoy_status_t st = convoy__copyargs_check(d, "memcpy", stream, copy, 1);
    if (st == CONVOY_SUCCESS)
        st = convoy__cuda_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    nvtxRangePushA(convoy__cuda_stage_name(copy));
    st = CONVOY_CUDA_CALL(d->ctx, d->name,
                          cudaMemcpyAsync(copy->dst, copy->src, copy->bytes, kind_of(copy->dir),
                                          convoy__cuda_stream(stream)));
    nvtxRangePop();
    return st;
}

/* See device.h. *submitted_p is set in every case: n on success, 0 on a validation
 * error. A forced sm whose host sides the kernel may not touch (not flagged pinned, or
 * outside convoy's slabs) is carried by fallback_method, and *method_p says which method
 * that was; a forced sm with a device side outside the pool is CONVOY_ERR_INVALID. */
convoy_status_t convoy__cuda_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                          const convoy__copy_t *copies, int n, int method,
                                          int *submitted_p, int *method_p)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    int done = 0;
    if (submitted_p != NULL)
        *submitted_p = 0;
    convoy__copy_summary_t sum;
    convoy_status_t st = convoy__copyargs_scan(d, "memcpy_multi", stream, copies, n, &sum);
    if (st == CONVOY_SUCCESS && method >= 0 &&
        (method >= CONVOY__METHOD_COUNT || !has_method(dev, method)))
        st = convoy__error(
            d->ctx, CONVOY_ERR_INVALID,
            "%s: memcpy_multi: method %d (%s) is not offered by this device%s", d->name, method,
            method < CONVOY__METHOD_COUNT ? convoy__copy_method_name(method) : "unknown",
            method == CONVOY__METHOD_ENGINE ? " (cudaMemcpyBatchAsync needs CUDA 12.8 or later)"
                                            : "");
    if (st == CONVOY_SUCCESS)
        st = convoy__cuda_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;

    cudaStream_t s = convoy__cuda_stream(stream);
    int strict = method == CONVOY__METHOD_SM;
    int used = method >= 0 ? method : auto_method(dev, n, &sum);
    nvtxRangePushA(convoy__cuda_stage_name(&copies[0]));
    pthread_mutex_lock(&dev->copy_lock);
    if (used == CONVOY__METHOD_SM) {
        int fallback;
        st = copy_sm(dev, s, copies, n, &sum, strict, &done, &fallback);
        if (st == CONVOY_SUCCESS && fallback) {
            /* As auto would without the kernel: pinned memory the kernel may not touch
             * goes as pinned memory does, by the batch call where there is one. */
            used = fallback_method(dev, &sum);
            st = run_method(dev, s, copies, n, used, &done);
        }
    } else {
        st = run_method(dev, s, copies, n, used, &done);
    }
    pthread_mutex_unlock(&dev->copy_lock);
    nvtxRangePop();

    if (submitted_p != NULL)
        *submitted_p = done;
    if (st == CONVOY_SUCCESS && method_p != NULL)
        *method_p = used;
    return st;
}
