/*
 * check_component: selection of the scheduler and the devices at convoy_init
 * (src/component.c): unknown names, explicit and excluded devices, devices that cannot
 * start, and that a failed init leaves nothing behind.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/core.h"
#include "tests/test_util.h"

#define SENTINEL ((convoy_context_t *)(uintptr_t)0x5a5a)

/* convoy_init with presets; expects failure with st; returns after checking that
 * *ctx_p is untouched. */
static void init_fails(const char *const *presets, convoy_status_t want)
{
    tu_set_presets(presets);
    convoy_context_t *ctx = SENTINEL;
    convoy_status_t st = convoy_init(NULL, NULL, &ctx);
    ck_assert_msg(st == want, "convoy_init returned %s, expected %s (%s)", convoy_status_name(st),
                  convoy_status_name(want), convoy_last_error(NULL));
    ck_assert_ptr_eq(ctx, SENTINEL);
}

/* A preset of an unknown component name is refused at once, with a message naming the
 * value, the preset and what is allowed. */
static void preset_fails(const char *name, const char *value)
{
    convoy_param_preset_clear();
    ck_assert_int_eq(convoy_param_preset(name, value), CONVOY_ERR_NOT_FOUND);
}

START_TEST(unknown_sched)
{
    /* Proves: an unknown scheduler is CONVOY_ERR_NOT_FOUND with a message naming it, its
     * source and listing fifo and batch: from a preset at convoy_param_preset, from
     * CONVOY_SCHED or --convoy-sched at convoy_init. */
    preset_fails("sched", "fastest");
    tu_assert_error_has(NULL, "'fastest'", "'sched'", "fifo, batch");

    setenv("CONVOY_SCHED", "FIFO", 1);
    init_fails((const char *const[]){"devices", "host", NULL}, CONVOY_ERR_NOT_FOUND);
    tu_assert_error_has(NULL, "'FIFO'", "sched", "fifo, batch", "CONVOY_SCHED");
    unsetenv("CONVOY_SCHED");

    char *args[] = {"prog", "--convoy-sched", "", NULL};
    char **argv = args;
    int argc = 3;
    tu_set_presets((const char *const[]){"devices", "host", NULL});
    convoy_context_t *ctx = SENTINEL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_NOT_FOUND);
    ck_assert_ptr_eq(ctx, SENTINEL);
    tu_assert_error_has(NULL, "fifo", "batch", "option --convoy-sched");
}
END_TEST

START_TEST(sched_names)
{
    /* Proves: the default scheduler is batch, and convoy_sched_name reports the one asked
     * for. */
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "host", NULL});
    ck_assert_str_eq(convoy_sched_name(ctx), "batch");
    convoy_fini(ctx);
    const char *names[] = {"fifo", "batch"};
    for (int i = 0; i < 2; i++) {
        ctx = tu_init((const char *const[]){"devices", "host", "sched", names[i], NULL});
        ck_assert_str_eq(convoy_sched_name(ctx), names[i]);
        convoy_fini(ctx);
    }
}
END_TEST

START_TEST(unknown_device)
{
    /* Proves: an unknown device name, alone, in a list or excluded, is
     * CONVOY_ERR_NOT_FOUND with a message naming it and listing the devices. */
    const char *specs[] = {"gpu", "host,gpu", "^gpu", "sim,^gpu", "cuda0", "Sim", "^"};
    const char *bad[] = {"'gpu'", "'gpu'", "'gpu'", "'gpu'", "'cuda0'", "'Sim'", "''"};
    for (int i = 0; i < 7; i++) {
        /* At the preset already (the name is checked where it is given)... */
        preset_fails("devices", specs[i]);
        tu_assert_error_has(NULL, bad[i], "devices", "sim", "host");
        /* ...and from the environment at init, naming the variable. */
        setenv("CONVOY_DEVICES", specs[i], 1);
        init_fails(NULL, CONVOY_ERR_NOT_FOUND);
        tu_assert_error_has(NULL, bad[i], "devices", "sim", "host", "CONVOY_DEVICES");
        unsetenv("CONVOY_DEVICES");
    }
#if !CONVOY_HAVE_CUDA
    /* A backend that is not built is unknown too. */
    preset_fails("devices", "cuda");
    tu_assert_error_has(NULL, "'cuda'", "sim", "host");
#endif
}
END_TEST

static int one(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    *(int *)t->flows[0] = 1;
    return 0;
}

static void host_body(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    ck_assert_int_eq(convoy_accel_count(ctx), 0);
    ck_assert_ptr_null(convoy_accel_name(ctx, 0));
    ck_assert_ptr_null(convoy_accel_name(ctx, -1));
    ck_assert_int_eq(ctx->nworkers, 2);
    /* A class with a CPU chore runs. */
    convoy_access_t w = CONVOY_WRITE;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "one", 1, &w, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, one), CONVOY_SUCCESS);
    int v = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &v, sizeof(v), &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(v, 1);
}

START_TEST(devices_host)
{
    /* Proves: devices=host uses no accelerator, and tasks still run on the CPUs. */
    tu_with_presets((const char *const[]){"devices", "host", "nthreads", "2", NULL}, host_body,
                    NULL);
}
END_TEST

START_TEST(devices_sim)
{
    /* Proves: devices=sim opens one accelerator named sim0, sim_count=n opens n named
     * sim0..sim(n-1); "host,sim" is the same as "sim". */
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "sim", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 1);
    ck_assert_str_eq(convoy_accel_name(ctx, 0), "sim0");
    ck_assert_ptr_null(convoy_accel_name(ctx, 1));
    convoy_fini(ctx);

    ctx = tu_init((const char *const[]){"devices", "sim", "sim_count", "2", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 2);
    ck_assert_str_eq(convoy_accel_name(ctx, 0), "sim0");
    ck_assert_str_eq(convoy_accel_name(ctx, 1), "sim1");
    convoy_fini(ctx);

    ctx = tu_init((const char *const[]){"devices", "host,sim", "sim_count", "3", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 3);
    ck_assert_str_eq(convoy_accel_name(ctx, 2), "sim2");
    convoy_fini(ctx);

    /* sim_count above the maximum (16, CONVOY__MAX_ACCEL) is a parameter error. */
    ck_assert_int_eq(convoy_param_preset("sim_count", "17"), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "sim_count", "'17'", "[0, 16]");
}
END_TEST

START_TEST(devices_excluded)
{
    /* Proves: devices=^sim uses no sim device, and on a machine without GPUs (or a build
     * without CUDA and HIP) no accelerator at all; devices=auto there uses the CPUs
     * alone (never the emulated sim device). */
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "^sim", NULL});
    for (int i = 0; i < convoy_accel_count(ctx); i++)
        ck_assert_msg(strncmp(convoy_accel_name(ctx, i), "sim", 3) != 0, "%s in use",
                      convoy_accel_name(ctx, i));
    int real = convoy_accel_count(ctx);
#if !CONVOY_HAVE_CUDA && !CONVOY_HAVE_HIP
    ck_assert_int_eq(real, 0);
#endif
    convoy_fini(ctx);

    ctx = tu_init((const char *const[]){"devices", "auto", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), real);
    convoy_fini(ctx);

    /* Excluding what was not asked for, or the host, changes nothing. */
    ctx = tu_init((const char *const[]){"devices", "sim,^host", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 1);
    convoy_fini(ctx);
}
END_TEST

START_TEST(device_unavailable)
{
    /* Proves: a device asked for explicitly that cannot start (sim with sim_count=0) is
     * CONVOY_ERR_UNAVAILABLE naming the device and the reason; the same device not asked
     * for explicitly is silently skipped. */
    init_fails((const char *const[]){"devices", "sim", "sim_count", "0", NULL},
               CONVOY_ERR_UNAVAILABLE);
    tu_assert_error_has(NULL, "'sim'", "sim_count is 0");

    convoy_context_t *ctx =
        tu_init((const char *const[]){"devices", "host,^sim", "sim_count", "0", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 0);
    convoy_fini(ctx);
#if !CONVOY_HAVE_CUDA && !CONVOY_HAVE_HIP
    /* auto with no sim and no GPU: the CPUs alone. */
    ctx = tu_init((const char *const[]){"devices", "auto", "sim_count", "0", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 0);
    convoy_fini(ctx);
#endif
    /* A copy method the device lacks (sim has no SM kernel) fails once the device is
     * open. */
    init_fails((const char *const[]){"devices", "sim", "sim_count", "2", "copy_method", "sm", NULL},
               CONVOY_ERR_UNAVAILABLE);
    tu_assert_error_has(NULL, "sm", "sim0");
}
END_TEST

/* Run one context, so that threads started once per process (ThreadSanitizer's
 * background thread) exist before a test counts threads. */
static void warm_up(void)
{
    convoy_fini(tu_init((const char *const[]){"devices", "sim", "nthreads", "1", NULL}));
    tu_thread_count_stable(); /* its joined threads gone: the tests count from here */
}

/* Assert that no more threads are listed than `before` once the joined ones are reaped,
 * and return the count: less than `before` when a thread of the warm-up was still listed
 * as it was counted, and then the count to go on from. */
static int assert_no_thread_left(int before)
{
    int now = tu_thread_count_settled(before);
    ck_assert_msg(now <= before, "%d threads listed, %d before", now, before);
    return now;
}

/* Every way init can fail after reading parameters, each with its status. */
static const struct {
    const char *const presets[12];
    convoy_status_t status;
    const char *env[2]; /* a variable to set for the init that fails (names are checked
                           at the preset: a bad one given there would not reach init) */
} failures[] = {
    {{"devices", "host", NULL}, CONVOY_ERR_NOT_FOUND, {"CONVOY_SCHED", "nope"}},
    {{NULL}, CONVOY_ERR_NOT_FOUND, {"CONVOY_DEVICES", "nope"}},
    {{"devices", "sim", "sim_count", "0", NULL}, CONVOY_ERR_UNAVAILABLE, {NULL, NULL}},
    {{"devices", "sim", "sched", "batch", "sim_count", "3", "copy_method", "sm", NULL},
     CONVOY_ERR_UNAVAILABLE,
     {NULL, NULL}},
};

START_TEST(failed_init_leaves_nothing)
{
    /* Proves: a failed convoy_init starts no thread that outlives it, leaves *ctx_p
     * untouched, and a following init/fini in the same process works (20 rounds, so a
     * leak of threads or of global state would show). */
    warm_up();
    int before = tu_thread_count();
    for (int round = 0; round < 20; round++) {
        if (failures[_i].env[0] != NULL)
            setenv(failures[_i].env[0], failures[_i].env[1], 1);
        init_fails(failures[_i].presets, failures[_i].status);
        if (failures[_i].env[0] != NULL)
            unsetenv(failures[_i].env[0]);
        before = assert_no_thread_left(before);
        convoy_context_t *ctx = tu_init(
            (const char *const[]){"devices", "sim", "sim_count", "2", "nthreads", "2", NULL});
        ck_assert_int_gt(tu_thread_count(), before);
        ck_assert_int_eq(convoy_accel_count(ctx), 2);
        convoy_fini(ctx);
        before = assert_no_thread_left(before);
    }
}
END_TEST

START_TEST(fini_stops_threads)
{
    /* Proves: convoy_fini joins every thread init started (CPU workers, progress and
     * sim stream threads), for each scheduler and device set. */
    warm_up();
    int before = tu_thread_count();
    const char *devs[] = {"host", "sim"};
    const char *scheds[] = {"fifo", "batch"};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 2; s++) {
            convoy_context_t *ctx = tu_init((const char *const[]){
                "devices", devs[d], "sched", scheds[s], "nthreads", "3", NULL});
            ck_assert_int_ge(tu_thread_count(), before + 3);
            convoy_fini(ctx);
            before = assert_no_thread_left(before);
        }
    convoy_fini(NULL);
}
END_TEST

START_TEST(init_null_ctx_p)
{
    /* Proves: convoy_init(…, NULL) is CONVOY_ERR_INVALID and starts nothing. */
    warm_up();
    int before = tu_thread_count();
    ck_assert_int_eq(convoy_init(NULL, NULL, NULL), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "ctx_p");
    ck_assert_int_eq(tu_thread_count(), before);
}
END_TEST

START_TEST(two_contexts)
{
    /* Proves: two contexts can live at once in one process, with their own scheduler
     * and devices. */
    convoy_context_t *a = tu_init((const char *const[]){"devices", "host", "sched", "fifo", NULL});
    convoy_context_t *b = tu_init((const char *const[]){"devices", "sim", "sched", "batch", NULL});
    ck_assert_str_eq(convoy_sched_name(a), "fifo");
    ck_assert_str_eq(convoy_sched_name(b), "batch");
    ck_assert_int_eq(convoy_accel_count(a), 0);
    ck_assert_int_eq(convoy_accel_count(b), 1);
    convoy_fini(a);
    convoy_fini(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("component");
    TCase *tc = tu_tcase(s, "sched", 20);
    tcase_add_test(tc, unknown_sched);
    tcase_add_test(tc, sched_names);
    tc = tu_tcase(s, "devices", 20);
    tcase_add_test(tc, unknown_device);
    tcase_add_test(tc, devices_host);
    tcase_add_test(tc, devices_sim);
    tcase_add_test(tc, devices_excluded);
    tcase_add_test(tc, device_unavailable);
    tc = tu_tcase(s, "lifecycle", 30);
    tcase_add_loop_test(tc, failed_init_leaves_nothing, 0,
                        (int)(sizeof(failures) / sizeof(failures[0])));
    tcase_add_test(tc, fini_stops_threads);
    tcase_add_test(tc, init_null_ctx_p);
    tcase_add_test(tc, two_contexts);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
