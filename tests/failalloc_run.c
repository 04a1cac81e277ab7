/*
 * failalloc_run: proves that every host allocation convoy makes in convoy_init, a tiny
 * task graph and convoy_fini may fail without a crash, an abort or a hang, and that
 * each call then either succeeds or returns CONVOY_ERR_NOMEM (a wait or an acquire may
 * report CONVOY_ERR_TASK_FAILED for a task that failed for want of memory). Run under
 * tests/failalloc.sh, which preloads tests/failalloc.c's library.
 *
 * The driver first runs the graph once failing nothing, to count the allocations N;
 * then for n = 1..N it runs it in a child process that fails the n-th one
 * (CONVOY_TEST_FAIL_ALLOC=n; with --all every one from the n-th on), with a timeout of
 * its own, as libuv's test runner does. It prints N and every n that went wrong (signal,
 * timeout, a status that is not allowed, a counter that lost an update, or more
 * allocations left live after convoy_fini than the run without failures leaves: a
 * leak), and exits 1 if any did.
 *
 *   failalloc_run [--all] [--trace] [--devices LIST] [--sched NAME] [--only n]
 *                 [--timeout S]
 *   failalloc_run --check-build   exit 77 in a sanitizer build (ASan and TSan replace
 *                                 malloc: the preloaded one would not be used), else 0
 * Under a debugger: CONVOY_TEST_FAIL_ALLOC=n gdb --args tests/failalloc_run --child
 * (with the library preloaded: set environment LD_PRELOAD ...).
 */
#include "config.h"

#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convoy.h"

#include "tests/sanitized.h"

/* From the preloaded library; NULL when it is not loaded. */
extern void failalloc_start(void) __attribute__((weak));
extern long failalloc_stop(void) __attribute__((weak));
extern long failalloc_live(void) __attribute__((weak));

#define NDATA 4
#define CHAIN 3

static const char *devices = "host", *sched = "fifo";
static int with_trace; /* write a trace (its buffers and writer allocate too) */

static int inc(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    (*(int *)t->flows[0])++;
    return 0;
}

/* The child's verdict on one status: allowed or not (with the call named). */
static int bad;
static int memory_failure; /* a wait reported a task failed for want of memory */
static void allowed(const char *call, convoy_status_t st, convoy_context_t *ctx)
{
    const char *msg = convoy_last_error(ctx);
    if (st == CONVOY_SUCCESS || st == CONVOY_ERR_NOMEM)
        return;
    if (st == CONVOY_ERR_TASK_FAILED && strstr(msg, "memory") != NULL) {
        memory_failure = 1;
        return;
    }
    /* An acquire's message does not say why the writer failed: the wait before said. */
    if (st == CONVOY_ERR_TASK_FAILED && memory_failure && strcmp(call, "convoy_data_acquire") == 0)
        return;
    fprintf(stderr, "failalloc: %s returned %s: %s\n", call, convoy_status_name(st), msg);
    bad = 1;
}

/* The graph: NDATA counters, CHAIN increments of each, then each acquired and checked
 * (when nothing failed, each must hold CHAIN). Returns the exit status of the child. */
static int graph(void)
{
    char a_dev[64], a_sched[64];
    snprintf(a_dev, sizeof(a_dev), "--convoy-devices=%s", devices);
    snprintf(a_sched, sizeof(a_sched), "--convoy-sched=%s", sched);
    char a_trace[64];
    snprintf(a_trace, sizeof(a_trace), "--convoy-trace=/tmp/failalloc-%ld.json", (long)getpid());
    char *args[] = {"failalloc", a_dev, a_sched, "--convoy-nthreads=2", "--convoy-verbose=error",
                    a_trace,     NULL};
    char **argv = args;
    int argc = with_trace ? 6 : 5;
    convoy_context_t *ctx = NULL;
    convoy_status_t st = convoy_init(&argc, &argv, &ctx);
    allowed("convoy_init", st, NULL);
    if (st != CONVOY_SUCCESS)
        return bad;
    int failed = 0;
    convoy_access_t mode = CONVOY_RW;
    convoy_class_t *cls = NULL;
    st = convoy_class_new(ctx, "inc", 1, &mode, CONVOY_CLASS_BATCHABLE, &cls);
    allowed("convoy_class_new", st, ctx);
    if (cls != NULL) {
        st = convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, inc);
        allowed("convoy_class_set_chore", st, ctx);
        failed |= st != CONVOY_SUCCESS;
        st = convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, inc);
        allowed("convoy_class_set_chore", st, ctx);
        failed |= st != CONVOY_SUCCESS;
    }
    static int fallback[NDATA];
    int *x[NDATA];
    convoy_data_t *d[NDATA] = {NULL};
    for (int i = 0; i < NDATA; i++) {
        x[i] = convoy_host_alloc(ctx, sizeof(int));
        if (x[i] == NULL) /* NULL is its way of saying out of memory */
            x[i] = &fallback[i];
        *x[i] = 0;
        st = convoy_data_new(ctx, x[i], sizeof(int), &d[i]);
        allowed("convoy_data_new", st, ctx);
    }
    for (int k = 0; k < CHAIN && cls != NULL; k++)
        for (int i = 0; i < NDATA; i++) {
            if (d[i] == NULL)
                continue;
            st = convoy_task_insert(ctx, cls, NULL, 0, &d[i]);
            allowed("convoy_task_insert", st, ctx);
            failed |= st != CONVOY_SUCCESS;
        }
    st = convoy_wait(ctx);
    allowed("convoy_wait", st, ctx);
    /* CONVOY_ERR_NOMEM from a wait: every task ran, only the flush home could not start;
     * an acquire then brings each datum home, and nothing may be lost. */
    failed |= st != CONVOY_SUCCESS && st != CONVOY_ERR_NOMEM;
    for (int i = 0; i < NDATA; i++) {
        if (d[i] == NULL)
            continue;
        st = convoy_data_acquire(d[i], CONVOY_READ);
        allowed("convoy_data_acquire", st, ctx);
        if (st == CONVOY_SUCCESS && !failed && cls != NULL && *x[i] != CHAIN) {
            fprintf(stderr, "failalloc: counter %d is %d, expected %d\n", i, *x[i], CHAIN);
            bad = 1;
        }
    }
    convoy_data_free(d[0]); /* the others are left for fini */
    convoy_fini(ctx);
    if (with_trace)
        unlink(a_trace + strlen("--convoy-trace="));
    return bad;
}

/* A crash prints the faulting thread's stack (addresses: addr2line -e failalloc_run). */
static void on_crash(int sig)
{
    void *frames[32];
    int n = backtrace(frames, 32);
    char line[64];
    int len = snprintf(line, sizeof(line), "failalloc: signal %d, backtrace:\n", sig);
    if (write(2, line, (size_t)len) < 0) {
    }
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The child: run the graph with the allocator armed; write the count to fd. */
static int child(int fd)
{
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc now: in the handler it would allocate */
    int sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
    for (int i = 0; i < 5; i++)
        signal(sigs[i], on_crash);
    failalloc_start();
    /* Read by failalloc_start; convoy would warn about variables it does not know. */
    unsetenv("CONVOY_TEST_FAIL_ALLOC");
    unsetenv("CONVOY_TEST_FAIL_ALLOC_ALL");
    unsetenv("CONVOY_TEST_FAIL_ALLOC_SCOPE");
    unsetenv("CONVOY_TEST_FAIL_ALLOC_TRACE");
    int status = graph();
    long n[2] = {failalloc_stop(), failalloc_live()};
    if (fd >= 0 && write(fd, n, sizeof(n)) != (ssize_t)sizeof(n))
        return 2;
    return status;
}

/* Allocations still live after convoy_fini in the run without failures (what convoy
 * keeps for the process); a run that fails one and leaves more has leaked. */
static long live_baseline = -1;

/* Run one child failing allocation n (0: none) with a timeout; returns 0 when it went
 * well, and the number of allocations it counted in *count_p. */
static int run_one(long n, int all, int timeout_s, long *count_p)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        char text[32];
        snprintf(text, sizeof(text), "%ld", n);
        setenv("CONVOY_TEST_FAIL_ALLOC", text, 1);
        setenv("CONVOY_TEST_FAIL_ALLOC_ALL", all ? "1" : "0", 1);
        alarm((unsigned)timeout_s); /* a hang ends as SIGALRM */
        _exit(child(fds[1]));
    }
    close(fds[1]);
    long got[2] = {-1, 0};
    if (read(fds[0], got, sizeof(got)) != (ssize_t)sizeof(got))
        got[0] = -1;
    long count = got[0];
    close(fds[0]);
    int ws;
    while (waitpid(pid, &ws, 0) < 0) {
    }
    *count_p = count;
    if (n == 0)
        live_baseline = got[1];
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
        if (count < 0 || got[1] <= live_baseline)
            return 0;
        printf("n=%ld: leak: %ld allocations live after convoy_fini, %ld without failures\n", n,
               got[1], live_baseline);
        return 1;
    }
    if (WIFSIGNALED(ws))
        printf("n=%ld: %s (signal %d)\n", n,
               WTERMSIG(ws) == SIGALRM ? "hang: timed out" : strsignal(WTERMSIG(ws)), WTERMSIG(ws));
    else
        printf("n=%ld: exit status %d\n", n, WEXITSTATUS(ws));
    return 1;
}

int main(int argc, char **argv)
{
    int all = 0, timeout_s = 30, as_child = 0;
    long only = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check-build") == 0)
            return SANITIZED ? 77 : 0;
        else if (strcmp(argv[i], "--all") == 0)
            all = 1;
        else if (strcmp(argv[i], "--trace") == 0)
            with_trace = 1;
        else if (strcmp(argv[i], "--child") == 0)
            as_child = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--devices") == 0)
            devices = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--sched") == 0)
            sched = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--only") == 0)
            only = atol(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0)
            timeout_s = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: failalloc_run [--all] [--trace] [--devices LIST] [--sched NAME] "
                    "[--only n] [--timeout S] | --check-build | --child\n");
            return 2;
        }
    }
    if (SANITIZED || failalloc_start == NULL || failalloc_stop == NULL || failalloc_live == NULL) {
        printf("failalloc_run: skipped: %s\n",
               SANITIZED ? "a sanitizer build (ASan and TSan intercept malloc)"
                         : "tests/failalloc.c's library is not preloaded (run tests/failalloc.sh)");
        return 77;
    }
    if (as_child)
        return child(-1);
    long total;
    if (run_one(0, 0, timeout_s, &total) != 0 || total <= 0) {
        printf("failalloc_run: the run without failures went wrong (%ld allocations)\n", total);
        return 1;
    }
    int failures = 0;
    long first = only > 0 ? only : 1, last = only > 0 ? only : total;
    for (long n = first; n <= last; n++) {
        long count;
        failures += run_one(n, all, timeout_s, &count) != 0;
    }
    printf("failalloc_run: devices %s, sched %s%s%s: %ld allocations (%ld live after fini), n = "
           "%ld..%ld covered, %d failures\n",
           devices, sched, with_trace ? ", traced" : "", all ? ", failing all from n on" : "",
           total, live_baseline, first, last, failures);
    return failures == 0 ? 0 : 1;
}
