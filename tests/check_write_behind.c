/*
 * check_write_behind: the parameter write_behind (device/ring_done.c, doc/design.md
 * "Write-behind"), 0 by default; these tests set 16M. A task's output (a datum it writes
 * without reading it), of 4 KiB or more, that no later task writes goes home as soon as
 * its task completes if no task depends on that task yet, while the device's pushouts
 * home in flight stay within write_behind's bytes (shared by its lanes); its device copy
 * stays valid. A datum updated in place, an output a later task reads, a small output, a
 * resident or scratch one stay until something needs them, as with write_behind 0. A
 * pushout written behind that fails loses nothing and is no one's error: the wait, or the
 * acquire, that needs the version pushes it again. A task overwriting an output on its
 * way home does not wait for it. Nothing writes host memory after a wait or a free
 * returns, even for data made resident or scratch while written behind.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/sim/sim.h"
#include "src/context.h"
#include "src/core.h"
#include "tests/test_util.h"

#define KiB ((size_t)1024)
#define N 64

/* out = in + plus, word by word */
static int produce_plus(const convoy_task_view_t *t, uint32_t plus)
{
    const uint32_t *in = t->flows[0];
    uint32_t *out = t->flows[1];
    for (size_t i = 0; i < t->flow_bytes[1] / 4; i++)
        out[i] = in[i] + plus;
    return 0;
}

static int produce_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    return produce_plus(t, 1);
}

static int produce2_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    return produce_plus(t, 2);
}

/* out = a + b, word by word */
static int sum_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    const uint32_t *a = t->flows[0], *b = t->flows[1];
    uint32_t *out = t->flows[2];
    for (size_t i = 0; i < t->flow_bytes[2] / 4; i++)
        out[i] = a[i] + b[i];
    return 0;
}

/* reads its flow, changes nothing */
static int look_chore(const convoy_task_view_t *t, void *s)
{
    (void)t;
    (void)s;
    return 0;
}

/* d += 1, word by word */
static int update_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    uint32_t *w = t->flows[0];
    for (size_t i = 0; i < t->flow_bytes[0] / 4; i++)
        w[i]++;
    return 0;
}

typedef struct world {
    convoy_context_t *ctx;
    convoy_class_t *produce, *again, *update; /* again: out = in + 2 */
    uint32_t *in[N], *out[N];
    convoy_data_t *din[N], *dout[N];
    size_t bytes;
    int pageable; /* outputs in malloc'd memory: home through the bounce, at its retire */
} world_t;

/* A sim context with zero costs and write_behind 16M, the tests' presets
 * after the base, and N inputs of `bytes` (word i of input k is k + i) with N outputs of
 * the same size (zeros), malloc'd when pageable. */
static void world_open(world_t *w, size_t bytes, const char *const *extra, int pageable)
{
    const char *kv[64] = {"devices",
                          "sim",
                          "sched",
                          "batch",
                          "nthreads",
                          "2",
                          "bind",
                          "0",
                          "verbose",
                          "error",
                          "sim_submit_us",
                          "0",
                          "sim_copy_us",
                          "0",
                          "sim_single_copy_us",
                          "0",
                          "sim_launch_us",
                          "0",
                          "batch_max_wait_us",
                          "20",
                          "write_behind",
                          "16M"};
    int k = 22;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++)
        kv[k++] = extra[i];
    kv[k] = NULL;
    memset(w, 0, sizeof(*w));
    w->ctx = tu_init(kv);
    w->bytes = bytes;
    w->pageable = pageable;
    convoy_access_t pm[2] = {CONVOY_READ, CONVOY_WRITE}, rw = CONVOY_RW;
    ck_assert_int_eq(
        convoy_class_new(w->ctx, "produce", 2, pm, CONVOY_CLASS_BATCHABLE, &w->produce),
        CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->produce, CONVOY_DEVICE_SIM, produce_chore), 0);
    ck_assert_int_eq(convoy_class_new(w->ctx, "again", 2, pm, CONVOY_CLASS_BATCHABLE, &w->again),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->again, CONVOY_DEVICE_SIM, produce2_chore), 0);
    ck_assert_int_eq(convoy_class_new(w->ctx, "update", 1, &rw, CONVOY_CLASS_BATCHABLE, &w->update),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->update, CONVOY_DEVICE_SIM, update_chore), 0);
    for (int t = 0; t < N; t++) {
        w->in[t] = convoy_host_alloc(w->ctx, bytes);
        w->out[t] = pageable ? malloc(bytes) : convoy_host_alloc(w->ctx, bytes);
        ck_assert(w->in[t] != NULL && w->out[t] != NULL);
        for (size_t i = 0; i < bytes / 4; i++)
            w->in[t][i] = (uint32_t)(t + i);
        memset(w->out[t], 0, bytes);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->in[t], bytes, &w->din[t]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->out[t], bytes, &w->dout[t]), CONVOY_SUCCESS);
    }
}

/* A CPU class of one flow of mode m, with the chore fn. */
static convoy_class_t *cpu_class(const world_t *w, const char *name, convoy_access_t m,
                                 convoy_chore_fn fn)
{
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(w->ctx, name, 1, &m, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, fn), 0);
    return cls;
}

/* world_open with 8 KiB data and every copy submission landing delay_us late (times
 * the build's slowdown), then the presets in more (NULL-terminated; may be NULL). */
static void world_open_late(world_t *w, double delay_us, const char *const *more)
{
    char delay[32];
    snprintf(delay, sizeof(delay), "%.0f", delay_us * tu_slowdown());
    const char *extra[16] = {"sim_delay_us", delay};
    int k = 2;
    for (int i = 0; more != NULL && more[i] != NULL && k < 15; i++)
        extra[k++] = more[i];
    extra[k] = NULL;
    world_open(w, 8 * KiB, extra, 0);
}

static void world_close(world_t *w)
{
    for (int t = 0; t < N; t++) {
        convoy_data_free(w->din[t]);
        if (w->dout[t] != NULL)
            convoy_data_free(w->dout[t]);
        convoy_host_free(w->ctx, w->in[t]);
        if (w->pageable)
            free(w->out[t]);
        else
            convoy_host_free(w->ctx, w->out[t]);
    }
    convoy_fini(w->ctx);
}

static void produce(world_t *w, int t)
{
    convoy_data_t *f[2] = {w->din[t], w->dout[t]};
    ck_assert_int_eq(convoy_task_insert(w->ctx, w->produce, NULL, 0, f), CONVOY_SUCCESS);
}

static convoy_stats_t stats(const world_t *w)
{
    convoy_stats_t s;
    convoy_get_stats(w->ctx, &s);
    return s;
}

/* Poll the statistics until tasks_completed reaches n and, when behind > 0,
 * write_behind_copies reaches behind (10 s at most, times the build's slowdown); then
 * give the progress threads `settle_ms` more. */
static convoy_stats_t settle(const world_t *w, uint64_t n, uint64_t behind, int settle_ms)
{
    double limit = 10.0 * tu_slowdown();
    struct timespec ms = {0, 1000000};
    convoy_stats_t s = stats(w);
    for (double t = 0; t < limit && (s.tasks_completed < n || s.write_behind_copies < behind);
         t += 1e-3) {
        nanosleep(&ms, NULL);
        s = stats(w);
    }
    ck_assert_uint_eq(s.tasks_completed, n);
    ck_assert_uint_ge(s.write_behind_copies, behind);
    for (int i = 0; i < settle_ms * tu_slowdown(); i++)
        nanosleep(&ms, NULL);
    return stats(w);
}

/* What accelerator a's sim logged of its pushouts home: the most copies in flight at
 * once (those of submissions enqueued and not yet complete when one was enqueued,
 * itself included), and how many submissions were refused with an injected failure. */
typedef struct pushouts {
    int most, failed;
} pushouts_t;

static pushouts_t pushouts(const world_t *w, int a)
{
    convoy__device_t *dev = convoy__ctx_accel(w->ctx, a);
    int n = convoy__sim_records(dev, NULL, 0);
    convoy__sim_record_t *r = calloc((size_t)n + 1, sizeof(*r));
    ck_assert(r != NULL);
    n = convoy__sim_records(dev, r, n);
    pushouts_t po = {0, 0};
    for (int k = 0; k < n; k++) {
        if (r[k].dir != CONVOY__D2H)
            continue;
        po.failed += r[k].failed;
        int in_flight = 0;
        for (int j = 0; j < n; j++)
            if (r[j].dir == CONVOY__D2H && r[j].enqueue_ns <= r[k].enqueue_ns &&
                (r[j].complete_ns == 0 || r[j].complete_ns > r[k].enqueue_ns))
                in_flight += r[j].copies;
        po.most = in_flight > po.most ? in_flight : po.most;
    }
    free(r);
    return po;
}

/* Output t holds input t plus `plus`. */
static void check_out(const world_t *w, int t, uint32_t plus)
{
    for (size_t i = 0; i < w->bytes / 4; i++)
        ck_assert_msg(w->out[t][i] == (uint32_t)(t + i) + plus, "output %d word %zu: %u", t, i,
                      w->out[t][i]);
}

START_TEST(off_by_default)
{
    /* Proves: write_behind is 0 unless the program sets it (what that leaves on the
     * device: what_stays_on_the_device, i = 0). */
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "sim", "bind", "0", NULL});
    char v[32];
    ck_assert_int_eq(convoy_param_get(ctx, "write_behind", v, sizeof(v)), CONVOY_SUCCESS);
    ck_assert_str_eq(v, "0");
    convoy_fini(ctx);
}
END_TEST

START_TEST(outputs_go_home_as_written)
{
    /* Proves: with the default write_behind, 64 outputs of 8 KiB go home as their tasks
     * complete, before any wait: 64 copies written behind, none flushed on demand; the
     * wait then pushes none again, and the outputs are right. Their device copies stay
     * valid: tasks reading them as inputs stage nothing in for them. */
    world_t w;
    world_open(&w, 8 * KiB, NULL, 0);
    for (int t = 0; t < N; t++)
        produce(&w, t);
    convoy_stats_t s = settle(&w, N, N, 0);
    ck_assert_uint_eq(s.d2h_copies, N);
    ck_assert_uint_eq(s.flush_copies, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    s = stats(&w);
    ck_assert_uint_eq(s.d2h_copies, N);
    ck_assert_uint_eq(s.write_behind_copies, N);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1);
    /* Outputs as inputs: out[t] -> in[t] (in[t] becomes out[t] + 1 = in + 2). */
    for (int t = 0; t < N; t++) {
        convoy_data_t *f[2] = {w.dout[t], w.din[t]};
        ck_assert_int_eq(convoy_task_insert(w.ctx, w.produce, NULL, 0, f), CONVOY_SUCCESS);
    }
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_uint_eq(stats(&w).h2d_copies, N); /* the first round's inputs only */
    for (int t = 0; t < N; t++)
        for (size_t i = 0; i < w.bytes / 4; i++)
            ck_assert_uint_eq(w.in[t][i], (uint32_t)(t + i) + 2);
    world_close(&w);
}
END_TEST

START_TEST(what_stays_on_the_device)
{
    /* Proves: nothing goes home before the wait, 20 ms after every task completed, for
     * (i = 0) 8 KiB outputs with write_behind 0; (1) 8 KiB data updated in place (RW);
     * (2) 1 KiB outputs; (3) resident and (4) scratch outputs of 8 KiB. The wait then
     * brings home all but the resident and scratch ones. */
    const char *const off[] = {"write_behind", "0", NULL};
    world_t w;
    world_open(&w, _i == 2 ? 1 * KiB : 8 * KiB, _i == 0 ? off : NULL, 0);
    for (int t = 0; t < N && _i >= 3; t++)
        ck_assert_int_eq(
            convoy_data_set_flags(w.dout[t], _i == 3 ? CONVOY_DATA_RESIDENT : CONVOY_DATA_SCRATCH),
            CONVOY_SUCCESS);
    for (int t = 0; t < N; t++) {
        if (_i == 1)
            ck_assert_int_eq(convoy_task_insert(w.ctx, w.update, NULL, 0, &w.din[t]),
                             CONVOY_SUCCESS);
        else
            produce(&w, t);
    }
    convoy_stats_t s = settle(&w, N, 0, 20);
    ck_assert_uint_eq(s.write_behind_copies, 0);
    ck_assert_uint_eq(s.d2h_copies, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    s = stats(&w);
    ck_assert_uint_eq(s.write_behind_copies, 0);
    ck_assert_uint_eq(s.d2h_copies, _i >= 3 ? 0 : N);
    for (int t = 0; t < N && _i <= 2; t++) {
        if (_i == 1)
            for (size_t i = 0; i < w.bytes / 4; i++)
                ck_assert_uint_eq(w.in[t][i], (uint32_t)(t + i) + 1);
        else
            check_out(&w, t, 1);
    }
    world_close(&w);
}
END_TEST

START_TEST(outputs_read_later_stay)
{
    /* Proves: an output that a task inserted before its writer completed reads (the
     * writer is not a leaf of the graph: every copy lands 50 ms late, so the reader is in
     * before) is not written behind, while the reader's own output, which nothing reads,
     * is: 64 copies written behind of 128 outputs. After the wait both are right. */
    world_t w;
    world_open_late(&w, 50000, NULL);
    for (int t = 0; t < N; t++) {
        produce(&w, t);
        convoy_data_t *f[2] = {w.dout[t], w.din[t]}; /* in = out + 1 */
        ck_assert_int_eq(convoy_task_insert(w.ctx, w.produce, NULL, 0, f), CONVOY_SUCCESS);
    }
    convoy_stats_t s = settle(&w, 2 * N, N, 20);
    ck_assert_uint_eq(s.write_behind_copies, N);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    s = stats(&w);
    ck_assert_uint_eq(s.write_behind_copies, N);
    ck_assert_uint_eq(s.d2h_copies, 2 * N);
    for (int t = 0; t < N; t++) {
        check_out(&w, t, 1);
        for (size_t i = 0; i < w.bytes / 4; i++)
            ck_assert_uint_eq(w.in[t][i], (uint32_t)(t + i) + 2);
    }
    world_close(&w);
}
END_TEST

START_TEST(overwritten_outputs_stop_it)
{
    /* Proves: outputs overwritten here before anything needed them home stop
     * write-behind until the next wait. 64 ping-pong chains (step s reads one of a
     * chain's two data and writes the other), each step inserted once the last one
     * completed, so that every output is a leaf when its task completes: of the first
     * 256 written behind, steps 2 and 3 overwrite 128, and the next 12 steps write none
     * behind (without the rule: all 1024). After a wait a step writes its 64 behind
     * again. Every value is right. */
    world_t w;
    world_open(&w, 8 * KiB, NULL, 0);
    convoy_data_t **x[2] = {w.din, w.dout};
    for (int s = 0; s < 16; s++) {
        for (int t = 0; t < N; t++) {
            convoy_data_t *f[2] = {x[s % 2][t], x[(s + 1) % 2][t]};
            ck_assert_int_eq(convoy_task_insert(w.ctx, w.produce, NULL, 0, f), CONVOY_SUCCESS);
        }
        settle(&w, (uint64_t)(s + 1) * N, 0, 0);
    }
    convoy_stats_t st = settle(&w, 16 * N, 0, 20);
    ck_assert_uint_ge(st.write_behind_copies, 256);
    ck_assert_uint_le(st.write_behind_copies, 256 + 2 * N);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < N; t++)
        for (size_t i = 0; i < w.bytes / 4; i++)
            ck_assert_uint_eq(w.in[t][i], (uint32_t)(t + i) + 16);
    uint64_t before = stats(&w).write_behind_copies;
    for (int t = 0; t < N; t++)
        produce(&w, t);
    settle(&w, 17 * N, before + N, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 17);
    world_close(&w);
}
END_TEST

START_TEST(read_at_home_is_not_waste)
{
    /* Proves: outputs written behind that the host then reads (acquire, i = 0) or a CPU
     * task reads (i = 1) before a task overwrites them were not pushed for nothing: 16
     * rounds of 64 outputs, each round's read before the next round overwrites them,
     * write all 1024 behind (counting them as overwritten stopped it after 256). */
    world_t w;
    world_open(&w, 8 * KiB, NULL, 0);
    convoy_class_t *look = cpu_class(&w, "look", CONVOY_READ, look_chore);
    uint64_t done = 0;
    for (int round = 0; round < 16; round++) {
        for (int t = 0; t < N; t++)
            produce(&w, t);
        done += N;
        settle(&w, done, (uint64_t)(round + 1) * N, 0);
        for (int t = 0; t < N; t++) {
            if (_i == 0) {
                ck_assert_int_eq(convoy_data_acquire(w.dout[t], CONVOY_READ), CONVOY_SUCCESS);
            } else {
                ck_assert_int_eq(convoy_task_insert(w.ctx, look, NULL, 0, &w.dout[t]),
                                 CONVOY_SUCCESS);
                done++;
            }
        }
        settle(&w, done, 0, 0);
    }
    ck_assert_uint_eq(stats(&w).write_behind_copies, 16 * N);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1);
    world_close(&w);
}
END_TEST

START_TEST(window_bounds_the_pushouts)
{
    /* Proves: with every copy submission landing 20 ms late (sim_delay_us), rings of 16
     * tasks completing together, and write_behind 32 KiB, the pushouts written behind in
     * flight at once never carry more than 4 outputs of 8 KiB (i = 0), or 2 a lane with 2
     * lanes sharing the 32 KiB (i = 1). Some are written behind, and after the wait every
     * output is home once and right. The window is given back as they land: a second
     * round after the wait is written behind again. */
    const char *const extra[] = {"write_behind",
                                 "32K",
                                 "sim_delay_us",
                                 "20000",
                                 "batch_max_tasks",
                                 "16",
                                 "batch_max_wait_us",
                                 "1e6",
                                 "lanes",
                                 _i == 0 ? "1" : "2",
                                 NULL};
    int most = _i == 0 ? 4 : 2;
    world_t w;
    world_open(&w, 8 * KiB, extra, 0);
    for (int t = 0; t < N; t++)
        produce(&w, t);
    convoy_stats_t s = settle(&w, N, (uint64_t)most, 0);
    uint64_t before = s.write_behind_copies;
    for (int a = 0; a < convoy_accel_count(w.ctx); a++) {
        pushouts_t po = pushouts(&w, a);
        ck_assert_msg(po.most <= most, "%s: %d copies in flight home at once",
                      convoy_accel_name(w.ctx, a), po.most);
    }
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    s = stats(&w);
    ck_assert_uint_ge(s.write_behind_copies, before);
    ck_assert_uint_eq(s.d2h_copies, N);
    for (int t = 0; t < N; t++)
        check_out(&w, t, 1);
    for (int t = 0; t < N; t++)
        produce(&w, t);
    settle(&w, 2 * N, s.write_behind_copies + (uint64_t)most, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    world_close(&w);
}
END_TEST

START_TEST(failed_write_behind_loses_nothing)
{
    /* Proves: when an output's pushout home, written behind, fails as it runs (i = 0,
     * sim_fail_async_home) or at its submission (i = 1, sim_fail_submission 2: after the
     * stage-in of the task's input; one copy, so no retry of the rest mends it), the
     * output stays the newest version on the device: the wait succeeds and brings it
     * home (a flush of it, counted in flush_copies), right. No error reaches the
     * program. */
    const char *const extra[] = {_i == 0 ? "sim_fail_async_home" : "sim_fail_submission",
                                 _i == 0 ? "1" : "2", NULL};
    world_t w;
    world_open(&w, 8 * KiB, extra, 0);
    produce(&w, 0);
    convoy_stats_t s = settle(&w, 1, 1, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    s = stats(&w);
    ck_assert_uint_eq(s.write_behind_copies, 1);
    ck_assert_uint_ge(s.flush_copies, 1);
    ck_assert_uint_eq(s.tasks_failed, 0);
    check_out(&w, 0, 1);
    if (_i == 1)
        ck_assert_int_eq(pushouts(&w, 0).failed, 1);
    world_close(&w);
}
END_TEST

START_TEST(needing_a_failing_write_behind)
{
    /* Proves: an acquire (i = 0) or a wait (i = 1) that begins while an output's pushout
     * written behind is still in flight (every submission lands 200 ms late) waits for it
     * and, when it fails as it runs, pushes the version home again: it succeeds, with the
     * output right, where before it failed for an error that was no one's. */
    const char *const extra[] = {"sim_delay_us", "200000", "sim_fail_async_home", "1", NULL};
    world_t w;
    world_open(&w, 8 * KiB, extra, 0);
    produce(&w, 0);
    settle(&w, 1, 1, 0);
    if (_i == 0)
        ck_assert_msg(convoy_data_acquire(w.dout[0], CONVOY_READ) == CONVOY_SUCCESS, "acquire: %s",
                      convoy_last_error(w.ctx));
    else
        ck_assert_msg(convoy_wait(w.ctx) == CONVOY_SUCCESS, "wait: %s", convoy_last_error(w.ctx));
    check_out(&w, 0, 1);
    convoy_stats_t s = stats(&w);
    ck_assert_uint_eq(s.write_behind_copies, 1);
    ck_assert_uint_eq(s.flush_copies, 1);
    world_close(&w);
}
END_TEST

START_TEST(nothing_written_after_return)
{
    /* Proves: an output being written behind (malloc'd: its bytes reach the host memory
     * when the pushout retires, 200 ms late) that the program then makes scratch and frees
     * (i = 0), or makes resident and waits for (i = 1), is not written into the host
     * memory after the free or the wait returned: bytes the program writes there then
     * stay (before, the pushout's landing overwrote them). */
    const char *const extra[] = {"sim_delay_us", "200000", NULL};
    world_t w;
    world_open(&w, 8 * KiB, extra, 1);
    produce(&w, 0);
    settle(&w, 1, 1, 0);
    ck_assert_int_eq(
        convoy_data_set_flags(w.dout[0], _i == 0 ? CONVOY_DATA_SCRATCH : CONVOY_DATA_RESIDENT),
        CONVOY_SUCCESS);
    if (_i == 0) {
        convoy_data_free(w.dout[0]);
        w.dout[0] = NULL;
    } else {
        ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    }
    memset(w.out[0], 0xab, w.bytes);
    struct timespec later = {0, 400000000};
    nanosleep(&later, NULL);
    for (size_t i = 0; i < w.bytes / 4; i++)
        ck_assert_msg(w.out[0][i] == 0xabababab, "word %zu: %x", i, w.out[0][i]);
    world_close(&w);
}
END_TEST

/* Output 0 is written behind (its pushout in flight, landing late), then overwritten by
 * `again` (out0 = in0 + 2), which needs no copy: its input is on the device already.
 * Returns once both tasks completed. */
static void overwrite_on_its_way(world_t *w)
{
    produce(w, 0);
    settle(w, 1, 1, 0);
    convoy_data_t *f[2] = {w->din[0], w->dout[0]};
    ck_assert_int_eq(convoy_task_insert(w->ctx, w->again, NULL, 0, f), CONVOY_SUCCESS);
    settle(w, 2, 0, 0);
}

/* convoy_wait succeeds, with no task failed and one copy written behind; returns the
 * statistics. */
static convoy_stats_t wait_one_behind(const world_t *w)
{
    ck_assert_msg(convoy_wait(w->ctx) == CONVOY_SUCCESS, "wait: %s", convoy_last_error(w->ctx));
    convoy_stats_t s = stats(w);
    ck_assert_uint_eq(s.tasks_failed, 0);
    ck_assert_uint_eq(s.write_behind_copies, 1);
    return s;
}

START_TEST(overwriting_does_not_wait_for_the_pushout)
{
    /* Proves: a task that overwrites an output whose pushout home, written behind, is
     * still in flight (every copy submission lands 300 ms late) completes without waiting
     * for it: it writes a fresh buffer, which becomes the copy at once, the old memory
     * kept until the pushout is over. Before, its completion waited for the pushout
     * (chains --ping-pong ran 38% slower written behind on the H200). Whether that
     * pushout lands (i = 0) or fails as it runs (i = 1), the wait brings the newer
     * version home, and no task fails. */
    const char *const fail[] = {"sim_fail_async_home", "1", NULL};
    world_t w;
    world_open_late(&w, 3e5, _i ? fail : NULL);
    overwrite_on_its_way(&w);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    convoy__device_t *dev = convoy__ctx_accel(w.ctx, 0);
    convoy__sim_record_t r[8];
    int n = convoy__sim_records(dev, r, 8), pushouts = 0;
    ck_assert_int_le(n, 8); /* a stage-in and a pushout so far */
    for (int k = 0; k < n; k++) {
        if (r[k].dir != CONVOY__D2H)
            continue;
        pushouts++;
        ck_assert_msg(r[k].complete_ns == 0 || r[k].complete_ns > now,
                      "the overwriting task completed %.3f s after the pushout landed",
                      (double)(now - r[k].complete_ns) / 1e9);
    }
    ck_assert_int_eq(pushouts, 1);
    wait_one_behind(&w);
    check_out(&w, 0, 2);
    world_close(&w);
}
END_TEST

START_TEST(early_flush_skips_a_replaced_version)
{
    /* Proves: the flush a wait starts at once, of versions no later task overwrites,
     * having waited for an output's pushout written behind whose copy a second task
     * replaced meanwhile (a version a third task, still waiting for two stage-ins in a
     * row, overwrites), does not push that replaced version home: 3 copies go home (the
     * version written behind, the third task's, and its other input's), each once.
     * Every copy submission lands 300 ms late. Without the rule, 4. The results are
     * right. */
    world_t w;
    world_open_late(&w, 3e5, NULL);
    convoy_access_t sm[3] = {CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *sum;
    ck_assert_int_eq(convoy_class_new(w.ctx, "sum", 3, sm, CONVOY_CLASS_BATCHABLE, &sum),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(sum, CONVOY_DEVICE_SIM, sum_chore), 0);
    overwrite_on_its_way(&w);
    produce(&w, 1); /* out1 = in1 + 1, behind in1's stage-in */
    convoy_data_t *f3[3] = {w.dout[1], w.din[2], w.dout[0]}; /* out0 = out1 + in2 */
    ck_assert_int_eq(convoy_task_insert(w.ctx, sum, NULL, 0, f3), CONVOY_SUCCESS);
    ck_assert_uint_eq(wait_one_behind(&w).d2h_copies, 3);
    check_out(&w, 1, 1);
    for (size_t i = 0; i < w.bytes / 4; i++)
        ck_assert_uint_eq(w.out[0][i], (uint32_t)(1 + i + 1) + (uint32_t)(2 + i));
    world_close(&w);
}
END_TEST

START_TEST(second_flush_pushes_again_after_the_first_ones_failed)
{
    /* Proves: two flushes waiting for one output written behind whose pushout fails as it
     * runs (a CPU reader's flush and the wait's flush-all) each push it again once, so
     * when the first one's second push fails too (sim_fail_submission 3), the second's
     * lands: the wait succeeds with the output home and no transfer failed. A rule of
     * one second push per copy for all flushes (635431a) failed both here. Every copy
     * submission lands 200 ms late. */
    const char *const more[] = {"sim_fail_async_home", "1", "sim_fail_submission", "3", NULL};
    world_t w;
    world_open_late(&w, 2e5, more);
    convoy_class_t *look = cpu_class(&w, "look", CONVOY_READ, look_chore);
    produce(&w, 0);
    settle(&w, 1, 1, 0);
    convoy_data_t *f[1] = {w.dout[0]};
    ck_assert_int_eq(convoy_task_insert(w.ctx, look, NULL, 0, f), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_uint_eq(stats(&w).transfers_failed, 0);
    check_out(&w, 0, 1);
    world_close(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("write_behind");
    TCase *tc = tu_tcase(s, "write_behind", 30);
    tcase_add_test(tc, off_by_default);
    tcase_add_test(tc, outputs_go_home_as_written);
    tcase_add_loop_test(tc, what_stays_on_the_device, 0, 5);
    tcase_add_test(tc, outputs_read_later_stay);
    tcase_add_test(tc, overwritten_outputs_stop_it);
    tcase_add_loop_test(tc, read_at_home_is_not_waste, 0, 2);
    tcase_add_loop_test(tc, window_bounds_the_pushouts, 0, 2);
    tcase_add_loop_test(tc, failed_write_behind_loses_nothing, 0, 2);
    tcase_add_loop_test(tc, needing_a_failing_write_behind, 0, 2);
    tcase_add_loop_test(tc, nothing_written_after_return, 0, 2);
    tcase_add_loop_test(tc, overwriting_does_not_wait_for_the_pushout, 0, 2);
    tcase_add_test(tc, early_flush_skips_a_replaced_version);
    tcase_add_test(tc, second_flush_pushes_again_after_the_first_ones_failed);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
