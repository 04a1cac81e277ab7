/*
 * The memcpy gang of memcpy_gang.h: helpers wait on a condition variable for a job
 * generation, take spans by an atomic index, and the poster waits until every helper
 * has left the job, so that spans are never read after convoy__gang_copy returns.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/memcpy_gang.h"
#include "src/util.h"

struct convoy__gang {
    pthread_mutex_t lock;
    pthread_cond_t go;   /* helpers: a new job, or stop */
    pthread_cond_t done; /* the poster: the last helper left the job */
    pthread_t *threads;
    int nthreads;
    int stop;
    uint64_t gen;                /* jobs posted; a helper runs each generation once */
    int busy;                    /* helpers not yet done with generation gen */
    const convoy__span_t *spans; /* the job */
    int nspans;
    atomic_int next; /* the next span to take */
};

/* Copy spans until none is left. */
static void take_spans(convoy__gang_t *g)
{
    for (;;) {
        int i = atomic_fetch_add_explicit(&g->next, 1, memory_order_relaxed);
        if (i >= g->nspans)
            return;
        memcpy(g->spans[i].dst, g->spans[i].src, g->spans[i].bytes);
    }
}

static void *helper_main(void *arg)
{
    convoy__gang_t *g = arg;
    convoy__thread_mark("a bounce memcpy helper");
    uint64_t seen = 0;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (g->gen == seen && !g->stop)
            pthread_cond_wait(&g->go, &g->lock);
        if (g->stop)
            break;
        seen = g->gen;
        pthread_mutex_unlock(&g->lock);
        take_spans(g);
        pthread_mutex_lock(&g->lock);
        if (--g->busy == 0)
            pthread_cond_signal(&g->done);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

convoy__gang_t *convoy__gang_new(int nthreads, const char *what)
{
    convoy__gang_t *g = calloc(1, sizeof(*g));
    if (g == NULL || (g->threads = calloc((size_t)nthreads, sizeof(pthread_t))) == NULL) {
        free(g);
        convoy__log_warn("%s: out of memory for %d memcpy helpers; copying alone", what, nthreads);
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->go, NULL);
    pthread_cond_init(&g->done, NULL);
    atomic_init(&g->next, 0);
    for (int i = 0; i < nthreads; i++) {
        int rc = pthread_create(&g->threads[i], NULL, helper_main, g);
        if (rc != 0) {
            convoy__log_warn("%s: memcpy helper %d of %d could not start (error %d); using %d",
                             what, i + 1, nthreads, rc, i);
            break;
        }
        g->nthreads++;
    }
    if (g->nthreads == 0) {
        convoy__gang_free(g);
        return NULL;
    }
    return g;
}

void convoy__gang_free(convoy__gang_t *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_broadcast(&g->go);
    pthread_mutex_unlock(&g->lock);
    for (int i = 0; i < g->nthreads; i++)
        pthread_join(g->threads[i], NULL);
    pthread_cond_destroy(&g->done);
    pthread_cond_destroy(&g->go);
    pthread_mutex_destroy(&g->lock);
    free(g->threads);
    free(g);
}

void convoy__gang_copy(convoy__gang_t *g, const convoy__span_t *spans, int n, size_t min_bytes)
{
    size_t total = 0;
    for (int i = 0; i < n && total < min_bytes; i++)
        total += spans[i].bytes;
    if (g == NULL || n < 2 || total < min_bytes) {
        for (int i = 0; i < n; i++)
            memcpy(spans[i].dst, spans[i].src, spans[i].bytes);
        return;
    }
    pthread_mutex_lock(&g->lock);
    g->spans = spans;
    g->nspans = n;
    atomic_store_explicit(&g->next, 0, memory_order_relaxed);
    g->busy = g->nthreads;
    g->gen++;
    pthread_cond_broadcast(&g->go);
    pthread_mutex_unlock(&g->lock);
    take_spans(g);
    pthread_mutex_lock(&g->lock);
    while (g->busy > 0)
        pthread_cond_wait(&g->done, &g->lock);
    pthread_mutex_unlock(&g->lock);
}
