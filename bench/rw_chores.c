/*
 * The CPU and sim chores and their classes (rw_chores.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench/rw_chores.h"

int rw_cpu_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    uint32_t add = *(const uint32_t *)t->args;
    const uint32_t *src = t->flows[0];
    uint32_t *dst = t->flows[t->nflows - 1];
    for (size_t i = 0; i < t->flow_bytes[0] / sizeof(uint32_t); i++)
        dst[i] = src[i] + add;
    return 0;
}

int rw_cpu_batch_chore(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    for (int i = 0; i < n; i++)
        rw_cpu_chore(tasks[i], stream);
    return 0;
}

static convoy_class_t *class_of(convoy_context_t *ctx, const char *name, int nflows,
                                const convoy_access_t *modes)
{
    convoy_class_t *cls = NULL;
    if (convoy_class_new(ctx, name, nflows, modes, CONVOY_CLASS_BATCHABLE, &cls) !=
            CONVOY_SUCCESS ||
        convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, rw_cpu_chore) != CONVOY_SUCCESS ||
        convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, rw_cpu_chore) != CONVOY_SUCCESS ||
        convoy_class_set_batch_chore(cls, CONVOY_DEVICE_SIM, rw_cpu_batch_chore) !=
            CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", name, convoy_last_error(ctx));
        exit(1);
    }
#if CONVOY_HAVE_CUDA
    convoy_class_set_chore(cls, CONVOY_DEVICE_CUDA, rw_cuda_chore);
    convoy_class_set_batch_chore(cls, CONVOY_DEVICE_CUDA, rw_cuda_batch_chore);
#endif
    return cls;
}

convoy_class_t *rw_class(convoy_context_t *ctx, const char *name)
{
    convoy_access_t rw = CONVOY_RW;
    return class_of(ctx, name, 1, &rw);
}

convoy_class_t *hop_class(convoy_context_t *ctx, const char *name)
{
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_WRITE};
    return class_of(ctx, name, 2, modes);
}
