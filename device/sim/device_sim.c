/*
 * The sim device component: an accelerator emulated in host memory, so that the whole
 * runtime runs and is tested without a GPU (DESIGN.md, "The sim device").
 *
 * This file holds the component (query, open, close), device memory, the calls that
 * enqueue copies and launches (validation, fault injection, the submission log) and the
 * test hooks of sim.h. Its parameters are in sim_params.c; streams, events and the cost
 * model's clock in sim_stream.c.
 */
#include "config.h"

#define CONVOY__SIM_INTERNAL 1
#include "device/sim/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/copyargs.h"
#include "src/context.h"
#include "src/util.h"

#define SIM_ALIGN 64                    /* device allocations start on a cache line */
#define SIM_MAGIC 0x73696d626c6f636bull /* "simblock" */

/* The header in front of each allocation, padded to SIM_ALIGN bytes. */
struct convoy__sim_block {
    convoy__sim_block_t *prev, *next; /* dev->blocks */
    convoy__sim_dev_t *owner;         /* catches a pointer freed on the wrong device */
    size_t bytes;                     /* as asked: what the capacity counts */
    uint64_t magic;                   /* SIM_MAGIC while allocated: catches double frees */
};
_Static_assert(sizeof(convoy__sim_block_t) <= SIM_ALIGN, "sim block header too large");

static const char *const sim_method_names[CONVOY__METHOD_COUNT] = {"loop", "engine", "sm"};

static convoy__sim_dev_t *sim_dev(convoy__device_t *d)
{
    return (convoy__sim_dev_t *)d;
}

/* ---- memory ----------------------------------------------------------------------- */

/* 64-byte aligned host memory counted against sim_memory; full is CONVOY_ERR_NOMEM
 * (recorded, not logged at error level: the pipeline evicts and retries). */
static convoy_status_t sim_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (!ptr_p || bytes == 0)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: mem_alloc: %s", d->name,
                             ptr_p ? "0 bytes asked" : "NULL ptr_p");
    if (convoy__sim_calls_fail(dev))
        return convoy__sim_lost(dev, "mem_alloc");

    pthread_mutex_lock(&dev->lock);
    uint64_t n = ++dev->nallocs;
    size_t used = dev->counters.bytes_in_use;
    if (dev->fail_alloc > 0 && n == (uint64_t)dev->fail_alloc) {
        dev->counters.alloc_failures++;
        pthread_mutex_unlock(&dev->lock);
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: injected failure of allocation %llu (%zu bytes, "
                             "sim_fail_alloc)",
                             d->name, (unsigned long long)n, bytes);
    }
    if (bytes > d->mem_capacity - used) {
        dev->counters.alloc_failures++;
        pthread_mutex_unlock(&dev->lock);
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                             "%s: device memory full: %zu bytes asked, %zu of %zu in use", d->name,
                             bytes, used, d->mem_capacity);
    }
    /* Reserve before allocating so that concurrent calls cannot overcommit. */
    dev->counters.bytes_in_use = used + bytes;
    if (dev->counters.bytes_in_use > dev->counters.peak_bytes)
        dev->counters.peak_bytes = dev->counters.bytes_in_use;
    pthread_mutex_unlock(&dev->lock);

    /* bytes <= capacity <= 1 PiB: the rounding cannot overflow. */
    size_t total = SIM_ALIGN + (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
    convoy__sim_block_t *blk = aligned_alloc(SIM_ALIGN, total);

    pthread_mutex_lock(&dev->lock);
    if (!blk) {
        dev->counters.bytes_in_use -= bytes;
        dev->counters.alloc_failures++;
        pthread_mutex_unlock(&dev->lock);
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                             "%s: no host memory to back %zu bytes of device memory", d->name,
                             bytes);
    }
    blk->owner = dev;
    blk->bytes = bytes;
    blk->magic = SIM_MAGIC;
    blk->prev = NULL;
    blk->next = dev->blocks;
    if (dev->blocks)
        dev->blocks->prev = blk;
    dev->blocks = blk;
    dev->counters.allocs++;
    pthread_mutex_unlock(&dev->lock);
    *ptr_p = (char *)blk + SIM_ALIGN;
    return CONVOY_SUCCESS;
}

/* Accepts NULL; a pointer this device did not allocate is logged and left alone. */
static void sim_mem_free(convoy__device_t *d, void *ptr)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (!ptr)
        return;
    convoy__sim_block_t *blk = (convoy__sim_block_t *)(void *)((char *)ptr - SIM_ALIGN);
    pthread_mutex_lock(&dev->lock);
    if (blk->magic != SIM_MAGIC || blk->owner != dev) {
        pthread_mutex_unlock(&dev->lock);
        convoy__log_error("%s: mem_free(%p): not a live allocation of this device", d->name, ptr);
        return;
    }
    blk->magic = 0;
    if (blk->prev)
        blk->prev->next = blk->next;
    else
        dev->blocks = blk->next;
    if (blk->next)
        blk->next->prev = blk->prev;
    dev->counters.bytes_in_use -= blk->bytes;
    pthread_mutex_unlock(&dev->lock);
    free(blk);
}

/* ---- copies and launches ---------------------------------------------------------- */

static convoy_status_t sim_check_stream(convoy__sim_dev_t *dev, const char *what,
                                        convoy__stream_t *stream)
{
    const convoy__sim_stream_t *s = (const convoy__sim_stream_t *)(const void *)stream;
    if (convoy__sim_calls_fail(dev))
        return convoy__sim_lost(dev, what);
    if (!s)
        return convoy__error(dev->base.ctx, CONVOY_ERR_INVALID, "%s: %s: NULL stream",
                             dev->base.name, what);
    if (s->dev != dev)
        return convoy__error(dev->base.ctx, CONVOY_ERR_INVALID, "%s: %s: stream %d belongs to %s",
                             dev->base.name, what, s->id, s->dev->base.name);
    return CONVOY_SUCCESS;
}

/* Host copies of copies[0..k) whose host side is not flagged pinned. */
static int pageable_count(const convoy__copy_t *copies, int k)
{
    int n = 0;
    for (int i = 0; i < k; i++)
        n += copies[i].dir != CONVOY__D2D && !(copies[i].flags & CONVOY__COPY_HOST_PINNED);
    return n;
}

/* Modelled fixed cost of copies[0..k) by method (the bandwidth part is the stream's). */
static uint64_t sim_overhead_ns(const convoy__sim_dev_t *dev, int method,
                                const convoy__copy_t *copies, int k)
{
    double ns = method == CONVOY__METHOD_ENGINE ? dev->submit_ns + k * dev->copy_ns
                                                : k * dev->single_copy_ns;
    ns += pageable_count(copies, k) * dev->pageable_ns;
    ns += dev->delay_ns;
    return ns <= 0.0 ? 0 : (uint64_t)(ns + 0.5);
}

static void sim_log_locked(convoy__sim_dev_t *dev, const convoy__sim_record_t *rec)
{
    if (dev->nrecords >= CONVOY__SIM_MAX_RECORDS)
        return;
    if (dev->nrecords == dev->records_cap) {
        int cap = dev->records_cap ? 2 * dev->records_cap : 1024;
        if (cap > CONVOY__SIM_MAX_RECORDS)
            cap = CONVOY__SIM_MAX_RECORDS;
        convoy__sim_record_t *r = realloc(dev->records, (size_t)cap * sizeof *r);
        if (!r)
            return; /* a hole in the log; records are found by seq, so no harm */
        dev->records = r;
        dev->records_cap = cap;
    }
    dev->records[dev->nrecords++] = *rec;
}

/*
 * One submission of n validated copies with a resolved method: counted, logged and
 * enqueued, or failed by injection. On an injected failure of a memcpy_multi the first
 * k copies (sim_fail_submitted) are still enqueued and *submitted_p says k.
 */
static convoy_status_t sim_submit(convoy__sim_dev_t *dev, convoy__sim_stream_t *s,
                                  const convoy__copy_t *copies, int n, int method, int multi,
                                  int *submitted_p)
{
    const char *what = multi ? "memcpy_multi" : "memcpy";
    convoy__sim_op_t *op =
        convoy__malloc(dev->base.ctx, sizeof *op + (size_t)n * sizeof *copies, "sim copies");
    if (!op)
        return CONVOY_ERR_NOMEM;
    memset(op, 0, sizeof *op);
    memcpy(op->copies, copies, (size_t)n * sizeof *copies); /* the caller's array is theirs */
    op->kind = CONVOY__SIM_OP_COPY;
    op->enqueue_ns = convoy__now_ns();

    pthread_mutex_lock(&dev->lock);
    uint64_t seq = ++dev->nsubmissions;
    int failed = (dev->fail_submission > 0 && seq >= (uint64_t)dev->fail_submission &&
                  seq - (uint64_t)dev->fail_submission < (uint64_t)dev->fail_submissions) ||
                 (dev->fail_every > 0 && seq % (uint64_t)dev->fail_every == 0);
    int k = n;
    if (failed) {
        if (!multi)
            k = 0;
        else if (dev->fail_submitted < 0)
            k = method == CONVOY__METHOD_ENGINE ? 0 : n / 2;
        else
            k = (int)CONVOY__MIN(dev->fail_submitted, (int64_t)n);
    }

    convoy__sim_record_t rec = {.seq = seq,
                                .dir = copies[0].dir,
                                .copies = k,
                                .method = method,
                                .stream = s->id,
                                .enqueue_ns = op->enqueue_ns,
                                .failed = failed};
    unsigned dirs = 0;
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        dirs |= 1u << c->dir;
        if (c->dir != copies[0].dir)
            rec.dir = -1;
        if (i < k) {
            op->dir_bytes[c->dir] += c->bytes;
            dev->counters.copies[c->dir]++;
            dev->counters.bytes[c->dir] += c->bytes;
            rec.bytes += c->bytes;
        }
    }
    for (int d = 0; d < 3; d++)
        if (dirs & (1u << d))
            dev->counters.submissions[d]++;
    sim_log_locked(dev, &rec);
    if (k > 0) {
        op->seq = seq;
        op->ncopies = k;
        op->overhead_ns = sim_overhead_ns(dev, method, copies, k);
        op->fail_async = !failed && dev->fail_async > 0 && seq == (uint64_t)dev->fail_async;
        if (rec.dir == CONVOY__D2H && !failed && dev->fail_async_home > 0 &&
            ++dev->nsubmissions_home == (uint64_t)dev->fail_async_home)
            op->fail_async = 1;
        convoy__sim_enqueue_locked(s, op);
        op = NULL;
    }
    pthread_mutex_unlock(&dev->lock);
    free(op);

    if (submitted_p)
        *submitted_p = k;
    if (!failed)
        return CONVOY_SUCCESS;
    return convoy__error(dev->base.ctx, CONVOY_ERR_DEVICE,
                         "%s: injected failure of submission %llu (%s, %d copies, %s), %d "
                         "enqueued",
                         dev->base.name, (unsigned long long)seq, what, n, sim_method_names[method],
                         k);
}

static convoy_status_t sim_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                  const convoy__copy_t *copy)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    convoy_status_t st = sim_check_stream(dev, "memcpy", stream);
    if (st == CONVOY_SUCCESS)
        st = convoy__copyargs_check(d, "memcpy", stream, copy, 1);
    if (st != CONVOY_SUCCESS)
        return st;
    return sim_submit(dev, (convoy__sim_stream_t *)(void *)stream, copy, 1, CONVOY__METHOD_LOOP, 0,
                      NULL);
}

/* 1 when a copy is device-to-host into memory not flagged pinned. */
static int has_pageable_d2h(const convoy__copy_t *copies, int n)
{
    for (int i = 0; i < n; i++)
        if (copies[i].dir == CONVOY__D2H && !(copies[i].flags & CONVOY__COPY_HOST_PINNED))
            return 1;
    return 0;
}

/* See device.h. auto (method < 0) is engine for n > 1 and loop for one copy, and loop
 * when a copy goes device-to-host into pageable memory, as the CUDA device chooses
 * (PHYSICS.md s2: batching those is 2.5-4x slower); sm is not offered. *submitted_p is
 * also set on success (n) and on validation errors (0). */
static convoy_status_t sim_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                        const convoy__copy_t *copies, int n, int method,
                                        int *submitted_p, int *method_p)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (submitted_p)
        *submitted_p = 0;
    convoy_status_t st = sim_check_stream(dev, "memcpy_multi", stream);
    if (st == CONVOY_SUCCESS)
        st = convoy__copyargs_check(d, "memcpy_multi", stream, copies, n);
    if (st != CONVOY_SUCCESS)
        return st;
    if (method < 0)
        method =
            n > 1 && !has_pageable_d2h(copies, n) ? CONVOY__METHOD_ENGINE : CONVOY__METHOD_LOOP;
    else if (method >= CONVOY__METHOD_COUNT || !(d->methods & (1u << method)))
        return convoy__error(d->ctx, CONVOY_ERR_INVALID,
                             "%s: memcpy_multi: method %d (%s) is not offered; the sim device "
                             "has loop and engine",
                             d->name, method,
                             method < CONVOY__METHOD_COUNT ? sim_method_names[method] : "?");
    st = sim_submit(dev, (convoy__sim_stream_t *)(void *)stream, copies, n, method, 1, submitted_p);
    if (st == CONVOY_SUCCESS && method_p)
        *method_p = method;
    return st;
}

/* The timing op an inline launch leaves on its stream: the chore ran already. */
static int sim_launched(void *arg, void *native_stream)
{
    (void)arg;
    (void)native_stream;
    return 0;
}

/* fn(arg, NULL) runs later on the stream thread, or (sim_launch_inline) now, once the
 * stream's earlier work has run, with a timing op left in its place; an injected failure
 * (sim_fail_launch) is returned here and the chore never runs. */
static convoy_status_t sim_launch(convoy__device_t *d, convoy__stream_t *stream,
                                  convoy__launch_fn fn, void *arg)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    convoy_status_t st = sim_check_stream(dev, "launch", stream);
    if (st != CONVOY_SUCCESS)
        return st;
    if (!fn)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: launch: NULL fn", d->name);
    convoy__sim_op_t *op = convoy__calloc(d->ctx, 1, sizeof *op, "sim launch");
    if (!op)
        return CONVOY_ERR_NOMEM;
    op->kind = CONVOY__SIM_OP_LAUNCH;
    op->fn = fn;
    op->arg = arg;
    op->enqueue_ns = convoy__now_ns();

    pthread_mutex_lock(&dev->lock);
    uint64_t n = ++dev->nlaunches;
    if (dev->fail_launch > 0 && n == (uint64_t)dev->fail_launch) {
        pthread_mutex_unlock(&dev->lock);
        free(op);
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: injected failure of launch %llu (sim_fail_launch)", d->name,
                             (unsigned long long)n);
    }
    dev->counters.launches++;
    convoy__sim_stream_t *s = (convoy__sim_stream_t *)(void *)stream;
    if (d->launch_inline) { /* sim_launch_inline */
        /* The stream waits, as a GPU's kernel would, for what it was given before. */
        uint64_t vt = convoy__sim_stream_drain_locked(dev, s);
        pthread_mutex_unlock(&dev->lock);
        convoy__sleep_until_ns(vt);
        if (!convoy__sim_context_lost(dev) && fn(arg, NULL) != 0)
            convoy__log_debug("%s: inline chore returned non-zero", d->name);
        op->fn = sim_launched;
        op->enqueue_ns = convoy__now_ns();
        pthread_mutex_lock(&dev->lock);
    }
    convoy__sim_enqueue_locked(s, op);
    pthread_mutex_unlock(&dev->lock);
    return CONVOY_SUCCESS;
}

static const convoy__device_ops_t sim_ops = {
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .stream_create = convoy__sim_stream_create,
    .stream_destroy = convoy__sim_stream_destroy,
    .stream_native = convoy__sim_stream_native,
    .event_create = convoy__sim_event_create,
    .event_destroy = convoy__sim_event_destroy,
    .event_record = convoy__sim_event_record,
    .event_record_quiet = convoy__sim_event_record_quiet,
    .event_query = convoy__sim_event_query,
    .stream_wait_event = convoy__sim_stream_wait_event,
    .stream_sync = convoy__sim_stream_sync,
    .memcpy = sim_memcpy,
    .memcpy_multi = sim_memcpy_multi,
    .launch = sim_launch,
    .idle_wait = convoy__sim_idle_wait,
};

/* ---- the component ---------------------------------------------------------------- */

static int sim_query(const convoy__params_t *params, char *why, size_t why_len)
{
    int64_t n = convoy__param_int(params, "sim_count");
    if (n <= 0 && why && why_len > 0)
        snprintf(why, why_len, "sim_count is 0");
    return n > 0 ? (int)n : 0;
}

static convoy_status_t sim_open(convoy_context_t *ctx, int local_index, int global_index,
                                convoy__device_t **dev_p)
{
    const convoy__params_t *p = convoy__ctx_params(ctx);
    convoy__sim_dev_t *dev = convoy__calloc(ctx, 1, sizeof *dev, "sim device");
    if (!dev)
        return CONVOY_ERR_NOMEM;
    convoy__device_t *b = &dev->base;
    b->component = &convoy__device_sim;
    b->ops = &sim_ops;
    b->ctx = ctx;
    b->kind = CONVOY_DEVICE_SIM;
    b->index = global_index;
    snprintf(b->name, sizeof b->name, "sim%d", local_index);
    b->methods = (1u << CONVOY__METHOD_LOOP) | (1u << CONVOY__METHOD_ENGINE);
    b->max_batch = 4096;
    b->mem_capacity = (size_t)convoy__param_int(p, "sim_memory");

    dev->submit_ns = 1e3 * convoy__param_double(p, "sim_submit_us");
    dev->copy_ns = 1e3 * convoy__param_double(p, "sim_copy_us");
    dev->single_copy_ns = 1e3 * convoy__param_double(p, "sim_single_copy_us");
    dev->launch_ns = 1e3 * convoy__param_double(p, "sim_launch_us");
    dev->delay_ns = 1e3 * convoy__param_double(p, "sim_delay_us");
    dev->launch_late_ns = (uint64_t)(1e3 * convoy__param_double(p, "sim_launch_late_us"));
    b->launch_inline = (int)convoy__param_int(p, "sim_launch_inline");
    dev->sticky = (int)convoy__param_int(p, "sim_sticky_errors");
    b->errors_sticky = dev->sticky > 0;
    dev->ns_per_byte = 1.0 / convoy__param_double(p, "sim_bandwidth_gbs"); /* GB/s = B/ns */
    dev->pageable_ns = 1e3 * convoy__param_double(p, "sim_pageable_us");
    dev->fail_submission = convoy__param_int(p, "sim_fail_submission");
    dev->fail_submissions = convoy__param_int(p, "sim_fail_submissions");
    dev->fail_submitted = convoy__param_int(p, "sim_fail_submitted");
    dev->fail_alloc = convoy__param_int(p, "sim_fail_alloc");
    dev->fail_launch = convoy__param_int(p, "sim_fail_launch");
    dev->fail_record = convoy__param_int(p, "sim_fail_record");
    dev->fail_records = convoy__param_int(p, "sim_fail_records");
    dev->fail_sync = convoy__param_int(p, "sim_fail_sync");
    dev->fail_wait = convoy__param_int(p, "sim_fail_stream_wait");
    dev->fail_waits = convoy__param_int(p, "sim_fail_stream_waits");
    dev->fail_every = convoy__param_int(p, "sim_fail_every");
    dev->fail_async = convoy__param_int(p, "sim_fail_async");
    dev->fail_async_home = convoy__param_int(p, "sim_fail_async_home");

    dev->hostmem = convoy__hostslab_attach(&convoy__sim_hostslab_ops, ctx,
                                           (size_t)convoy__param_int(p, "sim_host_slab"));
    dev->link = convoy__sim_link_attach(ctx, local_index);
    if (dev->hostmem == NULL || dev->link == NULL) {
        convoy__hostslab_detach(dev->hostmem);
        convoy__sim_link_detach(dev->link);
        free(dev);
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "sim%d: out of memory for its state",
                             local_index);
    }

    pthread_condattr_t attr;
    int rc = pthread_mutex_init(&dev->lock, NULL);
    if (rc != 0)
        goto err_free;
    rc = pthread_cond_init(&dev->exec_cond, NULL);
    if (rc != 0)
        goto err_lock;
    rc = pthread_condattr_init(&attr);
    if (rc != 0)
        goto err_exec;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* deadlines are monotonic */
    if (rc == 0)
        rc = pthread_cond_init(&dev->idle_cond, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        goto err_exec;
    convoy__log_debug("%s: opened: %zu bytes, %.1f GB/s, submit %.2f us, copy %.2f us, single "
                      "%.2f us, launch %.2f us",
                      b->name, b->mem_capacity, 1.0 / dev->ns_per_byte, dev->submit_ns / 1e3,
                      dev->copy_ns / 1e3, dev->single_copy_ns / 1e3, dev->launch_ns / 1e3);
    *dev_p = b;
    return CONVOY_SUCCESS;

err_exec:
    pthread_cond_destroy(&dev->exec_cond);
err_lock:
    pthread_mutex_destroy(&dev->lock);
err_free:
    convoy__hostslab_detach(dev->hostmem);
    convoy__sim_link_detach(dev->link);
    free(dev);
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "sim%d: open: pthread initialisation returned %d",
                         local_index, rc);
}

/* Drains and joins every stream, then frees what the owner left, warning about device
 * memory still in use (the test suites expect none). Accepts NULL. */
static void sim_close(convoy__device_t *d)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (!dev)
        return;
    convoy__sim_streams_close(dev);
    if (dev->counters.bytes_in_use > 0) {
        int n = 0;
        for (const convoy__sim_block_t *blk = dev->blocks; blk; blk = blk->next)
            n++;
        convoy__log_warn("%s: closed with %zu bytes of device memory in use (%d allocations)",
                         d->name, dev->counters.bytes_in_use, n);
    }
    while (dev->blocks) {
        convoy__sim_block_t *blk = dev->blocks;
        dev->blocks = blk->next;
        free(blk);
    }
    pthread_cond_destroy(&dev->idle_cond);
    pthread_cond_destroy(&dev->exec_cond);
    pthread_mutex_destroy(&dev->lock);
    free(dev->heap);
    free(dev->records);
    convoy__hostslab_detach(dev->hostmem);
    convoy__sim_link_detach(dev->link);
    free(dev);
}

const convoy__device_component_t convoy__device_sim = {
    .name = "sim",
    .priority = 0,
    .kind = CONVOY_DEVICE_SIM,
    .doc = "accelerator emulated in host memory, with a cost model and fault injection",
    .params = convoy__sim_params,
    .query = sim_query,
    .open = sim_open,
    .close = sim_close,
    .host_mem = &convoy__sim_host_mem_ops,
};

/* ---- test hooks (sim.h) ----------------------------------------------------------- */

int convoy__sim_is_sim(const convoy__device_t *dev)
{
    return dev != NULL && dev->component == &convoy__device_sim;
}

int convoy__sim_records(convoy__device_t *d, convoy__sim_record_t *out, int max)
{
    if (!convoy__sim_is_sim(d))
        return 0;
    convoy__sim_dev_t *dev = sim_dev(d);
    pthread_mutex_lock(&dev->lock);
    int n = dev->nrecords;
    if (out && max > 0)
        memcpy(out, dev->records, (size_t)CONVOY__MIN(n, max) * sizeof *out);
    pthread_mutex_unlock(&dev->lock);
    return n;
}

void convoy__sim_records_clear(convoy__device_t *d)
{
    if (!convoy__sim_is_sim(d))
        return;
    convoy__sim_dev_t *dev = sim_dev(d);
    pthread_mutex_lock(&dev->lock);
    free(dev->records);
    dev->records = NULL;
    dev->nrecords = dev->records_cap = 0;
    pthread_mutex_unlock(&dev->lock);
}

void convoy__sim_get_counters(convoy__device_t *d, convoy__sim_counters_t *out)
{
    if (!out)
        return;
    if (!convoy__sim_is_sim(d)) {
        memset(out, 0, sizeof *out);
        return;
    }
    convoy__sim_dev_t *dev = sim_dev(d);
    pthread_mutex_lock(&dev->lock);
    *out = dev->counters;
    pthread_mutex_unlock(&dev->lock);
    out->quiet_queries = atomic_load_explicit(&dev->quiet_queries, memory_order_relaxed);
}
