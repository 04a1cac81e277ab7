/*
 * Small services every part of convoy uses: errors, logging, time. Internal.
 */
#ifndef CONVOY_UTIL_H
#define CONVOY_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "convoy.h"

#define CONVOY__LINE 64 /* a cache line: what different threads write goes apart */

#if defined(__GNUC__)
#define CONVOY__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CONVOY__LIKELY(x) __builtin_expect(!!(x), 1)
#define CONVOY__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CONVOY__PRINTF(f, a)
#define CONVOY__LIKELY(x) (x)
#define CONVOY__UNLIKELY(x) (x)
#endif

/* Does this CPU have PREFETCHW (x86: CPUID PRFCHW; set once at load, util.c)? */
extern int convoy__cpu_prefetchw;

/* Ask for the lines of [p, p + bytes) ahead of writes to them, with ownership where the
 * CPU can: a write prefetch built for any x86-64 is a read prefetch (prefetcht0), which
 * brings a line another core last wrote in shared state, and the write that follows then
 * waits for it a second time. With PREFETCHW, tiny_tasks' reserve took 10-20% less time
 * (medians) on lent H100 machines (doc/results.md, 2026-12-06, ninth session). bytes is a
 * constant at every use, so the loop unrolls into one instruction a line; 1 asks for the
 * line holding p. A hint: it never faults (and does nothing without GCC's builtins). */
static inline void convoy__prefetch_w(const void *p, size_t bytes)
{
#if defined(__GNUC__)
    const char *c = (const char *)p;
#if defined(__x86_64__) || defined(__i386__)
    if (convoy__cpu_prefetchw) {
        for (size_t b = 0; b < bytes + CONVOY__LINE - 1; b += CONVOY__LINE)
            __asm__ volatile("prefetchw %0" : : "m"(c[b < bytes ? b : bytes - 1]));
        return;
    }
#endif
    for (size_t b = 0; b < bytes + CONVOY__LINE - 1; b += CONVOY__LINE)
        __builtin_prefetch(c + (b < bytes ? b : bytes - 1), 1);
#else
    (void)p;
    (void)bytes;
#endif
}

/*
 * Record an error: the message goes to the calling thread's last error and, when ctx is
 * not NULL, to the context's; it is logged at level 'debug' (the caller that decides the
 * error is final logs it at 'error'). Returns status, so that `return convoy__error(...)`
 * reads naturally. A macro, so that the status returned is the caller's own expression
 * (evaluated twice: never one with side effects): a variadic function is never inlined,
 * and without it a compiler optimising across files (link-time optimisation) could not
 * tell that an error path returns no CONVOY_SUCCESS, and warned of outputs left unset.
 */
convoy_status_t convoy__error_record(convoy_context_t *ctx, convoy_status_t status, const char *fmt,
                                     ...) CONVOY__PRINTF(3, 4);
/* What convoy__error returns: the caller's own status expression. */
static inline convoy_status_t convoy__error_is(convoy_status_t recorded, convoy_status_t status)
{
    (void)recorded;
    return status;
}
#define convoy__error(ctx, status, ...)                                                            \
    convoy__error_is(convoy__error_record((ctx), (status), __VA_ARGS__), (status))

/* Log levels, CONVOY_VERBOSE selects the most detailed one printed (default 'warn'). */
typedef enum convoy__log_level {
    CONVOY__LOG_ERROR = 0,
    CONVOY__LOG_WARN = 1,
    CONVOY__LOG_INFO = 2,
    CONVOY__LOG_DEBUG = 3,
    CONVOY__LOG_TRACE = 4,
} convoy__log_level_t;

/* The level for messages logged without a context: set by each convoy_init from its
 * parameter 'verbose' (with several contexts, the last one started wins for these), read
 * with one relaxed load. */
extern _Atomic int convoy__log_threshold;
/* Set at init from the parameter 'log_prefix': 1 to start each line with host:pid. */
extern _Atomic int convoy__log_prefix;

void convoy__log_impl(convoy__log_level_t level, const char *file, int line, const char *fmt, ...)
    CONVOY__PRINTF(4, 5);

#define convoy__log(level, ...)                                                                    \
    do {                                                                                           \
        if (CONVOY__UNLIKELY((int)(level) <=                                                       \
                             atomic_load_explicit(&convoy__log_threshold, memory_order_relaxed)))  \
            convoy__log_impl((level), __FILE__, __LINE__, __VA_ARGS__);                            \
    } while (0)
#define convoy__log_error(...) convoy__log(CONVOY__LOG_ERROR, __VA_ARGS__)
#define convoy__log_warn(...) convoy__log(CONVOY__LOG_WARN, __VA_ARGS__)
#define convoy__log_info(...) convoy__log(CONVOY__LOG_INFO, __VA_ARGS__)
#define convoy__log_debug(...) convoy__log(CONVOY__LOG_DEBUG, __VA_ARGS__)

/* The level of one context (its parameter 'verbose'), or the global one for NULL. */
int convoy__log_level(const convoy_context_t *ctx);

/* Log under ctx's own level (NULL: the global one). A function call per site, unlike
 * convoy__log: meant for errors and decisions, not for hot paths. */
#define convoy__log_ctx(ctx, level, ...)                                                           \
    do {                                                                                           \
        if ((int)(level) <= convoy__log_level(ctx))                                                \
            convoy__log_impl((level), __FILE__, __LINE__, __VA_ARGS__);                            \
    } while (0)

/*
 * Aggregated logging, after Open MPI's help-message aggregation: for one (ctx, key) the
 * first message of a burst is printed; the repeats are counted, and one line "... and N
 * more like it: <first>" is printed when the next one comes after a pause of
 * CONVOY__LOG_REPEAT_GAP_NS (the burst has ended) or at convoy__log_repeat_flush. key
 * names the kind of message ("task failed"); compared as a string. Thread-safe; never
 * allocates (when its fixed table is full, messages are printed one by one).
 */
#define convoy__log_repeat(ctx, key, level, ...)                                                   \
    convoy__log_repeat_impl((ctx), (key), (level), __FILE__, __LINE__, __VA_ARGS__)
void convoy__log_repeat_impl(const convoy_context_t *ctx, const char *key,
                             convoy__log_level_t level, const char *file, int line, const char *fmt,
                             ...) CONVOY__PRINTF(6, 7);
/* Print the summary of every open burst of ctx (NULL: of all contexts) and forget them:
 * convoy_wait and convoy_fini call it, so that a count is never lost. */
void convoy__log_repeat_flush(const convoy_context_t *ctx);
#define CONVOY__LOG_REPEAT_GAP_NS 1000000000ull

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t convoy__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One pass of a busy-wait: tells the core it spins (x86 pause, arm64 yield), so that a
 * sibling hyperthread gets the pipeline and the spin does not flood the memory system. */
static inline void convoy__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/*
 * A spin lock, for sections mostly well under a microsecond that few threads share at a
 * time (a datum's dependency state, an accelerator's ready queue, a pool of records): one
 * locked exchange to take it and a store to give it back, where a glibc mutex took 4 locked
 * instructions and about 120 instructions a pair (bench/host_profile.py). A waiter reads
 * until the lock looks free and yields its core every CONVOY__SPIN_YIELD_AFTER reads, so
 * that a holder that was preempted on a busy machine, or one in a rare long section (a
 * pool's new chunk, a queue's list doubling with a large backlog, both under malloc),
 * gets the core back. Not for locks many threads wait on (the CPUs' queue).
 */
typedef atomic_int convoy__spin_t;
#define CONVOY__SPIN_YIELD_AFTER 256 /* reads of a held lock between two sched_yield calls */

void convoy__spin_wait(convoy__spin_t *lock);

static inline void convoy__spin_lock(convoy__spin_t *lock)
{
    if (atomic_exchange_explicit(lock, 1, memory_order_acquire) != 0)
        convoy__spin_wait(lock);
}

static inline void convoy__spin_unlock(convoy__spin_t *lock)
{
    atomic_store_explicit(lock, 0, memory_order_release);
}

/* Sleep until an absolute CLOCK_MONOTONIC time (returns at once when it has passed). */
void convoy__sleep_until_ns(uint64_t deadline_ns);

/* A mutex that many threads take for a few hundred nanoseconds at a time (a ready queue):
 * where glibc has them, an adaptive one, which spins a moment before it sleeps, so that
 * a thread finding it held does not pay a futex sleep and wake-up, microseconds on a
 * sandboxed kernel (doc/results.md). */
void convoy__mutex_init_short(pthread_mutex_t *m);

/* Allocation that records CONVOY_ERR_NOMEM with the size on failure. */
void *convoy__malloc(convoy_context_t *ctx, size_t bytes, const char *what);
void *convoy__calloc(convoy_context_t *ctx, size_t n, size_t size, const char *what);
/* Zeroed, starting on a cache line (CONVOY__LINE), for arrays of per-queue state whose
 * elements different threads write: with the element type aligned to a line, no two
 * share one. free() releases it. */
void *convoy__calloc_lines(convoy_context_t *ctx, size_t bytes, const char *what);

/*
 * Threads of convoy's own (CPU workers, progress threads, sim streams) mark themselves
 * at their start with what they are ("a CPU worker"): the calls that would block on
 * the runtime's progress (convoy_wait, acquire, free, fini) check it and refuse, since
 * from such a thread they would wait for themselves. NULL in the program's threads.
 */
void convoy__thread_mark(const char *role);
const char *convoy__thread_role(void);

/* Name the calling thread "convoy-" followed by the printf-style fmt (cut to the system's
 * 15 characters), as top -H, ps -L, gdb and perf show it. */
void convoy__thread_name(const char *fmt, ...) CONVOY__PRINTF(1, 2);

#define CONVOY__MIN(a, b) ((a) < (b) ? (a) : (b))
#define CONVOY__MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* CONVOY_UTIL_H */
