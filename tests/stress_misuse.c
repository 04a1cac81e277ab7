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
 * convoy_task_fail with odd codes and views. tests/stress.sh runs it over many seeds.
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

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define NVALID 8 /* valid counters */
#define NJUNK 6  /* data the misuse may break */
#define NINT 4   /* ints per datum */
#define NSIDE 2  /* the side thread's counters */

static uint64_t rng;
static atomic_int failures;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int pick(int n)
{
    return (int)(next() % (uint64_t)n);
}

static void fail(const char *fmt, ...)
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
static convoy_context_t *ctx;
static void expect(const char *call, convoy_status_t st, convoy_status_t want,
                   const convoy_context_t *on, const char *word)
{
    (void)on;
    if (st != want) {
        fail("%s returned %s, expected %s: %s", call, convoy_status_name(st),
             convoy_status_name(want), convoy_last_error(NULL));
        return;
    }
    if (word != NULL && strstr(convoy_last_error(NULL), word) == NULL)
        fail("%s: the message does not name '%s': %s", call, word, convoy_last_error(NULL));
}

/* ---- chores ---- */

static int add_chore(const convoy_task_view_t *t, void *stream)
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

static int add_batch(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    for (int i = 0; i < n; i++)
        add_chore(tasks[i], stream);
    return 0;
}

/* What a misbehaving chore does, from its args. */
enum { BAD_WAIT, BAD_ACQUIRE, BAD_FREE, BAD_FINI, BAD_FAIL, BAD_FAIL0, BAD_FAIL_NULL, BAD_COUNT };
typedef struct bad_args {
    int what;
    convoy_data_t *own; /* the handle of the task's own datum */
    int code;
} bad_args_t;
static atomic_int chore_violations;
static char chore_violation[256];

static void chore_bad(const char *what, convoy_status_t st)
{
    if (atomic_fetch_add(&chore_violations, 1) == 0)
        snprintf(chore_violation, sizeof(chore_violation), "a chore's %s returned %s", what,
                 convoy_status_name(st));
}

static int bad_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    bad_args_t a;
    memcpy(&a, t->args, sizeof(a));
    convoy_status_t st;
    switch (a.what) {
    case BAD_WAIT:
        if ((st = convoy_wait(ctx)) != CONVOY_ERR_STATE)
            chore_bad("convoy_wait", st);
        break;
    case BAD_ACQUIRE:
        /* INVALID when the main thread is freeing the datum (waiting for this task). */
        st = convoy_data_acquire(a.own, CONVOY_READ);
        if (st != CONVOY_ERR_STATE && st != CONVOY_ERR_INVALID)
            chore_bad("convoy_data_acquire", st);
        break;
    case BAD_FREE:
        convoy_data_free(a.own); /* refused: the handle stays */
        if (convoy_data_bytes(a.own) != NINT * sizeof(int))
            chore_bad("convoy_data_free (the handle went)", CONVOY_SUCCESS);
        break;
    case BAD_FINI:
        convoy_fini(ctx); /* refused: the context stays */
        break;
    case BAD_FAIL:
        convoy_task_fail(t, a.code);
        convoy_task_fail(t, a.code); /* twice: still one failure */
        return 0;
    case BAD_FAIL0:
        convoy_task_fail(t, 0); /* taken as -1 */
        return 0;
    case BAD_FAIL_NULL:
        convoy_task_fail(NULL, 3); /* ignored */
        return 0;
    }
    return 0;
}

/* ---- completion callbacks ---- */

#define MAXCB 100000
static atomic_int called[MAXCB];
static atomic_int cb_wrong;
static int expect_fail[MAXCB]; /* 1: must fail, 0: must succeed, -1: either */
static int ncb;

static void done_cb(void *arg, uint64_t id, convoy_status_t outcome, const char *msg)
{
    (void)id;
    int k = (int)(intptr_t)arg;
    atomic_fetch_add(&called[k], 1);
    if (expect_fail[k] == 1 && (outcome != CONVOY_ERR_TASK_FAILED || msg == NULL))
        atomic_fetch_add(&cb_wrong, 1);
    if (expect_fail[k] == 0 && outcome != CONVOY_SUCCESS)
        atomic_fetch_add(&cb_wrong, 1);
}

/* ---- the side thread: adds to its own counters, with waits, while misuse goes on ---- */

static convoy_class_t *cls_add;
static convoy_data_t *side_d[NSIDE];
static int side_x[NSIDE][NINT];
static int side_sum[NSIDE];
static int side_ops;

static void *side(void *arg)
{
    (void)arg;
    uint64_t r = rng | 1;
    for (int k = 0; k < side_ops; k++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int i = (int)(r % NSIDE), delta = (int)(r >> 32) % 5;
        if (convoy_task_insert(ctx, cls_add, &delta, sizeof(delta), &side_d[i]) == CONVOY_SUCCESS)
            side_sum[i] += delta;
        else
            fail("side thread: convoy_task_insert: %s", convoy_last_error(NULL));
        if (r % 17 == 0)
            convoy_wait(ctx); /* may report the misuse's failures */
        if (r % 23 == 0 && convoy_task_insert(NULL, cls_add, NULL, 0, side_d) != CONVOY_ERR_INVALID)
            fail("side thread: an insert without a context was accepted");
    }
    return NULL;
}

/* ---- the run ---- */

static int valid_x[NVALID][NINT], oracle[NVALID][NINT];
static int junk_x[NJUNK + 1][NINT];
static convoy_data_t *valid_d[NVALID], *junk_d[NJUNK];
static convoy_class_t *cls_addfrom, *cls_bad, *cls_flaky, *cls_cpu_only;

static void insert_valid(void)
{
    int k = pick(NVALID);
    int with_opts = pick(3) == 0;
    convoy_task_opts_t o = {0};
    if (with_opts && ncb < MAXCB) {
        int n = convoy_accel_count(ctx);
        o.where = pick(n + 2) - 1; /* any, the CPUs or one accelerator */
        o.done = done_cb;
        o.done_arg = (void *)(intptr_t)ncb;
        expect_fail[ncb] = 0;
    } else {
        with_opts = 0;
    }
    convoy_status_t st;
    if (pick(3) == 0) {
        int a = pick(NVALID);
        convoy_data_t *f[2] = {valid_d[a], valid_d[k]};
        st = convoy_task_insert_ex(ctx, cls_addfrom, NULL, 0, f, with_opts ? &o : NULL);
        if (st == CONVOY_SUCCESS) {
            int src[NINT];
            memcpy(src, oracle[a], sizeof(src));
            for (int i = 0; i < NINT; i++)
                oracle[k][i] += src[i];
        }
    } else {
        int delta = pick(7) - 3;
        st = convoy_task_insert_ex(ctx, cls_add, &delta, sizeof(delta), &valid_d[k],
                                   with_opts ? &o : NULL);
        if (st == CONVOY_SUCCESS)
            for (int i = 0; i < NINT; i++)
                oracle[k][i] += delta;
    }
    if (st != CONVOY_SUCCESS)
        fail("a valid insert returned %s: %s", convoy_status_name(st), convoy_last_error(NULL));
    else if (with_opts)
        ncb++;
}

/* One random misuse. */
static void misuse(void)
{
    convoy_status_t st;
    char buf[64];
    int j = pick(NJUNK);
    convoy_access_t modes[CONVOY_MAX_FLOWS + 1];
    for (int i = 0; i <= CONVOY_MAX_FLOWS; i++)
        modes[i] = CONVOY_RW;
    convoy_class_t *c = NULL;
    switch (pick(24)) {
    case 0:
        expect("convoy_task_insert(NULL ctx)",
               convoy_task_insert(NULL, cls_add, NULL, 0, &junk_d[j]), CONVOY_ERR_INVALID, NULL,
               "ctx");
        break;
    case 1:
        expect("convoy_task_insert(NULL cls)", convoy_task_insert(ctx, NULL, NULL, 0, &junk_d[j]),
               CONVOY_ERR_INVALID, ctx, "cls");
        break;
    case 2: {
        convoy_data_t *f[2] = {junk_d[j], NULL};
        expect("convoy_task_insert(NULL flow)", convoy_task_insert(ctx, cls_addfrom, NULL, 0, f),
               CONVOY_ERR_INVALID, ctx, "flow 1");
        expect("convoy_task_insert(NULL flows)", convoy_task_insert(ctx, cls_add, NULL, 0, NULL),
               CONVOY_ERR_INVALID, ctx, "flows");
        expect("convoy_task_insert(NULL args, size 4)",
               convoy_task_insert(ctx, cls_add, NULL, 4, &junk_d[j]), CONVOY_ERR_INVALID, ctx,
               "args_size is 4");
        break;
    }
    case 3: {
        int n = pick(2) ? 0 : CONVOY_MAX_FLOWS + 1 + pick(100);
        snprintf(buf, sizeof(buf), "nflows %d", n);
        expect("convoy_class_new(nflows)", convoy_class_new(ctx, "bad", n, modes, 0, &c),
               CONVOY_ERR_INVALID, ctx, buf);
        break;
    }
    case 4: {
        int bad = pick(2) ? 0 : 4 + pick(100);
        modes[1] = (convoy_access_t)bad;
        snprintf(buf, sizeof(buf), "access mode %d", bad);
        expect("convoy_class_new(mode)", convoy_class_new(ctx, "bad", 2, modes, 0, &c),
               CONVOY_ERR_INVALID, ctx, buf);
        expect("convoy_class_new(NULL modes)", convoy_class_new(ctx, "bad", 2, NULL, 0, &c),
               CONVOY_ERR_INVALID, ctx, "modes");
        expect("convoy_class_new(no name)", convoy_class_new(ctx, "", 1, modes, 0, &c),
               CONVOY_ERR_INVALID, ctx, "name");
        expect("convoy_class_new(NULL cls_p)", convoy_class_new(ctx, "bad", 1, modes, 0, NULL),
               CONVOY_ERR_INVALID, ctx, "cls_p");
        break;
    }
    case 5: {
        unsigned flags = 1u << (1 + pick(31));
        snprintf(buf, sizeof(buf), "0x%x", flags);
        expect("convoy_class_new(flags)", convoy_class_new(ctx, "bad", 1, modes, flags, &c),
               CONVOY_ERR_INVALID, ctx, buf);
        break;
    }
    case 6: {
        int kind = pick(2) ? -1 - pick(5) : CONVOY_DEVICE_KIND_COUNT + pick(100);
        snprintf(buf, sizeof(buf), "device kind %d", kind);
        expect("convoy_class_set_chore(kind)",
               convoy_class_set_chore(cls_flaky, (convoy_device_kind_t)kind, add_chore),
               CONVOY_ERR_INVALID, ctx, buf);
        expect("convoy_class_set_batch_chore(kind)",
               convoy_class_set_batch_chore(cls_add, (convoy_device_kind_t)kind, add_batch),
               CONVOY_ERR_INVALID, ctx, buf);
        expect("convoy_class_set_chore(NULL)",
               convoy_class_set_chore(NULL, CONVOY_DEVICE_CPU, add_chore), CONVOY_ERR_INVALID, NULL,
               "cls");
        expect("convoy_class_set_batch_chore(not batchable)",
               convoy_class_set_batch_chore(cls_addfrom, CONVOY_DEVICE_CPU, add_batch),
               CONVOY_ERR_INVALID, ctx, "BATCHABLE");
        break;
    }
    case 7: {
        /* Overlapping registrations, the NULL pointer and zero bytes. */
        int off = pick(NINT);
        convoy_data_t *d = NULL;
        expect("convoy_data_new(overlap)",
               convoy_data_new(ctx, (char *)junk_x[j] + off * sizeof(int), sizeof(int), &d),
               CONVOY_ERR_INVALID, ctx, "overlaps");
        expect("convoy_data_new(overlap, valid)",
               convoy_data_new(ctx, valid_x[pick(NVALID)], 2 * NINT * sizeof(int), &d),
               CONVOY_ERR_INVALID, ctx, "overlaps");
        expect("convoy_data_new(NULL)", convoy_data_new(ctx, NULL, 4, &d), CONVOY_ERR_INVALID, ctx,
               "host_ptr");
        expect("convoy_data_new(0 bytes)", convoy_data_new(ctx, junk_x[NJUNK], 0, &d),
               CONVOY_ERR_INVALID, ctx, "bytes is 0");
        expect("convoy_data_new(past the end)",
               convoy_data_new(ctx, (void *)(UINTPTR_MAX - 8), 64, &d), CONVOY_ERR_INVALID, ctx,
               "end of the address space");
        break;
    }
    case 8: {
        int mode = pick(2) ? 0 : 4 + pick(50);
        snprintf(buf, sizeof(buf), "access mode %d", mode);
        expect("convoy_data_acquire(mode)", convoy_data_acquire(junk_d[j], (convoy_access_t)mode),
               CONVOY_ERR_INVALID, ctx, buf);
        expect("convoy_data_acquire(NULL)", convoy_data_acquire(NULL, CONVOY_READ),
               CONVOY_ERR_INVALID, NULL, "data");
        break;
    }
    case 9: {
        unsigned flags = 1u << (2 + pick(30));
        snprintf(buf, sizeof(buf), "0x%x", flags);
        expect("convoy_data_set_flags", convoy_data_set_flags(junk_d[j], flags), CONVOY_ERR_INVALID,
               ctx, buf);
        break;
    }
    case 10: {
        const char *names[] = {"no_such_param", "", "SCHED", "sched ", "batch_max_tasksx"};
        const char *name = names[pick(5)];
        expect("convoy_param_get(unknown)", convoy_param_get(ctx, name, buf, sizeof(buf)),
               CONVOY_ERR_NOT_FOUND, ctx, name);
        expect("convoy_param_preset(unknown)", convoy_param_preset(name, "1"), CONVOY_ERR_NOT_FOUND,
               NULL, name);
        const char *values[] = {"-5", "abc", "1e999", "99999999999999999999", "12Q"};
        const char *value = values[pick(5)];
        expect("convoy_param_preset(nthreads)", convoy_param_preset("nthreads", value),
               CONVOY_ERR_INVALID, NULL, value);
        expect("convoy_param_preset(sched)", convoy_param_preset("sched", "nosuchsched"),
               CONVOY_ERR_NOT_FOUND, NULL, "nosuchsched");
        break;
    }
    case 11: {
        convoy_task_opts_t o = {0};
        int n = convoy_accel_count(ctx);
        o.where = pick(2) ? n + 1 + pick(100) : -2 - pick(100);
        snprintf(buf, sizeof(buf), "where %d", o.where);
        expect("convoy_task_insert_ex(where)",
               convoy_task_insert_ex(ctx, cls_add, &o.where, sizeof(int), &junk_d[j], &o),
               CONVOY_ERR_INVALID, ctx, buf);
        if (n > 0) {
            o.where = CONVOY_WHERE_ACCEL(pick(n));
            expect("convoy_task_insert_ex(accel, CPU-only class)",
                   convoy_task_insert_ex(ctx, cls_cpu_only, &o.where, sizeof(int), &junk_d[j], &o),
                   CONVOY_ERR_INVALID, ctx, "no chore");
        }
        break;
    }
    case 12:
    case 13: {
        /* A chore that calls what it may not. */
        bad_args_t a = {.what = pick(BAD_COUNT), .own = junk_d[j], .code = 1 + pick(100)};
        convoy_task_opts_t o = {.done = done_cb};
        int *o_cb = NULL;
        if (ncb < MAXCB) {
            o.done_arg = (void *)(intptr_t)ncb;
            expect_fail[ncb] = a.what == BAD_FAIL || a.what == BAD_FAIL0 ? 1 : -1;
            o_cb = &ncb;
        }
        st = convoy_task_insert_ex(ctx, cls_bad, &a, sizeof(a), &junk_d[j], o_cb ? &o : NULL);
        if (st != CONVOY_SUCCESS)
            fail("inserting a misbehaving chore's task: %s", convoy_last_error(NULL));
        else if (o_cb != NULL)
            ncb++;
        break;
    }
    case 14: {
        /* Remove a chore of a class with tasks pending (they fail or run elsewhere),
         * sometimes put it back. */
        int kind = pick(2) ? CONVOY_DEVICE_CPU : CONVOY_DEVICE_SIM;
        for (int k = 0; k < 1 + pick(4); k++) {
            int delta = 1;
            st = convoy_task_insert(ctx, cls_flaky, &delta, sizeof(delta), &junk_d[pick(NJUNK)]);
            if (st != CONVOY_SUCCESS && st != CONVOY_ERR_INVALID) /* no chore left at all */
                fail("inserting into a flaky class: %s", convoy_status_name(st));
        }
        expect("convoy_class_set_chore(NULL fn)",
               convoy_class_set_chore(cls_flaky, (convoy_device_kind_t)kind,
                                      pick(2) ? NULL : add_chore),
               CONVOY_SUCCESS, ctx, NULL);
        break;
    }
    case 15: {
        /* A class without any chore for the devices in use. */
        if (convoy_class_new(ctx, "nochore", 1, modes, 0, &c) != CONVOY_SUCCESS) {
            fail("convoy_class_new(nochore): %s", convoy_last_error(NULL));
            break;
        }
        expect("convoy_task_insert(no chore)", convoy_task_insert(ctx, c, NULL, 0, &junk_d[j]),
               CONVOY_ERR_INVALID, ctx, "no chore");
        break;
    }
    case 16: {
        /* Free a datum with tasks pending, then again (refused), then register its
         * memory anew. */
        int delta = 2;
        for (int k = 0; k < pick(4); k++)
            convoy_task_insert(ctx, cls_add, &delta, sizeof(delta), &junk_d[j]);
        convoy_data_t *gone = junk_d[j];
        convoy_data_free(gone);
        convoy_data_free(gone);
        expect("convoy_data_acquire(freed)", convoy_data_acquire(gone, CONVOY_READ),
               CONVOY_ERR_INVALID, NULL, "not a live data handle");
        expect("convoy_data_set_flags(freed)", convoy_data_set_flags(gone, 0), CONVOY_ERR_INVALID,
               NULL, "not a live data handle");
        st = convoy_data_new(ctx, junk_x[j], sizeof(junk_x[j]), &junk_d[j]);
        if (st != CONVOY_SUCCESS) {
            fail("registering freed memory again: %s", convoy_last_error(NULL));
            exit(1); /* junk_d[j] is gone: nothing below could use it */
        }
        break;
    }
    case 17:
        expect("convoy_wait(NULL)", convoy_wait(NULL), CONVOY_ERR_INVALID, NULL, "ctx");
        expect("convoy_data_set_flags(NULL)", convoy_data_set_flags(NULL, 0), CONVOY_ERR_INVALID,
               NULL, "data");
        expect("convoy_class_new(NULL ctx)", convoy_class_new(NULL, "x", 1, modes, 0, &c),
               CONVOY_ERR_INVALID, NULL, "ctx");
        expect("convoy_data_new(NULL ctx)", convoy_data_new(NULL, junk_x[NJUNK], 4, NULL),
               CONVOY_ERR_INVALID, NULL, "ctx");
        convoy_data_free(NULL);
        convoy_fini(NULL);
        if (convoy_host_alloc(ctx, 0) != NULL)
            fail("convoy_host_alloc(0) is not NULL");
        convoy_host_free(ctx, NULL);
        if (convoy_data_host_ptr(NULL) != NULL || convoy_data_bytes(NULL) != 0)
            fail("convoy_data_host_ptr/bytes(NULL)");
        break;
    case 18: {
        /* A datum of another context (rarely: a context starts threads). */
        if (pick(8) != 0)
            break;
        convoy_context_t *other = NULL;
        static int other_x[NINT];
        if (convoy_init(NULL, NULL, &other) != CONVOY_SUCCESS) {
            fail("a second context: %s", convoy_last_error(NULL));
            break;
        }
        convoy_data_t *od = NULL;
        if (convoy_data_new(other, other_x, sizeof(other_x), &od) == CONVOY_SUCCESS)
            expect("convoy_task_insert(foreign datum)",
                   convoy_task_insert(ctx, cls_add, buf, sizeof(int), &od), CONVOY_ERR_INVALID, ctx,
                   "another context");
        convoy_class_t *oc = NULL;
        if (convoy_class_new(other, "foreign", 1, modes, 0, &oc) == CONVOY_SUCCESS)
            expect("convoy_task_insert(foreign class)",
                   convoy_task_insert(ctx, oc, NULL, 0, &junk_d[j]), CONVOY_ERR_INVALID, ctx,
                   "another context");
        convoy_fini(other); /* frees od and oc */
        if (od != NULL) {
            /* After fini: refused, nothing read (the fini freed it). */
            convoy_data_free(od);
            expect("convoy_data_acquire(after fini)", convoy_data_acquire(od, CONVOY_READ),
                   CONVOY_ERR_INVALID, NULL, "not a live data handle");
        }
        break;
    }
    case 19:
        if (convoy_accel_name(ctx, -1) != NULL || convoy_accel_name(ctx, 1000) != NULL)
            fail("convoy_accel_name out of range is not NULL");
        expect("convoy_param_get(len 0)", convoy_param_get(ctx, "sched", buf, 0),
               CONVOY_ERR_INVALID, ctx, "len 0");
        expect("convoy_param_get(NULL buf)", convoy_param_get(ctx, "sched", NULL, 8),
               CONVOY_ERR_INVALID, ctx, "NULL");
        break;
    default: {
        /* Valid work on the junk data, with a datum in two flows of one task. */
        convoy_data_t *f[2] = {junk_d[j], junk_d[j]};
        expect("convoy_task_insert(one datum, two flows)",
               convoy_task_insert(ctx, cls_addfrom, NULL, 0, f), CONVOY_SUCCESS, ctx, NULL);
        break;
    }
    }
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
    const char *devices = devices_of[pick(3)];
    const char *sched = pick(2) ? "fifo" : "batch";
    char sim_count[8];
    snprintf(sim_count, sizeof(sim_count), "%d", 1 + pick(2));
    if (convoy_param_preset("devices", devices) != CONVOY_SUCCESS ||
        convoy_param_preset("sched", sched) != CONVOY_SUCCESS ||
        convoy_param_preset("sim_count", sim_count) != CONVOY_SUCCESS ||
        convoy_param_preset("nthreads", "2") != CONVOY_SUCCESS ||
        convoy_param_preset("batch_max_wait_us", pick(2) ? "10" : "3600000000") != CONVOY_SUCCESS ||
        convoy_param_preset("verbose", "error") != CONVOY_SUCCESS) {
        fprintf(stderr, "stress_misuse: a preset was refused: %s\n", convoy_last_error(NULL));
        return 1;
    }
    if (convoy_init(NULL, NULL, &ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "stress_misuse: convoy_init: %s\n", convoy_last_error(NULL));
        return 1;
    }
    convoy_access_t rw = CONVOY_RW, r_rw[2] = {CONVOY_READ, CONVOY_RW};
    if (convoy_class_new(ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &cls_add) != 0 ||
        convoy_class_new(ctx, "addfrom", 2, r_rw, 0, &cls_addfrom) != 0 ||
        convoy_class_new(ctx, "bad", 1, &rw, 0, &cls_bad) != 0 ||
        convoy_class_new(ctx, "flaky", 1, &rw, 0, &cls_flaky) != 0 ||
        convoy_class_new(ctx, "cpu_only", 1, &rw, 0, &cls_cpu_only) != 0) {
        fprintf(stderr, "stress_misuse: convoy_class_new: %s\n", convoy_last_error(NULL));
        return 1;
    }
    convoy_class_t *all[] = {cls_add, cls_addfrom, cls_bad, cls_flaky};
    convoy_chore_fn fns[] = {add_chore, addfrom_chore, bad_chore, add_chore};
    for (int i = 0; i < 4; i++) {
        convoy_class_set_chore(all[i], CONVOY_DEVICE_CPU, fns[i]);
        convoy_class_set_chore(all[i], CONVOY_DEVICE_SIM, fns[i]);
    }
    convoy_class_set_batch_chore(cls_add, CONVOY_DEVICE_SIM, add_batch);
    convoy_class_set_chore(cls_cpu_only, CONVOY_DEVICE_CPU, add_chore);
    for (int i = 0; i < NVALID; i++)
        for (int k = 0; k < NINT; k++)
            valid_x[i][k] = oracle[i][k] = (int)(next() % 100);
    int st = 0;
    for (int i = 0; i < NVALID; i++)
        st |= convoy_data_new(ctx, valid_x[i], sizeof(valid_x[i]), &valid_d[i]);
    for (int i = 0; i < NJUNK; i++)
        st |= convoy_data_new(ctx, junk_x[i], sizeof(junk_x[i]), &junk_d[i]);
    for (int i = 0; i < NSIDE; i++)
        st |= convoy_data_new(ctx, side_x[i], sizeof(side_x[i]), &side_d[i]);
    if (st != 0) {
        fprintf(stderr, "stress_misuse: convoy_data_new: %s\n", convoy_last_error(NULL));
        return 1;
    }
    int ops = SANITIZED ? 600 : 3000;
    side_ops = ops / 2;
    pthread_t side_thread;
    pthread_create(&side_thread, NULL, side, NULL);
    for (int op = 0; op < ops; op++) {
        int r = pick(10);
        if (r < 5) {
            insert_valid();
        } else if (r < 9) {
            misuse();
        } else if (pick(4) == 0) {
            /* A wait may report the misuse's failures. */
            convoy_status_t w = convoy_wait(ctx);
            if (w != CONVOY_SUCCESS && w != CONVOY_ERR_TASK_FAILED)
                fail("convoy_wait returned %s: %s", convoy_status_name(w), convoy_last_error(NULL));
        } else {
            int k = pick(NVALID), write = pick(2);
            convoy_status_t a = convoy_data_acquire(valid_d[k], write ? CONVOY_RW : CONVOY_READ);
            if (a != CONVOY_SUCCESS)
                fail("acquiring valid datum %d: %s", k, convoy_last_error(NULL));
            else if (memcmp(valid_x[k], oracle[k], sizeof(oracle[k])) != 0)
                fail("valid datum %d after an acquire: %d, expected %d", k, valid_x[k][0],
                     oracle[k][0]);
            if (a == CONVOY_SUCCESS && write) {
                /* The host writes, as acquire(RW) allows: device copies are stale now. */
                valid_x[k][1] += 1000;
                oracle[k][1] += 1000;
            }
        }
    }
    pthread_join(side_thread, NULL);
    convoy_wait(ctx);
    for (int i = 0; i < NVALID; i++) {
        if (convoy_data_acquire(valid_d[i], CONVOY_READ) != CONVOY_SUCCESS)
            fail("acquiring valid datum %d at the end: %s", i, convoy_last_error(NULL));
        for (int k = 0; k < NINT; k++)
            if (valid_x[i][k] != oracle[i][k]) {
                fail("valid datum %d[%d] is %d, the oracle says %d", i, k, valid_x[i][k],
                     oracle[i][k]);
                break;
            }
    }
    for (int i = 0; i < NSIDE; i++) {
        if (convoy_data_acquire(side_d[i], CONVOY_READ) != CONVOY_SUCCESS)
            fail("acquiring side datum %d: %s", i, convoy_last_error(NULL));
        else if (side_x[i][0] != side_sum[i])
            fail("side datum %d is %d, expected %d", i, side_x[i][0], side_sum[i]);
    }
    for (int k = 0; k < ncb; k++)
        if (atomic_load(&called[k]) != 1) {
            fail("completion callback %d called %d times", k, atomic_load(&called[k]));
            break;
        }
    if (atomic_load(&cb_wrong) > 0)
        fail("%d completion callbacks saw the wrong outcome", atomic_load(&cb_wrong));
    if (atomic_load(&chore_violations) > 0)
        fail("%d calls from chores were not refused; the first: %s", atomic_load(&chore_violations),
             chore_violation);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    convoy_fini(ctx);
    convoy_param_preset_clear();
    printf("stress_misuse: seed %" PRIu64 " (devices %s, sched %s): %d operations, %" PRIu64
           " tasks (%" PRIu64 " failed, %" PRIu64 " cancelled), %d callbacks, %d failures\n",
           seed, devices, sched, ops, s.tasks_inserted, s.tasks_failed, s.tasks_cancelled, ncb,
           atomic_load(&failures));
    return atomic_load(&failures) == 0 ? 0 : 1;
}
