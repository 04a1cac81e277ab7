/*
 * convoy-trace: read the traces convoy writes (CONVOY_TRACE=run.json).
 *
 *   convoy-trace summary run.json            per-stage time, rings, submissions, latency
 *   convoy-trace compare a.json b.json       the same figures side by side, with b/a
 *   convoy-trace plot run.json -o run.svg    an SVG timeline, one lane per stream/worker
 *   convoy-trace merge r0.json r1.json... -o all.json   per-rank traces in one file
 *
 * Exit status: 0 on success; 2 for a usage error or an input that cannot be read or is
 * not a valid trace (the message names the file and what is wrong); 1 when the output
 * cannot be written.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_read.h"

#define EXIT_BAD_INPUT 2
#define EXIT_OUTPUT 1

static const char usage_text[] =
    "usage: convoy-trace summary TRACE.json\n"
    "       convoy-trace compare A.json B.json\n"
    "       convoy-trace plot TRACE.json -o OUT.svg [--width PIXELS] [--from US] [--to US]\n"
    "       convoy-trace merge RANK0.json RANK1.json... -o OUT.json\n"
    "       convoy-trace --help | --version\n"
    "\n"
    "Reads the Chrome trace-event JSON that convoy writes with CONVOY_TRACE=FILE.\n"
    "  summary  time per stage and device, ring sizes, submissions (copies per\n"
    "           submission, bytes, achieved bandwidth per copy method, splits), task\n"
    "           latency from insertion to completion (p50, p90, p99), the slowest tasks,\n"
    "           failed and cancelled tasks\n"
    "  compare  the same figures for two traces side by side, with the ratio b/a\n"
    "  plot     an SVG timeline: one lane per stream or worker, copies and launches as\n"
    "           colored rectangles; --from/--to select a window (microseconds from the\n"
    "           first event, as on the axis), --width the picture's width (default 1600)\n"
    "  merge    the per-rank traces of a distributed run (in rank order) in one file:\n"
    "           rank k's processes become pids k * 1000 + pid, named 'rank k: ...', on\n"
    "           one clock where the traces record theirs (-o - : standard output)\n"
    "Exit status: 0 success, 1 the output could not be written, 2 usage error, bad input\n"
    "or a plot window with no event.\n";

static int usage(const char *why)
{
    if (why != NULL)
        fprintf(stderr, "convoy-trace: %s\n", why);
    fputs(usage_text, stderr);
    return EXIT_BAD_INPUT;
}

/* Load and summarise one file; prints the error and returns -1 on failure. */
static int load(const char *path, convoy__tr_trace_t **t_p, convoy__tr_summary_t **s_p)
{
    char err[1024];
    if (convoy__tr_load(path, t_p, err, sizeof(err)) != 0) {
        fprintf(stderr, "convoy-trace: %s\n", err);
        return -1;
    }
    if (s_p != NULL && convoy__tr_summarise(*t_p, s_p, err, sizeof(err)) != 0) {
        fprintf(stderr, "convoy-trace: %s\n", err);
        convoy__tr_free(*t_p);
        return -1;
    }
    return 0;
}

static int finish_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "convoy-trace: writing to standard output failed: %s\n", strerror(errno));
        return EXIT_OUTPUT;
    }
    return 0;
}

static int cmd_summary(int argc, char **argv)
{
    if (argc != 1)
        return usage("summary takes one trace file");
    convoy__tr_trace_t *t;
    convoy__tr_summary_t *s;
    if (load(argv[0], &t, &s) != 0)
        return EXIT_BAD_INPUT;
    convoy__tr_print(stdout, t, s);
    convoy__tr_summary_free(s);
    convoy__tr_free(t);
    return finish_stdout();
}

static int cmd_compare(int argc, char **argv)
{
    if (argc != 2)
        return usage("compare takes two trace files");
    convoy__tr_trace_t *ta, *tb;
    convoy__tr_summary_t *a, *b;
    if (load(argv[0], &ta, &a) != 0)
        return EXIT_BAD_INPUT;
    if (load(argv[1], &tb, &b) != 0) {
        convoy__tr_summary_free(a);
        convoy__tr_free(ta);
        return EXIT_BAD_INPUT;
    }
    convoy__tr_print_compare(stdout, ta, a, tb, b);
    convoy__tr_summary_free(a);
    convoy__tr_summary_free(b);
    convoy__tr_free(ta);
    convoy__tr_free(tb);
    return finish_stdout();
}

/* A number option's value: finite, the whole string. */
static int parse_number(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = s != NULL ? strtod(s, &end) : NAN;
    if (s == NULL || end == s || *end != '\0' || errno != 0 || !isfinite(v)) {
        fprintf(stderr, "convoy-trace: %s needs a number, not '%s'\n", opt, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* argv[0] is "plot"; options anywhere (getopt_long permutes), one trace file. */
static int cmd_plot(int argc, char **argv)
{
    const char *in = NULL, *outp = NULL;
    convoy__tr_plot_opts_t opts = {0};
    double width = 0;
    enum { OPT_WIDTH = 256, OPT_FROM, OPT_TO };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"width", required_argument, NULL, OPT_WIDTH},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': outp = optarg; break;
        case OPT_WIDTH:
        case OPT_FROM:
        case OPT_TO: {
            double *dst = c == OPT_WIDTH ? &width : c == OPT_FROM ? &opts.from_us : &opts.to_us;
            const char *name = c == OPT_WIDTH ? "--width" : c == OPT_FROM ? "--from" : "--to";
            if (parse_number(name, optarg, dst) != 0)
                return usage(NULL);
            break;
        }
        case ':':
            fprintf(stderr, "convoy-trace: %s needs a value\n", argv[optind - 1]);
            return usage(NULL);
        default:
            fprintf(stderr, "convoy-trace: unknown option %s\n", argv[optind - 1]);
            return usage(NULL);
        }
    }
    for (int i = optind; i < argc; i++) {
        if (in != NULL)
            return usage("plot takes one trace file");
        in = argv[i];
    }
    if (in == NULL || outp == NULL)
        return usage("plot needs a trace file and -o OUT.svg");
    if (width != 0 && (width < 400 || width > 100000))
        return usage("--width must be between 400 and 100000 pixels");
    opts.width = (int)width;
    if ((opts.from_us != 0 || opts.to_us != 0) && !(opts.to_us > opts.from_us))
        return usage("--to must be after --from");
    convoy__tr_trace_t *t;
    if (load(in, &t, NULL) != 0)
        return EXIT_BAD_INPUT;
    int to_stdout = strcmp(outp, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(outp, "w");
    if (out == NULL) {
        fprintf(stderr, "convoy-trace: cannot write %s: %s\n", outp, strerror(errno));
        convoy__tr_free(t);
        return EXIT_OUTPUT;
    }
    char err[1024];
    int rc = convoy__tr_plot(out, t, &opts, err, sizeof(err));
    if (!to_stdout && fclose(out) != 0 && rc == 0) {
        snprintf(err, sizeof(err), "writing %s failed: %s", outp, strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "convoy-trace: %s\n", err);
        if (!to_stdout)
            remove(outp);
    }
    convoy__tr_free(t);
    return rc == -2 ? EXIT_BAD_INPUT : rc != 0 ? EXIT_OUTPUT : 0;
}

/* argv[0] is "merge"; -o anywhere, two traces or more. */
static int cmd_merge(int argc, char **argv)
{
    const char *outp = NULL;
    const char **in = calloc((size_t)argc, sizeof(*in));
    int n = 0;
    if (in == NULL) {
        fprintf(stderr, "convoy-trace: out of memory\n");
        return EXIT_OUTPUT;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 == argc) {
                free(in);
                fprintf(stderr, "convoy-trace: %s needs a value\n", argv[i]);
                return usage(NULL);
            }
            outp = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            free(in);
            fprintf(stderr, "convoy-trace: unknown option %s\n", argv[i]);
            return usage(NULL);
        } else {
            in[n++] = argv[i];
        }
    }
    if (n < 2 || outp == NULL) {
        free(in);
        return usage("merge needs two trace files or more and -o OUT.json");
    }
    int to_stdout = strcmp(outp, "-") == 0;
    /* Written under a temporary name: a failed merge leaves no partial file at OUT. */
    char *tmp = NULL;
    FILE *out = stdout;
    if (!to_stdout) {
        size_t len = strlen(outp) + 8;
        tmp = malloc(len);
        if (tmp != NULL)
            snprintf(tmp, len, "%s.part", outp);
        out = tmp != NULL ? fopen(tmp, "w") : NULL;
        if (out == NULL) {
            fprintf(stderr, "convoy-trace: cannot write %s: %s\n", tmp ? tmp : outp,
                    strerror(errno));
            free(tmp);
            free(in);
            return EXIT_OUTPUT;
        }
    }
    char err[1024];
    int rc = convoy__tr_merge(in, n, out, err, sizeof(err));
    if (!to_stdout && fclose(out) != 0 && rc == 0) {
        snprintf(err, sizeof(err), "writing %s failed: %s", tmp, strerror(errno));
        rc = 1;
    }
    if (rc == 0 && !to_stdout && rename(tmp, outp) != 0) {
        snprintf(err, sizeof(err), "cannot rename %s to %s: %s", tmp, outp, strerror(errno));
        rc = 1;
    }
    if (rc != 0) {
        fprintf(stderr, "convoy-trace: %s\n", err);
        if (!to_stdout)
            remove(tmp);
    }
    free(tmp);
    free(in);
    if (rc == 0 && to_stdout)
        return finish_stdout();
    return rc < 0 ? EXIT_BAD_INPUT : rc > 0 ? EXIT_OUTPUT : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage("no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return finish_stdout();
    }
    if (strcmp(cmd, "--version") == 0) {
#ifdef PACKAGE_VERSION
        printf("convoy-trace (convoy) %s\n", PACKAGE_VERSION);
#else
        printf("convoy-trace (convoy)\n");
#endif
        return finish_stdout();
    }
    if (strcmp(cmd, "summary") == 0)
        return cmd_summary(argc - 2, argv + 2);
    if (strcmp(cmd, "compare") == 0)
        return cmd_compare(argc - 2, argv + 2);
    if (strcmp(cmd, "plot") == 0)
        return cmd_plot(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0)
        return cmd_merge(argc - 1, argv + 1);
    fprintf(stderr, "convoy-trace: unknown command '%s'\n", cmd);
    return usage(NULL);
}
