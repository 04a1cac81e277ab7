/*
 * check_ze: the Level Zero component (device/ze/) against the fake loader of
 * tests/fake_ze.c, which tests/ze_fake.sh puts in front of the real one: query counts
 * the fake driver's GPUs; tasks with ZE chores run on it under both schedulers and give
 * what a host oracle computes, the chore receiving the stream's command list; direct
 * memcpy_multi calls (batch and loop) move what an oracle expects; a copy that fails on
 * request gives an error naming the call and the exact number of copies submitted, and
 * inside a task graph it is retried and the tasks still succeed; pinned host memory
 * comes from zeMemAllocHost; a module that cannot load makes the component unavailable;
 * nothing of Level Zero is left alive after fini; and each other Level Zero call the
 * component checks, made to fail, gives the error it should (case "failures").
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
static fake_ze_fail_fn fail_at;
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
    /* Proves: the build says it holds the ZE kind; query counts the GPUs of the fake
     * driver (2, then 0 with a reason), from parameters alone. */
    char why[256] = "";
    convoy__params_t params;
    tu_set_presets(NULL);
    ck_assert_int_eq(convoy__params_load(&params, NULL, NULL), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_build_has_device(CONVOY_DEVICE_ZE), 1);
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
        fail_at("zeCommandListAppendMemoryCopy", fail_first, 1);
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

    fail_at("zeCommandListAppendMemoryCopy", 8, 1);
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

START_TEST(ze_query_fails)
{
    /* Proves: a failing zeInit, zeDriverGet or zeDeviceGet makes query answer 0 with a
     * reason naming the call and the result. */
    static const struct {
        const char *fn, *why;
    } cases[] = {
        {"zeInit", "no Level Zero GPU driver (zeInit: ZE_RESULT_ERROR_DEVICE_LOST"},
        {"zeDriverGet", "Level Zero cannot list its drivers (zeDriverGet: "
                        "ZE_RESULT_ERROR_DEVICE_LOST"},
        {"zeDeviceGet", "no GPU among the 1 Level Zero driver(s)"},
    };
    convoy__params_t params;
    tu_set_presets(NULL);
    ck_assert_int_eq(convoy__params_load(&params, NULL, NULL), CONVOY_SUCCESS);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[256] = "";
        fail_at(cases[i].fn, 1, 1);
        ck_assert_int_eq(ze_component()->query(&params, why, sizeof(why)), 0);
        ck_assert_msg(strstr(why, cases[i].why) != NULL, "%s: %s", cases[i].fn, why);
        ck_assert_int_eq(ze_component()->query(&params, why, sizeof(why)), 1);
    }
    convoy__params_free(&params);
}
END_TEST

START_TEST(ze_open_fails)
{
    /* Proves: devices=ze stops init with the failing call's name when a call of open or
     * of the pipeline's stream creation fails, and the failed open leaves nothing of
     * Level Zero alive. (zeDeviceGetProperties is called by query, by open's search and
     * then by open itself: its third call is open's own.) */
    static const struct {
        const char *fn;
        int first;
    } cases[] = {
        {"zeContextCreate", 1},
        {"zeDeviceGetProperties", 3},
        {"zeDeviceGetMemoryProperties", 1},
        {"zeDeviceGetCommandQueueGroupProperties", 1},
        {"zeCommandListCreateImmediate", 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fail_at(cases[i].fn, cases[i].first, 1);
        tu_set_presets((const char *const[]){"devices", "ze", "nthreads", "1", NULL});
        convoy_context_t *ctx = NULL;
        ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_ERR_DEVICE);
        tu_assert_error_has(NULL, cases[i].fn, "ZE_RESULT_ERROR_DEVICE_LOST");
        ck_assert_int_eq(counts().live_objects, 0);
        fail_at(cases[i].fn, 1, 0);
    }
}
END_TEST

static int chore_ran;

static int mark_chore(void *arg, void *stream)
{
    (void)arg;
    (void)stream;
    chore_ran = 1;
    return 0;
}

START_TEST(ze_event_fails)
{
    /* Proves, on one device's ops: an event pool or its events that cannot be created,
     * a signal, a query, a host wait, a stream wait and a barrier that fail each give an
     * error naming the call, and the next call works; a failed barrier keeps a chore
     * from running. A wait whose ack signal fails still succeeds, and the event it
     * waited on is then never reset (resets unchanged), while after a wait with its ack
     * the replaced event and its ack are reset (2 resets); resets that fail leave the
     * device working. Device memory the fake cannot give is CONVOY_ERR_NOMEM. */
    convoy__device_t *dev;
    convoy_context_t *ctx = open_ze(&dev);
    convoy__stream_t *s1, *s2;
    convoy__event_t *e;
    ck_assert_int_eq(dev->ops->stream_create(dev, &s1), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->stream_create(dev, &s2), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->event_create(dev, &e), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->event_query(dev, e), 1); /* never recorded */

    fail_at("zeEventPoolCreate", 1, 1);
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "zeEventPoolCreate");
    fail_at("zeEventCreate", 1, 64);
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "zeEventCreate");
    fail_at("zeEventCreate", 64, 1); /* a pool whose last event cannot be created */
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->event_query(dev, e), 1);

    fail_at("zeCommandListAppendSignalEvent", 1, 1);
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "zeCommandListAppendSignalEvent");
    fail_at("zeEventQueryStatus", 1, 1);
    ck_assert_int_lt(dev->ops->event_query(dev, e), 0);
    tu_assert_error_has(NULL, "zeEventQueryStatus");
    fail_at("zeEventHostSynchronize", 1, 1);
    ck_assert_int_eq(dev->ops->stream_sync(dev, s1), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "zeEventHostSynchronize");
    fail_at("zeCommandListAppendSignalEvent", 1, 1);
    ck_assert_int_eq(dev->ops->stream_sync(dev, s1), CONVOY_ERR_DEVICE);
    ck_assert_int_eq(dev->ops->stream_sync(dev, s1), CONVOY_SUCCESS);

    fail_at("zeCommandListAppendWaitOnEvents", 1, 1);
    ck_assert_int_eq(dev->ops->stream_wait_event(dev, s2, e), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "zeCommandListAppendWaitOnEvents");
    long r0 = counts().resets;
    ck_assert_int_eq(dev->ops->stream_wait_event(dev, s2, e), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_SUCCESS);
    ck_assert_int_eq(counts().resets, r0 + 2);
    fail_at("zeCommandListAppendSignalEvent", 1, 1); /* the ack's */
    ck_assert_int_eq(dev->ops->stream_wait_event(dev, s2, e), CONVOY_SUCCESS);
    r0 = counts().resets;
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_SUCCESS);
    ck_assert_int_eq(counts().resets, r0);
    ck_assert_int_eq(dev->ops->stream_wait_event(dev, s2, e), CONVOY_SUCCESS);
    fail_at("zeEventHostReset", 1, 2);
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->event_record(dev, e, s1), CONVOY_SUCCESS);
    ck_assert_int_eq(dev->ops->event_query(dev, e), 1);

    static char a[64], b[64];
    convoy__copy_t c = {.dst = b, .src = a, .bytes = sizeof(a), .dir = CONVOY__D2D};
    ck_assert_int_eq(dev->ops->memcpy(dev, s1, &c), CONVOY_SUCCESS);
    fail_at("zeCommandListAppendBarrier", 1, 1);
    ck_assert_int_eq(dev->ops->memcpy(dev, s1, &c), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "zeCommandListAppendBarrier");
    ck_assert_int_eq(dev->ops->memcpy(dev, s1, &c), CONVOY_SUCCESS);
    fail_at("zeCommandListAppendBarrier", 1, 1);
    chore_ran = 0;
    ck_assert_int_eq(dev->ops->launch(dev, s1, mark_chore, NULL), CONVOY_ERR_DEVICE);
    ck_assert_int_eq(chore_ran, 0);
    ck_assert_int_eq(dev->ops->launch(dev, s1, mark_chore, NULL), CONVOY_SUCCESS);
    ck_assert_int_eq(chore_ran, 1);

    void *big = NULL;
    fail_at("zeMemAllocDevice", 1, 1);
    ck_assert_int_eq(dev->ops->mem_alloc(dev, (size_t)300 << 20, &big), CONVOY_ERR_NOMEM);
    ck_assert_ptr_null(big);

    dev->ops->event_destroy(dev, e);
    dev->ops->stream_destroy(dev, s1);
    dev->ops->stream_destroy(dev, s2);
    convoy_fini(ctx);
    ck_assert_int_eq(counts().live_objects, 0);
    ck_assert_int_eq(counts().bad_waits, 0);
}
END_TEST

START_TEST(ze_host_alloc_fails)
{
    /* Proves: when zeMemAllocHost fails, convoy_host_alloc returns NULL with an error
     * naming it, and the next call gets memory. */
    convoy__device_t *dev;
    convoy_context_t *ctx = open_ze(&dev);
    fail_at("zeMemAllocHost", 1, 1);
    ck_assert_ptr_null(convoy_host_alloc(ctx, 1000));
    tu_assert_error_has(ctx, "zeMemAllocHost", "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY");
    void *p = convoy_host_alloc(ctx, 1000);
    ck_assert_ptr_nonnull(p);
    convoy_host_free(ctx, p);
    convoy_fini(ctx);
    ck_assert_int_eq(counts().live_objects, 0);
}
END_TEST

START_TEST(ze_module_missing)
{
    /* Proves: where the component is a module, a module_dir without convoy_ze.so makes
     * it unavailable with the loader's reason, from query and from devices=ze. */
    if (!CONVOY_HAVE_MODULES)
        return; /* built in: nothing to load */
    char why[512] = "";
    convoy__params_t params;
    tu_set_presets((const char *const[]){"module_dir", "/nonexistent/convoy", NULL});
    ck_assert_int_eq(convoy__params_load(&params, NULL, NULL), CONVOY_SUCCESS);
    ck_assert_int_eq(ze_component()->query(&params, why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "not loaded") && strstr(why, "/nonexistent/convoy/convoy_ze.so"),
                  "%s", why);
    convoy__params_free(&params);
    tu_set_presets(
        (const char *const[]){"module_dir", "/nonexistent/convoy", "devices", "ze", NULL});
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_ERR_UNAVAILABLE);
    tu_assert_error_has(NULL, "'ze'", "not loaded");
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
    tcase_add_test(tc, ze_module_missing);
    tc = tu_tcase(s, "failures", 60);
    tcase_add_test(tc, ze_query_fails);
    tcase_add_test(tc, ze_open_fails);
    tcase_add_test(tc, ze_event_fails);
    tcase_add_test(tc, ze_host_alloc_fails);
    return s;
}

int main(void)
{
    /* The library the dynamic loader gives as libze_loader.so.1 (the component's
     * module will get the same one): the fake when run through tests/ze_fake.sh. */
    void *h = dlopen("libze_loader.so.1", RTLD_NOW);
    if (h != NULL) {
        set_devices = (fake_ze_set_devices_fn)dlsym(h, "fake_ze_set_devices");
        fail_at = (fake_ze_fail_fn)dlsym(h, "fake_ze_fail");
        get_counts = (fake_ze_get_counts_fn)dlsym(h, "fake_ze_get_counts");
        is_list = (fake_ze_is_list_fn)dlsym(h, "fake_ze_is_list");
    }
    if (set_devices == NULL || fail_at == NULL || get_counts == NULL || is_list == NULL) {
        fprintf(stderr, "check_ze: libze_loader.so.1 is not the fake loader: run it through "
                        "tests/ze_fake.sh\n");
        return 77;
    }
    return tu_main(suite());
}
