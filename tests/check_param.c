/*
 * check_param: parameters (src/param.c) through the public API: convoy_param_preset,
 * the environment (CONVOY_NAME) and the command line (--convoy-name) given to
 * convoy_init; every bad-value path and its message, precedence, argv consumption,
 * size suffixes.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core.h"
#include "src/param.h"
#include "tests/test_util.h"

/* Every test runs on the host device only: nothing here needs an accelerator. */
static const char *const host_only[] = {"devices", "host", "nthreads", "1", NULL};

/* One bad value: the parameter, the text and the complaint the message must make.
 * BELOW and ABOVE stand for the numbers just outside the parameter's declared range, so
 * that the cases follow the tables when a range changes. */
#define BELOW "<min-1>"
#define ABOVE "<max+1>"
typedef struct bad_value {
    const char *name;
    const char *text;
    const char *why;
} bad_value_t;

static const bad_value_t bad_values[] = {
    /* INT: not a number, trailing garbage, out of range both ends, overflow */
    {"nthreads", "abc", "is not an integer"},
    {"nthreads", "", "is not an integer"},
    {"nthreads", "12x", "is not an integer"},
    {"nthreads", "3.5", "is not an integer"},
    {"nthreads", BELOW, "is out of range"},
    {"nthreads", ABOVE, "is out of range"},
    {"nthreads", "99999999999999999999", "is out of range"},
    {"nthreads", "9223372036854775808", "is out of range"}, /* 2^63 */
    {"max_inflight", BELOW, "is out of range"},
    {"max_inflight", ABOVE, "is out of range"},
    /* SIZE: negative, unknown unit, trailing garbage, overflow, out of range */
    {"batch_max_bytes", "-5", "is negative"},
    {"batch_max_bytes", "-0", "is negative"},
    {"batch_max_bytes", "5X", "has an unknown unit"},
    {"batch_max_bytes", "5E", "has an unknown unit"},
    {"batch_max_bytes", "4Ki", "has an unknown unit"},
    {"batch_max_bytes", "4KiBx", "has an unknown unit"},
    {"batch_max_bytes", "4 K", "has an unknown unit"},
    {"batch_max_bytes", "K", "is not a size"},
    {"batch_max_bytes", "", "is not a size"},
    {"batch_max_bytes", "18446744073709551616", "is out of range"},
    {"batch_max_bytes", "2P", "is out of range"},
    {"batch_max_bytes", "17179869184G", "is out of range"},
    {"batch_max_bytes", BELOW, "is out of range"},
    {"batch_max_bytes", ABOVE, "is out of range"},
    {"sim_memory", BELOW, "is out of range"},
    /* DOUBLE */
    {"poll_us", "fast", "is not a number"},
    {"poll_us", "5us", "is not a number"},
    {"poll_us", "1e999", "is not a number"},
    {"poll_us", "nan", "is not a number"},
    {"poll_us", "inf", "is not a number"},
    {"poll_us", BELOW, "is out of range"},
    {"poll_us", ABOVE, "is out of range"},
    /* BOOL */
    {"bind", "maybe", "is not a boolean"},
    {"bind", "2", "is not a boolean"},
    {"bind", "", "is not a boolean"},
    /* CHOICE */
    {"verbose", "loud", "is not a known choice"},
    {"verbose", "WARN", "is not a known choice"},
    {"verbose", "war", "is not a known choice"},
    {"verbose", "warn|info", "is not a known choice"},
    {"copy_method", "dma", "is not a known choice"},
};
#define NBAD ((int)(sizeof(bad_values) / sizeof(bad_values[0])))

static const convoy__param_def_t *def_of(const char *name)
{
    const convoy__param_def_t *def = convoy__param_find_def(name, NULL);
    ck_assert_msg(def != NULL, "parameter '%s' is not declared", name);
    return def;
}

/* The value text of a case, with BELOW and ABOVE resolved. */
static const char *text_of(const bad_value_t *b, char *buf, size_t len)
{
    const convoy__param_def_t *def = def_of(b->name);
    double step = def->type == CONVOY__PARAM_DOUBLE ? 0.5 : 1;
    if (strcmp(b->text, BELOW) == 0)
        snprintf(buf, len, "%.1f", def->min - step);
    else if (strcmp(b->text, ABOVE) == 0)
        snprintf(buf, len, "%.1f", def->max + step);
    else
        return b->text;
    if (def->type != CONVOY__PARAM_DOUBLE) /* integers: drop the ".0" */
        buf[strlen(buf) - 2] = '\0';
    return buf;
}

/* What the message must say is allowed, from the parameter's declaration. */
static void allowed_of(const convoy__param_def_t *def, char *buf, size_t len)
{
    switch (def->type) {
    case CONVOY__PARAM_INT:
        snprintf(buf, len, "an integer in [%.0f, %.0f]", def->min, def->max);
        break;
    case CONVOY__PARAM_SIZE: snprintf(buf, len, "[%.0f, %.0f]", def->min, def->max); break;
    case CONVOY__PARAM_DOUBLE:
        snprintf(buf, len, "a number in [%g, %g]", def->min, def->max);
        break;
    case CONVOY__PARAM_BOOL: snprintf(buf, len, "0, 1, yes, no, on, off, true, false"); break;
    case CONVOY__PARAM_CHOICE: {
        size_t o = (size_t)snprintf(buf, len, "one of ");
        for (const char *c = def->choices; *c && o + 3 < len; c++)
            o += (size_t)snprintf(buf + o, len - o, *c == '|' ? ", " : "%c", *c);
        break;
    }
    default: buf[0] = '\0'; break;
    }
}

static void assert_bad_message(const bad_value_t *b, const char *text, const char *where)
{
    char name[64], quoted[64], allowed[256];
    snprintf(name, sizeof(name), "'%s'", b->name);
    snprintf(quoted, sizeof(quoted), "'%s'", text);
    const convoy__param_def_t *def = def_of(b->name);
    allowed_of(def, allowed, sizeof(allowed));
    const char *msg = convoy_last_error(NULL);
    ck_assert_msg(
        strstr(msg, name) && strstr(msg, quoted) && strstr(msg, b->why) && strstr(msg, allowed) &&
            (def->type != CONVOY__PARAM_SIZE || strstr(msg, "K, M, G, T or P")) &&
            (where == NULL || strstr(msg, where)),
        "%s=%s: message \"%s\" should name %s, %s, say \"%s\", allow \"%s\"%s%s", b->name, text,
        msg, name, quoted, b->why, allowed, where ? " and name " : "", where ? where : "");
}

START_TEST(preset_bad_values)
{
    /* Proves: convoy_param_preset rejects each bad value with CONVOY_ERR_INVALID and a
     * message naming the parameter, the value and what is allowed, and stores nothing. */
    const bad_value_t *b = &bad_values[_i];
    char buf_text[64];
    const char *text = text_of(b, buf_text, sizeof(buf_text));
    convoy_status_t st = convoy_param_preset(b->name, text);
    ck_assert_msg(st == CONVOY_ERR_INVALID, "%s=%s: %s", b->name, text, convoy_status_name(st));
    assert_bad_message(b, text, NULL);
    /* Nothing was stored: init sees the default. */
    convoy_context_t *ctx = tu_init(host_only);
    char buf[64];
    ck_assert_int_eq(convoy_param_get(ctx, b->name, buf, sizeof(buf)), CONVOY_SUCCESS);
    const convoy__param_def_t *def = convoy__param_find_def(b->name, NULL);
    ck_assert_ptr_nonnull(def);
    if (strcmp(b->name, "nthreads") != 0)
        ck_assert_str_eq(buf, def->def);
    convoy_fini(ctx);
}
END_TEST

/* Upper case, for the environment variable. */
static void env_name(const char *name, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "CONVOY_");
    for (; *name && o + 1 < len; name++)
        buf[o++] = (char)(*name >= 'a' && *name <= 'z' ? *name - 'a' + 'A' : *name);
    buf[o] = '\0';
}

START_TEST(env_bad_values)
{
    /* Proves: a bad value in CONVOY_NAME makes convoy_init fail with CONVOY_ERR_INVALID,
     * *ctx_p untouched, the message naming the parameter, the value, what is allowed and
     * the variable. */
    const bad_value_t *b = &bad_values[_i];
    char var[64], buf_text[64];
    const char *text = text_of(b, buf_text, sizeof(buf_text));
    env_name(b->name, var, sizeof(var));
    tu_set_presets(host_only);
    setenv(var, text, 1);
    convoy_context_t *ctx = (convoy_context_t *)(uintptr_t)0x5a5a;
    convoy_status_t st = convoy_init(NULL, NULL, &ctx);
    ck_assert_msg(st == CONVOY_ERR_INVALID, "%s=%s: %s", var, text, convoy_status_name(st));
    ck_assert_ptr_eq(ctx, (convoy_context_t *)(uintptr_t)0x5a5a);
    assert_bad_message(b, text, var);
}
END_TEST

START_TEST(option_bad_values)
{
    /* Proves: a bad value in --convoy-NAME=VALUE and in --convoy-NAME VALUE makes
     * convoy_init fail with CONVOY_ERR_INVALID, naming the parameter, the value, what is
     * allowed and the option. */
    const bad_value_t *b = &bad_values[_i];
    char opt[128], where[80], bare[80], buf_text[64];
    const char *text = text_of(b, buf_text, sizeof(buf_text));
    snprintf(opt, sizeof(opt), "--convoy-%s=%s", b->name, text);
    snprintf(where, sizeof(where), "option --convoy-%s", b->name);
    snprintf(bare, sizeof(bare), "--convoy-%s", b->name);
    for (int form = 0; form < 2; form++) {
        char *args_eq[] = {"prog", opt, NULL};
        char *args_sep[] = {"prog", bare, (char *)text, NULL};
        char **argv = form == 0 ? args_eq : args_sep;
        int argc = form == 0 ? 2 : 3;
        tu_set_presets(host_only);
        convoy_context_t *ctx = (convoy_context_t *)(uintptr_t)0x5a5a;
        convoy_status_t st = convoy_init(&argc, &argv, &ctx);
        ck_assert_msg(st == CONVOY_ERR_INVALID, "%s (form %d): %s", opt, form,
                      convoy_status_name(st));
        ck_assert_ptr_eq(ctx, (convoy_context_t *)(uintptr_t)0x5a5a);
        assert_bad_message(b, text, where);
    }
}
END_TEST

START_TEST(unknown_names)
{
    /* Proves: an unknown name is CONVOY_ERR_NOT_FOUND from convoy_param_preset, from a
     * command-line option and from convoy_param_get, each message naming it; NULL
     * arguments are CONVOY_ERR_INVALID. */
    ck_assert_int_eq(convoy_param_preset("no_such_knob", "1"), CONVOY_ERR_NOT_FOUND);
    tu_assert_error_has(NULL, "no_such_knob", "convoy_param_preset");
    ck_assert_int_eq(convoy_param_preset("SCHED", "fifo"), CONVOY_ERR_NOT_FOUND);
    ck_assert_int_eq(convoy_param_preset("CONVOY_SCHED", "fifo"), CONVOY_ERR_NOT_FOUND);
    ck_assert_int_eq(convoy_param_preset(NULL, "1"), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_param_preset("sched", NULL), CONVOY_ERR_INVALID);

    char *args[] = {"prog", "--convoy-no-such-knob=1", NULL};
    char **argv = args;
    int argc = 2;
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_NOT_FOUND);
    ck_assert_ptr_null(ctx);
    tu_assert_error_has(NULL, "no_such_knob", "command line");

    ctx = tu_init(host_only);
    char buf[32];
    ck_assert_int_eq(convoy_param_get(ctx, "no_such_knob", buf, sizeof(buf)), CONVOY_ERR_NOT_FOUND);
    tu_assert_error_has(NULL, "no_such_knob");
    ck_assert_int_eq(convoy_param_get(ctx, NULL, buf, sizeof(buf)), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_param_get(ctx, "sched", NULL, 4), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_param_get(ctx, "sched", buf, 0), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_param_get(NULL, "sched", buf, sizeof(buf)), CONVOY_ERR_INVALID);
    /* A short buffer gets a truncated, terminated value. */
    memset(buf, 'x', sizeof(buf));
    ck_assert_int_eq(convoy_param_get(ctx, "sched", buf, 3), CONVOY_SUCCESS);
    ck_assert_str_eq(buf, "ba"); /* "batch", the default */
    convoy_fini(ctx);
}
END_TEST

START_TEST(unknown_env_var_warns)
{
    /* Proves: an unknown CONVOY_* variable is not an error: init succeeds and a warning
     * naming the variable is printed. */
    tu_capture_t cap;
    tu_capture_start(&cap);
    setenv("CONVOY_NO_SUCH_KNOB", "1", 1);
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    convoy_status_t st = convoy_init(NULL, NULL, &ctx);
    const char *text = tu_capture_end(&cap);
    ck_assert_msg(st == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    convoy_fini(ctx);
    ck_assert_msg(strstr(text, "CONVOY_NO_SUCH_KNOB") != NULL, "stderr was: %s", text);
}
END_TEST

START_TEST(option_without_value)
{
    /* Proves: a last --convoy-NAME without a value, and a malformed --convoy-=x, are
     * CONVOY_ERR_INVALID with a message quoting the option. */
    char *a1[] = {"prog", "keep", "--convoy-nthreads", NULL};
    char *a2[] = {"prog", "--convoy-=4", NULL};
    char *a3[] = {"prog", "--convoy-", NULL};
    char **cases[] = {a1, a2, a3};
    int argcs[] = {3, 2, 2};
    const char *quoted[] = {"'--convoy-nthreads' needs a value", "'--convoy-=4'", "'--convoy-'"};
    for (int c = 0; c < 3; c++) {
        char **argv = cases[c];
        int argc = argcs[c];
        tu_set_presets(host_only);
        convoy_context_t *ctx = NULL;
        convoy_status_t st = convoy_init(&argc, &argv, &ctx);
        ck_assert_msg(st == CONVOY_ERR_INVALID, "case %d: %s", c, convoy_status_name(st));
        ck_assert_ptr_null(ctx);
        tu_assert_error_has(NULL, quoted[c]);
    }
}
END_TEST

static void get(convoy_context_t *ctx, const char *name, char *buf, size_t len)
{
    convoy_status_t st = convoy_param_get(ctx, name, buf, len);
    ck_assert_msg(st == CONVOY_SUCCESS, "get %s: %s", name, convoy_last_error(NULL));
}

START_TEST(precedence)
{
    /* Proves: later sources win: default < preset < environment < option, each
     * parameter on its own; among presets the last one wins. */
    char buf[64];
    /* Default. */
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "host", NULL});
    get(ctx, "nthreads", buf, sizeof(buf));
    ck_assert_str_eq(buf, "0");
    get(ctx, "sched", buf, sizeof(buf));
    ck_assert_str_eq(buf, "batch");
    convoy_fini(ctx);

    /* Presets, the later one winning. */
    ctx = tu_init((const char *const[]){"devices", "host", "nthreads", "2", "nthreads", "3",
                                        "sched", "fifo", NULL});
    get(ctx, "nthreads", buf, sizeof(buf));
    ck_assert_str_eq(buf, "3");
    get(ctx, "sched", buf, sizeof(buf));
    ck_assert_str_eq(buf, "fifo");
    ck_assert_str_eq(convoy_sched_name(ctx), "fifo");
    convoy_fini(ctx);

    /* Environment over preset. */
    setenv("CONVOY_NTHREADS", "5", 1);
    ctx = tu_init((const char *const[]){"devices", "host", "nthreads", "3", "sched", "fifo", "bind",
                                        "0", NULL});
    get(ctx, "nthreads", buf, sizeof(buf));
    ck_assert_str_eq(buf, "5");
    get(ctx, "sched", buf, sizeof(buf));
    ck_assert_str_eq(buf, "fifo");
    get(ctx, "bind", buf, sizeof(buf));
    ck_assert_str_eq(buf, "0");
    convoy_fini(ctx);

    /* Option over environment, in both forms and with dashes for underscores. */
    setenv("CONVOY_SCHED", "batch", 1);
    char *args[] = {"prog", "--convoy-nthreads=7",      "--convoy-sched",
                    "fifo", "--convoy-trace-flows=yes", NULL};
    char **argv = args;
    int argc = 5;
    tu_set_presets(
        (const char *const[]){"devices", "host", "nthreads", "3", "sched", "batch", NULL});
    ctx = NULL;
    convoy_status_t st = convoy_init(&argc, &argv, &ctx);
    ck_assert_msg(st == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    get(ctx, "nthreads", buf, sizeof(buf));
    ck_assert_str_eq(buf, "7");
    get(ctx, "sched", buf, sizeof(buf));
    ck_assert_str_eq(buf, "fifo");
    ck_assert_str_eq(convoy_sched_name(ctx), "fifo");
    get(ctx, "trace_flows", buf, sizeof(buf));
    ck_assert_str_eq(buf, "yes");
    ck_assert_int_eq(convoy__param_lookup(&ctx->params, "nthreads")->source, CONVOY__FROM_OPTION);
    ck_assert_int_eq(convoy__param_lookup(&ctx->params, "devices")->source, CONVOY__FROM_PRESET);
    ck_assert_int_eq(convoy__param_lookup(&ctx->params, "bind")->source, CONVOY__FROM_DEFAULT);
    ck_assert_int_eq(ctx->nworkers, 7);
    convoy_fini(ctx);
    ck_assert_int_eq(argc, 1);
}
END_TEST

START_TEST(preset_clear)
{
    /* Proves: convoy_param_preset_clear forgets every preset; presets stay in force for
     * every later init until cleared. */
    char buf[64];
    ck_assert_int_eq(convoy_param_preset("devices", "host"), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_param_preset("sched", "fifo"), CONVOY_SUCCESS);
    for (int round = 0; round < 2; round++) {
        convoy_context_t *ctx = NULL;
        ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_SUCCESS);
        get(ctx, "sched", buf, sizeof(buf));
        ck_assert_str_eq(buf, "fifo");
        convoy_fini(ctx);
    }
    convoy_param_preset_clear();
    convoy_param_preset_clear(); /* twice is fine */
    ck_assert_int_eq(convoy_param_preset("devices", "host"), CONVOY_SUCCESS);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_SUCCESS);
    get(ctx, "sched", buf, sizeof(buf));
    ck_assert_str_eq(buf, "batch");
    convoy_fini(ctx);
}
END_TEST

START_TEST(argv_consumed)
{
    /* Proves: --convoy-x=y and --convoy-x y are removed from argv, every other argument
     * stays in order (including ones that look like options), argc shrinks and
     * argv[argc] is NULL. */
    char *args[] = {"prog",
                    "first",
                    "--convoy-sched=batch",
                    "-v",
                    "--convoy-nthreads",
                    "2",
                    "--convoy",
                    "--convoyx=1",
                    "--other",
                    "--convoy-bind",
                    "no",
                    "last",
                    NULL};
    char **argv = args;
    int argc = 12;
    tu_set_presets((const char *const[]){"devices", "host", NULL});
    convoy_context_t *ctx = NULL;
    ck_assert_msg(convoy_init(&argc, &argv, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    const char *want[] = {"prog", "first", "-v", "--convoy", "--convoyx=1", "--other", "last"};
    ck_assert_int_eq(argc, 7);
    for (int i = 0; i < 7; i++)
        ck_assert_str_eq(argv[i], want[i]);
    ck_assert_ptr_null(argv[argc]);
    char buf[32];
    get(ctx, "sched", buf, sizeof(buf));
    ck_assert_str_eq(buf, "batch");
    get(ctx, "nthreads", buf, sizeof(buf));
    ck_assert_str_eq(buf, "2");
    get(ctx, "bind", buf, sizeof(buf));
    ck_assert_str_eq(buf, "no");
    convoy_fini(ctx);

    /* Nothing to consume: argv unchanged; argc == 1 and NULL argc/argv are fine. */
    char *plain[] = {"prog", "a", "b", NULL};
    argv = plain;
    argc = 3;
    ctx = NULL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(argc, 3);
    ck_assert_str_eq(argv[1], "a");
    ck_assert_str_eq(argv[2], "b");
    ck_assert_ptr_null(argv[3]);
    convoy_fini(ctx);
    char *only[] = {"prog", NULL};
    argv = only;
    argc = 1;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(argc, 1);
    convoy_fini(ctx);
    ck_assert_int_eq(convoy_init(&argc, NULL, &ctx), CONVOY_SUCCESS);
    convoy_fini(ctx);
    ck_assert_int_eq(convoy_init(NULL, &argv, &ctx), CONVOY_SUCCESS);
    convoy_fini(ctx);
}
END_TEST

START_TEST(argv_kept_on_error)
{
    /* Proves: when convoy_init fails on a bad option, argc and argv are left as given
     * (in/out parameters are changed only on success), so the program can still print
     * them or parse them itself. */
    /* BUG: load_argv (src/param.c) compacts argv in place as it goes and fails half-way:
     * the options before the bad one are lost and a later argument is duplicated. */
    char *args[] = {"prog", "a", "--convoy-sched=batch", "b", "--convoy-nthreads=zz", "c", NULL};
    char *copy[7];
    memcpy(copy, args, sizeof(args));
    char **argv = args;
    int argc = 6;
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_ERR_INVALID);
    ck_assert_int_eq(argc, 6);
    ck_assert_ptr_eq(argv, args);
    for (int i = 0; i < 7; i++)
        ck_assert_msg(args[i] == copy[i], "argv[%d] changed from \"%s\" to \"%s\"", i,
                      copy[i] ? copy[i] : "(null)", args[i] ? args[i] : "(null)");
}
END_TEST

START_TEST(argv_empty)
{
    /* Proves: an empty argv (argc 0, argv[0] NULL, as execve allows) is left alone. */
    /* BUG: load_argv (src/param.c) starts its output at index 1 and ends with
     * av[out] = NULL, so with argc 0 it writes past the array and sets argc to 1. */
    char *args[2] = {NULL, (char *)"canary"};
    char **argv = args;
    int argc = 0;
    tu_set_presets(host_only);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(&argc, &argv, &ctx), CONVOY_SUCCESS);
    convoy_fini(ctx);
    ck_assert_int_eq(argc, 0);
    ck_assert_ptr_null(args[0]);
    ck_assert_msg(args[1] != NULL, "convoy_init wrote past argv[argc]");
}
END_TEST

/* Parse text as def and return the value; asserts success. */
static int64_t parse_size(const char *name, const char *text)
{
    const convoy__param_def_t *def = convoy__param_find_def(name, NULL);
    ck_assert_ptr_nonnull(def);
    convoy__param_value_t v = {0};
    convoy_status_t st = convoy__param_parse(def, text, &v);
    ck_assert_msg(st == CONVOY_SUCCESS, "%s=%s: %s", name, text, convoy_last_error(NULL));
    return v.v.i;
}

START_TEST(size_suffixes)
{
    /* Proves: sizes take K, M, G (powers of 1024, either case) with an optional B or iB,
     * and the parsed value reaches the running context; the text is kept as given. */
    static const struct {
        const char *text;
        int64_t bytes;
    } cases[] = {
        {"3", 3},
        {"4K", 4096},
        {"4k", 4096},
        {"4KiB", 4096},
        {"4kib", 4096},
        {"4KB", 4096},
        {"2M", 2 << 20},
        {"2MiB", 2 << 20},
        {"1G", 1 << 30},
        {"1GiB", 1 << 30},
        {"3g", 3ll << 30},
        {"0K", 0},
        {"1048576", 1 << 20},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(parse_size("batch_split_bytes", cases[i].text) == cases[i].bytes,
                      "%s should be %lld bytes", cases[i].text, (long long)cases[i].bytes);
    ck_assert_int_eq(parse_size("sim_memory", "4K"), 4096);
    ck_assert_int_eq(parse_size("sim_memory", "1024G"), 1ll << 40);

    convoy_context_t *ctx =
        tu_init((const char *const[]){"devices", "host", "sched", "batch", "batch_max_bytes",
                                      "64KiB", "batch_split_bytes", "3M", NULL});
    ck_assert_int_eq(convoy__param_int(&ctx->params, "batch_max_bytes"), 64 << 10);
    ck_assert_int_eq(convoy__param_int(&ctx->params, "batch_split_bytes"), 3 << 20);
    char buf[32];
    get(ctx, "batch_max_bytes", buf, sizeof(buf));
    ck_assert_str_eq(buf, "64KiB");
    convoy_fini(ctx);

    setenv("CONVOY_BATCH_MAX_BYTES", "2k", 1);
    ctx = tu_init((const char *const[]){"devices", "host", "sched", "batch", NULL});
    ck_assert_int_eq(convoy__param_int(&ctx->params, "batch_max_bytes"), 2048);
    convoy_fini(ctx);
}
END_TEST

START_TEST(good_values)
{
    /* Proves: the accepted spellings of each type parse to the right value. */
    const struct {
        const char *name, *text;
        double value;
    } cases[] = {
        {"bind", "1", 1},           {"bind", "yes", 1},      {"bind", "On", 1},
        {"bind", "TRUE", 1},        {"bind", "0", 0},        {"bind", "no", 0},
        {"bind", "off", 0},         {"bind", "False", 0},    {"nthreads", "0", 0},
        {"nthreads", "1024", 1024}, {"nthreads", "+7", 7},   {"poll_us", "0", 0},
        {"poll_us", "2.5", 2.5},    {"poll_us", "1e5", 1e5}, {"poll_us", "100000", 100000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const convoy__param_def_t *def = convoy__param_find_def(cases[i].name, NULL);
        convoy__param_value_t v = {0};
        ck_assert_msg(convoy__param_parse(def, cases[i].text, &v) == CONVOY_SUCCESS, "%s=%s: %s",
                      cases[i].name, cases[i].text, convoy_last_error(NULL));
        double got = def->type == CONVOY__PARAM_DOUBLE ? v.v.d : (double)v.v.i;
        ck_assert_msg(got == cases[i].value, "%s=%s parsed as %g", cases[i].name, cases[i].text,
                      got);
        ck_assert_int_eq(convoy_param_preset(cases[i].name, cases[i].text), CONVOY_SUCCESS);
    }
    /* Every choice of every CHOICE parameter, and every default, parses. */
    const char *const choices[][2] = {{"verbose", "error"},
                                      {"verbose", "trace"},
                                      {"copy_method", "auto"},
                                      {"copy_method", "loop"}};
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(convoy_param_preset(choices[i][0], choices[i][1]), CONVOY_SUCCESS);
    const char *names[] = {"sched",        "devices",   "nthreads",        "bind",
                           "verbose",      "trace",     "trace_flows",     "copy_method",
                           "max_inflight", "poll_us",   "batch_max_tasks", "batch_max_bytes",
                           "sim_count",    "sim_memory"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const convoy__param_def_t *def = convoy__param_find_def(names[i], NULL);
        ck_assert_msg(def != NULL, "parameter %s is not declared", names[i]);
        ck_assert_msg(def->doc != NULL && def->doc[0] != '\0', "%s has no doc", names[i]);
        ck_assert_int_eq(convoy__param_parse(def, def->def, NULL), CONVOY_SUCCESS);
    }
}
END_TEST

static void *preset_thread(void *arg)
{
    intptr_t k = (intptr_t)arg;
    char v[16];
    for (int i = 0; i < 200; i++) {
        snprintf(v, sizeof(v), "%d", (int)(k * 1000 + i) % 1024);
        if (convoy_param_preset("max_inflight", "4") != CONVOY_SUCCESS ||
            convoy_param_preset("batch_max_tasks", v[0] == '0' ? "1" : v) != CONVOY_SUCCESS)
            return (void *)1;
        if (i % 50 == 49 && k == 0)
            convoy_param_preset_clear();
    }
    return NULL;
}

START_TEST(preset_threads)
{
    /* Proves: convoy_param_preset and convoy_param_preset_clear may be called from
     * several threads at once (run under ThreadSanitizer in CI). */
    pthread_t th[4];
    for (intptr_t k = 0; k < 4; k++)
        ck_assert_int_eq(pthread_create(&th[k], NULL, preset_thread, (void *)k), 0);
    for (int k = 0; k < 4; k++) {
        void *rc;
        pthread_join(th[k], &rc);
        ck_assert_ptr_null(rc);
    }
    /* Thread 0 may have cleared them last: set the ones init needs again. */
    ck_assert_int_eq(convoy_param_preset("devices", "host"), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_param_preset("max_inflight", "5"), CONVOY_SUCCESS);
    convoy_context_t *ctx = NULL;
    ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_SUCCESS);
    char buf[16];
    get(ctx, "max_inflight", buf, sizeof(buf));
    ck_assert_str_eq(buf, "5");
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("param");
    TCase *tc = tu_tcase(s, "bad_values", 20);
    tcase_add_loop_test(tc, preset_bad_values, 0, NBAD);
    tcase_add_loop_test(tc, env_bad_values, 0, NBAD);
    tcase_add_loop_test(tc, option_bad_values, 0, NBAD);
    tcase_add_test(tc, unknown_names);
    tcase_add_test(tc, unknown_env_var_warns);
    tcase_add_test(tc, option_without_value);

    tc = tu_tcase(s, "sources", 20);
    tcase_add_test(tc, precedence);
    tcase_add_test(tc, preset_clear);
    tcase_add_test(tc, argv_consumed);
    tcase_add_test(tc, argv_kept_on_error);
    tcase_add_test(tc, argv_empty);
    tcase_add_test(tc, size_suffixes);
    tcase_add_test(tc, good_values);
    tcase_add_test(tc, preset_threads);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
