/*
 * check_trace_read: the trace reader and the plot on their own (tools/trace_read.c,
 * trace_summary.c, trace_svg.c): bad inputs (not JSON, truncated, wrong types, missing
 * fields, huge numbers, negative durations, deep nesting) rejected with a message naming
 * the file; traces of the format before 2026-12-01 still read; the plot's window counts
 * from the first event and an empty one is refused; dense runs drawn by opacity; the
 * distributed mode's message events counted (and bad ones refused).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test_util.h"
#include "tools/trace_read.h"

/* ---- the reader on bad input ------------------------------------------------------- */

typedef struct bad_input {
    const char *text;
    const char *says;
} bad_input_t;

#define EV(body) "{\"traceEvents\":[" body "]}"
#define XHEAD "\"ph\":\"X\",\"name\":\"n\",\"pid\":0,\"tid\":0"

static const bad_input_t bad_inputs[] = {
    {"this is not json", "not valid JSON"},
    {"{\"traceEvents\":[{\"ph\":\"X\",", "not valid JSON"},
    {"", "not valid JSON"},
    {"{}", "no 'traceEvents'"},
    {"[]x", "data after the end"},
    {"{\"traceEvents\":[]} {}", "data after the end"},
    {"{\"traceEvents\":[],\"traceEvents\":[]}", "appears twice"},
    {"{\"traceEvents\":[{\"ph\":\"B\"} {}]}", "expected ',' or ']'"},
    {"{1:2}", "expected a string"},
    {"{\"traceEvents\":5}", "'traceEvents' must be an array"},
    {EV("7"), "not an object"},
    {EV("{\"name\":\"x\"}"), "'ph' is missing"},
    {EV("{\"ph\":3}"), "'ph' must be a string"},
    {EV("{" XHEAD ",\"ts\":\"1\",\"dur\":1}"), "'ts' must be a number"},
    {EV("{" XHEAD ",\"ts\":1}"), "'dur' is missing"},
    {EV("{" XHEAD ",\"ts\":1,\"dur\":-5}"), "a duration must be"},
    {EV("{" XHEAD ",\"ts\":1e300,\"dur\":1}"), "out of"},
    {EV("{" XHEAD ",\"ts\":1e999,\"dur\":1}"), "not valid JSON"},
    {EV("{" XHEAD ",\"ts\":1,\"dur\":1,\"pid\":99999999999999999999}"), "not valid JSON"},
    {EV("{\"ph\":\"X\",\"name\":\"n\",\"tid\":0,\"ts\":1,\"dur\":1}"), "'pid' is missing"},
    {EV("{\"ph\":\"X\",\"name\":\"n\",\"pid\":4294967296,\"tid\":0,\"ts\":1,\"dur\":1}"), "out of"},
    {EV("{" XHEAD ",\"ts\":1,\"dur\":1,\"cat\":\"copy\"}"), "'args' is missing"},
    {EV("{\"ph\":\"X\",\"name\":\"stage-in\",\"pid\":0,\"tid\":0,\"ts\":1,\"dur\":1,"
        "\"cat\":\"copy\",\"args\":{\"ring\":0,\"copies\":1,\"method\":\"sm\",\"split\":false}}"),
     "'args.bytes' is missing"},
    {EV("{\"ph\":\"X\",\"name\":\"stage-in\",\"pid\":0,\"tid\":0,\"ts\":1,\"dur\":1,"
        "\"cat\":\"copy\",\"args\":{\"ring\":0,\"copies\":1,\"bytes\":-8,\"method\":\"sm\","
        "\"split\":false}}"),
     "'args.bytes' is -8"},
    {EV("{\"ph\":\"i\",\"name\":\"exploded\",\"cat\":\"task\",\"pid\":0,\"tid\":0,\"ts\":1,"
        "\"args\":{\"task\":1,\"ring\":-1}}"),
     "unknown task step"},
    {EV("{\"ph\":\"i\",\"name\":\"shout\",\"cat\":\"message\",\"pid\":1,\"tid\":1,\"ts\":1,"
        "\"args\":{\"peer\":1,\"flows\":2,\"bytes\":64}}"),
     "a message event's name must be send or receive"},
    {EV("{\"ph\":\"i\",\"name\":\"send\",\"cat\":\"message\",\"pid\":1,\"tid\":1,\"ts\":1,"
        "\"args\":{\"peer\":1,\"bytes\":64}}"),
     "'args.flows' is missing"},
    {EV("{\"ph\":\"i\",\"name\":\"receive\",\"cat\":\"message\",\"pid\":1,\"tid\":1,"
        "\"ts\":1,\"args\":{\"peer\":-1,\"flows\":2,\"bytes\":64}}"),
     "'args.peer' is -1"},
    {EV("{\"ph\":\"i\",\"name\":\"send\",\"cat\":\"message\",\"pid\":1,\"tid\":1,\"ts\":1}"),
     "'args' is missing"},
    {EV("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":5}}"),
     "'args.name' must be a string"},
};

/* Each bad input fails with a message that names the file and says what is wrong. */
START_TEST(reader_rejects_bad_input)
{
    char err[1024];
    convoy__tr_trace_t *t = NULL;
    for (size_t k = 0; k < sizeof(bad_inputs) / sizeof(bad_inputs[0]); k++) {
        const bad_input_t *b = &bad_inputs[k];
        err[0] = '\0';
        int rc = convoy__tr_parse(b->text, strlen(b->text), "bad.json", &t, err, sizeof(err));
        ck_assert_msg(rc == -1, "input %zu was accepted: %s", k, b->text);
        ck_assert_msg(strncmp(err, "bad.json: ", 10) == 0, "input %zu: '%s'", k, err);
        ck_assert_msg(strstr(err, b->says) != NULL, "input %zu: '%s' does not say '%s'", k, err,
                      b->says);
    }
    /* Deep nesting. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 32);
    ck_assert_ptr_nonnull(deep);
    strcpy(deep, "{\"traceEvents\":");
    size_t len = strlen(deep);
    memset(deep + len, '[', depth);
    memset(deep + len + depth, ']', depth);
    strcpy(deep + len + 2 * depth, "}");
    ck_assert_int_eq(convoy__tr_parse(deep, strlen(deep), "deep.json", &t, err, sizeof(err)), -1);
    ck_assert_msg(strncmp(err, "deep.json: ", 11) == 0, "%s", err);
    free(deep);
    /* Files that do not exist or are folders. */
    ck_assert_int_eq(convoy__tr_load("/nonexistent/trace.json", &t, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/trace.json: cannot open"));
    ck_assert_int_eq(convoy__tr_load("/", &t, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "/: "));
    /* A valid trace with nothing convoy wrote still summarises. */
    static const char other[] = "[{\"ph\":\"B\",\"name\":\"x\"},{\"ph\":\"X\",\"name\":\"n\","
                                "\"pid\":3,\"tid\":1,\"ts\":0,\"dur\":2}]";
    ck_assert_int_eq(convoy__tr_parse(other, strlen(other), "o.json", &t, err, sizeof(err)), 0);
    convoy__tr_summary_t *s;
    ck_assert_int_eq(convoy__tr_summarise(t, &s, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(convoy__tr_figure(s, "pid 3: other time"));
    convoy__tr_summary_free(s);
    convoy__tr_free(t);
    /* Messages of the distributed mode: counted each way, with their flows and bytes. */
    static const char msgs[] =
        "[{\"ph\":\"i\",\"name\":\"send\",\"cat\":\"message\",\"pid\":1,\"tid\":32766,"
        "\"ts\":1,\"s\":\"t\",\"args\":{\"peer\":1,\"flows\":3,\"bytes\":100}},"
        "{\"ph\":\"i\",\"name\":\"send\",\"cat\":\"message\",\"pid\":1,\"tid\":32766,"
        "\"ts\":2,\"s\":\"t\",\"args\":{\"peer\":2,\"flows\":1,\"bytes\":50}},"
        "{\"ph\":\"i\",\"name\":\"receive\",\"cat\":\"message\",\"pid\":1,\"tid\":32766,"
        "\"ts\":3,\"s\":\"t\",\"args\":{\"peer\":1,\"flows\":4,\"bytes\":70}}]";
    ck_assert_msg(convoy__tr_parse(msgs, strlen(msgs), "m.json", &t, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_int_eq(convoy__tr_summarise(t, &s, err, sizeof(err)), 0);
    static const struct {
        const char *label;
        double value;
    } want[] = {{"messages sent", 2},     {"flows sent", 4},     {"message bytes sent", 150},
                {"messages received", 1}, {"flows received", 4}, {"message bytes received", 70}};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        const convoy__tr_figure_t *f = convoy__tr_figure(s, want[k].label);
        ck_assert_msg(f != NULL && f->value == want[k].value, "%s: %g", want[k].label,
                      f != NULL ? f->value : -1.0);
    }
    convoy__tr_summary_free(s);
    convoy__tr_free(t);
    /* The format before 2026-12-01 (pid and tid from 0, displayTimeUnit) still reads. */
    static const char old_format[] =
        "{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,"
        "\"args\":{\"name\":\"cpus\"}},{\"ph\":\"X\",\"name\":\"k\",\"cat\":\"cpu\",\"pid\":0,"
        "\"tid\":0,\"ts\":1,\"dur\":2,\"args\":{\"ring\":-1,\"task\":1,\"tasks\":1}}],"
        "\"displayTimeUnit\":\"ns\"}";
    ck_assert_msg(
        convoy__tr_parse(old_format, strlen(old_format), "old.json", &t, err, sizeof(err)) == 0,
        "%s", err);
    ck_assert_int_eq(convoy__tr_summarise(t, &s, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(convoy__tr_figure(s, "cpus: cpu time"));
    convoy__tr_summary_free(s);
    convoy__tr_free(t);
}
END_TEST

/* The plot of trace text js with the window [from, to] into a string (freed by the
 * caller); *rc_p gets convoy__tr_plot's result. */
static char *plot_text(const char *js, double from, double to, int *rc_p, char *err, size_t len)
{
    convoy__tr_trace_t *t;
    ck_assert_msg(convoy__tr_parse(js, strlen(js), "w.json", &t, err, len) == 0, "%s", err);
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    convoy__tr_plot_opts_t opts = {.width = 400, .from_us = from, .to_us = to};
    *rc_p = convoy__tr_plot(out, t, &opts, err, len);
    fclose(out);
    convoy__tr_free(t);
    return buf;
}

START_TEST(plot_window_and_density)
{
    /* Proves: --from/--to count from the first event (as the axis does); a window with no
     * event is -2 with a message and no output; many short events draw as rectangles of
     * partial opacity, not one solid bar. */
    char js[16384], err[512];
    size_t o = (size_t)snprintf(js, sizeof(js), "[");
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(js + o, sizeof(js) - o,
                              "%s{\"ph\":\"X\",\"name\":\"k\",\"cat\":\"launch\",\"pid\":2,"
                              "\"tid\":6,\"ts\":%d,\"dur\":0.1,\"args\":{\"ring\":1,\"tasks\":1}}",
                              i ? "," : "", 1000 + i);
    snprintf(js + o, sizeof(js) - o, "]");
    int rc;
    char *svg = plot_text(js, 0, 100, &rc, err, sizeof(err));
    ck_assert_msg(rc == 0, "%s", err);
    int rects = 0;
    for (const char *p = svg; (p = strstr(p, "<rect x=\"")) != NULL; p++)
        rects++;
    ck_assert_int_gt(rects, 20); /* one per few pixels, not one bar */
    ck_assert_ptr_nonnull(strstr(svg, "fill-opacity=\"0.15\""));
    ck_assert_ptr_nonnull(strstr(svg, ">0 us<")); /* the axis starts at the first event */
    free(svg);
    /* Events at 1000 .. 1099 us: the window 50 .. 60 from the first event holds some. */
    svg = plot_text(js, 50, 60, &rc, err, sizeof(err));
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(svg, ">50 us<"));
    free(svg);
    svg = plot_text(js, 1000, 1100, &rc, err, sizeof(err));
    ck_assert_int_eq(rc, -2);
    ck_assert_msg(strstr(err, "no event between 1000 and 1100 us") != NULL, "%s", err);
    ck_assert_str_eq(svg, "");
    free(svg);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace_read");
    TCase *tc = tu_tcase(s, "reader", 30);
    tcase_add_test(tc, reader_rejects_bad_input);
    tcase_add_test(tc, plot_window_and_density);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
