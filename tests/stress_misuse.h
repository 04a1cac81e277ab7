/*
 * What tests/stress_misuse.c (the valid work, the oracle, main) and
 * tests/stress_misuse_calls.c (the misuse and the misbehaving chore) share.
 */
#ifndef CONVOY_STRESS_MISUSE_H
#define CONVOY_STRESS_MISUSE_H

#include <stdatomic.h>

#include "convoy.h"

#define NVALID 8     /* valid counters */
#define NJUNK 6      /* data the misuse may break */
#define NINT 4       /* ints per datum */
#define MAXCB 100000 /* tasks with a completion callback, at most */

extern convoy_context_t *sm_ctx;
extern convoy_class_t *sm_cls_add, *sm_cls_addfrom, *sm_cls_bad, *sm_cls_flaky, *sm_cls_cpu_only;
extern int sm_valid_x[NVALID][NINT];   /* the valid counters' memory */
extern int sm_junk_x[NJUNK + 1][NINT]; /* the misuse's data, and a spare row */
extern convoy_data_t *sm_valid_d[NVALID], *sm_junk_d[NJUNK];
extern int sm_expect_fail[MAXCB];      /* per callback: 1 must fail, 0 must succeed, -1 either */
extern int sm_ncb;                     /* callbacks handed out so far */
extern atomic_int sm_chore_violations; /* calls from chores that were not refused */
extern char sm_chore_violation[256];   /* the first of them */

/* A random number in [0, n), from the seed. */
int sm_pick(int n);
/* Report one failure (the run then exits 1). */
void sm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* st must be want, and the calling thread's message contain word (when not NULL). */
void sm_expect(const char *call, convoy_status_t st, convoy_status_t want,
               const convoy_context_t *on, const char *word);
int sm_add_chore(const convoy_task_view_t *t, void *stream);
int sm_add_batch(const convoy_task_view_t *const *tasks, int n, void *stream);
void sm_done_cb(void *arg, uint64_t id, convoy_status_t outcome, const char *msg);
/* The misbehaving chore, and one random misuse. */
int sm_bad_chore(const convoy_task_view_t *t, void *stream);
void sm_misuse(void);

#endif
