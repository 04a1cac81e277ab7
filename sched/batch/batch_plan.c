/*
 * The copy plan (DESIGN.md, "The copy plan"): copies over split_bytes travel alone,
 * after the small ones of the same stage; the small ones are packed, in order, into
 * submissions of at most max_copies entries and max_bytes bytes (and never more than the
 * device accepts in one call).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sched/batch/batch.h"

static int is_large(const convoy__batch_limits_t *lim, const convoy__copy_t *c)
{
    return lim->split_bytes > 0 && c->bytes > lim->split_bytes;
}

void convoy__batch_plan(const convoy__batch_limits_t *lim, const convoy__device_t *dev,
                        convoy__copy_t *copies, int n, convoy__plan_t *plan)
{
    int nlarge = 0;
    for (int i = 0; i < n; i++)
        nlarge += is_large(lim, &copies[i]);
    if (nlarge > 0 && nlarge < n) {
        /* Stable partition: small copies first. */
        convoy__copy_t stack[64];
        convoy__copy_t *large = nlarge <= 64 ? stack : malloc((size_t)nlarge * sizeof(*large));
        if (large != NULL) {
            int s = 0, l = 0;
            for (int i = 0; i < n; i++) {
                if (is_large(lim, &copies[i]))
                    large[l++] = copies[i];
                else
                    copies[s++] = copies[i];
            }
            memcpy(copies + s, large, (size_t)l * sizeof(*large));
            if (large != stack)
                free(large);
        }
        /* Without memory for the partition, the order stays and each large copy is still
         * alone below: correct, only less well ordered. */
    }
    int max_copies = lim->max_copies;
    if (dev != NULL && dev->max_batch > 0 && dev->max_batch < max_copies)
        max_copies = dev->max_batch;
    plan->nsubs = 0;
    convoy__submission_t *cur = NULL;
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        if (is_large(lim, c)) {
            plan->subs[plan->nsubs++] =
                (convoy__submission_t){.first = i, .count = 1, .bytes = c->bytes, .split = 1};
            cur = NULL;
            continue;
        }
        if (cur == NULL || cur->count == max_copies ||
            (cur->bytes + c->bytes > lim->max_bytes && cur->count > 0)) {
            cur = &plan->subs[plan->nsubs++];
            *cur = (convoy__submission_t){.first = i};
        }
        cur->count++;
        cur->bytes += c->bytes;
    }
}
