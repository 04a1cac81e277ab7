/*
 * check_ze: the Level Zero component (device/ze/) against the fake loader of
 * tests/fake_ze.c, which tests/ze_fake.sh puts in front of the real one: query counts
 * the fake driver's GPUs; tasks with ZE chores run on it under both schedulers and give
 * what a host oracle computes, the chore receiving the stream's command list; direct
 * memcpy_multi calls (batch and loop) move what an oracle expects; a copy that fails on
 * request gives an error naming the call and the exact number of copies submitted, and
 * inside a task graph it is retried and the tasks still succeed; pinned host memory
 * comes from zeMemAllocHost; and nothing of Level Zero is left alive after fini.
 * What it cannot prove: anything about a real Intel GPU (doc/level-zero.md).
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "src/context.h"
#include "src/core.h"
#include "tests/fake_ze.h"
#include "tests/test_util.h"

static fake_ze_set_devices_fn set_devices;
static fake_ze_fail_copies_fn fail_copies;
static fake_ze_get_counts_fn get_counts;
static fake_ze_is_list_fn is_list;

extern const convoy__device_component_t *const convoy__device_components[];

static fake_ze_counts_t counts(void)
{
    fake_ze_counts_t c;
    get_counts(&c);
    return c;
}

static const convoy__device_component_t *ze_component(void)
{
    for (int i = 0; convoy__device_components[i] != NULL; i++)
        if (strcmp(convoy__device_components[i]->name, "ze") == 0)
            return convoy__device_components[i];
    return NULL;
}

START_TEST(ze_query)
{
    /* Proves: query counts the GPUs of the fake driver (2, then 0 with a reason), from
     * parameters alone. */
    char why[256] = "";
    convoy__params_t params;
    tu_set_presets(NULL);
    ck_assert_int_eq(convoy__params_load(&params, NULL, NULL), CONVOY_SUCCESS);
    const convoy__device_component_t *c = ze_component();
    ck_assert_ptr_nonnull(c);
    set_devices(2);
    ck_assert_int_eq(c->query(&params, why, sizeof(why)), 2);
    set_devices(0);
    ck_assert_int_eq(c->query(&params, why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "no GPU among the 1 Level Zero driver(s)") != NULL, "%s", why);
    convoy__params_free(&params);
}
END_TEST

#define NDATA 24
#define NINT 512

/* The ZE chore: a "kernel" over device pointers, which the fake keeps in host memory;
 * it fails when the stream is not a command list of the fake. */
static int ze_chore(const convoy_task_view_t *t, void *stream)
{
    if (!is_list(stream))
        return 5;
    const int *in = t->flows[0];
    int *out = t->flows[1];
    for (size_t i = 0; i < t->flow_bytes[1] / sizeof(int); i++)
        out[i] = out[i] * 3 + in[i];
    return 0;
}

/* NDATA outputs, each updated by 3 tasks from an input: out = out * 3 + in, thrice. */
static void run_tasks(const char *sched, int fail_first, int expect_retried)
{
    convoy_context_t *ctx = tu_init((const char *const[]){
        "devices", "ze", "sched", sched, "nthreads", "1", "batch_max_wait_us", "2000", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 1);
    convoy_class_t *cls;
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_RW};
    ck_assert_int_eq(convoy_class_new(ctx, "axpy", 2, modes, CONVOY_CLASS_BATCHABLE, &cls),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_ZE, ze_chore), CONVOY_SUCCESS);
    static int in[NDATA][NINT], out[NDATA][NINT], want[NDATA][NINT];
    convoy_data_t *din[NDATA], *dout[NDATA];
    for (int d = 0; d < NDATA; d++) {
        for (int i = 0; i < NINT; i++) {
            in[d][i] = d * 7 + i;
            out[d][i] = want[d][i] = i - d;
        }
        ck_assert_int_eq(convoy_data_new(ctx, in[d], sizeof(in[d]), &din[d]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_data_new(ctx, out[d], sizeof(out[d]), &dout[d]), CONVOY_SUCCESS);
    }
    if (fail_first > 0)
        fail_copies(fail_first, 1);
    for (int round = 0; round < 3; round++)
        for (int d = 0; d < NDATA; d++) {
            ck_assert_int_eq(
                convoy_task_insert(ctx, cls, NULL, 0, (convoy_data_t *const[]){din[d], dout[d]}),
                CONVOY_SUCCESS);
            for (int i = 0; i < NINT; i++)
                want[d][i] = want[d][i] * 3 + in[d][i];
        }
    ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    for (int d = 0; d < NDATA; d++)
        ck_assert_msg(memcmp(out[d], want[d], sizeof(out[d])) == 0, "datum %d differs", d);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    ck_assert_uint_eq(s.tasks_completed, 3 * NDATA);
    if (expect_retried)
        ck_assert_uint_ge(s.retried_copies, 1);
    fake_ze_counts_t c = counts();
    ck_assert_int_ge(c.copies, 2 * NDATA);
    ck_assert_int_eq(c.bad_waits, 0);
    for (int d = 0; d < NDATA; d++) {
        convoy_data_free(din[d]);
        convoy_data_free(dout[d]);
    }
    convoy_fini(ctx);
    ck_assert_int_eq(counts().live_objects, 0);
}

START_TEST(ze_tasks)
{
    /* Proves: devices=ze opens the fake GPU; tasks with ZE chores run there under fifo
     * and batch, the chore gets a command list of the fake as its stream, the results
     * are the host oracle's, no wait was appended on an event never signalled, and
     * fini leaves no Level Zero object alive. */
    run_tasks("fifo", 0, 0);
    run_tasks("batch", 0, 0);
}
END_TEST

START_TEST(ze_tasks_copy_fails)
{
    /* Proves: under batch, a copy that fails on request (the 3rd copy call) fails its
     * submission, which the pipeline retries one copy at a time from the first copy not
     * submitted: every task still succeeds with the oracle's results. */
    run_tasks("batch", 3, 1);
}
END_TEST

/* A device opened on the fake, for direct calls of its ops. */
static convoy_context_t *open_ze(convoy__device_t **dev_p)
{
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "ze", "nthreads", "1", NULL});
    ck_assert_int_eq(convoy__ctx_accel_count(ctx), 1);
    *dev_p = convoy__ctx_accel(ctx, 0);
    ck_assert_str_eq((*dev_p)->name, "ze0");
    ck_assert_int_eq((*dev_p)->kind, CONVOY_DEVICE_ZE);
    return ctx;
}

#define NCOPY 40

START_TEST(ze_memcpy_multi)
{
    /* Proves: memcpy_multi moves NCOPY copies of random sizes host to device as one
     * batch (engine, the auto choice) and back one by one (loop), and the bytes are the
     * oracle's; each method reports itself; stream_sync works. Then a copy failing on
     * request: the batch stops there with CONVOY_ERR_DEVICE, *submitted_p is exactly the
     * copies before it, and the message names the call, the result and the copy. */
    convoy__device_t *dev;
    convoy_context_t *ctx = open_ze(&dev);
    convoy__stream_t *s;
    ck_assert_int_eq(dev->ops->stream_create(dev, &s), CONVOY_SUCCESS);
    ck_assert(is_list(dev->ops->stream_native(dev, s)));
    static unsigned char src[NCOPY][4096], back[NCOPY][4096];
    void *dptr[NCOPY];
    convoy__copy_t up[NCOPY], down[NCOPY];
    srand(12);
    for (int i = 0; i < NCOPY; i++) {
        size_t bytes = 1 + (size_t)(rand() % 4096);
        for (size_t k = 0; k < bytes; k++)
            src[i][k] = (unsigned char)rand();
        ck_assert_int_eq(dev->ops->mem_alloc(dev, bytes, &dptr[i]), CONVOY_SUCCESS);
        up[i] = (convoy__copy_t){.dst = dptr[i], .src = src[i], .bytes = bytes, .dir = CONVOY__H2D};
        down[i] =
            (convoy__copy_t){.dst = back[i], .src = dptr[i], .bytes = bytes, .dir = CONVOY__D2H};
    }
    int submitted = -1, method = -1;
    ck_assert_int_eq(dev->ops->memcpy_multi(dev, s, up, NCOPY, -1, &submitted, &method),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(submitted, NCOPY);
    ck_assert_int_eq(method, CONVOY__METHOD_ENGINE);
    ck_assert_int_eq(
        dev->ops->memcpy_multi(dev, s, down, NCOPY, CONVOY__METHOD_LOOP, &submitted, &method),
        CONVOY_SUCCESS);
    ck_assert_int_eq(method, CONVOY__METHOD_LOOP);
    ck_assert_int_eq(dev->ops->stream_sync(dev, s), CONVOY_SUCCESS);
    for (int i = 0; i < NCOPY; i++)
        ck_assert_msg(memcmp(src[i], back[i], up[i].bytes) == 0, "copy %d differs", i);

    fail_copies(8, 1);
    ck_assert_int_eq(
        dev->ops->memcpy_multi(dev, s, up, NCOPY, CONVOY__METHOD_ENGINE, &submitted, NULL),
        CONVOY_ERR_DEVICE);
    ck_assert_int_eq(submitted, 7);
    tu_assert_error_has(NULL, "ze0: zeCommandListAppendMemoryCopy", "ZE_RESULT_ERROR_DEVICE_LOST",
                        "memcpy_multi engine, copy 7 of 40");
    /* The sm method is not offered. */
    ck_assert_int_eq(dev->ops->memcpy_multi(dev, s, up, NCOPY, CONVOY__METHOD_SM, &submitted, NULL),
                     CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "method 2 (sm) is not offered");
    for (int i = 0; i < NCOPY; i++)
        dev->ops->mem_free(dev, dptr[i]);
    dev->ops->stream_destroy(dev, s);
    convoy_fini(ctx);
    ck_assert_int_eq(counts().live_objects, 0);
}
END_TEST

START_TEST(ze_host_alloc)
{
    /* Proves: with a ze device open, convoy_host_alloc's memory is pinned memory from
     * zeMemAllocHost (a slab), and it is freed with the device at fini. */
    long before = counts().host_allocs;
    convoy__device_t *dev;
    convoy_context_t *ctx = open_ze(&dev);
    void *p = convoy_host_alloc(ctx, 1000);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(counts().host_allocs, before + 1);
    memset(p, 1, 1000);
    convoy_host_free(ctx, p);
    convoy_fini(ctx);
    ck_assert_int_eq(counts().live_objects, 0);
}
END_TEST

START_TEST(ze_no_device)
{
    /* Proves: devices=ze without a GPU stops init with CONVOY_ERR_UNAVAILABLE and the
     * reason; devices=auto then runs on the CPUs. */
    set_devices(0);
    tu_set_presets((const char *const[]){"devices", "ze", NULL});
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_ERR_UNAVAILABLE);
    tu_assert_error_has(NULL, "device 'ze' was asked for but cannot start", "no GPU among");
    ctx = tu_init((const char *const[]){"nthreads", "1", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 0);
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ze");
    TCase *tc = tu_tcase(s, "fake", 60);
    tcase_add_test(tc, ze_query);
    tcase_add_test(tc, ze_tasks);
    tcase_add_test(tc, ze_tasks_copy_fails);
    tcase_add_test(tc, ze_memcpy_multi);
    tcase_add_test(tc, ze_host_alloc);
    tcase_add_test(tc, ze_no_device);
    return s;
}

int main(void)
{
    /* The library the dynamic loader gives as libze_loader.so.1 (the component's
     * module will get the same one): the fake when run through tests/ze_fake.sh. */
    void *h = dlopen("libze_loader.so.1", RTLD_NOW);
    if (h != NULL) {
        set_devices = (fake_ze_set_devices_fn)dlsym(h, "fake_ze_set_devices");
        fail_copies = (fake_ze_fail_copies_fn)dlsym(h, "fake_ze_fail_copies");
        get_counts = (fake_ze_get_counts_fn)dlsym(h, "fake_ze_get_counts");
        is_list = (fake_ze_is_list_fn)dlsym(h, "fake_ze_is_list");
    }
    if (set_devices == NULL || fail_copies == NULL || get_counts == NULL || is_list == NULL) {
        fprintf(stderr, "check_ze: libze_loader.so.1 is not the fake loader: run it through "
                        "tests/ze_fake.sh\n");
        return 77;
    }
    return tu_main(suite());
}
