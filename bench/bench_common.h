/*
 * What the benchmarks share: option parsing and the closing key=value line.
 */
#ifndef CONVOY_BENCH_COMMON_H
#define CONVOY_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__unix__)
#include <sys/resource.h>
#endif

#include "convoy.h"

/* Valgrind's client requests, where its headers are installed (bench_timed_begin). */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* perf's control pipe, when BENCH_PERF_CTL names it: `perf record -D -1
 * --control=fifo:PATH` then samples only the timed windows, as callgrind counts them. */
static inline void bench_perf_ctl(const char *cmd)
{
    static FILE *ctl;
    static int looked;
    if (!looked) {
        const char *path = getenv("BENCH_PERF_CTL");
        looked = 1;
        if (path != NULL && path[0] != '\0' && (ctl = fopen(path, "w")) == NULL)
            fprintf(stderr, "bench: cannot open BENCH_PERF_CTL=%s; perf samples the whole run\n",
                    path);
    }
    if (ctl != NULL) {
        fputs(cmd, ctl);
        fflush(ctl);
    }
}

/* The timed part of a run, marked for profilers: under `valgrind --tool=callgrind
 * --instr-atstart=no` (bench/host_profile.py) only what every thread does between
 * bench_timed_begin and bench_timed_end is counted, not the set-up, the checks or the
 * frees around it, and perf samples only it through BENCH_PERF_CTL. Outside them each is
 * a few instructions. */
static inline void bench_timed_begin(void)
{
    bench_perf_ctl("enable\n");
#ifdef BENCH_HAVE_CALLGRIND
    CALLGRIND_START_INSTRUMENTATION;
#endif
}

static inline void bench_timed_end(void)
{
#ifdef BENCH_HAVE_CALLGRIND
    CALLGRIND_STOP_INSTRUMENTATION;
#endif
    bench_perf_ctl("disable\n");
}

/* Page faults of the whole process so far (minor and major), 0 where unknown: in a
 * virtual machine a page touched for the first time can cost microseconds. */
static inline long bench_page_faults(void)
{
#if defined(__unix__)
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        return ru.ru_minflt + ru.ru_majflt;
#endif
    return 0;
}

/* "--name=value" or "--name value": the value, advancing *i; NULL if argv[*i] is not it. */
static inline const char *bench_opt(int argc, char **argv, int *i, const char *name)
{
    size_t l = strlen(name);
    if (strncmp(argv[*i], name, l) != 0)
        return NULL;
    if (argv[*i][l] == '=')
        return argv[*i] + l + 1;
    if (argv[*i][l] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* A positive integer option value, or exit 2 naming the option and the value. */
static inline long bench_long(const char *prog, const char *name, const char *v, long min, long max)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "%s: %s: '%s' is not an integer in [%ld, %ld]\n", prog, name, v, min, max);
        exit(2);
    }
    return x;
}

/* Start convoy or exit 1 with its message (an unknown scheduler lists the known ones). */
static inline convoy_context_t *bench_init(const char *prog, int *argc, char ***argv)
{
    convoy_context_t *ctx = NULL;
    if (convoy_init(argc, argv, &ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(NULL));
        exit(1);
    }
    return ctx;
}

/* The devices the accelerator tasks could run on: "sim0", "cuda0,cuda1" or "host". */
static inline const char *bench_device(const convoy_context_t *ctx)
{
    static char names[256];
    size_t o = 0;
    names[0] = '\0';
    for (int i = 0; i < convoy_accel_count(ctx) && o + 1 < sizeof(names); i++)
        o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", i ? "," : "",
                              convoy_accel_name(ctx, i));
    return o > 0 ? names : "host";
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of n values, sorting them in place. */
static inline double bench_quantile(double *v, int n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    int k = (int)(q * (n - 1) + 0.5);
    return v[k];
}

#endif /* CONVOY_BENCH_COMMON_H */
