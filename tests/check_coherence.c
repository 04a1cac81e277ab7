/*
 * check_coherence: write-back coherence and its failure contract on the sim device
 * (src/coherence.h, device/pushout.c, doc/design.md "Data coherence"): data stay on the
 * device until something needs them, come home fused, survive failures with their newest
 * valid version, and nothing writes host memory after acquire, wait or data_free.
 *
 * The tasks here are small and named: "add" adds its argument to every word of its RW
 * flow, "add2" adds it to both of its RW flows, "copy" copies flow 0 into flow 1, "fail"
 * scribbles over its RW flow and returns 7. Each test states the figures it expects.
 */
#include "config.h"

#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convoy.h"
#include "device/device.h"
#include "device/pipeline.h"
#include "device/sim/sim.h"
#include "src/context.h"
#include "tests/test_util.h"

#define KiB ((size_t)1024)
#define WORDS(b) ((b) / sizeof(uint32_t))

static atomic_int g_runs;

static void add_words(void *p, size_t bytes, uint32_t v)
{
    uint32_t *w = p;
    for (size_t i = 0; i < WORDS(bytes); i++)
        w[i] += v;
}

static uint32_t arg_of(const convoy_task_view_t *t)
{
    return t->args_size == sizeof(uint32_t) ? *(const uint32_t *)t->args : 1;
}

static int add_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    atomic_fetch_add(&g_runs, 1);
    add_words(t->flows[0], t->flow_bytes[0], arg_of(t));
    return 0;
}

static int add2_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    add_words(t->flows[0], t->flow_bytes[0], arg_of(t));
    add_words(t->flows[1], t->flow_bytes[1], arg_of(t));
    return 0;
}

static int copy_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    memcpy(t->flows[1], t->flows[0], t->flow_bytes[0]);
    return 0;
}

static int fail_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    for (int f = 0; f < t->nflows; f++)
        memset(t->flows[f], 0xee, t->flow_bytes[f]);
    return 7;
}

typedef struct env {
    convoy_context_t *ctx;
    convoy_class_t *add, *add_cpu, *add2, *copy, *fail, *fail_cpu;
} env_t;

/* A context with these presets (after sim, zero costs, 2 workers) and the classes. */
static void env_init(env_t *e, const char *const *extra)
{
    const char *kv[64] = {"devices",  "sim",  "nthreads",           "2",   "bind",
                          "0",        "sched", "batch",             "verbose", "error",
                          "sim_submit_us", "0", "sim_copy_us",      "0",   "sim_single_copy_us",
                          "0",        "sim_launch_us", "0",         "batch_max_wait_us", "20"};
    int n = 20;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++)
        kv[n++] = extra[i];
    kv[n] = NULL;
    e->ctx = tu_init(kv);
    convoy_access_t rw = CONVOY_RW, rw2[2] = {CONVOY_RW, CONVOY_RW},
                    rw_cp[2] = {CONVOY_READ, CONVOY_WRITE};
    ck_assert_int_eq(convoy_class_new(e->ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &e->add), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->add, CONVOY_DEVICE_SIM, add_chore), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "add_cpu", 1, &rw, 0, &e->add_cpu), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->add_cpu, CONVOY_DEVICE_CPU, add_chore), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "add2", 2, rw2, 0, &e->add2), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->add2, CONVOY_DEVICE_SIM, add2_chore), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "copy", 2, rw_cp, 0, &e->copy), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->copy, CONVOY_DEVICE_SIM, copy_chore), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "fail", 2, rw2, 0, &e->fail), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->fail, CONVOY_DEVICE_SIM, fail_chore), 0);
    ck_assert_int_eq(convoy_class_new(e->ctx, "fail_cpu", 1, &rw, 0, &e->fail_cpu), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->fail_cpu, CONVOY_DEVICE_CPU, fail_chore), 0);
    atomic_store(&g_runs, 0);
}

static void insert(env_t *e, convoy_class_t *cls, uint32_t v, convoy_data_t *a, convoy_data_t *b)
{
    convoy_data_t *f[2] = {a, b};
    convoy_status_t st = convoy_task_insert(e->ctx, cls, &v, sizeof(v), f);
    ck_assert_msg(st == CONVOY_SUCCESS, "insert: %s", convoy_last_error(e->ctx));
}

static convoy_data_t *datum(env_t *e, void *host, size_t bytes)
{
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(e->ctx, host, bytes, &d), CONVOY_SUCCESS);
    return d;
}

/* Every word of p equals v. */
static int all_eq(const void *p, size_t bytes, uint32_t v)
{
    const uint32_t *w = p;
    for (size_t i = 0; i < WORDS(bytes); i++)
        if (w[i] != v)
            return 0;
    return 1;
}

static convoy_stats_t stats(const env_t *e)
{
    convoy_stats_t s;
    convoy_get_stats(e->ctx, &s);
    return s;
}

/* ---- data stay on the device ---------------------------------------------------------- */

/* Chains of RW tasks on the device move home only the final versions: C chains of S
 * tasks on 8 KiB data give d2h bytes == C x 8 KiB (write-through moved S times that), one
 * D2D copy per task after the first of each chain (the only newest version saved before
 * it is overwritten), and the right values. */
START_TEST(chains_move_only_final_bytes)
{
    enum { C = 64, S = 8 };
    env_t e;
    env_init(&e, NULL);
    static uint32_t buf[C][8 * KiB / 4];
    convoy_data_t *d[C];
    for (int c = 0; c < C; c++) {
        memset(buf[c], 0, sizeof(buf[c]));
        d[c] = datum(&e, buf[c], sizeof(buf[c]));
    }
    for (int s = 0; s < S; s++)
        for (int c = 0; c < C; c++)
            insert(&e, e.add, 1, d[c], NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    convoy_stats_t st = stats(&e);
    ck_assert_uint_eq(st.d2h_bytes, C * sizeof(buf[0]));
    ck_assert_uint_eq(st.d2h_copies, C);
    ck_assert_uint_eq(st.h2d_copies, C);
    ck_assert_uint_eq(st.d2d_copies, (uint64_t)C * (S - 1));
    for (int c = 0; c < C; c++)
        ck_assert(all_eq(buf[c], sizeof(buf[c]), S));
    /* The device copies stay valid after the wait: the next round stages nothing in. */
    for (int c = 0; c < C; c++)
        insert(&e, e.add, 1, d[c], NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    ck_assert_uint_eq(stats(&e).h2d_copies, C);
    for (int c = 0; c < C; c++)
        ck_assert(all_eq(buf[c], sizeof(buf[c]), S + 1));
    convoy_fini(e.ctx);
}
END_TEST

/* Resident data are not brought home by convoy_wait (an iterative program pays no
 * flush per iteration), only by acquire (and fini); scratch data not even by fini. */
START_TEST(resident_and_scratch)
{
    env_t e;
    env_init(&e, NULL);
    static uint32_t r[1024], sc[1024];
    memset(r, 0, sizeof(r));
    memset(sc, 0, sizeof(sc));
    convoy_data_t *dr = datum(&e, r, sizeof(r)), *ds = datum(&e, sc, sizeof(sc));
    ck_assert_int_eq(convoy_data_set_flags(dr, CONVOY_DATA_RESIDENT), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_set_flags(ds, CONVOY_DATA_SCRATCH), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_set_flags(ds, 0x80), CONVOY_ERR_INVALID);
    tu_assert_error_has(e.ctx, "unknown flags 0x80");
    for (int it = 0; it < 5; it++) {
        insert(&e, e.add, 1, dr, NULL);
        insert(&e, e.add, 1, ds, NULL);
        ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    }
    ck_assert_uint_eq(stats(&e).d2h_copies, 0);
    ck_assert(all_eq(r, sizeof(r), 0));
    ck_assert_int_eq(convoy_data_acquire(dr, CONVOY_READ), CONVOY_SUCCESS);
    ck_assert(all_eq(r, sizeof(r), 5));
    ck_assert_uint_eq(stats(&e).d2h_copies, 1);
    insert(&e, e.add, 1, dr, NULL);
    convoy_data_free(ds); /* scratch: freed without coming home */
    ck_assert(all_eq(sc, sizeof(sc), 0));
    convoy_fini(e.ctx); /* resident data come home at fini */
    ck_assert(all_eq(r, sizeof(r), 6));
}
END_TEST

/* ---- issue 9's six cases --------------------------------------------------------------- */

/* Case 1: a task's outputs are visible only once it succeeded. A device task writing two
 * flows that fails leaves both data at their newest valid version, on the host and for
 * the next device task (its fresh buffers are discarded, never the device copies). */
START_TEST(case1_outputs_only_after_success)
{
    env_t e;
    env_init(&e, NULL);
    static uint32_t a[2048], b[2048];
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    convoy_data_t *da = datum(&e, a, sizeof(a)), *db = datum(&e, b, sizeof(b));
    insert(&e, e.add2, 1, da, db); /* both dirty on sim0 at 1 */
    insert(&e, e.fail, 0, da, db); /* writes fresh buffers, fails */
    insert(&e, e.add2, 0, da, db); /* cancelled by the failure */
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(e.ctx, "class 'fail'", "returned 7");
    ck_assert(all_eq(a, sizeof(a), 1));
    ck_assert(all_eq(b, sizeof(b), 1));
    ck_assert_int_eq(convoy_data_acquire(da, CONVOY_READ), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(e.ctx, "writing datum 0 failed", "newest valid version");
    insert(&e, e.add2, 1, da, db); /* runs from the valid version: 2, not 0xeeeeeeef */
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    ck_assert(all_eq(a, sizeof(a), 2));
    ck_assert(all_eq(b, sizeof(b), 2));
    convoy_fini(e.ctx);
}
END_TEST

/* Case 1, the other half: bringing one output home fails (sim submission 2: the first
 * after the stage-in). The task succeeded; the failed datum's device copy stays its
 * newest version: the acquire names the datum, the device and the cause, and the next
 * acquire brings the right bytes home, as the other output's did. */
START_TEST(case1_failed_flush_keeps_device_copy)
{
    env_t e;
    env_init(&e, (const char *const[]){"sim_fail_submission", "2", NULL});
    static uint32_t a[2048], b[2048];
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    convoy_data_t *da = datum(&e, a, sizeof(a)), *db = datum(&e, b, sizeof(b));
    insert(&e, e.add2, 1, da, db);
    ck_assert_int_eq(convoy_data_acquire(db, CONVOY_READ), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(e.ctx, "datum 1", "sim0", "injected failure of submission 2");
    ck_assert(all_eq(b, sizeof(b), 0));
    ck_assert_int_eq(convoy_data_acquire(da, CONVOY_READ), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_acquire(db, CONVOY_READ), CONVOY_SUCCESS);
    ck_assert(all_eq(a, sizeof(a), 1));
    ck_assert(all_eq(b, sizeof(b), 1));
    ck_assert_uint_eq(stats(&e).transfers_failed, 1);
    convoy_fini(e.ctx);
}
END_TEST

/* Cases 2 and 3: no event can be recorded for the flushes (every record from the 3rd on
 * fails), one datum is large on a slow link (64 MiB at 2 GB/s: ~33 ms in flight) and a
 * small one is queued behind it. acquire returns only once the bytes have landed, both
 * whole and reported as success; host memory written after acquire(RW) is never
 * overwritten; data_free then frees nothing that is still being written (ASan would see
 * a use after free). */
START_TEST(case23_no_event_no_abandoned_copy)
{
    env_t e;
    env_init(&e, (const char *const[]){"sim_fail_record", "3", "sim_fail_records", "2000000000",
                                       "sim_bandwidth_gbs", "2", "batch_split_bytes", "0",
                                       NULL});
    size_t big = 64 << 20;
    uint32_t *a = calloc(1, big), *b = calloc(1, 8 * KiB);
    ck_assert(a != NULL && b != NULL);
    convoy_data_t *da = datum(&e, a, big), *db = datum(&e, b, 8 * KiB);
    insert(&e, e.add, 3, da, NULL);
    insert(&e, e.add, 4, db, NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS); /* the flush-all: one submission */
    ck_assert(all_eq(a, big, 3));
    ck_assert(all_eq(b, 8 * KiB, 4));
    insert(&e, e.add, 1, da, NULL);
    insert(&e, e.add, 1, db, NULL);
    ck_assert_int_eq(convoy_data_acquire(db, CONVOY_RW), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_acquire(da, CONVOY_RW), CONVOY_SUCCESS);
    ck_assert(all_eq(a, big, 4));
    ck_assert(all_eq(b, 8 * KiB, 5));
    memset(b, 0x11, 8 * KiB); /* the program's own writes after acquire(RW) */
    a[0] = 0x22;
    struct timespec ts = {0, 80 * 1000 * 1000};
    nanosleep(&ts, NULL);
    ck_assert(all_eq(b, 8 * KiB, 0x11111111));
    ck_assert_uint_eq(a[0], 0x22);
    convoy_data_free(da);
    convoy_data_free(db);
    free(a);
    free(b);
    convoy_fini(e.ctx);
}
END_TEST

/* Case 4: with two sim devices, a datum written on sim0 and read on sim1 is read at its
 * newest version (it comes home first), the same the CPU reads. */
START_TEST(case4_second_device_reads_newest)
{
    env_t e;
    env_init(&e, (const char *const[]){"sim_count", "2", NULL});
    ck_assert_int_eq(convoy_accel_count(e.ctx), 2);
    static uint32_t a[1024], b[1024];
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    convoy_data_t *da = datum(&e, a, sizeof(a)), *db = datum(&e, b, sizeof(b));
    for (int i = 0; i < 40; i++) {
        insert(&e, e.add, 1, da, NULL);   /* wherever placement puts it */
        insert(&e, e.copy, 0, da, db);    /* reads a: same bytes on either device */
        insert(&e, e.add_cpu, 0, db, NULL); /* the CPU reads the copy */
    }
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    ck_assert(all_eq(a, sizeof(a), 40));
    ck_assert(all_eq(b, sizeof(b), 40));
    convoy_fini(e.ctx);
}
END_TEST

/* Case 5: a CPU chore that writes its RW flow and then fails leaves the host bytes as
 * they were (cpu_write_backup, on by default); the next task starts from them. */
START_TEST(case5_failing_cpu_chore_keeps_host)
{
    env_t e;
    env_init(&e, (const char *const[]){"devices", "host", NULL});
    static uint32_t a[1024];
    memset(a, 0, sizeof(a));
    convoy_data_t *da = datum(&e, a, sizeof(a));
    insert(&e, e.add_cpu, 5, da, NULL);
    insert(&e, e.fail_cpu, 0, da, NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED);
    ck_assert(all_eq(a, sizeof(a), 5));
    insert(&e, e.add_cpu, 1, da, NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS);
    ck_assert(all_eq(a, sizeof(a), 6));
    convoy_fini(e.ctx);
}
END_TEST

/* Case 5 without the backup: the host keeps what the chore wrote, as documented. */
START_TEST(case5_without_backup)
{
    env_t e;
    env_init(&e, (const char *const[]){"devices", "host", "cpu_write_backup", "0", NULL});
    static uint32_t a[1024];
    memset(a, 0, sizeof(a));
    convoy_data_t *da = datum(&e, a, sizeof(a));
    insert(&e, e.fail_cpu, 0, da, NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED);
    ck_assert(all_eq(a, sizeof(a), 0xeeeeeeee));
    convoy_fini(e.ctx);
}
END_TEST

/* Case 6: host memory changed after a wait without acquire(RW) while the device holds a
 * copy: with check_host_writes the next device task fails, naming the datum; with
 * acquire(RW) first, the change is seen. */
START_TEST(case6_host_write_without_acquire)
{
    env_t e;
    env_init(&e, (const char *const[]){"check_host_writes", "1", NULL});
    static uint32_t a[1024], b[1024];
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    convoy_data_t *da = datum(&e, a, sizeof(a)), *db = datum(&e, b, sizeof(b));
    insert(&e, e.add, 1, da, NULL);
    insert(&e, e.add, 1, db, NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_SUCCESS); /* home; the device copies stay */
    a[7] = 100;                                           /* without asking */
    ck_assert_int_eq(convoy_data_acquire(db, CONVOY_RW), CONVOY_SUCCESS);
    b[7] = 100; /* declared */
    insert(&e, e.add, 1, da, NULL);
    insert(&e, e.add, 1, db, NULL);
    ck_assert_int_eq(convoy_wait(e.ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(e.ctx, "datum 0", "changed without convoy_data_acquire(RW)",
                        "check_host_writes");
    ck_assert_uint_eq(b[7], 101);
    ck_assert_uint_eq(b[0], 2);
    convoy_fini(e.ctx);
}
END_TEST

/* ---- eviction ----------------------------------------------------------------------------- */

/* Device memory for 16 of 64 data of 8 KiB, every datum written on the device in turn:
 * reservations evict dirty copies, which are pushed home together (at least 8 copies a
 * submission here: each ring of 32 needs room for 32), and every value is right. */
START_TEST(dirty_eviction_is_fused)
{
    enum { N = 64, ROUNDS = 3 };
    env_t e;
    env_init(&e, (const char *const[]){"sim_memory", "128K", "batch_max_tasks", "32",
                                       "batch_max_wait_us", "100000", "batch_idle_close", "0",
                                       NULL});
    static uint32_t buf[N][2048];
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++) {
        memset(buf[i], 0, sizeof(buf[i]));
        d[i] = datum(&e, buf[i], sizeof(buf[i]));
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N; i++)
            insert(&e, e.add, 1, d[i], NULL);
    convoy_status_t st = convoy_wait(e.ctx);
    ck_assert_msg(st == CONVOY_SUCCESS, "wait: %s", convoy_last_error(e.ctx));
    for (int i = 0; i < N; i++)
        ck_assert_msg(all_eq(buf[i], sizeof(buf[i]), ROUNDS), "datum %d", i);
    convoy_stats_t s = stats(&e);
    ck_assert_uint_gt(s.eviction_submissions, 0);
    ck_assert_uint_ge(s.eviction_copies, 8 * s.eviction_submissions);
    ck_assert_uint_ge(s.evictions, s.eviction_copies);
    convoy_fini(e.ctx);
}
END_TEST

/* A flush of a datum whose eviction pushout failed is retried: the device copy stays the
 * newest version, and the data end right. Every 5th submission fails. */
START_TEST(eviction_failure_keeps_newest)
{
    enum { N = 48 };
    env_t e;
    env_init(&e, (const char *const[]){"sim_memory", "96K", "batch_max_tasks", "16",
                                       "sim_fail_every", "5", NULL});
    static uint32_t buf[N][2048];
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++) {
        memset(buf[i], 0, sizeof(buf[i]));
        d[i] = datum(&e, buf[i], sizeof(buf[i]));
    }
    int ok[N] = {0};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++)
            insert(&e, e.add, 1, d[i], NULL);
    convoy_wait(e.ctx); /* stage-in failures fail some tasks */
    for (int i = 0; i < N; i++) {
        convoy_status_t st = CONVOY_ERR_TASK_FAILED;
        for (int k = 0; k < 20 && st != CONVOY_SUCCESS; k++)
            st = convoy_data_acquire(d[i], CONVOY_READ);
        ck_assert_msg(st == CONVOY_SUCCESS, "datum %d: %s", i, convoy_last_error(e.ctx));
        ok[i] = (int)buf[i][0];
        ck_assert_msg(ok[i] >= 0 && ok[i] <= 2 && all_eq(buf[i], sizeof(buf[i]), buf[i][0]),
                      "datum %d: word 0 is %u", i, buf[i][0]);
    }
    convoy_fini(e.ctx);
}
END_TEST

/* convoy_data_free returns without waiting for the device copies to go (the drops run on
 * the accelerators' threads), acquire to read data at home takes no trip through the
 * CPUs, and neither loses anything: freed data give their device memory back before
 * convoy_fini returns (the sim counts it; ASan finds a leaked handle), with frees and fini
 * right after the tasks, on one and two devices. */
START_TEST(free_drops_in_the_background)
{
    enum { N = 64 };
    env_t e;
    env_init(&e, _i ? (const char *const[]){"sim_count", "2", NULL} : NULL);
    static uint32_t buf[N][256];
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++) {
        memset(buf[i], 0, sizeof(buf[i]));
        d[i] = datum(&e, buf[i], sizeof(buf[i]));
        insert(&e, e.add, 3, d[i], NULL);
    }
    ck_assert_msg(convoy_wait(e.ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e.ctx));
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(convoy_data_acquire(d[i], CONVOY_READ), CONVOY_SUCCESS);
        ck_assert_msg(all_eq(buf[i], sizeof(buf[i]), 3), "datum %d", i);
        convoy_data_free(d[i]);
    }
    convoy__wait_quiet(e.ctx);
    for (int k = 0; k < convoy_accel_count(e.ctx); k++) {
        convoy__sim_counters_t c;
        convoy__sim_get_counters(convoy__ctx_accel(e.ctx, k), &c);
        size_t kept = convoy__pipeline_cached_bytes(convoy__ctx_accel(e.ctx, k));
        ck_assert_msg(c.bytes_in_use == kept, "%zu bytes of sim%d still in use, %zu kept for reuse",
                      c.bytes_in_use, k, kept);
    }
    /* Again, with fini right after the frees. */
    for (int i = 0; i < N; i++) {
        d[i] = datum(&e, buf[i], sizeof(buf[i]));
        insert(&e, e.add, 1, d[i], NULL);
    }
    ck_assert_msg(convoy_wait(e.ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e.ctx));
    for (int i = 0; i < N; i++)
        convoy_data_free(d[i]);
    convoy_fini(e.ctx);
    for (int i = 0; i < N; i++)
        ck_assert_msg(all_eq(buf[i], sizeof(buf[i]), 4), "datum %d after fini", i);
}
END_TEST

/* convoy_data_free's drops wait to fill a ring (batch_drop_wait_us): 64 frees in a row
 * make one ring, not one each (before: a ring per 1-6 drops, popped as they came). The
 * wait is 1 s here, not the default 1 ms: under ThreadSanitizer 64 frees took longer than
 * four 1 ms windows, and the count would measure the frees' pace, not the rule. The frees
 * come 100 us apart, so a ring that leaves with the drops it has shows as many rings. The
 * quiet wait closes the ring; a second ring is allowed for a pop racing the last frees. */
START_TEST(frees_fill_drop_rings)
{
    enum { N = 64 };
    env_t e;
    env_init(&e, (const char *const[]){"batch_drop_wait_us", "1e6", NULL});
    static uint32_t buf[N][256];
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++) {
        memset(buf[i], 0, sizeof(buf[i]));
        d[i] = datum(&e, buf[i], sizeof(buf[i]));
        insert(&e, e.add, 1, d[i], NULL);
    }
    ck_assert_msg(convoy_wait(e.ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e.ctx));
    convoy__device_t *dev = convoy__ctx_accel(e.ctx, 0);
    uint64_t before = convoy__pipeline_drop_rings(dev);
    for (int i = 0; i < N; i++) { /* paced, so that a ring popped as drops come shows */
        convoy_data_free(d[i]);
        nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
    }
    convoy__wait_quiet(e.ctx);
    uint64_t rings = convoy__pipeline_drop_rings(dev) - before;
    ck_assert_msg(rings >= 1 && rings <= 2, "%d frees made %llu rings of drops", N,
                  (unsigned long long)rings);
    convoy__sim_counters_t c;
    convoy__sim_get_counters(dev, &c);
    size_t kept = convoy__pipeline_cached_bytes(dev);
    ck_assert_msg(c.bytes_in_use == kept, "%zu bytes of sim memory still in use, %zu kept for reuse",
                  c.bytes_in_use, kept);
    for (int i = 0; i < N; i++)
        ck_assert_msg(all_eq(buf[i], sizeof(buf[i]), 1), "datum %d", i);
    convoy_fini(e.ctx);
}
END_TEST

/* A freed scratch datum whose device copy is dirty (scratch never goes home) is never
 * pushed home while its drop waits in a ring: the program may have freed its host memory.
 * Memory for the next tasks evicts it as a clean copy; its host bytes stay as they were. */
START_TEST(freed_scratch_never_pushed_home)
{
    enum { N = 8, WORDS8K = 2048 };
    env_t e;
    env_init(&e, (const char *const[]){"sim_memory", "64K", "batch_max_tasks", "8",
                                       "batch_drop_wait_us", "1e7", NULL});
    static uint32_t scratch[WORDS8K], buf[N][WORDS8K];
    for (int w = 0; w < WORDS8K; w++)
        scratch[w] = 0x5a5a5a5au;
    convoy_data_t *s = datum(&e, scratch, sizeof(scratch));
    ck_assert_int_eq(convoy_data_set_flags(s, CONVOY_DATA_SCRATCH), CONVOY_SUCCESS);
    insert(&e, e.add, 1, s, NULL);
    ck_assert_msg(convoy_wait(e.ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e.ctx));
    convoy_data_free(s);
    /* 8 x 8 KiB fill the 64 KiB: the scratch copy must go to make room. */
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++) {
        memset(buf[i], 0, sizeof(buf[i]));
        d[i] = datum(&e, buf[i], sizeof(buf[i]));
        insert(&e, e.add, 2, d[i], NULL);
    }
    /* Not convoy_wait: it would make the drop leave at once (waits expedite every ring). */
    for (double t0 = tu_now(); stats(&e).tasks_completed < 1 + N && tu_now() - t0 < 10;)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    ck_assert_uint_eq(stats(&e).tasks_completed, 1 + N);
    ck_assert_msg(all_eq(scratch, sizeof(scratch), 0x5a5a5a5au),
                  "the freed scratch datum's host memory was written: word 0 is 0x%x", scratch[0]);
    convoy_stats_t st = stats(&e);
    ck_assert_uint_eq(st.eviction_copies, 0);
    ck_assert_msg(convoy_wait(e.ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e.ctx));
    for (int i = 0; i < N; i++)
        ck_assert_msg(all_eq(buf[i], sizeof(buf[i]), 2), "datum %d", i);
    convoy__wait_quiet(e.ctx);
    convoy_fini(e.ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coherence");
    TCase *tc = tu_tcase(s, "write-back", 60);
    tcase_add_test(tc, chains_move_only_final_bytes);
    tcase_add_test(tc, resident_and_scratch);
    tc = tu_tcase(s, "contract", 60);
    tcase_add_test(tc, case1_outputs_only_after_success);
    tcase_add_test(tc, case1_failed_flush_keeps_device_copy);
    tcase_add_test(tc, case23_no_event_no_abandoned_copy);
    tcase_add_test(tc, case4_second_device_reads_newest);
    tcase_add_test(tc, case5_failing_cpu_chore_keeps_host);
    tcase_add_test(tc, case5_without_backup);
    tcase_add_test(tc, case6_host_write_without_acquire);
    tc = tu_tcase(s, "eviction", 60);
    tcase_add_test(tc, dirty_eviction_is_fused);
    tcase_add_test(tc, eviction_failure_keeps_newest);
    tcase_add_test(tc, frees_fill_drop_rings);
    tcase_add_test(tc, freed_scratch_never_pushed_home);
    tcase_add_loop_test(tc, free_drops_in_the_background, 0, 2);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
