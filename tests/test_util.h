/*
 * Helpers shared by the Check suites (tests/check_*.c).
 *
 * Every suite's main() is `return tu_main(suite())`: it reads the test knobs below,
 * removes every CONVOY_* variable from the environment (a developer's CONVOY_DEVICES or
 * CONVOY_SCHED would otherwise override the presets the tests rely on: the environment
 * wins over presets), and runs the suite in Check's forking mode unless CK_FORK=no.
 *
 * Test knobs (environment, read once by tu_main, never seen by convoy itself):
 *   CONVOY_TEST_SCALE    a factor for the sizes of the random tests (e.g. 0.2); default 1,
 *                        or 0.2 in a build with AddressSanitizer or ThreadSanitizer
 *   CONVOY_TEST_SEED     run the random tests with this one seed only (to reproduce a
 *                        failure: the failing seed is in the failure message)
 *   CONVOY_TEST_VERBOSE  passed to convoy as the parameter 'verbose' (info, debug, ...)
 *
 * Under a debugger: CK_FORK=no gdb tests/check_x (never initialise CUDA in a parent that
 * forks: the suites select devices host or sim through presets in each test).
 */
#ifndef CONVOY_TEST_UTIL_H
#define CONVOY_TEST_UTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "convoy.h"

/* Sanitizer builds, for sizes and timeouts. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TU_SANITIZED 1
#endif
#endif
#ifndef TU_SANITIZED
#define TU_SANITIZED 0
#endif

/* Run the suite (forking unless CK_FORK=no) and return main's exit status. */
int tu_main(Suite *s);

/* The size factor (CONVOY_TEST_SCALE, or the sanitizer default), in (0, 100]. */
double tu_scale(void);
/* n scaled by tu_scale(), at least min. */
int tu_scaled(int n, int min);
/* How much slower than a plain build this one runs (1, or about 10 with sanitizers). */
double tu_slowdown(void);
/* The seed given by CONVOY_TEST_SEED, or -1 when none (run the suite's own seeds). */
int64_t tu_seed_override(void);

/*
 * A test case whose tests each get `seconds` of wall time (times tu_slowdown()): Check's
 * timeout when forking, and in CK_FORK=no mode a watchdog alarm (not armed under a
 * debugger) that prints the test's name and exits. Also installs a fixture that clears
 * presets and CONVOY_* variables around each test, so that tests stay independent in
 * CK_FORK=no mode too.
 */
TCase *tu_tcase(Suite *s, const char *name, double seconds);

/* A NULL-terminated list of parameter name/value pairs. */
typedef const char *const tu_presets_t[];

/* Clear the presets and set these ones (asserting each is accepted); NULL: none. Adds
 * verbose=CONVOY_TEST_VERBOSE when that is set. */
void tu_set_presets(const char *const *presets);

/* convoy_init with these presets (argc/argv NULL); asserts success and returns the
 * context. */
convoy_context_t *tu_init(const char *const *presets);

/* Run body(ctx, arg) on a context made with these presets, then fini it and clear the
 * presets. */
void tu_with_presets(const char *const *presets, void (*body)(convoy_context_t *ctx, void *arg),
                     void *arg);

/* Remove every CONVOY_* variable from the environment. */
void tu_env_clear(void);

/* Threads of this process (from /proc/self/task); -1 when unknown. */
int tu_thread_count(void);
/* The thread count once it is at most `want`, else after a second (times tu_slowdown()):
 * a joined thread stays listed in /proc for a moment while the kernel reaps it, longer on
 * a loaded machine. A thread that really outlives its join stays listed. */
int tu_thread_count_settled(int want);
/* The thread count once it has not changed for 50 ms (at most a second, times
 * tu_slowdown()): for a count to start from when threads that outlive a context (a
 * sanitizer's) may exist besides those being reaped. */
int tu_thread_count_stable(void);

/* Presets for tu_init, built up in place: the newest setting of a name wins. */
typedef struct tu_pset {
    const char *kv[160];
    int n;
    char vals[64][48];
    int nv;
} tu_pset_t;
void tu_ps_set(tu_pset_t *p, const char *k, const char *v);
void tu_ps_setf(tu_pset_t *p, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reset p to one sim device with a zero-latency cost model, the given scheduler, two CPU
 * workers, no binding, errors only (expected failures log at warn). */
void tu_ps_sim(tu_pset_t *p, const char *sched);

/* ck_assert records its location on every call (a write to a pipe): too slow inside loops
 * over thousands of items, which check with this and abort only on failure. */
#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

/* Assert that convoy_last_error(ctx) contains each of the NULL-terminated strings. */
#define tu_assert_error_has(ctx, ...)                                                              \
    tu_assert_error_has_((ctx), __FILE__, __LINE__, __VA_ARGS__, NULL)
void tu_assert_error_has_(const convoy_context_t *ctx, const char *file, int line, ...);

/* A small deterministic random generator (splitmix64), one per test and seed. */
typedef struct tu_rng {
    uint64_t s;
} tu_rng_t;
void tu_rng_seed(tu_rng_t *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng_t *r);
/* Uniform in [lo, hi] (inclusive). */
int tu_rng_range(tu_rng_t *r, int lo, int hi);

/* A 64-bit mix of h and x, for order-sensitive checksums. */
static inline uint64_t tu_mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return h;
}

/* Wall-clock seconds (CLOCK_MONOTONIC). */
double tu_now(void);

/* stderr captured into a temporary file between tu_capture_start and tu_capture_end,
 * which returns what was written (the first 16 KiB), NUL-terminated, in c. */
typedef struct tu_capture {
    int fd, saved;
    char text[16384];
} tu_capture_t;
void tu_capture_start(tu_capture_t *c);
const char *tu_capture_end(tu_capture_t *c);

#endif /* CONVOY_TEST_UTIL_H */
