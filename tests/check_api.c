/*
 * check_api: misuse of the public API gets a clear error and breaks nothing (NULL
 * arguments, bad flows, modes, flags and kinds, objects of another context, classes
 * without a chore for the devices in use), and failing chores are reported, cancel their
 * successors and leave the runtime and the data usable; a free waits for every reader.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/test_util.h"

/* Checks st and that the context's (or, ctx NULL, the thread's) message has each of the
 * given pieces. */
#define expect_error(st, want, ctx, ...)                                                           \
    do {                                                                                           \
        convoy_status_t st_ = (st);                                                                \
        ck_assert_msg(st_ == (want), "%s returned %s, expected %s (%s)", #st,                      \
                      convoy_status_name(st_), convoy_status_name(want), convoy_last_error(ctx));  \
        tu_assert_error_has((ctx), __VA_ARGS__);                                                   \
    } while (0)

static int nop_chore(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return 0;
}

static int nop_batch(const convoy_task_view_t *const *t, int n, void *stream)
{
    (void)t;
    (void)n;
    (void)stream;
    return 0;
}

/* The device sets every test loops over: the CPUs alone, and sim (CPU + accelerator),
 * each under both schedulers. */
static const char *const *config(int i)
{
    static const char *const configs[4][9] = {
        {"devices", "host", "sched", "fifo", "nthreads", "2", "bind", "0", NULL},
        {"devices", "sim", "sched", "fifo", "nthreads", "2", "bind", "0", NULL},
        {"devices", "host", "sched", "batch", "nthreads", "2", "bind", "0", NULL},
        {"devices", "sim", "sched", "batch", "nthreads", "2", "bind", "0", NULL},
    };
    return configs[i];
}

static int on_sim(int i)
{
    return i & 1;
}

/* ---- argument checks ---------------------------------------------------------------- */

START_TEST(null_ctx)
{
    /* Proves: every function taking a context rejects NULL with CONVOY_ERR_INVALID (or
     * NULL) and a message saying so, and teardown functions accept NULL. */
    convoy_access_t r = CONVOY_READ;
    convoy_class_t *cls = NULL;
    convoy_data_t *d = NULL;
    int x = 0;
    expect_error(convoy_class_new(NULL, "c", 1, &r, 0, &cls), CONVOY_ERR_INVALID, NULL, "ctx");
    ck_assert_ptr_null(cls);
    expect_error(convoy_data_new(NULL, &x, sizeof(x), &d), CONVOY_ERR_INVALID, NULL, "ctx");
    ck_assert_ptr_null(d);
    expect_error(convoy_task_insert(NULL, cls, NULL, 0, &d), CONVOY_ERR_INVALID, NULL, "ctx");
    expect_error(convoy_wait(NULL), CONVOY_ERR_INVALID, NULL, "ctx");
    ck_assert_ptr_null(convoy_host_alloc(NULL, 64));
    tu_assert_error_has(NULL, "ctx");
    convoy_host_free(NULL, &x);
    convoy_host_free(NULL, NULL);
    convoy_fini(NULL);
    convoy_data_free(NULL);
    ck_assert_ptr_nonnull(convoy_last_error(NULL));
}
END_TEST

/* Getters that take a context: each must survive NULL (convoy.h: "nothing aborts the
 * process on user error"). One per loop index, so that a crash names its function. */
START_TEST(null_getters)
{
    /* Proves: the getters accept a NULL context (and convoy_get_stats a NULL stats
     * pointer) without crashing: zeroed stats, 0 accelerators, NULL names. */
    /* BUG: convoy_get_stats, convoy_sched_name, convoy_accel_count and convoy_accel_name
     * (src/context.c) dereference a NULL context: a segfault instead of an error. */
    convoy_stats_t s;
    memset(&s, 0xff, sizeof(s));
    switch (_i) {
    case 0:
        convoy_get_stats(NULL, &s);
        ck_assert_int_eq(s.tasks_inserted, 0);
        break;
    case 1: {
        convoy_context_t *ctx = tu_init(config(0));
        convoy_get_stats(ctx, NULL);
        convoy_fini(ctx);
        break;
    }
    case 2: ck_assert_ptr_null(convoy_sched_name(NULL)); break;
    case 3: ck_assert_int_eq(convoy_accel_count(NULL), 0); break;
    case 4: ck_assert_ptr_null(convoy_accel_name(NULL, 0)); break;
    }
}
END_TEST

START_TEST(null_cls_flows_data)
{
    /* Proves: NULL classes, flow arrays, flow entries, data, modes, names and output
     * pointers are CONVOY_ERR_INVALID with a message naming the argument (and the class
     * where there is one), and leave nothing inserted. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_RW};
    convoy_class_t *cls = NULL;
    expect_error(convoy_class_new(ctx, NULL, 2, modes, 0, &cls), CONVOY_ERR_INVALID, ctx, "name");
    expect_error(convoy_class_new(ctx, "", 2, modes, 0, &cls), CONVOY_ERR_INVALID, ctx, "name");
    expect_error(convoy_class_new(ctx, "two", 2, NULL, 0, &cls), CONVOY_ERR_INVALID, ctx, "two",
                 "modes");
    expect_error(convoy_class_new(ctx, "two", 2, modes, 0, NULL), CONVOY_ERR_INVALID, ctx, "two",
                 "cls_p");
    ck_assert_ptr_null(cls);
    ck_assert_int_eq(convoy_class_new(ctx, "two", 2, modes, 0, &cls), CONVOY_SUCCESS);
    expect_error(convoy_class_set_chore(NULL, CONVOY_DEVICE_CPU, nop_chore), CONVOY_ERR_INVALID,
                 NULL, "cls");
    expect_error(convoy_class_set_batch_chore(NULL, CONVOY_DEVICE_CPU, nop_batch),
                 CONVOY_ERR_INVALID, NULL, "cls");
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, nop_chore), CONVOY_SUCCESS);

    int x = 0, y = 0;
    convoy_data_t *a = NULL, *b = NULL;
    expect_error(convoy_data_new(ctx, NULL, 4, &a), CONVOY_ERR_INVALID, ctx, "host_ptr");
    expect_error(convoy_data_new(ctx, &x, 0, &a), CONVOY_ERR_INVALID, ctx, "bytes is 0");
    expect_error(convoy_data_new(ctx, &x, sizeof(x), NULL), CONVOY_ERR_INVALID, ctx, "data_p");
    ck_assert_ptr_null(a);
    ck_assert_int_eq(convoy_data_new(ctx, &x, sizeof(x), &a), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_new(ctx, &y, sizeof(y), &b), CONVOY_SUCCESS);
    ck_assert_ptr_eq(convoy_data_host_ptr(a), &x);
    ck_assert_uint_eq(convoy_data_bytes(a), sizeof(x));
    ck_assert_ptr_null(convoy_data_host_ptr(NULL));
    ck_assert_uint_eq(convoy_data_bytes(NULL), 0);

    convoy_data_t *good[2] = {a, b}, *hole[2] = {a, NULL}, *first_hole[2] = {NULL, b};
    expect_error(convoy_task_insert(ctx, NULL, NULL, 0, good), CONVOY_ERR_INVALID, ctx, "cls");
    expect_error(convoy_task_insert(ctx, cls, NULL, 0, NULL), CONVOY_ERR_INVALID, ctx, "two",
                 "flows is NULL", "2 flows");
    expect_error(convoy_task_insert(ctx, cls, NULL, 0, hole), CONVOY_ERR_INVALID, ctx, "two",
                 "flow 1 of 2 is NULL");
    expect_error(convoy_task_insert(ctx, cls, NULL, 0, first_hole), CONVOY_ERR_INVALID, ctx,
                 "flow 0 of 2 is NULL");
    expect_error(convoy_task_insert(ctx, cls, NULL, 8, good), CONVOY_ERR_INVALID, ctx, "two",
                 "args is NULL", "8");
    expect_error(convoy_data_acquire(NULL, CONVOY_READ), CONVOY_ERR_INVALID, NULL, "data");

    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    ck_assert_int_eq(s.tasks_inserted, 0);
    /* args non-NULL with size 0 is fine; and everything still works. */
    ck_assert_int_eq(convoy_task_insert(ctx, cls, &x, 0, good), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy_get_stats(ctx, &s);
    ck_assert_int_eq(s.tasks_inserted, 1);
    ck_assert_int_eq(s.tasks_completed, 1);
    convoy_fini(ctx);
}
END_TEST

START_TEST(bad_flows_modes_flags)
{
    /* Proves: 0, negative and more than CONVOY_MAX_FLOWS flows, access modes other than
     * READ/WRITE/RW (in a class or an acquire) and unknown class flags are
     * CONVOY_ERR_INVALID, the message naming the class and the bad value; the limits
     * themselves (1 and CONVOY_MAX_FLOWS flows) work. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t modes[CONVOY_MAX_FLOWS + 1];
    for (int i = 0; i <= CONVOY_MAX_FLOWS; i++)
        modes[i] = CONVOY_READ;
    convoy_class_t *cls = NULL;
    expect_error(convoy_class_new(ctx, "k", 0, modes, 0, &cls), CONVOY_ERR_INVALID, ctx, "(k)",
                 "nflows 0", "[1, 16]");
    expect_error(convoy_class_new(ctx, "k", -3, modes, 0, &cls), CONVOY_ERR_INVALID, ctx,
                 "nflows -3");
    expect_error(convoy_class_new(ctx, "k", CONVOY_MAX_FLOWS + 1, modes, 0, &cls),
                 CONVOY_ERR_INVALID, ctx, "nflows 17", "[1, 16]");
    static const int bad_modes[] = {0, 4, 7, -1};
    for (int i = 0; i < 4; i++) {
        convoy_access_t m[2] = {CONVOY_RW, (convoy_access_t)bad_modes[i]};
        char num[32];
        snprintf(num, sizeof(num), "access mode %d", bad_modes[i]);
        expect_error(convoy_class_new(ctx, "badmode", 2, m, 0, &cls), CONVOY_ERR_INVALID, ctx,
                     "badmode", "flow 1", num, "CONVOY_READ");
    }
    expect_error(convoy_class_new(ctx, "flags", 1, modes, 4u, &cls), CONVOY_ERR_INVALID, ctx,
                 "flags", "0x4");
    expect_error(
        convoy_class_new(ctx, "flags", 1, modes, CONVOY_CLASS_BATCHABLE | 0x80000000u, &cls),
        CONVOY_ERR_INVALID, ctx, "0x80000000");
    ck_assert_ptr_null(cls);

    /* The limits work: one flow, and CONVOY_MAX_FLOWS flows on one datum each. */
    int v[CONVOY_MAX_FLOWS] = {0};
    convoy_data_t *d[CONVOY_MAX_FLOWS];
    for (int i = 0; i < CONVOY_MAX_FLOWS; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(v[i]), &d[i]), 0);
    convoy_class_t *one, *max;
    ck_assert_int_eq(convoy_class_new(ctx, "one", 1, modes, 0, &one), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "max", CONVOY_MAX_FLOWS, modes, 0, &max), 0);
    ck_assert_int_eq(convoy_class_set_chore(one, CONVOY_DEVICE_CPU, nop_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(max, CONVOY_DEVICE_CPU, nop_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(max, CONVOY_DEVICE_SIM, nop_chore), 0);
    ck_assert_int_eq(convoy_task_insert(ctx, one, NULL, 0, d), 0);
    ck_assert_int_eq(convoy_task_insert(ctx, max, NULL, 0, d), 0);

    expect_error(convoy_data_acquire(d[0], (convoy_access_t)0), CONVOY_ERR_INVALID, ctx,
                 "access mode 0");
    expect_error(convoy_data_acquire(d[0], (convoy_access_t)4), CONVOY_ERR_INVALID, ctx,
                 "access mode 4");
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy_fini(ctx);
}
END_TEST

START_TEST(bad_kinds_and_batch)
{
    /* Proves: a device kind out of range is CONVOY_ERR_INVALID naming the class and the
     * kind; a batch chore on a class that is not CONVOY_CLASS_BATCHABLE is
     * CONVOY_ERR_INVALID naming the class (removing one with NULL is fine); chores can be
     * set for kinds not in use. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *plain, *batchable;
    ck_assert_int_eq(convoy_class_new(ctx, "plain", 1, &rw, 0, &plain), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "ring", 1, &rw, CONVOY_CLASS_BATCHABLE, &batchable), 0);
    static const int kinds[] = {-1, CONVOY_DEVICE_KIND_COUNT, 99};
    for (int i = 0; i < 3; i++) {
        char num[32];
        snprintf(num, sizeof(num), "device kind %d", kinds[i]);
        expect_error(convoy_class_set_chore(plain, (convoy_device_kind_t)kinds[i], nop_chore),
                     CONVOY_ERR_INVALID, ctx, "plain", num);
        expect_error(
            convoy_class_set_batch_chore(batchable, (convoy_device_kind_t)kinds[i], nop_batch),
            CONVOY_ERR_INVALID, ctx, "ring", num);
    }
    expect_error(convoy_class_set_batch_chore(plain, CONVOY_DEVICE_CPU, nop_batch),
                 CONVOY_ERR_INVALID, ctx, "plain", "CONVOY_CLASS_BATCHABLE");
    ck_assert_int_eq(convoy_class_set_batch_chore(plain, CONVOY_DEVICE_CPU, NULL), 0);
    for (int k = 0; k < CONVOY_DEVICE_KIND_COUNT; k++) {
        ck_assert_int_eq(convoy_class_set_chore(plain, (convoy_device_kind_t)k, nop_chore), 0);
        ck_assert_int_eq(
            convoy_class_set_batch_chore(batchable, (convoy_device_kind_t)k, nop_batch), 0);
    }
    /* A batchable class with only a batch chore runs each task through it. */
    int v = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &v, sizeof(v), &d), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, batchable, NULL, 0, &d), 0);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy_fini(ctx);
}
END_TEST

START_TEST(other_context)
{
    /* Proves: a class or a datum of another context is CONVOY_ERR_INVALID naming the
     * class and the flow, and inserts nothing in either context. */
    convoy_context_t *a = tu_init(config(_i));
    convoy_context_t *b = tu_init(config(_i));
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *ca, *cb;
    ck_assert_int_eq(convoy_class_new(a, "ca", 2, modes, 0, &ca), 0);
    ck_assert_int_eq(convoy_class_new(b, "cb", 2, modes, 0, &cb), 0);
    ck_assert_int_eq(convoy_class_set_chore(ca, CONVOY_DEVICE_CPU, nop_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(cb, CONVOY_DEVICE_CPU, nop_chore), 0);
    int x = 0, y = 0, z = 0;
    convoy_data_t *da, *da2, *db;
    ck_assert_int_eq(convoy_data_new(a, &x, sizeof(x), &da), 0);
    ck_assert_int_eq(convoy_data_new(a, &y, sizeof(y), &da2), 0);
    ck_assert_int_eq(convoy_data_new(b, &z, sizeof(z), &db), 0);
    convoy_data_t *mixed[2] = {da, db}, *in_a[2] = {da, da2};
    expect_error(convoy_task_insert(a, cb, NULL, 0, in_a), CONVOY_ERR_INVALID, a, "cb",
                 "another context");
    expect_error(convoy_task_insert(a, ca, NULL, 0, mixed), CONVOY_ERR_INVALID, a, "ca", "flow 1",
                 "another context");
    convoy_stats_t s;
    convoy_get_stats(a, &s);
    ck_assert_int_eq(s.tasks_inserted, 0);
    convoy_get_stats(b, &s);
    ck_assert_int_eq(s.tasks_inserted, 0);
    ck_assert_int_eq(convoy_task_insert(a, ca, NULL, 0, in_a), 0);
    ck_assert_int_eq(convoy_wait(a), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(b), CONVOY_SUCCESS);
    convoy_fini(b);
    convoy_fini(a);
}
END_TEST

START_TEST(no_chore_for_devices)
{
    /* Proves: inserting a task of a class with no chore (or batch chore) for any device in
     * use is CONVOY_ERR_INVALID with a message naming the class and the devices in use,
     * and nothing is inserted; a class with a chore only for an accelerator in use runs. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *none, *cuda_only, *sim_only;
    ck_assert_int_eq(convoy_class_new(ctx, "no_chores", 1, &rw, 0, &none), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "cuda_only", 1, &rw, CONVOY_CLASS_BATCHABLE, &cuda_only),
                     0);
    ck_assert_int_eq(convoy_class_set_chore(cuda_only, CONVOY_DEVICE_CUDA, nop_chore), 0);
    ck_assert_int_eq(convoy_class_set_batch_chore(cuda_only, CONVOY_DEVICE_HIP, nop_batch), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "sim_only", 1, &rw, 0, &sim_only), 0);
    ck_assert_int_eq(convoy_class_set_chore(sim_only, CONVOY_DEVICE_SIM, nop_chore), 0);
    int v = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &v, sizeof(v), &d), 0);
    const char *devs = on_sim(_i) ? "sim0" : "cpu";
    expect_error(convoy_task_insert(ctx, none, NULL, 0, &d), CONVOY_ERR_INVALID, ctx, "'no_chores'",
                 devs);
    expect_error(convoy_task_insert(ctx, cuda_only, NULL, 0, &d), CONVOY_ERR_INVALID, ctx,
                 "'cuda_only'", devs);
    if (on_sim(_i)) {
        ck_assert_int_eq(convoy_task_insert(ctx, sim_only, NULL, 0, &d), 0);
    } else {
        expect_error(convoy_task_insert(ctx, sim_only, NULL, 0, &d), CONVOY_ERR_INVALID, ctx,
                     "'sim_only'", "cpu");
    }
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    ck_assert_int_eq(s.tasks_inserted, (uint64_t)on_sim(_i));
    ck_assert_int_eq(s.tasks_completed, (uint64_t)on_sim(_i));
    convoy_fini(ctx);
}
END_TEST

START_TEST(host_alloc)
{
    /* Proves: convoy_host_alloc(ctx, 0) is NULL with a message; other sizes give
     * writable 64-byte aligned memory, freed by convoy_host_free or by fini;
     * convoy_host_free(ctx, NULL) is a no-op. */
    convoy_context_t *ctx = tu_init(config(_i));
    ck_assert_ptr_null(convoy_host_alloc(ctx, 0));
    tu_assert_error_has(ctx, "bytes is 0");
    void *p[8];
    for (int i = 0; i < 8; i++) {
        size_t n = (size_t)1 << (3 * i);
        p[i] = convoy_host_alloc(ctx, n);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_uint_eq((uintptr_t)p[i] % 64, 0);
        memset(p[i], i, n);
    }
    convoy_host_free(ctx, NULL);
    for (int i = 0; i < 8; i += 2)
        convoy_host_free(ctx, p[i]);
    /* The odd ones are left to convoy_fini (LeakSanitizer checks it in CI). */
    convoy_fini(ctx);
}
END_TEST

START_TEST(status_names)
{
    /* Proves: convoy_status_name names every status code, and never returns NULL. */
    static const struct {
        convoy_status_t st;
        const char *name;
    } names[] = {
        {CONVOY_SUCCESS, "CONVOY_SUCCESS"},
        {CONVOY_ERR_INVALID, "CONVOY_ERR_INVALID"},
        {CONVOY_ERR_NOMEM, "CONVOY_ERR_NOMEM"},
        {CONVOY_ERR_NOT_FOUND, "CONVOY_ERR_NOT_FOUND"},
        {CONVOY_ERR_UNAVAILABLE, "CONVOY_ERR_UNAVAILABLE"},
        {CONVOY_ERR_DEVICE, "CONVOY_ERR_DEVICE"},
        {CONVOY_ERR_TASK_FAILED, "CONVOY_ERR_TASK_FAILED"},
        {CONVOY_ERR_STATE, "CONVOY_ERR_STATE"},
        {CONVOY_ERR_IO, "CONVOY_ERR_IO"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        ck_assert_str_eq(convoy_status_name(names[i].st), names[i].name);
    static const int unknown[] = {1, -9, -100, 12345};
    for (int i = 0; i < 4; i++) {
        const char *n = convoy_status_name((convoy_status_t)unknown[i]);
        ck_assert_ptr_nonnull(n);
        ck_assert_int_gt((int)strlen(n), 0);
    }
}
END_TEST

typedef struct big_args {
    unsigned char bytes[1000];
} big_args_t;

static atomic_int g_args_bad;

static int args_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const big_args_t *a = t->args;
    if (t->args_size != sizeof(*a)) {
        atomic_fetch_add(&g_args_bad, 1);
        return 0;
    }
    int *v = t->flows[0];
    for (int i = 0; i < (int)sizeof(a->bytes); i++)
        if (a->bytes[i] != (unsigned char)(*v + i)) {
            atomic_fetch_add(&g_args_bad, 1);
            break;
        }
    (*v)++;
    return 0;
}

START_TEST(args_copied)
{
    /* Proves: the argument block is copied at insertion, large (heap) and small (inline)
     * alike: the caller may reuse its buffer at once. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "args", 1, &rw, CONVOY_CLASS_BATCHABLE, &cls), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, args_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, args_chore), 0);
    int v = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &v, sizeof(v), &d), 0);
    atomic_store(&g_args_bad, 0);
    big_args_t a;
    for (int t = 0; t < 100; t++) {
        for (int i = 0; i < (int)sizeof(a.bytes); i++)
            a.bytes[i] = (unsigned char)(t + i);
        ck_assert_int_eq(convoy_task_insert(ctx, cls, &a, sizeof(a), &d), 0);
        memset(&a, 0xee, sizeof(a));
    }
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&g_args_bad), 0);
    ck_assert_int_eq(v, 100);
    convoy_fini(ctx);
}
END_TEST

/* ---- failing chores ----------------------------------------------------------------- */

static atomic_int g_ran;

/* value = 10 * value + the argument (or the first flow's value) */
static int step_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    int *v = t->flows[t->nflows - 1];
    int add = t->args_size == sizeof(int) ? *(const int *)t->args : 1;
    /* Unsigned: long chains wrap instead of overflowing. */
    if (t->nflows == 2)
        *v = (int)(10u * (unsigned)*v + (unsigned)*(const int *)t->flows[0]);
    else
        *v = (int)(10u * (unsigned)*v + (unsigned)add);
    atomic_fetch_add(&g_ran, 1);
    return 0;
}

/* Fails with 42; on an accelerator it first scribbles over its device copy, which must
 * never reach the host. */
static int boom_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    *(int *)t->flows[0] = -999;
    return 42;
}

static int boom_cpu_chore(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return 42;
}

typedef struct fail_env {
    convoy_context_t *ctx;
    convoy_class_t *step, *pipe, *boom;
} fail_env_t;

static void fail_env_init(fail_env_t *e, int config_index)
{
    e->ctx = tu_init(config(config_index));
    convoy_access_t rw = CONVOY_RW, rd_rw[2] = {CONVOY_READ, CONVOY_RW};
    ck_assert_int_eq(convoy_class_new(e->ctx, "step", 1, &rw, CONVOY_CLASS_BATCHABLE, &e->step), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "pipe", 2, rd_rw, 0, &e->pipe), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "boom", 1, &rw, 0, &e->boom), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->step, CONVOY_DEVICE_CPU, step_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->pipe, CONVOY_DEVICE_CPU, step_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->step, CONVOY_DEVICE_SIM, step_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->pipe, CONVOY_DEVICE_SIM, step_chore), 0);
    if (on_sim(config_index))
        ck_assert_int_eq(convoy_class_set_chore(e->boom, CONVOY_DEVICE_SIM, boom_chore), 0);
    else
        ck_assert_int_eq(convoy_class_set_chore(e->boom, CONVOY_DEVICE_CPU, boom_cpu_chore), 0);
    atomic_store(&g_ran, 0);
}

static void insert1(fail_env_t *e, convoy_class_t *cls, int add, convoy_data_t *d)
{
    convoy_status_t st = convoy_task_insert(e->ctx, cls, &add, sizeof(add), &d);
    ck_assert_msg(st == CONVOY_SUCCESS, "%s", convoy_last_error(e->ctx));
}

static void insert2(fail_env_t *e, convoy_data_t *from, convoy_data_t *to)
{
    convoy_data_t *f[2] = {from, to};
    ck_assert_int_eq(convoy_task_insert(e->ctx, e->pipe, NULL, 0, f), CONVOY_SUCCESS);
}

START_TEST(failing_chore)
{
    /* Proves: a chore returning non-zero fails its task: convoy_wait returns
     * CONVOY_ERR_TASK_FAILED naming the task number, the class and the code, and how many
     * failed and were cancelled; its successors (direct and through another datum) are
     * cancelled and never run, an independent task still runs, the host keeps the last
     * good value, and the next convoy_wait succeeds. */
    fail_env_t e;
    fail_env_init(&e, _i);
    int a = 0, b = 5, c = 0;
    convoy_data_t *da, *db, *dc;
    ck_assert_int_eq(convoy_data_new(e.ctx, &a, sizeof(a), &da), 0);
    ck_assert_int_eq(convoy_data_new(e.ctx, &b, sizeof(b), &db), 0);
    ck_assert_int_eq(convoy_data_new(e.ctx, &c, sizeof(c), &dc), 0);
    insert1(&e, e.step, 1, da); /* task 0: a = 1 */
    insert1(&e, e.step, 2, da); /* task 1: a = 12 */
    insert1(&e, e.boom, 0, da); /* task 2: fails */
    insert1(&e, e.step, 3, da); /* task 3: cancelled */
    insert2(&e, da, db);        /* task 4: cancelled (reads a) */
    insert1(&e, e.step, 4, db); /* task 5: cancelled (after 4 on b) */
    insert1(&e, e.step, 7, dc); /* task 6: independent: c = 7 */
    convoy_status_t st = convoy_wait(e.ctx);
    ck_assert_int_eq(st, CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(e.ctx, "task 2", "'boom'", "42", "1 task(s) failed", "3 were cancelled");
    convoy_stats_t s;
    convoy_get_stats(e.ctx, &s);
    ck_assert_int_eq(s.tasks_inserted, 7);
    ck_assert_int_eq(s.tasks_completed, 3);
    ck_assert_int_eq(s.tasks_failed, 1);
    ck_assert_int_eq(s.tasks_cancelled, 3);
    ck_assert_int_eq(atomic_load(&g_ran), 3);
    ck_assert_int_eq(a, 12); /* the last good value: the failed chore's scribble stayed off */
    ck_assert_int_eq(b, 5);
    ck_assert_int_eq(c, 7);
    /* Reported once: the next wait has nothing to report. */
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    convoy_fini(e.ctx);
}
END_TEST

START_TEST(failure_message_wording)
{
    /* Proves: the failure message of a chore reads cleanly (no doubled or dangling
     * spaces where an optional word is left out), on every device. */
    /* BUG: fail_text (device/pipeline_ring.c) formats "the %s chore" with "" for a
     * per-task chore: "the  chore of class 'boom' returned 42 on sim0". */
    fail_env_t e;
    fail_env_init(&e, _i);
    int a = 0;
    convoy_data_t *da;
    ck_assert_int_eq(convoy_data_new(e.ctx, &a, sizeof(a), &da), 0);
    insert1(&e, e.boom, 0, da);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED);
    const char *msg = convoy_last_error(e.ctx);
    ck_assert_msg(strstr(msg, "  ") == NULL, "message with a doubled space: \"%s\"", msg);
    convoy_fini(e.ctx);
}
END_TEST

START_TEST(work_after_failure)
{
    /* Proves: after convoy_wait has reported a failure, tasks inserted on the same data
     * run normally, starting from the last good values, on the CPUs and on sim. */
    fail_env_t e;
    fail_env_init(&e, _i);
    int a = 0, b = 0;
    convoy_data_t *da, *db;
    ck_assert_int_eq(convoy_data_new(e.ctx, &a, sizeof(a), &da), 0);
    ck_assert_int_eq(convoy_data_new(e.ctx, &b, sizeof(b), &db), 0);
    for (int round = 0; round < 3; round++) {
        insert1(&e, e.step, 1, da);
        insert1(&e, e.boom, 0, da);
        insert2(&e, da, db);
        insert1(&e, e.step, 2, db);
        ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED);
        int a_good = a, b_good = b;
        insert1(&e, e.step, 3, da);
        insert2(&e, da, db);
        insert1(&e, e.step, 4, db);
        convoy_status_t st = convoy_wait(e.ctx);
        ck_assert_msg(st == CONVOY_SUCCESS, "round %d: %s", round, convoy_last_error(e.ctx));
        ck_assert_int_eq(a, 10 * a_good + 3);
        ck_assert_int_eq(b, 10 * (10 * b_good + a) + 4);
        ck_assert_int_eq(convoy_data_acquire(da, CONVOY_RW), CONVOY_ERR_TASK_FAILED);
        ck_assert_int_eq(convoy_data_acquire(db, CONVOY_RW), CONVOY_SUCCESS);
    }
    convoy_fini(e.ctx);
}
END_TEST

START_TEST(acquire_after_failure)
{
    /* Proves: convoy_data_acquire on a datum whose writer failed returns
     * CONVOY_ERR_TASK_FAILED with a message, the host copy holds the last good value, the
     * next acquire succeeds, and later tasks on the datum run from that value (not
     * cancelled), even before any convoy_wait; the failure is still counted by the next
     * convoy_wait. */
    fail_env_t e;
    fail_env_init(&e, _i);
    int a = 0;
    convoy_data_t *da;
    ck_assert_int_eq(convoy_data_new(e.ctx, &a, sizeof(a), &da), 0);
    insert1(&e, e.step, 5, da);
    insert1(&e, e.boom, 0, da);
    expect_error(convoy_data_acquire(da, CONVOY_READ), CONVOY_ERR_TASK_FAILED, e.ctx, "failed");
    ck_assert_int_eq(a, 5);
    ck_assert_int_eq(convoy_data_acquire(da, CONVOY_READ), CONVOY_SUCCESS);
    insert1(&e, e.step, 6, da);
    convoy_status_t st = convoy_data_acquire(da, CONVOY_READ);
    ck_assert_msg(st == CONVOY_SUCCESS, "acquire: %s", convoy_last_error(e.ctx));
    ck_assert_int_eq(a, 56);
    expect_error(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED, e.ctx, "'boom'");
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    convoy_fini(e.ctx);
}
END_TEST

START_TEST(acquire_after_failure_with_readers)
{
    /* Proves: once convoy_data_acquire has reported a failed writer, a new writer of the
     * datum runs from the host copy even though readers of the failed version were
     * cancelled (they must not cancel it in turn). */
    /* BUG: convoy_data_acquire (src/data.c) forgets a failed last writer but keeps the
     * cancelled readers that followed it; a later writer depends on them, and
     * add_dependency cancels it because their failure epoch is still current. */
    fail_env_t e;
    fail_env_init(&e, _i);
    int a = 0, b = 0;
    convoy_data_t *da, *db;
    ck_assert_int_eq(convoy_data_new(e.ctx, &a, sizeof(a), &da), 0);
    ck_assert_int_eq(convoy_data_new(e.ctx, &b, sizeof(b), &db), 0);
    insert1(&e, e.step, 5, da);
    insert1(&e, e.boom, 0, da);
    insert2(&e, da, db); /* reads a: cancelled */
    ck_assert_int_eq(convoy_data_acquire(da, CONVOY_READ), CONVOY_ERR_TASK_FAILED);
    ck_assert_int_eq(a, 5);
    insert1(&e, e.step, 6, da);
    convoy_status_t st = convoy_data_acquire(da, CONVOY_READ);
    ck_assert_msg(st == CONVOY_SUCCESS, "acquire: %s", convoy_last_error(e.ctx));
    ck_assert_msg(a == 56, "a is %d, expected 56: the writer after the acquire did not run", a);
    convoy_wait(e.ctx);
    convoy_fini(e.ctx);
}
END_TEST

static int boom_batch(const convoy_task_view_t *const *t, int n, void *stream)
{
    (void)t;
    (void)n;
    (void)stream;
    return 7;
}

START_TEST(failing_batch_chore)
{
    /* Proves: a batch chore returning non-zero fails every task it ran: each is counted
     * failed, the message names a task of the class and the code, and the runtime goes
     * on. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "ringboom", 1, &rw, CONVOY_CLASS_BATCHABLE, &cls), 0);
    ck_assert_int_eq(convoy_class_set_batch_chore(cls, CONVOY_DEVICE_CPU, boom_batch), 0);
    ck_assert_int_eq(convoy_class_set_batch_chore(cls, CONVOY_DEVICE_SIM, boom_batch), 0);
    enum { N = 40 };
    int v[N] = {0};
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(v[i]), &d[i]), 0);
        ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d[i]), 0);
    }
    expect_error(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED, ctx, "'ringboom'", "7",
                 "40 task(s) failed");
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    ck_assert_int_eq(s.tasks_failed, N);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy_fini(ctx);
}
END_TEST

/* A reader that takes a moment (2 ms) and counts itself done. */
static atomic_int readers_done;

static int counted_reader(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    atomic_fetch_add(&readers_done, 1);
    return 0;
}

START_TEST(free_waits_for_every_reader)
{
    /* Proves: convoy_data_free returns only once every task that reads the datum is done,
     * 40 readers behind its writer: more than the 16 its wait takes at a time (src/data.c
     * wait_for_users). On sim (_i 1, 3) most are still pending as the free begins, so it
     * waits in passes (a wait that stopped after one left 16 of 40 done); on the CPUs
     * alone the free's own task queues behind the readers, and most are done by then. */
    convoy_context_t *ctx = tu_init(config(_i));
    convoy_access_t rw = CONVOY_RW, modes[2] = {CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *writer, *reader;
    ck_assert_int_eq(convoy_class_new(ctx, "writer", 1, &rw, 0, &writer), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "reader", 2, modes, 0, &reader), 0);
    ck_assert_int_eq(convoy_class_set_chore(writer, CONVOY_DEVICE_CPU, nop_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(reader, CONVOY_DEVICE_CPU, counted_reader), 0);
    if (on_sim(_i))
        ck_assert_int_eq(convoy_class_set_chore(reader, CONVOY_DEVICE_SIM, counted_reader), 0);
    enum { N = 40 };
    static int in, out[N];
    convoy_data_t *din, *dout[N];
    ck_assert_int_eq(convoy_data_new(ctx, &in, sizeof(in), &din), 0);
    atomic_store(&readers_done, 0);
    ck_assert_int_eq(convoy_task_insert(ctx, writer, NULL, 0, &din), 0);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(convoy_data_new(ctx, &out[i], sizeof(out[i]), &dout[i]), 0);
        convoy_data_t *f[2] = {din, dout[i]};
        ck_assert_int_eq(convoy_task_insert(ctx, reader, NULL, 0, f), 0);
    }
    convoy_data_free(din);
    int done = atomic_load(&readers_done);
    ck_assert_msg(done == N, "convoy_data_free returned with %d of its %d readers done", done, N);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    for (int i = 0; i < N; i++)
        convoy_data_free(dout[i]);
    convoy_fini(ctx);
}
END_TEST

START_TEST(fini_with_failures_and_live_data)
{
    /* Proves: convoy_fini with unreported failures, pending tasks, live data handles and
     * classes frees everything without hanging (LeakSanitizer checks the freeing). */
    fail_env_t e;
    fail_env_init(&e, _i);
    int a = 0, b = 0;
    convoy_data_t *da, *db;
    ck_assert_int_eq(convoy_data_new(e.ctx, &a, sizeof(a), &da), 0);
    ck_assert_int_eq(convoy_data_new(e.ctx, &b, sizeof(b), &db), 0);
    for (int i = 0; i < 50; i++) {
        insert1(&e, e.step, 1, da);
        insert2(&e, da, db);
        if (i == 25)
            insert1(&e, e.boom, 0, da);
    }
    convoy_data_free(db);
    convoy_fini(e.ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tu_tcase(s, "misuse", 20);
    tcase_add_test(tc, null_ctx);
    tcase_add_loop_test(tc, null_getters, 0, 5);
    tcase_add_loop_test(tc, null_cls_flows_data, 0, 4);
    tcase_add_loop_test(tc, bad_flows_modes_flags, 0, 4);
    tcase_add_loop_test(tc, bad_kinds_and_batch, 0, 4);
    tcase_add_loop_test(tc, other_context, 0, 4);
    tcase_add_loop_test(tc, no_chore_for_devices, 0, 4);
    tcase_add_loop_test(tc, host_alloc, 0, 4);
    tcase_add_test(tc, status_names);
    tcase_add_loop_test(tc, args_copied, 0, 4);
    tc = tu_tcase(s, "failures", 20);
    tcase_add_loop_test(tc, failing_chore, 0, 4);
    tcase_add_loop_test(tc, failure_message_wording, 0, 4);
    tcase_add_loop_test(tc, work_after_failure, 0, 4);
    tcase_add_loop_test(tc, acquire_after_failure, 0, 4);
    tcase_add_loop_test(tc, acquire_after_failure_with_readers, 0, 4);
    tcase_add_loop_test(tc, failing_batch_chore, 0, 4);
    tcase_add_loop_test(tc, free_waits_for_every_reader, 0, 4);
    tcase_add_loop_test(tc, fini_with_failures_and_live_data, 0, 4);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
