/*
 * Fuzzing the trace reader (tools/trace_read.c, trace_summary.c, trace_svg.c): whatever
 * the bytes, parsing either fails with a message that names the input, or succeeds and
 * the summary, the comparison and the plot run to the end; never a crash, a leak or an
 * out-of-bounds access (run it under ASan/UBSan).
 *
 * Two ways to build it:
 *  - libFuzzer (clang): -fsanitize=fuzzer,address -DCONVOY_TRACE_FUZZ_LIBFUZZER; libFuzzer
 *    provides main() and calls LLVMFuzzerTestOneInput.
 *  - anything else (gcc in CI): the main() below mutates a built-in corpus of valid and
 *    hostile traces for a bounded time:
 *      trace_fuzz [--seconds N] [--iterations N] [--seed S] [FILE...]
 *    FILEs, when given, are run once each (to replay an input that failed). Each run
 *    prints its seed; --seed S --iterations N replays it exactly.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *null_out(void)
{
    static FILE *f;
    if (f == NULL && (f = fopen("/dev/null", "w")) == NULL) {
        perror("trace_fuzz: /dev/null");
        abort();
    }
    return f;
}

static unsigned long accepted; /* inputs that parsed */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024] = "";
    convoy__tr_trace_t *t = NULL;
    if (convoy__tr_parse(data, size, "fuzz", &t, err, sizeof(err)) != 0) {
        /* A failure must say which input and what is wrong, in printable text. */
        int printable = 1;
        for (const char *c = err; *c != '\0'; c++)
            printable &= (unsigned char)*c >= 0x20 && *c != 0x7f;
        if (strncmp(err, "fuzz: ", 6) != 0 || strlen(err) < 10 || !printable) {
            fprintf(stderr, "trace_fuzz: bad error message: '%s'\n", err);
            abort();
        }
        return 0;
    }
    accepted++;
    convoy__tr_summary_t *s = NULL;
    if (convoy__tr_summarise(t, &s, err, sizeof(err)) == 0) {
        convoy__tr_print(null_out(), t, s);
        convoy__tr_print_compare(null_out(), t, s, t, s);
        convoy__tr_summary_free(s);
    }
    convoy__tr_plot_opts_t opts = {.width = 800};
    convoy__tr_plot(null_out(), t, &opts, err, sizeof(err));
    convoy__tr_free(t);
    return 0;
}

#ifndef CONVOY_TRACE_FUZZ_LIBFUZZER

/* ------------------------------------------------------------------------------------
 * A small mutation fuzzer, for builds without libFuzzer.
 * ---------------------------------------------------------------------------------- */

#define MAX_INPUT (1 << 14)
#define CORPUS_MAX 64

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t rnd_below(size_t n)
{
    return n > 0 ? (size_t)(rnd() % n) : 0;
}

typedef struct buf {
    char *p;
    size_t len;
} buf_t;

static buf_t corpus[CORPUS_MAX];
static int ncorpus;

static void corpus_add(const char *p, size_t len)
{
    int slot = ncorpus < CORPUS_MAX ? ncorpus++ : (int)rnd_below(CORPUS_MAX);
    char *copy = malloc(len ? len : 1);
    if (copy == NULL)
        return;
    memcpy(copy, p, len);
    free(corpus[slot].p);
    corpus[slot] = (buf_t){copy, len};
}

/* Pieces that stress the reader: hostile numbers, wrong types, odd strings. */
static const char *const tokens[] = {
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "null",
    "true",
    "false",
    "-1",
    "0",
    "-0.0",
    "1e308",
    "1e999",
    "-1e999",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "1e15",
    "1e16",
    "NaN",
    "Infinity",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\"\\uffff\"",
    "\"\xff\"",
    "\"ph\":\"X\"",
    "\"ph\":\"i\"",
    "\"ph\":\"M\"",
    "\"ph\":\"C\"",
    "\"ph\":\"\"",
    "\"dur\":-5",
    "\"ts\":\"1\"",
    "\"pid\":2147483648",
    "\"tid\":-2147483649",
    "\"cat\":\"copy\"",
    "\"cat\":\"task\"",
    "\"cat\":\"cpu\"",
    "\"cat\":\"launch\"",
    "\"cat\":\"message\"",
    "\"name\":\"receive\"",
    "\"peer\":-1",
    "\"args\":{}",
    "\"args\":[]",
    "\"name\":\"pushout\"",
    "\"name\":\"completed\"",
    "\"method\":\"warp\"",
    "\"split\":1",
    "\"bytes\":-1",
    "\"copies\":1e3",
    "\"task\":-7",
    "\"ring\":-2",
    "\"traceEvents\":",
    "\"name\":\"process_name\"",
    "\"args\":{\"name\":5}",
    "\"s\":\"t\"",
};

/* A valid trace with every kind of event convoy writes, and a few variations. */
static void seed_corpus(void)
{
    static const char valid[] =
        "{\"traceEvents\":[\n"
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"sim0\"}},"
        "\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"stage-"
        "in\"}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":32767,\"args\":{\"name\":"
        "\"tasks\"}},\n"
        "{\"ph\":\"X\",\"name\":\"stage-in\",\"cat\":\"copy\",\"pid\":1,\"tid\":1,\"ts\":10.5,"
        "\"dur\":3.25,\"args\":{\"ring\":0,\"copies\":3,\"bytes\":24576,\"method\":\"sm\","
        "\"split\":false}},\n"
        "{\"ph\":\"X\",\"name\":\"pushout\",\"cat\":\"copy\",\"pid\":1,\"tid\":3,\"ts\":20,"
        "\"dur\":1,\"args\":{\"ring\":0,\"copies\":1,\"bytes\":67108864,\"method\":\"engine\","
        "\"split\":true,\"queued_us\":0.5}},\n"
        "{\"ph\":\"X\",\"name\":\"evict\",\"cat\":\"copy\",\"pid\":1,\"tid\":3,\"ts\":22,"
        "\"dur\":1,\"args\":{\"ring\":1,\"copies\":2,\"bytes\":16,\"method\":\"loop\","
        "\"split\":false}},\n"
        "{\"ph\":\"X\",\"name\":\"axpy\",\"cat\":\"launch\",\"pid\":1,\"tid\":5,\"ts\":14,"
        "\"dur\":5,\"args\":{\"ring\":0,\"tasks\":3}},\n"
        "{\"ph\":\"X\",\"name\":\"axpy\",\"cat\":\"cpu\",\"pid\":0,\"tid\":0,\"ts\":1,"
        "\"dur\":2,\"args\":{\"task\":4,\"ring\":-1,\"tasks\":1}},\n"
        "{\"ph\":\"i\",\"name\":\"inserted\",\"cat\":\"task\",\"pid\":0,\"tid\":32767,\"ts\":0,"
        "\"s\":\"t\",\"args\":{\"task\":0,\"ring\":-1,\"class\":\"axpy\"}},\n"
        "{\"ph\":\"i\",\"name\":\"ready\",\"cat\":\"task\",\"pid\":0,\"tid\":32767,\"ts\":1,"
        "\"s\":\"t\",\"args\":{\"task\":0,\"ring\":-1,\"class\":\"axpy\"}},\n"
        "{\"ph\":\"i\",\"name\":\"completed\",\"cat\":\"task\",\"pid\":0,\"tid\":32767,\"ts\":25,"
        "\"s\":\"t\",\"args\":{\"task\":0,\"ring\":0,\"class\":\"axpy\"}},\n"
        "{\"ph\":\"i\",\"name\":\"failed\",\"cat\":\"task\",\"pid\":0,\"tid\":32767,\"ts\":26,"
        "\"s\":\"t\",\"args\":{\"task\":1,\"ring\":0,\"class\":\"axpy\"}},\n"
        "{\"ph\":\"i\",\"name\":\"send\",\"cat\":\"message\",\"pid\":0,\"tid\":32766,\"ts\":27,"
        "\"s\":\"t\",\"args\":{\"peer\":1,\"flows\":3,\"bytes\":4096}},\n"
        "{\"ph\":\"i\",\"name\":\"receive\",\"cat\":\"message\",\"pid\":0,\"tid\":32766,"
        "\"ts\":28,\"s\":\"t\",\"args\":{\"peer\":1,\"flows\":1,\"bytes\":64}},\n"
        "{\"ph\":\"C\",\"name\":\"sim0 memory\",\"pid\":1,\"tid\":0,\"ts\":3,"
        "\"args\":{\"value\":4096}},\n"
        "{\"ph\":\"s\",\"name\":\"dep\",\"cat\":\"dep\",\"pid\":0,\"tid\":32767,\"ts\":25,"
        "\"id\":1,\"bp\":\"e\",\"args\":{\"task\":0,\"successor\":1}},\n"
        "{\"ph\":\"f\",\"name\":\"dep\",\"cat\":\"dep\",\"pid\":0,\"tid\":32767,\"ts\":25,"
        "\"id\":1,\"bp\":\"e\",\"args\":{\"task\":0,\"successor\":1}}\n"
        "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"convoy_version\":\"0.1.0\"}}\n";
    corpus_add(valid, sizeof(valid) - 1);
    static const char *const small[] = {
        "[]",
        "{}",
        "{\"traceEvents\":[]}",
        "{\"traceEvents\":{}}",
        "[{\"ph\":\"B\"}]",
        "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":0}]}",
    };
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
        corpus_add(small[i], strlen(small[i]));
}

/* Apply 1 to 4 random mutations to b (capacity MAX_INPUT). */
static void mutate(char *b, size_t *len)
{
    int rounds = 1 + (int)rnd_below(4);
    for (int r = 0; r < rounds; r++) {
        size_t n = *len, at = rnd_below(n + 1);
        switch (rnd_below(8)) {
        case 0: /* flip a bit */
            if (n > 0)
                b[rnd_below(n)] ^= (char)(1u << rnd_below(8));
            break;
        case 1: /* a random byte */
            if (n > 0)
                b[rnd_below(n)] = (char)rnd();
            break;
        case 2: { /* insert a token */
            const char *tk = tokens[rnd_below(sizeof(tokens) / sizeof(tokens[0]))];
            size_t tl = strlen(tk);
            if (n + tl <= MAX_INPUT) {
                memmove(b + at + tl, b + at, n - at);
                memcpy(b + at, tk, tl);
                *len = n + tl;
            }
            break;
        }
        case 3: { /* delete a range */
            size_t dl = rnd_below(65);
            if (at + dl > n)
                dl = n - at;
            memmove(b + at, b + at + dl, n - at - dl);
            *len = n - dl;
            break;
        }
        case 4: /* truncate */ *len = at; break;
        case 5: { /* duplicate a range (more events) */
            size_t dl = rnd_below(n - at + 1);
            if (n + dl <= MAX_INPUT) {
                memmove(b + at + dl, b + at, n - at);
                *len = n + dl;
            }
            break;
        }
        case 6: { /* splice in part of another corpus entry */
            const buf_t *o = &corpus[rnd_below((size_t)ncorpus)];
            size_t from = rnd_below(o->len + 1), sl = rnd_below(o->len - from + 1);
            if (n + sl <= MAX_INPUT) {
                memmove(b + at + sl, b + at, n - at);
                memcpy(b + at, o->p + from, sl);
                *len = n + sl;
            }
            break;
        }
        default: { /* deep nesting */
            size_t depth = 1 + rnd_below(MAX_INPUT / 4);
            if (n + 2 * depth <= MAX_INPUT) {
                memmove(b + at + 2 * depth, b + at, n - at);
                memset(b + at, '[', depth);
                memset(b + at + depth, ']', depth);
                *len = n + 2 * depth;
            }
            break;
        }
        }
    }
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return 2;
    }
    static char data[1 << 24];
    size_t len = fread(data, 1, sizeof(data), f);
    fclose(f);
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    printf("trace_fuzz: %s: ok\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = 5;
    unsigned long iterations = 0; /* 0: until the time is up */
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    int files = 0, rc = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: trace_fuzz [--seconds N] [--iterations N] [--seed S] "
                            "[FILE...]\n");
            return 2;
        } else {
            files++;
            rc |= run_file(argv[i]);
        }
    }
    if (files > 0)
        return rc;
    rng_state = seed ? seed : 1;
    printf("trace_fuzz: seed %llu, %g seconds\n", (unsigned long long)seed, seconds);
    fflush(stdout);
    seed_corpus();
    static char b[MAX_INPUT];
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long n = 0;
    for (;; n++) {
        if (iterations > 0 && n >= iterations)
            break;
        if (iterations == 0 && (n & 63) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) >=
                seconds)
                break;
        }
        const buf_t *src = &corpus[rnd_below((size_t)ncorpus)];
        size_t len = src->len;
        memcpy(b, src->p, len);
        mutate(b, &len);
        unsigned long before = accepted;
        LLVMFuzzerTestOneInput((const uint8_t *)b, len);
        if (accepted > before && rnd_below(4) == 0)
            corpus_add(b, len); /* valid inputs breed */
    }
    printf("trace_fuzz: %lu inputs, %lu parsed as traces, no failure\n", n, accepted);
    for (int i = 0; i < ncorpus; i++)
        free(corpus[i].p);
    return 0;
}

#endif /* CONVOY_TRACE_FUZZ_LIBFUZZER */
