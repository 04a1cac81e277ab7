/*
 * The trace's feeder (see trace_impl.h): a thread that keeps a few event chunks of the
 * largest size allocated and their pages touched, ready for the emitting threads.
 *
 * Why: a trace keeps every event until close, so each chunk is fresh memory, and the
 * first write to each of its pages is a page fault. On the H200 host a fault costs
 * 1.8-2.6 us (4 KiB pages), and a traced tiny_tasks run took about 1100 of them on the
 * progress thread and the inserting thread, some 2 ms of a 25 ms run (doc/results.md,
 * 2026-12-04, night). Touched here, those faults are off the threads that emit.
 *
 * A thread whose chunk is full takes a ready chunk (a mutex taken once per chunk of
 * CHUNK_MAX bytes, about 14000 events) and signals the feeder, which makes the next
 * one. With none ready (the feeder is behind, failed to allocate, or is stopped) the
 * emitting thread allocates its chunk itself, as without a feeder.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/trace_impl.h"
#include "src/util.h"

#define FEED_PAGE 4096 /* touched every this many bytes: the smallest page of the hosts */

struct trace_feed {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the feeder: a chunk was taken, or stop */
    pthread_t thread;
    int stop;
    int starved; /* its last allocation failed: it waits for a take */
    int nready;
    chunk_t *ready[TRACE_FEED_CHUNKS];
    uint64_t fed; /* chunks taken from ready */
};

/* (Asking for huge pages with madvise was tried: where the kernel compacts memory on
 * demand, it made emits slower and erratic.) */
chunk_t *convoy__trace_chunk_new(size_t bytes)
{
    chunk_t *c = malloc(bytes);
    if (c == NULL)
        return NULL;
    atomic_init(&c->next, NULL);
    atomic_init(&c->n, 0);
    c->cap = (uint32_t)((bytes - sizeof(*c)) / sizeof(convoy__trace_event_t));
    c->bytes = (uint32_t)bytes;
    return c;
}

static void *feed_main(void *arg)
{
    trace_feed_t *f = arg;
    convoy__thread_mark("the trace's feeder");
    convoy__thread_name("tracebuf");
    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        /* Out of memory, it tries again after the next take (while the emitting threads
         * allocate for themselves). The predicate is read under the lock, so a stop or a
         * take signalled while it allocated is not lost. */
        if (f->nready == TRACE_FEED_CHUNKS || f->starved) {
            pthread_cond_wait(&f->wake, &f->lock);
            continue;
        }
        pthread_mutex_unlock(&f->lock);
        chunk_t *c = convoy__trace_chunk_new(TRACE_CHUNK_MAX);
        if (c != NULL) /* each page the chunk spans; chunk_new wrote its first */
            for (uintptr_t a = ((uintptr_t)c | (FEED_PAGE - 1)) + 1; a < (uintptr_t)c + c->bytes;
                 a += FEED_PAGE)
                *(volatile char *)a = 0;
        pthread_mutex_lock(&f->lock);
        if (c == NULL)
            f->starved = 1;
        else
            f->ready[f->nready++] = c;
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

trace_feed_t *convoy__trace_feed_start(void)
{
    trace_feed_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->wake, NULL);
    if (pthread_create(&f->thread, NULL, feed_main, f) != 0) {
        pthread_cond_destroy(&f->wake);
        pthread_mutex_destroy(&f->lock);
        free(f);
        return NULL;
    }
    return f;
}

chunk_t *convoy__trace_feed_take(trace_feed_t *f)
{
    if (f == NULL)
        return NULL;
    pthread_mutex_lock(&f->lock);
    chunk_t *c = f->nready > 0 ? f->ready[--f->nready] : NULL;
    f->fed += c != NULL;
    f->starved = 0;
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->lock);
    return c;
}

uint64_t convoy__trace_feed_fed(trace_feed_t *f, int *ready)
{
    uint64_t n = 0;
    int r = 0;
    if (f != NULL) {
        pthread_mutex_lock(&f->lock);
        n = f->fed;
        r = f->nready;
        pthread_mutex_unlock(&f->lock);
    }
    if (ready != NULL)
        *ready = r;
    return n;
}

void convoy__trace_feed_stop(trace_feed_t *f)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    f->stop = 1;
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->thread, NULL);
    for (int i = 0; i < f->nready; i++)
        free(f->ready[i]);
    pthread_cond_destroy(&f->wake);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
