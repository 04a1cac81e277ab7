/*
 * check_taskmem: task memory (src/taskmem.c). One thread's tasks are carved in order from
 * its slab, each on lines of its own; a slab comes back for reuse only once it is retired
 * and every task carved from it is freed, wherever they were freed; a thread's exit
 * retires its slab; the spare slabs stay under their bound and the trim at convoy_fini
 * gives them back; sizes out of range are refused; and a context's tasks use it. Under
 * AddressSanitizer, a freed task is poisoned.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core.h"
#include "src/taskmem.h"
#include "tests/test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define TASKMEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TASKMEM_ASAN 1
#endif
#endif
#ifdef TASKMEM_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define SLAB CONVOY__TASKMEM_SLAB

static uintptr_t slab_of(const void *p)
{
    return (uintptr_t)convoy__taskmem_slab(p);
}

typedef struct put_arg {
    void **p;
    int n;
} put_arg_t;

static void *put_all(void *a)
{
    put_arg_t *arg = a;
    for (int i = 0; i < arg->n; i++)
        convoy__taskmem_put(arg->p[i]);
    return NULL;
}

/* Free p[0..n) on a thread of its own. */
static void put_on_thread(void **p, int n)
{
    put_arg_t arg = {.p = p, .n = n};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, put_all, &arg), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
}

/* Consecutive allocations lie one after the other, each on lines of its own (its slab's
 * address, then its bytes), until the slab is full; the next one starts a new slab. */
START_TEST(carved_in_order)
{
    convoy__taskmem_trim();
    enum { BYTES = 200, MAX = SLAB / 256 + 2 };
    void *p[MAX];
    int n = 0;
    p[n++] = convoy__taskmem_get(BYTES);
    ck_assert_ptr_nonnull(p[0]);
    for (;;) {
        ck_assert_int_lt(n, MAX);
        p[n] = convoy__taskmem_get(BYTES);
        ck_assert_ptr_nonnull(p[n]);
        ck_assert_uint_eq(((uintptr_t)p[n] - sizeof(void *)) % CONVOY__LINE, 0);
        memset(p[n], 0x5a, BYTES); /* ASan: every byte asked for is ours */
        if (slab_of(p[n]) != slab_of(p[n - 1]))
            break;
        ck_assert_msg((char *)p[n] == (char *)p[n - 1] + 256, "allocation %d at %p, %p before", n,
                      p[n], p[n - 1]);
        n++;
    }
    ck_assert_int_ge(n, (int)(SLAB / 256) - 1); /* the slab was used to its end */
    for (int i = 0; i <= n; i++)
        convoy__taskmem_put(p[i]);
    convoy__taskmem_trim();
}
END_TEST

/* Sizes: 1 .. CONVOY__TASKMEM_MAX bytes are served (a task of CONVOY_MAX_FLOWS flows fits);
 * 0 and more are refused. */
START_TEST(sizes_in_range)
{
    size_t task16 =
        sizeof(convoy__task_t) +
        (size_t)CONVOY_MAX_FLOWS * (sizeof(convoy_data_t *) + sizeof(void *) + sizeof(size_t));
    ck_assert_uint_le(task16, CONVOY__TASKMEM_MAX);
    ck_assert_ptr_null(convoy__taskmem_get(0));
    ck_assert_ptr_null(convoy__taskmem_get(CONVOY__TASKMEM_MAX + 1));
    size_t sizes[] = {1, 63, 64, 65, task16, CONVOY__TASKMEM_MAX};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *p = convoy__taskmem_get(sizes[i]);
        ck_assert_ptr_nonnull(p);
        memset(p, 0xa5, sizes[i]);
        convoy__taskmem_put(p);
    }
    convoy__taskmem_put(NULL); /* nothing */
    convoy__taskmem_trim();
}
END_TEST

/* A slab whose tasks are all freed on another thread becomes spare only once it is
 * retired (full here), and the next slab this thread needs is that one. */
START_TEST(slab_reused_after_its_last_free)
{
    convoy__taskmem_trim();
    enum { MAX = 2 * (SLAB / 64) };
    static void *p[MAX];
    int n = 0;
    p[n++] = convoy__taskmem_get(64);
    while (slab_of(p[n - 1]) == slab_of(p[0]))
        p[n++] = convoy__taskmem_get(64); /* the last one starts the second slab */
    uintptr_t first = slab_of(p[0]);
    put_on_thread(p, n - 1); /* every task of the first slab, retired when full */
    ck_assert_int_eq(convoy__taskmem_spares(), 1);
    /* Fill the second slab: the third is the first one again. */
    void *q;
    int m = 0;
    static void *more[MAX];
    do {
        q = convoy__taskmem_get(64);
        more[m++] = q;
    } while (slab_of(q) == slab_of(p[n - 1]));
    ck_assert_uint_eq(slab_of(q), first);
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
    convoy__taskmem_put(p[n - 1]);
    for (int i = 0; i < m; i++)
        convoy__taskmem_put(more[i]);
    convoy__taskmem_trim();
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
}
END_TEST

/* A slab not yet retired stays with its thread however many of its tasks are freed. */
START_TEST(current_slab_is_kept)
{
    convoy__taskmem_trim();
    void *a = convoy__taskmem_get(100), *b = convoy__taskmem_get(100);
    uintptr_t slab = slab_of(a);
    put_on_thread((void *[]){a, b}, 2);
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
    void *c = convoy__taskmem_get(100);
    ck_assert_uint_eq(slab_of(c), slab);
    convoy__taskmem_put(c);
    convoy__taskmem_trim(); /* retires it: all its tasks are free, so it is spare, then gone */
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
}
END_TEST

typedef struct get_arg {
    void *p[3];
} get_arg_t;

static void *get_three(void *a)
{
    get_arg_t *arg = a;
    for (int i = 0; i < 3; i++)
        arg->p[i] = convoy__taskmem_get(300);
    return NULL;
}

/* A thread that exits retires its slab: once its tasks are freed here, it is spare. */
START_TEST(exiting_thread_retires_its_slab)
{
    convoy__taskmem_trim();
    get_arg_t arg;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, get_three, &arg), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull(arg.p[i]);
    convoy__taskmem_put(arg.p[0]);
    convoy__taskmem_put(arg.p[1]);
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
    convoy__taskmem_put(arg.p[2]);
    ck_assert_int_eq(convoy__taskmem_spares(), 1);
    convoy__taskmem_trim();
}
END_TEST

/* More freed slabs than the bound: the spares stop at it, the rest go back. */
START_TEST(spares_stay_bounded)
{
    convoy__taskmem_trim();
    int per = (int)(SLAB / CONVOY__TASKMEM_MAX) - 1; /* whole allocations a slab holds */
    int n = (CONVOY__TASKMEM_MAX_SPARE + 8) * per + 1;
    void **p = malloc((size_t)n * sizeof(*p));
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < n; i++)
        ck_assert_ptr_nonnull(p[i] = convoy__taskmem_get(CONVOY__TASKMEM_MAX));
    put_on_thread(p, n);
    ck_assert_int_eq(convoy__taskmem_spares(), CONVOY__TASKMEM_MAX_SPARE);
    convoy__taskmem_trim();
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
    free(p);
}
END_TEST

enum { MIX_THREADS = 4, MIX_ROUNDS = 20000 };
static _Atomic(uint64_t *) mailbox[64];

/* Each thread allocates, stamps, swaps through a shared mailbox and frees what it gets:
 * tasks are freed by other threads than their creators, in no order. */
static void *mix(void *a)
{
    uint64_t id = (uint64_t)(uintptr_t)a;
    for (uint64_t r = 0; r < MIX_ROUNDS; r++) {
        uint64_t *p = convoy__taskmem_get(8 + 64 * (r % 5));
        ck_assert_ptr_nonnull(p);
        *p = (id << 32) | r;
        uint64_t *old = atomic_exchange(&mailbox[(r * 7 + id) % 64], p);
        if (old != NULL) {
            ck_assert_uint_eq(*old >> 32 < MIX_THREADS, 1); /* a stamp, not a reuse's */
            convoy__taskmem_put(old);
        }
    }
    return NULL;
}

START_TEST(many_threads_free_each_others_tasks)
{
    convoy__taskmem_trim();
    pthread_t th[MIX_THREADS];
    for (uintptr_t i = 0; i < MIX_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, mix, (void *)i), 0);
    for (int i = 0; i < MIX_THREADS; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 64; i++)
        convoy__taskmem_put(atomic_exchange(&mailbox[i], NULL));
    /* Every thread exited and every task is free: every slab is spare (or given back). */
    int spares = convoy__taskmem_spares();
    ck_assert_int_ge(spares, 1);
    ck_assert_int_le(spares, CONVOY__TASKMEM_MAX_SPARE);
    convoy__taskmem_trim();
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
}
END_TEST

/* Under AddressSanitizer only (elsewhere it passes, asserting nothing). */
START_TEST(freed_task_is_poisoned)
{
#ifdef TASKMEM_ASAN
    char *t = convoy__taskmem_get(200);
    ck_assert(!__asan_address_is_poisoned(t + 199));
    char *u = convoy__taskmem_get(200);
    ck_assert(__asan_address_is_poisoned(t + 256 + 200)); /* past what u asked for */
    convoy__taskmem_put(t);
    ck_assert(__asan_address_is_poisoned(t));
    convoy__taskmem_put(u);
    convoy__taskmem_trim();
#endif
}
END_TEST

static int empty_chore(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return 0;
}

/* A context's tasks come from here: after a run, freeing the data that keep the tasks
 * referenced leaves the slabs spare; convoy_fini gives them back. */
START_TEST(context_tasks_use_slabs)
{
    const char *const preset[] = {"devices", "host", "nthreads", "2", "bind", "0", NULL};
    convoy_context_t *ctx = tu_init(preset);
    convoy__taskmem_trim();
    convoy_access_t mode = CONVOY_READ;
    convoy_class_t *cls = NULL;
    ck_assert_int_eq(convoy_class_new(ctx, "empty", 1, &mode, 0, &cls), CONVOY_SUCCESS);
    convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, empty_chore);
    enum { N = 2048 };
    static float x[N];
    static convoy_data_t *d[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &x[i], sizeof(x[i]), &d[i]), CONVOY_SUCCESS);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d[i]), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    for (int i = 0; i < N; i++)
        convoy_data_free(d[i]);
    /* The tasks filled several slabs, all retired but this thread's last: spare once the
     * frees have dropped the tasks' last references (the background's, on the host). */
    int want = (int)(N * sizeof(convoy__task_t) / SLAB) - 1;
    for (int i = 0; i < 500 && convoy__taskmem_spares() < want; i++)
        usleep(10000);
    ck_assert_int_ge(convoy__taskmem_spares(), want);
    convoy_fini(ctx);
    ck_assert_int_eq(convoy__taskmem_spares(), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("taskmem");
    TCase *tc = tu_tcase(s, "slabs", 60);
    tcase_add_test(tc, carved_in_order);
    tcase_add_test(tc, sizes_in_range);
    tcase_add_test(tc, slab_reused_after_its_last_free);
    tcase_add_test(tc, current_slab_is_kept);
    tcase_add_test(tc, exiting_thread_retires_its_slab);
    tcase_add_test(tc, spares_stay_bounded);
    tcase_add_test(tc, many_threads_free_each_others_tasks);
    tcase_add_test(tc, freed_task_is_poisoned);
    tcase_add_test(tc, context_tasks_use_slabs);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
