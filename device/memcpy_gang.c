/*
 * The memcpy gang of memcpy_gang.h. A job is published as a generation: its spans, and a
 * take word holding the generation (high 32 bits) and the next span to take (low 32).
 * Whoever takes a span does so by compare-and-swap on that word, so a helper that wakes
 * after its job is over (or after a newer one began) fails the swap and takes nothing:
 * the poster waits for the spans to be copied, never for the helpers to arrive. A helper
 * that finishes a job polls for the next one for spin_ns before it sleeps, since a
 * stage's submissions post their jobs microseconds apart; a prime wakes the sleepers and
 * keeps every helper polling until a deadline, so that they are on their cores when a
 * job the poster expects arrives (a sleeping thread starts tens of microseconds after
 * its wake-up on the H200 host, as long as a 3 MiB job takes a gang of eight).
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/memcpy_gang.h"
#include "src/util.h"

struct convoy__gang {
    pthread_mutex_t lock;
    pthread_cond_t go;   /* helpers: a new job, or stop */
    pthread_cond_t done; /* the poster, when it sleeps: the job's last span is copied */
    pthread_t *threads;
    int nthreads;
    uint64_t spin_ns;
    int sleepers;                /* helpers waiting on go */
    uint64_t primes;             /* convoy__gang_prime calls that found sleepers */
    const convoy__span_t *spans; /* the job of generation gen (under lock) */
    int nspans;
    atomic_uint_fast64_t gen;  /* jobs posted (written under lock) */
    atomic_uint_fast64_t take; /* (gen << 32) | next span to take */
    atomic_int copied;         /* spans of the current job copied */
    int poster_sleeps;         /* the poster waits on done (under lock) */
    atomic_int stop;
    atomic_uint_fast64_t primed_until; /* CLOCK_MONOTONIC ns: helpers poll until then */
};

/* One more span of the job copied; the last one wakes a poster that went to sleep. */
static void span_copied(convoy__gang_t *g, int n)
{
    if (atomic_fetch_add_explicit(&g->copied, 1, memory_order_release) + 1 < n)
        return;
    pthread_mutex_lock(&g->lock);
    if (g->poster_sleeps)
        pthread_cond_signal(&g->done);
    pthread_mutex_unlock(&g->lock);
}

/* Take and copy spans of generation gen until none is left, or the job is another's.
 * Only the generation's low 32 bits are compared: a helper would have to be held off its
 * core between reading its job and its first swap for 2^32 - 1 later jobs exactly to
 * take a span of another with its own job's spans. */
static void take_spans(convoy__gang_t *g, uint64_t gen, const convoy__span_t *spans, int n)
{
    uint64_t w = atomic_load_explicit(&g->take, memory_order_acquire);
    while ((w >> 32) == (gen & 0xffffffffu) && (uint32_t)w < (uint32_t)n) {
        if (!atomic_compare_exchange_weak_explicit(&g->take, &w, w + 1, memory_order_acquire,
                                                   memory_order_acquire))
            continue; /* w now holds the word's current value */
        const convoy__span_t *s = &spans[(uint32_t)w];
        memcpy(s->dst, s->src, s->bytes);
        span_copied(g, n);
        w = atomic_load_explicit(&g->take, memory_order_acquire);
    }
}

static int no_news(convoy__gang_t *g, uint64_t seen)
{
    return atomic_load_explicit(&g->gen, memory_order_relaxed) == seen &&
           !atomic_load_explicit(&g->stop, memory_order_relaxed);
}

/* Wait for a generation after seen: poll for spin_ns or until the prime's deadline,
 * then sleep until a job or a prime. Returns it with its job in *spans_p and *n_p, or 0
 * to stop. */
static uint64_t next_job(convoy__gang_t *g, uint64_t seen, const convoy__span_t **spans_p, int *n_p)
{
    pthread_mutex_lock(&g->lock);
    while (no_news(g, seen)) {
        uint64_t primes = g->primes;
        pthread_mutex_unlock(&g->lock);
        uint64_t start = convoy__now_ns();
        for (int i = 1; no_news(g, seen); i++) {
            if ((i & 63) == 0) {
                uint64_t now = convoy__now_ns();
                if (now - start >= g->spin_ns &&
                    now >= atomic_load_explicit(&g->primed_until, memory_order_relaxed))
                    break;
            }
            convoy__cpu_relax();
        }
        pthread_mutex_lock(&g->lock);
        /* The deadline again under the lock: a prime that saw no sleeper, because this
         * helper was between its polls and the lock, is not missed. */
        while (no_news(g, seen) && g->primes == primes &&
               convoy__now_ns() >= atomic_load_explicit(&g->primed_until, memory_order_relaxed)) {
            g->sleepers++;
            pthread_cond_wait(&g->go, &g->lock);
            g->sleepers--;
        }
    }
    uint64_t gen = atomic_load_explicit(&g->stop, memory_order_relaxed)
                       ? 0
                       : atomic_load_explicit(&g->gen, memory_order_relaxed);
    *spans_p = g->spans;
    *n_p = g->nspans;
    pthread_mutex_unlock(&g->lock);
    return gen;
}

static void *helper_main(void *arg)
{
    convoy__gang_t *g = arg;
    convoy__thread_mark("a bounce memcpy helper");
    convoy__thread_name("memcpy");
    const convoy__span_t *spans;
    int n;
    for (uint64_t gen = 0; (gen = next_job(g, gen, &spans, &n)) != 0;)
        take_spans(g, gen, spans, n);
    return NULL;
}

convoy__gang_t *convoy__gang_new(int nthreads, uint64_t spin_ns, const char *what)
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
    g->spin_ns = spin_ns;
    atomic_init(&g->gen, 0);
    atomic_init(&g->take, 0);
    atomic_init(&g->copied, 0);
    atomic_init(&g->stop, 0);
    atomic_init(&g->primed_until, 0);
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
    atomic_store_explicit(&g->stop, 1, memory_order_relaxed);
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

void convoy__gang_prime(convoy__gang_t *g, uint64_t ns)
{
    if (g == NULL)
        return;
    atomic_store_explicit(&g->primed_until, convoy__now_ns() + ns, memory_order_relaxed);
    pthread_mutex_lock(&g->lock);
    if (g->sleepers > 0) {
        g->primes++;
        pthread_cond_broadcast(&g->go);
    }
    pthread_mutex_unlock(&g->lock);
}

int convoy__gang_copy(convoy__gang_t *g, const convoy__span_t *spans, int n, size_t min_bytes)
{
    size_t total = 0;
    for (int i = 0; i < n && total < min_bytes; i++)
        total += spans[i].bytes;
    if (g == NULL || n < 2 || total < min_bytes) {
        for (int i = 0; i < n; i++)
            memcpy(spans[i].dst, spans[i].src, spans[i].bytes);
        return 0;
    }
    pthread_mutex_lock(&g->lock);
    uint64_t gen = atomic_load_explicit(&g->gen, memory_order_relaxed) + 1;
    if ((gen & 0xffffffffu) == 0) /* a take word of generation 0 would look like none */
        gen++;
    g->spans = spans;
    g->nspans = n;
    atomic_store_explicit(&g->copied, 0, memory_order_relaxed);
    atomic_store_explicit(&g->take, (gen & 0xffffffffu) << 32, memory_order_release);
    atomic_store_explicit(&g->gen, gen, memory_order_release);
    if (g->sleepers > 0)
        pthread_cond_broadcast(&g->go);
    pthread_mutex_unlock(&g->lock);
    take_spans(g, gen, spans, n);
    /* Every span is taken: what is left is at most one span per helper, in its memcpy,
     * a microsecond for 8 KiB. A helper taken off its core mid-copy makes the wait
     * longer: then the poster sleeps until the last span's copier wakes it. */
    for (int i = 1; atomic_load_explicit(&g->copied, memory_order_acquire) < n; i++) {
        if (i < 4096) {
            convoy__cpu_relax();
            continue;
        }
        pthread_mutex_lock(&g->lock);
        g->poster_sleeps = 1;
        while (atomic_load_explicit(&g->copied, memory_order_acquire) < n)
            pthread_cond_wait(&g->done, &g->lock);
        g->poster_sleeps = 0;
        pthread_mutex_unlock(&g->lock);
    }
    return 1;
}
