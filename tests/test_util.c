/*
 * Helpers shared by the Check suites (see test_util.h).
 */
#include "config.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/test_util.h"

extern char **environ;

static double scale = 1.0;
static int64_t seed_override = -1;
static char verbose[32];
static int forking = 1;
static double watchdog_s; /* the running test's limit, for the CK_FORK=no watchdog */

double tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double tu_scale(void)
{
    return scale;
}

int tu_scaled(int n, int min)
{
    double x = (double)n * scale;
    return x < (double)min ? min : (int)x;
}

double tu_slowdown(void)
{
    return TU_SANITIZED ? 10.0 : 1.0;
}

int64_t tu_seed_override(void)
{
    return seed_override;
}

void tu_env_clear(void)
{
    /* unsetenv changes environ: collect the names first. */
    char names[64][128];
    int n;
    do {
        n = 0;
        for (char **e = environ; e != NULL && *e != NULL && n < 64; e++) {
            if (strncmp(*e, "CONVOY_", 7) != 0)
                continue;
            size_t l = strcspn(*e, "=");
            if (l >= sizeof(names[0]))
                l = sizeof(names[0]) - 1;
            memcpy(names[n], *e, l);
            names[n][l] = '\0';
            n++;
        }
        for (int i = 0; i < n; i++)
            unsetenv(names[i]);
    } while (n == 64);
}

int tu_thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

int tu_thread_count_settled(int want)
{
    int now = tu_thread_count();
    for (double t0 = tu_now(); now > want && tu_now() - t0 < tu_slowdown(); now = tu_thread_count())
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    return now;
}

int tu_thread_count_stable(void)
{
    int now = tu_thread_count();
    double t0 = tu_now(), since = t0;
    while (tu_now() - since < 0.05 && tu_now() - t0 < tu_slowdown()) {
        nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
        int n = tu_thread_count();
        if (n != now) {
            now = n;
            since = tu_now();
        }
    }
    return now;
}

/* Non-zero when a debugger (or any tracer) is attached. */
static int traced(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return 0;
    char line[256];
    int pid = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "TracerPid: %d", &pid) == 1)
            break;
    fclose(f);
    return pid != 0;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test watchdog: the test ran past its time limit (CK_FORK=no)\n";
    ssize_t rc = write(2, msg, sizeof(msg) - 1);
    (void)rc;
    _exit(124);
}

static void fixture_setup(void)
{
    convoy_param_preset_clear();
    tu_env_clear();
    if (!forking && watchdog_s > 0 && !traced()) {
        signal(SIGALRM, on_alarm);
        alarm((unsigned)(watchdog_s + 1));
    }
}

static void fixture_teardown(void)
{
    if (!forking)
        alarm(0);
    convoy_param_preset_clear();
    tu_env_clear();
}

TCase *tu_tcase(Suite *s, const char *name, double seconds)
{
    TCase *tc = tcase_create(name);
    double limit = seconds * tu_slowdown();
    tcase_set_timeout(tc, limit);
    /* One watchdog length for every test case: the longest asked for. */
    if (limit > watchdog_s)
        watchdog_s = limit;
    tcase_add_checked_fixture(tc, fixture_setup, fixture_teardown);
    suite_add_tcase(s, tc);
    return tc;
}

void tu_set_presets(const char *const *presets)
{
    convoy_param_preset_clear();
    for (int i = 0; presets != NULL && presets[i] != NULL; i += 2) {
        ck_assert_msg(presets[i + 1] != NULL, "preset '%s' has no value", presets[i]);
        convoy_status_t st = convoy_param_preset(presets[i], presets[i + 1]);
        ck_assert_msg(st == CONVOY_SUCCESS, "preset %s=%s: %s: %s", presets[i], presets[i + 1],
                      convoy_status_name(st), convoy_last_error(NULL));
    }
    if (verbose[0] != '\0')
        ck_assert_int_eq(convoy_param_preset("verbose", verbose), CONVOY_SUCCESS);
}

convoy_context_t *tu_init(const char *const *presets)
{
    tu_set_presets(presets);
    convoy_context_t *ctx = NULL;
    convoy_status_t st = convoy_init(NULL, NULL, &ctx);
    ck_assert_msg(st == CONVOY_SUCCESS, "convoy_init: %s: %s", convoy_status_name(st),
                  convoy_last_error(NULL));
    ck_assert_ptr_nonnull(ctx);
    return ctx;
}

void tu_with_presets(const char *const *presets, void (*body)(convoy_context_t *ctx, void *arg),
                     void *arg)
{
    convoy_context_t *ctx = tu_init(presets);
    body(ctx, arg);
    convoy_fini(ctx);
    convoy_param_preset_clear();
}

void tu_assert_error_has_(const convoy_context_t *ctx, const char *file, int line, ...)
{
    const char *msg = convoy_last_error(ctx);
    va_list ap;
    va_start(ap, line);
    for (const char *want = va_arg(ap, const char *); want != NULL;
         want = va_arg(ap, const char *)) {
        if (strstr(msg, want) == NULL) {
            va_end(ap);
            ck_abort_msg("%s:%d: the error message \"%s\" does not contain \"%s\"", file, line, msg,
                         want);
        }
    }
    va_end(ap);
}

void tu_rng_seed(tu_rng_t *r, uint64_t seed)
{
    r->s = seed * 0x2545f4914f6cdd1dull + 0x1234567;
}

uint64_t tu_rng_next(tu_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int tu_rng_range(tu_rng_t *r, int lo, int hi)
{
    return lo + (int)(tu_rng_next(r) % (uint64_t)(hi - lo + 1));
}

int tu_main(Suite *s)
{
    const char *e = getenv("CONVOY_TEST_SCALE");
    if (e != NULL && e[0] != '\0') {
        char *end;
        double x = strtod(e, &end);
        if (*end != '\0' || !(x > 0 && x <= 100)) {
            fprintf(stderr, "CONVOY_TEST_SCALE='%s': expected a number in (0, 100]\n", e);
            return 2;
        }
        scale = x;
    } else if (TU_SANITIZED) {
        scale = 0.2;
    }
    e = getenv("CONVOY_TEST_SEED");
    if (e != NULL && e[0] != '\0')
        seed_override = strtoll(e, NULL, 0);
    e = getenv("CONVOY_TEST_VERBOSE");
    if (e != NULL)
        snprintf(verbose, sizeof(verbose), "%s", e);
    tu_env_clear();

    SRunner *sr = srunner_create(s);
    forking = srunner_fork_status(sr) != CK_NOFORK;
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

void tu_capture_start(tu_capture_t *c)
{
    char path[] = "/tmp/convoy_test_stderr_XXXXXX";
    c->fd = mkstemp(path);
    ck_assert_int_ge(c->fd, 0);
    unlink(path);
    fflush(stderr);
    c->saved = dup(2);
    dup2(c->fd, 2);
}

const char *tu_capture_end(tu_capture_t *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    ssize_t n = pread(c->fd, c->text, sizeof(c->text) - 1, 0);
    close(c->fd);
    c->text[n > 0 ? n : 0] = '\0';
    return c->text;
}

void tu_ps_set(tu_pset_t *p, const char *k, const char *v)
{
    ck_assert_int_lt(p->n + 3, (int)(sizeof(p->kv) / sizeof(p->kv[0])));
    p->kv[p->n++] = k;
    p->kv[p->n++] = v;
    p->kv[p->n] = NULL;
}

void tu_ps_setf(tu_pset_t *p, const char *k, const char *fmt, ...)
{
    ck_assert_int_lt(p->nv, 64);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->vals[p->nv], sizeof(p->vals[0]), fmt, ap);
    va_end(ap);
    tu_ps_set(p, k, p->vals[p->nv++]);
}

void tu_ps_sim(tu_pset_t *p, const char *sched)
{
    memset(p, 0, sizeof(*p));
    tu_ps_set(p, "devices", "sim");
    tu_ps_set(p, "sched", sched);
    tu_ps_set(p, "nthreads", "2");
    tu_ps_set(p, "bind", "0");
    tu_ps_set(p, "verbose", "error");
    tu_ps_set(p, "sim_submit_us", "0");
    tu_ps_set(p, "sim_copy_us", "0");
    tu_ps_set(p, "sim_single_copy_us", "0");
    tu_ps_set(p, "sim_launch_us", "0");
    tu_ps_set(p, "sim_bandwidth_gbs", "1e6");
}
