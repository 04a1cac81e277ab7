/*
 * The harness of tests/check_pipeline and tests/check_pipeline_faults: a "world" of data
 * handles with host buffers of uint64 words, a table of task classes (CPU only, sim only,
 * both, batchable with and without a batch chore), and for every task a CPU "observer"
 * successor that reads one datum the task wrote and so runs exactly when the task
 * succeeded (a failed or cancelled task cancels it). Each chore mixes every word its
 * readable flows hold into a digest and fills its written flows from it, so any lost,
 * stale or reordered version changes the final bytes. After each convoy_wait the harness
 * replays the tasks in insertion order on private copies (the oracle), skipping the ones
 * that did not succeed, and compares every host buffer (world_wait).
 *
 * The sim's cost model is set to zero latency (sim_*_us=0, fast link) unless a test
 * needs otherwise: the tests assert counters and outcomes, never timings.
 */
#ifndef CONVOY_TESTS_PIPELINE_WORLD_H
#define CONVOY_TESTS_PIPELINE_WORLD_H

#include <check.h>
#include <stdatomic.h>
#include <stdint.h>

#include "convoy.h"
#include "tests/test_util.h"

#define KiB ((size_t)1024)
#define MAX_TASKS 4096 /* tasks of the world (observers not counted) */
#define MAX_FLOWS 4

enum { ON_CPU = 1, ON_SIM = 2 };

typedef struct cspec {
    const char *name;
    int nflows;
    convoy_access_t modes[MAX_FLOWS];
    unsigned where; /* ON_CPU | ON_SIM: the chores it has */
    int batchable;
    int batch_chore; /* a batch chore for each kind in where */
} cspec_t;

enum {
    S_CPU_RW,
    S_CPU_W,
    S_CPU_BATCH,
    S_SIM_RW,
    S_SIM_TINY,
    S_SIM_RW_BATCH,
    S_SIM_W2,
    S_BOTH,
    NSPECS
};

/* The argument block of every task. */
typedef struct targs {
    uint32_t task; /* index in the world */
    uint16_t spec;
    uint16_t fail; /* the chore scribbles over its written flows and returns 7 */
    uint64_t salt;
} targs_t;

typedef struct gtask {
    int spec;
    int fail;
    int data[MAX_FLOWS];
    uint64_t salt;
    uint64_t id; /* convoy's task id (insertion number, observers included) */
} gtask_t;

typedef struct world {
    convoy_context_t *ctx;
    convoy_class_t *cls[NSPECS];
    convoy_class_t *observer;
    int ndata;
    convoy_data_t **d;
    uint64_t **host;   /* what convoy reads and writes */
    uint64_t **oracle; /* the sequential result of the tasks that succeeded */
    size_t *bytes;
    gtask_t t[MAX_TASKS];
    int ntasks;
    int verified;      /* tasks checked by earlier waits */
    uint64_t next_id;  /* convoy's next task id */
    convoy_stats_t st; /* at the last wait */
    int pinned_ok;     /* device memory kept out of use on purpose (untracked transfers) */
} world_t;

typedef struct verdict {
    convoy_status_t wait;
    int ok, failed, cancelled; /* among this wait's tasks (observers not counted) */
    char msg[1024];            /* convoy_wait's message when it failed */
} verdict_t;

#define NDATA_RANDOM 24 /* data of the random tests */

extern const char *const g_scheds[2]; /* "fifo", "batch": a loop test's index picks */
extern const cspec_t g_specs[NSPECS]; /* the classes, by S_* */
extern atomic_int g_ran[MAX_TASKS];   /* chore runs per task */
extern atomic_int g_seen[MAX_TASKS];  /* the observer ran: the task succeeded */

/* ps_random: tu_ps_sim's presets with 80 KiB of device memory and a 12 KiB split size,
 * for NDATA_RANDOM data of random_sizes. */
void ps_random(tu_pset_t *p, const char *sched);
void random_sizes(tu_rng_t *rng, size_t *sizes, int n);
/* The scheduler (by parity) and seed (CONVOY_TEST_SEED, else from i) of loop index i. */
void sched_and_seed(int i, const char **sched, uint64_t *seed);

/* Start convoy with the presets and make ndata data of the given sizes (multiples of 8),
 * filled from the seed. */
void world_init(world_t *w, const tu_pset_t *ps, int ndata, const size_t *sizes, uint64_t seed);
/* Insert a task of class spec (and its observer) on data[] (spec's nflows distinct data
 * indices); fail: its chore scribbles over its written flows and returns 7. Returns its
 * index in the world. */
int world_task(world_t *w, int spec, int fail, const int *data, uint64_t salt);
/* A task of class spec (or a random class) on random distinct data; fail_pct percent of
 * those whose class may fail alone are made to fail. */
void world_random_task_of(world_t *w, tu_rng_t *rng, int spec, int fail_pct);
void world_random_task(world_t *w, tu_rng_t *rng, int fail_pct);
/* convoy_wait, then this wait's tasks checked against the oracle (strict: exactly the
 * tasks made to fail failed). */
verdict_t world_wait(world_t *w, int strict);
convoy_stats_t world_stats(const world_t *w);
/* Free every handle, check the sim gave all its memory back, stop convoy. */
void world_fini(world_t *w);
/* A world of NDATA_RANDOM data and n random tasks under ps (device faults the runtime
 * must absorb): every task succeeds and the host holds the sequential result. */
void random_graph_all_succeed(tu_pset_t *ps, uint64_t seed, int n);

#endif
