/*
 * Task memory (taskmem.h).
 *
 * A slab's count starts at a bias far above what it can hold. Carving counts privately
 * (no atomic); each free subtracts one; retiring subtracts the bias less the tasks
 * carved. So the count reaches zero exactly once: at the last free after retirement, or
 * at retirement when every task carved is already free. Whoever takes it to zero passes
 * the slab on. Under AddressSanitizer, memory not carved out is poisoned, so a use of a
 * freed task is still reported until its memory is carved again.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/core.h"
#include "src/taskmem.h"

#if defined(__SANITIZE_ADDRESS__)
#define TASKMEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TASKMEM_ASAN 1
#endif
#endif
#ifdef TASKMEM_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define BIAS (1L << 40)

typedef struct slab {
    atomic_long live;
    struct slab *next; /* on the spare list */
} slab_t;

/* Each allocation: its slab's address, then the caller's bytes, rounded up to whole
 * lines that start on a line; the first starts on the first line after the header. */
#define HEAD sizeof(slab_t *)

static size_t first_offset(const slab_t *s)
{
    uintptr_t at = (uintptr_t)s + sizeof(*s) + CONVOY__LINE - 1;
    return (size_t)(at / CONVOY__LINE * CONVOY__LINE - (uintptr_t)s);
}

static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static slab_t *spare;
static int nspare;

/* The calling thread's slab: carved up to `used` bytes, `carved` allocations. */
typedef struct here {
    slab_t *cur;
    size_t used;
    long carved;
} here_t;
static _Thread_local here_t here;

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int have_exit_key;

static void pass_on(slab_t *s)
{
    POISON((char *)s + sizeof(*s), CONVOY__TASKMEM_SLAB - sizeof(*s));
    pthread_mutex_lock(&spare_lock);
    if (nspare < CONVOY__TASKMEM_MAX_SPARE) {
        s->next = spare;
        spare = s;
        nspare++;
        s = NULL;
    }
    pthread_mutex_unlock(&spare_lock);
    if (s != NULL) {
        UNPOISON(s, CONVOY__TASKMEM_SLAB);
        free(s);
    }
}

static void retire(void)
{
    slab_t *s = here.cur;
    if (s == NULL)
        return;
    here.cur = NULL;
    long left = BIAS - here.carved;
    if (atomic_fetch_sub_explicit(&s->live, left, memory_order_acq_rel) == left)
        pass_on(s);
}

static void thread_exit(void *unused)
{
    (void)unused;
    retire();
}

static void make_exit_key(void)
{
    have_exit_key = pthread_key_create(&exit_key, thread_exit) == 0;
}

static slab_t *new_slab(void)
{
    pthread_mutex_lock(&spare_lock);
    slab_t *s = spare;
    if (s != NULL) {
        spare = s->next;
        nspare--;
    }
    pthread_mutex_unlock(&spare_lock);
    if (s == NULL) {
        s = malloc(CONVOY__TASKMEM_SLAB);
        if (s == NULL)
            return NULL;
        POISON((char *)s + sizeof(*s), CONVOY__TASKMEM_SLAB - sizeof(*s));
    }
    atomic_init(&s->live, BIAS);
    s->next = NULL;
    /* Retire it when this thread exits (the value only makes the destructor run). */
    pthread_once(&exit_once, make_exit_key);
    if (have_exit_key)
        (void)pthread_setspecific(exit_key, &here);
    return s;
}

void *convoy__taskmem_get(size_t bytes)
{
    if (bytes == 0 || bytes > CONVOY__TASKMEM_MAX)
        return NULL;
    size_t block = (HEAD + bytes + CONVOY__LINE - 1) / CONVOY__LINE * CONVOY__LINE;
    here_t *h = &here;
    if (h->cur == NULL || h->used + block > CONVOY__TASKMEM_SLAB) {
        retire();
        slab_t *s = new_slab();
        if (s == NULL)
            return NULL;
        *h = (here_t){.cur = s, .used = first_offset(s), .carved = 0};
    }
    char *p = (char *)h->cur + h->used;
    h->used += block;
    h->carved++;
    UNPOISON(p, HEAD + bytes);
    *(slab_t **)p = h->cur;
    return p + HEAD;
}

void convoy__taskmem_put(void *p)
{
    if (p == NULL)
        return;
    slab_t *s = *(slab_t **)((char *)p - HEAD);
    /* Poisoned at once: a use after this free is reported, not only after a reuse. The
     * bytes are unknown here; the first ones are enough to catch a stale task. */
    POISON((char *)p - HEAD, CONVOY__LINE);
    if (atomic_fetch_sub_explicit(&s->live, 1, memory_order_acq_rel) == 1)
        pass_on(s);
}

void convoy__taskmem_trim(void)
{
    retire();
    pthread_mutex_lock(&spare_lock);
    slab_t *s = spare;
    spare = NULL;
    nspare = 0;
    pthread_mutex_unlock(&spare_lock);
    while (s != NULL) {
        slab_t *next = s->next;
        UNPOISON(s, CONVOY__TASKMEM_SLAB);
        free(s);
        s = next;
    }
}

const void *convoy__taskmem_slab(const void *p)
{
    return *(slab_t *const *)((const char *)p - HEAD);
}

int convoy__taskmem_spares(void)
{
    pthread_mutex_lock(&spare_lock);
    int n = nspare;
    pthread_mutex_unlock(&spare_lock);
    return n;
}
