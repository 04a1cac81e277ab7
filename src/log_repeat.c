/*
 * Aggregated logging (see util.h): one line for the first message of a burst, one for
 * the count of its repeats. A fixed table, so that logging never allocates: the failures
 * it reports are often allocation failures.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "src/util.h"

#define NSLOTS 32

typedef struct slot {
    const convoy_context_t *ctx;
    char key[48];
    int used;
    convoy__log_level_t level; /* of the first message, used for the summary */
    uint64_t repeats;          /* messages since the first that were not printed */
    uint64_t last_ns;          /* when the last one came */
    char first[320];           /* the first message, repeated in the summary */
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t slots[NSLOTS];

/* Print (under lock) the summary of a slot with repeats, and reset its count. */
static void summarise(slot_t *s)
{
    if (s->repeats > 0)
        convoy__log_impl(s->level, __FILE__, __LINE__, "... and %llu more like it: %s",
                         (unsigned long long)s->repeats, s->first);
    s->repeats = 0;
}

void convoy__log_repeat_impl(const convoy_context_t *ctx, const char *key,
                             convoy__log_level_t level, const char *file, int line, const char *fmt,
                             ...)
{
    if ((int)level > convoy__log_level(ctx))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    uint64_t now = convoy__now_ns();
    pthread_mutex_lock(&lock);
    slot_t *s = NULL, *free_slot = NULL;
    for (int i = 0; i < NSLOTS && s == NULL; i++) {
        if (!slots[i].used)
            free_slot = free_slot != NULL ? free_slot : &slots[i];
        else if (slots[i].ctx == ctx && strncmp(slots[i].key, key, sizeof(slots[i].key)) == 0)
            s = &slots[i];
    }
    if (s != NULL && now - s->last_ns <= CONVOY__LOG_REPEAT_GAP_NS) {
        s->repeats++;
        s->last_ns = now;
        pthread_mutex_unlock(&lock);
        return;
    }
    if (s != NULL) {
        summarise(s); /* the burst ended before this message: it starts a new one */
    } else if (free_slot != NULL) {
        s = free_slot;
        s->used = 1;
        s->ctx = ctx;
        snprintf(s->key, sizeof(s->key), "%s", key);
    }
    if (s != NULL) {
        s->level = level;
        s->repeats = 0;
        s->last_ns = now;
        size_t l = strnlen(msg, sizeof(s->first) - 1); /* a long message is cut */
        memcpy(s->first, msg, l);
        s->first[l] = '\0';
    }
    convoy__log_impl(level, file, line, "%s", msg);
    pthread_mutex_unlock(&lock);
}

void convoy__log_repeat_flush(const convoy_context_t *ctx)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < NSLOTS; i++) {
        if (!slots[i].used || (ctx != NULL && slots[i].ctx != ctx))
            continue;
        summarise(&slots[i]);
        slots[i].used = 0;
    }
    pthread_mutex_unlock(&lock);
}
