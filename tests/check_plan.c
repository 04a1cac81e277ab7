/*
 * check_plan: unit tests of the batch scheduler's copy plan, convoy__batch_plan
 * (sched/batch/batch_plan.c; DESIGN.md, "The copy plan"). No runtime is started: the
 * plan is a pure function of the limits, the device's max_batch and the copies.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "sched/batch/batch.h"
#include "tests/test_util.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* A planned stage: the copies (reordered in place by the plan) and the submissions. */
typedef struct planned {
    convoy__copy_t *copies;
    convoy__submission_t *subs;
    int n;
    int nsubs;
} planned_t;

static convoy__batch_limits_t limits(int max_copies, size_t max_bytes, size_t split_bytes)
{
    return (convoy__batch_limits_t){.max_tasks = 256,
                                    .max_wait_ns = 50000,
                                    .max_copies = max_copies,
                                    .max_bytes = max_bytes,
                                    .split_bytes = split_bytes};
}

/* Copies tagged 0..n-1 in order, with the given sizes; dst/src are never touched. */
static planned_t make_copies(const size_t *bytes, int n)
{
    planned_t p = {.n = n};
    p.copies = calloc((size_t)n, sizeof(*p.copies));
    /* Poisoned beyond what the plan may fill, so that a stray write shows. */
    p.subs = malloc((size_t)n * sizeof(*p.subs));
    ck_assert(p.copies != NULL && p.subs != NULL);
    memset(p.subs, 0xa5, (size_t)n * sizeof(*p.subs));
    static char dummy;
    for (int i = 0; i < n; i++)
        p.copies[i] = (convoy__copy_t){
            .dst = &dummy, .src = &dummy, .bytes = bytes[i], .dir = CONVOY__H2D, .tag = i};
    return p;
}

static planned_t make_uniform(int n, size_t bytes)
{
    size_t *b = malloc((size_t)n * sizeof(*b));
    ck_assert(b != NULL);
    for (int i = 0; i < n; i++)
        b[i] = bytes;
    planned_t p = make_copies(b, n);
    free(b);
    return p;
}

static void run_plan(planned_t *p, const convoy__batch_limits_t *lim, const convoy__device_t *dev)
{
    convoy__plan_t plan = {.subs = p->subs, .nsubs = -1};
    convoy__batch_plan(lim, dev, p->copies, p->n, &plan);
    ck_assert_ptr_eq(plan.subs, p->subs);
    p->nsubs = plan.nsubs;
}

static void planned_free(planned_t *p)
{
    free(p->copies);
    free(p->subs);
}

/*
 * The invariants every plan must satisfy, whatever the input:
 *  - the submissions cover copies[0..n) contiguously, in issue order, none empty;
 *  - the copies are a permutation of the input (tags), small ones in their original
 *    relative order, then large ones in theirs (a stable partition);
 *  - every large copy (> split_bytes, split on) travels alone, flagged split, after
 *    every small one; no small submission is flagged;
 *  - small submissions hold at most min(max_copies, max_batch) copies and at most
 *    max_bytes bytes, unless a single copy is larger than max_bytes on its own;
 *  - each submission's bytes is the sum of its copies' bytes;
 *  - packing is greedy: a small submission is closed only because it is full (count
 *    cap, or the next small copy would pass max_bytes) or the small copies ran out.
 * orig_bytes[tag] is the size each tag had.
 */
static void check_invariants(const planned_t *p, const convoy__batch_limits_t *lim,
                             const convoy__device_t *dev, const size_t *orig_bytes)
{
    int cap = lim->max_copies;
    if (dev != NULL && dev->max_batch > 0 && dev->max_batch < cap)
        cap = dev->max_batch;
    REQUIRE(p->nsubs >= (p->n > 0 ? 1 : 0), "%d submissions for %d copies", p->nsubs, p->n);
    REQUIRE(p->nsubs <= p->n, "%d submissions for %d copies", p->nsubs, p->n);
    char *seen = calloc((size_t)p->n, 1);
    REQUIRE(seen != NULL, "out of memory");
    int next = 0, last_small_tag = -1, last_large_tag = -1, in_large = 0;
    for (int k = 0; k < p->nsubs; k++) {
        const convoy__submission_t *s = &p->subs[k];
        REQUIRE(s->first == next, "submission %d starts at %d, expected %d", k, s->first, next);
        REQUIRE(s->count >= 1, "submission %d is empty", k);
        size_t sum = 0;
        for (int j = s->first; j < s->first + s->count; j++) {
            const convoy__copy_t *c = &p->copies[j];
            REQUIRE(c->tag >= 0 && c->tag < p->n, "copy %d has tag %d", j, c->tag);
            REQUIRE(!seen[c->tag], "copy %d appears twice", c->tag);
            seen[c->tag] = 1;
            REQUIRE(c->bytes == orig_bytes[c->tag], "copy %d changed size", c->tag);
            int large = lim->split_bytes > 0 && c->bytes > lim->split_bytes;
            if (large) {
                REQUIRE(c->tag > last_large_tag, "large copies out of their order");
                last_large_tag = c->tag;
                in_large = 1;
            } else {
                REQUIRE(!in_large, "small copy %d is issued after a large one", c->tag);
                REQUIRE(c->tag > last_small_tag, "small copies out of their order");
                last_small_tag = c->tag;
            }
            sum += c->bytes;
        }
        REQUIRE(s->bytes == sum, "submission %d: bytes %zu, its copies sum to %zu", k, s->bytes,
                sum);
        const convoy__copy_t *c0 = &p->copies[s->first];
        int large = lim->split_bytes > 0 && c0->bytes > lim->split_bytes;
        if (large) {
            REQUIRE(s->count == 1 && s->split == 1,
                    "large copy %d: submission of %d copies, split %d", c0->tag, s->count,
                    s->split);
        } else {
            REQUIRE(s->split == 0, "small submission %d is flagged split", k);
            REQUIRE(s->count <= cap, "submission %d holds %d copies, cap %d", k, s->count, cap);
            REQUIRE(s->bytes <= lim->max_bytes || s->count == 1,
                    "submission %d: %d copies, %zu bytes over max_bytes %zu", k, s->count, s->bytes,
                    lim->max_bytes);
            /* Greedy: closed only when full or when the small copies end. */
            int end = s->first + s->count;
            if (end < p->n) {
                const convoy__copy_t *nx = &p->copies[end];
                int nx_large = lim->split_bytes > 0 && nx->bytes > lim->split_bytes;
                if (!nx_large)
                    REQUIRE(s->count == cap || s->bytes + nx->bytes > lim->max_bytes,
                            "submission %d (%d copies, %zu bytes) was closed before the "
                            "next copy (%zu bytes) needed it",
                            k, s->count, s->bytes, nx->bytes);
            }
        }
        next = s->first + s->count;
    }
    REQUIRE(next == p->n, "the submissions cover %d of %d copies", next, p->n);
    free(seen);
}

static size_t *bytes_of(const planned_t *p)
{
    size_t *b = malloc((size_t)p->n * sizeof(*b));
    ck_assert(b != NULL);
    for (int i = 0; i < p->n; i++)
        b[p->copies[i].tag] = p->copies[i].bytes;
    return b;
}

/* The DESIGN.md tiny-task case: 256 tasks x 3 inputs of 8 KiB with at most 128 copies
 * per submission is 6 submissions of 128 copies and 1 MiB each, in the given order. */
START_TEST(test_plan_tiny_tasks)
{
    planned_t p = make_uniform(256 * 3, 8 * KiB);
    size_t *orig = bytes_of(&p);
    convoy__batch_limits_t lim = limits(128, 4 * MiB, 1 * MiB);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 6);
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(p.subs[k].first, 128 * k);
        ck_assert_int_eq(p.subs[k].count, 128);
        ck_assert_uint_eq(p.subs[k].bytes, 128 * 8 * KiB);
        ck_assert_int_eq(p.subs[k].split, 0);
    }
    for (int i = 0; i < p.n; i++)
        ck_assert_int_eq(p.copies[i].tag, i);
    check_invariants(&p, &lim, NULL, orig);
    free(orig);
    planned_free(&p);
}
END_TEST

/* max_bytes bounds a submission: 8 KiB copies under a 20 KiB bound go two by two; a
 * bound met exactly is allowed; a single copy larger than the bound (but not large
 * enough to split) travels alone, unflagged. */
START_TEST(test_plan_max_bytes)
{
    convoy__batch_limits_t lim = limits(512, 20 * KiB, 1 * MiB);
    planned_t p = make_uniform(5, 8 * KiB);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 3);
    ck_assert_int_eq(p.subs[0].count, 2);
    ck_assert_int_eq(p.subs[1].count, 2);
    ck_assert_int_eq(p.subs[2].count, 1);
    ck_assert_uint_eq(p.subs[0].bytes, 16 * KiB);
    ck_assert_uint_eq(p.subs[2].bytes, 8 * KiB);
    planned_free(&p);

    /* Exactly max_bytes fits. */
    lim = limits(512, 16 * KiB, 1 * MiB);
    p = make_uniform(4, 8 * KiB);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 2);
    ck_assert_int_eq(p.subs[0].count, 2);
    ck_assert_uint_eq(p.subs[0].bytes, 16 * KiB);
    planned_free(&p);

    /* 4 KiB, 16 KiB (over the 10 KiB bound, under the split), 4 KiB, 4 KiB. */
    lim = limits(512, 10 * KiB, 1 * MiB);
    const size_t sizes[] = {4 * KiB, 16 * KiB, 4 * KiB, 4 * KiB};
    p = make_copies(sizes, 4);
    size_t *orig = bytes_of(&p);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 3);
    ck_assert_int_eq(p.subs[0].count, 1);
    ck_assert_int_eq(p.subs[1].count, 1);
    ck_assert_uint_eq(p.subs[1].bytes, 16 * KiB);
    ck_assert_int_eq(p.subs[1].split, 0);
    ck_assert_int_eq(p.subs[2].count, 2);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(p.copies[i].tag, i);
    check_invariants(&p, &lim, NULL, orig);
    free(orig);
    planned_free(&p);
}
END_TEST

/* Copies over split_bytes go after all the small ones, each alone and flagged split,
 * small and large each keeping their relative order; a copy of exactly split_bytes is
 * small. */
START_TEST(test_plan_split)
{
    convoy__batch_limits_t lim = limits(512, 4 * MiB, 1 * MiB);
    const size_t sizes[] = {8 * KiB, 64 * MiB, 8 * KiB, 2 * MiB, 1 * MiB, 1 * MiB + 1, 8 * KiB};
    planned_t p = make_copies(sizes, 7);
    size_t *orig = bytes_of(&p);
    run_plan(&p, &lim, NULL);
    /* Small: tags 0, 2, 4 (exactly 1 MiB), 6 in one submission (3 MiB + 24 KiB). */
    ck_assert_int_eq(p.nsubs, 4);
    ck_assert_int_eq(p.subs[0].count, 4);
    ck_assert_int_eq(p.subs[0].split, 0);
    ck_assert_uint_eq(p.subs[0].bytes, 24 * KiB + 1 * MiB);
    const int small_tags[] = {0, 2, 4, 6}, large_tags[] = {1, 3, 5};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(p.copies[i].tag, small_tags[i]);
    for (int k = 0; k < 3; k++) {
        const convoy__submission_t *s = &p.subs[1 + k];
        ck_assert_int_eq(s->first, 4 + k);
        ck_assert_int_eq(s->count, 1);
        ck_assert_int_eq(s->split, 1);
        ck_assert_int_eq(p.copies[s->first].tag, large_tags[k]);
        ck_assert_uint_eq(s->bytes, sizes[large_tags[k]]);
    }
    check_invariants(&p, &lim, NULL, orig);
    free(orig);
    planned_free(&p);

    /* Only large copies: one split submission each, in order. */
    const size_t all_large[] = {2 * MiB, 3 * MiB, 4 * MiB};
    p = make_copies(all_large, 3);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 3);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(p.subs[k].split, 1);
        ck_assert_int_eq(p.subs[k].count, 1);
        ck_assert_int_eq(p.copies[k].tag, k);
    }
    planned_free(&p);
}
END_TEST

/* More than 64 large copies (the plan's partition leaves its stack buffer) are still
 * partitioned stably, each alone after the small ones. */
START_TEST(test_plan_split_many)
{
    int n = 300;
    size_t *sizes = malloc((size_t)n * sizeof(*sizes));
    ck_assert(sizes != NULL);
    for (int i = 0; i < n; i++)
        sizes[i] = i % 3 == 0 ? 8 * KiB : 2 * MiB + (size_t)i; /* 100 small, 200 large */
    planned_t p = make_copies(sizes, n);
    convoy__batch_limits_t lim = limits(64, 4 * MiB, 1 * MiB);
    run_plan(&p, &lim, NULL);
    /* 100 small in 2 submissions (64 + 36), then 200 split ones. */
    ck_assert_int_eq(p.nsubs, 2 + 200);
    ck_assert_int_eq(p.subs[0].count, 64);
    ck_assert_int_eq(p.subs[1].count, 36);
    check_invariants(&p, &lim, NULL, sizes);
    planned_free(&p);
    free(sizes);
}
END_TEST

/* split_bytes 0 turns the split off: a 64 MiB copy keeps its place, unflagged, and
 * shares a submission with small ones when max_bytes allows it. */
START_TEST(test_plan_split_off)
{
    const size_t sizes[] = {8 * KiB, 64 * MiB, 8 * KiB};
    convoy__batch_limits_t lim = limits(512, 1024 * MiB, 0);
    planned_t p = make_copies(sizes, 3);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 1);
    ck_assert_int_eq(p.subs[0].count, 3);
    ck_assert_int_eq(p.subs[0].split, 0);
    ck_assert_uint_eq(p.subs[0].bytes, 64 * MiB + 16 * KiB);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(p.copies[i].tag, i);
    planned_free(&p);

    /* With the default 4 MiB bound the big copy is alone, but in place and unflagged. */
    lim = limits(512, 4 * MiB, 0);
    p = make_copies(sizes, 3);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 3);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(p.subs[k].split, 0);
        ck_assert_int_eq(p.copies[k].tag, k);
    }
    planned_free(&p);
}
END_TEST

/* The device's max_batch caps a submission below max_copies; 0 or a larger max_batch,
 * or no device, leaves max_copies in force. */
START_TEST(test_plan_device_cap)
{
    convoy__batch_limits_t lim = limits(128, 4 * MiB, 1 * MiB);
    convoy__device_t dev;
    memset(&dev, 0, sizeof(dev));

    dev.max_batch = 100;
    planned_t p = make_uniform(768, 8 * KiB);
    size_t *orig = bytes_of(&p);
    run_plan(&p, &lim, &dev);
    ck_assert_int_eq(p.nsubs, 8); /* 7 x 100 + 68 */
    for (int k = 0; k < 7; k++)
        ck_assert_int_eq(p.subs[k].count, 100);
    ck_assert_int_eq(p.subs[7].count, 68);
    check_invariants(&p, &lim, &dev, orig);
    planned_free(&p);

    const int others[] = {0, 200, 128};
    for (int i = 0; i < 3; i++) {
        dev.max_batch = others[i];
        p = make_uniform(768, 8 * KiB);
        run_plan(&p, &lim, &dev);
        ck_assert_msg(p.nsubs == 6, "max_batch %d: %d submissions, expected 6", others[i], p.nsubs);
        check_invariants(&p, &lim, &dev, orig);
        planned_free(&p);
    }
    free(orig);
}
END_TEST

/* max_copies 1 puts every copy in a submission of its own, in order. */
START_TEST(test_plan_one_per_submission)
{
    convoy__batch_limits_t lim = limits(1, 4 * MiB, 1 * MiB);
    planned_t p = make_uniform(10, 8 * KiB);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 10);
    for (int k = 0; k < 10; k++) {
        ck_assert_int_eq(p.subs[k].first, k);
        ck_assert_int_eq(p.subs[k].count, 1);
        ck_assert_int_eq(p.copies[k].tag, k);
    }
    planned_free(&p);
}
END_TEST

/* n = 1: one small copy is one unflagged submission; one large copy one split one. */
START_TEST(test_plan_single)
{
    convoy__batch_limits_t lim = limits(128, 4 * MiB, 1 * MiB);
    planned_t p = make_uniform(1, 8 * KiB);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 1);
    ck_assert_int_eq(p.subs[0].first, 0);
    ck_assert_int_eq(p.subs[0].count, 1);
    ck_assert_uint_eq(p.subs[0].bytes, 8 * KiB);
    ck_assert_int_eq(p.subs[0].split, 0);
    planned_free(&p);

    p = make_uniform(1, 16 * MiB);
    run_plan(&p, &lim, NULL);
    ck_assert_int_eq(p.nsubs, 1);
    ck_assert_int_eq(p.subs[0].count, 1);
    ck_assert_uint_eq(p.subs[0].bytes, 16 * MiB);
    ck_assert_int_eq(p.subs[0].split, 1);
    planned_free(&p);
}
END_TEST

/* Random sizes and limits: every plan satisfies the invariants of check_invariants
 * (cover, permutation, stable order, split placement, caps, byte sums, greedy packing).
 * The loop index is the seed. */
START_TEST(test_plan_random)
{
    int64_t over = tu_seed_override();
    uint64_t seed = over >= 0 ? (uint64_t)over : (uint64_t)_i;
    tu_rng_t rng;
    tu_rng_seed(&rng, seed);
    int rounds = tu_scaled(200, 20);
    for (int r = 0; r < rounds; r++) {
        int n = tu_rng_range(&rng, 1, 1500);
        size_t *sizes = malloc((size_t)n * sizeof(*sizes));
        ck_assert(sizes != NULL);
        for (int i = 0; i < n; i++) {
            int kind = tu_rng_range(&rng, 0, 9);
            sizes[i] = kind < 7   ? (size_t)tu_rng_range(&rng, 1, 64 * 1024)
                       : kind < 9 ? (size_t)tu_rng_range(&rng, 64 * 1024, 2 * 1024 * 1024)
                                  : (size_t)tu_rng_range(&rng, 1, 64) * MiB;
        }
        static const size_t splits[] = {0, 64 * KiB, 1 * MiB, 8 * MiB};
        static const size_t maxb[] = {1, 32 * KiB, 1 * MiB, 4 * MiB, 1024 * MiB};
        convoy__batch_limits_t lim =
            limits(tu_rng_range(&rng, 1, 600), maxb[tu_rng_range(&rng, 0, 4)],
                   splits[tu_rng_range(&rng, 0, 3)]);
        convoy__device_t dev;
        memset(&dev, 0, sizeof(dev));
        dev.max_batch = tu_rng_range(&rng, 0, 3) == 0 ? tu_rng_range(&rng, 1, 700) : 4096;
        planned_t p = make_copies(sizes, n);
        run_plan(&p, &lim, &dev);
        check_invariants(&p, &lim, &dev, sizes);
        planned_free(&p);
        free(sizes);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tu_tcase(s, "plan", 30);
    tcase_add_test(tc, test_plan_tiny_tasks);
    tcase_add_test(tc, test_plan_max_bytes);
    tcase_add_test(tc, test_plan_split);
    tcase_add_test(tc, test_plan_split_many);
    tcase_add_test(tc, test_plan_split_off);
    tcase_add_test(tc, test_plan_device_cap);
    tcase_add_test(tc, test_plan_one_per_submission);
    tcase_add_test(tc, test_plan_single);
    tcase_add_loop_test(tc, test_plan_random, 1, 5);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
