/*
 * failalloc: an LD_PRELOAD library that fails the n-th host allocation of a program, so
 * that a test can drive every allocation-failure path in turn (libuv's test does the
 * same). Reusable with any program: nothing is counted until the program calls
 * failalloc_start() (a weak symbol it may declare), so set-up before it is never failed.
 *
 * Wrapped: malloc, calloc, realloc, strdup, strndup, posix_memalign, aligned_alloc,
 * memalign. Environment, read by failalloc_start():
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

/* The API a program calls (declared weak on its side, so it runs without this too). */
void failalloc_start(void);
long failalloc_stop(void);
long failalloc_count(void);

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
static int should_fail(const void *caller)
{
    if (!atomic_load_explicit(&armed, memory_order_relaxed) || inside || !in_scope(caller))
        return 0;
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

void *malloc(size_t size)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(ptr, size);
}

char *strdup(const char *s)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = strlen(s) + 1;
    char *p = __libc_malloc(len);
    if (p != NULL)
        memcpy(p, s, len);
    return p;
}

char *strndup(const char *s, size_t max)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = strnlen(s, max);
    char *p = __libc_malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (should_fail(CALLER))
        return ENOMEM;
    void *p = __libc_memalign(align, size);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size)
{
    if (should_fail(CALLER)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, size);
}
