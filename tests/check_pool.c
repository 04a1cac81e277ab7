/*
 * check_pool: the pools of task records and data handles (src/pool.c). A record is
 * line-aligned and has whole lines to itself; one given back is handed out again, so a
 * pool that is taken from and given back to in turns stops growing; records given back
 * by other threads while one takes are handed out again, never to two holders at once.
 * In a context: tasks and data handles, freed on the program's thread and on the sim
 * device's progress thread (drops), come back from their pools round after round, so the
 * pools hold about one round's peak, not every round's records. A pool carves first and
 * then hands back the oldest record first; a record never given back is counted when the
 * pool is destroyed. A record's lines asked for ahead of writes keep its bytes. In builds with
 * AddressSanitizer the pools hand each record out on its own (CONVOY__POOL_BYPASS), and
 * only what does not depend on reuse is checked.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/context.h"
#include "src/core.h"
#include "src/pool.h"
#include "tests/test_util.h"

/* Line-aligned records of whole lines, distinct and writable to their last byte. */
START_TEST(records_are_whole_lines)
{
    convoy__pool_t p;
    convoy__pool_init(&p, 100, "test records");
    ck_assert_uint_eq(p.size, 2 * CONVOY__LINE);
    enum { N = 100 };
    char *r[N];
    for (int i = 0; i < N; i++) {
        r[i] = convoy__pool_get(&p);
        ck_assert_ptr_nonnull(r[i]);
        ck_assert_uint_eq((uintptr_t)r[i] % CONVOY__LINE, 0);
        memset(r[i], i, p.size);
    }
    for (int i = 0; i < N; i++)
        for (size_t b = 0; b < p.size; b++)
            REQUIRE(r[i][b] == (char)i, "record %d byte %zu was overwritten", i, b);
    for (int i = 0; i < N; i++)
        convoy__pool_put(&p, r[i]);
    convoy__pool_put(&p, NULL);
    convoy__pool_destroy(&p);
    convoy__pool_destroy(&p); /* a second destroy does nothing */
}
END_TEST

/* Taken and given back in turns, a pool hands out the same records: it carves no more
 * than the chunks that the most ever held at once needed. */
START_TEST(given_back_records_come_back)
{
    if (CONVOY__POOL_BYPASS)
        return;
    convoy__pool_t p;
    convoy__pool_init(&p, 64, "test records");
    void *held[40];
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 40; i++)
            held[i] = convoy__pool_get(&p);
        for (int i = 0; i < 40; i++)
            convoy__pool_put(&p, held[i]);
    }
    ck_assert_uint_eq(p.carved, 16 + 32); /* two chunks hold the 40: nothing more */
    convoy__pool_destroy(&p);
}
END_TEST

/* One thread takes records and hands each to one of the givers, which gives it back:
 * a record handed out is never held twice, and the pool stays within what was out. */
enum { GIVERS = 3, SLOTS = 64 };
#define HELD 0x48454c4448454c44ull /* a held record's mark: not what fresh memory holds */

typedef struct giver {
    convoy__pool_t *pool;
    _Atomic(uint64_t *) slot[SLOTS]; /* records to give back, NULL: empty */
    atomic_int stop;
} giver_t;

static void *giver_main(void *arg)
{
    giver_t *g = arg;
    for (;;) {
        /* Read before the scan: every record was handed over before stop was set, so a
         * scan after stop was seen finds every one left. */
        int stopping = atomic_load(&g->stop);
        int any = 0;
        for (int i = 0; i < SLOTS; i++) {
            uint64_t *r = atomic_exchange(&g->slot[i], NULL);
            if (r == NULL)
                continue;
            any = 1;
            REQUIRE(r[1] == HELD, "a record was given back while not held (mark %llx)",
                    (unsigned long long)r[1]);
            r[1] = 0;
            convoy__pool_put(g->pool, r);
        }
        if (!any && stopping)
            return NULL;
    }
}

START_TEST(records_given_back_by_other_threads)
{
    convoy__pool_t p;
    convoy__pool_init(&p, 2 * sizeof(uint64_t), "test records");
    giver_t g[GIVERS];
    pthread_t th[GIVERS];
    for (int k = 0; k < GIVERS; k++) {
        g[k].pool = &p;
        for (int i = 0; i < SLOTS; i++)
            atomic_init(&g[k].slot[i], NULL);
        atomic_init(&g[k].stop, 0);
        ck_assert_int_eq(pthread_create(&th[k], NULL, giver_main, &g[k]), 0);
    }
    int n = tu_scaled(200000, 5000);
    for (int i = 0; i < n; i++) {
        uint64_t *r = convoy__pool_get(&p);
        REQUIRE(r != NULL, "no record at %d", i);
        /* Word 1 marks a held record (word 0 is the pool's link while given back). */
        REQUIRE(CONVOY__POOL_BYPASS || r[1] != HELD, "record %p handed out twice", (void *)r);
        r[1] = HELD;
        giver_t *to = &g[i % GIVERS];
        _Atomic(uint64_t *) *s = &to->slot[(i / GIVERS) % SLOTS];
        uint64_t *expect = NULL;
        while (!atomic_compare_exchange_weak(s, &expect, r))
            expect = NULL; /* the giver has not emptied this slot yet */
    }
    for (int k = 0; k < GIVERS; k++) {
        atomic_store(&g[k].stop, 1);
        pthread_join(th[k], NULL);
    }
    /* Out at once at most: every slot full, one record in this thread's hand and one in
     * each giver's, taken from its slot and not given back yet; and a chunk carved
     * before reuse (at most 1024 records). */
    if (!CONVOY__POOL_BYPASS)
        ck_assert_uint_le(p.carved, GIVERS * SLOTS + 1 + GIVERS + 1024);
    ck_assert_uint_eq(convoy__pool_destroy(&p), 0);
}
END_TEST

/* A record given back comes back only once the chunk is carved out, the oldest given
 * back first. */
START_TEST(late_reuse_is_oldest_first_after_carving)
{
    if (CONVOY__POOL_BYPASS)
        return;
    convoy__pool_t p;
    convoy__pool_init(&p, 64, "test records");
    void *r[16];
    r[0] = convoy__pool_get(&p);
    convoy__pool_put(&p, r[0]);
    for (int i = 1; i < 16; i++) { /* the first chunk's 15 others, none of them r[0] */
        r[i] = convoy__pool_get(&p);
        ck_assert_ptr_ne(r[i], r[0]);
    }
    convoy__pool_put(&p, r[3]);
    convoy__pool_put(&p, r[1]);
    ck_assert_ptr_eq(convoy__pool_get(&p), r[0]);
    convoy__pool_put(&p, r[2]);
    ck_assert_ptr_eq(convoy__pool_get(&p), r[3]);
    ck_assert_ptr_eq(convoy__pool_get(&p), r[1]);
    ck_assert_ptr_eq(convoy__pool_get(&p), r[2]);
    ck_assert_uint_eq(p.carved, 16);
    void *next = convoy__pool_get(&p); /* none left: a new chunk */
    ck_assert_uint_eq(p.carved, 17);
    for (int i = 0; i < 16; i++)
        convoy__pool_put(&p, r[i]);
    convoy__pool_put(&p, next);
    ck_assert_uint_eq(convoy__pool_destroy(&p), 0);
}
END_TEST

/* A record never given back is counted at destroy (its chunk is left allocated, where a
 * leak checker sees it). */
START_TEST(destroy_counts_records_not_given_back)
{
    convoy__pool_t p;
    convoy__pool_init(&p, 64, "test records");
    void *a = convoy__pool_get(&p), *b = convoy__pool_get(&p), *c = convoy__pool_get(&p);
    convoy__pool_put(&p, a);
    convoy__pool_put(&p, c);
    if (CONVOY__POOL_BYPASS) {
        ck_assert_uint_eq(convoy__pool_destroy(&p), 0); /* each its own allocation */
        free(b);
        return;
    }
    ck_assert_uint_eq(convoy__pool_destroy(&p), 1);
}
END_TEST

static int add_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    ((uint32_t *)t->flows[2])[0] += 1; /* the written flow; the two others are read */
    return 0;
}

static size_t carved(convoy_context_t *ctx)
{
    size_t n = ctx->data_pool.carved;
    for (size_t k = 0; k < CONVOY__TASK_POOLS; k++)
        n += ctx->task_pools[k].carved;
    return n;
}

/* Rounds of new data, tasks on them, a wait and the data freed (their drops on the
 * device's thread): the records come back, so the pools stop growing after the first
 * rounds, and every round's results are right. */
static void rounds_reuse_records(const char *sched)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, sched);
    convoy_context_t *ctx = tu_init(ps.kv);
    convoy_access_t modes[3] = {CONVOY_READ, CONVOY_READ, CONVOY_RW};
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "add", 3, modes, CONVOY_CLASS_BATCHABLE, &cls), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, add_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, add_chore), 0);
    enum { D = 300, ROUNDS = 12 };
    static uint32_t buf[D][16];
    size_t after_two = 0;
    for (int round = 0; round < ROUNDS; round++) {
        convoy_data_t *d[D];
        memset(buf, 0, sizeof(buf));
        for (int i = 0; i < D; i++)
            ck_assert_int_eq(convoy_data_new(ctx, buf[i], sizeof(buf[i]), &d[i]), 0);
        for (int i = 0; i < D; i++) {
            convoy_data_t *f[3] = {d[(i + 1) % D], d[(i + 2) % D], d[i]};
            ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, f), CONVOY_SUCCESS);
        }
        ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
        for (int i = 0; i < D; i++) {
            ck_assert_int_eq(convoy_data_acquire(d[i], CONVOY_READ), CONVOY_SUCCESS);
            REQUIRE(buf[i][0] == 1, "round %d: datum %d is %u", round, i, buf[i][0]);
        }
        for (int i = 0; i < D; i++)
            convoy_data_free(d[i]);
        convoy__wait_quiet(ctx);
        if (round == 1)
            after_two = carved(ctx);
    }
    if (!CONVOY__POOL_BYPASS) {
        ck_assert_uint_gt(after_two, 0);
        /* Without reuse each round would add its D handles, D tasks and D drops (9000 in
         * all); with it, each of the three pools carves at most the rest of its chunk. */
        ck_assert_msg(carved(ctx) <= after_two + 3 * 1024,
                      "the pools grew from %zu records after two rounds to %zu after %d", after_two,
                      carved(ctx), ROUNDS);
    }
    convoy_fini(ctx);
}

START_TEST(rounds_reuse_records_batch)
{
    rounds_reuse_records("batch");
}
END_TEST

START_TEST(rounds_reuse_records_fifo)
{
    rounds_reuse_records("fifo");
}
END_TEST

/* Does Linux say this CPU has PREFETCHW? -1: it does not say (no /proc/cpuinfo). */
static int cpuinfo_prefetchw(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return -1;
    static char line[16384];
    int has = -1;
    while (has < 0 && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "flags", 5) == 0)
            has = strstr(line, " 3dnowprefetch") != NULL;
    fclose(f);
    return has;
}

/* Records' lines asked for ahead of writes (convoy__prefetch_w): the CPU's PREFETCHW is
 * found as Linux reports it (the flag 3dnowprefetch), and asking for a span of a record,
 * at any alignment and up to its last byte, leaves every byte as it was. */
START_TEST(prefetches_find_the_cpu_and_keep_bytes)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    int has = cpuinfo_prefetchw();
    if (has >= 0)
        ck_assert_int_eq(convoy__cpu_prefetchw, has);
#endif
    convoy__pool_t p;
    convoy__pool_init(&p, 4 * CONVOY__LINE, "test records");
    unsigned char *r = convoy__pool_get(&p);
    ck_assert_ptr_nonnull(r);
    for (size_t i = 0; i < p.size; i++)
        r[i] = (unsigned char)(i * 7 + 1);
    static const size_t spans[] = {1, 8, 63, 64, 65, 176};
    for (size_t k = 0; k < sizeof(spans) / sizeof(spans[0]); k++)
        for (size_t off = 0; off + spans[k] <= p.size; off++)
            convoy__prefetch_w(r + off, spans[k]);
    for (size_t i = 0; i < p.size; i++)
        ck_assert_uint_eq(r[i], (unsigned char)(i * 7 + 1));
    convoy__pool_put(&p, r);
    convoy__pool_destroy(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tu_tcase(s, "pool", 60);
    tcase_add_test(tc, records_are_whole_lines);
    tcase_add_test(tc, given_back_records_come_back);
    tcase_add_test(tc, records_given_back_by_other_threads);
    tcase_add_test(tc, late_reuse_is_oldest_first_after_carving);
    tcase_add_test(tc, destroy_counts_records_not_given_back);
    tcase_add_test(tc, rounds_reuse_records_batch);
    tcase_add_test(tc, rounds_reuse_records_fifo);
    tcase_add_test(tc, prefetches_find_the_cpu_and_keep_bytes);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
