/*
 * check_devcache: freed device buffers kept by size for reuse (device/devcache.c, and
 * devmem's use of it). The cache hands a block back only for its exact size, last freed
 * first; it keeps nothing past its limit or past CONVOY__DEVCACHE_MAX_BLOCK, and at most
 * CONVOY__DEVCACHE_CLASSES sizes at once; a drain gives every block to the device. On the
 * sim device: the copies of freed data serve the next data of their size with no device
 * allocation, and give back their bytes of results intact; an allocation of another size
 * that finds the memory held by the cache gets it (the cache is drained, nothing is
 * evicted or fails); device_cache=0 keeps nothing.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/devcache.h"
#include "device/device.h"
#include "device/pipeline.h"
#include "device/pipeline_impl.h"
#include "device/sim/sim.h"
#include "src/context.h"
#include "tests/test_util.h"

static void *block(uintptr_t k)
{
    return (void *)(0x100000 + 0x1000 * k);
}

static int freed;
static void count_free(void *arg, void *ptr)
{
    (void)arg;
    (void)ptr;
    freed++;
}

/* Exact sizes, last freed first, a miss for another size. */
START_TEST(takes_exact_size_last_first)
{
    convoy__devcache_t c;
    convoy__devcache_init(&c, 1 << 20);
    ck_assert_int_eq(convoy__devcache_keep(&c, block(1), 8192), 1);
    ck_assert_int_eq(convoy__devcache_keep(&c, block(2), 8192), 1);
    ck_assert_int_eq(convoy__devcache_keep(&c, block(3), 4096), 1);
    ck_assert_uint_eq(atomic_load(&c.held), 8192 + 8192 + 4096);
    ck_assert_ptr_null(convoy__devcache_take(&c, 8193));
    ck_assert_ptr_eq(convoy__devcache_take(&c, 8192), block(2));
    ck_assert_ptr_eq(convoy__devcache_take(&c, 8192), block(1));
    ck_assert_ptr_null(convoy__devcache_take(&c, 8192));
    ck_assert_ptr_eq(convoy__devcache_take(&c, 4096), block(3));
    ck_assert_uint_eq(atomic_load(&c.held), 0);
    ck_assert_uint_eq(c.hits, 3);
    convoy__devcache_fini(&c);
}
END_TEST

/* Nothing past the limit, nothing too large, no more than CONVOY__DEVCACHE_MAX_PER_SIZE
 * blocks of a size, a limit of 0 keeps nothing. */
START_TEST(keeps_within_its_bounds)
{
    convoy__devcache_t c;
    convoy__devcache_init(&c, 3 * 4096);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(convoy__devcache_keep(&c, block((uintptr_t)i), 4096), 1);
    ck_assert_int_eq(convoy__devcache_keep(&c, block(9), 4096), 0);
    ck_assert_int_eq(convoy__devcache_keep(&c, block(9), 1), 0);
    ck_assert_uint_eq(atomic_load(&c.held), 3 * 4096);
    convoy__devcache_t big;
    convoy__devcache_init(&big, (size_t)1 << 40);
    ck_assert_int_eq(convoy__devcache_keep(&big, block(1), CONVOY__DEVCACHE_MAX_BLOCK + 1), 0);
    ck_assert_int_eq(convoy__devcache_keep(&big, block(1), CONVOY__DEVCACHE_MAX_BLOCK), 1);
    ck_assert_int_eq(convoy__devcache_keep(&big, NULL, 64), 0);
    for (int i = 0; i < CONVOY__DEVCACHE_MAX_PER_SIZE; i++)
        ck_assert_int_eq(convoy__devcache_keep(&big, block((uintptr_t)i), 64), 1);
    ck_assert_int_eq(convoy__devcache_keep(&big, block(0), 64), 0);
    convoy__devcache_t none;
    convoy__devcache_init(&none, 0);
    ck_assert_int_eq(convoy__devcache_keep(&none, block(1), 64), 0);
    freed = 0;
    convoy__devcache_drain(&c, count_free, NULL);
    convoy__devcache_drain(&big, count_free, NULL);
    ck_assert_int_eq(freed, 4 + CONVOY__DEVCACHE_MAX_PER_SIZE);
    ck_assert_uint_eq(atomic_load(&c.held), 0);
    convoy__devcache_fini(&c);
    convoy__devcache_fini(&big);
    convoy__devcache_fini(&none);
}
END_TEST

/* CONVOY__DEVCACHE_CLASSES sizes at once; a class that empties takes a new size. */
START_TEST(bounded_number_of_sizes)
{
    convoy__devcache_t c;
    convoy__devcache_init(&c, (size_t)1 << 30);
    for (int i = 0; i < CONVOY__DEVCACHE_CLASSES; i++)
        ck_assert_int_eq(convoy__devcache_keep(&c, block((uintptr_t)i), 64 * (size_t)(i + 1)), 1);
    ck_assert_int_eq(convoy__devcache_keep(&c, block(99), 64 * 100), 0);
    ck_assert_ptr_eq(convoy__devcache_take(&c, 64), block(0));
    ck_assert_int_eq(convoy__devcache_keep(&c, block(99), 64 * 100), 1);
    ck_assert_ptr_eq(convoy__devcache_take(&c, 64 * 100), block(99));
    freed = 0;
    convoy__devcache_drain(&c, count_free, NULL);
    ck_assert_int_eq(freed, CONVOY__DEVCACHE_CLASSES - 1);
    convoy__devcache_fini(&c);
}
END_TEST

static void *g_seen[8]; /* the memory each task saw as its flow, by task id */

/* Adds 1 to every word of the task's flow, and notes where the flow was. */
static int add_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    uint32_t *w = t->flows[0];
    if (t->task_id < 8)
        g_seen[t->task_id] = w;
    for (size_t i = 0; i < t->flow_bytes[0] / sizeof(*w); i++)
        w[i] += 1;
    return 0;
}

typedef struct env {
    convoy_context_t *ctx;
    convoy_class_t *add;
    convoy__device_t *dev;
} env_t;

static void env_init(env_t *e, const char *memory, const char *cache)
{
    const char *kv[] = {"devices",       "sim",  "nthreads",     "2",   "bind",  "0",
                        "sim_submit_us", "0",    "sim_copy_us",  "0",   "sched", "batch",
                        "sim_memory",    memory, "device_cache", cache, NULL};
    e->ctx = tu_init(kv);
    convoy_access_t rw = CONVOY_RW;
    ck_assert_int_eq(convoy_class_new(e->ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &e->add), 0);
    ck_assert_int_eq(convoy_class_set_chore(e->add, CONVOY_DEVICE_SIM, add_chore), 0);
    e->dev = convoy__ctx_accel(e->ctx, 0);
}

/* n data of bytes each (buffers from malloc, zeroed), a task each adding 1; waited for. */
static void round_of(env_t *e, int n, size_t bytes, uint32_t **buf, convoy_data_t **d)
{
    for (int i = 0; i < n; i++) {
        buf[i] = calloc(1, bytes);
        ck_assert_ptr_nonnull(buf[i]);
        ck_assert_int_eq(convoy_data_new(e->ctx, buf[i], bytes, &d[i]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_task_insert(e->ctx, e->add, NULL, 0, &d[i]), CONVOY_SUCCESS);
    }
    ck_assert_msg(convoy_wait(e->ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e->ctx));
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(convoy_data_acquire(d[i], CONVOY_READ), CONVOY_SUCCESS);
        for (size_t k = 0; k < bytes / sizeof(uint32_t); k++)
            ck_assert_msg(buf[i][k] == 1, "datum %d word %zu is %u", i, k, buf[i][k]);
    }
}

static void free_round(env_t *e, int n, uint32_t **buf, convoy_data_t **d)
{
    for (int i = 0; i < n; i++)
        convoy_data_free(d[i]);
    convoy__wait_quiet(e->ctx);
    for (int i = 0; i < n; i++)
        free(buf[i]);
}

static convoy__sim_counters_t counters(env_t *e)
{
    convoy__sim_counters_t c;
    convoy__sim_get_counters(e->dev, &c);
    return c;
}

static int peek_chore(const convoy_task_view_t *t, void *s)
{
    (void)t;
    (void)s;
    return 0;
}

/* The copies on dev: every one (written 0), or those on its list of written copies. */
static int copies(const convoy__device_t *dev, int written)
{
    const convoy__pipe_t *p = dev->pipeline;
    int n = 0;
    for (const convoy__devcopy_t *c = written ? p->mem.written : p->mem.all; c != NULL;
         c = written ? c->written_next : c->all_next)
        n++;
    return n;
}

/* The host bytes of data [0, n) against their expected words. */
static void expect_words(convoy_data_t **d, uint32_t **buf, int n, size_t bytes,
                         const uint32_t *want, int round)
{
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(convoy_data_acquire(d[i], CONVOY_READ), CONVOY_SUCCESS);
        for (size_t k = 0; k < bytes / sizeof(uint32_t); k++)
            ck_assert_msg(buf[i][k] == want[i], "round %d: datum %d word %zu is %u, not %u", round,
                          i, k, buf[i][k], want[i]);
    }
}

/*
 * A wait's flush-all walks only the copies tasks wrote on the device, not the ones they
 * only read, and a written copy leaves that list once its pushout home has landed, until
 * a task writes it again. Round 1: 40 tasks read a datum each and 24 write one: 64 copies
 * on the device, 24 on the list; the wait brings the 24 results home and the list is
 * empty. Round 2 writes data 0-7 again: those 8 join the list, and leave it at the wait.
 * Round 3 does the same with data 8-11. Every round's results come home intact.
 */
START_TEST(flush_walks_only_written_copies)
{
    enum { W = 24, R = 40 };
    const size_t bytes = 4096;
    env_t e;
    env_init(&e, "1G", "1G");
    convoy_class_t *peek;
    convoy_access_t ro = CONVOY_READ;
    ck_assert_int_eq(convoy_class_new(e.ctx, "peek", 1, &ro, CONVOY_CLASS_BATCHABLE, &peek), 0);
    ck_assert_int_eq(convoy_class_set_chore(peek, CONVOY_DEVICE_SIM, peek_chore), 0);
    static uint32_t *buf[W + R];
    static convoy_data_t *d[W + R];
    static uint32_t want[W + R];
    for (int i = 0; i < W + R; i++) {
        buf[i] = calloc(1, bytes);
        ck_assert_ptr_nonnull(buf[i]);
        ck_assert_int_eq(convoy_data_new(e.ctx, buf[i], bytes, &d[i]), CONVOY_SUCCESS);
        want[i] = 0;
    }
    const int first[] = {0, 0, 8}, count[] = {W + R, 8, 4}, listed[] = {W, 8, 4};
    for (int round = 1; round <= 3; round++) {
        for (int i = first[round - 1]; i < first[round - 1] + count[round - 1]; i++) {
            ck_assert_int_eq(convoy_task_insert(e.ctx, i < W ? e.add : peek, NULL, 0, &d[i]),
                             CONVOY_SUCCESS);
            want[i] += i < W;
        }
        convoy__wait_quiet(e.ctx); /* done, nothing pushed home yet */
        ck_assert_int_eq(copies(e.dev, 0), W + R);
        ck_assert_int_eq(copies(e.dev, 1), listed[round - 1]);
        ck_assert_msg(convoy_wait(e.ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(e.ctx));
        ck_assert_int_eq(copies(e.dev, 1), 0);
        expect_words(d, buf, W + R, bytes, want, round);
    }
    for (int i = 0; i < W + R; i++)
        convoy_data_free(d[i]);
    convoy_fini(e.ctx);
    for (int i = 0; i < W + R; i++)
        free(buf[i]);
}
END_TEST

/* A copy whose pushout home fails when it runs (sim_fail_async_home: the first copy
 * device to host) stays dirty and on the written list: the wait reports the failure,
 * the host keeps its old bytes, and the next wait pushes the copy again and brings its
 * version home. */
START_TEST(failed_pushout_stays_listed)
{
    /* clang-format off */
    const char *kv[] = {"devices", "sim", "nthreads", "1", "bind", "0", "sched", "batch",
                        "sim_submit_us", "0", "sim_copy_us", "0", "sim_fail_async_home", "1",
                        "verbose", "error", NULL};
    /* clang-format on */
    env_t e = {.ctx = tu_init(kv)};
    convoy_context_t *ctx = e.ctx;
    convoy_access_t rw = CONVOY_RW;
    ck_assert_int_eq(convoy_class_new(ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &e.add), 0);
    ck_assert_int_eq(convoy_class_set_chore(e.add, CONVOY_DEVICE_SIM, add_chore), 0);
    e.dev = convoy__ctx_accel(ctx, 0);
    static uint32_t a[1024];
    a[0] = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, a, sizeof(a), &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, e.add, NULL, 0, &d), CONVOY_SUCCESS);
    convoy__wait_quiet(ctx); /* done, nothing pushed home yet */
    ck_assert_int_eq(copies(e.dev, 1), 1);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED);
    ck_assert_msg(strstr(convoy_last_error(ctx), "sim_fail_async_home") != NULL, "%s",
                  convoy_last_error(ctx));
    ck_assert_uint_eq(counters(&e).submissions[CONVOY__D2H], 1);
    ck_assert_int_eq(copies(e.dev, 1), 1);
    ck_assert_uint_eq(a[0], 0);
    ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    ck_assert_uint_eq(counters(&e).submissions[CONVOY__D2H], 2);
    ck_assert_int_eq(copies(e.dev, 1), 0);
    ck_assert_uint_eq(a[0], 1);
    convoy_data_free(d);
    convoy_fini(ctx);
}
END_TEST

/* The copies of freed data serve the next round of their size: no device allocation,
 * and every result intact. */
START_TEST(freed_copies_serve_next_data)
{
    enum { N = 48 };
    const size_t bytes = 8192;
    env_t e;
    env_init(&e, "1G", "1G");
    static uint32_t *buf[N];
    static convoy_data_t *d[N];
    round_of(&e, N, bytes, buf, d);
    free_round(&e, N, buf, d);
    ck_assert_uint_eq(convoy__pipeline_cached_bytes(e.dev), N * bytes);
    convoy__sim_counters_t before = counters(&e);
    round_of(&e, N, bytes, buf, d);
    convoy__sim_counters_t after = counters(&e);
    ck_assert_msg(after.allocs == before.allocs, "%llu device allocations for a size held",
                  (unsigned long long)(after.allocs - before.allocs));
    ck_assert_uint_eq(convoy__pipeline_cached_bytes(e.dev), 0);
    free_round(&e, N, buf, d);
    convoy_fini(e.ctx);
}
END_TEST

/* The cache holds a quarter of a small device (of the twice as much freed) in blocks of
 * one size; data of another size then get the memory (the cache gives it back) with
 * nothing evicted and no task failed. */
START_TEST(other_size_gets_cached_memory)
{
    enum { N = 26 };
    env_t e;
    env_init(&e, "256K", "1G"); /* the cache may hold a quarter: 64 KiB */
    static uint32_t *buf[N];
    static convoy_data_t *d[N];
    round_of(&e, 16, 8192, buf, d);
    free_round(&e, 16, buf, d);
    ck_assert_uint_eq(convoy__pipeline_cached_bytes(e.dev), 64 * 1024); /* of 128 KiB freed */
    /* 26 x 8000 bytes = 208000: fits only with the cache's 64 KiB given back. */
    round_of(&e, N, 8000, buf, d);
    convoy_stats_t s;
    convoy_get_stats(e.ctx, &s);
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_uint_eq(s.tasks_failed, 0);
    ck_assert_uint_eq(convoy__pipeline_cached_bytes(e.dev), 0);
    free_round(&e, N, buf, d);
    convoy_fini(e.ctx);
}
END_TEST

/* device_cache=0: freed data give all their device memory back. */
START_TEST(cache_off_keeps_nothing)
{
    enum { N = 16 };
    env_t e;
    env_init(&e, "1G", "0");
    static uint32_t *buf[N];
    static convoy_data_t *d[N];
    round_of(&e, N, 4096, buf, d);
    free_round(&e, N, buf, d);
    ck_assert_uint_eq(convoy__pipeline_cached_bytes(e.dev), 0);
    ck_assert_uint_eq(counters(&e).bytes_in_use, 0);
    convoy_fini(e.ctx);
}
END_TEST

/* Memory that a transfer may still touch is never handed out again, and nothing is lost:
 * a stage-in into a written datum's fresh buffer, or a launch, whose end cannot be proven
 * (no event after it, its stream not waited for: sim_fail_record from the _i-th record on,
 * sim_fail_sync) keeps that buffer out of use, and the datum's copy keeps the newest
 * version. Three tasks add 1 to one datum (each from the second on writing a fresh buffer,
 * which the cache then serves); the failure comes at records 3 to 6 (the second task's
 * stage-in or launch, the third's stage-in or launch). Then a task on another datum gets
 * none of the memory the first datum's tasks saw, the cache holds nothing the failure
 * touched, and a fourth task on the first datum runs and finds the version the failure
 * left. Before: the kept fresh buffer went to the cache and the next task of its size was
 * given it; after a failed launch the copy lost its version, and the fourth task failed
 * ("datum 0's newest version is on accelerator 0, not in host memory"). From _i = 4 on,
 * every launch starts 20 ms late (sim_launch_late_us), so that a launch not proven over
 * runs after its task has failed: the task stays in memory for it (before, the chore
 * read the freed task: a use-after-free that ThreadSanitizer caught now and then). */
START_TEST(unproven_transfer_memory_not_reused)
{
    char rec[16];
    snprintf(rec, sizeof(rec), "%d", 3 + _i % 4);
    /* clang-format off */
    const char *kv[] = {"devices", "sim", "nthreads", "1", "bind", "0", "sched", "fifo",
                        "sim_submit_us", "0", "sim_copy_us", "0",
                        "sim_fail_record", rec, "sim_fail_records", "2000000000",
                        "sim_fail_sync", "1", "sim_launch_late_us", _i < 4 ? "0" : "20000",
                        "verbose", "error", NULL};
    /* clang-format on */
    convoy_context_t *ctx = tu_init(kv);
    convoy_class_t *add;
    convoy_access_t rw = CONVOY_RW;
    ck_assert_int_eq(convoy_class_new(ctx, "add", 1, &rw, 0, &add), 0);
    ck_assert_int_eq(convoy_class_set_chore(add, CONVOY_DEVICE_SIM, add_chore), 0);
    convoy__device_t *dev = convoy__ctx_accel(ctx, 0);
    static uint32_t a[2048], b[2048];
    a[0] = b[0] = 0;
    convoy_data_t *d, *e;
    ck_assert_int_eq(convoy_data_new(ctx, a, sizeof(a), &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_new(ctx, b, sizeof(b), &e), CONVOY_SUCCESS);
    memset(g_seen, 0, sizeof(g_seen));
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, add, NULL, 0, &d), CONVOY_SUCCESS);
    convoy__wait_quiet(ctx);
    ck_assert_uint_eq(convoy__pipeline_cached_bytes(dev), 0);
    ck_assert_int_eq(convoy_task_insert(ctx, add, NULL, 0, &e), CONVOY_SUCCESS);
    ck_assert_int_ne(convoy_wait(ctx), CONVOY_SUCCESS); /* reports the failure */
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    ck_assert_ptr_nonnull(g_seen[3]);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(g_seen[3] != g_seen[i],
                      "the task on another datum was given %p, which "
                      "task %d used",
                      g_seen[3], i);
    ck_assert_int_eq(convoy_task_insert(ctx, add, NULL, 0, &d), CONVOY_SUCCESS);
    ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    (void)convoy_data_acquire(d, CONVOY_READ); /* reports the earlier writer's failure */
    ck_assert_int_eq(convoy_data_acquire(e, CONVOY_READ), CONVOY_SUCCESS);
    uint64_t done_before = 3 - s.tasks_failed - s.tasks_cancelled;
    ck_assert_msg(a[0] == done_before + 1, "datum 0 holds %u after %llu tasks done", a[0],
                  (unsigned long long)(done_before + 1));
    ck_assert_uint_eq(b[0], 1);
    convoy_data_free(d);
    convoy_data_free(e);
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("devcache");
    TCase *tc = tu_tcase(s, "cache", 30);
    tcase_add_test(tc, takes_exact_size_last_first);
    tcase_add_test(tc, keeps_within_its_bounds);
    tcase_add_test(tc, bounded_number_of_sizes);
    tc = tu_tcase(s, "sim", 60);
    tcase_add_test(tc, freed_copies_serve_next_data);
    tcase_add_test(tc, other_size_gets_cached_memory);
    tcase_add_test(tc, cache_off_keeps_nothing);
    tcase_add_loop_test(tc, unproven_transfer_memory_not_reused, 0, 8);
    tcase_add_test(tc, flush_walks_only_written_copies);
    tcase_add_test(tc, failed_pushout_stays_listed);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
