/*
 * check_workers: the CPU workers' wake-ups (src/worker.c). A burst of tasks made ready
 * while the workers sleep costs whoever makes them ready one wake-up, not one per task
 * (the woken worker hands the watch on); and no task is ever left queued with every
 * worker asleep (bursts of every size, with and without polling).
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "src/core.h"
#include "tests/test_util.h"

#define WORKERS 8

static void sleep_us(long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Wait (up to 10 s) until exactly n CPU workers sleep on queue 0. */
static void wait_sleepers(convoy_context_t *ctx, int n)
{
    for (int i = 0; i < 100000 && atomic_load(&ctx->qwait[0].sleepers) != n; i++)
        sleep_us(100);
    ck_assert_int_eq(atomic_load(&ctx->qwait[0].sleepers), n);
}

static convoy_context_t *start(const char *spin_us)
{
    const char *const preset[] = {"devices", "host", "nthreads", "8", "bind", "0", "spin_us",
                                  spin_us,   NULL};
    return tu_init(preset);
}

static atomic_int ran;

static int count_chore(const convoy_task_view_t *t, void *state)
{
    (void)t;
    (void)state;
    atomic_fetch_add(&ran, 1);
    return 0;
}

/* The gate holds its worker until the test has inserted the burst behind it. */
static atomic_int gate_open;

static int gate_chore(const convoy_task_view_t *t, void *state)
{
    (void)t;
    (void)state;
    while (!atomic_load(&gate_open))
        sched_yield();
    return 0;
}

/* One gate task writes g; n readers of g become ready together when it completes, made
 * ready by the gate's worker in one loop while the 7 other workers sleep. Returns the
 * wake-ups pushes sent for the readers. */
static uint64_t burst_signals(convoy_context_t *ctx, int n)
{
    convoy_class_t *gate = NULL, *reader = NULL;
    convoy_access_t w = CONVOY_WRITE, r = CONVOY_READ;
    ck_assert_int_eq(convoy_class_new(ctx, "gate", 1, &w, 0, &gate), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(gate, CONVOY_DEVICE_CPU, gate_chore),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_new(ctx, "reader", 1, &r, 0, &reader), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(reader, CONVOY_DEVICE_CPU, count_chore),
                     CONVOY_SUCCESS);
    static float g;
    convoy_data_t *d = NULL;
    ck_assert_int_eq(convoy_data_new(ctx, &g, sizeof(g), &d), CONVOY_SUCCESS);
    atomic_store(&gate_open, 0);
    atomic_store(&ran, 0);
    wait_sleepers(ctx, WORKERS);
    ck_assert_int_eq(convoy_task_insert(ctx, gate, NULL, 0, &d), CONVOY_SUCCESS);
    /* The gate runs: its worker is awake, the others asleep again. */
    wait_sleepers(ctx, WORKERS - 1);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, reader, NULL, 0, &d), CONVOY_SUCCESS);
    uint64_t before = atomic_load(&ctx->qwait[0].signals);
    atomic_store(&gate_open, 1);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    uint64_t sent = atomic_load(&ctx->qwait[0].signals) - before;
    ck_assert_int_eq(atomic_load(&ran), n);
    convoy_data_free(d);
    return sent;
}

/* Before the watch, each of the 7 sleepers got a wake-up of its own from the gate's
 * worker (5-33 measured). One is needed; a second may come if the woken worker drained
 * the queue between two pushes of the burst, hence the margin. */
START_TEST(burst_costs_one_wakeup)
{
    convoy_context_t *ctx = start("0");
    uint64_t sent = burst_signals(ctx, 32);
    ck_assert_msg(sent <= 3, "a burst of 32 ready tasks sent %llu wake-ups (want 1)",
                  (unsigned long long)sent);
    convoy_fini(ctx);
}
END_TEST

START_TEST(burst_costs_one_wakeup_polling)
{
    convoy_context_t *ctx = start("20");
    uint64_t sent = burst_signals(ctx, 32);
    ck_assert_msg(sent <= 3, "a burst of 32 ready tasks sent %llu wake-ups (want 1)",
                  (unsigned long long)sent);
    convoy_fini(ctx);
}
END_TEST

/* Bursts of 1 to 200 independent tasks, inserted in one go after the workers fell
 * asleep, and trickles with pauses: every task runs (a lost wake-up hangs the wait,
 * which the test's timeout reports). */
static void bursts(const char *spin_us)
{
    convoy_context_t *ctx = start(spin_us);
    convoy_class_t *cls = NULL;
    convoy_access_t rw = CONVOY_RW;
    ck_assert_int_eq(convoy_class_new(ctx, "one", 1, &rw, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, count_chore),
                     CONVOY_SUCCESS);
    enum { NDATA = 200 };
    static float v[NDATA];
    convoy_data_t *d[NDATA];
    for (int i = 0; i < NDATA; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(v[i]), &d[i]), CONVOY_SUCCESS);
    unsigned seed = 12345;
    long expect = 0;
    atomic_store(&ran, 0);
    int rounds = tu_scaled(60, 10);
    for (int round = 0; round < rounds; round++) {
        int n = 1 + (int)(rand_r(&seed) % NDATA);
        if (round % 3 == 0)
            wait_sleepers(ctx, WORKERS);
        for (int i = 0; i < n; i++) {
            ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d[i]), CONVOY_SUCCESS);
            if (round % 3 == 2 && rand_r(&seed) % 8 == 0)
                sleep_us(rand_r(&seed) % 50);
        }
        expect += n;
        ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
        ck_assert_int_eq(atomic_load(&ran), expect);
    }
    for (int i = 0; i < NDATA; i++)
        convoy_data_free(d[i]);
    convoy_fini(ctx);
}

START_TEST(bursts_all_run)
{
    bursts("0");
}
END_TEST

START_TEST(bursts_all_run_polling)
{
    bursts("20");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("workers");
    TCase *tc = tu_tcase(s, "wake-ups", 60);
    tcase_add_test(tc, burst_costs_one_wakeup);
    tcase_add_test(tc, burst_costs_one_wakeup_polling);
    tcase_add_test(tc, bursts_all_run);
    tcase_add_test(tc, bursts_all_run_polling);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
