/*
 * failalloc: an LD_PRELOAD library that fails the n-th host allocation of a program, so
 * that a test can drive every allocation-failure path in turn (libuv's test does the
 * same). Reusable with any program: nothing is counted until the program calls
 * failalloc_start() (a weak symbol it may declare), so set-up before it is never failed.
 *
 * Wrapped: malloc, calloc, realloc, strdup, strndup, posix_memalign, aligned_alloc,
 * memalign, and free. Environment, read by failalloc_start():
 *   CONVOY_TEST_FAIL_ALLOC=n        fail the n-th counted allocation (from 1); 0 or
 *                                   unset: fail none, only count
 *   CONVOY_TEST_FAIL_ALLOC_ALL=1    fail every counted allocation from the n-th on
 *   CONVOY_TEST_FAIL_ALLOC_TRACE=1  print the stack of each failed allocation (for
 *                                   addr2line) on stderr
 *   CONVOY_TEST_FAIL_ALLOC_SCOPE=s  count only calls made from code in the main program
 *                                   (s = "main", the default: convoy's tests link the
 *                                   library statically), in objects whose file name
 *                                   contains s (e.g. "libconvoy"), or everywhere (s =
 *                                   "all"); calls from hwloc or libc are not convoy's
 *                                   to handle
 * failalloc_live() is the number of allocations counted since failalloc_start that are
 * not freed yet (free is wrapped too): after a program's teardown, a number larger than
 * the run without failures has is a leak on a failure path.
 * Uses glibc's __libc_* entry points for the real allocations (no dlsym, which itself
 * allocates). Not for sanitizer builds: ASan and TSan replace malloc themselves.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *ptr);

/* The API a program calls (declared weak on its side, so it runs without this too). */
void failalloc_start(void);
long failalloc_stop(void);
long failalloc_count(void);
long failalloc_live(void);

static atomic_int armed;
static atomic_long counted; /* allocations counted since failalloc_start */
static long fail_at;        /* 0: none */
static int fail_all;        /* every one from fail_at on */
static int trace;           /* print the stack of each failure */
static char scope[64] = "main";
static uintptr_t main_base; /* the main program's load address, for scope "main" */
static _Thread_local int inside __attribute__((tls_model("initial-exec"))); /* in dladdr */

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = (uintptr_t)info->dlpi_addr;
    return 1; /* the first object is the main program */
}

void failalloc_start(void)
{
    const char *n = getenv("CONVOY_TEST_FAIL_ALLOC");
    const char *all = getenv("CONVOY_TEST_FAIL_ALLOC_ALL");
    const char *s = getenv("CONVOY_TEST_FAIL_ALLOC_SCOPE");
    fail_at = n != NULL ? strtol(n, NULL, 10) : 0;
    fail_all = all != NULL && strcmp(all, "1") == 0;
    const char *tr = getenv("CONVOY_TEST_FAIL_ALLOC_TRACE");
    trace = tr != NULL && strcmp(tr, "1") == 0;
    if (s != NULL && s[0] != '\0') {
        strncpy(scope, s, sizeof(scope) - 1);
        scope[sizeof(scope) - 1] = '\0';
    }
    dl_iterate_phdr(first_object, &main_base);
    atomic_store(&counted, 0);
    atomic_store(&armed, 1);
}

long failalloc_stop(void)
{
    atomic_store(&armed, 0);
    return atomic_load(&counted);
}

long failalloc_count(void)
{
    return atomic_load(&counted);
}

/* The live counted allocations: an open-addressing set of pointers (linear probing,
 * deletion by backward shift) under a spin lock; malloc may not take a mutex that could
 * allocate. Past LIVE_SLOTS - 1 live pointers the rest go untracked. */
#define LIVE_SLOTS (1 << 16)
static uintptr_t live[LIVE_SLOTS];
static atomic_long nlive;
static atomic_flag live_lock = ATOMIC_FLAG_INIT;

static size_t slot_of(uintptr_t p)
{
    return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 48) & (LIVE_SLOTS - 1);
}

static void live_add(void *ptr)
{
    if (ptr == NULL)
        return;
    while (atomic_flag_test_and_set_explicit(&live_lock, memory_order_acquire)) {
    }
    if (atomic_load(&nlive) < LIVE_SLOTS - 1) {
        size_t i = slot_of((uintptr_t)ptr);
        while (live[i] != 0)
            i = (i + 1) & (LIVE_SLOTS - 1);
        live[i] = (uintptr_t)ptr;
        atomic_fetch_add(&nlive, 1);
    }
    atomic_flag_clear_explicit(&live_lock, memory_order_release);
}

static void live_remove(void *ptr)
{
    if (ptr == NULL || atomic_load_explicit(&nlive, memory_order_relaxed) == 0)
        return;
    while (atomic_flag_test_and_set_explicit(&live_lock, memory_order_acquire)) {
    }
    size_t i = slot_of((uintptr_t)ptr);
    while (live[i] != 0 && live[i] != (uintptr_t)ptr)
        i = (i + 1) & (LIVE_SLOTS - 1);
    if (live[i] != 0) {
        /* Backward shift: move later entries of the run into the hole when their home
         * slot is not between the hole and them. */
        size_t hole = i;
        for (size_t j = (i + 1) & (LIVE_SLOTS - 1); live[j] != 0; j = (j + 1) & (LIVE_SLOTS - 1)) {
            size_t home = slot_of(live[j]);
            if (((j - home) & (LIVE_SLOTS - 1)) >= ((j - hole) & (LIVE_SLOTS - 1))) {
                live[hole] = live[j];
                hole = j;
            }
        }
        live[hole] = 0;
        atomic_fetch_sub(&nlive, 1);
    }
    atomic_flag_clear_explicit(&live_lock, memory_order_release);
}

long failalloc_live(void)
{
    return atomic_load(&nlive);
}

/* Whether the caller's object is in scope. */
static int in_scope(const void *caller)
{
    if (strcmp(scope, "all") == 0)
        return 1;
    Dl_info info;
    inside = 1;
    int found = dladdr(caller, &info) != 0;
    inside = 0;
    if (!found)
        return 0;
    if (strcmp(scope, "main") == 0)
        return (uintptr_t)info.dli_fbase == main_base;
    return info.dli_fname != NULL && strstr(info.dli_fname, scope) != NULL;
}

/* Count this allocation (when armed and in scope); 1 if it is to fail. */
static int should_fail(const void *caller, int *counted_p)
{
    *counted_p = 0;
    if (!atomic_load_explicit(&armed, memory_order_relaxed) || inside || !in_scope(caller))
        return 0;
    *counted_p = 1;
    long k = atomic_fetch_add(&counted, 1) + 1;
    int fail = fail_at > 0 && (k == fail_at || (fail_all && k > fail_at));
    if (fail && trace) {
        void *frames[24];
        inside = 1; /* backtrace may allocate when it first loads its unwinder */
        int n = backtrace(frames, 24);
        static const char head[] = "failalloc: failing this allocation:\n";
        if (write(2, head, sizeof(head) - 1) < 0) {
        }
        backtrace_symbols_fd(frames, n, 2);
        inside = 0;
    }
    return fail;
}

#define CALLER __builtin_extract_return_addr(__builtin_return_address(0))
/* A counted allocation that succeeded is tracked until it is freed. */
#define TRACKED(p) (counted ? (live_add(p), (p)) : (p))

void *malloc(size_t size)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_malloc(size);
    return TRACKED(p);
}

void *calloc(size_t n, size_t size)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_calloc(n, size);
    return TRACKED(p);
}

void *realloc(void *ptr, size_t size)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_realloc(ptr, size);
    if (p != NULL || size == 0)
        live_remove(ptr);
    return TRACKED(p);
}

void free(void *ptr)
{
    live_remove(ptr);
    __libc_free(ptr);
}

char *strdup(const char *s)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = strlen(s) + 1;
    char *p = __libc_malloc(len);
    if (p != NULL)
        memcpy(p, s, len);
    return TRACKED(p);
}

char *strndup(const char *s, size_t max)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = strnlen(s, max);
    char *p = __libc_malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return TRACKED(p);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    int counted;
    if (should_fail(CALLER, &counted))
        return ENOMEM;
    void *p = __libc_memalign(align, size);
    if (p == NULL)
        return ENOMEM;
    *out = TRACKED(p);
    return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_memalign(align, size);
    return TRACKED(p);
}

void *memalign(size_t align, size_t size)
{
    int counted;
    if (should_fail(CALLER, &counted)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_memalign(align, size);
    return TRACKED(p);
}
