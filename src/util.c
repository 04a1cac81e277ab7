/*
 * Errors, logging and time (see util.h).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

#include "src/core.h"
#include "src/proc.h"
#include "src/util.h"

int convoy__cpu_prefetchw;

#if defined(__GNUC__)
/* Before any thread of convoy runs: the flag is read-only from then on. */
__attribute__((constructor)) static void detect_prefetchw(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d))
        convoy__cpu_prefetchw = (c >> 8) & 1; /* PRFCHW (Linux: 3dnowprefetch) */
#endif
}
#endif

_Atomic int convoy__log_threshold = CONVOY__LOG_WARN;
_Atomic int convoy__log_prefix;

static _Thread_local char tls_error[1024] = "no error";

static _Thread_local const char *tls_role;

void convoy__thread_mark(const char *role)
{
    tls_role = role;
}

const char *convoy__thread_role(void)
{
    return tls_role;
}

void convoy__thread_name(const char *fmt, ...)
{
#if defined(__GLIBC__)
    char name[16] = "convoy-"; /* 16: Linux's limit, with the terminating zero */
    size_t prefix = strlen(name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name + prefix, sizeof(name) - prefix, fmt, ap);
    va_end(ap);
    pthread_setname_np(pthread_self(), name);
#else
    (void)fmt;
#endif
}

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *convoy_status_name(convoy_status_t status)
{
    switch (status) {
    case CONVOY_SUCCESS: return "CONVOY_SUCCESS";
    case CONVOY_ERR_INVALID: return "CONVOY_ERR_INVALID";
    case CONVOY_ERR_NOMEM: return "CONVOY_ERR_NOMEM";
    case CONVOY_ERR_NOT_FOUND: return "CONVOY_ERR_NOT_FOUND";
    case CONVOY_ERR_UNAVAILABLE: return "CONVOY_ERR_UNAVAILABLE";
    case CONVOY_ERR_DEVICE: return "CONVOY_ERR_DEVICE";
    case CONVOY_ERR_TASK_FAILED: return "CONVOY_ERR_TASK_FAILED";
    case CONVOY_ERR_STATE: return "CONVOY_ERR_STATE";
    case CONVOY_ERR_IO: return "CONVOY_ERR_IO";
    }
    return "CONVOY_ERR_UNKNOWN";
}

convoy_status_t convoy__error_record(convoy_context_t *ctx, convoy_status_t status, const char *fmt,
                                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof(tls_error), fmt, ap);
    va_end(ap);
    if (ctx != NULL) {
        pthread_mutex_lock(&ctx->error_lock);
        memcpy(ctx->error, tls_error, sizeof(ctx->error));
        pthread_mutex_unlock(&ctx->error_lock);
    }
    convoy__log_ctx(ctx, CONVOY__LOG_DEBUG, "%s: %s", convoy_status_name(status), tls_error);
    return status;
}

int convoy__log_level(const convoy_context_t *ctx)
{
    return ctx != NULL ? ctx->params.log_level
                       : atomic_load_explicit(&convoy__log_threshold, memory_order_relaxed);
}

const char *convoy_last_error(const convoy_context_t *ctx)
{
    if (ctx == NULL)
        return tls_error;
    /* A copy taken under the lock, in the calling thread's own buffer: another thread's
     * failing call may overwrite the context's message while the caller reads it. */
    static _Thread_local char copy[sizeof(ctx->error)];
    convoy_context_t *c = (convoy_context_t *)ctx; /* the lock, not the message, changes */
    pthread_mutex_lock(&c->error_lock);
    memcpy(copy, c->error, sizeof(copy));
    pthread_mutex_unlock(&c->error_lock);
    return copy;
}

void convoy__log_impl(convoy__log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* host:pid made for each line (lines are rare): a forked child logs its own pid. */
    char who[300] = "";
    if (atomic_load_explicit(&convoy__log_prefix, memory_order_relaxed)) {
        char host[256];
        convoy__proc_host(host, sizeof(host));
        snprintf(who, sizeof(who), "[%s:%ld]", host, (long)getpid());
    }
    /* One fprintf per line so that lines of concurrent threads do not interleave. */
    if (atomic_load_explicit(&convoy__log_threshold, memory_order_relaxed) >= CONVOY__LOG_DEBUG)
        fprintf(stderr, "convoy%s %s (%s:%d): %s\n", who, level_names[level], file, line, msg);
    else
        fprintf(stderr, "convoy%s %s: %s\n", who, level_names[level], msg);
}

void convoy__sleep_until_ns(uint64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

void convoy__spin_wait(convoy__spin_t *lock)
{
    do {
        for (unsigned i = 1; atomic_load_explicit(lock, memory_order_relaxed) != 0; i++) {
            convoy__cpu_relax();
            if (i % CONVOY__SPIN_YIELD_AFTER == 0)
                sched_yield();
        }
    } while (atomic_exchange_explicit(lock, 1, memory_order_acquire) != 0);
}

void convoy__mutex_init_short(pthread_mutex_t *m)
{
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) == 0) {
        int ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP) == 0 &&
                 pthread_mutex_init(m, &a) == 0;
        pthread_mutexattr_destroy(&a);
        if (ok)
            return;
    }
#endif
    pthread_mutex_init(m, NULL);
}

void *convoy__malloc(convoy_context_t *ctx, size_t bytes, const char *what)
{
    void *p = malloc(bytes);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory allocating %zu bytes for %s",
                      bytes, what);
    return p;
}

void *convoy__calloc_lines(convoy_context_t *ctx, size_t bytes, const char *what)
{
    size_t rounded = (bytes + CONVOY__LINE - 1) / CONVOY__LINE * CONVOY__LINE;
    void *p = rounded >= bytes ? aligned_alloc(CONVOY__LINE, rounded) : NULL;
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory allocating %zu bytes for %s",
                      bytes, what);
    else
        memset(p, 0, rounded);
    return p;
}

void *convoy__calloc(convoy_context_t *ctx, size_t n, size_t size, const char *what)
{
    void *p = calloc(n, size);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory allocating %zu x %zu bytes for %s",
                      n, size, what);
    return p;
}
