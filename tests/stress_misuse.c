/*
 * stress_misuse: proves that random API misuse, interleaved with valid work, never
 * crashes, hangs or corrupts the valid work: every bad call returns its error (with a
 * message naming the bad value where the API promises one) or succeeds, and at the end
 * every datum of the valid work holds what a sequential oracle computed, and every task
 * inserted with a completion callback was called back exactly once.
 *
 *   stress_misuse SEED    one seed (its devices, scheduler and operations all follow
 *                         from it); exits 0 when everything held, 1 naming what did not;
 *                         a hang ends in SIGALRM after 120 s (times 10 under sanitizers)
 *
 * The valid work: counters (NVALID data of NINT ints) updated by "add" (RW, += args)
 * and "addfrom" (READ a, RW b: b += a), inserted in program order, whose oracle the
 * program keeps; and a side thread adding to data of its own. The misuse, on data of
 * its own so that it cannot touch the valid counters: NULL and foreign handles, bad
 * names, values, modes, kinds, flags and placements, overlapping registrations, double
 * frees, frees of data with tasks pending, chores that call convoy_wait,
 * convoy_data_acquire, convoy_data_free and convoy_fini (all refused), chores removed
 * and put back while tasks are pending, classes left without a chore for a device,
 * convoy_task_fail with odd codes and views (tests/stress_misuse_calls.c). tests/stress.sh
 * runs it over many seeds.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convoy.h"
#include "stress_misuse.h"

#include "tests/sanitized.h"

#define NSIDE 2 /* the side thread's counters */

static uint64_t rng;
static atomic_int failures;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int sm_pick(int n)
{
    return (int)(next() % (uint64_t)n);
}

void sm_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stress_misuse: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failures++;
}

/* st must be want, and the message contain word (when not NULL). The message read is
 * the calling thread's (convoy_last_error(NULL)), the same text as the one recorded on
 * the context `on` (NULL: none), which the side thread or a chore may overwrite
 * meanwhile. */
convoy_context_t *sm_ctx;
void sm_expect(const char *call, convoy_status_t st, convoy_status_t want,
               const convoy_context_t *on, const char *word)
{
    (void)on;
    if (st != want) {
        sm_fail("%s returned %s, expected %s: %s", call, convoy_status_name(st),
                convoy_status_name(want), convoy_last_error(NULL));
        return;
    }
    if (word != NULL && strstr(convoy_last_error(NULL), word) == NULL)
        sm_fail("%s: the message does not name '%s': %s", call, word, convoy_last_error(NULL));
}

/* ---- chores ---- */

int sm_add_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    int delta;
    memcpy(&delta, t->args, sizeof(delta));
    int *x = t->flows[0];
    for (int i = 0; i < NINT; i++)
        x[i] += delta;
    return 0;
}

static int addfrom_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const int *a = t->flows[0];
    int *b = t->flows[1];
    for (int i = 0; i < NINT; i++)
        b[i] += a[i];
    return 0;
}

int sm_add_batch(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    for (int i = 0; i < n; i++)
        sm_add_chore(tasks[i], stream);
    return 0;
}

/* ---- completion callbacks ---- */

static atomic_int called[MAXCB];
static atomic_int cb_wrong;
int sm_expect_fail[MAXCB]; /* 1: must fail, 0: must succeed, -1: either */
int sm_ncb;

void sm_done_cb(void *arg, uint64_t id, convoy_status_t outcome, const char *msg)
{
    (void)id;
    int k = (int)(intptr_t)arg;
    atomic_fetch_add(&called[k], 1);
    if (sm_expect_fail[k] == 1 && (outcome != CONVOY_ERR_TASK_FAILED || msg == NULL))
        atomic_fetch_add(&cb_wrong, 1);
    if (sm_expect_fail[k] == 0 && outcome != CONVOY_SUCCESS)
        atomic_fetch_add(&cb_wrong, 1);
}

/* ---- the side thread: adds to its own counters, with waits, while misuse goes on ---- */

convoy_class_t *sm_cls_add;
static convoy_data_t *side_d[NSIDE];
static int side_x[NSIDE][NINT];
static int side_sum[NSIDE];
static int side_ops;

static void *side(void *arg)
{
    uint64_t r = *(const uint64_t *)arg | 1; /* its own generator: rng is the main thread's */
    for (int k = 0; k < side_ops; k++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int i = (int)(r % NSIDE), delta = (int)(r >> 32) % 5;
        if (convoy_task_insert(sm_ctx, sm_cls_add, &delta, sizeof(delta), &side_d[i]) ==
            CONVOY_SUCCESS)
            side_sum[i] += delta;
        else
            sm_fail("side thread: convoy_task_insert: %s", convoy_last_error(NULL));
        if (r % 17 == 0)
            convoy_wait(sm_ctx); /* may report the misuse's failures */
        if (r % 23 == 0 &&
            convoy_task_insert(NULL, sm_cls_add, NULL, 0, side_d) != CONVOY_ERR_INVALID)
            sm_fail("side thread: an insert without a context was accepted");
    }
    return NULL;
}

/* ---- the run ---- */

int sm_valid_x[NVALID][NINT];
static int oracle[NVALID][NINT];
int sm_junk_x[NJUNK + 1][NINT];
convoy_data_t *sm_valid_d[NVALID], *sm_junk_d[NJUNK];
convoy_class_t *sm_cls_addfrom, *sm_cls_bad, *sm_cls_flaky, *sm_cls_cpu_only;

static void insert_valid(void)
{
    int k = sm_pick(NVALID);
    int with_opts = sm_pick(3) == 0;
    convoy_task_opts_t o = {0};
    if (with_opts && sm_ncb < MAXCB) {
        int n = convoy_accel_count(sm_ctx);
        o.where = sm_pick(n + 2) - 1; /* any, the CPUs or one accelerator */
        o.done = sm_done_cb;
        o.done_arg = (void *)(intptr_t)sm_ncb;
        sm_expect_fail[sm_ncb] = 0;
    } else {
        with_opts = 0;
    }
    convoy_status_t st;
    if (sm_pick(3) == 0) {
        int a = sm_pick(NVALID);
        convoy_data_t *f[2] = {sm_valid_d[a], sm_valid_d[k]};
        st = convoy_task_insert_ex(sm_ctx, sm_cls_addfrom, NULL, 0, f, with_opts ? &o : NULL);
        if (st == CONVOY_SUCCESS) {
            int src[NINT];
            memcpy(src, oracle[a], sizeof(src));
            for (int i = 0; i < NINT; i++)
                oracle[k][i] += src[i];
        }
    } else {
        int delta = sm_pick(7) - 3;
        st = convoy_task_insert_ex(sm_ctx, sm_cls_add, &delta, sizeof(delta), &sm_valid_d[k],
                                   with_opts ? &o : NULL);
        if (st == CONVOY_SUCCESS)
            for (int i = 0; i < NINT; i++)
                oracle[k][i] += delta;
    }
    if (st != CONVOY_SUCCESS)
        sm_fail("a valid insert returned %s: %s", convoy_status_name(st), convoy_last_error(NULL));
    else if (with_opts)
        sm_ncb++;
}

static const char *const devices_of[] = {"host", "sim", "host,sim"};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stress_misuse SEED\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[1], NULL, 10);
    rng = seed * 0x9E3779B97F4A7C15ull + 1;
    alarm(SANITIZED ? 1200 : 120);
    const char *devices = devices_of[sm_pick(3)];
    const char *sched = sm_pick(2) ? "fifo" : "batch";
    char sim_count[16];
    snprintf(sim_count, sizeof(sim_count), "%d", 1 + sm_pick(2));
    if (convoy_param_preset("devices", devices) != CONVOY_SUCCESS ||
        convoy_param_preset("sched", sched) != CONVOY_SUCCESS ||
        convoy_param_preset("sim_count", sim_count) != CONVOY_SUCCESS ||
        convoy_param_preset("nthreads", "2") != CONVOY_SUCCESS ||
        convoy_param_preset("batch_max_wait_us", sm_pick(2) ? "10" : "3600000000") !=
            CONVOY_SUCCESS ||
        convoy_param_preset("verbose", "error") != CONVOY_SUCCESS) {
        fprintf(stderr, "stress_misuse: a preset was refused: %s\n", convoy_last_error(NULL));
        return 1;
    }
    if (convoy_init(NULL, NULL, &sm_ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "stress_misuse: convoy_init: %s\n", convoy_last_error(NULL));
        return 1;
    }
    convoy_access_t rw = CONVOY_RW, r_rw[2] = {CONVOY_READ, CONVOY_RW};
    if (convoy_class_new(sm_ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &sm_cls_add) != 0 ||
        convoy_class_new(sm_ctx, "addfrom", 2, r_rw, 0, &sm_cls_addfrom) != 0 ||
        convoy_class_new(sm_ctx, "bad", 1, &rw, 0, &sm_cls_bad) != 0 ||
        convoy_class_new(sm_ctx, "flaky", 1, &rw, 0, &sm_cls_flaky) != 0 ||
        convoy_class_new(sm_ctx, "cpu_only", 1, &rw, 0, &sm_cls_cpu_only) != 0) {
        fprintf(stderr, "stress_misuse: convoy_class_new: %s\n", convoy_last_error(NULL));
        return 1;
    }
    convoy_class_t *all[] = {sm_cls_add, sm_cls_addfrom, sm_cls_bad, sm_cls_flaky};
    convoy_chore_fn fns[] = {sm_add_chore, addfrom_chore, sm_bad_chore, sm_add_chore};
    for (int i = 0; i < 4; i++) {
        convoy_class_set_chore(all[i], CONVOY_DEVICE_CPU, fns[i]);
        convoy_class_set_chore(all[i], CONVOY_DEVICE_SIM, fns[i]);
    }
    convoy_class_set_batch_chore(sm_cls_add, CONVOY_DEVICE_SIM, sm_add_batch);
    convoy_class_set_chore(sm_cls_cpu_only, CONVOY_DEVICE_CPU, sm_add_chore);
    for (int i = 0; i < NVALID; i++)
        for (int k = 0; k < NINT; k++)
            sm_valid_x[i][k] = oracle[i][k] = (int)(next() % 100);
    int st = 0;
    for (int i = 0; i < NVALID; i++)
        st |= convoy_data_new(sm_ctx, sm_valid_x[i], sizeof(sm_valid_x[i]), &sm_valid_d[i]);
    for (int i = 0; i < NJUNK; i++)
        st |= convoy_data_new(sm_ctx, sm_junk_x[i], sizeof(sm_junk_x[i]), &sm_junk_d[i]);
    for (int i = 0; i < NSIDE; i++)
        st |= convoy_data_new(sm_ctx, side_x[i], sizeof(side_x[i]), &side_d[i]);
    if (st != 0) {
        fprintf(stderr, "stress_misuse: convoy_data_new: %s\n", convoy_last_error(NULL));
        return 1;
    }
    int ops = SANITIZED ? 600 : 3000;
    side_ops = ops / 2;
    pthread_t side_thread;
    uint64_t side_seed = next();
    pthread_create(&side_thread, NULL, side, &side_seed);
    for (int op = 0; op < ops; op++) {
        int r = sm_pick(10);
        if (r < 5) {
            insert_valid();
        } else if (r < 9) {
            sm_misuse();
        } else if (sm_pick(4) == 0) {
            /* A wait may report the misuse's failures. */
            convoy_status_t w = convoy_wait(sm_ctx);
            if (w != CONVOY_SUCCESS && w != CONVOY_ERR_TASK_FAILED)
                sm_fail("convoy_wait returned %s: %s", convoy_status_name(w),
                        convoy_last_error(NULL));
        } else {
            int k = sm_pick(NVALID), write = sm_pick(2);
            convoy_status_t a = convoy_data_acquire(sm_valid_d[k], write ? CONVOY_RW : CONVOY_READ);
            if (a != CONVOY_SUCCESS)
                sm_fail("acquiring valid datum %d: %s", k, convoy_last_error(NULL));
            else if (memcmp(sm_valid_x[k], oracle[k], sizeof(oracle[k])) != 0)
                sm_fail("valid datum %d after an acquire: %d, expected %d", k, sm_valid_x[k][0],
                        oracle[k][0]);
            if (a == CONVOY_SUCCESS && write) {
                /* The host writes, as acquire(RW) allows: device copies are stale now. */
                sm_valid_x[k][1] += 1000;
                oracle[k][1] += 1000;
            }
        }
    }
    pthread_join(side_thread, NULL);
    convoy_wait(sm_ctx);
    for (int i = 0; i < NVALID; i++) {
        if (convoy_data_acquire(sm_valid_d[i], CONVOY_READ) != CONVOY_SUCCESS)
            sm_fail("acquiring valid datum %d at the end: %s", i, convoy_last_error(NULL));
        for (int k = 0; k < NINT; k++)
            if (sm_valid_x[i][k] != oracle[i][k]) {
                sm_fail("valid datum %d[%d] is %d, the oracle says %d", i, k, sm_valid_x[i][k],
                        oracle[i][k]);
                break;
            }
    }
    for (int i = 0; i < NSIDE; i++) {
        if (convoy_data_acquire(side_d[i], CONVOY_READ) != CONVOY_SUCCESS)
            sm_fail("acquiring side datum %d: %s", i, convoy_last_error(NULL));
        else if (side_x[i][0] != side_sum[i])
            sm_fail("side datum %d is %d, expected %d", i, side_x[i][0], side_sum[i]);
    }
    for (int k = 0; k < sm_ncb; k++)
        if (atomic_load(&called[k]) != 1) {
            sm_fail("completion callback %d called %d times", k, atomic_load(&called[k]));
            break;
        }
    if (atomic_load(&cb_wrong) > 0)
        sm_fail("%d completion callbacks saw the wrong outcome", atomic_load(&cb_wrong));
    if (atomic_load(&sm_chore_violations) > 0)
        sm_fail("%d calls from chores were not refused; the first: %s",
                atomic_load(&sm_chore_violations), sm_chore_violation);
    convoy_stats_t s;
    convoy_get_stats(sm_ctx, &s);
    convoy_fini(sm_ctx);
    convoy_param_preset_clear();
    printf("stress_misuse: seed %" PRIu64 " (devices %s, sched %s): %d operations, %" PRIu64
           " tasks (%" PRIu64 " failed, %" PRIu64 " cancelled), %d callbacks, %d failures\n",
           seed, devices, sched, ops, s.tasks_inserted, s.tasks_failed, s.tasks_cancelled, sm_ncb,
           atomic_load(&failures));
    return atomic_load(&failures) == 0 ? 0 : 1;
}
