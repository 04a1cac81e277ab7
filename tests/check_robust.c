/*
 * check_robust: inputs an adversarial caller gives convoy_init and the parameters
 * (argv with NULLs or without its NULL slot, options missing their value, sizes in T
 * and P), the last error of a context, the log level of each context, and the
 * aggregated logger (src/log_repeat.c). Issue 11.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/core.h"
#include "src/param.h"
#include "tests/test_util.h"

static const char *const host_only[] = {"devices", "host", "nthreads", "1", NULL};

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* argc entries at the very end of a page followed by an inaccessible one: reading or
 * writing argv[argc] faults. */
static char **guarded_argv(char *const *src, int argc)
{
    long page = sysconf(_SC_PAGESIZE);
    char *base =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(base, MAP_FAILED);
    ck_assert_int_eq(mprotect(base + page, (size_t)page, PROT_NONE), 0);
    char **av = (char **)(base + page) - argc;
    memcpy(av, src, (size_t)argc * sizeof(*av));
    return av;
}

START_TEST(argv_null_entry)
{
    /* Proves: a NULL among argv[0..argc) is CONVOY_ERR_INVALID naming its index, with
     * argc and argv left as given (it was a NULL dereference). */
    char *args[] = {"prog", "--convoy-nthreads=1", NULL, "--convoy-sched=batch", NULL};
    char **argv = args;
    int argc = 4;
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_INVALID);
    ck_assert_ptr_null(ctx);
    tu_assert_error_has(NULL, "argv[2] is NULL", "argc is 4");
    ck_assert_int_eq(argc, 4);
    ck_assert_str_eq(args[1], "--convoy-nthreads=1");
}
END_TEST

START_TEST(argv_without_null_slot)
{
    /* Proves: convoy_init reads and writes only argv[0..argc): with nothing to consume
     * it does not touch argv[argc] (it wrote NULL there: a heap overflow), and with
     * options consumed it NULLs the freed entries and keeps the rest in order. */
    char *plain[] = {"prog", "a", "b"};
    char **argv = guarded_argv(plain, 3);
    int argc = 3;
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    ck_assert_msg(convoy_init(&argc, &argv, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    convoy_fini(ctx);
    ck_assert_int_eq(argc, 3);
    ck_assert_str_eq(argv[2], "b");

    char *opts[] = {"prog", "--convoy-nthreads", "2", "keep", "--convoy-bind=0"};
    argv = guarded_argv(opts, 5);
    argc = 5;
    tu_set_presets((const char *const[]){"devices", "host", NULL});
    ck_assert_msg(convoy_init(&argc, &argv, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    ck_assert_int_eq(ctx->nworkers, 2);
    convoy_fini(ctx);
    ck_assert_int_eq(argc, 2);
    ck_assert_str_eq(argv[0], "prog");
    ck_assert_str_eq(argv[1], "keep");
    for (int i = 2; i < 5; i++)
        ck_assert_ptr_null(argv[i]);
}
END_TEST

START_TEST(option_value_is_an_option)
{
    /* Proves: `--convoy-trace --convoy-sched=batch` is an error naming the option that
     * lacks its value (it took the next option as the trace path), while a value
     * starting with a single dash is still a value. */
    char *a1[] = {"prog", "--convoy-trace", "--convoy-sched=batch", NULL};
    char **argv = a1;
    int argc = 3;
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'--convoy-trace' needs a value", "'--convoy-sched=batch'",
                        "--convoy-trace=VALUE");
    ck_assert_int_eq(argc, 3);

    char *a2[] = {"prog", "--convoy-devices", "--", NULL};
    argv = a2;
    argc = 3;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'--convoy-devices' needs a value");

    char *a3[] = {"prog", "--convoy-nthreads", "-1", NULL};
    argv = a3;
    argc = 3;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'-1' is out of range", "option --convoy-nthreads");
}
END_TEST

static int64_t size_of(const char *name, const char *text)
{
    convoy__param_value_t v;
    const convoy__param_def_t *def = convoy__param_find_def(name, NULL);
    ck_assert_ptr_nonnull(def);
    convoy_status_t st = convoy__param_parse(def, text, &v);
    ck_assert_msg(st == CONVOY_SUCCESS, "%s=%s: %s", name, text, convoy_last_error(NULL));
    return v.v.i;
}

/* convoy-info's way of printing a bound (tools/convoy_info.c): the largest unit that
 * divides it. */
static void bound_text(double bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTP";
    double v = bytes;
    int u = -1;
    while (v >= 1024 && u < 4 && (double)(long long)(v / 1024) * 1024 == v) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%.0f", bytes);
    else
        snprintf(buf, len, "%.0f%c", v, units[u]);
}

static void bounds_parse(const char *owner, const convoy__param_def_t *table, void *arg)
{
    (void)owner;
    (void)arg;
    for (const convoy__param_def_t *d = table; d->name != NULL; d++) {
        if (d->type != CONVOY__PARAM_SIZE)
            continue;
        char lo[32], hi[32];
        bound_text(d->min, lo, sizeof(lo));
        bound_text(d->max, hi, sizeof(hi));
        ck_assert_msg((double)size_of(d->name, lo) == d->min, "%s: bound %s", d->name, lo);
        ck_assert_msg((double)size_of(d->name, hi) == d->max, "%s: bound %s", d->name, hi);
    }
}

START_TEST(size_t_and_p)
{
    /* Proves: sizes take T and P (powers of 1024, with B or iB), so that every bound
     * doc/reference.md prints ("1P", "1T") is itself a value that parses (they were
     * rejected); past the range is "out of range" naming the range. */
    ck_assert_int_eq(size_of("batch_max_bytes", "1T"), 1ll << 40);
    ck_assert_int_eq(size_of("batch_max_bytes", "2tib"), 2ll << 40);
    ck_assert_int_eq(size_of("batch_max_bytes", "1P"), 1ll << 50);
    ck_assert_int_eq(size_of("batch_max_bytes", "1PB"), 1ll << 50);
    convoy__param_foreach_table(bounds_parse, NULL);

    ck_assert_int_eq(convoy_param_preset("batch_max_bytes", "1025T"), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'1025T' is out of range", "[1, 1125899906842624]", "T or P");
    ck_assert_int_eq(convoy_param_preset("batch_max_bytes", "16384P"), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'16384P' is out of range");
    ck_assert_int_eq(convoy_param_preset("nthreads", "9223372036854775808"), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "is out of range", "an integer in [0, 1024]");
}
END_TEST

START_TEST(last_error_after_param_get)
{
    /* Proves: a failed convoy_param_get(ctx) sets convoy_last_error(ctx) (it kept the
     * previous message). */
    convoy_context_t *ctx = tu_init(host_only);
    char buf[16];
    ck_assert_int_eq(convoy_param_get(ctx, "no_such_knob", buf, sizeof(buf)), CONVOY_ERR_NOT_FOUND);
    tu_assert_error_has(ctx, "'no_such_knob'", "convoy_param_get");
    ck_assert_int_eq(convoy_param_get(ctx, "sched", buf, 0), CONVOY_ERR_INVALID);
    tu_assert_error_has(ctx, "len 0");
    convoy_fini(ctx);
}
END_TEST

/* Two contexts, one logging at debug, one at error; the failed get on each must print
 * its debug line only for the first, whichever was started last. */
static void levels_in_order(int debug_first)
{
    const char *lv[2] = {debug_first ? "debug" : "error", debug_first ? "error" : "debug"};
    convoy_context_t *c[2];
    for (int i = 0; i < 2; i++)
        c[i] = tu_init(
            (const char *const[]){"devices", "host", "nthreads", "1", "verbose", lv[i], NULL});
    convoy_context_t *dbg = debug_first ? c[0] : c[1], *quiet = debug_first ? c[1] : c[0];
    tu_capture_t cap;
    char buf[8];
    tu_capture_start(&cap);
    convoy_param_get(dbg, "knob_on_debug_ctx", buf, sizeof(buf));
    convoy_param_get(quiet, "knob_on_quiet_ctx", buf, sizeof(buf));
    const char *text = tu_capture_end(&cap);
    ck_assert_msg(strstr(text, "knob_on_debug_ctx") != NULL, "debug_first %d: stderr: %s",
                  debug_first, text);
    ck_assert_msg(strstr(text, "knob_on_quiet_ctx") == NULL, "debug_first %d: stderr: %s",
                  debug_first, text);
    convoy_fini(c[0]);
    convoy_fini(c[1]);
}

START_TEST(log_level_per_context)
{
    /* Proves: a context's 'verbose' governs the messages logged with that context, not
     * the other context's (the level was one process global, the last init's). */
    levels_in_order(1);
    levels_in_order(0);
}
END_TEST

static int noop(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return 0;
}

/* One thread's rounds: init at its own level, a few CPU tasks, fini. */
static void *rounds(void *arg)
{
    const char *level = arg;
    for (int r = 0; r < tu_scaled(20, 4); r++) {
        convoy_context_t *ctx = NULL;
        char *args[] = {"prog", "--convoy-verbose", (char *)level, NULL};
        char **argv = args;
        int argc = 3;
        if (convoy_init(&argc, &argv, &ctx) != CONVOY_SUCCESS)
            return (void *)convoy_last_error(NULL);
        convoy_class_t *cls = NULL;
        convoy_access_t mode = CONVOY_RW;
        int x = 0;
        convoy_data_t *d;
        convoy_class_new(ctx, "noop", 1, &mode, 0, &cls);
        convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, noop);
        convoy_data_new(ctx, &x, sizeof(x), &d);
        for (int t = 0; t < 8; t++)
            convoy_task_insert(ctx, cls, NULL, 0, &d);
        convoy_wait(ctx);
        convoy_fini(ctx);
    }
    return NULL;
}

START_TEST(log_level_two_threads)
{
    /* Proves: contexts started concurrently by two threads, at two levels, do not race
     * on the log level (ThreadSanitizer reported the global's unsynchronised write). */
    tu_set_presets(host_only);
    pthread_t th[2];
    char *levels[2] = {"error", "warn"};
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, rounds, levels[i]), 0);
    for (int i = 0; i < 2; i++) {
        void *err;
        pthread_join(th[i], &err);
        ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
    }
}
END_TEST

START_TEST(init_error_printed_once)
{
    /* Proves: a failed convoy_init does not print its error itself (the caller, which
     * gets it from convoy_last_error, prints it: it was printed twice). */
    tu_set_presets(host_only);
    setenv("CONVOY_SCHED", "nope", 1);
    tu_capture_t cap;
    tu_capture_start(&cap);
    convoy_context_t *ctx = NULL;
    convoy_status_t st = convoy_init(NULL, NULL, &ctx);
    const char *text = tu_capture_end(&cap);
    ck_assert_int_eq(st, CONVOY_ERR_NOT_FOUND);
    tu_assert_error_has(NULL, "'nope'", "CONVOY_SCHED");
    ck_assert_msg(count_of(text, "'nope'") == 0, "stderr: %s", text);
}
END_TEST

START_TEST(repeat_burst)
{
    /* Proves: 256 repeats of one kind print two lines, the first message and "... and
     * 255 more like it: <first>" at the flush; another key and another context are
     * counted apart; below the level nothing is printed or counted. */
    convoy_context_t *ctx = tu_init(host_only);
    tu_capture_t cap;
    tu_capture_start(&cap);
    for (int i = 0; i < 256; i++) {
        convoy__log_repeat(ctx, "task failed", CONVOY__LOG_WARN, "task #%d failed: boom", i);
        if (i < 3)
            convoy__log_repeat(ctx, "other", CONVOY__LOG_WARN, "other kind %d", i);
        if (i < 2)
            convoy__log_repeat(NULL, "task failed", CONVOY__LOG_WARN, "no ctx %d", i);
        convoy__log_repeat(ctx, "quiet", CONVOY__LOG_DEBUG, "never %d", i);
    }
    convoy__log_repeat_flush(ctx);
    convoy__log_repeat_flush(NULL);
    const char *text = tu_capture_end(&cap);
    ck_assert_msg(count_of(text, "\n") == 6, "stderr: %s", text);
    ck_assert_msg(strstr(text, "convoy warn: task #0 failed: boom\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "... and 255 more like it: task #0 failed: boom\n") != NULL, "%s",
                  text);
    ck_assert_msg(strstr(text, "... and 2 more like it: other kind 0\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "... and 1 more like it: no ctx 0\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "never") == NULL, "%s", text);
    convoy_fini(ctx);
}
END_TEST

START_TEST(repeat_burst_ends)
{
    /* Proves: a repeat after a pause longer than the gap prints the summary of the
     * burst before it and starts a new burst; convoy_fini prints what is still open. */
    convoy_context_t *ctx = tu_init(host_only);
    tu_capture_t cap;
    tu_capture_start(&cap);
    for (int i = 0; i < 3; i++)
        convoy__log_repeat(ctx, "k", CONVOY__LOG_WARN, "first burst %d", i);
    convoy__sleep_until_ns(convoy__now_ns() + CONVOY__LOG_REPEAT_GAP_NS + 100000000ull);
    for (int i = 0; i < 4; i++)
        convoy__log_repeat(ctx, "k", CONVOY__LOG_WARN, "second burst %d", i);
    convoy_fini(ctx);
    const char *text = tu_capture_end(&cap);
    const char *a = strstr(text, "first burst 0\n"),
               *b = strstr(text, "... and 2 more like it: "
                                 "first burst 0\n"),
               *c = strstr(text, "second burst 0\n"),
               *d = strstr(text, "... and 3 more like it: second burst 0\n");
    ck_assert_msg(a && b && c && d && a < b && b < c && c < d, "stderr: %s", text);
}
END_TEST

START_TEST(repeat_table_full)
{
    /* Proves: more kinds than the fixed table holds are printed one by one, none lost
     * and nothing allocated. */
    convoy__log_repeat_flush(NULL); /* empty the table (CK_FORK=no runs tests in turn) */
    tu_capture_t cap;
    tu_capture_start(&cap);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key%d", i);
        convoy__log_repeat(NULL, key, CONVOY__LOG_WARN, "kind %d", i);
    }
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key%d", i);
        convoy__log_repeat(NULL, key, CONVOY__LOG_WARN, "kind %d again", i);
    }
    convoy__log_repeat_flush(NULL);
    const char *text = tu_capture_end(&cap);
    for (int i = 0; i < 100; i++) {
        char first[32];
        snprintf(first, sizeof(first), "kind %d\n", i);
        ck_assert_msg(strstr(text, first) != NULL, "missing %s", first);
    }
    /* 100 firsts; the kinds past the table print their repeat; the others summarise. */
    ck_assert_int_eq(count_of(text, "\n"), 200);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("robust");
    TCase *tc = tu_tcase(s, "argv", 20);
    tcase_add_test(tc, argv_null_entry);
    tcase_add_test(tc, argv_without_null_slot);
    tcase_add_test(tc, option_value_is_an_option);
    tc = tu_tcase(s, "values", 20);
    tcase_add_test(tc, size_t_and_p);
    tc = tu_tcase(s, "log", 60);
    tcase_add_test(tc, last_error_after_param_get);
    tcase_add_test(tc, log_level_per_context);
    tcase_add_test(tc, log_level_two_threads);
    tcase_add_test(tc, init_error_printed_once);
    tcase_add_test(tc, repeat_burst);
    tcase_add_test(tc, repeat_burst_ends);
    tcase_add_test(tc, repeat_table_full);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
