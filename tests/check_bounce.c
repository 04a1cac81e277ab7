/*
 * check_bounce: the pinned bounce for pageable host memory (device/copies.c, parameter
 * pageable_bounce) on the sim device, whose convoy_host_alloc memory reads as pinned and
 * whose cost model charges every other host copy (sim_pageable_us): bytes arrive intact
 * both ways through the bounce and without it, a submission of pageable copies is carried
 * by one fused call rather than one call per flow, large copies and the byte bound keep
 * the direct path, and injected failures of stage-in and pushout lose nothing (a failed
 * task leaves its output untouched; a failed pushout leaves the host copy untouched and
 * the device copy the newest version, brought home by a later wait). The memcpy gang that
 * shares the bounce's copies is tested on its own too: every span of every job is copied
 * whether its helpers poll, sleep or wake after their job is over.
 *
 * Every task reads one flow and writes one, of its own size (not multiples of 64, so that
 * the places in a bounce block are padded): out[i] = in[i] ^ 0x5a ^ task. Host memory is
 * malloc'd (pageable). The batch scheduler takes all tasks as one ring, and the test
 * waits for them to complete before convoy_wait, so that the wait's flush pushes every
 * output home in one plan: the sim's submission log is then known exactly.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convoy.h"
#include "device/device.h"
#include "device/memcpy_gang.h"
#include "device/pipeline_impl.h"
#include "device/sim/sim.h"
#include "src/context.h"
#include "tests/test_util.h"

#define MAXT 64
#define OUT_FILL 0xee /* an output's bytes before any task wrote it */

typedef struct world {
    convoy_context_t *ctx;
    convoy_class_t *cls;
    int n;
    size_t bytes[MAXT];
    unsigned char *in[MAXT], *out[MAXT];
    convoy_data_t *din[MAXT], *dout[MAXT];
    convoy_data_t *flows[MAXT][2];
} world_t;

static int chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const unsigned char *in = t->flows[0];
    unsigned char *out = t->flows[1];
    unsigned char key = (unsigned char)(0x5a ^ *(const int *)t->args);
    for (size_t i = 0; i < t->flow_bytes[0]; i++)
        out[i] = in[i] ^ key;
    return 0;
}

static unsigned char in_byte(int t, size_t i)
{
    return (unsigned char)(t * 31 + i * 7 + (i >> 8));
}

/* A context with these presets (plus the test's base) and n tasks' data of size(t). The
 * outputs come home at the wait, in the calls the tests count (write_behind 0). */
static void world_open(world_t *w, const char *const *extra, int n, size_t (*size)(int))
{
    const char *kv[64] = {
        "devices",          "sim", "sched",        "batch", "nthreads",          "2",  "bind", "0",
        "verbose",          "error", "batch_max_tasks", NULL, "batch_max_wait_us", "1e7",
        "batch_idle_close", "0",   "write_behind", "0"};
    char ntasks[16];
    snprintf(ntasks, sizeof(ntasks), "%d", n);
    kv[11] = ntasks;
    int k = 18;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++)
        kv[k++] = extra[i];
    kv[k] = NULL;
    memset(w, 0, sizeof(*w));
    w->ctx = tu_init(kv);
    w->n = n;
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_WRITE};
    ck_assert_int_eq(convoy_class_new(w->ctx, "xor", 2, modes, CONVOY_CLASS_BATCHABLE, &w->cls),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->cls, CONVOY_DEVICE_SIM, chore), CONVOY_SUCCESS);
    for (int t = 0; t < n; t++) {
        size_t b = w->bytes[t] = size(t);
        w->in[t] = malloc(b);
        w->out[t] = malloc(b);
        ck_assert(w->in[t] != NULL && w->out[t] != NULL);
        for (size_t i = 0; i < b; i++)
            w->in[t][i] = in_byte(t, i);
        memset(w->out[t], OUT_FILL, b);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->in[t], b, &w->din[t]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->out[t], b, &w->dout[t]), CONVOY_SUCCESS);
        w->flows[t][0] = w->din[t];
        w->flows[t][1] = w->dout[t];
    }
}

static void world_close(world_t *w)
{
    for (int t = 0; t < w->n; t++) {
        convoy_data_free(w->din[t]);
        convoy_data_free(w->dout[t]);
    }
    convoy_fini(w->ctx);
    for (int t = 0; t < w->n; t++) {
        free(w->in[t]);
        free(w->out[t]);
    }
}

/* Insert tasks [first, first + n) and wait until they are done, without a convoy_wait:
 * their outputs stay on the device for the wait's one flush. */
static void insert_and_settle(world_t *w, int first, int n)
{
    convoy_stats_t s0, s;
    convoy_get_stats(w->ctx, &s0);
    for (int t = first; t < first + n; t++)
        ck_assert_int_eq(convoy_task_insert(w->ctx, w->cls, &t, sizeof(t), w->flows[t]),
                         CONVOY_SUCCESS);
    for (int spins = 0;; spins++) {
        convoy_get_stats(w->ctx, &s);
        if (s.tasks_completed + s.tasks_failed >=
            s0.tasks_completed + s0.tasks_failed + (uint64_t)n)
            break;
        ck_assert_int_lt(spins, 200000);
        nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
    }
}

/* Output t holds the task's result (1) or was never written (0); anything else fails. */
static int out_state(const world_t *w, int t)
{
    int result = 1, fill = 1;
    unsigned char key = (unsigned char)(0x5a ^ t);
    for (size_t i = 0; i < w->bytes[t]; i++) {
        result &= w->out[t][i] == (unsigned char)(in_byte(t, i) ^ key);
        fill &= w->out[t][i] == OUT_FILL;
    }
    ck_assert_msg(result || fill,
                  "task %d: output of %zu bytes is neither its result nor untouched", t,
                  w->bytes[t]);
    for (size_t i = 0; i < w->bytes[t]; i++)
        ck_assert_msg(w->in[t][i] == in_byte(t, i), "task %d: its input changed at %zu", t, i);
    return result;
}

/* What the sim logged: calls a real device would make per direction (a loop submission
 * is one call per copy) and the copies of records with copies > 1 by method. */
typedef struct calls {
    int calls[3], copies[3], loop_multi[3], engine[3], failed;
} calls_t;

static calls_t sim_calls(const world_t *w)
{
    convoy__device_t *dev = convoy__ctx_accel(w->ctx, 0);
    ck_assert(convoy__sim_is_sim(dev));
    int n = convoy__sim_records(dev, NULL, 0);
    convoy__sim_record_t *r = calloc((size_t)(n > 0 ? n : 1), sizeof(*r));
    ck_assert(r != NULL);
    n = convoy__sim_records(dev, r, n);
    calls_t c;
    memset(&c, 0, sizeof(c));
    for (int i = 0; i < n; i++) {
        ck_assert_int_ge(r[i].dir, 0);
        int d = r[i].dir;
        c.calls[d] += r[i].method == CONVOY__METHOD_LOOP ? r[i].copies : 1;
        c.copies[d] += r[i].copies;
        if (r[i].copies > 1 && r[i].method == CONVOY__METHOD_LOOP)
            c.loop_multi[d]++;
        if (r[i].method == CONVOY__METHOD_ENGINE)
            c.engine[d]++;
        c.failed += r[i].failed;
    }
    free(r);
    return c;
}

/*
 * After a pushout home that was made to fail: the host copy stayed untouched until a
 * later push brought the task's result home, and a flush that failed was counted in
 * transfers_failed. Usually the wait's own flush is the one that fails, and the wait says
 * so (one flush failed); a second wait brings the result home. When the task was still
 * finishing as the wait began (its completion counted, not yet out of flight), the wait's
 * early flush carried it and the wait's own flush pushed it again: the wait succeeds, and
 * the early flush is counted failed (1), also when that second push landed before it
 * looked (before, 0: a 1 ms pause between the two counts in convoy__done_flush, on one
 * core, brought it in 13 of 15 runs of this test and in 4 of 4 runs of the case).
 */
static void expect_pushout_retried(world_t *w)
{
    int first_failed = convoy_wait(w->ctx) != CONVOY_SUCCESS;
    if (first_failed) {
        ck_assert_int_eq(out_state(w, 0), 0); /* untouched: the block never reached it */
        ck_assert_int_eq(convoy_wait(w->ctx), CONVOY_SUCCESS);
    }
    ck_assert_int_eq(out_state(w, 0), 1);
    convoy_stats_t st;
    convoy_get_stats(w->ctx, &st);
    ck_assert_uint_eq(st.transfers_failed, 1);
}

static size_t varied(int t)
{
    return 1000 + 977 * (size_t)t; /* up to 62.5 KiB: under pageable_bounce_max */
}

static size_t eight_k(int t)
{
    (void)t;
    return 8192;
}

/* ---- tests ------------------------------------------------------------------------- */

static const char *const modes[] = {"auto", "on", "off"};

START_TEST(test_intact_and_fused)
{
    /* Proves: with pageable_bounce auto and on, 64 pageable flows of 64 different sizes
     * arrive intact on the device and home again, the 64 stage-ins and the 64 pushouts
     * each in one fused call (engine); with off, the same bytes arrive, the pushouts one
     * call per flow (loop), as the GPU devices carry pageable device-to-host copies.
     * The 2 MB of each direction's memcpy are shared with 3 helpers (i < 3), done by the
     * progress thread alone (pageable_bounce_threads=0, i = 3), or by as many helpers as
     * the machine's cores give (-1, the default, i = 4: none on 2 cores). */
    const char *mode = modes[_i % 3];
    const char *threads = _i < 3 ? "3" : _i == 3 ? "0" : "-1";
    const char *extra[] = {"pageable_bounce", mode, "pageable_bounce_threads", threads, NULL};
    world_t w;
    world_open(&w, extra, MAXT, varied);
    insert_and_settle(&w, 0, MAXT);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < MAXT; t++)
        ck_assert_msg(out_state(&w, t) == 1, "%s: task %d's output did not come home", mode, t);
    calls_t c = sim_calls(&w);
    ck_assert_int_eq(c.copies[CONVOY__H2D], MAXT);
    ck_assert_int_eq(c.copies[CONVOY__D2H], MAXT);
    ck_assert_int_eq(c.failed, 0);
    if (_i % 3 < 2) {
        ck_assert_int_eq(c.calls[CONVOY__H2D], 1);
        ck_assert_int_eq(c.calls[CONVOY__D2H], 1);
        ck_assert_int_eq(c.engine[CONVOY__D2H], 1);
    } else {
        ck_assert_int_eq(c.calls[CONVOY__H2D], 1); /* batching pageable H2D still gains */
        ck_assert_int_eq(c.calls[CONVOY__D2H], MAXT);
        ck_assert_int_eq(c.loop_multi[CONVOY__D2H], 1);
    }
    world_close(&w);
}
END_TEST

START_TEST(test_bounced_stage_in_not_quiet)
{
    /* Proves: on a device whose errors are sticky, a stage-in submission that carries a
     * bounce block is recorded as usual, not quiet (its block is reaped on its own event,
     * which a quiet one's proof, the ring's launch, could hold back as long as a chore
     * runs), and everything arrives intact; with bouncing off (_i = 1) the same stage-in
     * is quiet. No launch here is quiet: nothing is pushed behind a launch on sim unless
     * it runs its chores inline. */
    const char *extra[] = {"pageable_bounce", _i ? "off" : "on", "sim_sticky_errors", "1", NULL};
    world_t w;
    world_open(&w, extra, MAXT, eight_k);
    insert_and_settle(&w, 0, MAXT);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < MAXT; t++)
        ck_assert_int_eq(out_state(&w, t), 1);
    convoy__sim_counters_t c;
    convoy__sim_get_counters(convoy__ctx_accel(w.ctx, 0), &c);
    if (_i)
        ck_assert_uint_ge(c.quiet_records, 1);
    else
        ck_assert_uint_eq(c.quiet_records, 0);
    world_close(&w);
}
END_TEST

START_TEST(test_blocks_reused_after_landing)
{
    /* Proves: blocks are reused only once the device has read or filled them: 64 tasks
     * in rings of 8, every copy landing 300 us late (sim_delay_us), under a bound of
     * 128 KiB of blocks that makes later submissions wait for earlier blocks or go
     * straight, all arrive intact both ways. */
    const char *extra[] = {"pageable_bounce",
                           "on",
                           "batch_max_tasks",
                           "8",
                           "batch_max_wait_us",
                           "0",
                           "sim_delay_us",
                           "300",
                           "pageable_bounce_limit",
                           "128K",
                           NULL};
    world_t w;
    world_open(&w, extra, MAXT, varied);
    for (int t = 0; t < MAXT; t++)
        ck_assert_int_eq(convoy_task_insert(w.ctx, w.cls, &t, sizeof(t), w.flows[t]),
                         CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < MAXT; t++)
        ck_assert_int_eq(out_state(&w, t), 1);
    world_close(&w);
}
END_TEST

START_TEST(test_bounds_keep_direct)
{
    /* Proves: copies larger than pageable_bounce_max (auto), and submissions that would
     * hold more than pageable_bounce_limit bytes of blocks (on), take the direct path
     * (pushouts one call per flow) and still arrive intact. */
    const char *const extras[2][5] = {
        {"pageable_bounce", "auto", "pageable_bounce_max", "4K", NULL},
        {"pageable_bounce", "on", "pageable_bounce_limit", "64K", NULL}, /* 16 x 8K = 128K */
    };
    world_t w;
    world_open(&w, extras[_i], 16, eight_k);
    insert_and_settle(&w, 0, 16);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < 16; t++)
        ck_assert_int_eq(out_state(&w, t), 1);
    calls_t c = sim_calls(&w);
    ck_assert_int_eq(c.calls[CONVOY__D2H], 16);
    ck_assert_int_eq(c.loop_multi[CONVOY__D2H], 1);
    world_close(&w);
}
END_TEST

START_TEST(test_stage_in_failure)
{
    /* Proves: a bounced stage-in whose submission fails (sim_fail_submission=1, one copy:
     * no retry) fails its task, whose pageable output stays untouched and input
     * unchanged; the same task inserted again succeeds through the bounce. */
    const char *extra[] = {"pageable_bounce", "on", "sim_fail_submission", "1", NULL};
    world_t w;
    world_open(&w, extra, 1, varied);
    insert_and_settle(&w, 0, 1);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    ck_assert_int_eq(out_state(&w, 0), 0);
    insert_and_settle(&w, 0, 1);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(out_state(&w, 0), 1);
    calls_t c = sim_calls(&w);
    ck_assert_int_eq(c.failed, 1);
    world_close(&w);
}
END_TEST

START_TEST(test_pushout_failure)
{
    /* Proves: a bounced pushout whose submission fails (the second submission: the
     * task's stage-in is the first) leaves the pageable host copy untouched and the
     * device copy the newest version, which a later flush brings home intact. */
    const char *extra[] = {"pageable_bounce", "on", "sim_fail_submission", "2", NULL};
    world_t w;
    world_open(&w, extra, 1, varied);
    insert_and_settle(&w, 0, 1);
    expect_pushout_retried(&w);
    calls_t c = sim_calls(&w);
    ck_assert_int_eq(c.failed, 1);
    ck_assert_int_eq(c.copies[CONVOY__D2H], 1);
    world_close(&w);
}
END_TEST

START_TEST(test_failures_when_run)
{
    /* Proves: a copy accepted but failing when it runs (sim_fail_async: nothing copied,
     * its event reports the error) loses nothing, bounced (i < 2) or not: a stage-in (even
     * i) fails its task with the output untouched, and the task inserted again succeeds
     * (the device copy that never arrived is staged in again, not read as current); a
     * pushout (odd i) leaves the host copy untouched (the block is not copied out) and
     * the device copy the newest version, which a later flush brings home intact. */
    const char *extra[] = {"pageable_bounce", _i < 2 ? "on" : "off", "sim_fail_async",
                           _i % 2 == 0 ? "1" : "2", NULL};
    world_t w;
    world_open(&w, extra, 1, varied);
    insert_and_settle(&w, 0, 1);
    if (_i % 2 == 1) {
        expect_pushout_retried(&w);
        world_close(&w);
        return;
    }
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    ck_assert_int_eq(out_state(&w, 0), 0);
    insert_and_settle(&w, 0, 1);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(out_state(&w, 0), 1);
    world_close(&w);
}
END_TEST

START_TEST(test_pushout_partial_failure)
{
    /* Proves: a fused bounced pushout of 16 flows that fails after enqueuing 5 of them
     * (sim_fail_submitted=5) is retried one copy at a time from the sixth, and all 16
     * outputs come home intact: those the failed call carried and those retried. */
    const char *extra[] = {
        "pageable_bounce", "on", "sim_fail_submission", "2", "sim_fail_submitted", "5", NULL};
    world_t w;
    world_open(&w, extra, 16, varied);
    insert_and_settle(&w, 0, 16);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    for (int t = 0; t < 16; t++)
        ck_assert_int_eq(out_state(&w, t), 1);
    calls_t c = sim_calls(&w);
    ck_assert_int_eq(c.failed, 1);
    ck_assert_int_eq(c.copies[CONVOY__D2H], 16);
    ck_assert_int_eq(c.calls[CONVOY__D2H], 1 + 11);
    world_close(&w);
}
END_TEST

START_TEST(test_unknown_copies_keep_block)
{
    /* Proves: when a bounced stage-in can be proven neither by an event nor by waiting
     * for its stream (every record fails, and the first stream_sync), its task fails
     * with the output untouched, and the block its copies may still read is kept, not
     * reused, then freed at fini (the sanitizer builds see no leak, no use after free). */
    const char *extra[] = {"pageable_bounce",
                           "on",
                           "sim_fail_record",
                           "1",
                           "sim_fail_records",
                           "2000000000",
                           "sim_fail_sync",
                           "1",
                           "verbose",
                           "error",
                           NULL};
    world_t w;
    world_open(&w, extra, 4, varied);
    insert_and_settle(&w, 0, 4);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    for (int t = 0; t < 4; t++)
        ck_assert_int_eq(out_state(&w, t), 0);
    world_close(&w);
}
END_TEST

START_TEST(test_bad_mode)
{
    /* Proves: a pageable_bounce value other than auto, on, off, and a byte bound below
     * its minimum, are refused with a message naming the value. */
    const char *const bad[][2] = {{"pageable_bounce", "sometimes"},
                                  {"pageable_bounce_max", "0"},
                                  {"pageable_bounce_limit", "100"}};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(convoy_param_preset(bad[i][0], bad[i][1]), CONVOY_ERR_INVALID);
        ck_assert_msg(strstr(convoy_last_error(NULL), bad[i][1]) != NULL, "message: %s",
                      convoy_last_error(NULL));
    }
    convoy_param_preset_clear();
}
END_TEST

/* ---- the memcpy gang --------------------------------------------------------------- */

#define GANG_SPANS 48
#define GANG_MAX_SPAN 20000

static uint64_t gang_rand(uint64_t *x) /* xorshift64 */
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

START_TEST(test_gang_copies_every_span)
{
    /* Proves: convoy__gang_copy returns only once every span of its job is copied, byte
     * for byte and nothing beside, over 400 jobs posted back to back, whether the helpers
     * poll between jobs (_i 1), sleep at once and so mostly wake after their job is over,
     * or after a newer one began (_i 0: a late helper must take nothing of a job that is
     * not its own), or sleep at once but are primed before every other job (_i 2: woken
     * by the prime, polling, or asleep again when its 50 us are over). Each job's spans
     * are an allocation of their own, freed when the call returns (then 20000 jobs of a
     * few small spans, over before most helpers arrive), and every destination
     * slot is checked, those past the job's too: a helper copying with an old job's spans
     * writes a slot it should not, or reads freed memory (which the sanitizer builds
     * report). */
    convoy__gang_t *g = convoy__gang_new(3, _i == 1 ? 20000000u : 0, "check_bounce");
    ck_assert_ptr_nonnull(g);
    unsigned char *src = malloc((size_t)GANG_SPANS * GANG_MAX_SPAN);
    unsigned char *dst = malloc((size_t)GANG_SPANS * (GANG_MAX_SPAN + 64));
    ck_assert(src != NULL && dst != NULL);
    uint64_t rng = 12345;
    for (int job = 0; job < 400; job++) {
        int n = 2 + (int)(gang_rand(&rng) % (GANG_SPANS - 1));
        convoy__span_t *spans = malloc((size_t)n * sizeof(*spans));
        ck_assert_ptr_nonnull(spans);
        memset(dst, 0xee, (size_t)GANG_SPANS * (GANG_MAX_SPAN + 64));
        /* Spans in a rotating order, so that a stale span's slot is another's. */
        for (int i = 0; i < n; i++) {
            size_t bytes = 1 + gang_rand(&rng) % GANG_MAX_SPAN;
            unsigned char *s = src + (size_t)i * GANG_MAX_SPAN;
            for (size_t b = 0; b < bytes; b++)
                s[b] = (unsigned char)(job * 31 + i * 7 + b);
            int slot = (i + job) % GANG_SPANS;
            spans[i] = (convoy__span_t){
                .dst = dst + (size_t)slot * (GANG_MAX_SPAN + 64), .src = s, .bytes = bytes};
        }
        if (_i == 2 && job % 2 == 0)
            convoy__gang_prime(g, 50000);
        convoy__gang_copy(g, spans, n, 0); /* min_bytes 0: every job goes to the gang */
        for (int i = 0; i < n; i++) {
            const unsigned char *d = spans[i].dst;
            ck_assert_msg(memcmp(d, spans[i].src, spans[i].bytes) == 0, "job %d span %d", job, i);
            ck_assert_msg(d[spans[i].bytes] == 0xee, "job %d span %d: a byte past its end", job, i);
        }
        for (int i = n; i < GANG_SPANS; i++) {
            const unsigned char *d = dst + (size_t)((i + job) % GANG_SPANS) * (GANG_MAX_SPAN + 64);
            ck_assert_msg(d[0] == 0xee, "job %d: slot of no span of it written", job);
        }
        free(spans);
    }
    /* Then 20000 jobs of 2-5 spans of 64 bytes, over as soon as posted: the helpers mostly
     * arrive after their job, often during the next. */
    for (int job = 0; job < 20000; job++) {
        int n = 2 + job % 4;
        convoy__span_t *spans = malloc((size_t)n * sizeof(*spans));
        ck_assert_ptr_nonnull(spans);
        for (int i = 0; i < n; i++) {
            int slot = (i + job) % GANG_SPANS;
            unsigned char *d = dst + (size_t)slot * (GANG_MAX_SPAN + 64);
            memset(d, 0xee, 64);
            memset(src + (size_t)i * GANG_MAX_SPAN, job + i, 64);
            spans[i] =
                (convoy__span_t){.dst = d, .src = src + (size_t)i * GANG_MAX_SPAN, .bytes = 64};
        }
        convoy__gang_copy(g, spans, n, 0);
        for (int i = 0; i < n; i++)
            ck_assert_msg(((unsigned char *)spans[i].dst)[63] == (unsigned char)(job + i),
                          "small job %d span %d", job, i);
        free(spans);
    }
    convoy__gang_free(g);
    free(src);
    free(dst);
}
END_TEST

START_TEST(test_auto_threads)
{
    /* Proves: pageable_bounce_threads -1 gives half the cores shared among the
     * accelerators, less one, within 0..7: 7 with one GPU on 16 cores, none on 2. */
    ck_assert_int_eq(convoy__bounce_auto_threads(16, 1), 7);
    ck_assert_int_eq(convoy__bounce_auto_threads(64, 1), 7);
    ck_assert_int_eq(convoy__bounce_auto_threads(16, 2), 3);
    ck_assert_int_eq(convoy__bounce_auto_threads(8, 1), 3);
    ck_assert_int_eq(convoy__bounce_auto_threads(2, 1), 0);
    ck_assert_int_eq(convoy__bounce_auto_threads(1, 1), 0);
    ck_assert_int_eq(convoy__bounce_auto_threads(128, 8), 7);
    ck_assert_int_eq(convoy__bounce_auto_threads(4, 0), 1); /* no accelerator counted: one */
}
END_TEST

START_TEST(test_gang_small_or_none_copies_alone)
{
    /* Proves: without a gang, or with a job below min_bytes, the caller copies every
     * span itself and says so; a gang freed with its helpers asleep, never used, or
     * primed to poll for 10 s, stops without waiting the prime out. */
    unsigned char a[3][100], b[3][100];
    convoy__span_t spans[3];
    for (int i = 0; i < 3; i++) {
        memset(a[i], 'a' + i, sizeof(a[i]));
        memset(b[i], 0, sizeof(b[i]));
        spans[i] = (convoy__span_t){.dst = b[i], .src = a[i], .bytes = sizeof(a[i])};
    }
    ck_assert_int_eq(convoy__gang_copy(NULL, spans, 3, 0), 0);
    ck_assert(memcmp(a, b, sizeof(a)) == 0);
    convoy__gang_t *g = convoy__gang_new(2, 0, "check_bounce");
    ck_assert_ptr_nonnull(g);
    memset(b, 0, sizeof(b));
    ck_assert_int_eq(convoy__gang_copy(g, spans, 3, 1u << 20), 0);
    ck_assert(memcmp(a, b, sizeof(a)) == 0);
    memset(b, 0, sizeof(b));
    ck_assert_int_eq(convoy__gang_copy(g, spans, 3, 0), 1); /* the helpers were asked */
    ck_assert(memcmp(a, b, sizeof(a)) == 0);
    convoy__gang_free(g);
    convoy__gang_free(convoy__gang_new(4, 1000000u, "check_bounce"));
    g = convoy__gang_new(2, 0, "check_bounce"); /* freed while primed for 10 s */
    ck_assert_ptr_nonnull(g);
    convoy__gang_prime(g, 10000000000ull);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    convoy__gang_free(g);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(secs < 5, "gang_free waited %.1f s for primed helpers", secs);
    convoy__gang_prime(NULL, 1000);
    convoy__gang_free(NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bounce");
    TCase *tc = tu_tcase(s, "bounce", 30);
    tcase_add_loop_test(tc, test_intact_and_fused, 0, 5);
    tcase_add_loop_test(tc, test_bounds_keep_direct, 0, 2);
    tcase_add_test(tc, test_blocks_reused_after_landing);
    tcase_add_loop_test(tc, test_bounced_stage_in_not_quiet, 0, 2);
    tcase_add_test(tc, test_stage_in_failure);
    tcase_add_test(tc, test_pushout_failure);
    tcase_add_loop_test(tc, test_failures_when_run, 0, 4);
    tcase_add_test(tc, test_pushout_partial_failure);
    tcase_add_test(tc, test_unknown_copies_keep_block);
    tcase_add_test(tc, test_bad_mode);
    TCase *tg = tu_tcase(s, "gang", 60);
    tcase_add_loop_test(tg, test_gang_copies_every_span, 0, 3);
    tcase_add_test(tg, test_gang_small_or_none_copies_alone);
    tcase_add_test(tg, test_auto_threads);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
