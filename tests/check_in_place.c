/*
 * check_in_place: classes with CONVOY_CLASS_INPUTS_IN_PLACE (device/ring.c,
 * reads_in_place; doc/design.md "Inputs read in place"). On sim a flow read in place is
 * the datum's host address itself, and a staged one a sim buffer, so each test sees in
 * the chore which way every input came. An input is read in place only when that is
 * right: a READ flow of convoy_host_alloc memory, named once, at most in_place_max_bytes,
 * whose newest version is home and not on the device already. Nothing of the host copy
 * changes, whatever the task's fate.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/core.h"
#include "tests/test_util.h"

#define N 64
#define BYTES 8192

static atomic_int seen_in_place, seen_staged;

typedef struct add_args {
    const void *host; /* the input's host address, as the program registered it */
    int fail;         /* the chore fails (after reading) */
} add_args_t;

/* out = in + 1, word by word (flows: in, [in again,] out); counts how the input came. */
static int add_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    const add_args_t *a = t->args;
    atomic_fetch_add(t->flows[0] == a->host ? &seen_in_place : &seen_staged, 1);
    if (a->fail)
        return 5;
    const uint32_t *in = t->flows[0];
    uint32_t *out = t->flows[t->nflows - 1];
    for (size_t i = 0; i < t->flow_bytes[0] / 4; i++)
        out[i] = in[i] + 1;
    return 0;
}

/* A class of add_chore on sim: flows of modes, the last one written. */
static convoy_class_t *add_class(convoy_context_t *ctx, const char *name, int nflows,
                                 const convoy_access_t *modes, unsigned flags)
{
    convoy_class_t *cls = NULL;
    ck_assert_int_eq(convoy_class_new(ctx, name, nflows, modes, flags, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, add_chore), 0);
    return cls;
}

typedef struct world {
    convoy_context_t *ctx;
    convoy_class_t *cls; /* in (mode), out: with the flag unless made otherwise */
    uint32_t *in[N], *out[N];
    convoy_data_t *din[N], *dout[N];
    int pageable; /* in[] from malloc, not convoy_host_alloc */
} world_t;

/* A sim context with zero costs and the presets in extra (name, value, ..., NULL; may be
 * NULL); class flags, the input's mode, and whether the inputs are malloc'd. */
static void world_open(world_t *w, unsigned flags, convoy_access_t in_mode, int pageable,
                       const char *const *extra)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, "batch");
    for (int i = 0; extra != NULL && extra[i] != NULL; i += 2)
        tu_ps_set(&ps, extra[i], extra[i + 1]);
    memset(w, 0, sizeof(*w));
    w->ctx = tu_init(ps.kv);
    w->pageable = pageable;
    atomic_store(&seen_in_place, 0);
    atomic_store(&seen_staged, 0);
    convoy_access_t modes[2] = {in_mode, CONVOY_WRITE};
    w->cls = add_class(w->ctx, "add", 2, modes, flags);
    for (int t = 0; t < N; t++) {
        w->in[t] = pageable ? malloc(BYTES) : convoy_host_alloc(w->ctx, BYTES);
        w->out[t] = convoy_host_alloc(w->ctx, BYTES);
        ck_assert(w->in[t] != NULL && w->out[t] != NULL);
        for (size_t i = 0; i < BYTES / 4; i++) {
            w->in[t][i] = (uint32_t)(7 * t + i);
            w->out[t][i] = 0;
        }
        ck_assert_int_eq(convoy_data_new(w->ctx, w->in[t], BYTES, &w->din[t]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->out[t], BYTES, &w->dout[t]), CONVOY_SUCCESS);
    }
}

static void world_close(world_t *w)
{
    for (int t = 0; t < N; t++) {
        convoy_data_free(w->din[t]);
        convoy_data_free(w->dout[t]);
        if (w->pageable)
            free(w->in[t]);
        else
            convoy_host_free(w->ctx, w->in[t]);
        convoy_host_free(w->ctx, w->out[t]);
    }
    convoy_fini(w->ctx);
}

/* Task t of cls (out[t] = in[t] + 1); it fails when fail is set. */
static void insert_add(world_t *w, convoy_class_t *cls, int t, int fail)
{
    add_args_t a = {.host = w->in[t], .fail = fail};
    convoy_data_t *f[2] = {w->din[t], w->dout[t]};
    ck_assert_int_eq(convoy_task_insert(w->ctx, cls, &a, sizeof(a), f), CONVOY_SUCCESS);
}

/* out[t] holds in[t] + delta (read at home: acquired), in[t] its first values + extra. */
static void check_out(world_t *w, int t, uint32_t delta, uint32_t extra)
{
    ck_assert_int_eq(convoy_data_acquire(w->dout[t], CONVOY_READ), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_acquire(w->din[t], CONVOY_READ), CONVOY_SUCCESS);
    int ok = 1;
    for (size_t i = 0; i < BYTES / 4; i++) {
        ok &= w->in[t][i] == (uint32_t)(7 * t + i) + extra;
        ok &= w->out[t][i] == (uint32_t)(7 * t + i) + extra + delta;
    }
    REQUIRE(ok, "task %d: in or out wrong", t);
}

static convoy_stats_t stats(const world_t *w)
{
    convoy_stats_t s;
    convoy_get_stats(w->ctx, &s);
    return s;
}

/* Every input of a ring of the class read where it is: no stage-in, no device memory;
 * with the default in_place_max_bytes, and (_i = 1) with inputs of exactly that size. */
START_TEST(inputs_read_in_host_memory)
{
    const char *exact[] = {"in_place_max_bytes", "8K", NULL};
    world_t w;
    world_open(&w, CONVOY_CLASS_BATCHABLE | CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0,
               _i == 1 ? exact : NULL);
    for (int t = 0; t < N; t++)
        insert_add(&w, w.cls, t, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy_stats_t s = stats(&w);
    ck_assert_int_eq(atomic_load(&seen_in_place), N);
    ck_assert_int_eq(atomic_load(&seen_staged), 0);
    ck_assert_uint_eq(s.in_place_reads, N);
    ck_assert_uint_eq(s.in_place_bytes, (uint64_t)N * BYTES);
    ck_assert_uint_eq(s.h2d_copies, 0);
    ck_assert_uint_eq(s.tasks_completed, N);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1, 0);
    world_close(&w);
}
END_TEST

/* Not in place, each for its reason; the results are the same. */
static const struct staged_case {
    const char *why;
    unsigned flags;
    convoy_access_t in_mode;
    int pageable;
    const char *param, *value;
} staged_cases[] = {
    {"class without the flag", CONVOY_CLASS_BATCHABLE, CONVOY_READ, 0, NULL, NULL},
    {"input over in_place_max_bytes", CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0,
     "in_place_max_bytes", "4K"},
    {"in_place_max_bytes 0", CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0, "in_place_max_bytes",
     "0"},
    {"malloc'd input", CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 1, NULL, NULL},
    {"input read and written", CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_RW, 0, NULL, NULL},
};

START_TEST(staged_when_not_in_place)
{
    const struct staged_case *c = &staged_cases[_i];
    const char *extra[] = {c->param, c->value, NULL};
    world_t w;
    world_open(&w, c->flags, c->in_mode, c->pageable, c->param != NULL ? extra : NULL);
    for (int t = 0; t < N; t++)
        insert_add(&w, w.cls, t, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_msg(atomic_load(&seen_staged) == N && atomic_load(&seen_in_place) == 0,
                  "%s: %d staged, %d in place", c->why, atomic_load(&seen_staged),
                  atomic_load(&seen_in_place));
    ck_assert_uint_eq(stats(&w).in_place_reads, 0);
    ck_assert_uint_eq(stats(&w).h2d_copies, N);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1, 0);
    world_close(&w);
}
END_TEST

/* A task naming its input twice (two READ flows of one datum) has it staged once. */
START_TEST(input_named_twice_staged)
{
    world_t w;
    world_open(&w, CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0, NULL);
    convoy_access_t modes[3] = {CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *twice = add_class(w.ctx, "add2", 3, modes, CONVOY_CLASS_INPUTS_IN_PLACE);
    for (int t = 0; t < N; t++) {
        add_args_t a = {.host = w.in[t]};
        convoy_data_t *f[3] = {w.din[t], w.din[t], w.dout[t]};
        ck_assert_int_eq(convoy_task_insert(w.ctx, twice, &a, sizeof(a), f), CONVOY_SUCCESS);
    }
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&seen_staged), N);
    ck_assert_uint_eq(stats(&w).in_place_reads, 0);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1, 0);
    world_close(&w);
}
END_TEST

/* An input whose newest version is on the device (its producer's output there) is read
 * there; so is one the device holds a valid copy of (staged by a class without the flag),
 * while a copy the program has since overwritten at home is passed over for the home. */
START_TEST(device_copy_read_when_valid)
{
    world_t w;
    world_open(&w, CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0, NULL);
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *plain = add_class(w.ctx, "plain", 2, modes, 0);
    /* Newest on the device: in[1] = in[0] + 1 by a plain task, then out[1] = in[1] + 1. */
    add_args_t a = {.host = w.in[0]};
    convoy_data_t *f01[2] = {w.din[0], w.din[1]};
    ck_assert_int_eq(convoy_task_insert(w.ctx, plain, &a, sizeof(a), f01), CONVOY_SUCCESS);
    insert_add(&w, w.cls, 1, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&seen_in_place), 0);
    ck_assert_uint_eq(stats(&w).in_place_reads, 0);
    ck_assert_int_eq(convoy_data_acquire(w.dout[1], CONVOY_READ), CONVOY_SUCCESS);
    ck_assert_uint_eq(w.out[1][5], (uint32_t)(7 * 0 + 5) + 2);
    /* A valid copy on the device (staged by the plain task): read there. */
    insert_add(&w, plain, 2, 0);
    insert_add(&w, w.cls, 2, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&seen_in_place), 0);
    ck_assert_uint_eq(stats(&w).in_place_reads, 0);
    check_out(&w, 2, 1, 0);
    /* The program writes in[2] at home: the device's copy is stale, the home is read. */
    ck_assert_int_eq(convoy_data_acquire(w.din[2], CONVOY_RW), CONVOY_SUCCESS);
    for (size_t i = 0; i < BYTES / 4; i++)
        w.in[2][i] += 100;
    insert_add(&w, w.cls, 2, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&seen_in_place), 1);
    ck_assert_uint_eq(stats(&w).in_place_reads, 1);
    check_out(&w, 2, 1, 100);
    world_close(&w);
}
END_TEST

/* A member that fails, by its chore or its launch (sim_fail_launch), fails alone; the
 * host copies it read stay as they were, and the next tasks read them in place again. */
START_TEST(failed_member_leaves_inputs)
{
    const char *extra[] = {"sim_fail_launch", "1", "batch_max_tasks", "1", NULL};
    world_t w;
    world_open(&w, CONVOY_CLASS_BATCHABLE | CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0,
               _i == 1 ? extra : NULL);
    insert_add(&w, w.cls, 0, _i == 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(w.ctx, _i == 0 ? "returned 5" : "launch on sim0 failed");
    /* The output's acquire reports its failed writer once; the input is as it was. */
    ck_assert_int_eq(convoy_data_acquire(w.dout[0], CONVOY_READ), CONVOY_ERR_TASK_FAILED);
    ck_assert_int_eq(convoy_data_acquire(w.din[0], CONVOY_READ), CONVOY_SUCCESS);
    for (size_t i = 0; i < BYTES / 4; i++)
        REQUIRE(w.in[0][i] == (uint32_t)i, "in[0][%zu] changed", i);
    for (int t = 0; t < N; t++)
        insert_add(&w, w.cls, t, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1, 0);
    ck_assert_uint_eq(stats(&w).tasks_failed, 1);
    ck_assert_uint_eq(stats(&w).in_place_reads, N + 1);
    world_close(&w);
}
END_TEST

/* convoy_class_new names a flag it does not know. */
START_TEST(unknown_class_flag_refused)
{
    world_t w;
    world_open(&w, CONVOY_CLASS_INPUTS_IN_PLACE, CONVOY_READ, 0, NULL);
    convoy_access_t m = CONVOY_READ;
    convoy_class_t *c = NULL;
    ck_assert_int_eq(convoy_class_new(w.ctx, "odd", 1, &m, 1u << 7, &c), CONVOY_ERR_INVALID);
    tu_assert_error_has(w.ctx, "unknown flags 0x80");
    world_close(&w);
}
END_TEST

/* A chore that takes a while (300 ms): the flow before the last is its input. */
static int slow_chore(const convoy_task_view_t *t, void *s)
{
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    if (t->nflows == 1) /* the writer the reader waits for */
        return 0;
    const uint32_t *in = t->flows[t->nflows - 2];
    uint32_t *out = t->flows[t->nflows - 1];
    (void)s;
    for (size_t i = 0; i < t->flow_bytes[0] / 4; i++)
        out[i] = in[i] + 1;
    return 0;
}

/* convoy_data_free of an input waits for its reader, running (_i & 2: still pending,
 * behind a slow writer of its other input), with the input read in place (_i & 1) or
 * staged: once the free has returned the program may write the memory, and the reader
 * must not see that. Before, the free returned at once (it waited for the last writer
 * only) and the reader computed on the program's new bytes (in place, or pending). Not
 * case 0, a staged reader already running: whether its stage-in had copied the bytes
 * before the program wrote them was a race, so it guarded nothing. */
START_TEST(free_waits_for_readers)
{
    int in_place = _i & 1, pending = (_i & 2) != 0;
    world_t w;
    world_open(&w, in_place ? CONVOY_CLASS_INPUTS_IN_PLACE : 0, CONVOY_READ, 0, NULL);
    convoy_access_t wm = CONVOY_WRITE, rm[3] = {CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *writer = add_class(w.ctx, "slow_writer", 1, &wm, 0);
    convoy_class_t *reader =
        add_class(w.ctx, "slow_reader", 3, rm, in_place ? CONVOY_CLASS_INPUTS_IN_PLACE : 0);
    convoy_class_set_chore(writer, CONVOY_DEVICE_SIM, slow_chore);
    convoy_class_set_chore(reader, CONVOY_DEVICE_SIM, slow_chore);
    if (pending)
        ck_assert_int_eq(convoy_task_insert(w.ctx, writer, NULL, 0, &w.din[1]), CONVOY_SUCCESS);
    convoy_data_t *f[3] = {w.din[1], w.din[0], w.dout[0]};
    ck_assert_int_eq(convoy_task_insert(w.ctx, reader, NULL, 0, f), CONVOY_SUCCESS);
    convoy_data_free(w.din[0]);
    for (size_t i = 0; i < BYTES / 4; i++) /* the program's again */
        w.in[0][i] = 5000;
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_acquire(w.dout[0], CONVOY_READ), CONVOY_SUCCESS);
    ck_assert_uint_eq(w.out[0][3], 3 + 1);
    ck_assert_int_eq(convoy_data_new(w.ctx, w.in[0], BYTES, &w.din[0]), CONVOY_SUCCESS);
    world_close(&w);
}
END_TEST

static Suite *in_place_suite(void)
{
    Suite *s = suite_create("in_place");
    TCase *tc = tcase_create("in_place");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, inputs_read_in_host_memory, 0, 2);
    tcase_add_loop_test(tc, staged_when_not_in_place, 0,
                        (int)(sizeof(staged_cases) / sizeof(staged_cases[0])));
    tcase_add_test(tc, input_named_twice_staged);
    tcase_add_test(tc, device_copy_read_when_valid);
    tcase_add_loop_test(tc, failed_member_leaves_inputs, 0, 2);
    tcase_add_test(tc, unknown_class_flag_refused);
    tcase_add_loop_test(tc, free_waits_for_readers, 1, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(in_place_suite());
}
